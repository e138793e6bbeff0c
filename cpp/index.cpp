#include "index.h"

#include <stdexcept>
#include <string>

namespace slcore {

namespace {

void check_rows(const Rows& rows, int32_t n_rows, int32_t limit, const char* what) {
  if (rows.size() != n_rows) {
    throw std::invalid_argument(std::string("index: ") + what + " has the wrong number of rows");
  }
  for (int32_t i = 0; i < n_rows; ++i) {
    if (rows.start[i] > rows.start[i + 1]) {
      throw std::invalid_argument(std::string("index: ") + what + " rows overlap");
    }
  }
  if (rows.start.back() != static_cast<int32_t>(rows.items.size())) {
    throw std::invalid_argument(std::string("index: ") + what + " rows do not cover their items");
  }
  for (int32_t x : rows.items) {
    if (x < 0 || x >= limit) {
      throw std::invalid_argument(std::string("index: ") + what + " names id " + std::to_string(x) +
                                  " out of range");
    }
  }
}

}  // namespace

void Program::check() const {
  const int32_t nv = n_values(), ni = n_instrs(), nc = n_comps();
  if (static_cast<int32_t>(is_tuple.size()) != nv || static_cast<int32_t>(used.size()) != nv) {
    throw std::invalid_argument("index: value arrays differ in length");
  }
  if (static_cast<int32_t>(is_root.size()) != ni || static_cast<int32_t>(is_while.size()) != ni) {
    throw std::invalid_argument("index: instruction arrays differ in length");
  }
  if (static_cast<int32_t>(is_func.size()) != nc) {
    throw std::invalid_argument("index: computation arrays differ in length");
  }
  for (int32_t x : producer) {
    if (x < 0 || x >= ni) throw std::invalid_argument("index: a value's producer is out of range");
  }
  for (int32_t x : comp) {
    if (x < 0 || x >= nc) throw std::invalid_argument("index: an instruction's computation is out of range");
  }
  for (int32_t x : root) {
    if (x < -1 || x >= ni) throw std::invalid_argument("index: a computation's root is out of range");
  }
  if (entry < 0 || entry >= nc) throw std::invalid_argument("index: the entry computation is out of range");
  check_rows(elements, nv, nv, "tuple elements");
  check_rows(operands, ni, nv, "operands");
  check_rows(results, ni, nv, "results");
  check_rows(callees, ni, nc, "callees");
  check_rows(instrs, nc, ni, "computation instructions");
}

void append_leaves(const Program& p, int32_t value, std::vector<int32_t>& out) {
  if (!p.is_tuple[value]) {
    out.push_back(value);
    return;
  }
  std::vector<int32_t> pending{value};  // no recursion: tuples may nest deeply
  while (!pending.empty()) {
    const int32_t v = pending.back();
    pending.pop_back();
    if (!p.is_tuple[v]) {
      out.push_back(v);
      continue;
    }
    for (const int32_t* e = p.elements.end(v); e != p.elements.begin(v);) {
      pending.push_back(*--e);
    }
  }
}

Rows shape_indices(const Program& p) {
  Rows out;
  out.start.reserve(p.n_instrs() + 1);
  for (int32_t i = 0; i < p.n_instrs(); ++i) {
    for (const int32_t* r = p.results.begin(i); r != p.results.end(i); ++r) {
      append_leaves(p, *r, out.items);
    }
    out.start.push_back(static_cast<int32_t>(out.items.size()));
  }
  return out;
}

}  // namespace slcore
