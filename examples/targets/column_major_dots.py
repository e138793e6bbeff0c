"""An example user target: a backend whose matmul kernel wants column-major operands.

    stablehlo-layout assign --target examples/targets/column_major_dots.py:ColumnMajorDots INPUT

It keeps every XLA base rule and adds one demand, with its own provenance
name so ``explain`` can say where the resulting copies come from.
"""

from __future__ import annotations

from stablehlo_layout.constraints import Origin
from stablehlo_layout.rules import rule_for
from stablehlo_layout.targets import Target


class ColumnMajorDots(Target):
    name = "column-major-dots"

    def add_backend_constraints(self, engine, comp: int) -> None:
        g = engine.g
        for iid in g.comps[comp].instrs:
            ins = g.instrs[iid]
            if rule_for(ins.op).hlo not in ("dot", "dot_general"):
                continue
            why = Origin("target:column-major-dots", iid, None, "this backend's GEMM reads column-major")
            for n, vid in enumerate(ins.operands):
                v = g.values[vid]
                if v.is_array and v.rank == 2:
                    engine.set_operand_layout((0, 1), iid, n, True, True, engine.current_priority, why)
