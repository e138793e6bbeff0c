"""The import walk reads a block's values by the C API's identities (``cpp/mlir_capi.*``).

jaxlib builds MLIR's C API into its library without exporting it; the core
finds the functions in the library's symbol table and reads each block's
operands, results and types as pointers, where the bindings would make a
Python object per value.  Where the core cannot find them the walk reads the
same values through the bindings' objects.  Both readings must build the
same graph, field for field, on every input.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from stablehlo_layout import _core, importer, mlir
from stablehlo_layout.errors import InputError, PassError
from stablehlo_layout.graph import Graph
from tests.conftest import load_text
from tests.unit.test_index import INPUTS, ROOT


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


@pytest.mark.parametrize("window", [importer.ROWS_WINDOW, 3], ids=["window", "small-window"])
@pytest.mark.parametrize("inline", [True, False], ids=["inline", "calls"])
def test_both_readings_build_the_same_graph_on_every_input(inline: bool, window: int,
                                                           monkeypatch: pytest.MonkeyPatch):
    # A small window makes every block of more than three ops go on across windows,
    # a region or an inlined callee walked in between.
    monkeypatch.setattr(importer, "ROWS_WINDOW", window)
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


def test_block_rows_reads_what_the_bindings_read():
    module = load_text("""
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
""")
    func = module.body.operations[0]
    while_op = func.regions[0].blocks[0].operations[0].operation
    blocks = [func.regions[0].blocks[0], *(r.blocks[0] for r in while_op.regions)]
    ptr = _core.capsule_pointer
    for block in blocks:
        rows = _core.block_rows(block._CAPIPtr, importer.CAPI_LIBRARY)
        args, arg_types, operands, results, types, op_ptrs, wheres, following, names = rows
        assert following == 0
        # Read two ops at a time, the windows make up the whole block.
        windows, after = [], 0
        while True:
            w = _core.block_rows(block._CAPIPtr, importer.CAPI_LIBRARY, after, 2)
            windows.append(w)
            assert len(w[2]) <= 2 and (w[0] == () or after == 0)
            after = w[7]
            if after == 0:
                break
        for row in (*range(2, 7), 8):
            assert [x for w in windows for x in w[row]] == list(rows[row])
        ops = [op.operation for op in block.operations]
        assert op_ptrs == [ptr(op._CAPIPtr) for op in ops]
        assert names == [op.name for op in ops]
        # One str per distinct name, shared by every op of that name.
        assert len({id(n) for n in names}) == len(set(names))
        assert wheres == [ptr(op.location._CAPIPtr) for op in ops]
        assert [str(importer.location_at(w)) for w in wheres] == [str(op.location) for op in ops]
        assert args == tuple(ptr(a._CAPIPtr) for a in block.arguments)
        assert arg_types == tuple(ptr(a.type._CAPIPtr) for a in block.arguments)
        assert operands == [tuple(ptr(v._CAPIPtr) for v in op.operands) for op in ops]
        assert results == [tuple(ptr(v._CAPIPtr) for v in op.results) for op in ops]
        assert types == [tuple(ptr(v.type._CAPIPtr) for v in op.results) for op in ops]
    # The while's results are what the return reads, by identity.
    _, _, operands, results, *_ = _core.block_rows(blocks[0]._CAPIPtr, importer.CAPI_LIBRARY)
    assert operands[-1] == results[0]


def test_a_library_that_is_not_loaded_is_named():
    assert "libnot_loaded_here.so is not loaded" in _core.find_mlir_capi("libnot_loaded_here.so")
    module = load_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n")
    with pytest.raises(RuntimeError, match="block_rows: libnot_loaded_here.so is not loaded"):
        _core.block_rows(module.body.operations[0].regions[0].blocks[0]._CAPIPtr, "libnot_loaded_here.so")
    # A failed search for one library leaves the other's answer alone.
    assert _core.find_mlir_capi(importer.CAPI_LIBRARY) == ""


def test_block_rows_refuses_what_is_not_a_capsule():
    with pytest.raises(TypeError, match="_CAPIPtr capsule"):
        _core.block_rows(object(), importer.CAPI_LIBRARY)
    module = load_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %x : tensor<4xf32>\n}\n")
    with pytest.raises(ValueError, match="at least one op"):
        _core.block_rows(module.body.operations[0].regions[0].blocks[0]._CAPIPtr, importer.CAPI_LIBRARY, 0, 0)


@pytest.mark.parametrize("target", ["generic", "xla-cpu", "xla-gpu"])
def test_both_readings_write_the_same_module_on_every_input(target: str, monkeypatch: pytest.MonkeyPatch):
    # Through the C API the rewrite writes every single-array op's layout in
    # one core call (Handles.op_ptrs); through the bindings, op by op.
    from stablehlo_layout.assignment import assign_module

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
    negate = _core.block_rows(block._CAPIPtr, importer.CAPI_LIBRARY)[5][0]
    with module.context:
        attr = ir_string("f32[4]{0}")
        a = _core.capsule_pointer(attr._CAPIPtr)
        for ops, pairs, why in ((array("q", [negate]), array("i", [1]), "out of range"),
                                (array("q", [0]), array("i", [0]), "out of range"),
                                (array("q", [negate, negate]), array("i", [0]), "differ in length")):
            with pytest.raises(ValueError, match=why):
                _core.set_attribute_pairs(ops, pairs, "xla_shape", "result_layout", [a], [a], importer.CAPI_LIBRARY)
        # Nothing was written by a refused call; a fitting one writes both names.
        assert "xla_shape" not in block.operations[0].attributes
        _core.set_attribute_pairs(array("q", [negate]), array("i", [0]), "xla_shape", "result_layout", [a], [a],
                                  importer.CAPI_LIBRARY)
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
