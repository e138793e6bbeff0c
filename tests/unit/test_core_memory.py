"""What the core keeps, measured through its own footprint (bytes per structure).

A fast run (the ``assign`` command's) records a 16-byte link per constraint
change and no facts; a run that ends frees what only the propagators read;
a copy's demand stays in the store until someone reads it.
"""

from __future__ import annotations


import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.model.constraints import OperandConstraint
from stablehlo_layout.ir.importer import import_module
from stablehlo_layout.engine.driver import assign_layouts, run
from stablehlo_layout.engine.state import EngineState
from stablehlo_layout.targets import XlaCpuTarget

from tests.support import ROOT

DUMP = ROOT / "tests" / "unit" / "xla_dumps" / "linalg_cpu" / "before.txt"  # XLA:CPU's own, a real program


def _graph():
    module = mlir.read_input(str(DUMP), mlir.make_context())
    graph, _ = import_module(module, inline_calls=True)
    return graph


def _sizes(core) -> dict[str, int]:
    return dict(core.footprint())


def test_a_fast_run_keeps_links_and_no_facts_an_exact_run_keeps_both():
    g = _graph()
    fast = assign_layouts(g, XlaCpuTarget())
    exact = assign_layouts(g, XlaCpuTarget(), exact=True)
    f, x = _sizes(fast.buffer_constraints._r.core), _sizes(exact.buffer_constraints._r.core)
    assert f["provenance.links"] > 0 and x["provenance.facts"] > 0
    # Only results (and Origins a target made as facts) keep a fact in a fast run.
    assert f["provenance.facts"] * 4 < x["provenance.facts"]
    # Same answer, either way.
    assert fast.layouts == exact.layouts
    assert [(e.value, e.dst, e.consumer, e.operand) for e in fast.copies] == \
        [(e.value, e.dst, e.consumer, e.operand) for e in exact.copies]


def test_the_values_share_one_shape_table():
    g = _graph()
    e = EngineState(g, XlaCpuTarget())
    sizes = _sizes(e.core)
    n_values = len(g.values)
    shapes = {(v.kind, v.element, v.dims) for v in g.values}
    # A row number per value and the few distinct shapes, not a copy of each
    # value's extents (8 bytes per dimension plus a row start per value).
    table = 4 * n_values + 4 * (len(shapes) + 1) + 8 * sum(len(dims) for _, _, dims in shapes)
    assert sizes["facts.in.dims"] <= table + 64  # the importer may tell a few more shapes apart
    per_value_copies = 4 * (n_values + 1) + 8 * sum(v.rank for v in g.values)
    assert 2 * sizes["facts.in.dims"] < per_value_copies
    assert sizes["facts.consumers"] > 0  # built by counting, still there before the run


def test_a_finished_run_frees_the_propagators_facts_and_refuses_to_run_again():
    g = _graph()
    e = EngineState(g, XlaCpuTarget())
    before = _sizes(e.core)
    a = run(e)
    after = _sizes(a.buffer_constraints._r.core)
    for name in ("facts.consumers", "facts.to_operands", "facts.leaves", "facts.in.dims", "plans"):
        assert before[name] > 0 or name == "plans", name
        assert after[name] <= 4, name  # an empty row table keeps its first start
    # The store and provenance stay for the readers.
    assert after["store.buffers"] == before["store.buffers"] and after["provenance.links"] > 0
    assert all(a.buffer_constraints.get(b) is not None for b in list(a.buffer_constraints)[:50])
    with pytest.raises(RuntimeError, match="the run is finished"):
        e.core.propagate()
    with pytest.raises(RuntimeError, match="the run is finished"):
        e.core.new_round()


def test_a_copys_demand_is_read_from_the_store_on_first_use():
    g = _graph()
    a = assign_layouts(g, XlaCpuTarget())
    exact = assign_layouts(g, XlaCpuTarget(), exact=True)
    edges = [e for e in a.copies if e.aliased_output is None and e.consumer != g.comps[g.instrs[e.consumer].comp].root]
    assert edges, "the dump has relayout copies of operands"
    assert all(type(e._demand).__name__ == "_Unread" for e in edges)  # nothing built yet
    by_key = {(e.consumer, e.operand): e.demand for e in exact.copies}
    for e in edges:
        d = e.demand
        assert isinstance(d, OperandConstraint) and d is e.demand  # read once, then kept
        assert (d.instr, d.operand, d.layout) == (e.consumer, e.operand, e.dst)
        want = by_key[(e.consumer, e.operand)]
        assert (d.mandatory, d.dfs, d.origin.rule) == (want.mandatory, want.dfs, want.origin.rule)


def test_a_run_leaves_no_reference_cycles():
    """The command drops its result before printing, with the collector off
    (cli._assign): only reference counting frees the graph and the engine, so
    nothing of a run may sit in a cycle (the target's scratch pointed back at
    its view, which held the graph, until driver.run emptied it)."""
    import gc

    from stablehlo_layout.frontends.api import assign_module

    module = mlir.read_input(str(DUMP), mlir.make_context())
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = assign_module(module, XlaCpuTarget(), check=False, provenance=False)
        assert result.copies  # the cycle through the copies is the one the command cuts itself
        result.copies = []
        del result
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        ours = sorted({type(o).__name__ for o in gc.garbage if type(o).__module__.startswith("stablehlo_layout")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert ours == []
