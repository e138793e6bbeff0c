#include "engine/index.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/facts.h"

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

Rows rows_from_pairs(int32_t n, const std::vector<int32_t>& owner, const std::vector<int32_t>& item,
                     const char* what) {
  if (owner.size() != item.size()) {
    throw std::invalid_argument(std::string("index: ") + what + " pairs differ in length");
  }
  Rows out;
  out.start.assign(n + 1, 0);
  for (int32_t o : owner) {
    if (o < 0 || o >= n) {
      throw std::invalid_argument(std::string("index: ") + what + " names owner " + std::to_string(o) +
                                  " out of range");
    }
    ++out.start[o + 1];
  }
  for (int32_t i = 0; i < n; ++i) out.start[i + 1] += out.start[i];
  out.items.resize(item.size());
  std::vector<int32_t> at(out.start.begin(), out.start.end() - 1);
  for (size_t k = 0; k < owner.size(); ++k) out.items[at[owner[k]]++] = item[k];  // stable: pair order kept
  return out;
}

void value_uses(const Rows& operands, const Rows& captures, int32_t n_values, Rows& users, Rows& use_operand) {
  std::vector<int32_t> owner, item, operand_no;
  owner.reserve(operands.items.size() + captures.items.size());
  item.reserve(owner.capacity());
  operand_no.reserve(owner.capacity());
  for (int32_t i = 0; i < operands.size(); ++i) {
    int32_t n = 0;
    for (const int32_t* v = operands.begin(i); v != operands.end(i); ++v, ++n) {
      owner.push_back(*v);
      item.push_back(i);
      operand_no.push_back(n);
    }
    for (const int32_t* v = captures.begin(i); v != captures.end(i); ++v, ++n) {
      owner.push_back(*v);
      item.push_back(i);
      operand_no.push_back(n);
    }
  }
  users = rows_from_pairs(n_values, owner, item, "uses");
  use_operand = rows_from_pairs(n_values, owner, operand_no, "uses");
}

Walked from_walk(Walk w) {
  Walked out;
  Program& p = out.p;
  const int32_t nv = static_cast<int32_t>(w.producer.size());
  const int32_t ni = static_cast<int32_t>(w.comp.size());
  const int32_t nc = static_cast<int32_t>(w.root.size());
  if (static_cast<int32_t>(w.kind.size()) != ni || static_cast<int32_t>(w.is_while.size()) != ni) {
    throw std::invalid_argument("index: instruction arrays differ in length");
  }
  for (int32_t x : w.producer) {
    if (x < 0 || x >= ni) throw std::invalid_argument("index: a value's producer is out of range");
  }
  p.elements = rows_from_pairs(nv, w.element_owner, w.element_item, "tuple elements");
  p.is_tuple.assign(nv, 0);
  for (int32_t t : w.element_owner) p.is_tuple[t] = 1;
  std::vector<uint8_t> is_element(nv, 0);
  for (int32_t e : w.element_item) {
    if (e < 0 || e >= nv) throw std::invalid_argument("index: tuple elements names a value out of range");
    is_element[e] = 1;
  }
  p.producer = std::move(w.producer);
  p.comp = std::move(w.comp);
  p.is_root.resize(ni);
  for (int32_t i = 0; i < ni; ++i) p.is_root[i] = w.kind[i] == kRootInstr;
  p.is_while = std::move(w.is_while);
  p.operands = std::move(w.operands);
  // Results in value order: a result's number is its place among its instruction's.
  std::vector<int32_t> owner, item;
  for (int32_t v = 0; v < nv; ++v) {
    if (!is_element[v]) {
      owner.push_back(p.producer[v]);
      item.push_back(v);
    }
  }
  p.results = rows_from_pairs(ni, owner, item, "results");
  p.callees = rows_from_pairs(ni, w.callee_owner, w.callee_item, "callees");
  out.captures = rows_from_pairs(ni, w.capture_owner, w.capture_item, "captures");
  p.root = std::move(w.root);
  p.is_func = std::move(w.is_func);
  p.entry = w.entry;
  out.params = std::move(w.params);
  check_rows(out.params, nc, ni, "parameters");
  // A computation's instructions in block order: its parameters by number
  // (a captured outer value's parameter is made later than the ops around it,
  // but its number follows the others'), then the rest in the order made.
  for (int32_t c = 0; c < nc; ++c) {
    for (const int32_t* q = out.params.begin(c); q != out.params.end(c); ++q) {
      if (*q < 0 || *q >= ni || p.comp[*q] != c || w.kind[*q] != kParameter) {
        throw std::invalid_argument("index: a computation's parameter is not a parameter of it");
      }
    }
  }
  owner.clear();
  item.clear();
  for (int32_t i = 0; i < ni; ++i) {
    if (w.kind[i] == kParameter) continue;
    const int32_t c = p.comp[i];
    if (c < 0 || c >= nc) throw std::invalid_argument("index: an instruction's computation is out of range");
    owner.push_back(c);
    item.push_back(i);
  }
  Rows rest = rows_from_pairs(nc, owner, item, "computation instructions");
  p.instrs.start.reserve(nc + 1);
  p.instrs.items.reserve(out.params.items.size() + rest.items.size());
  for (int32_t c = 0; c < nc; ++c) {
    p.instrs.items.insert(p.instrs.items.end(), out.params.begin(c), out.params.end(c));
    p.instrs.items.insert(p.instrs.items.end(), rest.begin(c), rest.end(c));
    p.instrs.start.push_back(static_cast<int32_t>(p.instrs.items.size()));
  }
  p.used.assign(nv, 0);
  p.check();
  check_rows(out.captures, ni, nv, "captures");
  value_uses(p.operands, out.captures, nv, out.users, out.use_operand);
  for (int32_t v = 0; v < nv; ++v) p.used[v] = out.users.count(v) > 0;
  // XLA's order of readers where it differs: the same uses, reordered.
  if (w.reorder_users.size() != static_cast<int32_t>(w.reordered.size()) ||
      w.reorder_operands.start != w.reorder_users.start) {
    throw std::invalid_argument("index: reordered uses differ in length");
  }
  check_rows(w.reorder_users, static_cast<int32_t>(w.reordered.size()), ni, "reordered users");
  check_rows(w.reorder_operands, static_cast<int32_t>(w.reordered.size()), INT32_MAX, "reordered operands");
  for (size_t k = 0; k < w.reordered.size(); ++k) {
    const int32_t v = w.reordered[k];
    if (v < 0 || v >= nv) throw std::invalid_argument("index: a reordered value is out of range");
    const int32_t kk = static_cast<int32_t>(k);
    std::vector<std::pair<int32_t, int32_t>> have, want;
    for (int32_t j = out.users.start[v]; j < out.users.start[v + 1]; ++j) {
      have.emplace_back(out.users.items[j], out.use_operand.items[j]);
    }
    for (int32_t j = w.reorder_users.start[kk]; j < w.reorder_users.start[kk + 1]; ++j) {
      want.emplace_back(w.reorder_users.items[j], w.reorder_operands.items[j]);
    }
    std::vector<std::pair<int32_t, int32_t>> a = have, b = want;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) throw std::invalid_argument("index: a reordered value's uses are not its uses");
    for (size_t j = 0; j < want.size(); ++j) {
      out.users.items[out.users.start[v] + j] = want[j].first;
      out.use_operand.items[out.users.start[v] + j] = want[j].second;
    }
  }
  out.kind = std::move(w.kind);
  return out;
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
