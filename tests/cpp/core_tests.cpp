// Unit tests of the compiled core's rooms, on small programs built by hand
// in the shapes the importer makes.  Run by tests/unit/test_core_cpp.py (it
// builds this with cmake); exits non-zero and names each failed check.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/computation.h"
#include "engine/demands.h"
#include "engine/facts.h"
#include "engine/index.h"
#include "engine/layouts.h"
#include "engine/order.h"
#include "engine/propagators.h"
#include "engine/provenance.h"
#include "engine/store.h"
#include "engine/worklist.h"
#include "mlir/mlir_capi.h"

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

void test_a_slot_set_rounds_ago_stays_forgotten_when_the_stamp_wraps() {
  StoreFixture f;
  CHECK(f.buffer(f.row, false, false, 0));
  // The stamp is a byte: 256 rounds on it would read as current again.
  for (int k = 0; k < 256; ++k) f.store.new_round();
  CHECK(!f.store.has_buffer(0));
  CHECK(f.buffer(f.col, false, false, 0) && f.store.has_buffer(0));
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
  CHECK(fast.fact_bytes() == 0);
}

void test_a_fast_run_keeps_facts_only_where_forced_or_marked() {
  slcore::Provenance fast(false);
  const int32_t link = fast.attach({5, 2, -1, 0, -1}, slcore::kOperand, 2, 1, 3, 4, true, false, 0, -1);
  const int32_t forced = fast.attach({6, 3, link, 7, -1}, slcore::kResult, 0, -1, 9, 4, true, true, 1, -1, true);
  const int32_t marked = fast.make(8, -1, -1, 0);
  fast.mark_fact(marked, slcore::kBuffer);
  CHECK(!fast.has_fact(link) && fast[link].rule == 5 && fast[link].instr == 2 && fast[link].kind == slcore::kNone);
  CHECK(fast.has_fact(forced) && fast.has_fact(marked));
  const slcore::Record r = fast[forced];
  CHECK(r.rule == 6 && r.parent == link && r.note == 7 && r.kind == slcore::kResult && r.layout == 9 && r.round == 1);
  // A fact-less record is a link of 16 bytes; an exact run keeps a fact beside every link.
  slcore::Provenance exact(true);
  for (int k = 0; k < 1000; ++k) {
    exact.attach({5, k, -1, 0, -1}, slcore::kBuffer, k, -1, 0, 1, false, false, 0, -1);
    fast.attach({5, k, -1, 0, -1}, slcore::kBuffer, k, -1, 0, 1, false, false, 0, -1);
  }
  CHECK(fast.link_bytes() <= 16 * 2048 && fast.fact_bytes() < exact.fact_bytes() / 10);
}


// --- a target's plan (demands.h) -------------------------------------------------

// One function: parameters a, b (f32[4,8]) and s (scalar); x = op(a, b);
// k = kernel(a, b); t = a tuple-operand op of x; y = op(x), an XLA pass's (late);
// z = op(s); c = op(a, b) for a column-major operand; g = op(x) for a dimension
// made most major; root(y, k, t, z, c, g).
struct PlanFixture {
  Builder b;
  int32_t f, a, bb, s, x, k, t, y, z, c, g, root;
  std::unique_ptr<slcore::Engine> e;
  PlanFixture() {
    f = b.comp(true);
    a = b.instr(f, {});
    bb = b.instr(f, {});
    s = b.instr(f, {});
    x = b.instr(f, {b.result(a), b.result(bb)});
    k = b.instr(f, {b.result(a), b.result(bb)});
    t = b.instr(f, {b.result(x)});
    y = b.instr(f, {b.result(x)});
    z = b.instr(f, {b.result(s)});
    c = b.instr(f, {b.result(a), b.result(bb)});
    g = b.instr(f, {b.result(x)});
    root = b.instr(f, {b.result(y), b.result(k), b.result(t), b.result(z), b.result(c), b.result(g)}, 0, true);
    const Program& p = b.done(f);
    slcore::FactsInput in;
    const int32_t nv = p.n_values(), ni = p.n_instrs();
    in.is_array.assign(nv, 1);
    for (int32_t v = 0; v < nv; ++v) {
      const bool scalar = v == b.result(s) || v == b.result(z);
      in.rank.push_back(scalar ? 0 : 2);
      in.buffer.push_back(v);
      in.dims.add(scalar ? std::vector<int64_t>{} : std::vector<int64_t>{4, 8});
    }
    std::vector<Ids> uses(nv), use_n(nv);
    for (int32_t i = 0; i < ni; ++i) {
      for (int32_t n = 0; n < p.operands.count(i); ++n) {
        uses[p.operands.begin(i)[n]].push_back(i);
        use_n[p.operands.begin(i)[n]].push_back(n);
      }
    }
    for (int32_t v = 0; v < nv; ++v) {
      in.users.add(uses[v]);
      in.use_operand.add(use_n[v]);
    }
    for (int32_t i = 0; i < ni; ++i) {
      in.kind.push_back(i == root ? slcore::kRootInstr : i == a || i == bb || i == s ? slcore::kParameter : slcore::kOp);
      in.hlo.push_back(slcore::kOtherOp);
      in.rule.push_back(i == t ? slcore::kTupleOperand : i == k ? slcore::kCanChange : 0);  // a dot may change layout
      in.back.push_back(slcore::kBackNone);
      in.fwd.push_back(slcore::kFwdNone);
      in.active.push_back(1);
      in.layout_constrained.push_back(0);
      in.dim.push_back(0);
      in.captures.add({});
      in.aliases.add({});
      in.perm.add({});
    }
    in.comp_kind.push_back(slcore::kFuncComp);
    in.caller.push_back(-1);
    in.params.add({a, bb, s});
    e = std::make_unique<slcore::Engine>(b.p, slcore::build_facts(b.p, std::move(in)), true, false, nullptr);
  }
  // Rule and note ids: 20 the catch-all's, 21 its note, 22 the late note, 30.. the steps'.
  slcore::PlanInput input() const {
    slcore::PlanInput in;
    in.comp = f;
    in.late = {y};
    in.instr = {k, c, g};
    in.code = {slcore::kRowMajorKernel, slcore::kAscendingOperand, slcore::kMostMajorDim};
    in.arg = {0, 1, 1};
    in.rule = {30, 31, 32};
    in.note = {40, 41, 42};
    in.catch_all_rule = 20;
    in.catch_all_note = 21;
    in.late_note = 22;
    return in;
  }
  int32_t operand_layout(int32_t i, int32_t n) const { return e->store.operand(e->slot(i, n)).layout; }
};

void test_a_plan_lays_its_steps_out_in_list_order() {
  PlanFixture f;
  const slcore::Plan plan = slcore::make_plan(*f.e, f.input());
  // Parameters, the root, the tuple-operand op and the op of a scalar have no step;
  // the late op comes last, with its own note.
  Ids instrs, codes, notes;
  for (const slcore::Step& s : plan.steps) {
    instrs.push_back(s.instr);
    codes.push_back(s.code);
    notes.push_back(plan.note(s));
  }
  CHECK((instrs == Ids{f.x, f.k, f.c, f.g, f.y}));
  CHECK((codes == Ids{slcore::kCatchAll, slcore::kRowMajorKernel, slcore::kAscendingOperand, slcore::kMostMajorDim,
                      slcore::kCatchAll}));
  CHECK((notes == Ids{21, 40, 41, 42, 22}));
}

void test_a_plan_names_only_its_own_computation() {
  PlanFixture f;
  slcore::PlanInput bad = f.input();
  bad.code[0] = slcore::kCatchAll;  // the catch-all needs no step
  bool refused = false;
  try {
    slcore::make_plan(*f.e, bad);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
  bad = f.input();
  bad.arg[1] = 2;  // c has two operands
  refused = false;
  try {
    slcore::make_plan(*f.e, bad);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
}

void test_a_plan_applies_each_step_and_keeps_its_records_across_rounds() {
  PlanFixture f;
  slcore::Engine& e = *f.e;
  const int32_t row = e.layouts.default_of(2), col = e.layouts.intern({0, 1});
  // Something already holds x's first operand: the catch-all leaves it alone.
  e.set_operand(col, f.x, 0, true, true, 0, {5, f.x, -1, 0, -1});
  slcore::Plan plan = slcore::make_plan(e, f.input());
  slcore::apply_plan(e, plan, 3);
  CHECK(f.operand_layout(f.x, 0) == col && f.operand_layout(f.x, 1) == row);
  const slcore::Record& catch_all = e.prov[e.store.operand(e.slot(f.x, 1)).origin];
  CHECK(catch_all.rule == 20 && catch_all.note == 21 && catch_all.instr == f.x && catch_all.priority == 3);
  CHECK(e.prov[e.store.operand(e.slot(f.y, 0)).origin].note == 22);
  // The kernel: its result and both operands row-major, all from one record.
  CHECK(e.buffer_layout(f.b.result(f.k)) == row && f.operand_layout(f.k, 0) == row && f.operand_layout(f.k, 1) == row);
  const int32_t made = plan.own[plan.steps[1].own].made;
  CHECK(made >= 0 && e.prov[made].rule == 30 && e.prov[made].note == 40 && e.prov[made].instr == f.k);
  CHECK(e.store.buffer(f.b.result(f.k)).origin == made);  // exact: the first constraint fills it in
  CHECK(e.prov[e.store.operand(e.slot(f.k, 1)).origin].rule == 30);
  // The column-major operand, and dimension 1 made most major: {0,1} both.
  CHECK(f.operand_layout(f.c, 1) == col && !e.store.has_operand(e.slot(f.c, 0)));
  CHECK(e.buffer_layout(f.b.result(f.g)) == col);
  // Nothing for the tuple-operand op, the scalar op, parameters or the root.
  CHECK(!e.store.has_operand(e.slot(f.t, 0)) && !e.store.has_operand(e.slot(f.root, 0)));
  // The next round reuses the records the steps made.
  e.new_round();
  const int32_t records = e.prov.size();
  slcore::apply_plan(e, plan, 4);
  CHECK(plan.own[plan.steps[1].own].made == made && e.store.operand(e.slot(f.k, 0)).priority == 4);
  CHECK(e.prov[e.store.buffer(f.b.result(f.k)).origin].rule == 30 && e.prov.size() > records);
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

// --- the per-computation steps (computation.h) ------------------------------------

// An entry f(a: f32[4,8], s: f32[]) -> (x, s, tok) with x = op(a), tok = a token op,
// and a reducer region r(p, q: f32[]) -> (y) with y = op(p, q), called by x.
struct ComputationFixture {
  Builder b;
  int32_t f, r, a, s, x, tok, froot, p, q, y, rroot;
  std::unique_ptr<slcore::Engine> e;
  ComputationFixture() {
    f = b.comp(true);
    r = b.comp(false);
    a = b.instr(f, {});
    s = b.instr(f, {});
    x = b.instr(f, {b.result(a)}, 1, false, false, {r});
    tok = b.instr(f, {});
    froot = b.instr(f, {b.result(x), b.result(s), b.result(tok)}, 0, true);
    p = b.instr(r, {});
    q = b.instr(r, {});
    y = b.instr(r, {b.result(p), b.result(q)});
    rroot = b.instr(r, {b.result(y)}, 0, true);
    const Program& prog = b.done(f);
    slcore::FactsInput in;
    const int32_t nv = prog.n_values(), ni = prog.n_instrs();
    for (int32_t v = 0; v < nv; ++v) {
      const bool wide = v == b.result(a) || v == b.result(x);
      in.is_array.push_back(v != b.result(tok));
      in.rank.push_back(wide ? 2 : 0);
      in.buffer.push_back(v);
      in.dims.add(wide ? std::vector<int64_t>{4, 8} : std::vector<int64_t>{});
    }
    std::vector<Ids> uses(nv), use_n(nv);
    for (int32_t i = 0; i < ni; ++i) {
      for (int32_t n = 0; n < prog.operands.count(i); ++n) {
        uses[prog.operands.begin(i)[n]].push_back(i);
        use_n[prog.operands.begin(i)[n]].push_back(n);
      }
    }
    for (int32_t v = 0; v < nv; ++v) {
      in.users.add(uses[v]);
      in.use_operand.add(use_n[v]);
    }
    for (int32_t i = 0; i < ni; ++i) {
      const bool param = i == a || i == s || i == p || i == q;
      in.kind.push_back(i == froot || i == rroot ? slcore::kRootInstr : param ? slcore::kParameter : slcore::kOp);
      in.hlo.push_back(slcore::kOtherOp);
      in.rule.push_back(0);
      in.back.push_back(slcore::kBackNone);
      in.fwd.push_back(slcore::kFwdNone);
      in.active.push_back(prog.comp[i] == f);
      in.layout_constrained.push_back(0);
      in.dim.push_back(0);
      in.captures.add({});
      in.aliases.add({});
      in.perm.add({});
    }
    in.comp_kind = {slcore::kFuncComp, slcore::kApplyComp};
    in.caller = {-1, x};
    in.params.add({a, s});
    in.params.add({p, q});
    e = std::make_unique<slcore::Engine>(b.p, slcore::build_facts(b.p, std::move(in)), false, false, nullptr);
  }
};

void test_default_buffers_follow_the_buffer_ids_per_computation() {
  ComputationFixture t;
  const slcore::Program& p = t.e->p;
  // Buffer ids that reverse the block order: the default loop visits later values first.
  std::vector<int64_t> key(p.n_values());
  for (int32_t v = 0; v < p.n_values(); ++v) key[v] = p.n_values() - v;
  const slcore::Rows rows = slcore::default_buffers(*t.e, key, {t.r, t.f});
  CHECK(rows.size() == 2);
  // The token is no array; every other result is its own buffer.
  CHECK((Ids(rows.begin(0), rows.end(0)) == Ids{t.b.result(t.y), t.b.result(t.q), t.b.result(t.p)}));
  CHECK((Ids(rows.begin(1), rows.end(1)) == Ids{t.b.result(t.x), t.b.result(t.s), t.b.result(t.a)}));
  bool refused = false;
  try {
    slcore::default_buffers(*t.e, std::vector<int64_t>(3, 0), {t.f});
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
}

void test_a_run_of_one_layout_computations_reports_each_interface() {
  ComputationFixture t;
  slcore::Engine& e = *t.e;
  const int32_t scalar = e.layouts.default_of(0);
  // Before: nothing laid out, every leaf of the interface reads -1.
  Ids params, results;
  slcore::interface_of(e, t.r, params, results);
  CHECK((params == Ids{-1, -1} && results == Ids{-1}));
  slcore::Rows ps, rs;
  slcore::lay_out_one_layout_run(e, {t.r}, ps, rs);
  CHECK(ps.size() == 1 && rs.size() == 1);
  CHECK((Ids(ps.begin(0), ps.end(0)) == Ids{scalar, scalar} && Ids(rs.begin(0), rs.end(0)) == Ids{scalar}));
  CHECK(e.buffer_layout(t.b.result(t.y)) == scalar && e.store.buffer(t.b.result(t.y)).mandatory);
  // The entry's interface: a, s and x unset, the token no array.
  slcore::interface_of(e, t.f, params, results);
  CHECK((params == Ids{-1, -1} && results == Ids{-1, -1, -1}));
  e.set_buffer(e.layouts.intern({0, 1}), t.b.result(t.x), true, true, 1, {5, t.x, -1, 0, -1});
  slcore::interface_of(e, t.f, params, results);
  CHECK((results == Ids{e.layouts.intern({0, 1}), -1, -1}));
}

void test_parameters_are_pinned_each_from_a_record_of_its_own() {
  ComputationFixture t;
  slcore::Engine& e = *t.e;
  const int32_t col = e.layouts.intern({0, 1}), scalar = e.layouts.default_of(0);
  const int32_t before = e.prov.size();
  // Rule 7, notes 8 and 9 (name ids the Python side interned).
  slcore::pin_parameters(e, {t.a, t.s}, {col, scalar}, {8, 9}, 7, 2);
  CHECK(e.prov.size() == before + 2);
  const slcore::BufferSlot& held = e.store.buffer(t.b.result(t.a));
  CHECK(held.layout == col && held.mandatory && held.priority == 2 && held.origin == before);
  const slcore::Record& first = e.prov[before];
  const slcore::Record& second = e.prov[before + 1];
  CHECK(first.rule == 7 && first.instr == t.a && first.note == 8 && first.parent == -1);
  CHECK(second.rule == 7 && second.instr == t.s && second.note == 9);
  CHECK(e.buffer_layout(t.b.result(t.s)) == scalar);
  bool refused = false;
  try {
    slcore::pin_parameters(e, {t.x}, {col}, {8}, 7, 2);  // x is no parameter
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
  refused = false;
  try {
    slcore::pin_parameters(e, {t.a}, {col, col}, {8}, 7, 2);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
}

void test_the_c_api_search_names_why_it_found_nothing() {
  // A library this program never loaded, then one it did that holds no MLIR
  // (the C library): each answer is a reason, never a half-filled table.
  std::string why;
  CHECK(slcore::find_mlir_capi("libnot_loaded_here.so", why) == nullptr);
  CHECK(why == "libnot_loaded_here.so is not loaded in this process");
  CHECK(slcore::find_mlir_capi("libc.so.6", why) == nullptr);
  CHECK(!why.empty());
  // Asked again, the same answer, without a second search.
  std::string again;
  CHECK(slcore::find_mlir_capi("libc.so.6", again) == nullptr);
  CHECK(again == why);
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
  test_a_slot_set_rounds_ago_stays_forgotten_when_the_stamp_wraps();
  test_a_python_origin_is_filled_once_then_copied();
  test_a_fast_run_keeps_facts_only_where_forced_or_marked();
  test_worklist_dfs_front_last_first_bfs_back_by_priority();
  test_a_plan_lays_its_steps_out_in_list_order();
  test_a_plan_names_only_its_own_computation();
  test_a_plan_applies_each_step_and_keeps_its_records_across_rounds();
  test_default_buffers_follow_the_buffer_ids_per_computation();
  test_a_run_of_one_layout_computations_reports_each_interface();
  test_parameters_are_pinned_each_from_a_record_of_its_own();
  test_the_c_api_search_names_why_it_found_nothing();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("core_tests: all checks passed\n");
  return 0;
}
