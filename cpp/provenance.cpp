#include "provenance.h"

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
  Record r;
  r.rule = rule;
  r.instr = instr;
  r.parent = parent;
  r.note = note;
  records_.push_back(r);
  return size() - 1;
}

int32_t Provenance::attach(const Why& why, Kind kind, int32_t a, int32_t b, int32_t layout, int32_t priority,
                           bool mandatory, bool dfs, int32_t round, int32_t was, bool force) {
  if (!facts_ && !force) return why.made >= 0 ? why.made : make(why.rule, why.instr, why.parent, why.note);
  int32_t id;
  if (why.made >= 0 && records_[why.made].kind == kNone) {
    id = why.made;  // fresh from its rule and not yet a fact: fill it in
  } else if (why.made >= 0) {
    const Record base = records_[why.made];
    id = make(base.rule, base.instr, base.parent, base.note);
  } else {
    id = make(why.rule, why.instr, why.parent, why.note);
  }
  Record& r = records_[id];
  r.kind = kind;
  r.a = a;
  r.b = b;
  r.layout = layout;
  r.priority = priority;
  r.mandatory = mandatory;
  r.dfs = dfs;
  r.round = round;
  r.was = was;
  return id;
}

}  // namespace slcore
