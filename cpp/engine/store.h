// The constraint store: per buffer and per operand slot, the constraint XLA's
// pass keeps, with its overwrite rules (written here and nowhere else).
//
// Slots live for one round: ``new_round`` forgets them all at once (an epoch
// stamp, not a pass over the arrays).  Each constraint keeps one slot that
// changes in place, as XLA's do: a worklist entry names the slot, so an entry
// still waiting propagates whatever the slot holds when it is popped.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/provenance.h"

namespace slcore {

// A buffer's layout may be changed by non-mandatory requests at most twice;
// that stops two equally strong demands from flipping it forever.
constexpr int kMaxLayoutChanges = 2;

// 16 bytes a slot, 20 a buffer's: there is one per operand and one per value
// (XLA:CPU's 1024-layer gradient: 258k and 172k, held all run).  The round
// fits 16 bits (the rounds stop at 16, ``set_round`` checks); the stamp is
// the epoch's low byte (``new_round`` clears the stamps when it wraps).
struct Slot {
  int32_t layout = -1, priority = 0, origin = -1;
  uint16_t round = 0;
  uint8_t stamp = 0;
  uint8_t mandatory : 1, dfs : 1;
  // Buffers only: how many layouts it held before this round, counted up to
  // kMaxLayoutChanges (all the rule reads); in the flag byte, where a field
  // of BufferSlot's own would cost it 4 bytes more.
  uint8_t changes : 2;
  Slot() : mandatory(0), dfs(0), changes(0) {}
};

struct BufferSlot : Slot {
  int32_t last_change = -1;  // newest entry of Store::history, -1 for none
};

static_assert(sizeof(Slot) == 16 && sizeof(BufferSlot) == 20, "the store's slots grew");
static_assert(kMaxLayoutChanges < 4, "Slot::changes counts up to kMaxLayoutChanges in 2 bits");

struct Change {
  int32_t layout, previous;  // the layout given up; the buffer's change before it
};

class Store {
 public:
  Store(int32_t n_buffers, int32_t n_operand_slots);

  void new_round();
  bool has_buffer(int32_t b) const { return buffers_[b].stamp == epoch_; }
  bool has_operand(int32_t s) const { return operands_[s].stamp == epoch_; }
  const BufferSlot& buffer(int32_t b) const { return buffers_[b]; }
  const Slot& operand(int32_t s) const { return operands_[s]; }

  // XLA's BufferLayoutConstraint::UpdateLayout (a new buffer takes anything):
  // true when the constraint changed.  ``array_shape``: the producer's HLO
  // shape is not a tuple (a non-mandatory request cannot relayout a tuple's
  // element).
  bool update_buffer(int32_t b, int32_t layout, bool mandatory, bool dfs, int32_t priority, bool array_shape,
                     const Why& why, int32_t round, Provenance& prov);
  // A buffer laid out without asking (a computation with one layout per value).
  void put_buffer(int32_t b, int32_t layout, bool mandatory, bool dfs, int32_t priority, const Why& why,
                  int32_t round, Provenance& prov);
  // XLA's operand rule: the first writer wins unless a mandatory demand of at
  // least its priority asks for another layout; true when the slot changed.
  // (a, b) name the slot in provenance: (instruction, operand number).
  bool update_operand(int32_t s, int32_t a, int32_t b, int32_t layout, bool mandatory, bool dfs, int32_t priority,
                      const Why& why, int32_t round, Provenance& prov);

  // Slots set this round, in the order they were first set.
  const std::vector<int32_t>& buffer_order() const { return buffer_order_; }
  const std::vector<int32_t>& operand_order() const { return operand_order_; }
  // Buffer b's earlier layouts this round, oldest first.
  std::vector<int32_t> history(int32_t b) const;

  int64_t buffer_bytes() const { return static_cast<int64_t>(buffers_.capacity() * sizeof(BufferSlot)); }
  int64_t operand_bytes() const { return static_cast<int64_t>(operands_.capacity() * sizeof(Slot)); }
  int64_t order_bytes() const {
    return static_cast<int64_t>((buffer_order_.capacity() + operand_order_.capacity()) * sizeof(int32_t) +
                                history_.capacity() * sizeof(Change));
  }

 private:
  uint8_t epoch_ = 1;  // the round's stamp (never 0: a slot never set holds 0)
  std::vector<BufferSlot> buffers_;
  std::vector<Slot> operands_;
  std::vector<int32_t> buffer_order_, operand_order_;
  std::vector<Change> history_;
};

}  // namespace slcore
