// The per-computation steps of XLA's pass that need nothing from the target
// or from Python: the order XLA's default loop visits a computation's
// buffers in, laying out a run of computations whose every array
// has one possible layout (no worklist to run there), and the interface
// a computation records at its end (XLA's CalculateComputationLayout reads
// it back from the buffers).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/index.h"
#include "engine/propagators.h"

namespace slcore {

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

// Step 1 for a computation's parameters, as XLA's pass pins them (its entry
// layout, or the interface an earlier round recorded): parameter instruction
// ``params[k]`` takes ``layouts[k]``, mandatory, at ``priority``, from a
// record of its own (``rule``, the parameter, ``notes[k]``) made right before,
// in order.  Throws std::invalid_argument when the arrays differ in length,
// and the engine's DemandError for a layout the parameter cannot hold.
void pin_parameters(Engine& e, const std::vector<int32_t>& params, const std::vector<int32_t>& layouts,
                    const std::vector<int32_t>& notes, int32_t rule, int32_t priority);

}  // namespace slcore
