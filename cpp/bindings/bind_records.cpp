// The engine read back (``_core.Engine``, engine/store.h, provenance.h): the
// store's slots, each value's layout and the copies' candidates, provenance
// records, the worklists watched; the rules' names.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bindings/bind.h"
#include "bindings/columns.h"
#include "bindings/core_objects.h"
#include "engine/propagators.h"
#include "engine/provenance.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

nb::object slot_tuple(const slcore::Slot& s) {
  return nb::make_tuple(s.layout, static_cast<bool>(s.mandatory), static_cast<bool>(s.dfs), s.priority, s.round,
                        s.origin);
}

}  // namespace

void bind_records(nb::module_& m, nb::class_<Core>& engine) {
  nb::list names;
  for (const char* n : slcore::kRuleNames) names.append(n);
  m.attr("RULE_NAMES") = nb::tuple(names);

  engine
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
               out.emplace_back(c.e->facts.slot_instr[s], c.e->facts.slot_operand(s));
             }
             return out;
           })
      .def(
          "value_layouts",
          [](Core& c, nb::list table) -> nb::object { running(c);
            // Per value, its buffer's layout as the object ``table`` holds for its id, or None
            // (not an array); a missing one is the first bad value.  The ids stay for copy_candidates.
            const slcore::FactsInput& in = c.e->facts.in;
            const int32_t nv = c.e->p.n_values();
            Ids& out = c.value_layouts;
            out.assign(nv, -1);
            for (int32_t v = 0; v < nv; ++v) {
              if (!in.is_array[v]) continue;
              const int32_t lay = c.e->buffer_layout(in.buffer[v]);
              if (lay < 0) return nb::make_tuple(v, nb::none());
              if (lay >= static_cast<int32_t>(table.size())) throw std::out_of_range("value_layouts: a layout id past the table");
              out[v] = lay;
            }
            // Sized once and filled in place: one list of shared layout objects, no int per value.
            nb::list objects = nb::steal<nb::list>(PyList_New(nv));
            for (int32_t v = 0; v < nv; ++v) {
              PyObject* x = out[v] < 0 ? Py_None : PyList_GET_ITEM(table.ptr(), out[v]);
              Py_INCREF(x);
              PyList_SET_ITEM(objects.ptr(), v, x);
            }
            return nb::make_tuple(int32_t{-1}, objects);
          },
          "(first array value without a layout or -1, per value its layout from table or None).")
      .def(
          "finish",
          [](Core& c) {
            // The readers (records.py) need the store, provenance, layouts, results and the slot
            // table; the propagators' facts, the worklist and the plans go.
            running(c);
            c.finished = true;
            c.e->facts.release_for_readers();
            c.e->work.release();
            std::vector<slcore::Plan>().swap(c.plans);
            Ids().swap(c.value_layouts);
            release_free_pages();  // the answer and the rewrite allocate next
          },
          "Frees what only the run reads (after value_layouts and copy_candidates).")
      .def(
          "copy_candidates",
          [](const Core& c) { running(c);
            // Operand slots this round (in the order first set) whose own operand's
            // layout (as value_layouts found it) differs from the demand: (instruction, operand, value, demand).
            const slcore::Engine& e = *c.e;
            const Ids& value_layout = c.value_layouts;
            if (static_cast<int32_t>(value_layout.size()) != e.p.n_values()) {
              throw std::logic_error("copy_candidates: value_layouts comes first");
            }
            std::vector<std::pair<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>>> out;
            for (int32_t s : e.store.operand_order()) {
              const int32_t instr = e.facts.slot_instr[s], n = e.facts.slot_operand(s);
              if (n >= e.p.operands.count(instr)) continue;  // implicit captures are settled apart
              const int32_t v = e.facts.op_values.items[s];
              const int32_t have = value_layout[v], want = e.store.operand(s).layout;
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
                                                                      e.facts.slot_operand(r.id))));
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

}  // namespace slcore_python
