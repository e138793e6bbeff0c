// Unit tests of the compiled core's rooms, on small programs built by hand
// in the shapes the importer makes.  Run by tests/unit/test_core_cpp.py (it
// builds this with cmake); exits non-zero and names each failed check.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "index.h"
#include "layouts.h"
#include "order.h"
#include "provenance.h"
#include "store.h"
#include "worklist.h"

using slcore::Program;
using Ids = std::vector<int32_t>;

static int failures = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

namespace {

// A small program builder: values, instructions and computations appended in id order.
struct Builder {
  Program p;
  std::vector<Ids> value_elements;
  std::vector<Ids> ops, res, calls, comp_instrs;

  int32_t comp(bool is_func) {
    p.root.push_back(-1);
    p.is_func.push_back(is_func);
    comp_instrs.emplace_back();
    return static_cast<int32_t>(p.root.size()) - 1;
  }
  // An instruction in computation c reading ``operands``, making ``n_results`` array values.
  int32_t instr(int32_t c, Ids operands, int n_results = 1, bool root = false, bool is_while = false,
                Ids callees = {}) {
    const int32_t id = static_cast<int32_t>(p.comp.size());
    p.comp.push_back(c);
    p.is_root.push_back(root);
    p.is_while.push_back(is_while);
    for (int32_t v : operands) p.used[v] = 1;
    ops.push_back(operands);
    calls.push_back(callees);
    Ids rs;
    for (int k = 0; k < n_results; ++k) rs.push_back(value(id));
    res.push_back(rs);
    comp_instrs[c].push_back(id);
    if (root) p.root[c] = id;
    return id;
  }
  int32_t value(int32_t producer, Ids elements = {}, bool tuple = false) {
    p.producer.push_back(producer);
    p.is_tuple.push_back(tuple);
    p.used.push_back(0);
    value_elements.push_back(elements);
    return static_cast<int32_t>(p.producer.size()) - 1;
  }
  int32_t result(int32_t instr, int k = 0) const { return res[instr][k]; }
  const Program& done(int32_t entry) {
    p.entry = entry;
    p.elements = {};
    p.operands = p.results = p.callees = p.instrs = {};
    for (auto& e : value_elements) p.elements.add(e);
    for (auto& r : ops) p.operands.add(r);
    for (auto& r : res) p.results.add(r);
    for (auto& r : calls) p.callees.add(r);
    for (auto& r : comp_instrs) p.instrs.add(r);
    p.check();
    return p;
  }
};

void test_post_order_operands_first_left_to_right() {
  Builder b;
  const int32_t f = b.comp(true);
  const int32_t a = b.instr(f, {});          // parameter
  const int32_t x = b.instr(f, {b.result(a)});
  const int32_t y = b.instr(f, {b.result(a)});
  const int32_t z = b.instr(f, {b.result(y), b.result(x)});  // y before x: operand order
  b.instr(f, {b.result(z)}, 0, true);
  const Program& p = b.done(f);
  CHECK((slcore::post_order(p, f) == Ids{a, y, x, z, 4}));
}

void test_post_order_dead_ops_start_their_own_walk() {
  Builder b;
  const int32_t f = b.comp(true);
  const int32_t a = b.instr(f, {});
  const int32_t dead = b.instr(f, {b.result(a)});  // nobody reads it: a walk starts here
  const int32_t r = b.instr(f, {b.result(a)}, 0, true);
  const Program& p = b.done(f);
  CHECK((slcore::post_order(p, f) == Ids{a, dead, r}));
}

void test_post_order_keeps_to_its_computation() {
  Builder b;
  const int32_t f = b.comp(true);
  const int32_t region = b.comp(false);
  const int32_t a = b.instr(f, {});
  const int32_t inner = b.instr(region, {b.result(a)});  // reads an outer value
  const int32_t rr = b.instr(region, {b.result(inner)}, 0, true);
  const Program& p = b.done(f);
  CHECK((slcore::post_order(p, region) == Ids{inner, rr}));
}

void test_computation_order_callees_first_while_condition_first() {
  Builder b;
  const int32_t entry = b.comp(true);
  const int32_t body = b.comp(false);
  const int32_t cond = b.comp(false);
  const int32_t helper = b.comp(true);
  b.instr(body, {}, 0, true);
  b.instr(cond, {}, 0, true);
  b.instr(helper, {}, 0, true);
  const int32_t w = b.instr(entry, {}, 1, false, true, {body, cond});
  b.instr(entry, {b.result(w)}, 0, true);
  const Program& p = b.done(entry);
  // helper is a function nothing calls: it comes first, then the entry's callees.
  CHECK((slcore::computation_order(p) == Ids{helper, cond, body, entry}));
  CHECK((slcore::callees_of(p, entry) == Ids{cond, body}));
}

void test_shape_indices_flatten_nested_tuples() {
  Builder b;
  const int32_t f = b.comp(true);
  const int32_t t = b.instr(f, {}, 0);
  const int32_t x = b.value(t), y = b.value(t), z = b.value(t);
  const int32_t inner = b.value(t, {y, z}, true);
  const int32_t outer = b.value(t, {x, inner}, true);
  b.res[t] = {outer};
  b.instr(f, {outer}, 0, true);
  const Program& p = b.done(f);
  const slcore::Rows leaves = slcore::shape_indices(p);
  CHECK((Ids(leaves.begin(t), leaves.end(t)) == Ids{x, y, z}));
  // Buffer ids: the tuple, then each leaf; an array result takes two (itself, its index).
  const std::vector<int64_t> key = slcore::number_buffers(p, {f}, {0});
  CHECK(key[outer] == 0 && key[x] == 1 && key[y] == 2 && key[z] == 3);
}

void test_number_buffers_skips_and_counts_two_per_array() {
  Builder b;
  const int32_t f = b.comp(true);
  const int32_t g = b.comp(false);
  const int32_t a = b.instr(f, {});
  const int32_t c = b.instr(g, {});
  b.instr(g, {b.result(c)}, 0, true);
  b.instr(f, {b.result(a)}, 0, true);
  const Program& p = b.done(f);
  std::vector<int64_t> key = slcore::number_buffers(p, {g, f}, {0, 0});
  CHECK(key[b.result(c)] == 1 && key[b.result(a)] == 3);
  key = slcore::number_buffers(p, {g, f}, {0, 1});  // g skipped
  CHECK(key[b.result(a)] == 1);
}

void test_malformed_index_is_refused() {
  Builder b;
  const int32_t f = b.comp(true);
  b.instr(f, {}, 0, true);
  b.done(f);
  b.p.operands.items.push_back(7);  // an operand that names no value
  b.p.operands.start.back() = 1;
  bool refused = false;
  try {
    b.p.check();
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
}

// --- the store: XLA's overwrite rules ---------------------------------------

struct StoreFixture {
  slcore::Layouts layouts;
  slcore::Provenance prov{true};
  slcore::Store store{4, 4};
  int32_t row = layouts.intern({1, 0}), col = layouts.intern({0, 1});
  slcore::Why why{slcore::kNoName, -1, -1, slcore::kNoName, -1};
  bool buffer(int32_t layout, bool mandatory, bool dfs, int32_t priority, bool array_shape = true) {
    return store.update_buffer(0, layout, mandatory, dfs, priority, array_shape, why, 0, prov);
  }
};

void test_same_layout_upgrades_flags_and_priority() {
  StoreFixture f;
  CHECK(f.buffer(f.row, false, false, 0));
  CHECK(f.buffer(f.row, true, true, 2));
  const slcore::BufferSlot& c = f.store.buffer(0);
  CHECK(c.mandatory && c.dfs && c.priority == 2);
  CHECK(!f.buffer(f.row, false, false, 1));  // nothing to upgrade
  CHECK(f.store.history(0).empty());
}

void test_mandatory_request_always_overwrites() {
  StoreFixture f;
  CHECK(f.buffer(f.row, true, false, 5));
  CHECK(f.buffer(f.col, true, true, 0));
  CHECK(f.store.buffer(0).layout == f.col && f.store.buffer(0).priority == 0);
  CHECK(f.store.history(0) == Ids{f.row});
  // The change's record says what it replaced.
  CHECK(f.prov[f.store.buffer(0).origin].was == f.row);
}

void test_non_mandatory_needs_strictly_higher_priority() {
  StoreFixture f;
  CHECK(f.buffer(f.row, false, false, 1));
  CHECK(!f.buffer(f.col, false, true, 1));
  CHECK(f.buffer(f.col, false, true, 2));
  CHECK(f.store.buffer(0).layout == f.col);
}

void test_non_mandatory_may_beat_mandatory_with_higher_priority() {
  StoreFixture f;
  CHECK(f.buffer(f.row, true, false, 0));
  CHECK(f.buffer(f.col, false, true, 1));
  CHECK(!f.store.buffer(0).mandatory);
}

void test_non_mandatory_changes_are_capped_at_two() {
  StoreFixture f;
  CHECK(f.buffer(f.row, false, false, 0));
  CHECK(f.buffer(f.col, false, true, 1));
  CHECK(f.buffer(f.row, false, true, 2));
  CHECK(!f.buffer(f.col, false, true, 3));  // a third change is refused
  CHECK(f.buffer(f.col, true, true, 0));    // a mandatory one is not capped
  CHECK((f.store.history(0) == Ids{f.row, f.col, f.row}));
}

void test_non_mandatory_refused_on_a_tuple_element() {
  StoreFixture f;
  CHECK(f.buffer(f.row, false, false, 0));
  CHECK(!f.buffer(f.col, false, true, 5, false));
  CHECK(f.buffer(f.col, true, true, 0, false));
}

void test_operand_first_writer_wins_unless_mandatory_and_strong_enough() {
  StoreFixture f;
  auto set = [&](int32_t layout, bool mandatory, int32_t priority) {
    return f.store.update_operand(1, 7, 0, layout, mandatory, true, priority, f.why, 0, f.prov);
  };
  CHECK(set(f.row, false, 1));
  CHECK(!set(f.col, false, 5));  // XLA never negotiates operand layouts
  CHECK(!set(f.row, true, 5));   // the same layout: nothing changes
  CHECK(!set(f.col, true, 0));   // weaker than what holds the slot
  CHECK(set(f.col, true, 1));
  CHECK(f.store.operand(1).layout == f.col && f.store.operand(1).mandatory);
  CHECK((f.store.operand_order() == Ids{1}));
  const slcore::Record& r = f.prov[f.store.operand(1).origin];
  CHECK(r.kind == slcore::kOperand && r.a == 7 && r.b == 0 && r.layout == f.col);
}

void test_a_new_round_forgets_every_slot() {
  StoreFixture f;
  CHECK(f.buffer(f.row, false, false, 0));
  CHECK(f.buffer(f.col, true, false, 0));
  f.store.new_round();
  CHECK(!f.store.has_buffer(0));
  CHECK(f.buffer(f.col, false, false, 0));
  CHECK(f.store.history(0).empty() && f.store.buffer(0).changes == 0);
}

void test_a_python_origin_is_filled_once_then_copied() {
  slcore::Provenance prov(true);
  const int32_t made = prov.make(3, 1, -1, 0);
  const slcore::Why why{0, -1, -1, 0, made};
  CHECK(prov.attach(why, slcore::kBuffer, 4, -1, 0, 1, true, true, 0, -1) == made);
  const int32_t copy = prov.attach(why, slcore::kBuffer, 5, -1, 0, 1, true, true, 0, -1);
  CHECK(copy != made && prov[copy].rule == 3 && prov[copy].a == 5 && prov[made].a == 4);
  // Fast runs keep the link only: no fact, and a made record is used as it is.
  slcore::Provenance fast(false);
  const int32_t m2 = fast.make(3, 1, -1, 0);
  CHECK(fast.attach({0, -1, -1, 0, m2}, slcore::kBuffer, 4, -1, 0, 1, true, true, 0, -1) == m2);
  CHECK(!fast.has_fact(m2));
}

// --- the worklist ------------------------------------------------------------

void test_worklist_dfs_front_last_first_bfs_back_by_priority() {
  slcore::Worklist w;
  // (kind, id) -> priority, dfs
  const int32_t prio[4] = {0, 0, 0, 1};
  const bool dfs[4] = {true, false, true, false};
  auto priority_of = [&](slcore::Ref r) { return prio[r.id]; };
  for (int32_t id : {0, 1, 2, 3}) w.add({slcore::kBuffer, id}, dfs[id], prio[id], priority_of);
  // A breadth-first entry goes after the last entry at least as strong (of either kind).
  Ids batch;
  for (const slcore::Ref& r : w.added()) batch.push_back(r.id);
  CHECK((batch == Ids{3, 0, 1, 2}));
  w.drain([&](slcore::Ref r) { return dfs[r.id]; });
  Ids order;
  while (!w.empty()) order.push_back(w.pop().id);
  // Depth-first ones go to the front, the last added first; the others to the back.
  CHECK((order == Ids{2, 0, 3, 1}));
}

}  // namespace

int main() {
  test_post_order_operands_first_left_to_right();
  test_post_order_dead_ops_start_their_own_walk();
  test_post_order_keeps_to_its_computation();
  test_computation_order_callees_first_while_condition_first();
  test_shape_indices_flatten_nested_tuples();
  test_number_buffers_skips_and_counts_two_per_array();
  test_malformed_index_is_refused();
  test_same_layout_upgrades_flags_and_priority();
  test_mandatory_request_always_overwrites();
  test_non_mandatory_needs_strictly_higher_priority();
  test_non_mandatory_may_beat_mandatory_with_higher_priority();
  test_non_mandatory_changes_are_capped_at_two();
  test_non_mandatory_refused_on_a_tuple_element();
  test_operand_first_writer_wins_unless_mandatory_and_strong_enough();
  test_a_new_round_forgets_every_slot();
  test_a_python_origin_is_filled_once_then_copied();
  test_worklist_dfs_front_last_first_bfs_back_by_priority();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("core_tests: all checks passed\n");
  return 0;
}
