#include "engine/order.h"

#include <stdexcept>
#include <utility>

namespace slcore {

std::vector<int32_t> callees_of(const Program& p, int32_t c) {
  std::vector<int32_t> out;
  for (const int32_t* i = p.instrs.begin(c); i != p.instrs.end(c); ++i) {
    const int32_t n = p.callees.count(*i);
    if (n == 0) continue;
    const int32_t* first = p.callees.begin(*i);
    if (p.is_while[*i] && n == 2) {
      out.push_back(first[1]);
      out.push_back(first[0]);
    } else {
      out.insert(out.end(), first, first + n);
    }
  }
  return out;
}

std::vector<int32_t> computation_order(const Program& p) {
  std::vector<uint8_t> seen(p.n_comps(), 0);
  std::vector<int32_t> order;
  struct Frame {
    int32_t comp;
    std::vector<int32_t> todo;
    size_t next = 0;
  };
  auto visit = [&](int32_t c) {
    std::vector<Frame> stack;
    seen[c] = 1;
    stack.push_back({c, callees_of(p, c)});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.todo.size()) {
        const int32_t nxt = top.todo[top.next++];
        if (!seen[nxt]) {
          seen[nxt] = 1;
          stack.push_back({nxt, callees_of(p, nxt)});  // invalidates ``top``
        }
      } else {
        order.push_back(top.comp);
        stack.pop_back();
      }
    }
  };
  for (int32_t c = 0; c < p.n_comps(); ++c) {
    if (p.is_func[c] && c != p.entry && p.root[c] >= 0 && !seen[c]) visit(c);
  }
  if (!seen[p.entry]) visit(p.entry);
  return order;
}

namespace {

// ``done`` has a flag per instruction of the program, all clear; only
// instructions of ``c`` are marked, and they are cleared again on return, so
// one buffer serves every computation without a pass over the whole program.
void post_order_into(const Program& p, int32_t c, std::vector<uint8_t>& done, std::vector<int32_t>& order) {
  int32_t n_done = 0;
  std::vector<std::pair<int32_t, int32_t>> stack;  // (instruction, next operand)
  for (const int32_t* s = p.instrs.begin(c); s != p.instrs.end(c); ++s) {
    const int32_t start = *s;
    if (done[start]) continue;
    if (!p.is_root[start]) {
      bool any_used = false;
      for (const int32_t* r = p.results.begin(start); r != p.results.end(start); ++r) {
        if (p.used[*r]) {
          any_used = true;
          break;
        }
      }
      if (any_used) continue;
    }
    done[start] = 1;
    ++n_done;
    stack.emplace_back(start, 0);
    while (!stack.empty()) {
      auto& [ins, next] = stack.back();
      bool descended = false;
      while (next < p.operands.count(ins)) {
        const int32_t producer = p.producer[p.operands.begin(ins)[next++]];
        if (!done[producer] && p.comp[producer] == c) {
          done[producer] = 1;
          ++n_done;
          stack.emplace_back(producer, 0);  // invalidates ``ins`` and ``next``
          descended = true;
          break;
        }
      }
      if (!descended) {
        order.push_back(stack.back().first);
        stack.pop_back();
      }
    }
  }
  if (n_done < p.instrs.count(c)) {
    for (const int32_t* i = p.instrs.begin(c); i != p.instrs.end(c); ++i) {
      if (!done[*i]) order.push_back(*i);
    }
  }
  for (const int32_t* i = p.instrs.begin(c); i != p.instrs.end(c); ++i) done[*i] = 0;
}

}  // namespace

std::vector<int32_t> post_order(const Program& p, int32_t c) {
  if (c < 0 || c >= p.n_comps()) throw std::out_of_range("post_order: no such computation");
  std::vector<uint8_t> done(p.n_instrs(), 0);
  std::vector<int32_t> order;
  post_order_into(p, c, done, order);
  return order;
}

std::vector<int64_t> number_buffers(const Program& p, const std::vector<int32_t>& order,
                                    const std::vector<uint8_t>& skip) {
  if (static_cast<int32_t>(skip.size()) != p.n_comps()) {
    throw std::invalid_argument("number_buffers: one skip flag per computation");
  }
  std::vector<int64_t> key(p.n_values(), 0);
  int64_t next = 0;
  std::vector<int32_t> leaves, instrs;
  std::vector<uint8_t> done(p.n_instrs(), 0);
  for (int32_t c : order) {
    if (c < 0 || c >= p.n_comps()) throw std::out_of_range("number_buffers: no such computation");
    if (skip[c]) continue;
    instrs.clear();
    post_order_into(p, c, done, instrs);
    for (int32_t i : instrs) {
      for (const int32_t* r = p.results.begin(i); r != p.results.end(i); ++r) {
        if (!p.is_tuple[*r]) {
          key[*r] = next + 1;  // the value, then its only shape index: itself
          next += 2;
          continue;
        }
        key[*r] = next++;
        leaves.clear();
        append_leaves(p, *r, leaves);
        for (int32_t leaf : leaves) key[leaf] = next++;
      }
    }
  }
  return key;
}

}  // namespace slcore
