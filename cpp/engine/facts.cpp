#include "engine/facts.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "engine/reshape.h"

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
  for (int32_t v = 0; v < nv; ++v) {
    const int32_t row = in.dims.shape[v];
    need(row >= 0 && row + 1 < static_cast<int32_t>(in.dims.start.size()) &&
             in.dims.start[row] <= in.dims.start[row + 1] &&
             in.dims.start[row + 1] <= static_cast<int32_t>(in.dims.items.size()),
         "a value's shape row");
  }
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
  // Exact sizes up front: the facts are the core's largest arrays, and a
  // vector grown by doubling holds up to twice its items (and both copies
  // while it moves).
  const size_t total_slots = p.operands.items.size() + in.captures.items.size();
  f.op_values.items.reserve(total_slots);
  f.op_values.start.reserve(static_cast<size_t>(ni) + 1);
  f.slot_instr.reserve(total_slots);
  for (Rows* r : {&f.own_buffers, &f.arrays, &f.to_operands}) r->start.reserve(static_cast<size_t>(ni) + 1);
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
    f.slot_instr.insert(f.slot_instr.end(), n_slots, i);
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
  // Per buffer, the uses of every value that aliases it, in value order:
  // counted, then placed (a vector per buffer would cost a heap block each).
  auto offered = [&](int32_t v) { return in.is_array[v] && in.active[p.producer[v]] && in.rank[v] != 0; };
  auto offered_to = [&](int32_t k) {
    const int32_t user = in.users.items[k], n = in.use_operand.items[k];
    return !(in.kind[user] == kRootInstr || (f.has(user, kForwards) && n < f.n_results[user]));
  };
  f.consumers.start.assign(static_cast<size_t>(nv) + 1, 0);
  for (int32_t v = 0; v < nv; ++v) {
    if (!offered(v)) continue;
    for (int32_t k = in.users.start[v]; k < in.users.start[v + 1]; ++k) f.consumers.start[in.buffer[v] + 1] += 2 * offered_to(k);
  }
  for (int32_t b = 0; b < nv; ++b) f.consumers.start[b + 1] += f.consumers.start[b];
  f.consumers.items.resize(f.consumers.start[nv]);
  {
    std::vector<int32_t> next(f.consumers.start.begin(), f.consumers.start.end() - 1);
    for (int32_t v = 0; v < nv; ++v) {
      if (!offered(v)) continue;
      for (int32_t k = in.users.start[v]; k < in.users.start[v + 1]; ++k) {
        if (!offered_to(k)) continue;
        int32_t& at = next[in.buffer[v]];
        f.consumers.items[at++] = in.users.items[k];
        f.consumers.items[at++] = in.use_operand.items[k];
      }
    }
  }
  // Per buffer, the while-body parameters its value feeds back into.
  std::vector<int32_t> owner, item;
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
      owner.push_back(buf);
      item.push_back(param_value);
      owner.push_back(buf);
      item.push_back(in.caller[c]);
    }
  }
  f.back_edges = rows_from_pairs(nv, owner, item, "back edges");
  // What only the build reads goes now: the index holds these rows as well.
  // The parameters stay: the computation room reads a computation's interface
  // from them during the run (computation.cpp interface_of).
  f.in.users = Rows();
  f.in.use_operand = Rows();
  f.in.captures = Rows();
  return f;
}

void Facts::release_for_readers() {
  Facts kept;
  kept.op_values.start = std::move(op_values.start);
  kept.slot_instr = std::move(slot_instr);
  *this = std::move(kept);  // every other array goes with the old value
}

}  // namespace slcore
