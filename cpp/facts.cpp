#include "facts.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "reshape.h"

namespace slcore {

namespace {

void need(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("facts: ") + what + " has the wrong length");
}


}  // namespace

Facts build_facts(const Program& p, FactsInput given) {
  Facts f;
  f.in = std::move(given);
  const FactsInput& in = f.in;
  const int32_t nv = p.n_values(), ni = p.n_instrs(), nc = p.n_comps();
  need(static_cast<int32_t>(in.is_array.size()) == nv && static_cast<int32_t>(in.rank.size()) == nv &&
           static_cast<int32_t>(in.buffer.size()) == nv && in.dims.size() == nv && in.users.size() == nv &&
           in.use_operand.size() == nv,
       "a value array");
  need(static_cast<int32_t>(in.kind.size()) == ni && static_cast<int32_t>(in.hlo.size()) == ni &&
           static_cast<int32_t>(in.back.size()) == ni && static_cast<int32_t>(in.fwd.size()) == ni &&
           static_cast<int32_t>(in.active.size()) == ni && static_cast<int32_t>(in.rule.size()) == ni &&
           static_cast<int32_t>(in.dim.size()) == ni && static_cast<int32_t>(in.layout_constrained.size()) == ni &&
           in.captures.size() == ni && in.aliases.size() == ni && in.perm.size() == ni,
       "an instruction array");
  need(static_cast<int32_t>(in.comp_kind.size()) == nc && static_cast<int32_t>(in.caller.size()) == nc &&
           in.params.size() == nc,
       "a computation array");
  f.leaves = shape_indices(p);
  f.n_results.assign(ni, 0);
  f.n_operands.assign(ni, 0);
  f.tshape.assign(ni, 0);
  f.dfs.assign(ni, 0);
  f.variadic_reduce.assign(ni, 0);
  f.to_user.assign(ni, kToNothing);
  std::vector<int32_t> row;
  for (int32_t i = 0; i < ni; ++i) {
    // Operand slots exist for every instruction; only active ones are read.
    for (const int32_t* v = p.operands.begin(i); v != p.operands.end(i); ++v) f.op_values.items.push_back(*v);
    for (const int32_t* v = in.captures.begin(i); v != in.captures.end(i); ++v) f.op_values.items.push_back(*v);
    const int32_t n_slots = static_cast<int32_t>(f.op_values.items.size()) - f.op_values.start.back();
    for (int32_t n = 0; n < n_slots; ++n) {
      f.slot_instr.push_back(i);
      f.slot_operand.push_back(n);
    }
    f.op_values.start.push_back(static_cast<int32_t>(f.op_values.items.size()));
    if (!in.active[i]) {
      f.own_buffers.add({});
      f.arrays.add({});
      f.to_operands.add({});
      continue;
    }
    const uint8_t kind = in.kind[i];
    const int32_t n_leaves = f.leaves.count(i);
    const int32_t* lv = f.leaves.begin(i);
    bool ts;
    if (kind == kRootInstr) {
      ts = false;
    } else if (kind == kParameter) {
      const uint8_t ck = in.comp_kind[p.comp[i]];
      ts = ck == kBodyComp || ck == kCondComp || ck == kBranchComp;
    } else {
      if (in.hlo[i] == kReshapeOp) {
        const int32_t src = p.operands.begin(i)[0], dst = p.results.begin(i)[0];
        f.dfs[i] = in.dims.count(src) == 1 ||
                   reshape_only_size1_change(in.dims.begin(src), in.dims.count(src), in.dims.begin(dst),
                                             in.dims.count(dst));
      } else {
        f.dfs[i] = f.has(i, kRuleDfs);
      }
      ts = n_leaves != 1 || p.results.begin(i)[0] != lv[0] || in.hlo[i] == kWhileOp;
    }
    f.tshape[i] = ts;
    f.n_results[i] = p.results.count(i);
    const int32_t nops = p.operands.count(i);
    f.n_operands[i] = nops;
    f.variadic_reduce[i] = n_leaves > 1 && in.hlo[i] == kReduceOp;
    row.clear();
    bool scalar_results = true;
    for (int32_t k = 0; k < n_leaves; ++k) {
      const int32_t r = lv[k];
      if (in.is_array[r] && in.buffer[r] == r) row.push_back(r);
      if (in.is_array[r] && in.rank[r] > 1) scalar_results = false;
    }
    f.own_buffers.add(row);
    row.clear();
    for (int32_t n = 0; n < nops; ++n) {
      const int32_t v = p.operands.begin(i)[n];
      if (in.rank[v] > 1 && in.is_array[v]) row.push_back(n);
    }
    f.arrays.add(row);
    const bool cannot_change = !f.has(i, kCanChange);
    if (kind == kParameter || kind == kRootInstr || (cannot_change && f.has(i, kTupleOperand)) || scalar_results) {
      f.to_operands.add({});
    } else {
      f.to_operands.add(row);
    }
    if (kind == kRootInstr) {
      f.to_user[i] = kToNothing;
    } else if (f.has(i, kTupleOperand)) {
      f.to_user[i] = kToStop;
    } else if (in.hlo[i] == kAllReduceOp) {
      f.to_user[i] = kToAllReduce;
    } else if (!cannot_change && ts && in.hlo[i] != kReduceOp) {
      f.to_user[i] = kToStop;
    } else {
      f.to_user[i] = kToGo;
    }
  }
  // Per buffer, the uses of every value that aliases it, in value order.
  std::vector<std::vector<int32_t>> consumers(nv);
  for (int32_t v = 0; v < nv; ++v) {
    if (!in.is_array[v] || !in.active[p.producer[v]] || in.rank[v] == 0) continue;
    std::vector<int32_t>& slots = consumers[in.buffer[v]];
    for (int32_t k = in.users.start[v]; k < in.users.start[v + 1]; ++k) {
      const int32_t user = in.users.items[k], n = in.use_operand.items[k];
      if (in.kind[user] == kRootInstr || (f.has(user, kForwards) && n < f.n_results[user])) continue;
      slots.push_back(user);
      slots.push_back(n);
    }
  }
  for (const auto& slots : consumers) f.consumers.add(slots);
  // Per buffer, the while-body parameters its value feeds back into.
  std::vector<std::vector<int32_t>> back(nv);
  for (int32_t c = 0; c < nc; ++c) {
    if (in.comp_kind[c] != kBodyComp || in.caller[c] < 0 || p.root[c] < 0) continue;
    std::vector<std::tuple<int32_t, int32_t, int32_t, int32_t>> found;
    const int32_t root = p.root[c];
    for (int32_t k = 0; k < p.operands.count(root); ++k) {
      const int32_t v = p.operands.begin(root)[k];
      if (k < in.params.count(c) && in.is_array[v] && p.comp[p.producer[in.buffer[v]]] == c) {
        const int32_t param = in.params.begin(c)[k];
        found.emplace_back(in.buffer[v], v, k, p.results.begin(param)[0]);
      }
    }
    std::sort(found.begin(), found.end());
    for (const auto& [buf, v, k, param_value] : found) {
      back[buf].push_back(param_value);
      back[buf].push_back(in.caller[c]);
    }
  }
  for (const auto& b : back) f.back_edges.add(b);
  return f;
}

}  // namespace slcore
