// The orders XLA's pass visits things in: computations callee-first, the
// instructions of one computation in post-order, and the buffer ids that
// decide which unconstrained buffer takes its default layout first.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/index.h"

namespace slcore {

// The computations ``c`` calls, in the order its instructions call them; a
// while's come condition first (HLO lists the body first).
std::vector<int32_t> callees_of(const Program& p, int32_t c);

// Callees before callers, the entry last (XLA's MakeComputationPostOrder):
// every function with a body, then the entry if nothing reached it.
std::vector<int32_t> computation_order(const Program& p);

// Instructions of ``c`` in XLA's post-order: operands first, left to right,
// starting from each instruction nobody uses (and every root); whatever only
// a dead cycle reaches comes last, in block order.
std::vector<int32_t> post_order(const Program& p, int32_t c);

// XLA's buffer ids, per value: walking ``order``'s computations (skipping those
// with skip[c] set) in post-order, each result takes the next id and then each
// of its leaves one more; a value that is not a tuple is its own only leaf.
std::vector<int64_t> number_buffers(const Program& p, const std::vector<int32_t>& order,
                                    const std::vector<uint8_t>& skip);

}  // namespace slcore
