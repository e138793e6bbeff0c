// The worklist engine's hot path: XLA's Set*Layout entry points and the
// propagators that drain the worklist (PropagateConstraints and friends).
//
// The per-computation driver and the rounds call in here (from Python); every
// demand, wherever it comes from, goes through set_buffer / set_operand and
// so through the store's overwrite rules.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/facts.h"
#include "engine/index.h"
#include "engine/layouts.h"
#include "engine/provenance.h"
#include "engine/store.h"
#include "engine/worklist.h"

namespace slcore {

// A derivation the core leaves to the target (a Python method a target
// overrides, or a rule function that is not one of the built-in ones).
class Deriver {
 public:
  virtual ~Deriver() = default;
  // XLA's ChooseOperandLayoutFromOutputLayout: false for none, else the layout and the rule's name.
  virtual bool operand_from_output(int32_t instr, int32_t n, int32_t output, int32_t& layout, int32_t& rule) = 0;
  // XLA's ChooseOutputLayoutFromOperandLayout for result number ``result``.
  virtual bool output_from_operand(int32_t instr, int32_t n, int32_t operand, int32_t result, int32_t& layout,
                                   int32_t& rule) = 0;
  // The op rule's own operand derivation (a broadcast's), without the target.
  virtual bool rule_operand(int32_t instr, int32_t n, int32_t output, int32_t& layout) = 0;
};

// A demand the program cannot hold: a layout of the wrong rank, or one for a
// value that is not an array.  The Python side turns it into a PassError.
struct DemandError : std::invalid_argument {
  enum What { kWrongRankBuffer, kWrongRankOperand, kNotArray } what;
  int32_t a, b, layout;
  DemandError(What w, int32_t a_, int32_t b_, int32_t l)
      : std::invalid_argument("layout demand the program cannot hold"), what(w), a(a_), b(b_), layout(l) {}
};

struct ResultConstraint {
  int32_t comp;
  std::vector<int32_t> layouts;  // per root operand, -1 where unset
  int32_t priority, origin;
};

// One worklist pop, for trace: the popped constraint's record after its
// propagation, the records of what it derived, and (on a run's first pop) the
// records of the whole worklist as the run began.
struct Event {
  int32_t popped;
  std::vector<int32_t> derived;
  std::vector<int32_t> seeds;
  bool first;
};

class Engine {
 public:
  // ``provenance``: keep the core's own records' links (Provenance::link); exact runs always do.
  Engine(const Program& p, Facts facts, bool exact, bool tracing, Deriver* deriver, bool provenance = true);

  // XLA's SetBufferLayout / SetOperandLayout / SetInstructionLayout.
  void set_buffer(int32_t layout, int32_t b, bool mandatory, bool dfs, int32_t priority, const Why& why);
  void set_operand(int32_t layout, int32_t instr, int32_t n, bool mandatory, bool dfs, int32_t priority,
                   const Why& why);
  void set_instruction(const std::vector<int32_t>& layouts, int32_t instr, bool mandatory, int32_t priority,
                       const Why& why);
  // A mandatory depth-first demand on an operand slot nothing holds yet (a
  // target's bulk demands: it knows the slot holds an array it does not forward).
  void demand_operand(int32_t instr, int32_t n, int32_t layout, int32_t priority, const Why& why);
  // A computation's result layouts, pushed to the producers of its root operands.
  void push_result(int32_t comp, std::vector<int32_t> layouts, int32_t priority, const Why& why);
  // Drains the worklist.
  void propagate();
  // XLA's default loop: each buffer of ``buffers`` (in XLA's buffer-id order)
  // that nothing constrained takes the row-major layout, non-mandatorily, and
  // is propagated before the next one is looked at.
  void lay_out_defaults(const std::vector<int32_t>& buffers);
  // A computation whose every array has one possible layout: each buffer takes it.
  void lay_out_trivial(int32_t comp);
  void new_round() { store.new_round(); }

  int32_t slot(int32_t instr, int32_t n) const { return facts.op_values.start[instr] + n; }
  int32_t buffer_layout(int32_t b) const { return store.has_buffer(b) ? store.buffer(b).layout : -1; }

  const Program& p;
  Facts facts;
  Layouts layouts;
  Provenance prov;
  Store store;
  Worklist work;
  std::vector<ResultConstraint> results;
  std::vector<Event> events;
  // With tracing, also the whole worklist after each pop's batch went in (the
  // trace page's replay is tested against these).
  bool watch = false;
  std::vector<std::vector<Ref>> deques;
  int32_t current_priority = 0;
  int32_t round = 0;
  // A demand was weakened below the current priority (rounds stop being shifts of one another).
  bool weakened = false;

 private:
  void push(Ref r);
  int32_t origin_of(Ref r) const;
  void buffer_to_operands(int32_t b);
  void operand_to_user(int32_t s, int32_t ov);
  void use_to_defs(int32_t v, int32_t layout, int32_t priority, int32_t parent);
  void propagate_result(int32_t r);
  int32_t bitcast_convert_operand(int32_t output, int32_t operand_rank);
  int32_t transpose_operand(int32_t instr, int32_t output);
  int32_t transpose_output(int32_t instr, int32_t operand);
  bool broadcast_operand(int32_t instr, int32_t n, int32_t output, int32_t& layout);
  // Across a reshape from value ``from`` to value ``to``: the layout of ``to``
  // that makes it a bitcast of ``from`` in ``layout``.
  bool reshape_layout(int32_t from, int32_t layout, int32_t to, int32_t& out);

  bool tracing_;
  Deriver* deriver_;
  std::vector<int32_t> scratch_;
};

}  // namespace slcore
