"""The importer's shortcuts give the graph and handles the long way would."""

from __future__ import annotations

from jaxlib.mlir import ir

from stablehlo_layout.ir.importer import _Importer, import_module
from tests.conftest import load_text

# An entry that calls nothing, a loop body XLA's conversion leaves behind as a
# private function (unreached), a private function that calls it (unreached
# too), and a public function nobody calls (kept: it is not private).
LEFT_BEHIND = """
func.func private @body(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.negate %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @body(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func public @other(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
func.func public @main(%x: tensor<4x8xf32>, %t: tuple<tensor<4x8xf32>, tensor<8xf32>>) -> tensor<8x4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %w:2 = stablehlo.while(%i = %c, %v = %x) : tensor<i32>, tensor<4x8xf32>
   cond {
    %p = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s = stablehlo.add %v, %x : tensor<4x8xf32>
    stablehlo.return %i, %s : tensor<i32>, tensor<4x8xf32>
  }
  %e = stablehlo.get_tuple_element %t[0] : (tuple<tensor<4x8xf32>, tensor<8xf32>>) -> tensor<4x8xf32>
  %m = stablehlo.add %w#1, %e : tensor<4x8xf32>
  %r = stablehlo.transpose %m, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
"""


def _shape(g):
    return ([(c.name, c.kind, c.params, c.root, c.instrs, c.caller) for c in g.comps],
            [(i.op, i.comp, i.operands, i.results, i.attrs, i.callees, i.captures, i.scope, i.loc) for i in g.instrs],
            [(v.kind, v.element, v.dims, v.producer, v.index, v.buffer, v.uses, v.elements) for v in g.values],
            g.func_by_name, g.entry)


def test_optimistic_walk_drops_the_functions_the_reachability_search_drops() -> None:
    # The optimistic walk (calls inlined, none met) derives the unreached
    # private functions instead of searching the entry's ops for calls.
    fast, _ = import_module(load_text(LEFT_BEHIND), inline_calls=True)
    slow, _ = _Importer(load_text(LEFT_BEHIND), inline_calls=True).run()
    assert sorted(fast.func_by_name) == ["main", "other"]
    assert _shape(fast) == _shape(slow)


def test_handles_find_the_mlir_value_of_every_graph_value() -> None:
    module = load_text(LEFT_BEHIND)
    g, h = import_module(module, inline_calls=True)
    seen = 0
    for v in g.values:
        value = h.value(g, v.id)
        ins = g.instrs[v.producer]
        if v.id not in ins.results or (ins.op == "parameter" and "capture" in ins.attrs):
            # A tuple's element, or a parameter standing for a captured outer value.
            assert value is None
            continue
        seen += 1
        if ins.op == "parameter":
            assert isinstance(value, ir.BlockArgument)
            assert value.owner == h.regions[ins.comp].blocks[0]
            assert value.arg_number == ins.attrs["number"]
        else:
            assert isinstance(value, ir.OpResult)
            assert value.owner == h.ops[ins.id]
            assert value.result_number == v.index
    captured = [i for i in g.instrs if i.op == "parameter" and "capture" in i.attrs]
    elements = [e for v in g.values if v.elements for e in v.elements]
    assert seen > 10 and captured and elements


# An unregistered op with a region, beside one without: the op's name says
# nothing about its regions, so the walk must ask each op.
UNREGISTERED_REGIONS = """
func.func @main(%x: tensor<4xf32>, %p: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = "foo.bar"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "foo.bar"(%a) ({
    %n = stablehlo.negate %x : tensor<4xf32>
    stablehlo.return %n : tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %c = "stablehlo.case"(%p) ({
    stablehlo.return %b : tensor<4xf32>
  }) : (tensor<i32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
"""


def test_regions_are_found_on_ops_whose_definition_allows_them() -> None:
    from stablehlo_layout.ir.importer import _never_has_regions

    module = load_text(UNREGISTERED_REGIONS)
    ops = [op.operation for op in module.body.operations[0].regions[0].blocks[0].operations]
    assert [op.name for op in ops] == ["foo.bar", "foo.bar", "stablehlo.case", "func.return"]
    assert [_never_has_regions(op) for op in ops] == [False, False, False, True]
    g, _ = import_module(module)
    walked = {g.instrs[c.caller].op: [g.instrs[i].op for i in c.instrs] for c in g.comps if c.caller is not None}
    # Each region reads one outer value, through a capture parameter.
    assert walked == {"foo.bar": ["parameter", "stablehlo.negate", "root"], "stablehlo.case": ["parameter", "root"]}
    negate = next(ins for ins in g.instrs if ins.op == "stablehlo.negate")
    assert g.instrs[g.values[negate.operands[0]].producer].attrs["capture"] == 0  # %x
