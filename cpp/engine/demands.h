// A target's plan for one computation (demands.DemandPlan), applied in one
// call: the backend's demands in XLA's instruction-list order, each written as
// a code per instruction that the core turns into Set*Layout calls itself.
//
// XLA:CPU's AddBackendConstraints walks every instruction and asks for
// row-major almost everywhere; as Demand objects that is one Python object
// and one call per instruction, every round.  Here the target hands over the
// few instructions that need more than the catch-all (a kernel, a
// column-major constant, a collective's dimension) once per run, and each
// round is one pass over a vector.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/propagators.h"

namespace slcore {

// What a plan asks of one instruction (demands.py names the same codes).
enum StepCode : uint8_t {
  // Every array operand of rank >= 1 the instruction does not forward and
  // nothing constrained yet: row-major, mandatory, depth-first.
  kCatchAll = 0,
  // Nothing.
  kNoDemand = 1,
  // XLA's SetInstructionLayout with row-major result leaves, then row-major on
  // every array operand of its own (a kernel that reads row-major).
  kRowMajorKernel = 2,
  // Operand ``arg`` in ascending minor-to-major (a column-major matrix).
  kAscendingOperand = 3,
  // The first result row-major except dimension ``arg``, which is most major.
  kMostMajorDim = 4,
  kStepCodeCount = 5,
};

// The plan as the target gave it: the computation, the instructions XLA's list
// puts last (in block order), and the instructions with a step of their own.
struct PlanInput {
  int32_t comp = -1;
  std::vector<int32_t> late;
  std::vector<int32_t> instr;
  std::vector<uint8_t> code;
  std::vector<int32_t> arg, rule, note;  // rule and note: name ids
  int32_t catch_all_rule = 0, catch_all_note = 0, late_note = 0;
};

// A step of the instruction's own: the target's rule, note and argument.
struct OwnStep {
  int32_t arg, rule, note;
  int32_t made = -1;  // the record its demands share, made on first use and kept across rounds
};

// 8 bytes per instruction the plan names (most of a computation, kept all
// run); the few steps of their own keep the rest beside them.
struct Step {
  int32_t instr;
  uint32_t code : 3;   // a StepCode
  uint32_t late : 1;   // a catch-all step of a late instruction (its note: the plan's late_note)
  uint32_t own : 28;   // kCatchAll: unused; otherwise its entry of Plan::own
};
static_assert(sizeof(Step) == 8, "a plan step is two words");
static_assert(kStepCodeCount <= 8, "Step::code holds a StepCode in 3 bits");

struct Plan {
  std::vector<Step> steps;  // in XLA's instruction-list order
  std::vector<OwnStep> own;
  int32_t catch_all_rule = 0, catch_all_note = 0, late_note = 0;

  // A step's rule and note (name ids), its own or the catch-all's.
  int32_t rule(const Step& s) const { return s.code == kCatchAll ? catch_all_rule : own[s.own].rule; }
  int32_t note(const Step& s) const {
    return s.code == kCatchAll ? (s.late ? late_note : catch_all_note) : own[s.own].note;
  }
};

// Checks ``in`` against the program (throws std::invalid_argument) and lays
// the steps out in list order: the computation's instructions in block order
// with the late ones moved to the end; an instruction without its own step
// gets the catch-all unless it is a parameter or a root, reads one HLO tuple,
// or has no operand the catch-all would constrain.
Plan make_plan(const Engine& e, const PlanInput& in);

// Applies the steps in order at ``priority``, through the engine's setters.
void apply_plan(Engine& e, Plan& plan, int32_t priority);

}  // namespace slcore
