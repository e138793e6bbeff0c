#include "engine/demands.h"

#include <stdexcept>
#include <string>
#include <unordered_map>

namespace slcore {

namespace {

void need(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("plan: " + what);
}

// The first operand slot the catch-all may constrain: a forwarding op's first
// operands are its results' buffers, nothing to choose there.
int32_t first_free_operand(const Engine& e, int32_t instr) {
  return e.facts.has(instr, kForwards) ? e.p.results.count(instr) : 0;
}

bool catch_all_applies(const Engine& e, int32_t instr) {
  const FactsInput& in = e.facts.in;
  if (in.kind[instr] != kOp || e.facts.has(instr, kTupleOperand)) return false;
  const int32_t* ov = e.facts.op_values.begin(instr);
  for (int32_t n = first_free_operand(e, instr); n < e.facts.op_values.count(instr); ++n) {
    if (in.is_array[ov[n]] && in.rank[ov[n]] > 0) return true;
  }
  return false;
}

}  // namespace

Plan make_plan(const Engine& e, const PlanInput& in) {
  const Program& p = e.p;
  need(in.comp >= 0 && in.comp < p.n_comps(), "no such computation");
  const size_t n = in.instr.size();
  need(in.code.size() == n && in.arg.size() == n && in.rule.size() == n && in.note.size() == n,
       "the step arrays differ in length");
  std::unordered_map<int32_t, size_t> own;
  for (size_t k = 0; k < n; ++k) {
    const int32_t i = in.instr[k];
    need(i >= 0 && i < p.n_instrs() && p.comp[i] == in.comp, "step " + std::to_string(k) + " names an instruction of another computation");
    need(in.code[k] < kStepCodeCount && in.code[k] != kCatchAll, "step " + std::to_string(k) + " has no such code");
    need(own.emplace(i, k).second, "two steps for instruction " + std::to_string(i));
    if (in.code[k] == kAscendingOperand) {
      need(in.arg[k] >= 0 && in.arg[k] < p.operands.count(i), "step " + std::to_string(k) + " names no operand");
    } else if (in.code[k] == kMostMajorDim) {
      need(p.results.count(i) > 0, "step " + std::to_string(k) + " names an instruction without results");
    }
  }
  std::vector<uint8_t> late(p.n_instrs(), 0);
  for (int32_t i : in.late) {
    need(i >= 0 && i < p.n_instrs() && p.comp[i] == in.comp, "a late instruction of another computation");
    late[i] = 1;
  }
  need(n < (1u << 28), "more steps than a plan holds");
  Plan plan;
  plan.catch_all_rule = in.catch_all_rule;
  plan.catch_all_note = in.catch_all_note;
  plan.late_note = in.late_note;
  auto add = [&](int32_t i) {
    auto it = own.find(i);
    if (it != own.end()) {
      const size_t k = it->second;
      if (in.code[k] != kNoDemand) {
        plan.steps.push_back({i, in.code[k], 0, static_cast<uint32_t>(plan.own.size())});
        plan.own.push_back({in.arg[k], in.rule[k], in.note[k]});
      }
    } else if (catch_all_applies(e, i)) {
      plan.steps.push_back({i, kCatchAll, late[i] ? 1u : 0u, 0});
    }
  };
  for (const int32_t* i = p.instrs.begin(in.comp); i != p.instrs.end(in.comp); ++i) {
    if (!late[*i]) add(*i);
  }
  for (int32_t i : in.late) add(i);
  // Kept all run, one plan per computation: without the slack push_back
  // leaves (up to half of each vector; 2.4 MB of 6 at 7k plans).
  plan.steps.shrink_to_fit();
  plan.own.shrink_to_fit();
  return plan;
}

void apply_plan(Engine& e, Plan& plan, int32_t priority) {
  const Program& p = e.p;
  const FactsInput& in = e.facts.in;
  std::vector<int32_t> lays;
  for (Step& s : plan.steps) {
    const int32_t i = s.instr;
    if (s.code == kCatchAll) {
      // A record only where a constraint takes it.
      const Why why{plan.catch_all_rule, i, -1, plan.note(s), -1};
      const int32_t* ov = e.facts.op_values.begin(i);
      for (int32_t n = first_free_operand(e, i); n < e.facts.op_values.count(i); ++n) {
        const int32_t v = ov[n];
        if (in.is_array[v] && in.rank[v] > 0) e.demand_operand(i, n, e.layouts.default_of(in.rank[v]), priority, why);
      }
      continue;
    }
    // The other steps' demands share one origin, as one Origin object would.
    OwnStep& o = plan.own[s.own];
    if (o.made < 0) o.made = e.prov.link(o.rule, i, -1, o.note);
    const Why why{kNoName, -1, -1, kNoName, o.made};
    if (s.code == kRowMajorKernel) {
      lays.clear();
      for (const int32_t* r = e.facts.leaves.begin(i); r != e.facts.leaves.end(i); ++r) {
        lays.push_back(in.is_array[*r] ? e.layouts.default_of(in.rank[*r]) : -1);
      }
      e.set_instruction(lays, i, true, priority, why);
      for (int32_t k = 0; k < p.operands.count(i); ++k) {
        const int32_t v = p.operands.begin(i)[k];
        if (in.is_array[v]) e.set_operand(e.layouts.default_of(in.rank[v]), i, k, true, true, priority, why);
      }
    } else if (s.code == kAscendingOperand) {
      const int32_t v = p.operands.begin(i)[o.arg];
      lays.clear();
      for (int32_t d = 0; d < in.rank[v]; ++d) lays.push_back(d);
      e.set_operand(e.layouts.intern(lays), i, o.arg, true, true, priority, why);
    } else if (s.code == kMostMajorDim) {
      const int32_t r = p.results.begin(i)[0];
      if (!in.is_array[r]) continue;
      lays.clear();
      for (int32_t d = in.rank[r] - 1; d >= 0; --d) {
        if (d != o.arg) lays.push_back(d);
      }
      lays.push_back(o.arg);
      const std::vector<int32_t> result{e.layouts.intern(lays)};
      e.set_instruction(result, i, true, priority, why);
    }
  }
}

}  // namespace slcore
