#include "engine/computation.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace slcore {

namespace {

void need_comp(const Engine& e, int32_t c, const char* what) {
  if (c < 0 || c >= e.p.n_comps()) throw std::invalid_argument(std::string(what) + ": no such computation");
}

}  // namespace

Rows default_buffers(const Engine& e, const std::vector<int64_t>& key, const std::vector<int32_t>& comps) {
  const Program& p = e.p;
  if (static_cast<int32_t>(key.size()) != p.n_values()) {
    throw std::invalid_argument("default_buffers: one buffer id per value");
  }
  const FactsInput& in = e.facts.in;
  Rows out;
  std::vector<int32_t> row;
  for (int32_t c : comps) {
    need_comp(e, c, "default_buffers");
    row.clear();
    for (const int32_t* i = p.instrs.begin(c); i != p.instrs.end(c); ++i) {
      for (const int32_t* r = e.facts.leaves.begin(*i); r != e.facts.leaves.end(*i); ++r) {
        if (in.is_array[*r] && in.buffer[*r] == *r) row.push_back(*r);
      }
    }
    // Buffer ids are distinct within a computation; stable keeps a malformed key deterministic.
    std::stable_sort(row.begin(), row.end(), [&](int32_t a, int32_t b) { return key[a] < key[b]; });
    out.add(row);
  }
  return out;
}

void interface_of(const Engine& e, int32_t comp, std::vector<int32_t>& params, std::vector<int32_t>& results) {
  need_comp(e, comp, "interface_of");
  const Program& p = e.p;
  const FactsInput& in = e.facts.in;
  params.clear();
  results.clear();
  for (const int32_t* q = in.params.begin(comp); q != in.params.end(comp); ++q) {
    params.push_back(e.buffer_layout(in.buffer[p.results.begin(*q)[0]]));
  }
  const int32_t root = p.root[comp];
  if (root < 0) return;
  for (const int32_t* v = p.operands.begin(root); v != p.operands.end(root); ++v) {
    results.push_back(in.is_array[*v] ? e.buffer_layout(in.buffer[*v]) : -1);
  }
}

void lay_out_one_layout_run(Engine& e, const std::vector<int32_t>& comps, Rows& params, Rows& results) {
  std::vector<int32_t> ps, rs;
  for (int32_t c : comps) {
    need_comp(e, c, "lay_out_one_layout_run");
    e.lay_out_trivial(c);
    interface_of(e, c, ps, rs);
    params.add(ps);
    results.add(rs);
  }
}

void pin_parameters(Engine& e, const std::vector<int32_t>& params, const std::vector<int32_t>& layouts,
                    const std::vector<int32_t>& notes, int32_t rule, int32_t priority) {
  if (layouts.size() != params.size() || notes.size() != params.size()) {
    throw std::invalid_argument("pin_parameters: one layout and one note per parameter");
  }
  std::vector<int32_t> one(1);
  for (size_t k = 0; k < params.size(); ++k) {
    const int32_t i = params[k];
    if (i < 0 || i >= e.p.n_instrs() || e.facts.in.kind[i] != kParameter) {
      throw std::invalid_argument("pin_parameters: not a parameter instruction");
    }
    const int32_t made = e.prov.link(rule, i, -1, notes[k]);
    one[0] = layouts[k];
    e.set_instruction(one, i, true, priority, Why{kNoName, -1, -1, kNoName, made});
  }
}

}  // namespace slcore
