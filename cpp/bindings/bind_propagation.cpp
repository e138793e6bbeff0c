// The engine's run (``_core.Engine``, engine/propagators.h, demands.h): its
// construction from the index and the importer's columns, XLA's Set*Layout,
// the plans and the worklist; DemandError; the core's AlignLayouts.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bindings/bind.h"
#include "bindings/columns.h"
#include "bindings/core_objects.h"
#include "engine/demands.h"
#include "engine/facts.h"
#include "engine/footprint.h"
#include "engine/propagators.h"
#include "engine/reshape.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

nb::tuple layout_tuple(const slcore::Layouts& l, int32_t id) {
  nb::list out;
  for (const int32_t* d = l.begin(id); d != l.end(id); ++d) out.append(*d);
  return nb::tuple(out);
}

slcore::Why why(int32_t rule, int32_t instr, int32_t parent, int32_t note, int32_t made) {
  return slcore::Why{rule, instr, parent, note, made};
}

PyObject* demand_error = nullptr;

}  // namespace

void bind_propagation(nb::module_& m, nb::class_<Core>& engine) {
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
  m.def(
      "align_layouts",
      [](const std::vector<int64_t>& in_dims, const Ids& in_layout, const std::vector<int64_t>& out_dims) -> nb::object {
        if (in_layout.size() != in_dims.size()) throw std::invalid_argument("align_layouts: layout rank differs");
        Ids out;
        if (!slcore::align_layouts(in_dims, in_layout, out_dims, out)) return nb::none();
        return nb::tuple(nb::cast(out));
      },
      "The core's AlignLayouts (cpp/engine/reshape.cpp), the twin of layout.align_layouts.");

  engine
      .def(
          "__init__",
          [](Core* self, Index& index, nb::handle shape_of, nb::handle shape_is_array, nb::handle shape_start,
             nb::handle shape_items, nb::handle buffer_value, nb::handle buffer_item, nb::handle hlo, nb::handle rule, nb::handle back,
             nb::handle fwd, nb::handle active, nb::handle constrained, nb::handle dim_owner, nb::handle dim_item,
             nb::handle alias_owner, nb::handle alias_item, nb::handle perm_owner, nb::handle perm_item,
             nb::handle comp_kind, nb::handle caller, bool exact, bool tracing, bool provenance, nb::object derive_back,
             nb::object derive_fwd, nb::object derive_rule) {
            const slcore::Program& p = index.p;
            const int32_t nv = p.n_values(), ni = p.n_instrs();
            if (index.uses_taken) throw std::invalid_argument("engine: an earlier engine took this index's uses");
            // Per value its shape, from the few distinct shapes the importer met.
            Ids shape = ids(shape_of, "shape_of");
            const Flags shape_array = flags(shape_is_array, "shape_is_array");
            Ids extent_start = ids(shape_start, "shape_start");
            std::vector<int64_t> extents = column<int64_t>(shape_items, 'q', "shape_items");
            const int32_t n_shapes = static_cast<int32_t>(shape_array.size());
            if (static_cast<int32_t>(extent_start.size()) != n_shapes + 1 || extent_start[0] != 0 ||
                extent_start.back() != static_cast<int32_t>(extents.size())) {
              throw std::invalid_argument("engine: the shape table's rows do not cover its extents");
            }
            if (static_cast<int32_t>(shape.size()) != nv) throw std::invalid_argument("engine: shape_of has the wrong length");
            slcore::FactsInput in;
            in.is_array.resize(nv);
            in.rank.resize(nv);
            for (int32_t v = 0; v < nv; ++v) {
              const int32_t s = shape[v];
              if (s < 0 || s >= n_shapes || extent_start[s] > extent_start[s + 1]) {
                throw std::invalid_argument("engine: a value's shape is out of range");
              }
              in.is_array[v] = shape_array[s];
              in.rank[v] = extent_start[s + 1] - extent_start[s];
            }
            // The extents stay the importer's table of distinct shapes, each value naming its row.
            in.dims.shape = std::move(shape);
            in.dims.start = std::move(extent_start);
            in.dims.items = std::move(extents);
            // Each value its own buffer, but for the ones the importer pointed elsewhere (the last word counts).
            in.buffer.resize(nv);
            for (int32_t v = 0; v < nv; ++v) in.buffer[v] = v;
            const Ids shared = ids(buffer_value, "buffer_value"), target = ids(buffer_item, "buffer_item");
            if (shared.size() != target.size()) throw std::invalid_argument("engine: buffer pairs differ in length");
            for (size_t k = 0; k < shared.size(); ++k) {
              if (shared[k] < 0 || shared[k] >= nv || target[k] < 0 || target[k] >= nv) {
                throw std::invalid_argument("engine: a value's buffer is out of range");
              }
              in.buffer[shared[k]] = target[k];
            }
            // Taken, not copied: the facts read them once (Index::uses_taken).
            in.users = std::move(index.users);
            in.use_operand = std::move(index.use_operand);
            in.kind = index.kind;
            // Per distinct rule, what the core reads of it; per instruction through rule_of.
            in.hlo = per_instruction(flags(hlo, "hlo"), index.rule_of, "engine");
            in.rule = per_instruction(column<uint16_t>(rule, 'H', "rule"), index.rule_of, "engine");
            in.back = per_instruction(flags(back, "back"), index.rule_of, "engine");
            in.fwd = per_instruction(flags(fwd, "fwd"), index.rule_of, "engine");
            in.active = flags(active, "active");
            // The sparse facts (few instructions have them): zero or empty elsewhere.
            in.layout_constrained.assign(ni, 0);
            for (int32_t i : ids(constrained, "constrained")) {
              if (i < 0 || i >= ni) throw std::invalid_argument("engine: a constrained instruction is out of range");
              in.layout_constrained[i] = 1;
            }
            in.dim.assign(ni, 0);
            const Ids dim_of = ids(dim_owner, "dim_owner"), dim_value = ids(dim_item, "dim_item");
            if (dim_of.size() != dim_value.size()) throw std::invalid_argument("engine: dim pairs differ in length");
            for (size_t k = 0; k < dim_of.size(); ++k) {
              if (dim_of[k] < 0 || dim_of[k] >= ni) throw std::invalid_argument("engine: a dim's instruction is out of range");
              in.dim[dim_of[k]] = dim_value[k];
            }
            in.captures = std::move(index.captures);
            index.uses_taken = true;
            in.aliases = slcore::rows_from_pairs(ni, ids(alias_owner, "alias_owner"), ids(alias_item, "alias_item"),
                                                 "aliases");
            in.perm = slcore::rows_from_pairs(ni, ids(perm_owner, "perm_owner"), ids(perm_item, "perm_item"), "perm");
            in.comp_kind = flags(comp_kind, "comp_kind");
            in.caller = ids(caller, "caller");
            in.params = index.params;
            auto* c = new (self) Core();
            c->deriver = std::make_unique<PyDeriver>(std::move(derive_back), std::move(derive_fwd),
                                                     std::move(derive_rule));
            c->e = std::make_unique<slcore::Engine>(index.p, slcore::build_facts(index.p, std::move(in)), exact,
                                                    tracing, c->deriver.get(), provenance);
          },
          nb::keep_alive<1, 2>())
      .def("footprint", [](const Core& c) { return slcore::footprint(*c.e, c.plans); },
           "(structure, bytes) for each array the engine holds (capacity, not size).")
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
          "round", [](const Core& c) { return c.e->round; },
          [](Core& c, int32_t v) {
            // The store keeps a slot's round in 16 bits (store.h); the driver stops at 16 rounds.
            if (v < 0 || v > UINT16_MAX) throw std::invalid_argument("round out of range");
            c.e->round = v;
          })
      .def_prop_ro("weakened", [](const Core& c) { return c.e->weakened; })
      .def("new_round", [](Core& c) { running(c); c.e->new_round(); })
      .def("set_layout_constrained", [](Core& c, int32_t i) { running(c); c.e->facts.in.layout_constrained.at(i) = 1; })
      // -- XLA's Set*Layout and the worklist
      .def("set_buffer",
           [](Core& c, int32_t layout, int32_t b, bool mandatory, bool dfs, int32_t priority, int32_t rule,
              int32_t instr, int32_t parent, int32_t note, int32_t made) { running(c);
             if (b < 0 || b >= c.e->p.n_values()) throw std::out_of_range("set_buffer: no such value");
             c.e->set_buffer(layout, b, mandatory, dfs, priority, why(rule, instr, parent, note, made));
           })
      .def("set_operand",
           [](Core& c, int32_t layout, int32_t instr, int32_t n, bool mandatory, bool dfs, int32_t priority,
              int32_t rule, int32_t at, int32_t parent, int32_t note, int32_t made) { running(c);
             if (instr < 0 || instr >= c.e->p.n_instrs() || n < 0 || n >= c.e->facts.op_values.count(instr)) {
               throw std::out_of_range("set_operand: no such operand");
             }
             c.e->set_operand(layout, instr, n, mandatory, dfs, priority, why(rule, at, parent, note, made));
           })
      .def("set_instruction",
           [](Core& c, const Ids& layouts, int32_t instr, bool mandatory, int32_t priority, int32_t rule, int32_t at,
              int32_t parent, int32_t note, int32_t made) { running(c);
             if (instr < 0 || instr >= c.e->p.n_instrs()) throw std::out_of_range("set_instruction: no such op");
             c.e->set_instruction(layouts, instr, mandatory, priority, why(rule, at, parent, note, made));
           })
      .def("demand_operands",
           [](Core& c, int32_t instr, const std::vector<std::pair<int32_t, int32_t>>& slots, int32_t priority,
              int32_t rule, int32_t at, int32_t parent, int32_t note, int32_t made) { running(c);
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
             int32_t catch_all_note, int32_t late_note) { running(c);
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
          "A computation's plan (cpp/engine/demands.h), checked and laid out in list order; its id.")
      .def(
          "apply_plan",
          [](Core& c, int32_t plan, int32_t priority) { running(c);
            if (plan < 0 || plan >= static_cast<int32_t>(c.plans.size())) throw std::out_of_range("apply_plan: no such plan");
            slcore::apply_plan(*c.e, c.plans[plan], priority);
          },
          "Applies plan ``plan``'s demands at ``priority``, in order.")
      .def("push_result",
           [](Core& c, int32_t comp, Ids layouts, int32_t priority, int32_t rule, int32_t at, int32_t parent,
              int32_t note, int32_t made) { running(c);
             c.e->push_result(comp, std::move(layouts), priority, why(rule, at, parent, note, made));
           })
      .def("propagate", [](Core& c) { running(c); c.e->propagate(); })
      .def("lay_out_trivial", [](Core& c, int32_t comp) { running(c); c.e->lay_out_trivial(comp); })
      .def("lay_out_defaults",
           [](Core& c, const Ids& buffers) { running(c);
             for (int32_t b : buffers) {
               if (b < 0 || b >= c.e->p.n_values() || !c.e->facts.in.is_array[b]) {
                 throw std::out_of_range("lay_out_defaults: not an array buffer");
               }
             }
             c.e->lay_out_defaults(buffers);
           });
}

}  // namespace slcore_python
