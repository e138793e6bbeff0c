"""analyze(fn, ..., target="xla-gpu", gpu=..., verify=True): held against XLA:GPU compiled deviceless.

These compile with XLA:GPU's own compiler (the ``gpu-oracle`` test extra) and
skip, saying why, only where it cannot be installed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from stablehlo_layout.xla import gpu_deviceless as xla_gpu_compile
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.frontends.jax import analyze

needs_oracle = pytest.mark.skipif(not xla_gpu_compile.plugin_available(),
                                  reason=f"XLA:GPU's compiler is not installed: {xla_gpu_compile.INSTALL_HINT}")

X = jax.ShapeDtypeStruct((2, 4, 8, 8), jnp.float32)
W = jax.ShapeDtypeStruct((8, 4, 3, 3), jnp.float32)


def conv_relu(x, w):
    return jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")))


@needs_oracle
def test_h100_conv_copies_verified_one_to_one():
    a = analyze(conv_relu, X, W, target="xla-gpu", gpu="h100", verify=True)
    v = a.verification
    assert a.verified is True, a.mismatches
    assert v.copies_compared and v.oracle.startswith("XLA:GPU h100 (sm_9.0")
    # NHWC on the H100: the activations and the kernel in, the result back out.
    assert sorted((x.shape, x.dst) for x in v.xla_copies) == [
        ("f32[2,4,8,8]", (1, 3, 2, 0)), ("f32[2,8,8,8]", (3, 2, 1, 0)), ("f32[8,4,3,3]", (1, 3, 2, 0))]
    assert v.copies_matched == 3 == len(a.copies)
    assert "entry layouts and copies one to one" in v.compared and "XLA 3, matched 3" in v.compared
    assert "XLA:GPU chose" in repr(a) and "verified: 3 entry layouts and copies" in repr(a)
    assert [e.xla for e in a.params] == [(3, 2, 1, 0), (3, 2, 1, 0)]


@needs_oracle
def test_a100_keeps_the_f32_conv_nchw():
    a = analyze(conv_relu, X, W, target="xla-gpu", gpu="a100", verify=True)
    assert a.verified is True, a.mismatches
    assert a.verification.xla_copies == [] and a.copies == []
    assert "a100 (sm_8.0" in a.verification.oracle


@needs_oracle
def test_a_copy_difference_is_reported_both_ways(monkeypatch):
    real = xla_gpu_compile.compile_deviceless

    def with_one_more(*args, **kwargs):
        out = real(*args, **kwargs)
        out.copies.append(xla_gpu_compile.XlaCopy("copy.99", "p", "f32[2,4,8,8]", (3, 2, 1, 0), (0, 1, 2, 3), ""))
        out.copies.pop(0)
        return out

    monkeypatch.setattr(xla_gpu_compile, "compile_deviceless", with_one_more)
    a = analyze(conv_relu, X, W, target="xla-gpu", gpu="h100", verify=True)
    assert a.verified is False
    assert a.verification.copies_matched == 2
    assert any("XLA:GPU makes no such copy" in m for m in a.mismatches), a.mismatches
    assert any("copy.99" in m and "we make no such copy" in m for m in a.mismatches), a.mismatches
    assert "2 difference(s) from XLA" in repr(a)


def test_without_the_plugin_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setattr(xla_gpu_compile, "plugin_available", lambda: False)
    with pytest.raises(PassError, match="gpu-oracle"):
        analyze(conv_relu, X, W, target="xla-gpu", gpu="a100", as_compiled=False, verify=True)


def test_cpu_verification_compares_entry_layouts_only():
    a = analyze(lambda x: jnp.sin(x).T, jnp.ones((3, 4)), target="xla-cpu", verify=True)
    assert a.verified is True
    assert a.verification.oracle == "XLA:CPU" and not a.verification.copies_compared
    assert a.verification.compared == "2 entry layouts, against XLA:CPU"


@needs_oracle
def test_auto_entry_layouts_are_compared_with_the_ones_xla_gpu_chose():
    from jax.experimental.layout import Layout

    a = analyze(conv_relu, X, W, in_layouts=Layout.AUTO, out_layouts=Layout.AUTO,
                target="xla-gpu", gpu="h100", verify=True)
    assert a.verified is True, a.mismatches
    # Left open, every entry goes NHWC on the H100 and no copy is needed.
    assert [e.xla for e in a.params + a.results] == [(1, 3, 2, 0)] * 3
    assert a.copies == [] and a.verification.xla_copies == []


@needs_oracle
def test_a_gpu_target_object_is_verified_for_its_own_gpu():
    from stablehlo_layout.targets.xla_gpu import XlaGpuTarget

    a = analyze(conv_relu, X, W, target=XlaGpuTarget(gpu="a100"), verify=True)
    assert a.verified is True, a.mismatches
    assert a.verification.copies_compared and "a100 (sm_8.0" in a.verification.oracle


def _fake_plugin(monkeypatch, pjrt_version: str) -> str:
    """The XLA:GPU plugin looks installed, its jax-cuda12-pjrt at ``pjrt_version``; jaxlib's version back."""
    import importlib.metadata as md
    import importlib.util

    real_version, real_find = md.version, importlib.util.find_spec
    jaxlib = real_version("jaxlib")

    def version(dist):
        if dist in ("jax-cuda12-pjrt", "jax-cuda12-plugin"):
            return pjrt_version if dist == "jax-cuda12-pjrt" else jaxlib
        if dist.startswith("jax-cuda13"):
            raise md.PackageNotFoundError(dist)
        return real_version(dist)

    def find_spec(name, *args):
        if name == "jax_plugins.xla_cuda12":
            return object()
        if name == "jax_plugins.xla_cuda13":
            return None
        return real_find(name, *args)

    monkeypatch.setattr(md, "version", version)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return jaxlib


def test_a_plugin_of_another_xla_is_refused_with_one_line(monkeypatch):
    jaxlib = _fake_plugin(monkeypatch, "0.9.2")
    line = xla_gpu_compile.plugin_version_mismatch()
    assert line == (f"XLA:GPU's plugin jax-cuda12-pjrt 0.9.2 does not match jaxlib {jaxlib}: "
                    f"pip install 'jax-cuda12-pjrt=={jaxlib}' (or {xla_gpu_compile.INSTALL_HINT[len('pip install '):]})")
    assert "\n" not in line
    with pytest.raises(PassError) as e:
        xla_gpu_compile.gpu_device("a100")
    assert str(e.value) == line
    from tests.differential.gpu_oracle import oracle_available

    assert oracle_available() == (False, line)


def test_a_plugin_of_jaxlibs_own_version_passes_the_check(monkeypatch):
    jaxlib = _fake_plugin(monkeypatch, "unused")
    import importlib.metadata as md

    monkeypatch.setattr(md, "version", lambda dist: jaxlib)
    assert xla_gpu_compile.plugin_version_mismatch() == ""


def test_a_copy_of_a_tuple_element_operand_knows_its_source_layout():
    """XLA 0.11+ dumps copy a tuple element as `copy(%t#0)`, with no get-tuple-element to name it."""
    before = ("ENTRY %main (p: f32[2,8]) -> f32[2,8] {\n"
              "  %cc.2 = (f32[2,8]{0,1}, u8[0]{0}) custom-call(%p), custom_call_target=\"x\"\n"
              "}\n")
    after = ("ENTRY %main (p: f32[2,8]) -> f32[2,8] {\n"
             "  %cc.2 = (f32[2,8]{0,1}, u8[0]{0}) custom-call(%p), custom_call_target=\"x\"\n"
             "  ROOT %copy.2 = f32[2,8]{1,0} copy(%cc.2#0)\n"
             "}\n")
    (c,) = xla_gpu_compile.added_copies(before, after)
    assert (c.name, c.operand, c.shape, c.src, c.dst) == ("copy.2", "cc.2#0", "f32[2,8]", (0, 1), (1, 0))
