// The program index (``_core.Index``, engine/index.h, order.h) and every
// value's uses (``_core.use_rows``).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bindings/bind.h"
#include "bindings/columns.h"
#include "bindings/core_objects.h"
#include "engine/footprint.h"
#include "engine/index.h"
#include "engine/order.h"

namespace nb = nanobind;

namespace slcore_python {

void bind_index(nb::module_& m) {
  m.def(
      "use_rows",
      [](int32_t nv, nb::handle op_start, nb::handle op_items, nb::handle capture_owner,
         nb::handle capture_item) -> nb::tuple {
        // Every value's uses as three flat int32 columns (``graph.UseRows``): one
        // Python object per value is made only when a reader asks for its uses.
        const slcore::Rows operands = id_rows(op_start, op_items, "operands");
        const int32_t ni = operands.size();
        if (nv < 0 || ni < 0 || operands.start[0] != 0 ||
            operands.start.back() != static_cast<int32_t>(operands.items.size())) {
          throw std::invalid_argument("use_rows: the operand rows do not cover their items");
        }
        for (int32_t i = 0; i < ni; ++i) {
          if (operands.start[i] > operands.start[i + 1]) throw std::invalid_argument("use_rows: operand rows overlap");
        }
        const slcore::Rows captures = slcore::rows_from_pairs(ni, ids(capture_owner, "capture_owner"),
                                                              ids(capture_item, "capture_item"), "captures");
        for (const slcore::Rows* r : {&operands, &captures}) {
          for (int32_t v : r->items) {
            if (v < 0 || v >= nv) throw std::invalid_argument("use_rows: a use names a value out of range");
          }
        }
        slcore::Rows users, use_operand;
        slcore::value_uses(operands, captures, nv, users, use_operand);
        auto raw = [](const std::vector<int32_t>& col) {
          return nb::bytes(reinterpret_cast<const char*>(col.data()), col.size() * sizeof(int32_t));
        };
        return nb::make_tuple(raw(users.start), raw(users.items), raw(use_operand.items));
      },
      "Per value, its uses as (start, users, operand numbers) int32 bytes: own operands, then captures, in "
      "instruction order.");

  nb::class_<Index>(m, "Index")
      .def(
          "__init__",
          [](Index* self, nb::handle producer, nb::handle element_owner,
             nb::handle element_item, nb::handle comp, nb::handle kind, nb::handle while_rule, nb::handle rule_of,
             nb::handle op_start,
             nb::handle op_items, nb::handle callee_owner, nb::handle callee_item, nb::handle capture_owner,
             nb::handle capture_item, nb::handle root, nb::handle is_func, nb::handle param_start,
             nb::handle param_items, nb::handle reordered, nb::handle reorder_start, nb::handle reorder_users,
             nb::handle reorder_operands, int32_t entry) {
            slcore::Walk w;
            w.producer = ids(producer, "producer");
            w.element_owner = ids(element_owner, "element_owner");
            w.element_item = ids(element_item, "element_item");
            w.comp = ids(comp, "comp");
            w.kind = flags(kind, "kind");
            Ids rules = ids(rule_of, "rule_of");
            if (rules.size() != w.comp.size()) throw std::invalid_argument("index: rule_of has the wrong length");
            w.is_while = per_instruction(flags(while_rule, "while_rule"), rules, "index");
            w.operands = id_rows(op_start, op_items, "operands");
            w.callee_owner = ids(callee_owner, "callee_owner");
            w.callee_item = ids(callee_item, "callee_item");
            w.capture_owner = ids(capture_owner, "capture_owner");
            w.capture_item = ids(capture_item, "capture_item");
            w.root = ids(root, "root");
            w.is_func = flags(is_func, "is_func");
            w.params = id_rows(param_start, param_items, "params");
            w.reordered = ids(reordered, "reordered");
            w.reorder_users = id_rows(reorder_start, reorder_users, "reorder_users");
            w.reorder_operands = id_rows(reorder_start, reorder_operands, "reorder_operands");
            w.entry = entry;
            auto* x = new (self) Index();
            // A malformed walk is a bug on the Python side: say so, never crash.
            static_cast<slcore::Walked&>(*x) = slcore::from_walk(std::move(w));
            x->rule_of = std::move(rules);
          })
      .def(
          "rows",
          [](const Index& x, const std::string& name) -> nb::object {
            const slcore::Program& p = x.p;
            if (name == "elements") return rows_pair(p.elements);
            if (name == "operands") return rows_pair(p.operands);
            if (name == "results") return rows_pair(p.results);
            if (name == "callees") return rows_pair(p.callees);
            if (name == "instrs") return rows_pair(p.instrs);
            if (x.uses_taken && (name == "captures" || name == "users" || name == "use_operand")) {
              throw std::invalid_argument("Index.rows: the engine took the " + name + " rows");
            }
            if (name == "captures") return rows_pair(x.captures);
            if (name == "users") return rows_pair(x.users);
            if (name == "use_operand") return rows_pair(x.use_operand);
            if (name == "used") return nb::cast(p.used);
            if (name == "is_tuple") return nb::cast(p.is_tuple);
            if (name == "is_root") return nb::cast(p.is_root);
            throw std::invalid_argument("Index.rows: no rows named " + name);
          },
          "The index's rows by name, (start, items), or a per-value / per-instruction flag list (tests read them).")
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
      .def("footprint", [](const Index& x) { return slcore::footprint(x); },
           "(structure, bytes) for each array the index holds (capacity, not size).")
      .def("computation_order", [](const Index& x) { return slcore::computation_order(x.p); },
           "Callees before callers, the entry last.")
      .def("post_order", [](const Index& x, int32_t c) { return slcore::post_order(x.p, c); },
           "The instructions of computation c in XLA's post-order.")
      .def(
          "number_buffers",
          [](const Index& x, const Ids& order, const Flags& skip) { return packed(slcore::number_buffers(x.p, order, skip)); },
          "XLA's buffer ids per value, walking the computations of order not skipped, as int64 bytes.");
}

}  // namespace slcore_python
