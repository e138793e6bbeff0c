"""analyze(verify=True) says exactly what it compared, and never that copies agree."""

from __future__ import annotations


import pytest

import jax.numpy as jnp
from jax.experimental.layout import Layout

from stablehlo_layout.frontends.jax import analyze
from stablehlo_layout.xla.gpu_deviceless import plugin_available


def _f(x, w):
    return (x @ w).T, jnp.sin(x).T + 1


def test_verify_names_what_it_compared_and_not_copies() -> None:
    x = jnp.ones((8, 16), jnp.float32)
    w = jnp.ones((16, 4), jnp.float32)
    a = analyze(_f, x, w, in_layouts=[Layout((1, 0)), Layout.AUTO], target="xla-cpu", verify=True)
    assert a.verified is True, a.mismatches
    assert a.compared[0].startswith("2 entry parameter and 2 entry result layouts, ours against those "
                                    "of the executable compiled by XLA:CPU")
    assert a.compared[1].startswith("not compared: copies")
    head, verdict = repr(a).splitlines()[:2]  # the summary first: the cost, then what was compared
    assert head.startswith("_f: ") and "moved per execution (target xla-cpu" in head
    assert verdict == "  entry layouts: 4 of 4 as XLA:CPU compiled them (copies not compared)"
    assert "verified against XLA" not in repr(a)
    assert "compared: not compared: copies" in repr(a)
    assert max(len(line) for line in repr(a).splitlines()) <= 100  # fits a terminal: long lines wrap
    assert "copies not compared" in a._repr_html_()


def test_without_verify_nothing_is_claimed() -> None:
    x = jnp.ones((8, 16), jnp.float32)
    a = analyze(lambda x: x.T, x, target="xla-cpu")
    assert a.verified is None and a.compared == []
    assert "XLA" not in repr(a).splitlines()[0]


def test_a_target_other_than_the_compile_platform_is_said() -> None:
    x = jnp.ones((8, 16), jnp.float32)
    a = analyze(lambda x: x.T, x, target="generic", as_compiled=False, verify=True)
    assert any(c == "note: our target is generic, the compile ran on cpu" for c in a.compared)


@pytest.mark.skipif(not plugin_available(),
                    reason="the XLA:GPU oracle (pip install -e '.[gpu-oracle]') is not installed")
def test_xla_gpu_verify_says_it_compared_with_xla_gpu() -> None:
    x = jnp.ones((8, 16), jnp.float32)
    a = analyze(lambda x: x.T, x, target="xla-gpu", gpu="a100", verify=True)
    assert len(a.compared) == 1 and "XLA:GPU a100" in a.compared[0] and "copies one to one" in a.compared[0]
