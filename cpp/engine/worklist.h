// XLA's two-ended worklist.  Constraints made while one is propagated wait in
// the ``added`` batch; when the propagation ends the batch goes in, depth-first
// ones to the front, the others to the back.  The batch keeps its breadth-first
// entries in descending priority (each goes after the last one at least as
// strong), as XLA's list insertion does.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace slcore {

// One word: the list holds up to one entry per slot at once.
struct Ref {
  uint32_t kind : 2;  // provenance.h's Kind
  int32_t id : 30;    // buffer, operand slot or result constraint (Store checks the counts fit)
};
static_assert(sizeof(Ref) == 4, "a worklist entry is one word");

class Worklist {
 public:
  // ``priority_of(ref)`` reads an entry's priority as it is now.
  template <class PriorityOf>
  void add(Ref r, bool dfs, int32_t priority, PriorityOf priority_of) {
    if (dfs) {
      added_.push_back(r);
      return;
    }
    size_t i = added_.size();
    while (i > 0 && priority_of(added_[i - 1]) < priority) --i;
    added_.insert(added_.begin() + static_cast<std::ptrdiff_t>(i), r);
  }
  // The batch goes in; ``dfs_of(ref)`` reads whether an entry is depth-first now.
  template <class DfsOf>
  void drain(DfsOf dfs_of) {
    for (const Ref& r : added_) {
      if (dfs_of(r)) {
        work_.push_front(r);
      } else {
        work_.push_back(r);
      }
    }
    added_.clear();
  }
  bool empty() const { return work_.empty(); }
  Ref pop() {
    Ref r = work_.front();
    work_.pop_front();
    return r;
  }
  const std::deque<Ref>& work() const { return work_; }
  // Frees both lists (the run is over).
  void release() {
    std::deque<Ref>().swap(work_);
    std::vector<Ref>().swap(added_);
  }
  // The deque's items (its blocks hold a little more) and the batch's capacity.
  int64_t bytes() const {
    return static_cast<int64_t>(work_.size() * sizeof(Ref) + added_.capacity() * sizeof(Ref));
  }
  const std::vector<Ref>& added() const { return added_; }

 private:
  std::deque<Ref> work_;
  std::vector<Ref> added_;
};

}  // namespace slcore
