"""The rewrite reads a bare-name location's text without printing it, and gets the same text.

``rewrite._name_quickly`` is a shortcut to ``Instruction.loc`` (which prints the
location, ``ir.locations.location_text``) for the names copies are called after; for
every name it must give what ``location_text`` gives, or leave it to it.
"""

from __future__ import annotations

import pytest
from jaxlib.mlir import ir

from stablehlo_layout.ir.locations import location_text
from stablehlo_layout.model.graph import Graph, Instruction
from stablehlo_layout.ir.rewrite import _name_quickly

NAMES = [
    "dot.3", "reduce_max.10", "a b", "x.py:12:8", "loc(", "with )", "tab\there", "new\nline", 'say "hi"',
    "back\\slash", "caf\u00e9", "\u2603", "", " ", "del\x7f", "nul\x00byte", "%arg0#1", "#loc3",
]


def _instruction(where) -> Instruction:
    g = Graph()
    g.columns.location_text = location_text  # as the importer tells a graph it builds
    return g.add_instr("stablehlo.add", 0, [], {}, where)


@pytest.mark.parametrize("name", NAMES)
def test_a_bare_name_reads_as_location_text_reads_it(ctx: ir.Context, name: str) -> None:
    with ctx:
        loc = ir.Location.name(name, childLoc=ir.Location.unknown())
    ins = _instruction(loc)
    _name_quickly(ins)
    assert ins.loc == location_text(loc)


def test_the_shortcut_is_taken_for_plain_names_only(ctx: ir.Context) -> None:
    with ctx:
        plain = ir.Location.name("dot.3", childLoc=ir.Location.unknown())
        quoted = ir.Location.name('say "hi"', childLoc=ir.Location.unknown())
        over_a_file = ir.Location.name("dot.3", childLoc=ir.Location.file("m.py", 3, 4))
        a_file = ir.Location.file("m.py", 3, 4)
    ins = _instruction(plain)
    _name_quickly(ins)
    assert ins.where == "dot.3"  # formatted, without printing
    for loc in (quoted, over_a_file, a_file):
        ins = _instruction(loc)
        _name_quickly(ins)
        assert ins.where is loc  # left to location_text
        assert ins.loc == location_text(loc)
    assert _instruction(over_a_file).loc == "dot.3 (m.py:3:4)"


# A jax.export-style module: locations are names over call stacks, whose text
# takes a print of the whole location; the transpose's copy is named after it.
EXPORTED = """
#src = loc("model.py":12:8)
#caller = loc("train.py":40:2)
#stack = loc(callsite(#src at #caller))
module @jit_f {
  func.func public @main(%x: tensor<4x8xf32> loc("x"("model.py":3:0))) -> tensor<8x4xf32> {
    %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32> loc("jit(f)/transpose"(#stack))
    %1 = stablehlo.custom_call @Sharding(%0) {mhlo.layout_mode = "{0,1}"} : (tensor<8x4xf32>) -> tensor<8x4xf32> loc("jit(f)/sharding"(#stack))
    %2 = stablehlo.dot_general %1, %x, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32> loc("jit(f)/dot"(#stack))
    %3 = stablehlo.slice %2 [0:8, 0:4] : (tensor<8x8xf32>) -> tensor<8x4xf32> loc("jit(f)/slice"(#stack))
    return %3 : tensor<8x4xf32>
  }
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)


def _assigned(ctx: ir.Context, names: bool, path=None):
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.frontends.api import assign_module

    module = mlir.load(EXPORTED, "f.mlir", ctx) if path is None else mlir.read_input(str(path), ctx)
    return module, assign_module(module, "xla-cpu", names=names)


def test_unnamed_copies_print_the_same_without_locations(ctx: ir.Context) -> None:
    """The command's rewrite (no names unless --mlir-print-debuginfo) prints what the named one prints."""
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.ir.rewrite import COPY_NAME_PREFIX

    named, named_result = _assigned(ctx, True)
    bare, bare_result = _assigned(ctx, False)
    assert named_result.copies and len(bare_result.copies) == len(named_result.copies)
    assert all(c.name.startswith(COPY_NAME_PREFIX) for c in named_result.copies)
    assert all(c.name == "" for c in bare_result.copies)
    assert mlir.final_text_bytes(bare) == mlir.final_text_bytes(named)
    with_locations = mlir.final_text_bytes(named, debuginfo=True)
    assert COPY_NAME_PREFIX.encode() in with_locations
    assert COPY_NAME_PREFIX.encode() not in mlir.final_text_bytes(bare, debuginfo=True)


@pytest.mark.parametrize("debuginfo", [[], ["--mlir-print-debuginfo"]])
def test_the_command_names_copies_when_it_prints_locations(tmp_path, debuginfo: list[str]) -> None:
    from stablehlo_layout.frontends import cli
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.ir.rewrite import COPY_NAME_PREFIX

    src = tmp_path / "f.mlir"
    src.write_text(EXPORTED)
    out = tmp_path / "out.mlir"
    assert cli.main(["assign", "--target", "xla-cpu", *debuginfo, str(src), "-o", str(out)]) == 0
    ctx = mlir.make_context()
    module, _ = _assigned(ctx, True, src)
    assert out.read_bytes() == mlir.final_text_bytes(module, debuginfo=bool(debuginfo))
    assert (COPY_NAME_PREFIX.encode() in out.read_bytes()) == bool(debuginfo)
