#include "engine/layouts.h"

namespace slcore {

int32_t Layouts::intern(const std::vector<int32_t>& dims) {
  auto [it, fresh] = ids_.try_emplace(dims, size());
  if (fresh) {
    dims_.insert(dims_.end(), dims.begin(), dims.end());
    start_.push_back(static_cast<int32_t>(dims_.size()));
  }
  return it->second;
}

int32_t Layouts::default_of(int32_t rank) {
  while (static_cast<int32_t>(defaults_.size()) <= rank) {
    const int32_t r = static_cast<int32_t>(defaults_.size());
    std::vector<int32_t> dims;
    for (int32_t d = r - 1; d >= 0; --d) dims.push_back(d);
    defaults_.push_back(intern(dims));
  }
  return defaults_[rank];
}

}  // namespace slcore
