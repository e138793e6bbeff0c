"""Targets as data: a target reads a read-only view and returns demands; the engine applies them.

What is checked: the view cannot change the engine (no setters, no settable
attributes, read-only tables, snapshots out, no reference to the engine);
demands are applied in the order given, each before the next is asked for,
so a target reading the constraint store sees its own earlier demands; and
no built-in target method takes or touches the engine (read off the source).
"""

from __future__ import annotations

import ast
import dataclasses
import gc
import inspect
from pathlib import Path
from types import MappingProxyType

import pytest

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import Demand
from stablehlo_layout.engine.state import EngineState
from stablehlo_layout.targets.view import HeldLayout, TargetView
from stablehlo_layout.targets import Target
from tests.conftest import assign_text
from tests.support import ROOT


# Two dots share %a: the first demand on %a (column-major, for dot 1) is what
# the second dot's demand reads back and follows.
TWO_DOTS = """
func.func public @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<16x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.dot_general %a, %c, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
"""

COL = L.intern((0, 1))


class Follower(Target):
    """Demands column-major for dot 1's lhs, then makes dot 2's lhs follow whatever the
    store holds for dot 1's lhs by then: only the first demand, applied before the
    generator resumes, can have put column-major there (the input pins row-major)."""

    name = "follower"

    def __init__(self) -> None:
        self.seen: list[HeldLayout | None] = []
        self.views: list[TargetView] = []

    def backend_demands(self, view: TargetView, comp: int):
        self.views.append(view)
        dots = [iid for iid in view.post_order(comp) if view.rule(iid).hlo == "dot_general"]
        if len(dots) != 2:
            return
        first, second = dots
        yield Demand.on_operand(first, 0, COL, Origin("target:follower-first", first))
        held = view.operand_constraint(first, 0)
        self.seen.append(held)
        if held is not None:
            yield Demand.on_operand(second, 0, held.layout, Origin("target:follower-second", second, held.origin))


def test_a_demand_is_applied_before_the_target_is_asked_for_the_next():
    target = Follower()
    a = assign_text(TWO_DOTS, target).assignment
    assert target.seen and all(h is not None and h.layout == COL and h.mandatory for h in target.seen)
    g = a.graph
    dots = [ins.id for ins in g.instrs if ins.op.endswith("dot_general")]
    # Both dots read %a column-major: two uses, one shared copy of %a.
    for d in dots:
        c = a.operand_constraints[(d, 0)]
        assert c.layout == COL and c.priority == a.operand_constraints[(dots[0], 0)].priority
    assert a.operand_constraints[(dots[1], 0)].origin.rule == "target:follower-second"
    assert [c.dst for c in a.copies] == [COL, COL]
    assert len({c.value for c in a.copies}) == 1


def test_the_view_is_read_only_and_holds_no_engine():
    target = Follower()
    assign_text(TWO_DOTS, target)
    view = target.views[0]
    assert all(v is view for v in target.views)  # one view per run, its cache with it
    with pytest.raises(AttributeError):
        view.priority = 7  # type: ignore[misc]
    with pytest.raises(AttributeError):
        view._operands = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        view.anything = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        del view._cache
    # The tables it reads are read-only mappings; what it hands out are tuples and snapshots.
    assert isinstance(view._operands, MappingProxyType) and isinstance(view._buffers, MappingProxyType)
    with pytest.raises(TypeError):
        view._operands[(0, 0)] = None  # type: ignore[index]
    dot = next(i for i in range(len(view.graph.instrs)) if view.rule(i).hlo == "dot_general")
    assert isinstance(view.leaves(dot), tuple) and isinstance(view.operand_values(dot), tuple)
    assert isinstance(view.post_order(view.graph.entry), tuple) and isinstance(view.given_params, tuple)
    held = view.operand_constraint(dot, 0)
    assert isinstance(held, HeldLayout)
    with pytest.raises(dataclasses.FrozenInstanceError):
        held.layout = (1, 0)  # type: ignore[misc]
    # Nothing it holds is the engine or a method bound to it.
    for ref in gc.get_referents(view):
        assert not isinstance(ref, EngineState)
        assert not isinstance(getattr(ref, "__self__", None), EngineState)
    # Its public face is readers only: no method of it sets anything.
    public = {k for k in dir(view) if not k.startswith("_")}
    assert public == {"graph", "rule", "instructions_of", "hlos_of", "leaves", "operand_values", "forwards", "post_order",
                      "given_params", "priority", "operand_constraint", "buffer_constraint", "buffer_layout", "cache"}
    # The bare layout reader agrees with the full one on every buffer.
    for v in range(len(view.graph.values)):
        c = view.buffer_constraint(v)
        assert view.buffer_layout(v) == (None if c is None else c.layout)
    # The bulk reader agrees with asking each instruction's rule, in id order.
    wanted = {"dot_general", "parameter"}
    assert view.instructions_of(wanted) == tuple(i for i in range(len(view.graph.instrs))
                                                 if view.rule(i).hlo in wanted)
    assert len(view.instructions_of({"dot_general"})) == 2 and view.instructions_of(set()) == ()
    every = tuple(range(len(view.graph.instrs)))
    assert view.hlos_of(every[::-1]) == tuple(view.rule(i).hlo for i in every[::-1]) and view.hlos_of(()) == ()


def test_demands_are_frozen_data():
    d = Demand.on_operand(3, 1, COL, Origin("target:x", 3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.layout = (1, 0)  # type: ignore[misc]
    assert (d.kind, d.target, d.operand, d.layout, d.mandatory, d.dfs, d.priority) == \
        ("operand", 3, 1, COL, True, True, None)
    r = Demand.on_results(3, [COL, None], Origin("target:x", 3))
    assert r.kind == "results" and r.layouts == (COL, None) and r.dfs
    f = Demand.on_free_operands(3, ((0, COL),), ("target:x", 3, None, "note"))
    assert f.kind == "free-operands" and f.slots == ((0, COL),) and f.mandatory and f.dfs


def _names_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name.split(".")[-1] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
              for a in n.names}
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "stablehlo_layout" / "targets").glob("*.py"))
                         + [ROOT / "examples" / "targets" / "column_major_dots.py"], ids=lambda p: p.name)
def test_no_target_takes_or_touches_the_engine(path: Path):
    names = _names_in(path)
    assert not names & {"engine", "Engine", "propagation", "set_operand_layout", "set_buffer_layout",
                        "set_instruction_layout", "demand_operands", "memo"}, path


def test_every_hook_of_the_base_target_takes_no_engine():
    for name, fn in vars(Target).items():
        if callable(fn) and not name.startswith("_"):
            assert "engine" not in inspect.signature(fn).parameters, name


def test_the_fast_constructors_fill_every_field_in_order():
    # demands._made sets the slots in this order; a field added or moved must be added there too.
    assert [f.name for f in dataclasses.fields(Demand)] == [
        "kind", "target", "operand", "layout", "layouts", "slots", "mandatory", "dfs", "priority", "origin"]
    why = Origin("target:x", 3)
    assert Demand.on_buffer(7, COL, why, False, True, 5) == Demand("buffer", 7, -1, COL, (), (), False, True, 5, why)
    assert Demand.on_operand(3, 1, COL, why, True, False) == Demand("operand", 3, 1, COL, (), (), True, False, None, why)
