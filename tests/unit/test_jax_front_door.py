"""The JAX front door: real models through jax.export, the pass, and XLA:CPU as the judge.

For every model in ``examples/models.py`` the entry layouts our pass chooses
must equal the ones XLA:CPU chooses when it compiles the same function with
the same layout requests (``compiled.input_formats`` / ``output_formats``).
With everything pinned to the default that is a check of the plumbing; with
``Layout.AUTO`` it is a check of the pass.
"""

from __future__ import annotations

import sys

import pytest

from tests.support import ROOT

jax = pytest.importorskip("jax")

from jax.experimental.layout import Format, Layout  # noqa: E402

from stablehlo_layout.ir import mlir  # noqa: E402
from stablehlo_layout.frontends.api import assign_module  # noqa: E402
from stablehlo_layout.model.errors import InputError  # noqa: E402
from stablehlo_layout.report.explain import rule_text  # noqa: E402
from stablehlo_layout.frontends.jax import (  # noqa: E402
    analyze,
    is_reference,
    load_reference,
    module_from_reference,
    shape_dtype_struct,
)

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.models import EXAMPLES, mlp, specs_to_args  # noqa: E402
from tests.support.tiers import one_fast  # noqa: E402

AUTO = Layout.AUTO
COL = Layout((1, 0))  # JAX major_to_minor (1, 0) == XLA minor_to_major {0,1}: column-major


def _requests(name: str, mode: str):
    """(in_layouts, out_layouts) for an example: its spec layouts, or everything AUTO."""
    if mode == "auto":
        return AUTO, AUTO
    _, specs = EXAMPLES[name]
    from stablehlo_layout.frontends.jax import _parse_arg_spec

    ins = []
    for s in specs:
        lay = _parse_arg_spec(s).layout
        ins.append(None if lay is None else Layout(tuple(reversed(lay))))
    return ins, None


CASES = [pytest.param(name, mode, id=f"{name}-{mode}") for name in EXAMPLES for mode in ("spec", "auto")]


@pytest.fixture(scope="module")
def analyses():
    cache = {}

    def get(name: str, mode: str):
        if (name, mode) not in cache:
            fn, specs = EXAMPLES[name]
            ins, outs = _requests(name, mode)
            cache[name, mode] = analyze(fn, *specs_to_args(specs), in_layouts=ins, out_layouts=outs, verify=True)
        return cache[name, mode]

    return get


# Every example against XLA:CPU with -m oracle; the MLP's two cases in the fast tier.
@pytest.mark.parametrize("name,mode", one_fast(CASES, {"mlp-spec", "mlp-auto"}))
def test_entry_layouts_match_xla(analyses, name, mode):
    a = analyses(name, mode)
    assert a.verified is True, a.mismatches
    assert a.mismatches == []
    assert a.xla_entry_params == a.entry_params
    assert a.xla_entry_results == a.entry_results
    assert len(a.params) == len(EXAMPLES[name][1])
    # Both orders are reported and are each other's reverse.
    for m2m, jax_order in zip(a.entry_params, a.in_major_to_minor):
        assert tuple(reversed(m2m)) == jax_order


@pytest.mark.parametrize("name,mode", CASES)
def test_every_copy_is_explained(analyses, name, mode):
    a = analyses(name, mode)
    assert a.explanation is not None and len(a.copies) == len(a.explanation.copies)
    for c in a.copies:
        text = c.explain()
        assert text.strip()
        assert c.reason and c.reason != "unknown"
        assert rule_text(c.reason) in text, (c.reason, text)
        # Only XLA's copy of an operand a custom call overwrites keeps the layout.
        assert (c.src == c.dst) == (c.kind == "in-place")
        assert c.bytes > 0
        assert c.to_json()["reason"] == c.reason
    shown = repr(a)
    assert name in shown and "JAX major_to_minor" in shown
    for c in a.copies:
        assert f"#{c.index}" in shown and c.reason in shown
    page = a._repr_html_()
    assert page.startswith("<div") and "<table>" in page
    if a.copies:
        assert "-&gt;" in page and "->" not in page.replace("-&gt;", "")
    assert "mhlo.layout_mode" in a.text


def test_lapack_pins_show_up_as_custom_call_copies(analyses):
    """The everyday copy source on CPU: LAPACK/BLAS custom calls want column-major."""
    a = analyses("cholesky_solve", "spec")
    reasons = {c.reason for c in a.copies}
    assert "custom-call-layout" in reasons
    # Left to choose, b and the result go column-major like trsm wants -- as XLA does.
    auto = analyses("cholesky_solve", "auto")
    assert auto.entry_params[1] == (0, 1) and auto.entry_results == [(0, 1)]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_serialized_export_round_trip(analyses, name):
    """jax.export -> serialize() -> mlir.load -> assign gives what analyze gave."""
    fn, specs = EXAMPLES[name]
    args = specs_to_args(specs)
    a = analyses(name, "auto")
    jitted = jax.jit(fn, in_shardings=Format(AUTO), out_shardings=Format(AUTO), keep_unused=True)
    data = bytes(jax.export.export(jitted)(*args).serialize())
    ctx = mlir.make_context()
    module = mlir.load(data, f"<{name}.jax_export>", ctx)
    result = assign_module(module, "xla-cpu")
    assert [tuple(x) for x in result.assignment.entry_params] == a.entry_params
    assert [tuple(x) for x in result.assignment.entry_results] == a.entry_results


def test_explicit_column_major_and_auto_checked_against_xla():
    """a pinned column-major, b left to the pass: both trsm operands column-major, no copy for b."""
    fn, specs = EXAMPLES["cholesky_solve"]
    a = analyze(fn, *specs_to_args(specs), in_layouts=[COL, AUTO], verify=True)
    assert a.params[0].requested == "{0,1}" and a.params[1].requested == "auto"
    assert a.entry_params == [(0, 1), (0, 1)]
    assert a.in_major_to_minor == [(1, 0), (1, 0)]
    assert a.entry_results == [(1, 0)]  # unstated: pinned to the default
    assert a.verified is True, a.mismatches
    assert a.xla_entry_params == [(0, 1), (0, 1)]
    # The same request through a Format with an explicit sharding.
    s = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    b = analyze(fn, *specs_to_args(specs), in_layouts=[Format(COL, s), Format(AUTO)], verify=True)
    assert b.entry_params == a.entry_params and b.verified


def test_mlp_column_major_input_auto_weight():
    fn, specs = EXAMPLES["mlp"]
    a = analyze(fn, *specs_to_args(specs), in_layouts=[COL, AUTO], out_layouts=AUTO, verify=True)
    assert a.entry_params[0] == (0, 1)
    assert a.verified is True, a.mismatches


def test_pytree_arguments_take_flat_layouts():
    def affine(params, x):
        return x @ params["w"] + params["b"]

    params = {"b": jax.ShapeDtypeStruct((16,), "float32"), "w": jax.ShapeDtypeStruct((8, 16), "float32")}
    x = jax.ShapeDtypeStruct((4, 8), "float32")
    # Flat order: params["b"], params["w"], x.
    a = analyze(affine, params, x, in_layouts=[None, COL, AUTO], verify=True)
    assert [p.shape for p in a.params] == ["f32[16]", "f32[8,16]", "f32[4,8]"]
    assert a.entry_params[1] == (0, 1)
    assert a.verified is True, a.mismatches


def test_arrays_as_arguments():
    import numpy as np

    x = np.ones((8, 128), np.float32)
    w = np.ones((128, 256), np.float32)
    a = analyze(mlp, x, w)
    assert a.verified is None and a.entry_params == [(1, 0), (1, 0)]


def test_analyze_rejects_a_layout_of_the_wrong_rank():
    with pytest.raises(ValueError, match=r"in_layouts\[0\].*not a permutation"):
        analyze(mlp, *specs_to_args(EXAMPLES["mlp"][1]), in_layouts=[Layout((2, 1, 0)), None])
    with pytest.raises(ValueError, match="2 layouts for 1 flat outputs"):
        analyze(mlp, *specs_to_args(EXAMPLES["mlp"][1]), out_layouts=[None, None])


# --- module:function references (the CLI's way in) ------------------------------


def test_module_from_reference():
    data = module_from_reference("examples.models:mlp", ["f32[8,128]{0,1}", "f32[128,256]"])
    assert isinstance(data, bytes)
    ctx = mlir.make_context()
    result = assign_module(mlir.load(data, "examples.models:mlp", ctx), "xla-cpu")
    assert [tuple(x) for x in result.assignment.entry_params] == [(0, 1), (1, 0)]
    a = analyze(mlp, *specs_to_args(EXAMPLES["mlp"][1]), in_layouts=[COL, None])
    assert [tuple(x) for x in result.assignment.entry_params] == a.entry_params
    assert [tuple(x) for x in result.assignment.entry_results] == a.entry_results
    module = load_reference("examples.models:cholesky_solve", ["f32[32,32]", "f32[32,4]{0,1}"], ctx)
    assert 'mhlo.layout_mode = "{0,1}"' in mlir.print_module(module)


def test_is_reference():
    assert is_reference("examples.models:mlp")
    assert is_reference("pkg.sub:Cls.method")
    assert not is_reference("examples/pinned_transpose.mlir")
    assert not is_reference("-")


def _error(ref: str, specs: list[str]) -> InputError:
    with pytest.raises(InputError) as info:
        module_from_reference(ref, specs)
    e = info.value
    assert e.path == ref
    assert "\n" not in str(e) and str(e).startswith(f"{ref}: error: ")
    return e


def test_reference_errors():
    e = _error("no_such_module_xyz:f", ["f32[2]"])
    assert e.reason == "cannot import module 'no_such_module_xyz'"
    e = _error("examples.models:no_such_function", ["f32[2]"])
    assert e.reason == "module 'examples.models' has no function 'no_such_function'"
    e = _error("examples.models", ["f32[2]"])
    assert "MODULE:FUNCTION" in e.reason
    e = _error("examples.models:EXAMPLES", [])
    assert "is not a function" in e.reason


@pytest.mark.parametrize("spec,message", [
    ("f32[8,x]", "dimension 'x' is not a non-negative integer"),
    ("f32 8,128", "not an XLA array shape"),
    ("float[8,128]", "unknown element type 'float'"),
    ("f32[8,?]", "dynamic dimensions are not supported"),
    ("f32[8,128]{0,a}", "non-integer entry"),
])
def test_bad_shape_strings(spec, message):
    e = _error("examples.models:mlp", [spec, "f32[128,256]"])
    assert e.reason.startswith("--arg 1: ") and message in e.reason, e.reason


def test_layout_of_the_wrong_rank():
    e = _error("examples.models:mlp", ["f32[8,128]", "f32[128,256]{0,1,2}"])
    assert e.reason == "--arg 2: 'f32[128,256]{0,1,2}': layout {0,1,2} has 3 entries but the shape has rank 2"
    e = _error("examples.models:mlp", ["f32[8,128]{1,1}", "f32[128,256]"])
    assert "is not a permutation of 0..1" in e.reason


def test_wrong_number_of_args():
    e = _error("examples.models:mlp", ["f32[8,128]"])
    assert e.reason == "mlp(x, w) takes 2 argument(s), got 1 --arg spec(s)"
    e = _error("examples.models:mlp", ["f32[8,128]", "f32[128,256]", "f32[3]"])
    assert "got 3 --arg spec(s)" in e.reason


def test_shapes_that_do_not_fit_the_function():
    e = _error("examples.models:mlp", ["f32[8,128]", "f32[64,256]"])
    assert e.reason.startswith("cannot export with the given --arg shapes: TypeError")


def test_shape_dtype_struct():
    s = shape_dtype_struct("bf16[2,3]{0,1}")
    assert s.shape == (2, 3) and str(s.dtype) == "bfloat16"
    assert shape_dtype_struct("pred[]").shape == ()
    assert str(shape_dtype_struct("s8[4]").dtype) == "int8"


def test_read_input_or_reference():
    from stablehlo_layout.frontends.jax import read_input_or_reference

    ctx = mlir.make_context()
    m = read_input_or_reference("examples.models:mlp", ["f32[8,128]{0,1}", "f32[128,256]"], ctx)
    assert 'mhlo.layout_mode = "{0,1}"' in mlir.print_module(m)
    path = str(ROOT / "examples" / "pinned_transpose.mlir")
    assert "stablehlo.transpose" in mlir.print_module(read_input_or_reference(path, None, ctx))
    with pytest.raises(InputError, match="--arg is only for MODULE:FUNCTION"):
        read_input_or_reference(path, ["f32[2]"], ctx)
