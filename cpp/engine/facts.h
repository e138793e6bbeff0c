// The program as the propagators read it: per value, instruction and buffer,
// the facts every worklist step needs, computed in one pass before the first
// round (XLA recomputes most of them per query; they never change).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/index.h"

namespace slcore {

// The HLO opcodes whose rules the propagators single out.
enum Hlo : uint8_t {
  kOtherOp = 0,
  kWhileOp,
  kReduceOp,
  kAllReduceOp,
  kConcatenateOp,
  kDynamicUpdateSliceOp,
  kReshapeOp,
  kDynamicSliceOp,
  kBitcastConvertOp,
};

// An op rule's answers (rules.py's OpRule), as bits.
enum RuleBit : uint16_t {
  kCanChange = 1 << 0,
  kTupleOperand = 1 << 1,
  kBroadcast = 1 << 2,
  kForwards = 1 << 3,
  kAlwaysForward = 1 << 4,
  kAlwaysBackward = 1 << 5,
  kToSiblings = 1 << 6,
  kRuleDfs = 1 << 7,
};

// How an operand layout is derived from the output layout (buffer to operands)...
enum Back : uint8_t { kBackNone = 0, kBackTranspose, kBackBroadcast, kBackAskRule, kBackAskTarget, kBackReshape };
// ...and an output layout from an operand layout (operand to user).
enum Fwd : uint8_t { kFwdNone = 0, kFwdTranspose, kFwdAskTarget, kFwdReshape };

// What an operand constraint derives inside its user, past the aliases.
enum ToUser : uint8_t { kToNothing = 0, kToStop, kToAllReduce, kToGo };

enum InstrKind : uint8_t { kOp = 0, kRootInstr, kParameter };
enum CompKind : uint8_t { kFuncComp = 0, kBodyComp, kCondComp, kBranchComp, kApplyComp };

// Per value, its extents (-1 for a dynamic one); 64 bits, as HLO's are.  A
// program has few distinct shapes, so each value names one row of a shape
// table instead of holding its own copy.
struct Extents {
  std::vector<int32_t> shape;       // per value, its row
  std::vector<int32_t> start{0};    // per row
  std::vector<int64_t> items;
  int32_t size() const { return static_cast<int32_t>(shape.size()); }
  const int64_t* begin(int32_t v) const { return items.data() + start[shape[v]]; }
  int32_t count(int32_t v) const { return start[shape[v] + 1] - start[shape[v]]; }
  std::vector<int64_t> of(int32_t v) const { return {begin(v), begin(v) + count(v)}; }
  // The next value, with a row of its own.
  void add(const std::vector<int64_t>& dims) {
    shape.push_back(static_cast<int32_t>(start.size()) - 1);
    items.insert(items.end(), dims.begin(), dims.end());
    start.push_back(static_cast<int32_t>(items.size()));
  }
};

// What the Python side hands over besides the Program: the values' shapes and
// uses, the instructions' rules and attributes, the computations' kinds.
struct FactsInput {
  std::vector<uint8_t> is_array;
  std::vector<int32_t> rank, buffer;
  Extents dims;
  // Read while the facts are built, then released (the engine never reads them).
  Rows users, use_operand;  // per value, its uses (same row starts)
  std::vector<uint8_t> kind, hlo, back, fwd, active, layout_constrained;
  std::vector<uint16_t> rule;
  std::vector<int32_t> dim;  // a concatenate's dimension
  Rows captures;  // read while the facts are built, then released
  Rows aliases, perm;  // aliases: (output index, operand) pairs; perm: transpose / broadcast dims
  std::vector<uint8_t> comp_kind;
  std::vector<int32_t> caller;
  Rows params;  // kept: the computation room reads interfaces from it
};

struct Facts {
  FactsInput in;
  Rows leaves;      // XLA's shape indices: results with tuples flattened
  Rows op_values;   // every operand, implicit captures last; slot id = op_values.start[i] + n
  std::vector<int32_t> slot_instr;  // per operand slot, its instruction
  std::vector<int32_t> n_results, n_operands;  // 0 for an instruction the worklist cannot reach
  std::vector<uint8_t> tshape, dfs, variadic_reduce, to_user;
  Rows own_buffers;  // array buffers among the result leaves
  Rows arrays;       // own operands of rank > 1
  Rows to_operands;  // what a buffer constraint asks of the producer's operands
  Rows consumers;    // per buffer: (user, operand) pairs its layout is offered to
  Rows back_edges;   // per buffer: (body parameter value, while) pairs

  bool has(int32_t i, uint16_t bit) const { return (in.rule[i] & bit) != 0; }
  // The run is over: keep what reading the store back needs (the slot table:
  // op_values' row starts and slot_instr) and free the rest.
  void release_for_readers();
  // Slot s's operand number (its place in its instruction's row).
  int32_t slot_operand(int32_t s) const { return s - op_values.start[slot_instr[s]]; }
};

// Throws std::invalid_argument when an array has the wrong length.
Facts build_facts(const Program& p, FactsInput in);

}  // namespace slcore
