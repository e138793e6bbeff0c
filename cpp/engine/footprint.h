// What the core holds, in bytes per structure (each vector's capacity, not
// its size: that is what the allocator handed out).  bench/footprint.py
// prints it; the tests check that a fast run records no provenance facts.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/demands.h"
#include "engine/index.h"
#include "engine/propagators.h"

namespace slcore {

using Footprint = std::vector<std::pair<std::string, int64_t>>;

// The walked program (the index room), one entry per array.
Footprint footprint(const Walked& w);
// The engine: its facts, store, provenance, layouts, worklist and the plans.
Footprint footprint(const Engine& e, const std::vector<Plan>& plans);

}  // namespace slcore
