"""An example user target: a backend whose matmul kernel wants column-major operands.

    stablehlo-layout assign --target examples/targets/column_major_dots.py:ColumnMajorDots INPUT

It keeps every XLA base rule and adds one demand per matrix operand of a
dot, with its own provenance name so ``explain`` can say where the
resulting copies come from.  It reads the program through the view it is
given and returns demands; the engine applies them.
"""

from __future__ import annotations

from typing import Iterator

from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import Demand
from stablehlo_layout.targets.view import TargetView
from stablehlo_layout.targets import Target


class ColumnMajorDots(Target):
    name = "column-major-dots"

    def backend_demands(self, view: TargetView, comp: int) -> Iterator[Demand]:
        for iid in view.graph.comps[comp].instrs:
            if view.rule(iid).hlo in ("dot", "dot_general"):
                why = Origin("target:column-major-dots", iid, None, "this backend's GEMM reads column-major")
                for n, v in enumerate(view.operand_values(iid)):
                    if v.is_array and v.rank == 2:
                        yield Demand.on_operand(iid, n, (0, 1), why)
