"""The graph the import leaves is lean: what most readers never ask for is not made per value or op.

Every value's uses stay the core's flat columns until ``Value.uses`` is read;
ops that carry the same facts share one read-only attributes dict; and the
whole import retains under a budget of Python bytes per instruction on the
benchmark's own program (``bench/workload.py``, a real ``jax.grad``), which
an object per value and per instruction would overrun by half.
"""

from __future__ import annotations

from array import array
import copy
import gc
import pickle
import sys
import tracemalloc

import pytest

from stablehlo_layout.model.graph import Graph, SharedAttrs, UseRows, own_attrs
from stablehlo_layout.ir.importer import import_module
from tests.conftest import load_text
from tests.support import ROOT


PROGRAM = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %a = stablehlo.add %x, %y : tensor<4x8xf32>
  %b = stablehlo.multiply %a, %x : tensor<4x8xf32>
  %c = stablehlo.subtract %b, %a : tensor<4x8xf32>
  %t = stablehlo.transpose %c, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %u = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %v = stablehlo.add %t, %u : tensor<8x4xf32>
  return %c, %v : tensor<4x8xf32>, tensor<8x4xf32>
}
"""


def test_uses_are_listed_per_value_only_when_read() -> None:
    g, _ = import_module(load_text(PROGRAM))
    # Right after the import no value holds a list of its own, only the graph's columns.
    assert g.columns.uses == {}
    assert isinstance(g.use_rows, UseRows)
    by_value = {v.id: v.uses for v in g.values}
    a = g.instrs[g.values[2].producer]
    assert a.op == "stablehlo.add" and a.operands == [0, 1]
    # %a is read by the multiply (operand 0), the subtract (1) and a transpose (0), in that order.
    assert [(g.instrs[u].op, n) for u, n in by_value[a.results[0]]] == [
        ("stablehlo.multiply", 0), ("stablehlo.subtract", 1), ("stablehlo.transpose", 0)]
    # Read once, the list is the value's own: a reader that sorts it sorts it for everyone.
    v = g.values[a.results[0]]
    assert v.uses is v.uses
    v.uses.reverse()
    assert [g.instrs[u].op for u, _ in v.uses][0] == "stablehlo.transpose"
    root = g.comps[g.entry].root
    assert by_value[g.instrs[root].operands[1]] == [(root, 1)]


def test_reading_uses_before_the_import_listed_them_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="before the import listed them"):
        UseRows().row(0)


def test_ops_with_the_same_facts_share_one_read_only_dict() -> None:
    g, _ = import_module(load_text(PROGRAM))
    by_op: dict[str, list] = {}
    for ins in g.instrs:
        by_op.setdefault(ins.op, []).append(ins)
    adds = by_op["stablehlo.add"]
    transposes = by_op["stablehlo.transpose"]
    assert len({id(i.attrs) for i in adds}) == 1 and adds[0].attrs == {}
    assert len({id(i.attrs) for i in transposes}) == 1 and transposes[0].attrs == {"perm": (1, 0)}
    params = [g.instrs[p] for p in g.comps[g.entry].params]
    assert [p.attrs for p in params] == [{"number": 0}, {"number": 1}]
    with pytest.raises(TypeError, match="own_attrs"):
        transposes[0].attrs["perm"] = (0, 1)
    with pytest.raises(TypeError, match="own_attrs"):
        adds[0].attrs.setdefault("x", 1)
    mine = own_attrs(transposes[0])
    mine["perm"] = (0, 1)
    assert transposes[0].attrs == {"perm": (0, 1)} and transposes[1].attrs == {"perm": (1, 0)}
    assert own_attrs(transposes[0]) is mine  # already its own
    assert isinstance(transposes[1].attrs, SharedAttrs) and not isinstance(mine, SharedAttrs)
    for twin in (copy.deepcopy(transposes[1].attrs), pickle.loads(pickle.dumps(transposes[1].attrs))):
        assert type(twin) is SharedAttrs and twin == {"perm": (1, 0)}


def test_a_region_op_whose_regions_capture_gets_its_own_attributes() -> None:
    text = """
func.func @main(%p: tensor<i1>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "stablehlo.if"(%p) ({
    stablehlo.return %x : tensor<4xf32>
  }, {
    stablehlo.return %y : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  %b = "stablehlo.if"(%p) ({
    stablehlo.return %y : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
"""
    g, _ = import_module(load_text(text))
    ifs = [ins for ins in g.instrs if ins.op == "stablehlo.if"]
    assert len(ifs) == 2 and ifs[0].attrs is not ifs[1].attrs
    for ins in ifs:
        assert type(ins.attrs) is dict and len(ins.attrs["capture_params"]) == 2


def test_the_import_retains_a_budget_of_python_bytes_per_instruction() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import workload
    finally:
        sys.path.remove(str(ROOT / "bench"))
    module = load_text(workload.export(4), "grad.mlirbc")
    gc.collect()
    tracemalloc.start()
    try:
        g, h = import_module(module, inline_calls=True)
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_instruction = retained / len(g.instrs)
    # ~340 bytes here (Python 3.11, jax 0.10.2), most of it this small module's fixed
    # costs; ~690 with an object per value and instruction, ~970 before the uses,
    # attributes and columns were made lean.  The budget leaves room for a column or
    # two, not an object or a list per row.
    assert per_instruction < 450, f"the import retains {per_instruction:.0f} bytes per instruction"
    assert len(g.instrs) > 500 and h.ops


def test_values_and_instructions_are_rows_of_arrays_read_through_views() -> None:
    # The graph keeps no object per value or instruction: a view is made per
    # read, and every view of a row reads and writes the same row.
    g, _ = import_module(load_text(PROGRAM))
    c = g.columns
    for name in ("producer", "shape", "kind", "index", "comp", "op", "op_start", "op_items", "res_start",
                 "res_items", "where"):
        assert isinstance(getattr(c, name), array), name
    assert c.operand_count is None and c.result_lists is None  # frozen
    assert len(g.values) == len(c.producer) and len(g.instrs) == len(c.comp)
    adds = [ins for ins in g.instrs if ins.op == "stablehlo.add"]
    first = adds[0]
    assert g.instrs[first.id] is not first and g.instrs[first.id].operands == first.operands == [0, 1]
    own_attrs(first)["note"] = 1
    assert g.instrs[first.id].attrs == {"note": 1} and adds[1].attrs == {}
    g.instrs[first.id].where = "somewhere"
    assert first.loc == "somewhere"
    root = g.instrs[g.comps[g.entry].root]
    assert root.op == "root" and root.results == [] and len(root.operands) == 2
    params = [g.instrs[p] for p in g.comps[g.entry].params]
    assert [p.results for p in params] == [[0], [1]] and [g.values[p.results[0]].index for p in params] == [0, 1]
    v = g.values[first.results[0]]
    assert (v.kind, v.element, v.dims, v.rank, v.is_array, v.buffer, v.elements) == \
        ("array", "f32", (4, 8), 2, True, v.id, None)
    assert g.values[-1].id == len(g.values) - 1
    with pytest.raises(IndexError):
        g.values[len(g.values)]
    with pytest.raises(TypeError, match="fixed once the import is over"):
        first.results = [0]


def test_a_value_made_without_its_shape_row_reads_its_dims() -> None:
    g = Graph()
    ins = g.add_instr("stablehlo.constant", 0, [], {}, "here")
    v = g.add_value("array", "f32", (2, 3), ins.id, 0)
    t = g.add_value("token", "token", (), ins.id, 1)
    assert (v.dims, v.rank, v.is_array, t.dims, t.is_array) == ((2, 3), 2, True, (), False)
    assert g.columns.shape_dims[g.columns.shape[v.id]] == (2, 3)
