// The per-computation steps of XLA's pass that need nothing from the target
// or from Python: which computations have one possible layout per array (no
// worklist to run), the order XLA's default loop visits a computation's
// buffers in, laying a run of one-layout computations out, and the interface
// a computation records at its end (XLA's CalculateComputationLayout reads
// it back from the buffers).
#pragma once

#include <cstdint>
#include <vector>

#include "index.h"
#include "propagators.h"

namespace slcore {

// Whether every array result leaf of computation ``comp`` has rank 0 or 1
// (reducer and comparator bodies): then each has one layout.  The driver adds
// its own conditions (not the entry, no op it must pin or reject).
bool one_layout_per_array(const Engine& e, int32_t comp);

// For each computation of ``comps``: its array buffers (result leaves that are
// their own buffer) in the order of XLA's buffer ids ``key`` (order.h's
// number_buffers), the order the default loop lays them out in.  Throws
// std::invalid_argument for a key of the wrong length or a computation out of range.
Rows default_buffers(const Engine& e, const std::vector<int64_t>& key, const std::vector<int32_t>& comps);

// The layouts computation ``comp``'s interface holds now: per parameter, its
// value's buffer; per root operand, its buffer where it is an array.  -1 for
// a leaf without a layout (or not an array).
void interface_of(const Engine& e, int32_t comp, std::vector<int32_t>& params, std::vector<int32_t>& results);

// Lays out each computation of ``comps`` in turn (Engine::lay_out_trivial)
// and appends its interface, read right after, to ``params`` and ``results``
// (one row per computation).
void lay_out_one_layout_run(Engine& e, const std::vector<int32_t>& comps, Rows& params, Rows& results);

}  // namespace slcore
