// The objects the Python face hands out and takes back: the program index
// (``_core.Index``) and the engine (``_core.Engine``), shared by the bind_*
// files that bind them or take them as arguments.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bindings/columns.h"
#include "engine/demands.h"
#include "engine/index.h"
#include "engine/propagators.h"

namespace slcore_python {

// Hidden, as nanobind's own types are (their objects are fields here); several
// of the module's files share them, so they cannot be in an anonymous namespace.

// One Program per engine run, put in order from the columns the importer
// collected as it walked the module (graph.py's Columns).
struct NB_HIDDEN Index : slcore::Walked {
  Ids rule_of;  // per instruction, its rule's number among the distinct rules
  // The engine built over this index took its uses and captures (Walked's
  // users, use_operand, captures): its facts are built from them once, and
  // nothing reads the index's copy after (4 MB at 170k values, kept all run).
  bool uses_taken = false;
};

// The target's derivations, called back in Python: ``(instr, n, layout[, result])``
// to None or (layout id, rule name id); the rule's own to None or a layout id.
class NB_HIDDEN PyDeriver : public slcore::Deriver {
 public:
  PyDeriver(nb::object back, nb::object fwd, nb::object rule)
      : back_(std::move(back)), fwd_(std::move(fwd)), rule_(std::move(rule)) {}
  bool operand_from_output(int32_t instr, int32_t n, int32_t output, int32_t& layout, int32_t& rule) override {
    return unpack(back_(instr, n, output), layout, rule);
  }
  bool output_from_operand(int32_t instr, int32_t n, int32_t operand, int32_t result, int32_t& layout,
                           int32_t& rule) override {
    return unpack(fwd_(instr, n, operand, result), layout, rule);
  }
  bool rule_operand(int32_t instr, int32_t n, int32_t output, int32_t& layout) override {
    nb::object got = rule_(instr, n, output);
    if (got.is_none()) return false;
    layout = nb::cast<int32_t>(got);
    return true;
  }

 private:
  static bool unpack(nb::object got, int32_t& layout, int32_t& rule) {
    if (got.is_none()) return false;
    auto pair = nb::cast<std::pair<int32_t, int32_t>>(got);
    layout = pair.first;
    rule = pair.second;
    return true;
  }
  nb::object back_, fwd_, rule_;
};

// The engine and the deriver it calls back through.
// The engine, the deriver it calls back through, and the targets' plans (made once per run).
// Hands the heap's free pages back to the system.  glibc's free() returns
// memory only from the top of its heap: what the core frees below live blocks
// stays resident, and what comes next (Python's objects, in arenas of their
// own, and the printer's large tables, mapped afresh) never reuses it, so it
// stacked under the command's peak (~30 MB at 170k instructions).  A few ms.
inline void release_free_pages() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

struct NB_HIDDEN Core {
  // The engine's arrays go first, then their pages (release_free_pages).
  ~Core() {
    e.reset();
    std::vector<slcore::Plan>().swap(plans);
    Ids().swap(value_layouts);
    release_free_pages();
  }
  std::unique_ptr<PyDeriver> deriver;
  std::unique_ptr<slcore::Engine> e;
  std::vector<slcore::Plan> plans;
  Ids value_layouts;  // per value, its layout id once value_layouts ran (-1: not an array)
  // finish() ran: only the store, provenance, layouts and results are left, for reading back.
  bool finished = false;
};

// What only a run reads is gone once it finished: say so rather than read freed arrays.
inline void running(const Core& c) {
  if (c.finished) throw std::logic_error("engine: the run is finished; only reading the store back is left");
}

}  // namespace slcore_python
