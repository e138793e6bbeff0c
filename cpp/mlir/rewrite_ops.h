// The rewrite's writes to the module through MLIR's C API (mlir_capi.h): the
// ops' two layout attributes, and the copies.  No Python here: the bindings
// (bindings/bind_rewrite_rows.cpp, bind_rewrite_copies.cpp) read the columns
// from Python and call these.
//
// Made through the bindings, a copy cost an insertion point, the op's and its
// result's Python objects, one object per consumer op and one operand
// assignment per edge (~12 us per copy; 3,584 copies at L=256).  Here the
// rewrite hands the copies that need nothing but that (rewrite._CopyBatch) as
// columns, and the core does what ``ir.Operation.create(..., ip=...)`` and
// ``op.operands[n] = copy`` do, in the same order, so the module comes out the
// same op for op: the golden comparison (tests/golden) checks it byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlir/mlir_capi.h"

namespace slcore {

// A column read in place (an ``array.array`` the bindings hold a view of).
template <class T>
struct Column {
  const T* data = nullptr;
  size_t n = 0;
  size_t size() const { return n; }
  T operator[](size_t i) const { return data[i]; }
};

// Op k of `ops` (a C API pointer, the import walk's identity) gets attribute
// `first` = firsts[p] then `second` = seconds[p], p being pairs[k]: what
// ``op.attributes[name] = attr`` does, twice, for every op.  The attributes
// are the bindings' own (their _CAPIPtr pointers), which the caller keeps
// alive.  Every row is checked before any op changes.
void set_attribute_pairs(const MlirCApi& api, const std::vector<int64_t>& ops, const std::vector<int32_t>& pairs,
                         const std::string& first, const std::string& second, const std::vector<uintptr_t>& firsts,
                         const std::vector<uintptr_t>& seconds);

// Where a copy goes, as the bindings' insertion points put it.
enum CopyAnchor : int8_t {
  kAfterOp = 0,       // InsertionPoint.after(op): before the op that follows it
  kBeforeOp = 1,      // InsertionPoint(op)
  kEndOfBlock = 2,    // InsertionPoint(block): the block has no op yet
};

// The copies to make, one row each (see _core.insert_copies), and the
// operand edges each copy serves (edge_start: per copy, where its edges start).
struct CopyRows {
  Column<int64_t> source_ops, source_values, anchors, consumers, edge_ops;
  Column<int32_t> source_indices, attribute_rows, edge_start, edge_operands;
  Column<int8_t> anchor_kinds;
};

// Copy k's location's name; empty where the copies keep their consumers' locations.
using CopyName = std::function<MlirStringRefC(size_t k)>;

// Creates one op named `op_name` per row, inserts it and points its edges'
// operands at it; every row is checked before any op is made.  The number of
// copies made.
size_t insert_copies(const MlirCApi& api, const std::string& op_name, const CopyRows& rows,
                     const std::vector<std::string>& attribute_names, const std::vector<uintptr_t>& attribute_table,
                     const CopyName& location_name);

}  // namespace slcore
