#include "engine/reshape.h"

#include <algorithm>
#include <utility>

namespace slcore {

namespace {

using Wide = __int128;  // products of extents: Python's are unbounded

int32_t true_num_dims(const int64_t* dims, int32_t rank) {
  int32_t n = 0;
  for (int32_t i = 0; i < rank; ++i) n += dims[i] != 1;
  return n;
}

Wide product(const std::vector<int64_t>& dims) {
  Wide p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// Boundaries (i, j) where the products of a[:i] and b[:j] agree.
std::vector<std::pair<int32_t, int32_t>> common_factors(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const int32_t na = static_cast<int32_t>(a.size()), nb = static_cast<int32_t>(b.size());
  if (product(a) == 0 || product(b) == 0) return {{0, 0}, {na, nb}};
  std::vector<std::pair<int32_t, int32_t>> bounds{{0, 0}};
  int32_t i = 0, j = 0;
  Wide pa = 1, pb = 1;
  while (i < na || j < nb) {
    if ((pa <= pb && i < na) || j >= nb) {
      pa *= a[i++];
    } else {
      pb *= b[j++];
    }
    if (pa == pb && std::make_pair(i, j) != bounds.back()) bounds.emplace_back(i, j);
  }
  if (bounds.back() != std::make_pair(na, nb)) bounds.emplace_back(na, nb);
  return bounds;
}

}  // namespace

bool reshape_derivable(const int64_t* in_dims, int32_t in_rank, const int64_t* out_dims, int32_t out_rank) {
  for (int32_t i = 0; i < in_rank; ++i) {
    if (in_dims[i] < 0) return false;
  }
  for (int32_t i = 0; i < out_rank; ++i) {
    if (out_dims[i] < 0) return false;
  }
  return !(true_num_dims(in_dims, in_rank) == 1 && true_num_dims(out_dims, out_rank) == 1);
}

bool reshape_only_size1_change(const int64_t* in_dims, int32_t in_rank, const int64_t* out_dims, int32_t out_rank) {
  std::vector<int64_t> x, y;
  for (int32_t i = 0; i < in_rank; ++i) {
    if (in_dims[i] != 1) x.push_back(in_dims[i]);
  }
  for (int32_t i = 0; i < out_rank; ++i) {
    if (out_dims[i] != 1) y.push_back(out_dims[i]);
  }
  return x == y;
}

bool align_layouts(const std::vector<int64_t>& in_dims, const std::vector<int32_t>& in_layout,
                   const std::vector<int64_t>& out_dims, std::vector<int32_t>& out) {
  const int32_t n_in = static_cast<int32_t>(in_dims.size()), n_out = static_cast<int32_t>(out_dims.size());
  const bool ones = std::count(in_dims.begin(), in_dims.end(), 1) > 0 ||
                    std::count(out_dims.begin(), out_dims.end(), 1) > 0;
  if (ones) {
    std::vector<int32_t> keep_in, keep_out, renum(n_in, -1), simple_layout, simple;
    std::vector<int64_t> simple_in, simple_out;
    for (int32_t d = 0; d < n_in; ++d) {
      if (in_dims[d] != 1) {
        renum[d] = static_cast<int32_t>(keep_in.size());
        keep_in.push_back(d);
        simple_in.push_back(in_dims[d]);
      }
    }
    for (int32_t d : in_layout) {
      if (renum[d] >= 0) simple_layout.push_back(renum[d]);
    }
    for (int32_t d = 0; d < n_out; ++d) {
      if (out_dims[d] != 1) {
        keep_out.push_back(d);
        simple_out.push_back(out_dims[d]);
      }
    }
    if (!align_layouts(simple_in, simple_layout, simple_out, simple)) return false;
    out.clear();
    for (int32_t d : simple) out.push_back(keep_out[d]);
    for (int32_t d = n_out - 1; d >= 0; --d) {
      if (out_dims[d] == 1) out.push_back(d);
    }
    return true;
  }
  const auto factors = common_factors(in_dims, out_dims);
  std::vector<int32_t> in_to_factor(n_in, 0), position(n_in, 0);
  for (int32_t p = 0; p < static_cast<int32_t>(in_layout.size()); ++p) position[in_layout[p]] = p;
  for (size_t f = 0; f + 1 < factors.size(); ++f) {
    const int32_t start = factors[f].first, end = factors[f + 1].first;
    if (start == end) continue;
    int32_t physical = position[start];
    in_to_factor[start] = static_cast<int32_t>(f);
    for (int32_t d = start + 1; d < end; ++d) {
      --physical;
      if (physical < 0 || in_layout[physical] != d) return false;
      in_to_factor[d] = static_cast<int32_t>(f);
    }
  }
  out.clear();
  size_t minor = 0;
  while (static_cast<int32_t>(out.size()) < n_out) {
    if (minor >= in_layout.size()) return false;
    const int32_t f = in_to_factor[in_layout[minor]];
    const auto [in_start, out_start] = factors[f];
    const auto [in_end, out_end] = factors[f + 1];
    for (int32_t d = out_end - 1; d >= out_start; --d) out.push_back(d);
    minor += static_cast<size_t>(std::max(in_end - in_start, 1));
  }
  return true;
}

}  // namespace slcore
