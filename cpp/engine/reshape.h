// XLA's reshape layout rules (layout.py has the same in Python, for the
// targets that refine them): whether a layout can be derived across a reshape
// at all, and AlignLayouts, the layout that makes a reshape a bitcast.
#pragma once

#include <cstdint>
#include <vector>

namespace slcore {

// ``dims``: extents, -1 for a dynamic one.  XLA derives nothing across a
// reshape between two effectively rank-1 shapes, nor with a dynamic extent.
bool reshape_derivable(const int64_t* in_dims, int32_t in_rank, const int64_t* out_dims, int32_t out_rank);

// XLA's ReshapeMerelyInsertsOrDeletes1SizedDimensions.
bool reshape_only_size1_change(const int64_t* in_dims, int32_t in_rank, const int64_t* out_dims, int32_t out_rank);

// The output layout that makes reshape(in -> out) a bitcast of ``in_layout``
// (minor to major); false when there is none.  Size-1 dimensions are set
// aside, the rest matched factor by factor, then the size-1 ones go most
// major in descending order.
bool align_layouts(const std::vector<int64_t>& in_dims, const std::vector<int32_t>& in_layout,
                   const std::vector<int64_t>& out_dims, std::vector<int32_t>& out);

}  // namespace slcore
