#include "engine/provenance.h"

namespace slcore {

const char* const kRuleNames[kRuleCount] = {
    "",
    "producer-layout",
    "while-back-edge",
    "custom-call-alias",
    "consumer-demand",
    "same-layout-operand",
    "bitcast-convert-rank-change",
    "broadcast-operand",
    "all-reduce-operand",
    "same-layout-sibling",
    "same-layout-result",
    "only-layout",
    "transpose-bitcast",
    "default-layout",
    "reshape-bitcast",
};

int32_t Provenance::make(int32_t rule, int32_t instr, int32_t parent, int32_t note) {
  links_.push_back({rule, instr, parent, note});
  if (facts_) facts_of_.emplace_back();
  return size() - 1;
}

const Provenance::Fact* Provenance::fact(int32_t r) const {
  if (facts_) return facts_of_[r].kind != kNone ? &facts_of_[r] : nullptr;
  const auto it = sparse_.find(r);
  return it == sparse_.end() || it->second.kind == kNone ? nullptr : &it->second;
}

Provenance::Fact& Provenance::fact_slot(int32_t r) { return facts_ ? facts_of_[r] : sparse_[r]; }

Record Provenance::operator[](int32_t r) const {
  const Link& l = links_[r];
  Record out;
  out.rule = l.rule;
  out.instr = l.instr;
  out.parent = l.parent;
  out.note = l.note;
  if (const Fact* f = fact(r)) {
    out.kind = f->kind;
    out.mandatory = f->mandatory;
    out.dfs = f->dfs;
    out.a = f->a;
    out.b = f->b;
    out.layout = f->layout;
    out.priority = f->priority;
    out.round = f->round;
    out.was = f->was;
  }
  return out;
}

int32_t Provenance::attach(const Why& why, Kind kind, int32_t a, int32_t b, int32_t layout, int32_t priority,
                           bool mandatory, bool dfs, int32_t round, int32_t was, bool force) {
  if (!facts_ && !force) return why.made >= 0 ? why.made : link(why.rule, why.instr, why.parent, why.note);
  int32_t id;
  if (why.made >= 0 && !has_fact(why.made)) {
    id = why.made;  // fresh from its rule and not yet a fact: fill it in
  } else if (why.made >= 0) {
    const Link base = links_[why.made];
    id = make(base.rule, base.instr, base.parent, base.note);
  } else {
    id = make(why.rule, why.instr, why.parent, why.note);
  }
  Fact& f = fact_slot(id);
  f.kind = kind;
  f.a = a;
  f.b = b;
  f.layout = layout;
  f.priority = priority;
  f.mandatory = mandatory;
  f.dfs = dfs;
  f.round = round;
  f.was = was;
  return id;
}

}  // namespace slcore
