// stablehlo_layout._core: the compiled core's Python face.  It only converts:
// Python lists in, Python lists out; the rooms (index, order, store, worklist,
// propagators, ...) hold the logic.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "demands.h"
#include "facts.h"
#include "index.h"
#include "order.h"
#include "propagators.h"
#include "reshape.h"

namespace nb = nanobind;

namespace {

using Ids = std::vector<int32_t>;
using Flags = std::vector<uint8_t>;

slcore::Rows rows(Ids start, Ids items) {
  slcore::Rows r;
  r.start = std::move(start);
  r.items = std::move(items);
  return r;
}

// One Program per engine run, built from flat arrays the Python side fills in
// one walk over its graph.
struct Index {
  slcore::Program p;
};

nb::tuple layout_tuple(const slcore::Layouts& l, int32_t id) {
  nb::list out;
  for (const int32_t* d = l.begin(id); d != l.end(id); ++d) out.append(*d);
  return nb::tuple(out);
}

// The target's derivations, called back in Python: ``(instr, n, layout[, result])``
// to None or (layout id, rule name id); the rule's own to None or a layout id.
class PyDeriver : public slcore::Deriver {
 public:
  PyDeriver(nb::object back, nb::object fwd, nb::object rule)
      : back_(std::move(back)), fwd_(std::move(fwd)), rule_(std::move(rule)) {}
  bool operand_from_output(int32_t instr, int32_t n, int32_t output, int32_t& layout, int32_t& rule) override {
    return unpack(back_(instr, n, output), layout, rule);
  }
  bool output_from_operand(int32_t instr, int32_t n, int32_t operand, int32_t result, int32_t& layout,
                           int32_t& rule) override {
    return unpack(fwd_(instr, n, operand, result), layout, rule);
  }
  bool rule_operand(int32_t instr, int32_t n, int32_t output, int32_t& layout) override {
    nb::object got = rule_(instr, n, output);
    if (got.is_none()) return false;
    layout = nb::cast<int32_t>(got);
    return true;
  }

 private:
  static bool unpack(nb::object got, int32_t& layout, int32_t& rule) {
    if (got.is_none()) return false;
    auto pair = nb::cast<std::pair<int32_t, int32_t>>(got);
    layout = pair.first;
    rule = pair.second;
    return true;
  }
  nb::object back_, fwd_, rule_;
};

// The engine and the deriver it calls back through.
// The engine, the deriver it calls back through, and the targets' plans (made once per run).
struct Core {
  std::unique_ptr<PyDeriver> deriver;
  std::unique_ptr<slcore::Engine> e;
  std::vector<slcore::Plan> plans;
};

slcore::Why why(int32_t rule, int32_t instr, int32_t parent, int32_t note, int32_t made) {
  return slcore::Why{rule, instr, parent, note, made};
}

nb::object slot_tuple(const slcore::Slot& s) {
  return nb::make_tuple(s.layout, static_cast<bool>(s.mandatory), static_cast<bool>(s.dfs), s.priority, s.round,
                        s.origin);
}

PyObject* demand_error = nullptr;

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "The compiled core of stablehlo-layout (see docs/DESIGN.md, the core).";
  demand_error = PyErr_NewException("stablehlo_layout._core.DemandError", PyExc_ValueError, nullptr);
  m.attr("DemandError") = nb::handle(demand_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const slcore::DemandError& e) {
      nb::tuple args = nb::make_tuple(static_cast<int>(e.what), e.a, e.b, e.layout);
      PyErr_SetObject(demand_error, args.ptr());
    }
  });
  nb::list names;
  for (const char* n : slcore::kRuleNames) names.append(n);
  m.attr("RULE_NAMES") = nb::tuple(names);

  m.def(
      "align_layouts",
      [](const std::vector<int64_t>& in_dims, const Ids& in_layout, const std::vector<int64_t>& out_dims) -> nb::object {
        if (in_layout.size() != in_dims.size()) throw std::invalid_argument("align_layouts: layout rank differs");
        Ids out;
        if (!slcore::align_layouts(in_dims, in_layout, out_dims, out)) return nb::none();
        return nb::tuple(nb::cast(out));
      },
      "The core's AlignLayouts (cpp/reshape.cpp), the twin of layout.align_layouts.");

  nb::class_<Index>(m, "Index")
      .def(
          "__init__",
          [](Index* self, Ids producer, Flags is_tuple, Flags used, Ids elem_start, Ids elem_items, Ids comp,
             Flags is_root, Flags is_while, Ids op_start, Ids op_items, Ids res_start, Ids res_items,
             Ids callee_start, Ids callee_items, Ids root, Flags is_func, Ids instr_start, Ids instr_items,
             int32_t entry) {
            auto* x = new (self) Index();
            slcore::Program& p = x->p;
            p.producer = std::move(producer);
            p.is_tuple = std::move(is_tuple);
            p.used = std::move(used);
            p.elements = rows(std::move(elem_start), std::move(elem_items));
            p.comp = std::move(comp);
            p.is_root = std::move(is_root);
            p.is_while = std::move(is_while);
            p.operands = rows(std::move(op_start), std::move(op_items));
            p.results = rows(std::move(res_start), std::move(res_items));
            p.callees = rows(std::move(callee_start), std::move(callee_items));
            p.root = std::move(root);
            p.is_func = std::move(is_func);
            p.instrs = rows(std::move(instr_start), std::move(instr_items));
            p.entry = entry;
            p.check();  // a malformed index is a bug on the Python side: say so, never crash
          })
      .def(
          "tuple_shape_indices",
          [](const Index& x) {
            // Only where a result is a tuple: elsewhere the shape indices are the
            // results themselves, which the caller already holds as lists.
            nb::list out;
            Ids leaves;
            for (int32_t i = 0; i < x.p.n_instrs(); ++i) {
              bool tuple = false;
              for (const int32_t* r = x.p.results.begin(i); r != x.p.results.end(i); ++r) tuple |= x.p.is_tuple[*r];
              if (!tuple) continue;
              leaves.clear();
              for (const int32_t* r = x.p.results.begin(i); r != x.p.results.end(i); ++r) {
                slcore::append_leaves(x.p, *r, leaves);
              }
              out.append(nb::make_tuple(i, leaves));
            }
            return out;
          },
          "(instruction, shape indices) for each instruction with a tuple result.")
      .def("computation_order", [](const Index& x) { return slcore::computation_order(x.p); },
           "Callees before callers, the entry last.")
      .def("post_order", [](const Index& x, int32_t c) { return slcore::post_order(x.p, c); },
           "The instructions of computation c in XLA's post-order.")
      .def(
          "number_buffers",
          [](const Index& x, const Ids& order, const Flags& skip) { return slcore::number_buffers(x.p, order, skip); },
          "XLA's buffer ids per value, walking the computations of order not skipped.");

  nb::class_<Core>(m, "Engine")
      .def(
          "__init__",
          [](Core* self, const Index& index, Flags is_array, Ids rank, Ids buffer, Ids dims_start,
             std::vector<int64_t> dims_items,
             Ids use_start, Ids users, Ids use_operand, Flags kind, Flags hlo, std::vector<uint16_t> rule, Flags back,
             Flags fwd, Flags active, Flags layout_constrained, Ids dim, Ids capture_start, Ids capture_items,
             Ids alias_start, Ids alias_items, Ids perm_start, Ids perm_items, Flags comp_kind, Ids caller,
             Ids param_start, Ids param_items, bool exact, bool tracing, nb::object derive_back,
             nb::object derive_fwd, nb::object derive_rule) {
            slcore::FactsInput in;
            in.is_array = std::move(is_array);
            in.rank = std::move(rank);
            in.buffer = std::move(buffer);
            in.dims.start = std::move(dims_start);
            in.dims.items = std::move(dims_items);
            in.users = rows(use_start, std::move(users));
            in.use_operand = rows(std::move(use_start), std::move(use_operand));
            in.kind = std::move(kind);
            in.hlo = std::move(hlo);
            in.rule = std::move(rule);
            in.back = std::move(back);
            in.fwd = std::move(fwd);
            in.active = std::move(active);
            in.layout_constrained = std::move(layout_constrained);
            in.dim = std::move(dim);
            in.captures = rows(std::move(capture_start), std::move(capture_items));
            in.aliases = rows(std::move(alias_start), std::move(alias_items));
            in.perm = rows(std::move(perm_start), std::move(perm_items));
            in.comp_kind = std::move(comp_kind);
            in.caller = std::move(caller);
            in.params = rows(std::move(param_start), std::move(param_items));
            auto* c = new (self) Core();
            c->deriver = std::make_unique<PyDeriver>(std::move(derive_back), std::move(derive_fwd),
                                                     std::move(derive_rule));
            c->e = std::make_unique<slcore::Engine>(index.p, slcore::build_facts(index.p, std::move(in)), exact,
                                                    tracing, c->deriver.get());
          },
          nb::keep_alive<1, 2>())
      // -- layouts and names
      .def("intern", [](Core& c, const Ids& dims) { return c.e->layouts.intern(dims); })
      .def("layouts_from",
           [](const Core& c, int32_t k) {
             nb::list out;
             for (int32_t i = k; i < c.e->layouts.size(); ++i) out.append(layout_tuple(c.e->layouts, i));
             return out;
           })
      // -- state the driver sets and reads
      .def_prop_rw(
          "priority", [](const Core& c) { return c.e->current_priority; },
          [](Core& c, int32_t v) { c.e->current_priority = v; })
      .def_prop_rw(
          "round", [](const Core& c) { return c.e->round; }, [](Core& c, int32_t v) { c.e->round = v; })
      .def_prop_ro("weakened", [](const Core& c) { return c.e->weakened; })
      .def("new_round", [](Core& c) { c.e->new_round(); })
      .def("set_layout_constrained", [](Core& c, int32_t i) { c.e->facts.in.layout_constrained.at(i) = 1; })
      // -- XLA's Set*Layout and the worklist
      .def("set_buffer",
           [](Core& c, int32_t layout, int32_t b, bool mandatory, bool dfs, int32_t priority, int32_t rule,
              int32_t instr, int32_t parent, int32_t note, int32_t made) {
             if (b < 0 || b >= c.e->p.n_values()) throw std::out_of_range("set_buffer: no such value");
             c.e->set_buffer(layout, b, mandatory, dfs, priority, why(rule, instr, parent, note, made));
           })
      .def("set_operand",
           [](Core& c, int32_t layout, int32_t instr, int32_t n, bool mandatory, bool dfs, int32_t priority,
              int32_t rule, int32_t at, int32_t parent, int32_t note, int32_t made) {
             if (instr < 0 || instr >= c.e->p.n_instrs() || n < 0 || n >= c.e->facts.op_values.count(instr)) {
               throw std::out_of_range("set_operand: no such operand");
             }
             c.e->set_operand(layout, instr, n, mandatory, dfs, priority, why(rule, at, parent, note, made));
           })
      .def("set_instruction",
           [](Core& c, const Ids& layouts, int32_t instr, bool mandatory, int32_t priority, int32_t rule, int32_t at,
              int32_t parent, int32_t note, int32_t made) {
             if (instr < 0 || instr >= c.e->p.n_instrs()) throw std::out_of_range("set_instruction: no such op");
             c.e->set_instruction(layouts, instr, mandatory, priority, why(rule, at, parent, note, made));
           })
      .def("demand_operands",
           [](Core& c, int32_t instr, const std::vector<std::pair<int32_t, int32_t>>& slots, int32_t priority,
              int32_t rule, int32_t at, int32_t parent, int32_t note, int32_t made) {
             if (instr < 0 || instr >= c.e->p.n_instrs()) throw std::out_of_range("demand_operands: no such op");
             const slcore::Why w = why(rule, at, parent, note, made);
             for (const auto& [n, layout] : slots) {
               if (n < 0 || n >= c.e->facts.op_values.count(instr)) {
                 throw std::out_of_range("demand_operands: no such operand");
               }
               c.e->demand_operand(instr, n, layout, priority, w);
             }
           })
      .def(
          "add_plan",
          [](Core& c, int32_t comp, Ids late, Ids instr, Flags code, Ids arg, Ids rule, Ids note, int32_t catch_all_rule,
             int32_t catch_all_note, int32_t late_note) {
            slcore::PlanInput in;
            in.comp = comp;
            in.late = std::move(late);
            in.instr = std::move(instr);
            in.code = std::move(code);
            in.arg = std::move(arg);
            in.rule = std::move(rule);
            in.note = std::move(note);
            in.catch_all_rule = catch_all_rule;
            in.catch_all_note = catch_all_note;
            in.late_note = late_note;
            c.plans.push_back(slcore::make_plan(*c.e, in));
            return static_cast<int32_t>(c.plans.size()) - 1;
          },
          "A computation's plan (cpp/demands.h), checked and laid out in list order; its id.")
      .def(
          "apply_plan",
          [](Core& c, int32_t plan, int32_t priority) {
            if (plan < 0 || plan >= static_cast<int32_t>(c.plans.size())) throw std::out_of_range("apply_plan: no such plan");
            slcore::apply_plan(*c.e, c.plans[plan], priority);
          },
          "Applies plan ``plan``'s demands at ``priority``, in order.")
      .def("push_result",
           [](Core& c, int32_t comp, Ids layouts, int32_t priority, int32_t rule, int32_t at, int32_t parent,
              int32_t note, int32_t made) {
             c.e->push_result(comp, std::move(layouts), priority, why(rule, at, parent, note, made));
           })
      .def("propagate", [](Core& c) { c.e->propagate(); })
      .def("lay_out_trivial", [](Core& c, int32_t comp) { c.e->lay_out_trivial(comp); })
      .def("lay_out_defaults",
           [](Core& c, const Ids& buffers) {
             for (int32_t b : buffers) {
               if (b < 0 || b >= c.e->p.n_values() || !c.e->facts.in.is_array[b]) {
                 throw std::out_of_range("lay_out_defaults: not an array buffer");
               }
             }
             c.e->lay_out_defaults(buffers);
           })
      // -- the store, read back
      .def("has_buffer", [](const Core& c, int32_t b) { return c.e->store.has_buffer(b); })
      .def("buffer_layout", [](const Core& c, int32_t b) { return c.e->buffer_layout(b); })
      .def("buffer",
           [](const Core& c, int32_t b) -> nb::object {
             if (b < 0 || b >= c.e->p.n_values() || !c.e->store.has_buffer(b)) return nb::none();
             return slot_tuple(c.e->store.buffer(b));
           })
      .def("history", [](const Core& c, int32_t b) { return c.e->store.history(b); })
      .def("operand",
           [](const Core& c, int32_t instr, int32_t n) -> nb::object {
             if (instr < 0 || instr >= c.e->p.n_instrs() || n < 0 || n >= c.e->facts.op_values.count(instr)) {
               return nb::none();
             }
             const int32_t s = c.e->slot(instr, n);
             if (!c.e->store.has_operand(s)) return nb::none();
             return slot_tuple(c.e->store.operand(s));
           })
      .def("buffer_order", [](const Core& c) { return c.e->store.buffer_order(); })
      .def("operand_order",
           [](const Core& c) {
             std::vector<std::pair<int32_t, int32_t>> out;
             for (int32_t s : c.e->store.operand_order()) {
               out.emplace_back(c.e->facts.slot_instr[s], c.e->facts.slot_operand[s]);
             }
             return out;
           })
      .def(
          "value_layouts",
          [](const Core& c) {
            // Per value, its buffer's layout (-1: not an array); a missing one is the first bad value.
            const slcore::FactsInput& in = c.e->facts.in;
            Ids out(c.e->p.n_values(), -1);
            for (int32_t v = 0; v < c.e->p.n_values(); ++v) {
              if (!in.is_array[v]) continue;
              const int32_t lay = c.e->buffer_layout(in.buffer[v]);
              if (lay < 0) return std::make_pair(v, out);
              out[v] = lay;
            }
            return std::make_pair(int32_t{-1}, out);
          },
          "(first array value without a layout or -1, per value its layout id or -1).")
      .def(
          "copy_candidates",
          [](const Core& c, const Ids& value_layout) {
            // Operand slots this round (in the order first set) whose own operand's
            // layout differs from the demand: (instruction, operand, value, demand).
            const slcore::Engine& e = *c.e;
            std::vector<std::pair<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>> out;
            for (int32_t s : e.store.operand_order()) {
              const int32_t instr = e.facts.slot_instr[s], n = e.facts.slot_operand[s];
              if (n >= e.p.operands.count(instr)) continue;  // implicit captures are settled apart
              const int32_t v = e.facts.op_values.items[s];
              const int32_t have = value_layout.at(v), want = e.store.operand(s).layout;
              if (have >= 0 && have != want && e.facts.in.rank[v] > 0 && e.facts.in.is_array[v]) {
                out.push_back({{instr, n}, {v, want}});
              }
            }
            return out;
          })
      // -- provenance
      .def("make_origin",
           [](Core& c, int32_t rule, int32_t instr, int32_t parent, int32_t note, int kind) {
             const int32_t r = c.e->prov.make(rule, instr, parent, note);
             if (kind) c.e->prov.mark_fact(r, static_cast<slcore::Kind>(kind));
             return r;
           })
      .def("origin",
           [](const Core& c, int32_t r) {
             const slcore::Record& x = c.e->prov[r];
             return nb::make_tuple(x.rule, x.instr, x.parent, x.note, static_cast<int>(x.kind), x.a, x.b, x.layout,
                                   x.priority, static_cast<bool>(x.mandatory), static_cast<bool>(x.dfs), x.round,
                                   x.was);
           })
      .def("result_layouts", [](const Core& c, int32_t r) { return c.e->results.at(r).layouts; })
      .def_prop_rw(
          "watch", [](const Core& c) { return c.e->watch; }, [](Core& c, bool v) { c.e->watch = v; })
      .def(
          "take_deques",
          [](Core& c) {
            // Per pop, the worklist front first: ("buffer", (b,)), ("operand", (instr, n)) or ("result", (comp,)).
            nb::list out;
            const slcore::Engine& e = *c.e;
            for (const auto& d : e.deques) {
              nb::list row;
              for (const slcore::Ref& r : d) {
                if (r.kind == slcore::kBuffer) {
                  row.append(nb::make_tuple("buffer", nb::make_tuple(r.id)));
                } else if (r.kind == slcore::kOperand) {
                  row.append(nb::make_tuple("operand", nb::make_tuple(e.facts.slot_instr[r.id],
                                                                      e.facts.slot_operand[r.id])));
                } else {
                  row.append(nb::make_tuple("result", nb::make_tuple(e.results[r.id].comp)));
                }
              }
              out.append(row);
            }
            c.e->deques.clear();
            return out;
          },
          "The worklists watch recorded since the last call.")
      .def("take_events",
           [](Core& c) {
             nb::list out;
             for (auto& ev : c.e->events) {
               nb::object seeds = ev.first ? nb::cast(ev.seeds) : nb::none();
               out.append(nb::make_tuple(ev.popped, nb::cast(ev.derived), seeds));
             }
             c.e->events.clear();
             return out;
           });
}
