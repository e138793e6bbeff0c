#include "engine/propagators.h"

#include <algorithm>

#include "engine/reshape.h"

namespace slcore {

namespace {
constexpr int32_t kDefaultPriority = -2;  // a fallback computation layout's
}  // namespace

Engine::Engine(const Program& p_, Facts f, bool exact, bool tracing, Deriver* deriver, bool provenance)
    : p(p_),
      facts(std::move(f)),
      prov(exact, provenance),
      store(p_.n_values(), static_cast<int32_t>(facts.op_values.items.size())),
      tracing_(tracing),
      deriver_(deriver) {}

int32_t Engine::origin_of(Ref r) const {
  if (r.kind == kBuffer) return store.buffer(r.id).origin;
  if (r.kind == kOperand) return store.operand(r.id).origin;
  return results[r.id].origin;
}

void Engine::push(Ref r) {
  bool dfs;
  int32_t priority;
  if (r.kind == kBuffer) {
    dfs = store.buffer(r.id).dfs;
    priority = store.buffer(r.id).priority;
  } else if (r.kind == kOperand) {
    dfs = store.operand(r.id).dfs;
    priority = store.operand(r.id).priority;
  } else {
    dfs = true;
    priority = results[r.id].priority;
  }
  work.add(r, dfs, priority, [this](Ref x) {
    if (x.kind == kBuffer) return store.buffer(x.id).priority;
    if (x.kind == kOperand) return store.operand(x.id).priority;
    return results[x.id].priority;
  });
}

void Engine::set_buffer(int32_t layout, int32_t b, bool mandatory, bool dfs, int32_t priority, const Why& why) {
  const FactsInput& in = facts.in;
  if (!in.is_array[b]) throw DemandError(DemandError::kNotArray, b, -1, layout);
  if (layouts.rank(layout) != in.rank[b]) throw DemandError(DemandError::kWrongRankBuffer, b, -1, layout);
  const int32_t producer = p.producer[b];
  if (!store.update_buffer(b, layout, mandatory, dfs, priority, !facts.tshape[producer], why, round, prov)) return;
  push({kBuffer, b});
  const int32_t n_aliases = in.aliases.count(producer) / 2;
  if (n_aliases == 0) return;
  const int32_t* lv = facts.leaves.begin(producer);
  const int32_t* found = std::find(lv, facts.leaves.end(producer), b);
  if (found == facts.leaves.end(producer)) return;
  const int32_t position = static_cast<int32_t>(found - lv);
  const int32_t* pairs = in.aliases.begin(producer);
  for (int32_t k = 0; k < n_aliases; ++k) {
    if (pairs[2 * k] == position) {
      set_operand(layout, producer, pairs[2 * k + 1], mandatory, dfs, priority,
                  Why{kCustomCallAlias, producer, store.buffer(b).origin});
    }
  }
}

void Engine::set_operand(int32_t layout, int32_t instr, int32_t n, bool mandatory, bool dfs, int32_t priority,
                         const Why& why) {
  const FactsInput& in = facts.in;
  const int32_t s = slot(instr, n);
  const int32_t v = facts.op_values.items[s];
  if (!in.is_array[v] || in.rank[v] == 0) return;
  if (layouts.rank(layout) != in.rank[v]) throw DemandError(DemandError::kWrongRankOperand, instr, n, layout);
  if (facts.has(instr, kForwards) && n < facts.n_results[instr]) return;
  if (!mandatory) {
    // XLA lets operand 0 decide a dynamic-update-slice, and a reshape of a
    // dynamic-slice, by weakening the other demands.
    const uint8_t hlo = in.hlo[instr];
    bool weaken = false;
    if (hlo == kDynamicUpdateSliceOp && n > 0 && priority > kDefaultPriority) {
      weaken = true;
    } else if (hlo == kReshapeOp && facts.op_values.count(instr) > 0 &&
               in.hlo[p.producer[facts.op_values.begin(instr)[0]]] == kDynamicSliceOp) {
      weaken = true;
    }
    if (weaken) {
      dfs = false;
      --priority;
      weakened = true;
    }
  }
  if (store.update_operand(s, instr, n, layout, mandatory, dfs, priority, why, round, prov)) push({kOperand, s});
}

void Engine::demand_operand(int32_t instr, int32_t n, int32_t layout, int32_t priority, const Why& why) {
  const int32_t s = slot(instr, n);
  if (store.has_operand(s)) return;
  store.update_operand(s, instr, n, layout, true, true, priority, why, round, prov);
  push({kOperand, s});
}

void Engine::set_instruction(const std::vector<int32_t>& lays, int32_t instr, bool mandatory, int32_t priority,
                             const Why& why) {
  const FactsInput& in = facts.in;
  const int32_t n_leaves = facts.leaves.count(instr);
  const int32_t* lv = facts.leaves.begin(instr);
  const int32_t n = std::min<int32_t>(n_leaves, static_cast<int32_t>(lays.size()));
  for (int32_t k = 0; k < n; ++k) {
    const int32_t r = lv[k];
    if (lays[k] >= 0 && in.is_array[r] && in.buffer[r] == r) set_buffer(lays[k], r, mandatory, true, priority, why);
  }
  // XLA's SetInstructionLayout: an array-shaped op that cannot change layout
  // takes its same-rank operands along (while and conditional excepted).
  if (facts.has(instr, kCanChange) || facts.has(instr, kTupleOperand) || n_leaves != 1 || lays.empty() ||
      lays[0] < 0 || !in.is_array[lv[0]]) {
    return;
  }
  const int32_t lay = lays[0], rank = layouts.rank(lay);
  // The derived demands name the given origin as their parent once it is a fact.
  const Why same{kSameLayoutOperand, instr, prov.has_fact(why.made) ? why.made : -1,
                 why.made >= 0 ? prov.note(why.made) : why.note};
  for (int32_t k = 0; k < p.operands.count(instr); ++k) {
    const int32_t v = p.operands.begin(instr)[k];
    if (in.is_array[v] && in.rank[v] == rank && rank > 0) set_operand(lay, instr, k, mandatory, true, priority, same);
  }
}

void Engine::push_result(int32_t comp, std::vector<int32_t> lays, int32_t priority, const Why& why) {
  const int32_t id = static_cast<int32_t>(results.size());
  // A result constraint's record is always a fact: explain names it even after fast runs.
  const int32_t origin = prov.attach(why, kResult, comp, -1, id, priority, true, true, round, -1, true);
  results.push_back({comp, std::move(lays), priority, origin});
  push({kResult, id});
}

void Engine::propagate() {
  auto dfs_of = [this](Ref r) {
    if (r.kind == kBuffer) return store.buffer(r.id).dfs != 0;
    if (r.kind == kOperand) return store.operand(r.id).dfs != 0;
    return true;
  };
  work.drain(dfs_of);
  std::vector<int32_t> seeds;
  bool first = true;
  if (tracing_) {
    for (const Ref& r : work.work()) seeds.push_back(origin_of(r));
  }
  const FactsInput& in = facts.in;
  while (!work.empty()) {
    const Ref c = work.pop();
    if (c.kind == kOperand) {
      const int32_t s = c.id;
      const int32_t instr = facts.slot_instr[s], n = facts.slot_operand(s);
      const int32_t ov = facts.op_values.items[s];
      if (in.rank[ov] > 1 && in.is_array[ov]) {
        const Slot& cur = store.operand(s);
        use_to_defs(ov, cur.layout, cur.priority, s);
        if (facts.to_user[instr] != kToNothing && n < facts.n_operands[instr]) operand_to_user(s, ov);
      }
    } else if (c.kind == kBuffer) {
      const int32_t b = c.id;
      if (in.is_array[b]) {
        if (facts.to_operands.count(p.producer[b]) > 0) buffer_to_operands(b);
        // The producer's layout is offered to every consumer (PropagateBufferConstraintToUses).
        const BufferSlot& cur = store.buffer(b);
        const int32_t layout = cur.layout, priority = cur.priority, parent = cur.origin;
        const int32_t buf = in.buffer[b];
        for (const int32_t* x = facts.consumers.begin(buf); x != facts.consumers.end(buf); x += 2) {
          if (!store.has_operand(slot(x[0], x[1]))) {  // a non-mandatory demand never replaces one
            set_operand(layout, x[0], x[1], false, true, priority, Why{kProducerLayout, x[0], parent});
          }
        }
        for (const int32_t* x = facts.back_edges.begin(buf); x != facts.back_edges.end(buf); x += 2) {
          set_buffer(layout, x[0], false, true, current_priority, Why{kWhileBackEdge, x[1], parent});
        }
      }
    } else {
      propagate_result(c.id);
    }
    if (tracing_) {
      Event e{origin_of(c), {}, {}, first};
      for (const Ref& r : work.added()) e.derived.push_back(origin_of(r));
      if (first) e.seeds = std::move(seeds);
      first = false;
      events.push_back(std::move(e));
    }
    work.drain(dfs_of);
    if (tracing_ && watch) deques.emplace_back(work.work().begin(), work.work().end());
  }
}

// The origin parent a propagator names: the slot's record as it is now.
#define OPERAND_ORIGIN(s) (store.operand(s).origin)

void Engine::buffer_to_operands(int32_t b) {
  const FactsInput& in = facts.in;
  const int32_t instr = p.producer[b];
  const int32_t priority = current_priority;
  const int32_t layout = store.buffer(b).layout;
  const int32_t* ops = facts.op_values.begin(instr);
  if (!facts.has(instr, kCanChange)) {
    for (const int32_t* k = facts.to_operands.begin(instr); k != facts.to_operands.end(instr); ++k) {
      const int32_t n = *k, ov = ops[n];
      if (in.rank[ov] == in.rank[b]) {
        const int32_t s = slot(instr, n);
        if (store.has_operand(s) &&
            (store.operand(s).layout == layout || store.operand(s).priority > priority)) {
          continue;
        }
        set_operand(layout, instr, n, true, true, priority,
                    Why{kSameLayoutOperand, instr, store.buffer(b).origin});
      } else if (in.hlo[instr] == kBitcastConvertOp) {
        set_operand(bitcast_convert_operand(layout, in.rank[ov]), instr, n, true, true, priority,
                    Why{kBitcastConvertRankChange, instr, store.buffer(b).origin});
      }
    }
    return;
  }
  if (facts.has(instr, kBroadcast)) {
    for (const int32_t* k = facts.to_operands.begin(instr); k != facts.to_operands.end(instr); ++k) {
      int32_t lay;
      const bool got = in.back[instr] == kBackBroadcast ? broadcast_operand(instr, *k, layout, lay)
                                                        : deriver_->rule_operand(instr, *k, layout, lay);
      if (got) {
        set_operand(lay, instr, *k, true, facts.dfs[instr], priority,
                    Why{kBroadcastOperand, instr, store.buffer(b).origin});
      }
    }
  } else if (!facts.tshape[instr]) {
    for (const int32_t* k = facts.to_operands.begin(instr); k != facts.to_operands.end(instr); ++k) {
      int32_t lay = -1, rule = kTransposeBitcast;
      bool got = false;
      if (in.back[instr] == kBackTranspose) {
        lay = transpose_operand(instr, layout);
        got = true;
      } else if (in.back[instr] == kBackReshape) {
        rule = kReshapeBitcast;
        got = *k == 0 && reshape_layout(p.results.begin(instr)[0], layout, p.operands.begin(instr)[0], lay);
      } else if (in.back[instr] == kBackAskTarget) {
        got = deriver_->operand_from_output(instr, *k, layout, lay, rule);
      }
      if (got) {
        set_operand(lay, instr, *k, facts.has(instr, kAlwaysBackward), facts.dfs[instr], priority,
                    Why{rule, instr, store.buffer(b).origin});
      }
    }
  }
}

void Engine::operand_to_user(int32_t s, int32_t ov) {
  const FactsInput& in = facts.in;
  const int32_t instr = facts.slot_instr[s], n = facts.slot_operand(s);
  const uint8_t step = facts.to_user[instr];
  const int32_t n_leaves = facts.leaves.count(instr);
  const int32_t* lv = facts.leaves.begin(instr);
  const int32_t n_aliases = in.aliases.count(instr) / 2;
  if (n_aliases > 0) {
    // A custom call's output aliased to this operand follows it.
    const int32_t* pairs = in.aliases.begin(instr);
    for (int32_t k = 0; k < n_aliases; ++k) {
      const int32_t out = pairs[2 * k];
      if (pairs[2 * k + 1] == n && out < n_leaves && in.is_array[lv[out]]) {
        set_buffer(store.operand(s).layout, lv[out], facts.has(instr, kAlwaysForward), facts.dfs[instr],
                   store.operand(s).priority, Why{kCustomCallAlias, instr, OPERAND_ORIGIN(s)});
      }
    }
  }
  if (step == kToStop || in.layout_constrained[instr]) return;
  if (step == kToAllReduce) {
    const int32_t r = n_leaves > 1 ? lv[n] : lv[0];
    set_buffer(store.operand(s).layout, r, true, true, current_priority,
               Why{kAllReduceOperand, instr, OPERAND_ORIGIN(s)});
    if (facts.has(instr, kCanChange) && facts.tshape[instr]) return;
  }
  if (facts.has(instr, kForwards) && n < facts.n_results[instr]) return;
  const int32_t layout = store.operand(s).layout, priority = store.operand(s).priority;
  if (facts.has(instr, kToSiblings)) {
    if (in.hlo[instr] == kConcatenateOp) {
      const int32_t dim = in.dim[instr];
      const int64_t mine = in.dims.begin(ov)[dim];
      for (const int32_t* o = p.operands.begin(instr); o != p.operands.end(instr); ++o) {
        const int64_t other = in.dims.begin(*o)[dim];
        if (mine < 0 || (other >= 0 && other > mine)) return;
      }
    }
    const int32_t rank = in.rank[ov];
    const int32_t* ops = facts.op_values.begin(instr);
    for (const int32_t* m = facts.arrays.begin(instr); m != facts.arrays.end(instr); ++m) {
      if (*m == n || in.rank[ops[*m]] != rank) continue;
      const int32_t t = slot(instr, *m);
      if (store.has_operand(t) && (store.operand(t).layout == layout || store.operand(t).priority > priority)) continue;
      set_operand(layout, instr, *m, true, true, priority, Why{kSameLayoutSibling, instr, OPERAND_ORIGIN(s)});
    }
    for (const int32_t* rv = facts.own_buffers.begin(instr); rv != facts.own_buffers.end(instr); ++rv) {
      if (in.rank[*rv] != rank) continue;
      if (store.has_buffer(*rv)) {
        const BufferSlot& cur = store.buffer(*rv);
        if (cur.layout == layout && cur.mandatory && cur.dfs && cur.priority >= priority) continue;
      }
      set_buffer(layout, *rv, true, true, priority, Why{kSameLayoutResult, instr, OPERAND_ORIGIN(s)});
    }
    return;
  }
  const uint8_t fwd = in.fwd[instr];
  if (fwd == kFwdNone) return;
  for (int32_t k = 0; k < p.results.count(instr); ++k) {
    const int32_t r = p.results.begin(instr)[k];
    if (!in.is_array[r] || in.rank[r] <= 1 || in.buffer[r] != r) continue;
    int32_t lay = -1, rule = kTransposeBitcast;
    bool got;
    if (fwd == kFwdTranspose) {
      lay = transpose_output(instr, layout);
      got = true;
    } else if (fwd == kFwdReshape) {
      rule = kReshapeBitcast;
      got = n == 0 && reshape_layout(p.operands.begin(instr)[0], layout, r, lay);
    } else {
      got = deriver_->output_from_operand(instr, n, layout, k, lay, rule);
    }
    if (got) {
      set_buffer(lay, r, facts.has(instr, kAlwaysForward), facts.dfs[instr], priority,
                 Why{rule, instr, OPERAND_ORIGIN(s)});
    }
  }
}

void Engine::use_to_defs(int32_t v, int32_t layout, int32_t priority, int32_t s) {
  // XLA's PropagateUseConstraintToDefs: a demand on a use asks the producer for the same layout.
  // ``s``: the operand slot demanding, or -(result constraint + 1).
  const int32_t buf = facts.in.buffer[v];
  const int32_t producer = p.producer[buf];
  if (facts.variadic_reduce[producer]) return;  // XLA never lets a variadic reduce's outputs take use demands
  if (store.has_buffer(buf)) {
    const BufferSlot& cur = store.buffer(buf);
    // A non-mandatory request needs a higher priority (or to turn on DFS).
    if (priority <= cur.priority && (cur.dfs || cur.layout != layout)) return;
  }
  const int32_t parent = s >= 0 ? store.operand(s).origin : results[-s - 1].origin;
  set_buffer(layout, buf, false, true, priority, Why{kConsumerDemand, producer, parent});
}

void Engine::propagate_result(int32_t r) {
  const FactsInput& in = facts.in;
  const int32_t root = p.root[results[r].comp];
  const int32_t n = std::min<int32_t>(p.operands.count(root), static_cast<int32_t>(results[r].layouts.size()));
  for (int32_t k = 0; k < n; ++k) {
    const int32_t v = p.operands.begin(root)[k], lay = results[r].layouts[k];
    if (lay < 0 || !in.is_array[v] || in.rank[v] <= 1) continue;
    use_to_defs(v, lay, current_priority, -r - 1);
  }
}

void Engine::lay_out_defaults(const std::vector<int32_t>& buffers) {
  for (int32_t b : buffers) {
    if (store.has_buffer(b)) continue;
    set_buffer(layouts.default_of(facts.in.rank[b]), b, false, true, current_priority,
               Why{kDefaultLayout, p.producer[b], -1});
    propagate();
  }
}

void Engine::lay_out_trivial(int32_t comp) {
  const FactsInput& in = facts.in;
  for (const int32_t* i = p.instrs.begin(comp); i != p.instrs.end(comp); ++i) {
    for (const int32_t* r = facts.leaves.begin(*i); r != facts.leaves.end(*i); ++r) {
      if (in.is_array[*r] && in.buffer[*r] == *r) {
        store.put_buffer(*r, layouts.default_of(in.rank[*r]), true, true, current_priority,
                         Why{kOnlyLayout, p.producer[*r], -1}, round, prov);
      }
    }
  }
}

// --- the built-in derivations (rules.py names them; layout.py has their Python twins) ---

int32_t Engine::bitcast_convert_operand(int32_t output, int32_t operand_rank) {
  // A rank-changing bitcast-convert splits or merges the last dimension, most minor.
  const int32_t rank = layouts.rank(output);
  scratch_.clear();
  if (operand_rank < rank) {
    for (const int32_t* d = layouts.begin(output); d != layouts.end(output); ++d) {
      if (*d != rank - 1) scratch_.push_back(*d);
    }
  } else {
    scratch_.push_back(operand_rank - 1);
    scratch_.insert(scratch_.end(), layouts.begin(output), layouts.end(output));
  }
  return layouts.intern(scratch_);
}

int32_t Engine::transpose_operand(int32_t instr, int32_t output) {
  const int32_t* perm = facts.in.perm.begin(instr);
  scratch_.clear();
  for (const int32_t* d = layouts.begin(output); d != layouts.end(output); ++d) scratch_.push_back(perm[*d]);
  return layouts.intern(scratch_);
}

int32_t Engine::transpose_output(int32_t instr, int32_t operand) {
  const int32_t* perm = facts.in.perm.begin(instr);
  const int32_t rank = facts.in.perm.count(instr);
  std::vector<int32_t> inverse(rank);
  for (int32_t i = 0; i < rank; ++i) inverse[perm[i]] = i;
  scratch_.clear();
  for (const int32_t* d = layouts.begin(operand); d != layouts.end(operand); ++d) scratch_.push_back(inverse[*d]);
  return layouts.intern(scratch_);
}

bool Engine::reshape_layout(int32_t from, int32_t layout, int32_t to, int32_t& out) {
  const Extents& dims = facts.in.dims;
  if (!reshape_derivable(dims.begin(from), dims.count(from), dims.begin(to), dims.count(to))) return false;
  std::vector<int32_t> given(layouts.begin(layout), layouts.end(layout));
  if (!align_layouts(dims.of(from), given, dims.of(to), scratch_)) return false;
  out = layouts.intern(scratch_);
  return true;
}

bool Engine::broadcast_operand(int32_t instr, int32_t n, int32_t output, int32_t& layout) {
  // The output layout restricted to the broadcast dimensions, renumbered.
  if (n != 0) return false;
  const int32_t* dims = facts.in.perm.begin(instr);
  const int32_t count = facts.in.perm.count(instr);
  scratch_.clear();
  for (const int32_t* d = layouts.begin(output); d != layouts.end(output); ++d) {
    for (int32_t j = 0; j < count; ++j) {
      if (dims[j] == *d) {
        scratch_.push_back(j);
        break;
      }
    }
  }
  layout = layouts.intern(scratch_);
  return true;
}

}  // namespace slcore
