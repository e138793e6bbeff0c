// The rewrite's writes through MLIR's C API (see rewrite_ops.h).
#include "mlir/rewrite_ops.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace slcore {
namespace {

void* as_pointer(int64_t p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

void** malloc_copy(void* const* items, size_t n) {
  auto** out = static_cast<void**>(std::malloc(n * sizeof(void*)));
  if (out != nullptr) std::memcpy(out, items, n * sizeof(void*));
  return out;
}

}  // namespace

void set_attribute_pairs(const MlirCApi& api, const std::vector<int64_t>& ops, const std::vector<int32_t>& pairs,
                         const std::string& first, const std::string& second, const std::vector<uintptr_t>& firsts,
                         const std::vector<uintptr_t>& seconds) {
  if (pairs.size() != ops.size() || firsts.size() != seconds.size()) {
    throw std::invalid_argument("set_attribute_pairs: the columns differ in length");
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k] == 0 || pairs[k] < 0 || static_cast<size_t>(pairs[k]) >= firsts.size()) {
      throw std::invalid_argument("set_attribute_pairs: an op or a pair out of range");
    }
  }
  const MlirStringRefC a{first.data(), first.size()}, b{second.data(), second.size()};
  for (size_t k = 0; k < ops.size(); ++k) {
    void* op = as_pointer(ops[k]);
    api.operation_set_attribute(op, a, reinterpret_cast<void*>(firsts[pairs[k]]));
    api.operation_set_attribute(op, b, reinterpret_cast<void*>(seconds[pairs[k]]));
  }
}

size_t insert_copies(const MlirCApi& api, const std::string& op_name, const CopyRows& rows,
                     const std::vector<std::string>& attribute_names, const std::vector<uintptr_t>& attribute_table,
                     const CopyName& location_name) {
  const Column<int64_t>& src_op = rows.source_ops;
  const Column<int64_t>& src_value = rows.source_values;
  const Column<int64_t>& anchor = rows.anchors;
  const Column<int64_t>& consumer = rows.consumers;
  const Column<int64_t>& edge_op = rows.edge_ops;
  const Column<int32_t>& src_index = rows.source_indices;
  const Column<int32_t>& attribute_row = rows.attribute_rows;
  const Column<int32_t>& starts = rows.edge_start;
  const Column<int32_t>& edge_operand = rows.edge_operands;
  const Column<int8_t>& kind = rows.anchor_kinds;
  const size_t n = src_op.size(), width = attribute_names.size();
  if (src_index.size() != n || src_value.size() != n || kind.size() != n || anchor.size() != n ||
      consumer.size() != n || attribute_row.size() != n || starts.size() != n + 1 || width == 0 ||
      attribute_table.size() % width != 0 || edge_operand.size() != edge_op.size() ||
      (n > 0 && static_cast<size_t>(starts[n]) != edge_op.size())) {
    throw std::invalid_argument("insert_copies: the columns differ in length");
  }
  // Everything is checked before the module changes: a refusal leaves it as it was.
  const size_t table_rows = attribute_table.size() / width;
  for (size_t k = 0; k < n; ++k) {
    const bool from_op = src_op[k] != 0;
    if ((from_op ? src_index[k] < 0 : src_value[k] == 0) || anchor[k] == 0 || consumer[k] == 0 ||
        kind[k] < kAfterOp || kind[k] > kEndOfBlock || attribute_row[k] < 0 ||
        static_cast<size_t>(attribute_row[k]) >= table_rows || starts[k] < 0 || starts[k] > starts[k + 1]) {
      throw std::invalid_argument("insert_copies: a copy's source, place, consumer or attributes out of range");
    }
    if (from_op && src_index[k] >= api.operation_num_results(as_pointer(src_op[k]))) {
      throw std::invalid_argument("insert_copies: a source op has no result of that index");
    }
  }
  for (size_t e = 0; e < edge_op.size(); ++e) {
    if (edge_op[e] == 0 || edge_operand[e] < 0 ||
        edge_operand[e] >= api.operation_num_operands(as_pointer(edge_op[e]))) {
      throw std::invalid_argument("insert_copies: an edge's op has no operand of that index");
    }
  }
  std::vector<void*> identifiers(width);
  void* context = nullptr;
  for (size_t k = 0; k < n; ++k) {
    void* consumer_op = as_pointer(consumer[k]);
    if (context == nullptr) {
      context = api.operation_context(consumer_op);
      for (size_t a = 0; a < width; ++a) {
        identifiers[a] =
            api.identifier_get(context, MlirStringRefC{attribute_names[a].data(), attribute_names[a].size()});
      }
    }
    void* source = src_op[k] != 0 ? api.operation_result(as_pointer(src_op[k]), src_index[k])
                                  : as_pointer(src_value[k]);
    void* type = api.value_type(source);
    // The copy takes its first consumer's location, under the copy's name where it has one.
    void* location = api.operation_location(consumer_op);
    if (location_name) location = api.location_name_get(context, location_name(k), location);
    // mlirOperationCreate frees the state's arrays (its mlirOperationStateAdd* functions
    // malloc them), so they are malloc'ed here too.
    MlirOperationStateC state{};
    state.name = {op_name.data(), op_name.size()};
    state.location = location;
    state.n_results = 1;
    state.results = malloc_copy(&type, 1);
    state.n_operands = 1;
    state.operands = malloc_copy(&source, 1);
    state.n_attributes = static_cast<intptr_t>(width);
    state.attributes = static_cast<MlirNamedAttributeC*>(std::malloc(width * sizeof(MlirNamedAttributeC)));
    if (state.results == nullptr || state.operands == nullptr || state.attributes == nullptr) {
      std::free(state.results);
      std::free(state.operands);
      std::free(state.attributes);
      throw std::bad_alloc();
    }
    for (size_t a = 0; a < width; ++a) {
      state.attributes[a] = {identifiers[a], reinterpret_cast<void*>(attribute_table[attribute_row[k] * width + a])};
    }
    void* copy = api.operation_create(&state);
    if (copy == nullptr) throw std::runtime_error("insert_copies: MLIR did not create " + op_name);
    void* at = as_pointer(anchor[k]);
    switch (kind[k]) {
      case kAfterOp:
        api.block_insert_before(api.operation_block(at), api.operation_next_in_block(at), copy);
        break;
      case kBeforeOp:
        api.block_insert_before(api.operation_block(at), at, copy);
        break;
      default:
        api.block_insert_before(at, nullptr, copy);  // a null reference: at the block's end
    }
    void* result = api.operation_result(copy, 0);
    for (int32_t e = starts[k]; e < starts[k + 1]; ++e) {
      api.operation_set_operand(as_pointer(edge_op[e]), edge_operand[e], result);
    }
  }
  return n;
}

}  // namespace slcore
