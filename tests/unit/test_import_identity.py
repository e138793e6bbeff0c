"""The import walk reads a block's values by the C API's identities (``cpp/mlir/mlir_capi.*``).

jaxlib builds MLIR's C API into its library without exporting it; the core
finds the functions in the library's symbol table and reads each block's
operands, results and types as pointers, where the bindings would make a
Python object per value.  Where the core cannot find them the walk reads the
same values through the bindings' objects.  Both readings must build the
same graph, field for field, on every input.
"""

from __future__ import annotations

from array import array
from dataclasses import fields

import pytest

from stablehlo_layout import _core
from stablehlo_layout.ir import capi, importer, locations, mlir
from stablehlo_layout.model.errors import InputError, PassError
from stablehlo_layout.model.graph import Columns, Graph
from tests.conftest import load_text
from tests.support import ROOT
from tests.support.tiers import SLOW, one_fast
from tests.unit.test_index import INPUTS


def _graph_rows(g: Graph) -> dict[str, object]:
    return {
        "values": [(v.id, v.kind, v.element, v.dims, v.producer, v.index, v.buffer, v.elements, v.rank,
                    v.is_array, v.uses) for v in g.values],
        "instrs": [(i.id, i.op, i.comp, i.operands, i.results, dict(i.attrs), i.loc, list(i.callees),
                    list(i.captures), i.scope) for i in g.instrs],
        "comps": [(c.id, c.name, c.kind, c.params, c.root, c.instrs, c.caller, c.callers, c.is_entry)
                  for c in g.comps],
        # Locations are compared as text (``loc`` above): one reading keeps pointers, the other objects.
        # The uses are compared per value above, where reading them listed them.
        "columns": {f.name: getattr(g.columns, f.name) for f in fields(g.columns)
                    if f.name not in ("where", "where_other", "use_rows")},
        "entry": (g.entry, g.func_by_name, g.entry_param_modes, g.entry_result_modes, g.entry_aliases,
                  g.unknown_ops, g.spmd, g.region_depth),
    }


def test_the_c_api_is_found_in_the_installed_jaxlib():
    # Both tested jaxlib versions carry the C API's names in libjax_common.so.
    assert importer.capi_unusable_reason() == ""
    assert importer._capi_usable()


_OpWalk = _core.OpWalk  # the core's own, where a test puts a stand-in in its place


class _HandsOverEverything:
    """An ``OpWalk`` told of no op name it may write: the Python walk reads
    every op by the C API's identities, as it does the ops the core hands over."""

    def __init__(self, *args) -> None:
        self.walk = _OpWalk(*args)
        self.next_op = self.walk.next_op

    def plain(self, *_) -> None:
        pass

    keyed = facts = plain


# Each mode sweeps the whole corpus: inline-writes in the fast tier, the other modes with -m slow.
@pytest.mark.parametrize("core", one_fast(["writes", "hands-over"], {"writes"}, SLOW))
@pytest.mark.parametrize("inline", one_fast([True, False], {True}, SLOW), ids=["inline", "calls"])
def test_both_readings_build_the_same_graph_on_every_input(inline: bool, core: str, monkeypatch: pytest.MonkeyPatch):
    # Through the C API the core writes the ops that need no Python and the
    # walk reads the rest (regions and inlined callees walked in between);
    # "hands-over" has the walk read every op, as through the bindings.
    if core == "hands-over":
        monkeypatch.setattr(_core, "OpWalk", _HandsOverEverything)
    checked = 0
    for path in INPUTS:
        graphs = []
        for by_identity in (True, False):
            # A module of its own each time: the walk erases the copies an earlier run inserted.
            try:
                module = mlir.read_input(str(path), mlir.make_context())
                graphs.append(_graph_rows(importer.import_module(module, inline_calls=inline,
                                                                 by_identity=by_identity)[0]))
            except (InputError, PassError) as e:
                graphs.append(str(e))
        assert graphs[0] == graphs[1], f"{path.relative_to(ROOT)}: the two readings differ"
        checked += not isinstance(graphs[0], str)
    assert checked > 50


_WHILE = """
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> (tensor<4xf32>, tensor<i32>) {
  %r:2 = stablehlo.while(%a = %x, %i = %n) : tensor<4xf32>, tensor<i32>
  cond {
    %c = stablehlo.compare LT, %i, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %b = stablehlo.add %a, %x : tensor<4xf32>
    stablehlo.return %b, %i : tensor<4xf32>, tensor<i32>
  }
  return %r#0, %r#1 : tensor<4xf32>, tensor<i32>
}
"""


def test_the_handed_over_ops_read_what_the_bindings_read():
    module = load_text(_WHILE)
    func = module.body.operations[0]
    while_op = func.regions[0].blocks[0].operations[0].operation
    blocks = [func.regions[0].blocks[0], *(r.blocks[0] for r in while_op.regions)]
    ptr = _core.capsule_pointer
    walk = _core.OpWalk(capi.CAPI_LIBRARY, Columns(), _core.ValueIds(), [], {}, array("q"), {})
    for block in blocks:
        # Told of no op it may write, the core hands over every op.
        handed = list(importer._handed_ops(walk, block, 0, array("i"), ""))
        ops = [op.operation for op in block.operations]
        assert [h[0] for h in handed] == [ptr(op._CAPIPtr) for op in ops]
        names = [h[1] for h in handed]
        assert names == [op.name for op in ops]
        # One str per distinct name, shared by every op of that name.
        assert len({id(n) for n in names}) == len(set(names))
        assert [h[2] for h in handed] == [tuple(ptr(v._CAPIPtr) for v in op.operands) for op in ops]
        assert [h[3] for h in handed] == [tuple(ptr(v._CAPIPtr) for v in op.results) for op in ops]
        assert [h[4] for h in handed] == [tuple(ptr(v.type._CAPIPtr) for v in op.results) for op in ops]
        wheres = [h[5] for h in handed]
        assert wheres == [ptr(op.location._CAPIPtr) for op in ops]
        assert [str(locations.location_at(w)) for w in wheres] == [str(op.location) for op in ops]
        assert [h[6] for h in handed] == [k == len(ops) - 1 for k in range(len(ops))]
        args, arg_types = _core.block_arguments(block._CAPIPtr, capi.CAPI_LIBRARY)
        assert args == tuple(ptr(a._CAPIPtr) for a in block.arguments)
        assert arg_types == tuple(ptr(a.type._CAPIPtr) for a in block.arguments)
    assert walk.written == 0
    # The while's results are what the return reads, by identity.
    handed = list(importer._handed_ops(walk, blocks[0], 0, array("i"), ""))
    assert handed[-1][2] == handed[0][3]


def test_the_core_writes_the_ops_python_told_it_of(monkeypatch: pytest.MonkeyPatch):
    made = []

    def kept(*args):
        made.append(_OpWalk(*args))
        return made[-1]

    monkeypatch.setattr(_core, "OpWalk", kept)
    module = load_text("""
func.func @main(%x: tensor<4x2xf32>, %y: tensor<2x4xf32>) -> tensor<4x2xf32> {
  %a = stablehlo.negate %x : tensor<4x2xf32>
  %b = stablehlo.negate %a : tensor<4x2xf32>
  %c = stablehlo.add %a, %b : tensor<4x2xf32>
  %t = stablehlo.transpose %y, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %u = stablehlo.transpose %y, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %v = stablehlo.transpose %x, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %w = stablehlo.transpose %x, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %d = stablehlo.add %c, %t : tensor<4x2xf32>
  %e = stablehlo.negate %d : tensor<4x2xf32>
  return %e : tensor<4x2xf32>
}
""")
    g, h = importer.import_module(module, by_identity=True)
    # The second negate, both later adds and negates, the transposes whose
    # permutation was met before: the first of each name or permutation is read
    # by Python, and so is the return.
    assert made[0].written == 5
    ops = [i.op for i in g.instrs]
    assert ops.count("stablehlo.negate") == 3 and ops.count("stablehlo.transpose") == 4
    # What the core wrote reads as what Python writes: attributes shared per permutation.
    transposes = [i for i in g.instrs if i.op == "stablehlo.transpose"]
    assert transposes[0].attrs is transposes[1].attrs and transposes[2].attrs is transposes[3].attrs
    assert transposes[0].attrs is not transposes[2].attrs
    assert list(h.op_ptrs) == [0, 0] + [_core.capsule_pointer(op.operation._CAPIPtr)
                                        for op in module.body.operations[0].regions[0].blocks[0].operations]


def test_a_library_that_is_not_loaded_is_named():
    assert "libnot_loaded_here.so is not loaded" in _core.find_mlir_capi("libnot_loaded_here.so")
    module = load_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n")
    with pytest.raises(RuntimeError, match="block_arguments: libnot_loaded_here.so is not loaded"):
        _core.block_arguments(module.body.operations[0].regions[0].blocks[0]._CAPIPtr, "libnot_loaded_here.so")
    with pytest.raises(RuntimeError, match="OpWalk: libnot_loaded_here.so is not loaded"):
        _core.OpWalk("libnot_loaded_here.so", Columns(), _core.ValueIds(), [], {}, array("q"), {})
    # A failed search for one library leaves the other's answer alone.
    assert _core.find_mlir_capi(capi.CAPI_LIBRARY) == ""


def test_the_walk_refuses_what_it_cannot_read():
    module = load_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %y = stablehlo.negate %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n")
    block = module.body.operations[0].regions[0].blocks[0]
    negate = _core.capsule_pointer(block.operations[0].operation._CAPIPtr)
    with pytest.raises(TypeError, match="_CAPIPtr capsule"):
        _core.block_arguments(object(), capi.CAPI_LIBRARY)
    walk = _core.OpWalk(capi.CAPI_LIBRARY, Columns(), _core.ValueIds(), [], {}, array("q"), {})
    with pytest.raises(TypeError, match="_CAPIPtr capsule"):
        walk.next_op(object(), 0, 0, [], "")
    with pytest.raises(TypeError, match="comp_instrs is not an array of 4-byte items"):
        walk.next_op(block._CAPIPtr, 0, 0, (), "")
    with pytest.raises(ValueError, match="a null op"):
        walk.plain(0, 1)
    with pytest.raises(ValueError, match="an attribute name is needed"):
        walk.keyed(negate, 1, "")
    walk.plain(negate, 1)
    with pytest.raises(ValueError, match="not keyed by an attribute"):
        walk.facts(negate, {}, False)
    # An op without its keyed attribute is keyed by the attribute's absence.
    walk.keyed(negate, 1, "permutation")
    walk.facts(negate, {}, False)
    # Columns frozen into arrays, or no columns at all, are refused.
    frozen = Columns()
    frozen.freeze(*capi.column_packers())
    for columns in (frozen, object()):
        with pytest.raises((TypeError, AttributeError)):
            _core.OpWalk(capi.CAPI_LIBRARY, columns, _core.ValueIds(), [], {}, array("q"), {})
    with pytest.raises(TypeError, match="8-byte items"):
        _core.OpWalk(capi.CAPI_LIBRARY, Columns(), _core.ValueIds(), [], {}, array("i"), {})


# Each target sweeps the whole corpus: xla-cpu in the fast tier, the others with -m slow.
@pytest.mark.parametrize("target", one_fast(["generic", "xla-cpu", "xla-gpu"], {"xla-cpu"}, SLOW))
def test_both_readings_write_the_same_module_on_every_input(target: str, monkeypatch: pytest.MonkeyPatch):
    # Through the C API the rewrite writes every single-array op's layout in
    # one core call (Handles.op_ptrs); through the bindings, op by op.
    from stablehlo_layout.frontends.api import assign_module

    def written(by_identity: bool, path) -> str:
        monkeypatch.setattr(importer, "_capi_usable", lambda: by_identity)
        try:
            module = mlir.read_input(str(path), mlir.make_context())
            result = assign_module(module, target, names=True)
        except (InputError, PassError) as e:
            return f"error: {e}"
        names = [c.name for c in result.copies]
        return mlir.final_text_bytes(module, debuginfo=True).decode() + "\n".join(names)

    checked = 0
    for path in INPUTS:
        ours, theirs = written(True, path), written(False, path)
        assert ours == theirs, f"{path.relative_to(ROOT)}: the two readings write different modules"
        checked += not ours.startswith("error: ")
    assert checked > 50


def test_set_attribute_pairs_refuses_rows_that_do_not_fit():
    from array import array

    module = load_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %y = stablehlo.negate %x : tensor<4xf32>\n  return %y : tensor<4xf32>\n}\n")
    block = module.body.operations[0].regions[0].blocks[0]
    negate = _core.capsule_pointer(block.operations[0].operation._CAPIPtr)
    with module.context:
        attr = ir_string("f32[4]{0}")
        a = _core.capsule_pointer(attr._CAPIPtr)
        for ops, pairs, why in ((array("q", [negate]), array("i", [1]), "out of range"),
                                (array("q", [0]), array("i", [0]), "out of range"),
                                (array("q", [negate, negate]), array("i", [0]), "differ in length")):
            with pytest.raises(ValueError, match=why):
                _core.set_attribute_pairs(ops, pairs, "xla_shape", "result_layout", [a], [a], capi.CAPI_LIBRARY)
        # Nothing was written by a refused call; a fitting one writes both names.
        assert "xla_shape" not in block.operations[0].attributes
        _core.set_attribute_pairs(array("q", [negate]), array("i", [0]), "xla_shape", "result_layout", [a], [a],
                                  capi.CAPI_LIBRARY)
        written = block.operations[0].attributes
        assert str(written["xla_shape"]) == str(written["result_layout"]) == '"f32[4]{0}"'


def ir_string(text: str):
    from jaxlib.mlir import ir

    return ir.StringAttr.get(text)


def test_a_location_read_by_pointer_outlives_its_module():
    # The graph names its ops' locations by pointer and keeps their context:
    # they read the same once the module is gone (analyze drops its clone).
    import gc

    module = load_text('func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n'
                       '  %y = stablehlo.negate %x : tensor<4xf32> loc("neg")\n  return %y : tensor<4xf32>\n}\n')
    g, _ = importer.import_module(module, by_identity=True)
    negate = next(i for i in g.instrs if i.op == "stablehlo.negate")
    assert negate.where.__class__ is int and g.context is not None
    del module
    gc.collect()
    assert negate.loc == "neg"


def test_annotation_rows_groups_the_single_array_ops_by_pair():
    # The rewrite's scan (cpp/bindings/bind_rewrite_rows.cpp): every op with one array
    # result, by (element, shape, layout) in first-seen order; the while
    # (two results) is left to Python, the reducer's scalar body skipped.
    from stablehlo_layout.frontends.api import assign_module
    from stablehlo_layout.model.graph import packed_array

    module = load_text("""
func.func @main(%x: tensor<4x2xf32>, %n: tensor<i32>) -> (tensor<4x2xf32>, tensor<2xf32>) {
  %a = stablehlo.negate %x : tensor<4x2xf32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %b = stablehlo.negate %a : tensor<4x2xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%t init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %r:2 = stablehlo.while(%c = %b, %i = %n) : tensor<4x2xf32>, tensor<i32>
  cond {
    %k = stablehlo.compare LT, %i, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %k : tensor<i1>
  } do {
    stablehlo.return %c, %i : tensor<4x2xf32>, tensor<i32>
  }
  return %r#0, %s : tensor<4x2xf32>, tensor<2xf32>
}
""")
    result = assign_module(module, "xla-cpu")
    g, a = result.graph, result.assignment
    c = g.columns
    skip = array("B", [comp.kind == "apply" for comp in g.comps])
    present = array("q", [1 if op not in ("parameter", "root") else 0 for op in (i.op for i in g.instrs)])
    args = (present, c.res_start, c.res_items, c.kind, c.shape, c.comp, c.op, skip, c.op_code["root"], c.element,
            a.layouts)
    iids, ops, rows, firsts, others = _core.annotation_rows(*args)
    iids, rows = list(packed_array("i", iids)), list(packed_array("i", rows))
    assert list(packed_array("q", ops)) == [1] * len(iids)
    names = [g.instrs[i].op for i in iids]
    assert names == ["stablehlo.negate", "stablehlo.transpose", "stablehlo.negate", "stablehlo.constant",
                     "stablehlo.reduce", "stablehlo.compare"]
    # Both negates share a pair; each other shape or element takes its own, numbered as first met.
    assert rows == [0, 1, 0, 2, 3, 4]
    assert [g.instrs[g.values[v].producer].op for v in firsts] == [names[k] for k in (0, 1, 3, 4, 5)]
    assert [g.instrs[i].op for i in others] == ["stablehlo.while"]
    # Columns that do not line up are refused, as are arrays of another type.
    with pytest.raises(ValueError, match="differ in length"):
        _core.annotation_rows(present[:-1], *args[1:])
    with pytest.raises(TypeError, match=r"array\('i'\)"):
        _core.annotation_rows(present, c.res_start, c.res_items, c.kind, c.shape, array("q", c.comp), *args[6:])


def test_value_ids_is_a_table_of_pointers_to_ids():
    # The import walk's table of values by C API pointer (cpp/bindings/bind_import_walk.cpp):
    # a dict's answers, through every growth of the table.
    ids = _core.ValueIds()
    want = {}
    for k in range(1, 5000):
        key = 0x7F0000000000 + 72 * k + 8 * (k % 3)
        ids[key] = want[key] = k % 1000
    for key, vid in list(want.items())[::7]:
        ids[key] = want[key] = vid + 1  # overwritten, not added
    assert len(ids) == len(want)
    assert all(ids[key] == vid and key in ids for key, vid in want.items())
    assert 8 not in ids and ids.get(8) is None and ids.get(8, -1) == -1
    with pytest.raises(KeyError):
        ids[8]
    for bad in ((0, 1), (8, -1)):
        with pytest.raises(ValueError):
            ids[bad[0]] = bad[1]
