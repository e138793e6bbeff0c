// stablehlo_layout._core: the compiled core's Python face.  It only converts:
// Python lists in, Python lists out; the rooms (index, order) hold the logic.
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "index.h"
#include "order.h"

namespace nb = nanobind;

namespace {

using Ids = std::vector<int32_t>;
using Flags = std::vector<uint8_t>;

slcore::Rows rows(const Ids& start, const Ids& items) {
  slcore::Rows r;
  r.start = start;
  r.items = items;
  return r;
}

// One Program per engine run, built from flat arrays the Python side fills in
// one walk over its graph.
struct Index {
  slcore::Program p;
  slcore::Rows leaves;
};

nb::list to_lists(const slcore::Rows& r) {
  nb::list out;
  for (int32_t i = 0; i < r.size(); ++i) {
    nb::list row;
    for (const int32_t* x = r.begin(i); x != r.end(i); ++x) row.append(*x);
    out.append(std::move(row));
  }
  return out;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "The compiled core of stablehlo-layout (see docs/DESIGN.md, the core).";
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
            p.elements = rows(elem_start, elem_items);
            p.comp = std::move(comp);
            p.is_root = std::move(is_root);
            p.is_while = std::move(is_while);
            p.operands = rows(op_start, op_items);
            p.results = rows(res_start, res_items);
            p.callees = rows(callee_start, callee_items);
            p.root = std::move(root);
            p.is_func = std::move(is_func);
            p.instrs = rows(instr_start, instr_items);
            p.entry = entry;
            p.check();  // a malformed index is a bug on the Python side: say so, never crash
            x->leaves = slcore::shape_indices(p);
          })
      .def("shape_indices", [](const Index& x) { return to_lists(x.leaves); },
           "Per instruction, its results with tuples flattened (XLA's shape indices).")
      .def(
          "tuple_shape_indices",
          [](const Index& x) {
            // Only where a result is a tuple: elsewhere the shape indices are the
            // results themselves, which the caller already holds as lists.
            nb::list out;
            for (int32_t i = 0; i < x.p.n_instrs(); ++i) {
              bool tuple = false;
              for (const int32_t* r = x.p.results.begin(i); r != x.p.results.end(i); ++r) tuple |= x.p.is_tuple[*r];
              if (!tuple) continue;
              nb::list row;
              for (const int32_t* l = x.leaves.begin(i); l != x.leaves.end(i); ++l) row.append(*l);
              out.append(nb::make_tuple(i, row));
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
}
