#include "engine/store.h"

#include <algorithm>

namespace slcore {

Store::Store(int32_t n_buffers, int32_t n_operand_slots) {
  // A worklist entry names a slot in 30 bits (worklist.h).
  if (n_buffers >= (1 << 29) || n_operand_slots >= (1 << 29))
    throw std::invalid_argument("too many buffers or operands for the worklist's 30-bit ids");
  buffers_.resize(n_buffers);
  operands_.resize(n_operand_slots);
}

void Store::new_round() {
  if (++epoch_ == 0) {  // every 255 rounds: no stamp may look current
    for (BufferSlot& c : buffers_) c.stamp = 0;
    for (Slot& c : operands_) c.stamp = 0;
    epoch_ = 1;
  }
  buffer_order_.clear();
  operand_order_.clear();
  history_.clear();
}

void Store::put_buffer(int32_t b, int32_t layout, bool mandatory, bool dfs, int32_t priority, const Why& why,
                       int32_t round, Provenance& prov) {
  BufferSlot& c = buffers_[b];
  if (c.stamp != epoch_) buffer_order_.push_back(b);
  c = BufferSlot();
  c.stamp = epoch_;
  c.layout = layout;
  c.mandatory = mandatory;
  c.dfs = dfs;
  c.priority = priority;
  c.round = static_cast<uint16_t>(round);
  c.origin = prov.attach(why, kBuffer, b, -1, layout, priority, mandatory, dfs, round, -1);
}

bool Store::update_buffer(int32_t b, int32_t layout, bool mandatory, bool dfs, int32_t priority, bool array_shape,
                          const Why& why, int32_t round, Provenance& prov) {
  BufferSlot& c = buffers_[b];
  if (c.stamp != epoch_) {
    put_buffer(b, layout, mandatory, dfs, priority, why, round, prov);
    return true;
  }
  if (layout == c.layout) {
    bool changed = false;
    if (mandatory && !c.mandatory) c.mandatory = changed = true;
    if (dfs && !c.dfs) c.dfs = changed = true;
    if (priority > c.priority) {
      c.priority = priority;
      changed = true;
    }
    if (changed) {
      c.round = static_cast<uint16_t>(round);
      c.origin = prov.attach(why, kBuffer, b, -1, layout, c.priority, c.mandatory, c.dfs, round, -1);
    }
    return changed;
  }
  if (!mandatory && (c.changes >= kMaxLayoutChanges || !array_shape || priority <= c.priority)) return false;
  history_.push_back({c.layout, c.last_change});
  c.last_change = static_cast<int32_t>(history_.size()) - 1;
  if (c.changes < kMaxLayoutChanges) ++c.changes;
  c.origin = prov.attach(why, kBuffer, b, -1, layout, priority, mandatory, dfs, round, c.layout);
  c.layout = layout;
  c.mandatory = mandatory;
  c.dfs = dfs;
  c.priority = priority;
  c.round = static_cast<uint16_t>(round);
  return true;
}

bool Store::update_operand(int32_t s, int32_t a, int32_t b, int32_t layout, bool mandatory, bool dfs,
                           int32_t priority, const Why& why, int32_t round, Provenance& prov) {
  Slot& c = operands_[s];
  if (c.stamp == epoch_) {
    if (c.layout == layout || !mandatory || c.priority > priority) return false;
  } else {
    c.stamp = epoch_;
    operand_order_.push_back(s);
  }
  c.layout = layout;
  c.mandatory = mandatory;
  c.dfs = dfs;
  c.priority = priority;
  c.round = static_cast<uint16_t>(round);
  c.origin = prov.attach(why, kOperand, a, b, layout, priority, mandatory, dfs, round, -1);
  return true;
}

std::vector<int32_t> Store::history(int32_t b) const {
  std::vector<int32_t> out;
  if (!has_buffer(b)) return out;
  for (int32_t k = buffers_[b].last_change; k >= 0; k = history_[k].previous) out.push_back(history_[k].layout);
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace slcore
