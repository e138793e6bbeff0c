"""Loading every input kind through `stablehlo_layout.ir.mlir`, and its errors."""

from __future__ import annotations

import io
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jaxlib.mlir import ir

from stablehlo_layout.ir import mlir
from stablehlo_layout.model.errors import InputError, PassError

from tests.support import ROOT

ADD_TEXT = """\
module @m {
  func.func @main(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<2x3xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    return %1 : tensor<3x2xf32>
  }
}
"""


def op_names(module: ir.Module) -> list[str]:
    names: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.append(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def main_func(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op.operation
    raise AssertionError("no @main")


def entry_op_locations(module: ir.Module) -> list[tuple[str, str]]:
    """(op name, location) of the ops directly in @main's body."""
    block = main_func(module).regions[0].blocks[0]
    return [(op.operation.name, str(op.location)) for op in block.operations]


def load_error(data: bytes | str, ctx: ir.Context, path: str = "in.mlir") -> InputError:
    with pytest.raises(InputError) as info:
        mlir.load(data, path, ctx)
    return info.value


# --------------------------------------------------------------------------
# Contexts


def test_context_knows_jax_dialects_and_allows_unknown_ops(ctx: ir.Context) -> None:
    text = """\
    module {
      sdy.mesh @mesh = <["x"=1]>
      func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
        %0 = chlo.erf %a : tensor<2xf32> -> tensor<2xf32>
        %1 = mhlo.copy %0 : tensor<2xf32>
        %2 = "mystery.op"(%1) : (tensor<2xf32>) -> tensor<2xf32>
        %3 = stablehlo.negate %2 : tensor<2xf32>
        return %3 : tensor<2xf32>
      }
    }
    """
    module = mlir.load(text, "dialects.mlir", ctx)
    assert op_names(module) == [
        "sdy.mesh",
        "chlo.erf",
        "mhlo.copy",
        "mystery.op",
        "stablehlo.negate",
        "func.return",
        "func.func",
        "builtin.module",
    ]


def test_two_contexts_are_independent() -> None:
    first, second = mlir.make_context(), mlir.make_context()
    a = mlir.load(ADD_TEXT, "a.mlir", first)
    b = mlir.load(ADD_TEXT, "b.mlir", second)
    assert a.context == first and b.context == second
    assert mlir.print_module(a) == mlir.print_module(b)


def test_importing_mlir_module_does_not_import_jax() -> None:
    code = "import sys, stablehlo_layout.ir.mlir; print('jax' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------
# MLIR text and bytecode


def test_mlir_text_round_trip(ctx: ir.Context) -> None:
    module = mlir.load(ADD_TEXT.encode(), "add.mlir", ctx)
    printed = mlir.print_module(module)
    assert "stablehlo.transpose %0, dims = [1, 0]" in printed
    assert "loc(" not in printed
    again = mlir.load(printed, "again.mlir", ctx)
    assert mlir.print_module(again) == printed
    assert op_names(again)[:3] == ["stablehlo.add", "stablehlo.transpose", "func.return"]


def test_print_module_debuginfo_shows_parse_locations(ctx: ir.Context) -> None:
    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    printed = mlir.print_module(module, debuginfo=True)
    # The parser names its buffer "-"; line 3 col 10 is `stablehlo.add`.
    assert 'loc("-":3:10)' in printed


@pytest.mark.parametrize("debuginfo", [False, True])
def test_final_text_bytes_prints_what_the_bindings_print(ctx: ir.Context, debuginfo: bool) -> None:
    """The command's printer (a pass manager's IR dump) writes the same bytes as get_asm."""
    from stablehlo_layout.frontends.api import assign_module

    for text in (ADD_TEXT, (ROOT / "tests" / "lit" / "cf_while_transpose_body.mlir").read_text()):
        module = mlir.load(text, "in.mlir", ctx)
        assign_module(module, "xla-cpu")
        expected = mlir.module_text_bytes(module, debuginfo=debuginfo, verified=True)
        got = mlir.final_text_bytes(module, debuginfo=debuginfo)
        assert got == expected
        assert b"IR Dump" not in got and not got.endswith(b"\n\n")


def test_final_text_bytes_without_a_temporary_directory(ctx: ir.Context, monkeypatch, tmp_path) -> None:
    """An unwritable temporary directory only makes printing slower, never different."""
    import tempfile

    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    expected = mlir.module_text_bytes(module, verified=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    assert mlir.final_text_bytes(module) == expected


def test_final_text_bytes_refuses_a_dump_it_does_not_recognise(ctx: ir.Context, monkeypatch) -> None:
    """No dump where one was written is a bug to report, not a reason to print another way."""
    import glob

    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    monkeypatch.setattr(glob, "glob", lambda *a, **k: [])
    with pytest.raises(PassError, match="IR printer wrote 0 dump"):
        mlir.final_text_bytes(module)


@pytest.mark.parametrize("dump, printed", [
    (b"// -----// IR Dump After Print //----- //\nmodule {\n}\n\n", b"module {\n}"),
    (b"// -----// IR Dump After Print //----- //\n\n\n", b""),
    (b"// -----// IR Dump After Print //----- //\nmodule {\n}\n", None),  # one newline short
    (b"// -----// IR Dump After Print //----- //\n\n", None),
    (b"// -----// IR Dump After Print //----- //", None),  # no line after the header
    (b"// not a dump header\nmodule {\n}\n\n", None),
])
def test_final_text_bytes_reads_the_module_out_of_the_dump(ctx: ir.Context, monkeypatch, tmp_path,
                                                          dump: bytes, printed: bytes | None) -> None:
    """The module is the dump less its header line and two final newlines; any other layout is refused."""
    import glob

    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    crafted = tmp_path / "crafted.mlir"
    crafted.write_bytes(dump)
    monkeypatch.setattr(glob, "glob", lambda *a, **k: [str(crafted)])
    if printed is None:
        with pytest.raises(PassError, match="unexpected layout"):
            mlir.final_text_bytes(module)
    else:
        assert mlir.final_text_bytes(module) == printed


def test_bytecode_round_trip(ctx: ir.Context) -> None:
    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    data = mlir.to_bytecode(module)
    assert data.startswith(mlir.BYTECODE_MAGIC)
    assert mlir.detect_kind(data) == mlir.MLIR_BYTECODE
    loaded = mlir.load(data, "add.mlirbc", ctx)
    assert mlir.print_module(loaded) == mlir.print_module(module)


def test_portable_artifact_is_upgraded_to_stablehlo(ctx: ir.Context) -> None:
    from jaxlib.mlir.dialects import stablehlo

    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    artifact = stablehlo.serialize_portable_artifact(module, stablehlo.get_minimum_version())
    assert mlir.detect_kind(artifact) == mlir.MLIR_BYTECODE
    loaded = mlir.load(artifact, "add.portable", ctx)
    names = op_names(loaded)
    assert "stablehlo.transpose" in names
    assert not any(name.startswith("vhlo.") for name in names)


def test_stdin_is_read_as_bytes(ctx: ir.Context, monkeypatch: pytest.MonkeyPatch) -> None:
    data = mlir.to_bytecode(mlir.load(ADD_TEXT, "add.mlir", ctx))
    fake_stdin = io.TextIOWrapper(io.BytesIO(data))
    monkeypatch.setattr(sys, "stdin", fake_stdin)
    module = mlir.read_input("-", ctx)
    assert "stablehlo.add" in op_names(module)


def test_read_input_reads_files(ctx: ir.Context, tmp_path: Path) -> None:
    path = tmp_path / "add.mlir"
    path.write_text(ADD_TEXT)
    assert "stablehlo.transpose" in op_names(mlir.read_input(str(path), ctx))


# --------------------------------------------------------------------------
# HLO text


def _xla_dump(tmp_path: Path) -> Path:
    """Compile a JAX program with a pinned column-major argument and result on
    CPU and return XLA's dump of the module just before layout assignment."""
    import jax
    import jax.numpy as jnp
    from jax.experimental.layout import Format, Layout
    from jax.sharding import SingleDeviceSharding

    sharding = SingleDeviceSharding(jax.devices("cpu")[0])
    column_major = Format(Layout(major_to_minor=(1, 0)), sharding)

    def f(x, y):
        a = jnp.sin(x) @ y.T
        keys = jnp.arange(a.size, dtype=jnp.int32).reshape(a.shape)
        values, indices = jax.lax.sort((a, keys), num_keys=1)
        return values.T * 2, indices

    x = jnp.ones((4, 8), jnp.float32)
    y = jnp.ones((3, 8), jnp.float32)
    jitted = jax.jit(f, in_shardings=(column_major, None), out_shardings=(column_major, None))
    jitted.lower(x, y).compile(
        compiler_options={"xla_dump_to": str(tmp_path), "xla_dump_hlo_pass_re": "layout-assignment"}
    )
    (dump,) = tmp_path.glob("*before_layout-assignment.txt")
    return dump


def _entry_instruction_names(hlo_text: str) -> set[str]:
    entry = hlo_text[hlo_text.index("\nENTRY ") :]
    return set(re.findall(r"^\s*(?:ROOT\s+)?%([\w.\-]+) =", entry, re.M))


def test_xla_dump_loads_with_instruction_names_as_locations(
    ctx: ir.Context, tmp_path: Path
) -> None:
    dump = _xla_dump(tmp_path)
    text = dump.read_text()
    # The dump has the sections and metadata this test is about.
    for section in ("FileNames", "FunctionNames", "FileLocations", "StackFrames", "metadata={"):
        assert section in text
    assert mlir.detect_kind(text.encode()) == mlir.HLO_TEXT

    module = mlir.read_input(str(dump), ctx)

    names = _entry_instruction_names(text)
    located = entry_op_locations(module)
    assert located, "empty @main"
    for op_name, location in located:
        if op_name == "func.return":
            continue
        match = re.fullmatch(r'loc\("([^"]+)"\)', location)
        assert match, f"{op_name} has no plain NameLoc: {location}"
        assert match.group(1) in names, f"{op_name} named {match.group(1)!r}, not an instruction"
    assert any(op == "stablehlo.sort" for op, _ in located)
    # Metadata did not leak into locations.
    assert "jit(f)" not in mlir.print_module(module, debuginfo=True)

    attributes = module.operation.attributes
    parameter_layouts = [str(a) for a in ir.ArrayAttr(attributes["mhlo.xla_entry_computation_parameter_layouts"])]
    assert parameter_layouts == [
        "dense<[0, 1]> : tensor<2xindex>",
        "dense<[1, 0]> : tensor<2xindex>",
    ]


def test_hlo_type_like_instruction_names_are_renamed(ctx: ir.Context) -> None:
    hlo = """\
HloModule m

ENTRY %e (p: f32[2]) -> f32[2] {
  %s1 = f32[2]{0} parameter(0)
  %u8 = f32[2]{0} negate(%s1), metadata={op_name="a}b" profile_type={1,2}}
  %f8e3m4 = f32[2]{0} negate(%u8)
  %s16 = f32[2]{0} negate(%f8e3m4)
  ROOT %f32 = f32[2]{0} add(%s16, %s1)
}
"""
    module = mlir.load(hlo, "types.hlo", ctx)
    assert entry_op_locations(module) == [
        ("stablehlo.negate", 'loc("u8_")'),
        ("stablehlo.negate", 'loc("f8e3m4_")'),
        ("stablehlo.negate", 'loc("s16_")'),
        ("stablehlo.add", 'loc("f32_")'),
        ("func.return", "loc(unknown)"),
    ]
    arg_loc = str(main_func(module).regions[0].blocks[0].arguments[0].location)
    assert arg_loc == 'loc("s1_")'


def test_prepare_hlo_text_keeps_lines_strings_and_avoids_collisions() -> None:
    hlo = (
        "HloModule m\n"
        "ENTRY e {\n"
        "  s1 = f32[2]{0} parameter(0)\n"
        '  s1_ = f32[2]{0} custom-call(s1), custom_call_target="s1, metadata={x}", '
        'metadata={op_name="q}" source_line=3}\n'
        "  ROOT pred = f32[2]{0} add(s1_, s1)\n"
        "}\n"
    )
    prepared = mlir.prepare_hlo_text(hlo)
    assert prepared.count("\n") == hlo.count("\n")
    assert prepared.splitlines()[2:5] == [
        "  s1__ = f32[2]{0} parameter(0)",
        '  s1_ = f32[2]{0} custom-call(s1__), custom_call_target="s1, metadata={x}"',
        "  ROOT pred_ = f32[2]{0} add(s1_, s1__)",
    ]


def test_hlo_parse_error_reports_line(ctx: ir.Context) -> None:
    hlo = "HloModule m\nENTRY e {\n  %p = f32[2]{0} parameter(0)\n  ROOT %r = f32[2]{0} frob(%p)\n}\n"
    error = load_error(hlo, ctx, "bad.hlo")
    assert (error.line, error.col) == (4, 23)
    assert "frob" in error.reason
    assert str(error).startswith("bad.hlo:4:23: error: expects opcode")


def test_hlo_parse_error_on_a_line_we_rewrote_has_no_column(ctx: ir.Context) -> None:
    hlo = (
        "HloModule m\nENTRY e {\n  %p = f32[2]{0} parameter(0)\n"
        '  ROOT %r = f32[2]{0} negate(%q), metadata={op_name="r"}\n}\n'
    )
    error = load_error(hlo, ctx, "bad.hlo")
    assert (error.line, error.col, error.reason) == (4, None, "instruction does not exist: q")


def test_invalid_converted_hlo_points_at_the_instruction(ctx: ir.Context) -> None:
    # The HLO parser does not check shapes; the StableHLO verifier does, and
    # its NameLoc leads back to the instruction's line.
    hlo = "HloModule m\nENTRY e {\n  %p = f32[2]{0} parameter(0)\n  ROOT %r = f32[3]{0} negate(%p)\n}\n"
    error = load_error(hlo, ctx, "shape.hlo")
    assert (error.line, error.col) == (4, 8)
    assert "stablehlo.negate" in error.reason and "compatible types" in error.reason


# --------------------------------------------------------------------------
# jax.export artifacts


def _exported(fun, *specs) -> bytes:
    import jax

    return bytes(jax.export.export(jax.jit(fun))(*specs).serialize())


def test_jax_export_artifact_loads(ctx: ir.Context) -> None:
    import jax
    import jax.numpy as jnp

    spec = jax.ShapeDtypeStruct((4, 8), jnp.float32)
    data = _exported(lambda x: (jnp.sin(x).T, jnp.sort(x, axis=0)), spec)
    assert mlir.detect_kind(data) == mlir.JAX_EXPORT
    module = mlir.load(data, "f.jaxexport", ctx)
    names = op_names(module)
    assert {"stablehlo.sine", "stablehlo.transpose", "stablehlo.sort"} <= set(names)
    assert not any(name.startswith("vhlo.") for name in names)
    main = main_func(module)
    assert str(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)) == (
        "(tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>)"
    )


def test_jax_export_with_unregistered_pytree_still_loads(
    ctx: ir.Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    import collections

    import jax
    import jax.numpy as jnp
    from jax._src.export import _export

    Pair = collections.namedtuple("Pair", ["a", "b"])
    jax.export.register_namedtuple_serialization(Pair, serialized_name="test_mlir_loading.Pair")
    data = _exported(lambda x: Pair(x + 1, x * 2), jax.ShapeDtypeStruct((3,), jnp.float32))
    # As in a process that never registered the type: full deserialization fails.
    monkeypatch.delitem(_export.deserialization_registry, "test_mlir_loading.Pair")
    with pytest.raises(ValueError, match="unregistered type"):
        jax.export.deserialize(bytearray(data))
    module = mlir.load(data, "pair.jaxexport", ctx)
    assert {"stablehlo.add", "stablehlo.multiply"} <= set(op_names(module))


# --------------------------------------------------------------------------
# Bad inputs


@pytest.mark.parametrize("data", [b"", b"  \n\t\n"])
def test_empty_input(ctx: ir.Context, data: bytes) -> None:
    error = load_error(data, ctx, "empty.mlir")
    assert (error.reason, error.line, error.col) == ("empty input", None, None)
    assert str(error) == "empty.mlir: error: empty input"


@pytest.mark.parametrize(
    "data",
    [
        bytes(random.Random(0).randrange(256) for _ in range(512)),
        b"\x00\x01\x02 module {}",  # valid UTF-8, but binary
        b"\x10\x00\x00\x00" + b"\xff" * 12 + mlir.BYTECODE_MAGIC,  # flatbuffer-ish
    ],
)
def test_binary_garbage(ctx: ir.Context, data: bytes) -> None:
    error = load_error(data, ctx, "junk.bin")
    assert "not MLIR text, MLIR bytecode, HLO text or a jax.export artifact" in error.reason
    assert error.line is None


def test_truncated_bytecode(ctx: ir.Context) -> None:
    data = mlir.to_bytecode(mlir.load(ADD_TEXT, "add.mlir", ctx))
    error = load_error(data[: len(data) // 2], ctx, "cut.mlirbc")
    assert error.reason.startswith("bad MLIR bytecode: ")
    assert error.line is None


def test_truncated_portable_artifact(ctx: ir.Context) -> None:
    from jaxlib.mlir.dialects import stablehlo

    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    artifact = stablehlo.serialize_portable_artifact(module, stablehlo.get_current_version())
    error = load_error(artifact[: len(artifact) // 2], ctx, "cut.portable")
    assert error.reason.startswith("bad StableHLO portable artifact: ")
    assert "bytes" in error.reason  # the bytecode reader's own words


def test_truncated_jax_export(ctx: ir.Context) -> None:
    import jax
    import jax.numpy as jnp

    data = _exported(jnp.sin, jax.ShapeDtypeStruct((3,), jnp.float32))
    error = load_error(data[: len(data) // 2], ctx, "cut.jaxexport")
    assert "jax.export artifact" in error.reason
    assert error.line is None


def test_mlir_syntax_error_has_line_and_column(ctx: ir.Context) -> None:
    text = "module {\n  func.func @f() {\n    foo\n  }\n}\n"
    error = load_error(text, ctx, "bad.mlir")
    assert (error.line, error.col) == (3, 5)
    assert error.reason == "custom op 'foo' is unknown (tried 'func.foo' as well)"
    assert str(error) == "bad.mlir:3:5: error: custom op 'foo' is unknown (tried 'func.foo' as well)"


def test_mlir_missing_quotes_error(ctx: ir.Context) -> None:
    error = load_error("\n\n  %0 = 1\n", ctx, "bad.mlir")
    assert (error.line, error.reason) == (3, "expected operation name in quotes")


def test_text_that_fails_verification_has_line(ctx: ir.Context) -> None:
    text = (
        "func.func @f(%a: tensor<2xf32>) -> tensor<3xf32> {\n"
        "  %0 = stablehlo.add %a, %a : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n"
        "}\n"
    )
    error = load_error(text, ctx, "verify.mlir")
    assert (error.line, error.col) == (3, 3)
    assert "doesn't match function result type" in error.reason


def test_bytecode_that_fails_verification(ctx: ir.Context) -> None:
    module = mlir.load(ADD_TEXT, "add.mlir", ctx)
    body = main_func(module).regions[0].blocks[0]
    list(body.operations)[-1].erase()  # drop the terminator
    data = mlir.to_bytecode(module)
    error = load_error(data, ctx, "broken.mlirbc")
    # A verifier complaint, not the bytecode reader's: no "bad MLIR bytecode".
    assert error.reason.startswith("block with no terminator")
    # Bytecode has no lines; the stored location is named instead.
    assert error.line is None
    assert "(at -:" not in error.reason


def test_missing_and_unreadable_files(ctx: ir.Context, tmp_path: Path) -> None:
    missing = tmp_path / "nope.mlir"
    with pytest.raises(InputError) as info:
        mlir.read_input(str(missing), ctx)
    assert (info.value.path, info.value.reason) == (str(missing), "no such file")
    with pytest.raises(InputError) as info:
        mlir.read_input(str(tmp_path), ctx)
    assert info.value.reason == "is a directory"


# --------------------------------------------------------------------------
# Error rendering


def test_input_error_rendering() -> None:
    assert str(InputError("a.mlir", "bad", 3, 7)) == "a.mlir:3:7: error: bad"
    assert str(InputError("a.mlir", "bad", 3)) == "a.mlir:3: error: bad"
    assert str(InputError("a.mlir", "bad")) == "a.mlir: error: bad"
    assert str(InputError("a.mlir", "first\n  second\n\nthird")) == "a.mlir: error: first; second; third"
    error = pickle.loads(pickle.dumps(InputError("a.mlir", "bad", 1, 2)))
    assert (error.path, error.reason, error.line, error.col) == ("a.mlir", "bad", 1, 2)


def test_pass_error_rendering() -> None:
    assert str(PassError("no layout", 'loc("add.1")')) == 'loc("add.1"): error: no layout'
    assert str(PassError("no layout")) == "no layout"
