"""The differential harness reads XLA's dumps the same way on every XLA version.

XLA 0.12 (jaxlib 0.12) prints no get-tuple-element instructions: a tuple
element is written as an operand `%t#i`. The fixture is XLA 0.12's
after-layout-assignment dump of differential program s0/0 (a conditional
cloned per caller, three results, two of them relaid out at the root). If
the harness dropped the `#i`, every copy under the root tuple would seem to
copy the whole tuple and none of them would match ours.
"""

from __future__ import annotations

from pathlib import Path

from tests.differential.compare import XlaSide
from tests.differential.oracle import ArrayShape, parse_hlo

DUMP = Path(__file__).parent / "xla_dumps" / "xla0.12_cond_clone_after_layout_assignment.txt"


def _module():
    return parse_hlo(DUMP.read_text())


def test_element_operands_become_get_tuple_elements() -> None:
    hlo = _module()
    g = hlo.instrs["tuple.1#2"]
    assert (g.opcode, g.operands, g.gte_index) == ("get-tuple-element", ["tuple.1"], 2)
    assert isinstance(g.shape, ArrayShape) and g.shape.layout == (2, 0, 3, 1)
    assert hlo.instrs["copy.5"].operands == ["tuple.1#2"]
    assert "copy.5" in g.users and "tuple.1#2" in hlo.instrs["tuple.1"].users


def test_root_copies_are_traced_to_their_producers() -> None:
    hlo = _module()
    xla = XlaSide(hlo, before_names=set(hlo.instrs) - {"copy.4", "copy.5"})
    # copy.5 relays out the transpose for the result; copy.4 the conditional's element.
    assert xla.source(hlo.instrs["copy.5"].operands[0]) == ("transpose.1", ())
    assert xla.source(hlo.instrs["copy.4"].operands[0]) == ("cond.1.clone", (0,))
    assert xla.consumers("copy.5") == ["ROOT"]


def test_element_operands_inside_branches() -> None:
    hlo = _module()
    # In a branch the parameter tuple's element feeds the copy XLA added there.
    assert hlo.instrs["copy.2"].operands == ["args_1_.0#0"]
    assert hlo.instrs["args_1_.0#0"].comp == hlo.instrs["args_1_.0"].comp == "region_1.5"


def test_the_tool_reads_the_dump_or_says_why() -> None:
    """jaxlib 0.11+ parses `%t#i`; older jaxlibs reject it with one line saying why."""
    from importlib.metadata import version

    import pytest

    from stablehlo_layout.ir import mlir
    from stablehlo_layout.model.errors import InputError

    ctx = mlir.make_context()
    jaxlib = tuple(int(p) for p in version("jaxlib").split(".")[:2])
    if jaxlib >= (0, 11):
        module = mlir.load(DUMP.read_bytes(), str(DUMP), ctx)
        assert "func.func" in str(module)
    else:
        with pytest.raises(InputError) as info:
            mlir.load(DUMP.read_bytes(), str(DUMP), ctx)
        text = str(info.value)
        assert "%t#i" in text and "jaxlib >= 0.11" in text and f"{DUMP}:" in text, text
