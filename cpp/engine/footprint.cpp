#include "engine/footprint.h"

namespace slcore {

namespace {

template <class T>
int64_t bytes(const std::vector<T>& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(T));
}
int64_t bytes(const Rows& r) { return bytes(r.start) + bytes(r.items); }
int64_t bytes(const Extents& x) { return bytes(x.shape) + bytes(x.start) + bytes(x.items); }

}  // namespace

Footprint footprint(const Walked& w) {
  const Program& p = w.p;
  return {
      {"program.producer", bytes(p.producer)},   {"program.is_tuple", bytes(p.is_tuple)},
      {"program.used", bytes(p.used)},           {"program.elements", bytes(p.elements)},
      {"program.comp", bytes(p.comp)},           {"program.is_root", bytes(p.is_root)},
      {"program.is_while", bytes(p.is_while)},   {"program.operands", bytes(p.operands)},
      {"program.results", bytes(p.results)},     {"program.callees", bytes(p.callees)},
      {"program.root", bytes(p.root)},           {"program.is_func", bytes(p.is_func)},
      {"program.instrs", bytes(p.instrs)},       {"walk.kind", bytes(w.kind)},
      {"walk.captures", bytes(w.captures)},      {"walk.params", bytes(w.params)},
      {"walk.users", bytes(w.users)},            {"walk.use_operand", bytes(w.use_operand)},
  };
}

Footprint footprint(const Engine& e, const std::vector<Plan>& plans) {
  const Facts& f = e.facts;
  const FactsInput& in = f.in;
  int64_t results = bytes(e.results), plan_bytes = 0, events = bytes(e.events), deques = bytes(e.deques);
  for (const ResultConstraint& r : e.results) results += bytes(r.layouts);
  for (const Plan& p : plans) plan_bytes += bytes(p.steps) + bytes(p.own);
  for (const Event& ev : e.events) events += bytes(ev.derived) + bytes(ev.seeds);
  for (const auto& d : e.deques) deques += bytes(d);
  return {
      {"facts.in.is_array", bytes(in.is_array)},
      {"facts.in.rank", bytes(in.rank)},
      {"facts.in.buffer", bytes(in.buffer)},
      {"facts.in.dims", bytes(in.dims)},
      {"facts.in.per_instruction", bytes(in.hlo) + bytes(in.back) + bytes(in.fwd) + bytes(in.active) +
                                       bytes(in.layout_constrained) + bytes(in.rule) + bytes(in.dim)},
      {"facts.in.aliases", bytes(in.aliases)},
      {"facts.in.perm", bytes(in.perm)},
      {"facts.in.per_computation", bytes(in.comp_kind) + bytes(in.caller)},
      {"facts.leaves", bytes(f.leaves)},
      {"facts.op_values", bytes(f.op_values)},
      {"facts.slot_instr", bytes(f.slot_instr)},
      {"facts.per_instruction", bytes(f.n_results) + bytes(f.n_operands) + bytes(f.tshape) + bytes(f.dfs) +
                                    bytes(f.variadic_reduce) + bytes(f.to_user)},
      {"facts.own_buffers", bytes(f.own_buffers)},
      {"facts.arrays", bytes(f.arrays)},
      {"facts.to_operands", bytes(f.to_operands)},
      {"facts.consumers", bytes(f.consumers)},
      {"facts.back_edges", bytes(f.back_edges)},
      {"store.buffers", e.store.buffer_bytes()},
      {"store.operands", e.store.operand_bytes()},
      {"store.order_and_history", e.store.order_bytes()},
      {"provenance.links", e.prov.link_bytes()},
      {"provenance.facts", e.prov.fact_bytes()},
      {"layouts", e.layouts.bytes()},
      {"worklist", e.work.bytes()},
      {"results", results},
      {"plans", plan_bytes},
      {"trace.events", events},
      {"trace.deques", deques},
  };
}

}  // namespace slcore
