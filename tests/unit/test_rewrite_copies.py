"""The rewrite's copies made by the core (``cpp/mlir/rewrite_ops.cpp``, ``rewrite._CopyBatch``).

Where the import read the ops' C API pointers, the copies whose value, place
and consumers are plain go to the core in batches; the rest are made
through the bindings in between.  Either way the module must come out the
same, byte for byte, with and without copy names.
"""

from __future__ import annotations

from array import array

import pytest

from stablehlo_layout import _core
from stablehlo_layout.ir import capi, mlir, rewrite
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.model.errors import InputError, PassError
from tests.conftest import load_text
from tests.support import ROOT
from tests.support.tiers import SLOW, one_fast
from tests.unit.test_index import INPUTS

_insert_copies = _core.insert_copies


def _written(path, target: str, names: bool) -> str:
    try:
        module = mlir.read_input(str(path), mlir.make_context())
        result = assign_module(module, target, names=names)
    except (InputError, PassError) as e:
        return f"error: {e}"
    return mlir.final_text_bytes(module, debuginfo=names).decode() + "\n".join(c.name for c in result.copies)


# Each sweeps the whole corpus twice: with names in the fast tier, without with -m slow.
@pytest.mark.parametrize("names", one_fast([False, True], {True}, SLOW))
def test_the_core_and_the_bindings_make_the_same_copies(names: bool, monkeypatch: pytest.MonkeyPatch):
    made: list[int] = []

    def counted(*args, **kwargs):
        made.append(_insert_copies(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(_core, "insert_copies", counted)
    for target in ("xla-cpu", "xla-gpu"):
        for path in INPUTS:
            batched = _written(path, target, names)
            with monkeypatch.context() as m:
                m.setattr(rewrite._CopyBatch, "add", lambda self, group, current: False)
                by_bindings = _written(path, target, names)
            assert batched == by_bindings, f"{path.relative_to(ROOT)} ({target}): the two ways differ"
    # Most of the corpus's copies went through the core, in many calls.
    assert len(made) > 50 and sum(made) > 200


_TWO_CONSUMERS = """
func.func @main(%x: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %n = stablehlo.negate %t : tensor<8x4xf32>
  return %n, %t : tensor<8x4xf32>, tensor<8x4xf32>
}
"""


def test_a_refused_batch_leaves_the_module_as_it_was():
    module = load_text(_TWO_CONSUMERS)
    block = module.body.operations[0].regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    pointer = [_core.capsule_pointer(op._CAPIPtr) for op in ops]
    before = str(module)
    with module.context:
        attrs = [ir_string('"f32[8,4]{0,1}"'), ir_string('"x"')]
        table = [_core.capsule_pointer(a._CAPIPtr) for a in attrs]

        def call(**change):
            args = dict(source_ops=array("q", [pointer[0]]), source_indices=array("i", [0]),
                        source_values=array("q", [0]), anchor_kinds=array("b", [0]), anchors=array("q", [pointer[0]]),
                        consumers=array("q", [pointer[1]]), attribute_rows=array("i", [0]),
                        attribute_names=["xla_shape", "result_layout"], attribute_table=table, location_names=None,
                        edge_start=array("i", [0, 1]), edge_ops=array("q", [pointer[1]]),
                        edge_operands=array("i", [0]))
            args.update(change)
            return _core.insert_copies(capi.CAPI_LIBRARY, "mhlo.copy", **args)

        for change, why in (({"source_indices": array("i", [1])}, "no result of that index"),
                            ({"edge_operands": array("i", [1])}, "no operand of that index"),
                            ({"attribute_rows": array("i", [1])}, "out of range"),
                            ({"anchor_kinds": array("b", [3])}, "out of range"),
                            ({"consumers": array("q", [0])}, "out of range"),
                            ({"edge_start": array("i", [0])}, "differ in length"),
                            ({"location_names": ["a", "b"]}, "one name per copy")):
            with pytest.raises(ValueError, match=why):
                call(**change)
        with pytest.raises(TypeError, match="array"):
            call(anchors=[pointer[0]])
        assert str(module) == before
        # A fitting call puts the copy right after the transpose, and the negate reads it.
        assert call(location_names=["copy of t"]) == 1
    names = [op.operation.name for op in block.operations]
    assert names == ["stablehlo.transpose", "mhlo.copy", "stablehlo.negate", "func.return"]
    copy, negate, ret = (block.operations[k].operation for k in (1, 2, 3))
    assert negate.operands[0] == copy.results[0] and ret.operands[1] == ops[0].results[0]
    assert str(copy.attributes["xla_shape"]) == '"f32[8,4]{0,1}"' and str(copy.attributes["result_layout"]) == '"x"'
    assert 'loc("copy of t"' in copy.get_asm(enable_debug_info=True)
    assert module.operation.verify()


def ir_string(text: str):
    from jaxlib.mlir import ir

    return ir.Attribute.parse(text)
