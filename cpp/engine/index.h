// The program as XLA's pass sees it, as flat arrays keyed by our integer ids.
//
// The importer collects them as it walks the module (stablehlo_layout/graph.py,
// Columns); ``from_walk`` puts what it collected in order.  Everything else in
// the core reads these arrays and never touches a Python object.
#pragma once

#include <cstdint>
#include <vector>

namespace slcore {

// Compressed rows: row i is items[start[i] .. start[i + 1]).
struct Rows {
  std::vector<int32_t> start{0};
  std::vector<int32_t> items;

  int32_t size() const { return static_cast<int32_t>(start.size()) - 1; }
  const int32_t* begin(int32_t i) const { return items.data() + start[i]; }
  const int32_t* end(int32_t i) const { return items.data() + start[i + 1]; }
  int32_t count(int32_t i) const { return start[i + 1] - start[i]; }
  void add(const std::vector<int32_t>& row) {
    items.insert(items.end(), row.begin(), row.end());
    start.push_back(static_cast<int32_t>(items.size()));
  }
};

struct Program {
  // Values.  A tuple value lists its elements (shape-index order); any other
  // value has none.  ``used``: some instruction reads it.
  std::vector<int32_t> producer;
  std::vector<uint8_t> is_tuple;
  std::vector<uint8_t> used;
  Rows elements;

  // Instructions.  ``is_root``: the root pseudo-instruction of a computation;
  // ``is_while``: XLA's while (its callees come body first).
  std::vector<int32_t> comp;
  std::vector<uint8_t> is_root;
  std::vector<uint8_t> is_while;
  Rows operands;  // the op's own operands, not implicit captures
  Rows results;
  Rows callees;

  // Computations, in our id order.  ``is_func``: a function body (not a region).
  std::vector<int32_t> root;  // -1: a declaration without a body
  std::vector<uint8_t> is_func;
  Rows instrs;  // block order, parameters first
  int32_t entry = -1;

  int32_t n_values() const { return static_cast<int32_t>(producer.size()); }
  int32_t n_instrs() const { return static_cast<int32_t>(comp.size()); }
  int32_t n_comps() const { return static_cast<int32_t>(root.size()); }

  // Checks that every id points into its array; throws std::invalid_argument.
  void check() const;
};

// What the importer collects as it walks the module, in the order it meets
// things.  Rows it fills in id order arrive as rows; rows it fills out of id
// order (a tuple's elements after the tuple, a region op's callees around
// its regions' instructions, implicit captures while a region is walked)
// arrive as (owner, item) pairs in the order it met them.
struct Walk {
  // Values.  Each is a result of its producer (numbered in value order)
  // unless it is an element of a tuple.
  std::vector<int32_t> producer;
  std::vector<int32_t> element_owner, element_item;  // (tuple value, element)
  // Instructions (kind: facts.h's InstrKind).
  std::vector<int32_t> comp;
  std::vector<uint8_t> kind, is_while;
  Rows operands;
  std::vector<int32_t> callee_owner, callee_item;    // (instruction, computation)
  std::vector<int32_t> capture_owner, capture_item;  // (instruction, outer value)
  // Computations.  ``params``: parameter instructions, in number order.
  std::vector<int32_t> root;
  std::vector<uint8_t> is_func;
  Rows params;
  // Values whose readers XLA offers a layout in another order than the
  // program's (importer's _order_users): the value, and its uses in that order.
  std::vector<int32_t> reordered;
  Rows reorder_users, reorder_operands;
  int32_t entry = -1;
};

// The Program and the rows the engine reads besides it.  ``users`` /
// ``use_operand``: per value, the (instruction, operand number) pairs that read
// it, an instruction's own operands before its implicit captures, in
// instruction order unless reordered.
struct Walked {
  Program p;
  std::vector<uint8_t> kind;
  Rows captures, params, users, use_operand;
};

// Puts a walk's collections in the Program's order and checks them; throws
// std::invalid_argument for ids out of range or rows that contradict each other.
Walked from_walk(Walk w);

// Per value, the (instruction, operand number) pairs that read it: each
// instruction's own operands, then its implicit captures, in instruction order.
void value_uses(const Rows& operands, const Rows& captures, int32_t n_values, Rows& users, Rows& use_operand);

// Rows for owners 0..n-1 from (owner, item) pairs, each row in pair order.
Rows rows_from_pairs(int32_t n, const std::vector<int32_t>& owner, const std::vector<int32_t>& item,
                     const char* what);

// The array/token leaves of a value: itself, or a tuple's elements flattened
// depth-first, left to right.
void append_leaves(const Program& p, int32_t value, std::vector<int32_t>& out);

// Per instruction, XLA's shape indices: its results with tuples flattened.
Rows shape_indices(const Program& p);

}  // namespace slcore
