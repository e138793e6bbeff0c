// The program as XLA's pass sees it, as flat arrays keyed by our integer ids.
//
// Python's Graph (stablehlo_layout/graph.py) is walked once into these arrays;
// everything else in the core reads them and never touches a Python object.
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

// The array/token leaves of a value: itself, or a tuple's elements flattened
// depth-first, left to right.
void append_leaves(const Program& p, int32_t value, std::vector<int32_t>& out);

// Per instruction, XLA's shape indices: its results with tuples flattened.
Rows shape_indices(const Program& p);

}  // namespace slcore
