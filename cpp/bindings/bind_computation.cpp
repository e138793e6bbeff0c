// The per-computation steps that need no Python (engine/computation.h), on an engine.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <vector>

#include "bindings/bind.h"
#include "bindings/columns.h"
#include "bindings/core_objects.h"
#include "engine/computation.h"

namespace nb = nanobind;

namespace slcore_python {

void bind_computation(nb::module_& m) {
  // -- the per-computation steps (engine/computation.h), on an engine
  m.def(
      "default_buffers",
      [](const Core& c, nb::handle key, const Ids& comps) {
        return packed_rows(slcore::default_buffers(*c.e, column<int64_t>(key, 'q', "default_buffers"), comps));
      },
      "Per computation of comps, its array buffers in buffer-id order: (start, items) as int32 bytes; "
      "key: number_buffers' answer as an array('q').");
  m.def(
      "lay_out_one_layout_run",
      [](Core& c, const Ids& comps) {
        slcore::Rows params, results;
        slcore::lay_out_one_layout_run(*c.e, comps, params, results);
        return nb::make_tuple(rows_pair(params), rows_pair(results));
      },
      "Lays out each computation of comps (one layout per array); their interfaces as rows of layout ids.");
  m.def(
      "pin_parameters",
      [](Core& c, const Ids& params, const Ids& layouts, const Ids& notes, int32_t rule, int32_t priority) {
        slcore::pin_parameters(*c.e, params, layouts, notes, rule, priority);
      },
      "Step 1 for parameters: each takes its layout, mandatory, from a record of its own (rule, it, note).");
  m.def(
      "interface_of",
      [](const Core& c, int32_t comp) {
        Ids params, results;
        slcore::interface_of(*c.e, comp, params, results);
        return nb::make_tuple(nb::cast(params), nb::cast(results));
      },
      "The layout ids computation comp's parameters and (array) root operands hold now; -1 for none.");
  m.def("layout_count", [](const Core& c) { return c.e->layouts.size(); }, "How many layouts the core has interned.");
}

}  // namespace slcore_python
