"""XLA:CPU's plan (demands.DemandPlan): applied by the core in one call, it is the Demands it stands for.

The plan reaches the engine two ways: as itself (``XlaCpuTarget``; the core
applies it, ``cpp/engine/demands.cpp``) and iterated, as the ``Demand`` objects a
target that passes XLA:CPU's demands on hands over one at a time (the engine's
Python applier).  Both must leave the same constraints with the same
provenance in every round, so every fact explain and trace read is compared,
in exact runs over real XLA:CPU dumps and the lit inputs that exercise each
step: kernels, a column-major constant, collectives, TopK, the catch-all
around forwarding and tuple-operand ops, and the reshapes an XLA pass made.
"""

from __future__ import annotations


import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import analyze
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import (
    ASCENDING_OPERAND,
    MOST_MAJOR_DIM,
    NO_DEMAND,
    ROW_MAJOR_KERNEL,
    DemandPlan,
    PlanStep,
)
from stablehlo_layout.engine.state import EngineState
from stablehlo_layout.targets import XlaCpuTarget
from stablehlo_layout.targets.xla_version import loop_demands_first

from tests.support import ROOT

INPUTS = [
    "tests/lit/Inputs/xla_cpu_dump/head_proj.before_layout-assignment.txt",  # late reshapes
    "tests/unit/xla_dumps/linalg_cpu/before.txt",
    "examples/xla_dump/before_layout-assignment.txt",
    "tests/lit/Inputs/cpu_batch_dot.mlir",
    "tests/lit/Inputs/cpu_catch_all.mlir",
    "tests/lit/Inputs/cpu_gemv_constant.mlir",  # the column-major constant
    "tests/lit/xla_cpu.mlir",
    "tests/lit/dot_conv.mlir",
    "tests/lit/xla_gpu_collectives.mlir",  # all-gather / reduce-scatter dimensions
    "tests/lit/xla_gpu_topk.mlir",
    "tests/lit/custom_call.mlir",
    "tests/lit/cf_lapack_custom_call.mlir",
    "tests/lit/call_inline_cpu.mlir",
    "tests/lit/Inputs/loop_transpose.mlir",
]


class OneByOne(XlaCpuTarget):
    """XLA:CPU's demands handed over one Demand at a time (the plan iterated)."""

    def backend_demands(self, view, comp):
        return list(super().backend_demands(view, comp))


class RefinedDots(XlaCpuTarget):
    """A target that refines XLA:CPU's dot rule (here: to the same answer) is asked dot by dot."""

    asked = 0

    def dot_needs_row_major(self, g, ins):
        RefinedDots.asked += 1
        return super().dot_needs_row_major(g, ins)


def _origin(o: Origin | None) -> tuple | None:
    if o is None:
        return None
    return (o.rule, o.instr, o.note, o.kind, o.target, o.layout, o.priority, o.mandatory, o.dfs, o.round, o.was,
            _origin(o.parent))


def _facts(path: str, target: XlaCpuTarget) -> tuple:
    module = mlir.read_input(str(ROOT / path), mlir.make_context())
    _, a, _ = analyze(module, target, exact=True)
    buffers = [(b, c.layout, c.mandatory, c.dfs, c.priority, c.round, c.history, _origin(c.origin))
               for b, c in a.buffer_constraints.items()]
    operands = [(k, c.layout, c.mandatory, c.dfs, c.priority, c.round, _origin(c.origin))
                for k, c in a.operand_constraints.items()]
    copies = [(c.value, c.src, c.dst, c.consumer, c.operand, _origin(c.demand.origin) if c.demand else None)
              for c in a.copies]
    return a.layouts, copies, buffers, operands, a.rounds, a.rounds_computed


@pytest.mark.parametrize("path", INPUTS)
def test_the_plan_applied_at_once_is_its_demands_one_by_one(path: str):
    assert (ROOT / path).is_file(), path
    assert _facts(path, XlaCpuTarget()) == _facts(path, OneByOne())


@pytest.mark.parametrize("path", INPUTS[:4])
def test_dots_sorted_in_bulk_match_dots_asked_one_by_one(path: str):
    RefinedDots.asked = 0
    assert _facts(path, XlaCpuTarget()) == _facts(path, RefinedDots())
    assert RefinedDots.asked > 0


def _engine(path: str) -> EngineState:
    from stablehlo_layout.ir.importer import import_module

    module = mlir.read_input(str(ROOT / path), mlir.make_context())
    graph, _ = import_module(module, inline_calls=True)
    return EngineState(graph, XlaCpuTarget())


def test_the_plan_is_data_with_a_step_for_each_singled_out_op():
    e = _engine("tests/lit/Inputs/xla_cpu_dump/head_proj.before_layout-assignment.txt")
    view = e.view_for_target()
    entry = e.g.entry
    plan = XlaCpuTarget().backend_demands(view, entry)
    assert isinstance(plan, DemandPlan) and plan.comp == entry
    if loop_demands_first():
        assert plan.before != ()
    g = e.g
    ops = {g.instrs[i].op: s for i, s in plan.steps.items()}
    assert ops == {"stablehlo.dot": PlanStep(ROW_MAJOR_KERNEL, 0, "target:cpu-row-major-kernel",
                                             "dot is emitted as an Eigen/runtime kernel that reads row-major")}
    # The reshapes the XLA pass made come last, in block order.
    assert plan.late and all(g.instrs[i].attrs.get("xla_pass_created") for i in plan.late)
    assert list(plan.late) == [i for i in g.comps[entry].instrs if i in set(plan.late)]
    # The same object every round: made once per run.
    assert e.target._plan(view, entry) is e.target._plan(view, entry)


def test_each_step_code_iterates_to_the_demands_it_stands_for():
    e = _engine("tests/lit/Inputs/cpu_gemv_constant.mlir")
    view = e.view_for_target()
    g = e.g
    dot = next(i for i in range(len(g.instrs)) if view.rule(i).hlo in ("dot", "dot_general"))
    comp = g.instrs[dot].comp

    def demands(step: PlanStep) -> list:
        plan = DemandPlan(view, comp, (), {dot: step}, "r", "n", "late")
        return [(d.kind, d.target, d.operand, d.layout, d.layouts, d.origin) for d in plan if d.target == dot]

    why = Origin("k", dot, None, "note")
    ranks = [g.values[v].rank for v in g.instrs[dot].operands]
    out = g.values[g.instrs[dot].results[0]]
    row = [tuple(range(r - 1, -1, -1)) for r in ranks]
    kernel = demands(PlanStep(ROW_MAJOR_KERNEL, 0, "k", "note"))
    assert [k[:5] for k in kernel] == [("results", dot, -1, None, (tuple(range(out.rank - 1, -1, -1)),))] + [
        ("operand", dot, n, row[n], ()) for n in range(len(ranks))]
    assert all(k[5] == why for k in kernel)
    assert demands(PlanStep(NO_DEMAND)) == []
    [col] = demands(PlanStep(ASCENDING_OPERAND, 1, "k", "note"))
    assert col[:4] == ("operand", dot, 1, tuple(range(ranks[1])))
    if out.rank:
        [dim] = demands(PlanStep(MOST_MAJOR_DIM, 0, "k", "note"))
        assert dim[4] == (tuple(range(out.rank - 1, 0, -1)) + (0,),)
