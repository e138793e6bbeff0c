// Provenance: why each constraint holds what it holds.
//
// A constraint changes in place, so every change gets a record of its own:
// the cheap link (the rule that fired, its instruction, the record of the
// constraint it was derived from) always, and in exact mode the fact too
// (kind, target, layout, priority, flags, round, the layout it replaced);
// a fast run keeps 16 bytes per record.  A run whose caller reads no origin
// (the command's assign: it prints layouts and copies, never why) keeps no
// link either: the core's own records are -1 ("not recorded"; 8 MB of links
// at 170k instructions), Python's own Origins still get theirs.
// Python builds its ``Origin`` objects from these records, only when explain
// or trace reads them.  Following ``parent`` walks back to a source; records
// only point at older ones, so a chain never loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace slcore {

enum Kind : uint8_t { kNone = 0, kBuffer = 1, kOperand = 2, kResult = 3 };

// The rules the core itself fires; Python's name table starts with these, in
// this order (bindings/bind_records.cpp hands them over as RULE_NAMES).
enum Rule : int32_t {
  kNoName = 0,  // also the empty note
  kProducerLayout,
  kWhileBackEdge,
  kCustomCallAlias,
  kConsumerDemand,
  kSameLayoutOperand,
  kBitcastConvertRankChange,
  kBroadcastOperand,
  kAllReduceOperand,
  kSameLayoutSibling,
  kSameLayoutResult,
  kOnlyLayout,
  kTransposeBitcast,
  kDefaultLayout,
  kReshapeBitcast,
  kRuleCount,
};
extern const char* const kRuleNames[kRuleCount];

// What a demand says about itself before any constraint takes it: either a
// record Python made (``made`` >= 0: an Origin object the driver or a target
// passed), or the parts of a fresh one.
struct Why {
  int32_t rule = kNoName;
  int32_t instr = -1;
  int32_t parent = -1;
  int32_t note = kNoName;
  int32_t made = -1;
};

// A record as readers see it: its link and, where it has one, its fact.
struct Record {
  int32_t rule, instr, parent, note;
  Kind kind = kNone;
  uint8_t mandatory = 0, dfs = 0;
  int32_t a = -1, b = -1;  // the target: buffer / (instruction, operand) / computation
  int32_t layout = -1;     // a layout id; for a result, its result constraint id
  int32_t priority = 0, round = 0;
  int32_t was = -1;  // the buffer layout replaced, -1 for none
};

class Provenance {
 public:
  explicit Provenance(bool facts, bool links = true) : facts_(facts), links_on_(facts || links) {}
  bool facts() const { return facts_; }

  // A record without a fact (a Python Origin, or a cheap link).
  int32_t make(int32_t rule, int32_t instr, int32_t parent, int32_t note);
  // The core's own cheap link: a record as ``make``'s, or -1 where the run keeps no links.
  int32_t link(int32_t rule, int32_t instr, int32_t parent, int32_t note) {
    return links_on_ ? make(rule, instr, parent, note) : -1;
  }
  // The record a constraint keeps when it takes ``why`` with this fact: in
  // exact mode (or with ``force``) a Python-made record still without a fact
  // is filled in, any other gets a copy with the fact; otherwise the link only.
  int32_t attach(const Why& why, Kind kind, int32_t a, int32_t b, int32_t layout, int32_t priority, bool mandatory,
                 bool dfs, int32_t round, int32_t was, bool force = false);
  // Whether record ``r`` has its fact (an Origin whose ``kind`` is set).
  bool has_fact(int32_t r) const { return r >= 0 && fact(r) != nullptr; }
  Record operator[](int32_t r) const;
  // Record ``r``'s note, without assembling the record.
  int32_t note(int32_t r) const { return links_[r].note; }
  int32_t size() const { return static_cast<int32_t>(links_.size()); }
  // Python made a fact of its own (a filled Origin) that a demand names.
  void mark_fact(int32_t r, Kind kind) { fact_slot(r).kind = kind; }

  int64_t link_bytes() const { return static_cast<int64_t>(links_.capacity() * sizeof(Link)); }
  // An exact run's facts, or a fast run's few (forced ones and Python's) with their keys.
  int64_t fact_bytes() const {
    const std::size_t node = sizeof(std::pair<const int32_t, Fact>) + 2 * sizeof(void*);
    return static_cast<int64_t>(facts_of_.capacity() * sizeof(Fact) +
                                (sparse_.empty() ? 0 : sparse_.size() * node + sparse_.bucket_count() * sizeof(void*)));
  }

 private:
  // The link every record has, and the fact only some have: a fast run makes
  // a link per constraint change (hundreds of thousands) and reads a fact for
  // a handful, so it keeps those apart, by record, instead of a fact per link.
  struct Link {
    int32_t rule, instr, parent, note;
  };
  struct Fact {
    Kind kind = kNone;
    uint8_t mandatory = 0, dfs = 0;
    int32_t a = -1, b = -1, layout = -1, priority = 0, round = 0, was = -1;
  };
  const Fact* fact(int32_t r) const;
  Fact& fact_slot(int32_t r);

  bool facts_;
  bool links_on_;
  std::vector<Link> links_;
  std::vector<Fact> facts_of_;                // exact mode: one per link
  std::unordered_map<int32_t, Fact> sparse_;  // fast mode: the few with a fact
};

}  // namespace slcore
