"""``--as-compiled``: XLA's own pipeline up to layout assignment, then our pass on XLA's module.

The realistic programs of ``tests/differential/as_compiled.py`` go from their
raw ``jax.export`` artifact through ``compile.compile_module`` (what the flag
does) and are held against the after-layout-assignment dump of the same
function compiled by ``jax.jit``: entry layouts, every named value, and every
copy XLA makes matched by (source value, layout).  The rest checks what a
user sees: the command line, source lines from XLA's metadata, entry layouts
reaching the compile, XLA's refusals in one line, and the temporary dump
folder never outliving the command.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import textwrap
from pathlib import Path

import pytest

from tests.support import ROOT

jax = pytest.importorskip("jax")
jnp = jax.numpy

from stablehlo_layout.frontends import cli  # noqa: E402
from stablehlo_layout.ir import mlir  # noqa: E402
from stablehlo_layout.xla import dumps as xla_dumps, pipeline as xla_compile  # noqa: E402
from stablehlo_layout.model.errors import InputError  # noqa: E402
from stablehlo_layout.ir.metadata import entry_parameter_key, read_sources  # noqa: E402
from stablehlo_layout.xla.gpu_deviceless import plugin_available  # noqa: E402

from tests.differential import realistic  # noqa: E402
from tests.differential.as_compiled import check, programs  # noqa: E402
from tests.differential.models import available as models_missing  # noqa: E402
from tests.support.tiers import ORACLE, one_fast  # noqa: E402

# The realistic program in the fast tier; the rest run with -m oracle.
FAST = {"mlp_train_step"}



def _no_dump_folders(root: Path) -> list[str]:
    return [p.name for p in root.iterdir() if p.name.startswith("stablehlo-layout-xla-")]


@pytest.fixture
def tmpdir_for_dumps(tmp_path, monkeypatch):
    """Temporary files of the compile land in ``tmp_path``, so the test can see what is left."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


# -- realistic programs against XLA:CPU ----------------------------------------------------------


@pytest.mark.parametrize("program", one_fast(programs(), FAST, key=lambda p: p.name), ids=lambda p: p.name)
def test_realistic_program_agrees_with_xla_cpu(program, tmp_path):
    r = check(program, "xla-cpu", workdir=str(tmp_path))
    assert r["status"] == "ok", r
    # Our compile of the raw export is the very module jax.jit hands XLA's layout assignment.
    assert r["same_module"]
    assert r["entry_agrees"], r["entry"]
    assert r["values"] > 0
    layout_diffs = [d for d in r["diffs"] if d["kind"] == "layout"]
    assert r["agree"] == r["values"], layout_diffs[:5]
    copy_diffs = [d for d in r["diffs"] if d["kind"] != "layout"]
    assert not copy_diffs, copy_diffs[:5]
    assert r["edges_matched"] == r["xla_edges"]
    # Every XLA copy, the same-layout ones of in-place LAPACK operands included
    # (linalg_solve), is ours by (source, layout).
    assert r["xla_copies_matched"] == r["xla_copies"]


def test_the_issue_cases_change_as_compiled(tmp_path):
    """Raw StableHLO and XLA's module disagree on the MLP step (2 copies vs XLA's 0): as compiled, 0."""
    from stablehlo_layout.frontends.api import assign_module

    step = next(p for p in programs() if p.name == "mlp_train_step")
    path = tmp_path / "step.jax_export"
    path.write_bytes(step.exported())
    raw = assign_module(mlir.read_input(str(path), mlir.make_context()), "xla-cpu")
    compiled = xla_compile.compile_module(mlir.read_input(str(path), mlir.make_context()), str(path), "xla-cpu")
    ours = assign_module(mlir.load(compiled.before, str(path), mlir.make_context()), "xla-cpu")
    assert len(raw.copies) > 0
    assert len(ours.copies) == 0
    assert compiled.after is not None and " copy(" not in compiled.after


# -- the realistic corpus (tests/differential/realistic.py) and XLA's instruction list ---------------

REALISTIC_FAST = {"embedding_grad"}


@pytest.mark.parametrize("name", one_fast(list(realistic.NAMES), REALISTIC_FAST))
def test_realistic_corpus_agrees_with_xla_cpu(name, tmp_path):
    """Library steps, loops, conditionals, linalg, gathers: every value and every XLA copy (seed 0)."""
    if name not in REALISTIC_FAST and models_missing():
        pytest.skip(models_missing())
    r = check(realistic.build(name, 0), "xla-cpu", workdir=str(tmp_path))
    assert r["status"] == "ok", r
    assert r["same_module"] and r["entry_agrees"], r.get("entry")
    assert r["agree"] == r["values"] > 0, [d for d in r["diffs"] if d["kind"] == "layout"][:5]
    assert r["xla_copies_matched"] == r["xla_copies"], [c for c in r["xla_copy_info"] if not c["matched"]][:5]


def test_xla_list_order_decides_the_reshapes_a_pass_made(tmp_path):
    """An embedding's gradient: XLA's list holds the reshapes its passes merged after the scatter
    they feed, so their bitcast layouts win and XLA copies.  The text dump alone does not say so
    (1 of XLA's 4 copies); its HloProto's instruction ids do (4 of 4)."""
    program = realistic.build("embedding_grad", 0)
    blind = check(program, "xla-cpu", workdir=str(tmp_path), list_order=False)
    seen = check(program, "xla-cpu", workdir=str(tmp_path), list_order=True)
    assert blind["xla_copies"] == seen["xla_copies"] == 4
    assert blind["xla_copies_matched"] < 4 and blind["agree"] < blind["values"]
    assert seen["xla_copies_matched"] == 4 and seen["agree"] == seen["values"]


def _message(fields: list[tuple[int, int | bytes]]) -> bytes:
    """A protobuf message of varint and length-delimited fields (what a HloProto uses)."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)

    out = b""
    for number, value in fields:
        if isinstance(value, int):
            out += varint(number << 3) + varint(value)
        else:
            out += varint(number << 3 | 2) + varint(len(value)) + value
    return out


def test_hlo_proto_list_order_sorts_by_unique_id():
    from stablehlo_layout.ir.hlo_proto import list_order

    def instr(name: str, uid: int) -> bytes:
        return _message([(1, name.encode()), (2, b"add"), (35, uid)])

    comp = _message([(1, b"main"), (2, instr("c", 7 << 32 | 9)), (2, instr("a", 7 << 32 | 1)),
                     (2, instr("b", 7 << 32 | 4))])
    module = _message([(1, b"jit_f"), (3, comp)])
    assert list_order(_message([(1, module)])) == ["a", "b", "c"]  # an HloProto around the module
    assert list_order(module) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        list_order(b"\x0f")


def test_list_order_as_a_plan_keeps_the_block_order_prefix():
    from stablehlo_layout.targets.xla_cpu import _after_the_block_order

    assert _after_the_block_order([1, 2, 3, 4, 5], (1, 2, 4, 3, 5)) == (3, 5)
    assert _after_the_block_order([1, 2, 3], (1, 2, 3)) == ()
    assert _after_the_block_order([1, 2, 3], (3, 1, 2)) == (1, 2)


def test_a_dump_with_its_proto_beside_is_read_in_list_order(tmp_path):
    """A raw XLA:CPU dump folder with --xla_dump_hlo_as_proto: the text's .hlo.pb beside it gives the order."""
    from stablehlo_layout.frontends.api import assign_module

    program = realistic.build("embedding_grad", 0)
    path = tmp_path / "x.jax_export"
    path.write_bytes(program.exported())
    compiled = xla_compile.compile_module(mlir.read_input(str(path), mlir.make_context()), str(path), "xla-cpu")
    assert compiled.before_proto is not None
    text = tmp_path / "m.before_layout-assignment.txt"
    text.write_text(compiled.before)
    alone = assign_module(mlir.read_input(str(text), mlir.make_context()), "xla-cpu")
    (tmp_path / "m.before_layout-assignment.hlo.pb").write_bytes(compiled.before_proto)
    ordered = assign_module(mlir.read_input(str(text), mlir.make_context()), "xla-cpu")
    assert ordered.graph.list_order and not alone.graph.list_order
    assert len(ordered.copies) == 3 and len(alone.copies) == 1  # XLA's 4, one per use, are 3 (source, layout)
    (tmp_path / "m.before_layout-assignment.hlo.pb").write_bytes(b"\x0f")
    with pytest.raises(InputError, match="HloProto"):
        mlir.read_input(str(text), mlir.make_context())


# -- realistic programs against deviceless XLA:GPU -------------------------------------------------

# linalg_solve agrees on XLA:GPU too (it was 28/31 values): the Cholesky's
# symmetrization reads its input twice inside the inlined jit(cholesky), and
# XLA's call inliner leaves the add ahead of the transpose among the input's
# users (hlo_metadata.py), so the transpose's forward layout reaches the add first.
# (rnn_scan was a gap on XLA 0.12 until its loop-state rule, docs/VERSIONS.md item 5.)
KNOWN_GAPS_GPU: set[str] = set()


def _gpu_device(name: str):
    if not plugin_available():
        pytest.skip("XLA:GPU's compiler is not installed (pip install 'stablehlo-layout[xla-gpu]')")
    from stablehlo_layout.targets.gpu_config import load_gpu
    from stablehlo_layout.xla.gpu_deviceless import deviceless_device

    gpu = load_gpu(name)
    try:
        return gpu, deviceless_device(gpu.text)
    except Exception as e:  # the plugin is installed but did not register in this process
        pytest.skip(f"XLA:GPU's plugin did not load: {str(e).splitlines()[0]}")


# Every program on H100; on A100 those whose layouts change with the GPU (convolutions).
A100_PROGRAMS = {"conv_nchw_train_step", "conv_nhwc_train_step", "conv_nchw_forward_bf16"}


@ORACLE
@pytest.mark.parametrize("gpu_name", ["h100", "a100"])
def test_realistic_programs_agree_with_deviceless_xla_gpu(gpu_name, tmp_path):
    gpu, device = _gpu_device(gpu_name)
    failures = []
    for program in programs(device):
        if program.name in KNOWN_GAPS_GPU or (gpu_name == "a100" and program.name not in A100_PROGRAMS):
            continue
        r = check(program, "xla-gpu", gpu, workdir=str(tmp_path))
        assert r["status"] == "ok", r
        if not (r["same_module"] and r["entry_agrees"] and r["agree"] == r["values"] and not r["diffs"]):
            failures.append((program.name, r.get("entry"), r["diffs"][:3]))
    assert not failures, failures


# -- the command line ----------------------------------------------------------------------------------

PROGRAM = '''\
import jax.numpy as jnp


def layer(x, w):
    h = jnp.tanh(x @ w)
    return h.T * 2.0
'''


@pytest.fixture
def user_export(tmp_path, monkeypatch):
    """A user's function in its own file, exported to a serialized artifact with column-major x."""
    from jax.experimental.layout import Format, Layout
    from jax.sharding import SingleDeviceSharding

    src = tmp_path / "user_model.py"
    src.write_text(PROGRAM)
    # A fresh module per test: each test's file is the one XLA's metadata must name.
    spec = importlib.util.spec_from_file_location(f"user_model_{abs(hash(str(tmp_path)))}", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sharding = SingleDeviceSharding(jax.devices("cpu")[0])
    col = Format(Layout(major_to_minor=(1, 0)), sharding)
    s = jax.ShapeDtypeStruct
    jitted = jax.jit(mod.layer, in_shardings=(col, None))
    exported = jax.export.export(jitted)(s((16, 8), jax.numpy.float32), s((8, 4), jax.numpy.float32))
    out = tmp_path / "layer.jax_export"
    out.write_bytes(exported.serialize())
    return out, src


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _line_of(src: Path, text: str) -> int:
    return next(i for i, line in enumerate(src.read_text().splitlines(), 1) if text in line)


def test_explain_names_user_op_and_source_line(user_export, capsys, tmpdir_for_dumps):
    export, src = user_export
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", "--json", str(export))
    assert code == 0, err
    report = json.loads(out)
    assert report["compiled_by"] == "XLA:CPU"
    assert report["copies"], report
    sources = [c["producer"].get("source") for c in report["copies"]]
    sources += [u.get("source") for c in report["copies"] for u in c["consumers"]]
    lines = {(s["file"], s["line"]) for s in sources if s and s["file"]}
    assert (str(src), _line_of(src, "x @ w")) in lines or (str(src), _line_of(src, "h.T")) in lines, lines
    for s in sources:
        if s and s["file"]:
            assert s["op_name"].startswith("jit(layer)/"), s
            assert s["stack"][0]["function"] == "layer"
    # The column-major x is copied for the dot: the parameter is named as the user's argument.
    params = [c["producer"] for c in report["copies"] if c["producer"]["value"] == "parameter 0 of @main"]
    assert params and params[0]["source"]["op_name"] == "x"
    # Chain links carry the same mapping, and the text form shows it next to the instruction name.
    assert any("source" in link for c in report["copies"] for link in c["consumer_chain"] + c["producer_chain"])
    code, text, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", str(export))
    assert code == 0, err
    assert f"user_model.py:{_line_of(src, 'x @ w')})" in text or f"user_model.py:{_line_of(src, 'h.T')})" in text
    assert "(jit(layer)/" in text
    assert "producer: parameter 0 of @main (x)\n" in text
    assert not _no_dump_folders(tmpdir_for_dumps)


def test_json_validates_against_the_schema(user_export, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    export, _ = user_export
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", "--json", str(export))
    assert code == 0, err
    schema = json.loads((ROOT / "docs" / "explain.schema.json").read_text())
    jsonschema.validate(json.loads(out), schema)


def test_without_the_flag_nothing_changes(user_export, capsys):
    export, _ = user_export
    code, out, err = _run(capsys, "explain", "--target", "xla-cpu", "--json", str(export))
    assert code == 0, err
    assert '"source"' not in out and "compiled_by" not in out


def test_assign_keeps_instruction_names_and_user_call_stack(user_export, capsys):
    export, src = user_export
    code, out, err = _run(capsys, "assign", "--as-compiled", "--target", "xla-cpu", "--mlir-print-debuginfo",
                          str(export))
    assert code == 0, err
    assert err == ""
    assert f'"{src}":{_line_of(src, "x @ w")}' in out
    assert 'loc("dot_general' in out
    # The copy XLA makes for the column-major x (its dot reads row-major) is ours too.
    assert "mhlo.copy" in out


def test_as_compiled_output_computes_what_the_program_computes(user_export, capsys):
    from tests.support.equivalence import assert_bit_identical

    export, _ = user_export
    code, out, err = _run(capsys, "assign", "--as-compiled", "--target", "xla-cpu", str(export))
    assert code == 0, err
    original = mlir.print_module(mlir.read_input(str(export), mlir.make_context()))
    assert_bit_identical(original, out)


def test_entry_layouts_reach_the_compile(capsys, tmp_path):
    """Module-attribute pins and mhlo.layout_mode pins are XLA's entry layouts; AUTO stays open."""
    src = tmp_path / "entry.mlir"
    src.write_text(textwrap.dedent('''\
        module @m attributes {mhlo.xla_entry_computation_parameter_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>]} {
          func.func public @main(%x: tensor<16x4xf32>, %y: tensor<4x16xf32> {mhlo.layout_mode = "auto"}) -> tensor<4x16xf32> {
            %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
            %a = stablehlo.add %t, %y : tensor<4x16xf32>
            return %a : tensor<4x16xf32>
          }
        }
        '''))  # noqa: E501 (IR text, one op per line, as the tool reads it)
    module = mlir.read_input(str(src), mlir.make_context())
    compiled = xla_compile.compile_module(module, str(src), "xla-cpu")
    header = compiled.before.splitlines()[0]
    assert "entry_computation_layout={(f32[16,4]{0,1}, f32[4,16])->f32[4,16]{1,0}}" in header, header
    code, out, err = _run(capsys, "assign", "--as-compiled", "--target", "xla-cpu", str(src))
    assert code == 0, err
    # XLA chose {1,0} for the free y and made two copies (x to row-major for XLA:CPU's
    # transpose, the transpose back to row-major for the add); so do we.
    assert "entry_computation_layout={(f32[16,4]{0,1}, f32[4,16]{1,0})->f32[4,16]{1,0}}" in compiled.after
    assert compiled.after.count(" copy(") == 2
    assert 'mhlo.layout_mode = "{0,1}"' in out and 'mhlo.layout_mode = "{1,0}", stablehlo_layout.chosen' in out
    assert out.count("mhlo.copy") == 2
    # Free entry layouts: XLA is asked to choose every one.
    compiled_free = xla_compile.compile_module(module, str(src), "xla-cpu", entry_layouts="free")
    assert "entry_computation_layout={(f32[16,4]{0,1}, f32[4,16])->f32[4,16]}" in compiled_free.before.splitlines()[0]


def test_function_reference_as_compiled(capsys):
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", "--json",
                          "examples.models:mlp", "--arg", "f32[8,128]{0,1}", "--arg", "f32[128,256]")
    assert code == 0, err
    report = json.loads(out)
    assert report["compiled_by"] == "XLA:CPU"
    models = str(ROOT / "examples" / "models.py")
    assert any(u.get("source", {}).get("file") == models for c in report["copies"] for u in c["consumers"])


def test_hlo_text_input_as_compiled(capsys):
    code, out, err = _run(capsys, "assign", "--as-compiled", "--target", "xla-cpu",
                          str(ROOT / "examples" / "xla_dump" / "before_layout-assignment.txt"))
    assert code == 0, err
    assert "mhlo.copy" in out


def test_as_compiled_needs_an_xla_target(user_export, capsys):
    export, _ = user_export
    code, out, err = _run(capsys, "assign", "--as-compiled", str(export))
    assert code == 1
    assert err.count("\n") == 1 and "--as-compiled" in err and "--target xla-cpu, xla-gpu or xla-tpu" in err


def test_xla_refusing_is_one_line_with_xlas_message(capsys, tmp_path, tmpdir_for_dumps):
    src = tmp_path / "dynamic.mlir"
    src.write_text(textwrap.dedent('''\
        func.func public @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
          %y = stablehlo.negate %x : tensor<?x4xf32>
          return %y : tensor<?x4xf32>
        }
        '''))
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", str(src))
    assert code == 1 and out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"{src}: error: XLA:CPU refused to compile it: ")
    assert "dynamism" in err  # XLA's own words
    assert not _no_dump_folders(tmpdir_for_dumps)


def test_ops_xla_does_not_know_are_refused_before_compiling(capsys, tmp_path):
    src = tmp_path / "vendor.mlir"
    src.write_text(textwrap.dedent('''\
        func.func public @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
          %y = "vendor.op"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
          return %y : tensor<4x4xf32>
        }
        '''))
    code, out, err = _run(capsys, "assign", "--as-compiled", "--target", "xla-cpu", str(src))
    assert code == 1
    assert err == f"{src}:2:8: error: XLA cannot compile 'vendor.op': an op of a dialect XLA does not know\n"


# -- the temporary dump folder ---------------------------------------------------------------------


class _InterruptingClient:
    """Stands in for jaxlib's CPU client: the compile is interrupted (Ctrl-C, or SIGTERM)."""

    def __init__(self, how: str) -> None:
        self.how = how

    def compile_and_load(self, *args, **kwargs):
        if self.how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            return None
        raise KeyboardInterrupt


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_dump_folder_is_removed_when_interrupted(how, user_export, monkeypatch, tmpdir_for_dumps):
    export, _ = user_export
    cpu_client = xla_compile._cpu_client

    def interrupted():
        client, device = cpu_client()
        return _InterruptingClient(how), device

    monkeypatch.setattr(xla_compile, "_cpu_client", interrupted)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        xla_compile.compile_module(mlir.read_input(str(export), mlir.make_context()), str(export), "xla-cpu")
    assert not _no_dump_folders(tmpdir_for_dumps)
    assert signal.getsignal(signal.SIGTERM) is previous  # the command's own handler is back


# -- one room runs XLA with layout assignment's dumps -----------------------------------------------


def test_one_compile_hands_back_both_dumps_and_leaves_no_folder(tmpdir_for_dumps):
    lowered = jax.jit(lambda x: (x @ x.T).sum(0)).lower(jax.ShapeDtypeStruct((4, 8), "float32"))
    dumps = xla_dumps.run_to_layout_assignment(lambda flags: lowered.compile(compiler_options=flags))
    assert dumps.failure is None and dumps.result is not None
    assert dumps.before.startswith("HloModule") and " dot(" in dumps.before
    # The two sides of the same module's layout assignment.
    assert dumps.after.split(",", 1)[0] == dumps.before.split(",", 1)[0] == "HloModule jit__lambda"
    assert not _no_dump_folders(tmpdir_for_dumps)


def test_a_failing_compile_is_handed_back_not_raised(tmpdir_for_dumps):
    seen = []

    def refuse(flags):
        seen.append(os.path.isdir(flags["xla_dump_to"]))
        raise RuntimeError("INTERNAL: refused")

    dumps = xla_dumps.run_to_layout_assignment(refuse)
    assert seen == [True]
    assert dumps.before is None and dumps.after is None and dumps.result is None
    assert str(dumps.failure) == "INTERNAL: refused"
    assert not _no_dump_folders(tmpdir_for_dumps)


def _counting_room(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = xla_dumps.run_to_layout_assignment

    def counting(compile):
        calls.append(1)
        return real(compile)

    monkeypatch.setattr(xla_dumps, "run_to_layout_assignment", counting)
    return calls


def test_as_compiled_runs_xla_through_the_one_room(monkeypatch):
    from stablehlo_layout.frontends.jax import analyze

    calls = _counting_room(monkeypatch)
    analyze(lambda x: jnp.sin(x).T, jnp.ones((3, 4)), target="xla-cpu")
    assert len(calls) == 1


def test_gpu_verify_runs_xla_through_the_same_room(monkeypatch):
    from stablehlo_layout.frontends.jax import analyze

    _gpu_device("h100")
    calls = _counting_room(monkeypatch)
    a = analyze(lambda x: jnp.sin(x).T, jnp.ones((3, 4)), target="xla-gpu", gpu="h100", verify=True)
    assert len(calls) == 2  # --as-compiled's compile, then verify's
    assert a.verification.copies_compared and a.verified, a.mismatches


# -- XLA:GPU without its packages -----------------------------------------------------------------


def test_gpu_without_the_plugin_says_what_to_install(user_export, monkeypatch, capsys):
    export, _ = user_export
    real = importlib.util.find_spec

    def find_spec(name, *a):
        if name.startswith("jax_plugins"):  # as where no JAX plugin was ever installed
            raise ModuleNotFoundError("No module named 'jax_plugins'")
        return real(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-gpu", "--gpu", "a100", str(export))
    assert code == 1
    assert err.count("\n") == 1, err
    assert "pip install 'stablehlo-layout[xla-gpu]'" in err



def test_gpu_with_a_plugin_of_another_xla_is_refused_with_one_line(user_export, monkeypatch, capsys):
    """--as-compiled checks the plugin's version as verify=True does: another XLA's layouts would be wrong."""
    from stablehlo_layout.xla import pipeline as compile_room

    export, _ = user_export
    monkeypatch.setattr(compile_room, "plugin_available", lambda: True)
    line = "XLA:GPU's plugin jax-cuda12-pjrt 0.9.2 does not match jaxlib 0.10.2: pip install 'jax-cuda12-pjrt==0.10.2'"
    monkeypatch.setattr(compile_room, "plugin_version_mismatch", lambda: line)
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-gpu", "--gpu", "a100", str(export))
    assert code == 1
    assert err.count("\n") == 1, err
    assert line in err

# -- the Python front door ---------------------------------------------------------------------------


def test_analyze_defaults_to_as_compiled():
    from stablehlo_layout.frontends.jax import analyze

    step = next(p for p in programs() if p.name == "conv_nchw_train_step")
    a = analyze(step.fn, *step.args)
    assert a.copies and any("source" in c.producer for c in a.copies)
    assert any("source" in u for c in a.copies for u in c.consumers)
    assert "conv_general_dilated at " in repr(a)
    raw = analyze(step.fn, *step.args, as_compiled=False, fixes=False)
    assert all("source" not in c.producer for c in raw.copies)


# -- reading XLA's metadata ----------------------------------------------------------------------------

DUMP = '''\
HloModule jit_net, entry_computation_layout={(f32[8,16]{1,0})->f32[16,8]{1,0}}

FileNames
1 "/src/run.py"
2 "/src/model.py"

FunctionNames
1 "<module>"
2 "net"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=0 end_column=46}
2 {file_name_id=2 function_name_id=2 line=3 end_line=3 column=8 end_column=20}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}


ENTRY %main.1 (x.1: f32[8,16]) -> f32[16,8] {
  %x.1 = f32[8,16]{1,0} parameter(0), metadata={op_name="x"}
  %neg.1 = f32[8,16]{1,0} negate(%x.1), metadata={op_name="jit(net)/neg" stack_frame_id=2}
  ROOT %transpose.1 = f32[16,8]{0,1} transpose(%neg.1), dimensions={1,0}, metadata={op_name="jit(net)/transpose" source_file="/src/old.py" source_line=12}
}
'''  # noqa: E501 (IR text, one op per line, as the tool reads it)


def test_read_sources_follows_stack_frames_and_source_lines():
    s = read_sources(DUMP)
    assert s["x.1"].op_name == "x" and s["x.1"].stack == ()
    assert s[entry_parameter_key(0)] == s["x.1"]
    neg = s["neg.1"]
    assert neg.op_name == "jit(net)/neg"
    assert [(f.file, f.line, f.function) for f in neg.stack] == [("/src/model.py", 3, "net"), ("/src/run.py", 7, "<module>")]
    assert neg.text() == "jit(net)/neg at /src/model.py:3"
    t = s["transpose.1"]
    assert (t.frame.file, t.frame.line) == ("/src/old.py", 12)


def test_loader_keeps_names_and_adds_call_stacks():
    ctx = mlir.make_context()
    module = mlir.load(DUMP, "dump.txt", ctx, hlo_sources=True)
    text = mlir.print_module(module, debuginfo=True)
    assert 'loc("neg.1"(callsite(' in text.replace("#loc", "") or '"neg.1"(' in text
    assert '"/src/model.py":3:8' in text
    plain = mlir.print_module(mlir.load(DUMP, "dump.txt", mlir.make_context()), debuginfo=True)
    assert "/src/model.py" not in plain  # without the option, nothing changes


def test_bad_target_before_reading(capsys):
    with pytest.raises(InputError):
        xla_compile.check_target("generic")


def test_multi_platform_export_is_refused(tmp_path, capsys):
    """XLA would lay out every platform's branch of such an export, not the program that runs."""
    def f(a):
        return jax.numpy.linalg.cholesky(a @ a.T + 4.0 * jax.numpy.eye(4)).T

    exported = jax.export.export(jax.jit(f), platforms=["cpu", "cuda"])(jax.ShapeDtypeStruct((4, 4), "float32"))
    path = tmp_path / "multi.jax_export"
    path.write_bytes(exported.serialize())
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", str(path))
    assert code == 1
    assert err == (f"{path}: error: a jax.export for several platforms (its @main takes the platform index): "
                   "--as-compiled needs one exported for the target's platform alone, e.g. "
                   "jax.export.export(f, platforms=['cpu'])\n")


def test_function_reference_for_xla_gpu_is_lowered_for_cuda(capsys):
    _gpu_device("a100")
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-gpu", "--gpu", "a100", "--json",
                          "--no-fixes", "examples.models:cholesky_solve", "--arg", "f32[32,32]", "--arg", "f32[32,4]")
    assert code == 0, err
    report = json.loads(out)
    assert report["compiled_by"].startswith("XLA:GPU (")
    assert "cusolver_potrf_ffi" in out and "lapack_" not in out


@pytest.mark.parametrize("program", one_fast(programs(), FAST, key=lambda p: p.name), ids=lambda p: p.name)
def test_as_compiled_output_computes_bit_identical_results(program, tmp_path, capsys):
    """XLA's module, laid out and rewritten by us, computes what the user's program computes."""
    from tests.support.equivalence import assert_bit_identical

    path = tmp_path / f"{program.name}.jax_export"
    path.write_bytes(program.exported())
    code, out, err = _run(capsys, "assign", "--as-compiled", "--target", "xla-cpu", str(path))
    assert code == 0, err
    original = mlir.print_module(mlir.read_input(str(path), mlir.make_context()))
    assert_bit_identical(original, out)


def test_readme_walkthrough(capsys, monkeypatch):
    """The README's first walkthrough, as printed there."""
    monkeypatch.chdir(ROOT)
    args = ["--arg", "f32[2,3,16,16]", "--arg", "f32[8,3,3,3]", "--arg", "f32[16,8,3,3]"]
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-cpu", "examples.models:convnet_nchw",
                          *args)
    assert code == 0, err
    readme = (ROOT / "README.md").read_text()
    for line in ("copy #1: f32[2,16,16,3] {2,1,3,0} -> {3,2,1,0}",
                 "  consumer: operand 0 of stablehlo.convolution at convolution "
                 "(jit(convnet_nchw)/conv_general_dilated at examples/models.py:78)",
                 "summary: 3 copies, 11.3 KiB moved per execution (target xla-cpu, entry layouts default)"):
        assert line + "\n" in out and line in readme
    raw = _run(capsys, "explain", "--target", "xla-cpu", "examples.models:convnet_nchw", *args)[1]
    assert "summary: 0 copies" in raw
    if plugin_available():
        for gpu, copies in (("h100", 3), ("a100", 0)):
            out = _run(capsys, "explain", "--as-compiled", "--target", "xla-gpu", "--gpu", gpu, "--no-fixes",
                       "examples.models:convnet_nchw", *args)[1]
            assert f"summary: {copies} cop" in out, out[-300:]


# -- XLA:TPU, deviceless ------------------------------------------------------------------------------

def _tpu_or_skip() -> None:
    from stablehlo_layout.xla.tpu_deviceless import unavailable

    why = unavailable()
    if why:
        pytest.skip(why)


# Transposes whose results feed elementwise work: XLA:TPU makes them bitcasts by
# copying the parameters (docs/TPU-OBSERVED.md section 5), two copies here.
TPU_PROGRAM = """
func.func public @main(%x: tensor<256x384xf32>, %w: tensor<8x128x256xbf16>)
    -> (tensor<384x256xf32>, tensor<8x256x128xbf16>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<256x384xf32>) -> tensor<384x256xf32>
  %n = stablehlo.negate %t : tensor<384x256xf32>
  %u = stablehlo.transpose %w, dims = [0, 2, 1] : (tensor<8x128x256xbf16>) -> tensor<8x256x128xbf16>
  %m = stablehlo.multiply %u, %u : tensor<8x256x128xbf16>
  return %n, %m : tensor<384x256xf32>, tensor<8x256x128xbf16>
}
"""


@pytest.fixture
def tpu_program(tmp_path) -> Path:
    path = tmp_path / "transposes.mlir"
    path.write_text(TPU_PROGRAM)
    return path


@pytest.mark.parametrize("generation", ["v5e", "v6e"])
def test_tpu_as_compiled_agrees_with_libtpu(user_export, tpu_program, generation):
    """XLA:TPU's module before its layout assignment, laid out by us, matches the one libtpu returns."""
    from stablehlo_layout.frontends.api import assign_module
    from stablehlo_layout.model.graph import shape_text
    from stablehlo_layout.xla.gpu_deviceless import added_copies, entry_layouts

    _tpu_or_skip()
    for path, copies in ((user_export[0], 0), (tpu_program, 2)):
        ctx = mlir.make_context()
        module = mlir.read_input(str(path), ctx)
        compiled = xla_compile.compile_module(module, str(path), "xla-tpu", tpu=generation)
        assert compiled.backend == f"XLA:TPU {generation}" and compiled.after is not None
        ours = assign_module(mlir.load(compiled.before, str(path), mlir.make_context(), hlo_sources=True),
                             "xla-tpu", tpu=generation)
        params, results = entry_layouts(compiled.after)
        assert ours.assignment.entry_params == params and ours.assignment.entry_results == results
        # XLA copies once per use (the multiply reads its copy twice); we copy once per value.
        xla = sorted({(c.shape, c.dst) for c in added_copies(compiled.before, compiled.after)})
        assert len(xla) == copies
        assert sorted((shape_text(ours.graph.values[c.value]), c.dst) for c in ours.copies) == \
            sorted((shape.split("{")[0], dst) for shape, dst in xla)
        if path == user_export[0]:  # the column-major pin reached the compile, tiled as XLA:TPU tiles it
            assert "f32[16,8]{0,1:T(8,128)}" in compiled.before.split("\n", 1)[0]


def test_tpu_as_compiled_from_the_command_line(tpu_program, capsys):
    _tpu_or_skip()
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-tpu", "--tpu", "v4", str(tpu_program))
    assert code == 0, err
    assert "summary: 2 copies" in out and "(target xla-tpu v4, entry layouts default)" in out
    assert "  tiled: {1,0:T(8,128)} -> {0,1:T(8,128)}; with the tiles' padding it reads 384.0 KiB" in out


def test_tpu_without_libtpu_says_what_to_install(user_export, monkeypatch, capsys):
    from stablehlo_layout.xla import tpu_deviceless

    export, _ = user_export
    monkeypatch.setattr(tpu_deviceless, "unavailable", lambda: "XLA:TPU's compiler (libtpu) is not installed: "
                                                                 + tpu_deviceless.INSTALL_HINT)
    code, out, err = _run(capsys, "explain", "--as-compiled", "--target", "xla-tpu", str(export))
    assert code == 1 and out == ""
    assert err.count("\n") == 1, err
    assert "pip install 'stablehlo-layout[xla-tpu]'" in err


def test_analyze_verifies_against_xla_tpu():
    """analyze(target="xla-tpu", verify=True) holds entry layouts and copies against libtpu's own answer."""
    from stablehlo_layout.frontends.jax import analyze

    _tpu_or_skip()

    def f(x, w):
        return jnp.tanh(x @ w).T * 2.0, x.T * 3.0

    s = jax.ShapeDtypeStruct
    a = analyze(f, s((256, 384), jnp.float32), s((384, 128), jnp.bfloat16), target="xla-tpu", tpu="v6e", verify=True)
    assert a.verified and not a.mismatches, a.mismatches
    assert a.verification.oracle == "XLA:TPU v6e, compiled deviceless"
    assert len(a.verification.xla_copies) == a.verification.copies_matched == len(a.copies) == 1


@pytest.mark.parametrize("target", [("xla-cpu",), ("xla-tpu", "--tpu", "v5e")])
def test_as_compiled_prints_nothing_but_its_own_lines(user_export, target):
    """Run as a user runs it, with none of jax's or XLA's logging variables set: XLA's C++ log
    lines ("HloModule dump enabled ...") never reach stderr."""
    import subprocess
    import sys

    if target[0] == "xla-tpu":
        _tpu_or_skip()
    export, _ = user_export
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "JAX_PLATFORMS")}
    done = subprocess.run([sys.executable, "-m", "stablehlo_layout", "explain", "--as-compiled", "--target", *target,
                           str(export)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.startswith(("copy #", "summary:"))
