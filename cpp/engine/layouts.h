// Interned layouts: every minor-to-major list the engine handles gets one id,
// so constraints compare and copy layouts as integers.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace slcore {

class Layouts {
 public:
  // The id of ``dims`` (minor to major), made on first sight.
  int32_t intern(const std::vector<int32_t>& dims);
  // Row-major: dimension 0 most major.
  int32_t default_of(int32_t rank);
  int32_t rank(int32_t id) const { return start_[id + 1] - start_[id]; }
  const int32_t* begin(int32_t id) const { return dims_.data() + start_[id]; }
  const int32_t* end(int32_t id) const { return dims_.data() + start_[id + 1]; }
  int32_t size() const { return static_cast<int32_t>(start_.size()) - 1; }
  // The tables, and the map's keys at a rough per-node cost (a program has few layouts).
  int64_t bytes() const {
    int64_t keys = 0;
    for (const auto& [dims, id] : ids_) keys += static_cast<int64_t>(dims.capacity() * sizeof(int32_t) + 64);
    return static_cast<int64_t>((start_.capacity() + dims_.capacity() + defaults_.capacity()) * sizeof(int32_t)) +
           keys;
  }

 private:
  std::vector<int32_t> start_{0};
  std::vector<int32_t> dims_;
  std::map<std::vector<int32_t>, int32_t> ids_;
  std::vector<int32_t> defaults_;
};

}  // namespace slcore
