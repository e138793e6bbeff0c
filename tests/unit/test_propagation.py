"""The worklist engine: order, overwrite rules in context, defaults, rounds."""

from __future__ import annotations

from stablehlo_layout.ir.importer import import_module
from stablehlo_layout.engine.driver import assign_layouts, run
from stablehlo_layout.engine.state import EngineState
from stablehlo_layout.targets import GenericTarget
from tests.conftest import load_text


def graph_of(text: str):
    module = load_text(text, "test.mlir")
    g, _ = import_module(module)
    return g, module


def value_at(g, op_name: str, nth: int = 0) -> int:
    hits = [i for i in g.instrs if i.op == op_name]
    return hits[nth].results[0]


PINNED = """
func.func public @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32> {mhlo.layout_mode = "{0,1}"}) -> tensor<4x8xf32> {
  %0 = stablehlo.add %x, %y : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
"""


def test_two_pinned_operands_of_an_add_one_copy():
    g, _ = graph_of(PINNED)
    a = assign_layouts(g, GenericTarget())
    assert len(a.copies) == 1
    copy = a.copies[0]
    # Both parameters are mandatory; the add's sibling rule is mandatory too and
    # the last mandatory writer wins, so exactly one operand edge disagrees.
    assert {copy.src, copy.dst} == {(1, 0), (0, 1)}


def test_default_assignment_goes_to_lowest_buffer_first():
    text = """
func.func public @main(%x: tensor<4x8xf32> {mhlo.layout_mode = "auto"}) -> (tensor<8x4xf32> {mhlo.layout_mode = "auto"}) {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""
    g, _ = graph_of(text)
    a = assign_layouts(g, GenericTarget(), trace=True)
    # The parameter has the lowest buffer id: it gets the default, and the
    # transpose follows as a bitcast of it.
    assert a.entry_params == [(1, 0)]
    assert a.entry_results == [(0, 1)]
    assert not a.copies
    first = next(ev for ev in a.trace if ev.constraint.rule == "default-layout")
    assert first.constraint.target == (g.instrs[g.comps[g.entry].params[0]].results[0],)


def test_at_least_two_rounds_and_priority_rises():
    g, _ = graph_of(PINNED)
    e = EngineState(g, GenericTarget(), trace=True)
    a = run(e)
    assert a.rounds == 2
    assert e.current_priority == 2
    assert {ev.round for ev in a.trace} == {0, 1}


def test_a_round_that_would_repeat_is_not_run_and_changes_nothing():
    # PINNED has one computation and a pinned interface: round 1 is round 0
    # one priority higher, so the fast run stops after round 0.
    g, _ = graph_of(PINNED)
    fast = assign_layouts(g, GenericTarget())
    exact = assign_layouts(g, GenericTarget(), exact=True)
    assert (fast.rounds, fast.rounds_computed, exact.rounds_computed) == (2, 1, 2)
    assert fast.layouts == exact.layouts
    assert [(c.value, c.dst, c.consumer, c.operand) for c in fast.copies] == \
        [(c.value, c.dst, c.consumer, c.operand) for c in exact.copies]


def test_rounds_run_in_full_when_a_callee_has_a_choice():
    text = """
func.func private @f(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func public @main(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = func.call @f(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""
    g, _ = graph_of(text)
    assert assign_layouts(g, GenericTarget()).rounds_computed == 2


def test_free_entry_writes_back_inferred_layouts():
    text = """
func.func public @main(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.negate %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
"""
    g, _ = graph_of(text)
    pinned = assign_layouts(g, GenericTarget(), "default")
    assert [(c.src, c.dst) for c in pinned.copies] == [((1, 0), (0, 1))]
    g, _ = graph_of(text)
    free = assign_layouts(g, GenericTarget(), "free")
    assert not free.copies
    assert free.entry_params == [(1, 0)] and free.entry_results == [(0, 1)]


def test_auto_parameter_takes_the_demanded_layout():
    text = """
func.func public @main(%x: tensor<4x8xf32> {mhlo.layout_mode = "auto"}) -> tensor<8x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""
    g, _ = graph_of(text)
    a = assign_layouts(g, GenericTarget())
    # The pinned result drives the transpose, the transpose drives the parameter.
    assert a.entry_params == [(0, 1)]
    assert not a.copies


def test_every_constraint_has_an_origin_chain_ending_at_a_source():
    g, _ = graph_of(PINNED)
    a = assign_layouts(g, GenericTarget(), exact=True)
    for c in list(a.buffer_constraints.values()) + list(a.operand_constraints.values()):
        seen = 0
        node = c.origin
        while node.parent is not None:
            node = node.parent
            seen += 1
            assert seen < 100
        assert node.rule in {"entry-parameter", "entry-result", "default-layout"}
