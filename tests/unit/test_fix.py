"""``stablehlo-layout fix``: changes that remove XLA's copies, each confirmed by compiling with XLA.

What a user relies on: every number is XLA's and comes back when the
written program is compiled again; the written program keeps the entry
signature and computes the same results (executed through XLA:CPU on the
same random inputs, each fed in the layout its executable expects); a
change XLA does not confirm is never kept; bad requests get one line.
"""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest

from tests.support import ROOT

jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax

from stablehlo_layout.ir import conv_order, dot_order, entry_modes  # noqa: E402
from stablehlo_layout.ir.inline import inline_calls  # noqa: E402
from stablehlo_layout.ir.transposes import sink_transposes  # noqa: E402
from stablehlo_layout.xla.entry_copies import entry_wishes  # noqa: E402
from stablehlo_layout.fix.measure import Measure  # noqa: E402
from stablehlo_layout.fix.search import fix_module  # noqa: E402
from stablehlo_layout.frontends import cli  # noqa: E402
from stablehlo_layout.ir import mlir  # noqa: E402
from stablehlo_layout.targets import get_target  # noqa: E402
from stablehlo_layout.xla.gpu_deviceless import plugin_available  # noqa: E402
from stablehlo_layout.xla.tpu_deviceless import unavailable as tpu_unavailable  # noqa: E402

from tests.support import equivalence  # noqa: E402


def _head(x, w):
    return jnp.tanh(x @ w)


def _conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _cnn_step(params, x, y):
    """A CNN training step as users write it in NCHW: per-channel bias, ReLU, max pooling."""
    def loss(params):
        k1, b1, k2, w = params
        h = jax.nn.relu(_conv(x, k1) + b1[None, :, None, None])
        h = jax.nn.relu(_conv(h, k2))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return jnp.mean((h.mean(axis=(2, 3)) @ w - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return value, tuple(p - 0.1 * g for p, g in zip(params, grads))


CNN_ARGS = ((jax.ShapeDtypeStruct((8, 3, 3, 3), jnp.float32), jax.ShapeDtypeStruct((8,), jnp.float32),
             jax.ShapeDtypeStruct((8, 8, 3, 3), jnp.float32), jax.ShapeDtypeStruct((8, 4), jnp.float32)),
            jax.ShapeDtypeStruct((2, 3, 8, 8), jnp.float32), jax.ShapeDtypeStruct((2, 4), jnp.float32))


def _column_major_head() -> str:
    """A dense head whose input the caller pins column-major: XLA:CPU copies it to row-major for the dot."""
    text = jax.jit(_head).lower(jnp.zeros((64, 128)), jnp.zeros((128, 256))).as_text()
    module = mlir.load(text, "head", mlir.make_context())
    entry_modes.set_modes(module, {0: "{0,1}"}, {})  # what jax writes for Format(Layout((1, 0)))
    return module.operation.get_asm(enable_debug_info=True)


def _fix(text: str, target: str = "xla-cpu", **kw):
    tgt, _ = get_target(target, kw.pop("gpu", None), kw.pop("tpu", None))
    module = mlir.load(text, "program.mlir", mlir.make_context())
    return fix_module(module, "program.mlir", tgt, **kw)


def _close(a: list[np.ndarray], b: list[np.ndarray], exact: bool) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def test_a_column_major_input_is_freed_and_xla_confirms_it():
    text = _column_major_head()
    r = _fix(text)
    assert r.target == "XLA:CPU"
    assert (r.before.copies, r.before.bytes) == (1, 64 * 128 * 4)
    assert (r.after.copies, r.after.bytes) == (0, 0)
    [kept] = r.fixes
    assert kept.candidate.kind == "entry-layout" and "leave parameter 0" in kept.candidate.what
    assert kept.removed(r.before) == (1, 64 * 128 * 4)
    # Same signature, same results (only layouts change: bit for bit), and the numbers come back.
    assert equivalence.main_arg_types(r.fixed_text) == equivalence.main_arg_types(text)
    inputs = equivalence.make_inputs(text, seed=3)
    _close(equivalence.run(text, inputs), equivalence.run(r.fixed_text, inputs), exact=True)
    again = Measure(get_target("xla-cpu", None, None)[0], "fixed")(
        mlir.load(r.fixed_text, "fixed", mlir.make_context()))
    assert (again.copies, again.bytes) == (r.after.copies, r.after.bytes)


def test_nothing_to_fix_leaves_the_program_alone():
    text = jax.jit(_head).lower(jnp.zeros((8, 16)), jnp.zeros((16, 4))).as_text()
    r = _fix(text)
    assert r.before.copies == 0 and r.after.copies == 0 and not r.tried and not r.fixes


@pytest.fixture(scope="module")
def cnn_analysis():
    """The CNN step through ``analyze``, its fixes searched once (an XLA:CPU compile per
    candidate): the checks of the numbers and of the source lines read the same search."""
    from stablehlo_layout.frontends.jax import analyze

    a = analyze(_cnn_step, *CNN_ARGS)
    assert a.fixes is a.fixes  # compiled once
    return a


def test_the_cnn_is_rewritten_channels_last_and_every_number_comes_back(cnn_analysis):
    r = cnn_analysis.fixes
    text = jax.jit(_cnn_step).lower(*CNN_ARGS).as_text()  # the program as the user's jit gives it
    assert {t.candidate.kind for t in r.tried} >= {"entry-layout", "convolution-order"}
    # No change is kept that XLA does not confirm, and the written program is better than the given one.
    for t in r.fixes:
        assert t.measured is not None and t.measured.bytes < r.before.bytes
    assert "convolution-order" in {t.candidate.kind for t in r.fixes}
    assert r.after.bytes < r.before.bytes
    again = Measure(get_target("xla-cpu", None, None)[0], "fixed")(
        mlir.load(r.fixed_text, "fixed", mlir.make_context()))
    assert (again.copies, again.bytes) == (r.after.copies, r.after.bytes)
    assert equivalence.main_arg_types(r.fixed_text) == equivalence.main_arg_types(text)
    inputs = equivalence.make_inputs(text, seed=5)
    _close(equivalence.run(text, inputs), equivalence.run(r.fixed_text, inputs), exact=False)


def test_json_report_validates_and_names_the_written_file(tmp_path, capsys, monkeypatch):
    jsonschema = pytest.importorskip("jsonschema")
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    out = tmp_path / "fixed.mlir"
    assert cli.main(["fix", "--target", "xla-cpu", "--json", "-o", str(out), str(src)]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "fix.schema.json").read_text()))
    assert doc["xla"]["before"]["copies"] == 1 and doc["xla"]["after"]["copies"] == 0
    assert doc["output"] == str(out) and out.read_text().startswith("#loc") or "func.func" in out.read_text()
    [f] = doc["fixes"]
    assert f["verified_by"] == "XLA:CPU" and f["copies_removed"] == 1 and f["bytes_removed"] == 32768
    assert f["where"]["file"] == str(src)  # a module parsed from a file: its lines are the file's


def test_text_report_says_the_change_and_the_numbers(tmp_path, capsys):
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    assert cli.main(["fix", str(src)]) == 0
    captured = capsys.readouterr()
    assert "fix compiles with XLA:CPU" in captured.err
    assert "XLA's copies: 1 (32.0 KiB) as given, 0 (0 B) fixed" in captured.out
    assert re.search(r'leave parameter 0 free \(Layout.AUTO.*now \{0,1\}\)', captured.out)
    assert "give -o FILE" in captured.out


@pytest.mark.parametrize("argv, message", [
    (["--target", "generic"], "give --target xla-cpu"),
    (["--as-compiled"], "fix takes neither --as-compiled"),
])
def test_bad_requests_get_one_line(tmp_path, capsys, argv, message):
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    assert cli.main(["fix", *argv, str(src)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_explain_verify_fixes_lists_what_xla_confirms_under_the_copies(tmp_path, capsys):
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    assert cli.main(["explain", "--verify-fixes", str(src)]) == 0
    captured = capsys.readouterr()
    assert "--verify-fixes compiles with XLA:CPU" in captured.err
    text = captured.out
    # explain's own report first (its copy, by our pass), then XLA's numbers for each confirmed change.
    assert text.index("copy #1:") < text.index("changes XLA:CPU confirms")
    assert "  XLA's copies: 1 (32.0 KiB) as given, 0 (0 B) fixed: -1 copy, -32.0 KiB" in text
    assert re.search(r"  1\. .*leave parameter 0 free \(Layout.AUTO.*: XLA:CPU makes 0 copies, -1 copy, -32.0 KiB", text)


def test_explain_json_carries_the_verified_fixes_as_fix_writes_them(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    assert cli.main(["explain", "--json", "--verify-fixes", "--target", "xla-cpu", str(src)]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "explain.schema.json").read_text()))
    verified = doc["verified_fixes"]
    jsonschema.validate(verified, json.loads((ROOT / "docs" / "fix.schema.json").read_text()))
    assert verified["xla"]["before"] == {**verified["xla"]["before"], "copies": 1, "bytes": 32768}
    [f] = verified["fixes"]
    assert f["kind"] == "entry-layout" and f["copies_removed"] == 1 and f["verified_by"] == "XLA:CPU"


def test_the_trace_page_shows_the_verified_fixes(tmp_path, capsys):
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    page = tmp_path / "page.html"
    assert cli.main(["trace", "--html", str(page), "--verify-fixes", "--target", "xla-cpu", str(src)]) == 0
    html = page.read_text()
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1))
    title, head, rows = data["summary"]["tables"][-1]
    assert title == "Changes XLA:CPU confirms: 1 copy (32.0 KiB) as given, 0 (0 B) with them all"
    [row] = rows
    assert row[0] == "1" and row[1].startswith(f"{src}:") and "leave parameter 0 free" in row[2]
    assert row[3:] == ["0", "-1 copy, -32.0 KiB"]


@pytest.mark.parametrize("argv, message", [
    (["explain", "--verify-fixes", "--target", "generic"], "--verify-fixes compiles with XLA: give --target"),
    (["trace", "--verify-fixes"], "give --html OUT.html"),
])
def test_verify_fixes_refuses_what_it_cannot_do_in_one_line(tmp_path, capsys, argv, message):
    src = tmp_path / "head.mlir"
    src.write_text(_column_major_head())
    assert cli.main([*argv, str(src)]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert message in line


def test_verify_fixes_on_a_dump_says_to_give_the_program(capsys):
    dump = next((ROOT / "examples" / "xla_dump").rglob("*before_layout-assignment.txt"))
    assert cli.main(["explain", "--verify-fixes", str(dump)]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(dump) in line and "is an XLA dump: --verify-fixes changes the program XLA compiles" in line


def test_an_xla_dump_is_refused_with_the_reason(capsys):
    dump = next((ROOT / "examples" / "xla_dump").rglob("*before_layout-assignment.txt"))
    assert cli.main(["fix", str(dump)]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert str(dump) in line and "is an XLA dump" in line


def test_entry_wishes_read_the_layout_that_spares_a_copy():
    after = textwrap.dedent("""\
        HloModule m, entry_computation_layout={(f32[4,3,5]{2,1,0})->f32[5,4,3]{2,1,0}}

        ENTRY %main (p: f32[4,3,5]) -> f32[5,4,3] {
          %p = f32[4,3,5]{2,1,0} parameter(0)
          %t = f32[5,4,3]{1,0,2} transpose(%p), dimensions={2,0,1}
          ROOT %c = f32[5,4,3]{2,1,0} copy(%t)
        }
        """)
    wishes = entry_wishes(after)
    # Laid out {1,0,2}, parameter 0 holds its elements in the order [5,4,3] row-major: the transpose is a bitcast.
    assert wishes.params == {0: [(1, 0, 2)]}
    assert wishes.results == {0: [(1, 0, 2)]}


def test_convolutions_rewritten_compute_the_same_and_their_transposes_meet():
    text = jax.jit(_cnn_step).lower(*CNN_ARGS).as_text()
    inputs = equivalence.make_inputs(text, seed=0)
    expected = equivalence.run(text, inputs)
    for order in conv_order.ORDERS:
        module = mlir.load(text, "cnn", mlir.make_context())
        inline_calls(module)
        assert conv_order.rewrite_convolutions(module, order) > 0
        sink_transposes(module)
        module.operation.verify()
        assert all(s.order == order for s in conv_order.convolutions(module))
        rewritten = module.operation.get_asm(enable_debug_info=True)
        _close(expected, equivalence.run(rewritten, inputs), exact=False)
    # Channels-last: the first convolution's result, through the bias and the ReLU, reaches the
    # second one in its own order: no transpose between them.
    module = mlir.load(text, "cnn", mlir.make_context())
    inline_calls(module)
    conv_order.rewrite_convolutions(module, "channels-last")
    sink_transposes(module)
    second = [op for op in mlir.nested_ops(module.operation) if op.name == "stablehlo.convolution"][1]
    producer = second.operands[0].owner
    assert producer.name != "stablehlo.transpose", str(producer)


def _scores_read_transposed(a, b):
    """Batched scores the program reads with the last two dims swapped: XLA:CPU's dot writes them in
    the dot's own order, and the transpose after the exp is a copy."""
    return jnp.swapaxes(jnp.exp(jnp.einsum("bij,bjk->bik", a, b)), 1, 2) * 3.0


SCORE_ARGS = (jax.ShapeDtypeStruct((4, 64, 32), jnp.float32), jax.ShapeDtypeStruct((4, 32, 48), jnp.float32))


def test_a_dot_swapped_computes_the_same_and_its_transpose_folds():
    text = jax.jit(_scores_read_transposed).lower(*SCORE_ARGS).as_text()
    module = mlir.load(text, "scores", mlir.make_context())
    [site] = dot_order.dots(module)
    assert (site.shape, site.swapped) == ((4, 64, 48), (4, 48, 64))
    assert dot_order.swap_operands(module, {site.index}) == 1
    sink_transposes(module)
    module.operation.verify()
    names = [op.name for op in mlir.nested_ops(module.operation)]
    assert "stablehlo.transpose" not in names and names.count("stablehlo.dot_general") == 1
    inputs = equivalence.make_inputs(text, seed=7)
    _close(equivalence.run(text, inputs),
           equivalence.run(module.operation.get_asm(enable_debug_info=True), inputs), exact=False)


def test_fix_swaps_the_dot_and_keeps_the_entry_layouts():
    text = jax.jit(_scores_read_transposed).lower(*SCORE_ARGS).as_text()
    r = _fix(text)
    assert (r.before.copies, r.before.bytes) == (1, 4 * 48 * 64 * 4)
    assert (r.after.copies, r.after.bytes) == (0, 0)
    # Freeing the result spares the copy too; the rewrite is kept instead, as it leaves the caller's layouts be.
    assert any(t.candidate.kind == "entry-layout" and t.measured is not None and t.measured.bytes == 0
               for t in r.tried)
    [kept] = r.fixes
    assert kept.candidate.kind == "dot-operand-order" and "4x48x64" in kept.candidate.what
    assert entry_modes.entry_modes(mlir.load(r.fixed_text, "f", mlir.make_context())) == \
        entry_modes.entry_modes(mlir.load(text, "g", mlir.make_context()))
    assert equivalence.main_arg_types(r.fixed_text) == equivalence.main_arg_types(text)
    inputs = equivalence.make_inputs(text, seed=8)
    _close(equivalence.run(text, inputs), equivalence.run(r.fixed_text, inputs), exact=False)


def _sliced_transpose(p, w, v):
    """A 1024x1024 array read whole by one dot and, transposed, by a slice of 8 columns into another."""
    return jnp.tanh(p.T[:, :8] @ w), p @ v


SLICE_ARGS = (jnp.zeros((1024, 1024)), jnp.zeros((8, 16)), jnp.zeros((1024, 4)))


def test_a_layout_constraint_after_a_slice_moves_xlas_copy_onto_the_slice():
    from stablehlo_layout.ir import layout_constraint

    text = jax.jit(_sliced_transpose).lower(*SLICE_ARGS).as_text()
    r = _fix(text)
    # XLA:CPU copies all of p.T (4 MiB) to row-major before slicing 8 columns of it; no entry
    # layout helps (p itself feeds a row-major dot).  Sliced in place, it copies the 32 KiB slice.
    assert (r.before.copies, r.before.bytes) == (1, 1024 * 1024 * 4)
    assert (r.after.copies, r.after.bytes) == (1, 1024 * 8 * 4)
    assert all(t.measured is None or t.measured.bytes >= r.before.bytes
               for t in r.tried if t.candidate.kind == "entry-layout")
    [kept] = r.fixes
    assert kept.candidate.kind == "layout-constraint"
    assert "{0,1}" in kept.candidate.what and "Layout(major_to_minor=(1, 0))" in kept.candidate.what
    fixed = mlir.load(r.fixed_text, "f", mlir.make_context())
    [constraint] = [op for op in mlir.nested_ops(fixed.operation) if op.name == "stablehlo.custom_call"]
    assert "@LayoutConstraint" in str(constraint) and "dense<[0, 1]>" in str(constraint)
    assert layout_constraint.slices(fixed)[0].result == (1024, 8)
    assert equivalence.main_arg_types(r.fixed_text) == equivalence.main_arg_types(text)
    # Layouts alone change: the same bits.
    equivalence.assert_bit_identical(text, r.fixed_text, seed=9)


def test_a_dynamic_slice_is_found_and_constrained_by_its_own_name():
    from stablehlo_layout.ir import layout_constraint

    # Exact arithmetic after the slice: XLA:CPU's tanh (and kin) in another layout may take another
    # vector path and differ by a few ulp (jax 0.12: up to 3 ulp), which this test is not about.
    def f(x, i):
        return lax.dynamic_slice(x, (0, i), (64, 4)) * 2.0 + 1.0

    text = jax.jit(f).lower(jnp.zeros((64, 64)), 3).as_text()
    module = mlir.load(text, "dyn", mlir.make_context())
    [site] = layout_constraint.slices(module)
    assert (site.op, site.operand, site.result) == ("stablehlo.dynamic_slice", (64, 64), (64, 4))
    assert layout_constraint.constrain_slices(module, {site.index: (0, 1)}) == 1
    module.operation.verify()
    [constraint] = [op for op in mlir.nested_ops(module.operation) if op.name == "stablehlo.custom_call"]
    assert "@LayoutConstraint" in str(constraint) and "dense<[0, 1]>" in str(constraint)
    # Every former reader of the slice reads the constraint, not the slice itself.
    [multiply] = [op for op in mlir.nested_ops(module.operation) if op.name == "stablehlo.multiply"]
    assert constraint.results[0] in list(multiply.operands)
    equivalence.assert_bit_identical(text, module.operation.get_asm(enable_debug_info=True), seed=3)


def test_inlining_keeps_what_the_program_computes():
    text = jax.jit(lambda x: jax.nn.relu(x) * 2 + jax.nn.relu(-x)).lower(jnp.zeros((4, 5))).as_text()
    assert "func.call" in text or "call @" in text
    module = mlir.load(text, "relu", mlir.make_context())
    assert inline_calls(module) >= 1
    inlined = module.operation.get_asm(enable_debug_info=True)
    assert "call @" not in inlined and "func.func private" not in inlined
    inputs = equivalence.make_inputs(text, seed=1)
    _close(equivalence.run(text, inputs), equivalence.run(inlined, inputs), exact=True)


@pytest.mark.skipif(not plugin_available(), reason="XLA:GPU's compiler (the gpu-oracle extra) is not installed")
def test_the_same_command_verifies_with_xla_gpu():
    r = _fix(_column_major_head(), "xla-gpu", gpu="h100")
    assert r.target.startswith("XLA:GPU")
    assert r.after.bytes <= r.before.bytes
    for t in r.fixes:
        assert t.candidate.where.op and t.measured is not None and t.measured.bytes < r.before.bytes


@pytest.mark.skipif(tpu_unavailable() is not None, reason=str(tpu_unavailable()))
def test_the_same_command_verifies_with_xla_tpu():
    r = _fix(_column_major_head(), "xla-tpu", tpu="v5e")
    assert r.target == "XLA:TPU v5e"
    assert r.after.bytes <= r.before.bytes
    for t in r.fixes:
        assert t.measured is not None and t.measured.bytes < r.before.bytes


def test_analyze_says_the_fix_at_the_users_source_line(cnn_analysis):
    r = cnn_analysis.fixes
    [conv] = [t for t in r.fixes if t.candidate.kind == "convolution-order"]
    assert conv.candidate.where.file.endswith("test_fix.py")  # where _conv writes its dimension_numbers
    assert "channels-last (dimension_numbers=('NHWC', 'HWIO', 'NHWC'))" in conv.candidate.what
    text = str(r)
    assert "verified by XLA:CPU" in text and "test_fix.py:" in text
