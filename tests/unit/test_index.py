"""The core's program is the graph: the importer's columns, put in order, say what the Python objects say.

The importer fills flat columns as it walks (``graph.Columns``) and the core
puts them in its rows (``cpp/engine/index.cpp``, ``from_walk``): results from the
values, a computation's instructions from the instructions, uses from the
operands and captures.  Each derivation rests on an order the walk keeps;
these tests compare every row with the Graph's own objects over the inputs
the command reads, so a walk that breaks such an order fails here by name.
"""

from __future__ import annotations

from array import array

import pytest

from stablehlo_layout import _core
from stablehlo_layout.ir import mlir
from stablehlo_layout.model.errors import InputError, PassError
from stablehlo_layout.model.graph import Graph
from stablehlo_layout.ir.importer import import_module
from stablehlo_layout.engine.core import RuleTable, build_index
from stablehlo_layout.model.rules import rule_for
from tests.conftest import load_text
from tests.unit.test_hlo_metadata import INLINED
from tests.support import ROOT

# Inputs with regions, captures, tuples, calls (inlined or not), reordered users, dynamic shapes.
INPUTS = sorted(
    [p for p in (ROOT / "tests" / "lit").rglob("*.mlir")]
    + list((ROOT / "examples").glob("*.mlir"))
    + list((ROOT / "examples").rglob("*.txt"))
    + [p for p in (ROOT / "tests" / "unit" / "xla_scenarios").rglob("*") if p.suffix in (".hlo", ".mlir", ".txt")]
    + list((ROOT / "tests" / "unit" / "xla_dumps").rglob("*.txt"))
)


def _rows(index: _core.Index, name: str) -> list[list[int]]:
    start, items = index.rows(name)
    return [items[start[i]:start[i + 1]] for i in range(len(start) - 1)]


def assert_core_matches_graph(g: Graph) -> None:
    index = build_index(g, RuleTable.of_rules([rule_for(ins.op) for ins in g.instrs]))
    values, instrs, comps = g.values, g.instrs, g.comps
    assert _rows(index, "elements") == [v.elements or [] for v in values]
    assert index.rows("is_tuple") == [v.elements is not None for v in values]
    assert index.rows("used") == [bool(v.uses) for v in values]
    # The walk's order, derived here on its own: each instruction's operands,
    # then its implicit captures, in instruction order; XLA's order where the
    # importer reordered a value's readers.
    expected: list[list[tuple[int, int]]] = [[] for _ in values]
    for ins in instrs:
        for n, v in enumerate([*ins.operands, *ins.captures]):
            expected[v].append((ins.id, n))
    for v in g.columns.reordered:
        assert sorted(expected[v]) == sorted(values[v].uses)
        expected[v] = values[v].uses
    assert [v.uses for v in values] == expected
    assert _rows(index, "users") == [[u for u, _ in v.uses] for v in values]
    assert _rows(index, "use_operand") == [[n for _, n in v.uses] for v in values]
    assert _rows(index, "operands") == [ins.operands for ins in instrs]
    assert _rows(index, "results") == [ins.results for ins in instrs]
    assert _rows(index, "callees") == [list(ins.callees) for ins in instrs]
    assert _rows(index, "captures") == [list(ins.captures) for ins in instrs]
    assert index.rows("is_root") == [ins.op == "root" for ins in instrs]
    assert _rows(index, "instrs") == [list(c.instrs) for c in comps]
    c = g.columns
    assert list(c.producer) == [v.producer for v in values]
    buffer = list(range(len(values)))
    for v, b in zip(c.buffer_value, c.buffer_item):
        buffer[v] = b
    assert buffer == [v.buffer for v in values]
    assert [c.op_names[k] for k in c.op] == [ins.op for ins in instrs]
    shapes = [tuple(c.shape_items[c.shape_start[s]:c.shape_start[s + 1]]) for s in c.shape]
    assert shapes == [tuple(-1 if d is None else d for d in v.dims) if v.is_array else () for v in values]
    assert [bool(c.shape_is_array[s]) for s in c.shape] == [v.is_array for v in values]


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "calls"])
def test_the_cores_rows_are_the_graphs_on_every_input(inline: bool):
    checked = 0
    for path in INPUTS:
        try:
            module = mlir.read_input(str(path), mlir.make_context())
            g, _ = import_module(module, inline_calls=inline)
        except (InputError, PassError):
            continue  # a bad input (lit's error cases): no graph to compare
        try:
            assert_core_matches_graph(g)
        except AssertionError as e:
            raise AssertionError(f"{path.relative_to(ROOT)}: {e}") from None
        checked += 1
    assert checked > 50


def test_captures_count_as_uses_after_the_ops_own_operands():
    # %x is read by the while's own operand and, inside both regions, as an
    # implicit capture: its uses are the while's operand 0, then the captures
    # (one per region), then the add after the loop (its operand 1).
    g, _ = import_module(load_text("""
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %r:2 = stablehlo.while(%a = %x, %i = %n) : tensor<4xf32>, tensor<i32>
  cond {
    %s = stablehlo.add %a, %x : tensor<4xf32>
    %c = stablehlo.compare LT, %i, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %b = stablehlo.add %a, %x : tensor<4xf32>
    stablehlo.return %b, %i : tensor<4xf32>, tensor<i32>
  }
  %out = stablehlo.add %r#0, %x : tensor<4xf32>
  return %out : tensor<4xf32>
}
"""))
    assert_core_matches_graph(g)
    x = g.values[g.instrs[g.comps[g.entry].params[0]].results[0]]
    users = [g.instrs[u].op for u, _ in x.uses]
    assert users == ["stablehlo.while", "stablehlo.while", "stablehlo.while", "stablehlo.add"]
    assert [n for _, n in x.uses] == [0, 2, 3, 1]


def test_users_in_xlas_order_reach_the_core():
    # The dump's metadata says XLA offers x's layout to s, y, t (test_hlo_metadata).
    g, _ = import_module(mlir.load(INLINED.encode(), "inlined.hlo", mlir.make_context()))
    assert g.columns.reordered
    assert_core_matches_graph(g)


def test_a_tuples_elements_reach_the_core():
    g, _ = import_module(load_text("""
func.func @main(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %t = stablehlo.tuple %a, %b : tuple<tensor<4xf32>, tensor<2x2xf32>>
  %n = stablehlo.tuple %t, %a : tuple<tuple<tensor<4xf32>, tensor<2x2xf32>>, tensor<4xf32>>
  %i = stablehlo.get_tuple_element %n[0]
      : (tuple<tuple<tensor<4xf32>, tensor<2x2xf32>>, tensor<4xf32>>) -> tuple<tensor<4xf32>, tensor<2x2xf32>>
  %x = stablehlo.get_tuple_element %i[1] : (tuple<tensor<4xf32>, tensor<2x2xf32>>) -> tensor<2x2xf32>
  return %x : tensor<2x2xf32>
}
"""))
    assert len(g.columns.element_owner) == 2 + (2 + 2) + 2  # %n holds a tuple of two
    assert_core_matches_graph(g)


def _walk(**over: object) -> list[object]:
    # One value made by instruction 0 (a parameter of computation 0), read by the root (instruction 1).
    args: dict[str, object] = dict(
        producer=array("i", [0]), element_owner=array("i"), element_item=array("i"),
        comp=array("i", [0, 0]), kind=array("B", [2, 1]), while_rule=array("B", [0]), rule_of=array("i", [0, 0]),
        op_start=array("i", [0, 0, 1]), op_items=array("i", [0]), callee_owner=array("i"),
        callee_item=array("i"), capture_owner=array("i"), capture_item=array("i"), root=array("i", [1]),
        is_func=array("B", [1]), param_start=array("i", [0, 1]), param_items=array("i", [0]),
        reordered=array("i"), reorder_start=array("i", [0]), reorder_users=array("i"),
        reorder_operands=array("i"), entry=0)
    args.update(over)
    return list(args.values())


def test_a_well_formed_walk_makes_its_rows():
    index = _core.Index(*_walk())
    assert index.rows("instrs") == ([0, 2], [0, 1])
    assert index.rows("users") == ([0, 1], [1])


@pytest.mark.parametrize("over, message", [
    ({"op_items": array("i", [5])}, "operands names id 5 out of range"),
    ({"callee_owner": array("i", [7]), "callee_item": array("i", [0])}, "callees names owner 7 out of range"),
    ({"param_items": array("i", [1])}, "parameter is not a parameter of it"),
    ({"reordered": array("i", [0]), "reorder_start": array("i", [0, 1]), "reorder_users": array("i", [0]),
      "reorder_operands": array("i", [0])}, "reordered value's uses are not its uses"),
    ({"producer": [0]}, r"producer: expected an array\('i'\)"),
    ({"kind": array("i", [2, 1])}, r"kind: expected an array\('B'\)"),
    ({"rule_of": array("i", [0, 3])}, "an instruction's rule is out of range"),
])
def test_a_malformed_walk_is_a_clear_error_not_a_crash(over: dict, message: str):
    with pytest.raises((ValueError, TypeError), match=message):
        _core.Index(*_walk(**over))


def test_uses_name_only_values_that_exist():
    g, _ = import_module(load_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"))
    with pytest.raises(ValueError, match="a use names a value out of range"):
        _core.use_rows(len(g.values), array("i", [0, 1]), array("i", [3]), array("i"), array("i"))
    assert g.values[0].uses == [(1, 0)]  # the import's own, untouched
