// The Python face (stablehlo_layout._core) by concern: each bind_*.cpp
// registers its functions and classes on the module; module.cpp's NB_MODULE
// calls them in turn.
#pragma once

#include <nanobind/nanobind.h>

namespace slcore_python {

struct NB_HIDDEN Core;  // the object behind _core.Engine (core_objects.h)

// bind_mlir.cpp: capsules (the bindings' _CAPIPtr) and finding MLIR's C API.
void bind_mlir(nanobind::module_& m);

// bind_import_walk.cpp: the import walk's half in the core (block_arguments, ValueIds, OpWalk).
void bind_import_walk(nanobind::module_& m);

// bind_rewrite_rows.cpp: the rewrite's scan of the graph's columns, and its layouts' attributes set.
void bind_rewrite_rows(nanobind::module_& m);

// bind_rewrite_copies.cpp: the rewrite's copies made through the C API.
void bind_rewrite_copies(nanobind::module_& m);

// bind_columns.cpp: the import walk's list columns packed as int32 bytes.
void bind_columns(nanobind::module_& m);

// bind_index.cpp: every value's uses, and the program index (Index).
void bind_index(nanobind::module_& m);

// bind_propagation.cpp: DemandError, AlignLayouts, and the Engine's run:
// its construction, XLA's Set*Layout, the plans, the worklist.
void bind_propagation(nanobind::module_& m, nanobind::class_<Core>& engine);

// bind_records.cpp: RULE_NAMES, and the Engine read back: the store, each
// value's layout and the copies' candidates, provenance, the watched worklists.
void bind_records(nanobind::module_& m, nanobind::class_<Core>& engine);

// bind_computation.cpp: the per-computation steps, on an Engine.
void bind_computation(nanobind::module_& m);

}  // namespace slcore_python
