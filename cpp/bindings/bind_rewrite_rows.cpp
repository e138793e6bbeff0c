// The rewrite's scan of the graph's columns for the ops whose two layout
// attributes go in one core call (rewrite._annotate_ops).
//
// Every op with one array result gets ``xla_shape`` and ``result_layout``,
// which depend only on the result's element type, shape and layout: a few
// hundred distinct pairs for tens of thousands of ops.  Deciding, per
// instruction, whether it is such an op and which pair it takes was a
// Python loop over every row (~30 ms at L=256); this is the same loop over
// the same columns.  Pairs are told apart as the Python dict did, by the
// element's and the layout's equality, so they come out in the same order.
// set_attribute_pairs then writes each op's pair through MLIR's C API
// (mlir/rewrite_ops.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "bindings/bind.h"
#include "bindings/columns.h"
#include "bindings/python_handles.h"
#include "mlir/mlir_capi.h"
#include "mlir/rewrite_ops.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

// One object per distinct value (by Python's equality), found by identity
// first: elements and layouts are shared objects, so the dict is asked once
// per distinct object, not once per row.
class Canonical {
 public:
  PyObject* operator()(PyObject* x) {
    auto hit = seen_.find(x);
    if (hit != seen_.end()) return hit->second;
    PyObject* c = PyDict_SetDefault(by_value_.ptr(), x, x);
    if (c == nullptr) throw nb::python_error();
    seen_.emplace(x, c);
    return c;
  }

 private:
  nb::dict by_value_;  // holds the first object of each value, so the pointers stay valid
  std::unordered_map<PyObject*, PyObject*> seen_;
};

struct PairKey {
  PyObject* element;
  int32_t shape;
  PyObject* layout;
  bool operator==(const PairKey& o) const { return element == o.element && shape == o.shape && layout == o.layout; }
};

struct PairKeyHash {
  size_t operator()(const PairKey& k) const {
    return (std::hash<void*>()(k.element) * 31 + std::hash<int32_t>()(k.shape)) * 31 + std::hash<void*>()(k.layout);
  }
};

nb::bytes raw(const void* data, size_t bytes) { return nb::bytes(static_cast<const char*>(data), bytes); }

}  // namespace

void bind_rewrite_rows(nb::module_& m) {
  m.def(
      "annotation_rows",
      [](nb::handle present, nb::handle res_start, nb::handle res_items, nb::handle kind, nb::handle shape,
         nb::handle comp, nb::handle op, nb::handle skip_comp, int32_t root, nb::handle element,
         nb::handle layouts) {
        const ArrayView<int64_t> there(present, 'q', "annotation_rows present");
        const ArrayView<int32_t> start(res_start, 'i', "annotation_rows res_start"),
            items(res_items, 'i', "annotation_rows res_items"), shape_of(shape, 'i', "annotation_rows shape"),
            comp_of(comp, 'i', "annotation_rows comp"), op_of(op, 'i', "annotation_rows op");
        const ArrayView<int8_t> kind_of(kind, 'b', "annotation_rows kind");
        const ArrayView<uint8_t> skip(skip_comp, 'B', "annotation_rows skip");
        if (!PyList_Check(element.ptr()) || !PyList_Check(layouts.ptr())) {
          throw nb::type_error("annotation_rows: element and layouts are lists");
        }
        const size_t ni = there.size(), nv = kind_of.size();
        if (start.size() != ni + 1 || comp_of.size() != ni || op_of.size() != ni || shape_of.size() != nv ||
            static_cast<size_t>(PyList_GET_SIZE(element.ptr())) != nv ||
            static_cast<size_t>(PyList_GET_SIZE(layouts.ptr())) != nv || start[ni] != static_cast<int32_t>(items.size())) {
          throw std::invalid_argument("annotation_rows: the columns differ in length");
        }
        Canonical canonical;
        std::unordered_map<PairKey, int32_t, PairKeyHash> row_of;
        std::vector<int32_t> iids, rows, firsts, others;
        std::vector<int64_t> ops;
        for (size_t i = 0; i < ni; ++i) {
          const int32_t first = start[i], end = start[i + 1];
          const int32_t c = comp_of[i];
          if (c < 0 || static_cast<size_t>(c) >= skip.size() || first < 0 || first > end) {
            throw std::out_of_range("annotation_rows: a row out of range");
          }
          // No op (a parameter or root), no results, or a reducer's scalar body: nothing to write.
          if (there[i] == 0 || first == end || skip[c] != 0 || op_of[i] == root) continue;
          const int32_t v = items[first];
          if (end - first != 1 || v < 0 || static_cast<size_t>(v) >= nv || kind_of[v] != 0) {
            others.push_back(static_cast<int32_t>(i));  // several results, or not an array: Python spells it
            continue;
          }
          const PairKey key{canonical(PyList_GET_ITEM(element.ptr(), v)), shape_of[v],
                            canonical(PyList_GET_ITEM(layouts.ptr(), v))};
          auto found = row_of.find(key);
          if (found == row_of.end()) {
            found = row_of.emplace(key, static_cast<int32_t>(firsts.size())).first;
            firsts.push_back(v);
          }
          iids.push_back(static_cast<int32_t>(i));
          ops.push_back(there[i]);
          rows.push_back(found->second);
        }
        nb::list first_values;
        for (int32_t v : firsts) first_values.append(v);
        nb::list other_iids;
        for (int32_t i : others) other_iids.append(i);
        return nb::make_tuple(raw(iids.data(), iids.size() * 4), raw(ops.data(), ops.size() * 8),
                              raw(rows.data(), rows.size() * 4), first_values, other_iids);
      },
      nb::arg("present"), nb::arg("res_start"), nb::arg("res_items"), nb::arg("kind"), nb::arg("shape"),
      nb::arg("comp"), nb::arg("op"), nb::arg("skip_comp"), nb::arg("root"), nb::arg("element"), nb::arg("layouts"),
      "The ops whose one result is an array, as (instruction ids, their `present` entries, their pair rows: "
      "int32 / int64 / int32 bytes; per pair row the first value that takes it; the other ops to write).");
  m.def(
      "set_attribute_pairs",
      [](nb::handle op_column, nb::handle pair_column, const std::string& first, const std::string& second,
         const std::vector<uintptr_t>& firsts, const std::vector<uintptr_t>& seconds, const std::string& library) {
        // Op k of op_column gets attribute ``first`` = firsts[p] then ``second`` = seconds[p],
        // p being pair_column[k] (mlir/rewrite_ops.h).
        std::string why;
        const slcore::MlirCApi* api = slcore::find_mlir_capi(library, why);
        if (api == nullptr) throw std::runtime_error("set_attribute_pairs: " + why);
        const std::vector<int64_t> ops = column<int64_t>(op_column, 'q', "set_attribute_pairs ops");
        const Ids pairs = ids(pair_column, "set_attribute_pairs pairs");
        slcore::set_attribute_pairs(*api, ops, pairs, first, second, firsts, seconds);
      },
      "Sets two attributes on each op of a column from a table of attribute pairs (the rewrite's layouts).");
}

}  // namespace slcore_python
