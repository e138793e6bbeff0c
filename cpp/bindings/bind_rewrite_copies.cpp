// The rewrite's copies in the core: create each ``mhlo.copy``, insert it where
// the rewrite says, and point the consumers it serves at it, through MLIR's C
// API (mlir/rewrite_ops.h, which does the work; here the columns are read
// from Python, in place).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings/bind.h"
#include "bindings/python_handles.h"
#include "mlir/mlir_capi.h"
#include "mlir/rewrite_ops.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

template <class T>
slcore::Column<T> in_place(const ArrayView<T>& view) {
  return slcore::Column<T>{view.data(), view.size()};
}

}  // namespace

void bind_rewrite_copies(nb::module_& m) {
  m.def(
      "insert_copies",
      [](const std::string& library, const std::string& op_name, nb::handle source_ops, nb::handle source_indices,
         nb::handle source_values, nb::handle anchor_kinds, nb::handle anchors, nb::handle consumers,
         nb::handle attribute_rows, const std::vector<std::string>& attribute_names,
         const std::vector<uintptr_t>& attribute_table, nb::handle location_names, nb::handle edge_start,
         nb::handle edge_ops, nb::handle edge_operands) {
        std::string why;
        const slcore::MlirCApi* api = slcore::find_mlir_capi(library, why);
        if (api == nullptr) throw std::runtime_error("insert_copies: " + why);
        const ArrayView<int64_t> src_op(source_ops, 'q', "insert_copies source_ops"),
            src_value(source_values, 'q', "insert_copies source_values"),
            anchor(anchors, 'q', "insert_copies anchors"), consumer(consumers, 'q', "insert_copies consumers"),
            edge_op(edge_ops, 'q', "insert_copies edge_ops");
        const ArrayView<int32_t> src_index(source_indices, 'i', "insert_copies source_indices"),
            rows(attribute_rows, 'i', "insert_copies attribute_rows"),
            starts(edge_start, 'i', "insert_copies edge_start"),
            edge_operand(edge_operands, 'i', "insert_copies edge_operands");
        const ArrayView<int8_t> kind(anchor_kinds, 'b', "insert_copies anchor_kinds");
        const size_t n = src_op.size();
        const bool named = !location_names.is_none();
        if (named && (!PyList_Check(location_names.ptr()) ||
                      static_cast<size_t>(PyList_GET_SIZE(location_names.ptr())) != n)) {
          throw std::invalid_argument("insert_copies: location_names is a list of one name per copy, or None");
        }
        slcore::CopyRows copies;
        copies.source_ops = in_place(src_op);
        copies.source_indices = in_place(src_index);
        copies.source_values = in_place(src_value);
        copies.anchor_kinds = in_place(kind);
        copies.anchors = in_place(anchor);
        copies.consumers = in_place(consumer);
        copies.attribute_rows = in_place(rows);
        copies.edge_start = in_place(starts);
        copies.edge_ops = in_place(edge_op);
        copies.edge_operands = in_place(edge_operand);
        slcore::CopyName name;
        if (named) {
          name = [&location_names](size_t k) {
            Py_ssize_t size = 0;
            const char* text = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(location_names.ptr(), k), &size);
            if (text == nullptr) throw nb::python_error();
            return slcore::MlirStringRefC{text, static_cast<size_t>(size)};
          };
        }
        return slcore::insert_copies(*api, op_name, copies, attribute_names, attribute_table, name);
      },
      nb::arg("library"), nb::arg("op_name"), nb::arg("source_ops"), nb::arg("source_indices"),
      nb::arg("source_values"), nb::arg("anchor_kinds"), nb::arg("anchors"), nb::arg("consumers"),
      nb::arg("attribute_rows"), nb::arg("attribute_names"), nb::arg("attribute_table"),
      nb::arg("location_names").none(),
      nb::arg("edge_start"), nb::arg("edge_ops"), nb::arg("edge_operands"),
      "Creates one op named `op_name` per row (one result of its operand's type; operand: result "
      "source_indices[k] of op source_ops[k], or the value source_values[k] where that op is 0), with "
      "attributes attribute_names = the row attribute_rows[k] of attribute_table (C API pointers, "
      "len(attribute_names) per row), at its first consumer's location (named location_names[k] where "
      "given), inserted by anchor_kinds[k] (0: after op anchors[k], 1: before it, 2: at the end of block "
      "anchors[k]); then operand edge_operands[e] of op edge_ops[e] reads it, for e in its edge_start range.  "
      "Every row is checked before any op is made.  Returns the number of copies made.");
}

}  // namespace slcore_python
