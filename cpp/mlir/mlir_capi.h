// MLIR's C API as jaxlib's own library holds it, for the import walk and the rewrite.
//
// Reading a module through the Python bindings makes a Python object for
// every operand, result and type the walk touches (~1 us each, and more on
// large modules: each one looks its owner up in the bindings' table of live
// operations).  The walk needs only their identities, so the core asks the
// C API directly.  jaxlib builds MLIR's C API into libjax_common.so but
// exports none of it; the functions keep their names in the library's ELF
// symbol table, where this room finds them once per process.  Where they
// cannot be found (another build, a stripped library), `find_mlir_capi` says
// why and the importer keeps its bindings-only walk, which reads the same
// values.
//
// The C API passes its handles (MlirOperation, MlirValue, ...) as structs of
// one pointer; here they are that pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace slcore {

// MLIR's MlirStringRef: a string that need not end in a NUL.
struct MlirStringRefC {
  const char* data;
  size_t length;
};

// MLIR's MlirNamedAttribute: an identifier and an attribute.
struct MlirNamedAttributeC {
  void* name;
  void* attribute;
};

// MLIR's MlirOperationState, field for field (mlir-c/IR.h): what
// mlirOperationCreate reads, and frees the arrays of (malloc'ed, as
// mlirOperationStateAdd* makes them).  The bindings' Operation.create fills the same.
struct MlirOperationStateC {
  MlirStringRefC name;
  void* location;
  intptr_t n_results;
  void** results;  // types
  intptr_t n_operands;
  void** operands;  // values
  intptr_t n_regions;
  void** regions;
  intptr_t n_successors;
  void** successors;
  intptr_t n_attributes;
  MlirNamedAttributeC* attributes;
  bool enable_result_type_inference;
};

struct MlirCApi {
  intptr_t (*operation_num_operands)(void* op) = nullptr;
  void* (*operation_operand)(void* op, intptr_t pos) = nullptr;
  intptr_t (*operation_num_results)(void* op) = nullptr;
  void* (*operation_result)(void* op, intptr_t pos) = nullptr;
  void* (*operation_next_in_block)(void* op) = nullptr;
  // An op's location: an attribute the context owns, valid while it lives.
  void* (*operation_location)(void* op) = nullptr;
  void* (*value_type)(void* value) = nullptr;
  void* (*block_first_operation)(void* block) = nullptr;
  intptr_t (*block_num_arguments)(void* block) = nullptr;
  void* (*block_argument)(void* block, intptr_t pos) = nullptr;
  // What the bindings' ``op.attributes[name] = attr`` calls.
  void (*operation_set_attribute)(void* op, MlirStringRefC name, void* attr) = nullptr;
  // An op's name: an identifier the context uniques (one pointer per name), and its text.
  void* (*operation_name)(void* op) = nullptr;
  MlirStringRefC (*identifier_str)(void* identifier) = nullptr;
  // An op's attribute of that name (the bindings' ``op.attributes[name]``); null when it has none.
  void* (*operation_attribute)(void* op, MlirStringRefC name) = nullptr;
  // What the rewrite's copies need (rewrite_ops.cpp): the bindings'
  // Operation.create, an insertion point's insert, ``op.operands[n] = v``.
  void* (*operation_create)(MlirOperationStateC* state) = nullptr;
  void* (*operation_block)(void* op) = nullptr;
  // Inserts before `reference`, or at the block's end where it is null.
  void (*block_insert_before)(void* block, void* reference, void* op) = nullptr;
  void (*operation_set_operand)(void* op, intptr_t pos, void* value) = nullptr;
  void* (*operation_context)(void* op) = nullptr;
  void* (*identifier_get)(void* context, MlirStringRefC text) = nullptr;
  void* (*location_name_get)(void* context, MlirStringRefC name, void* child) = nullptr;
};

// The functions in the loaded library whose file name is `library`, searched
// on the first call for that name; nullptr with `why` set when any is missing.
const MlirCApi* find_mlir_capi(const std::string& library, std::string& why);

}  // namespace slcore
