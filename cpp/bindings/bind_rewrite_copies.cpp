// The rewrite's copies in the core: create each ``mhlo.copy``, insert it where
// the rewrite says, and point the consumers it serves at it, through MLIR's C
// API (mlir_capi.h).
//
// Made through the bindings, a copy cost an insertion point, the op's and its
// result's Python objects, one object per consumer op and one operand
// assignment per edge (~12 us per copy; 3,584 copies at L=256).  Here the
// rewrite hands the copies that need nothing but that (rewrite._CopyBatch) as
// columns, and the core does what ``ir.Operation.create(..., ip=...)`` and
// ``op.operands[n] = copy`` do, in the same order, so the module comes out the
// same op for op: the golden comparison (tests/golden) checks it byte for byte.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "bindings/python_handles.h"
#include "mlir/mlir_capi.h"

namespace nb = nanobind;

namespace slcore_python {
namespace {

// Where a copy goes, as the bindings' insertion points put it.
enum Anchor : int8_t {
  kAfterOp = 0,       // InsertionPoint.after(op): before the op that follows it
  kBeforeOp = 1,      // InsertionPoint(op)
  kEndOfBlock = 2,    // InsertionPoint(block): the block has no op yet
};

void* as_pointer(int64_t p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

void** malloc_copy(void* const* items, size_t n) {
  auto** out = static_cast<void**>(std::malloc(n * sizeof(void*)));
  if (out != nullptr) std::memcpy(out, items, n * sizeof(void*));
  return out;
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
        const size_t n = src_op.size(), width = attribute_names.size();
        const bool named = !location_names.is_none();
        if (named && (!PyList_Check(location_names.ptr()) ||
                      static_cast<size_t>(PyList_GET_SIZE(location_names.ptr())) != n)) {
          throw std::invalid_argument("insert_copies: location_names is a list of one name per copy, or None");
        }
        if (src_index.size() != n || src_value.size() != n || kind.size() != n || anchor.size() != n ||
            consumer.size() != n || rows.size() != n || starts.size() != n + 1 || width == 0 ||
            attribute_table.size() % width != 0 || edge_operand.size() != edge_op.size() ||
            (n > 0 && static_cast<size_t>(starts[n]) != edge_op.size())) {
          throw std::invalid_argument("insert_copies: the columns differ in length");
        }
        // Everything is checked before the module changes: a refusal leaves it as it was.
        const size_t table_rows = attribute_table.size() / width;
        for (size_t k = 0; k < n; ++k) {
          const bool from_op = src_op[k] != 0;
          if ((from_op ? src_index[k] < 0 : src_value[k] == 0) || anchor[k] == 0 || consumer[k] == 0 ||
              kind[k] < kAfterOp || kind[k] > kEndOfBlock || rows[k] < 0 ||
              static_cast<size_t>(rows[k]) >= table_rows || starts[k] < 0 || starts[k] > starts[k + 1]) {
            throw std::invalid_argument("insert_copies: a copy's source, place, consumer or attributes out of range");
          }
          if (from_op && src_index[k] >= api->operation_num_results(as_pointer(src_op[k]))) {
            throw std::invalid_argument("insert_copies: a source op has no result of that index");
          }
        }
        for (size_t e = 0; e < edge_op.size(); ++e) {
          if (edge_op[e] == 0 || edge_operand[e] < 0 ||
              edge_operand[e] >= api->operation_num_operands(as_pointer(edge_op[e]))) {
            throw std::invalid_argument("insert_copies: an edge's op has no operand of that index");
          }
        }
        std::vector<void*> identifiers(width);
        void* context = nullptr;
        for (size_t k = 0; k < n; ++k) {
          void* consumer_op = as_pointer(consumer[k]);
          if (context == nullptr) {
            context = api->operation_context(consumer_op);
            for (size_t a = 0; a < width; ++a) {
              identifiers[a] = api->identifier_get(
                  context, slcore::MlirStringRefC{attribute_names[a].data(), attribute_names[a].size()});
            }
          }
          void* source = src_op[k] != 0 ? api->operation_result(as_pointer(src_op[k]), src_index[k])
                                        : as_pointer(src_value[k]);
          void* type = api->value_type(source);
          // The copy takes its first consumer's location, under the copy's name where it has one.
          void* location = api->operation_location(consumer_op);
          if (named) {
            Py_ssize_t size = 0;
            const char* text = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(location_names.ptr(), k), &size);
            if (text == nullptr) throw nb::python_error();
            location = api->location_name_get(context, slcore::MlirStringRefC{text, static_cast<size_t>(size)},
                                              location);
          }
          // mlirOperationCreate frees the state's arrays (its mlirOperationStateAdd* functions
          // malloc them), so they are malloc'ed here too.
          slcore::MlirOperationStateC state{};
          state.name = {op_name.data(), op_name.size()};
          state.location = location;
          state.n_results = 1;
          state.results = malloc_copy(&type, 1);
          state.n_operands = 1;
          state.operands = malloc_copy(&source, 1);
          state.n_attributes = static_cast<intptr_t>(width);
          state.attributes =
              static_cast<slcore::MlirNamedAttributeC*>(std::malloc(width * sizeof(slcore::MlirNamedAttributeC)));
          if (state.results == nullptr || state.operands == nullptr || state.attributes == nullptr) {
            std::free(state.results);
            std::free(state.operands);
            std::free(state.attributes);
            throw std::bad_alloc();
          }
          for (size_t a = 0; a < width; ++a) {
            state.attributes[a] = {identifiers[a], reinterpret_cast<void*>(attribute_table[rows[k] * width + a])};
          }
          void* copy = api->operation_create(&state);
          if (copy == nullptr) throw std::runtime_error("insert_copies: MLIR did not create " + op_name);
          void* at = as_pointer(anchor[k]);
          switch (kind[k]) {
            case kAfterOp:
              api->block_insert_before(api->operation_block(at), api->operation_next_in_block(at), copy);
              break;
            case kBeforeOp:
              api->block_insert_before(api->operation_block(at), at, copy);
              break;
            default:
              api->block_insert_before(at, nullptr, copy);  // a null reference: at the block's end
          }
          void* result = api->operation_result(copy, 0);
          for (int32_t e = starts[k]; e < starts[k + 1]; ++e) {
            api->operation_set_operand(as_pointer(edge_op[e]), edge_operand[e], result);
          }
        }
        return n;
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
