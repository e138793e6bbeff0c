// stablehlo_layout._core: the compiled core's Python face.  It only converts:
// Python lists in, Python lists out; the rooms (index, order, store, worklist,
// propagators, ...) hold the logic.  Each bind_*.cpp registers one concern.
#include <nanobind/nanobind.h>

#include "bindings/bind.h"
#include "bindings/core_objects.h"

namespace nb = nanobind;
using namespace slcore_python;

NB_MODULE(_core, m) {
  m.doc() = "The compiled core of stablehlo-layout (see docs/DESIGN.md, the core).";
  bind_mlir(m);
  bind_import_walk(m);
  bind_rewrite_rows(m);
  bind_rewrite_copies(m);
  bind_columns(m);
  bind_index(m);
  nb::class_<Core> engine(m, "Engine");
  bind_propagation(m, engine);
  bind_records(m, engine);
  bind_computation(m);
}
