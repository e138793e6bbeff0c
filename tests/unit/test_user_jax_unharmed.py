"""The tool must never break the user's JAX in the same process.

The checks run in a fresh interpreter (the CPU cases one after another in
one, XLA:GPU's verify in another): what matters is the order in which
the tool and jax first import jaxlib's MLIR modules, and pytest's own process
has long settled that. The tool goes first (as it would in a user's script
that imports it at the top), runs `analyze`, and then ordinary JAX programs
must still lower, compile and compute the right values.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.support import ROOT

pytest.importorskip("jax")


_PRELUDE = """
import numpy as np
import stablehlo_layout.frontends.cli  # the tool first: its MLIR setup runs before jax's
from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.jax import analyze
import jax, jax.numpy as jnp
assert len(jax.devices()) == 2, jax.devices()  # sharded programs need a real mesh

def model(a, b):
    return jnp.tanh(a @ b).T

x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
y = np.arange(20, dtype=np.float32).reshape(4, 5) / 10
report = analyze(model, x, y)
assert report.module is not None
mlir.make_context()  # a second context, as the CLI makes per input
"""

CASES = {
    "linalg": """
        rng = np.random.default_rng(0)
        m = rng.standard_normal((6, 6)).astype(np.float32)
        spd = m @ m.T + 6 * np.eye(6, dtype=np.float32)
        rhs = rng.standard_normal((6, 2)).astype(np.float32)
        chol = jax.jit(lambda a: jax.scipy.linalg.cho_factor(a, lower=True)[0])(spd)
        got = jax.jit(lambda c, b: jax.scipy.linalg.cho_solve((c, True), b))(chol, rhs)
        np.testing.assert_allclose(np.asarray(got), np.linalg.solve(spd, rhs), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(jax.jit(jnp.linalg.solve)(spd, rhs)),
                                   np.linalg.solve(spd, rhs), rtol=1e-4, atol=1e-4)
        w = jax.jit(jnp.linalg.eigvalsh)(spd)
        np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(spd), rtol=1e-4, atol=1e-4)
        s = jax.jit(lambda a: jnp.linalg.svd(a, compute_uv=False))(m)
        np.testing.assert_allclose(np.asarray(s), np.linalg.svd(m, compute_uv=False), rtol=1e-4, atol=1e-4)
    """,
    "sharding": """
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
        row = NamedSharding(mesh, P("x", None))
        def f(a):
            a = jax.lax.with_sharding_constraint(a * 2, row)
            return a.sum(axis=1)
        a = np.arange(8, dtype=np.float32).reshape(4, 2)
        text = jax.jit(f, in_shardings=row).lower(a).as_text()
        assert "sharding" in text, text
        np.testing.assert_array_equal(np.asarray(jax.jit(f, in_shardings=row)(a)), (a * 2).sum(axis=1))
    """,
    "custom_partitioning": """
        from jax.experimental.custom_partitioning import custom_partitioning
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        @custom_partitioning
        def double(a):
            return a * 2

        def partition(mesh, arg_shapes, result_shape):
            spec = arg_shapes[0].sharding
            return mesh, (lambda a: a * 2), spec, (spec,)

        def infer(mesh, arg_shapes, result_shape):
            return arg_shapes[0].sharding

        # The sharding rule is what jax turns into sdy.DimMappingAttr.
        double.def_partition(partition=partition, infer_sharding_from_operands=infer,
                             sharding_rule="i j -> i j")
        mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
        a = np.arange(8, dtype=np.float32).reshape(4, 2)
        got = jax.jit(double, in_shardings=NamedSharding(mesh, P("x", None)))(a)
        np.testing.assert_array_equal(np.asarray(got), a * 2)
    """,
}


def test_jax_still_works_after_the_tool() -> None:
    """Every case in one interpreter, after the tool's prelude (one jax start-up, not one per
    case: each case reads only what it makes); each prints its name when it passed."""
    script = _PRELUDE + "".join(f"\n{textwrap.dedent(CASES[case])}\nprint('ok {case}')\n" for case in sorted(CASES))
    # Two host devices: with one, jax lowers sharded and custom-partitioned
    # calls as plain code and never builds their Shardy attributes.
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    passed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    failed = next((case for case in sorted(CASES) if case not in passed), None)
    assert proc.returncode == 0 and failed is None, f"case {failed} failed:\n{proc.stderr[-3000:]}"


def test_jax_still_works_after_verifying_against_xla_gpu() -> None:
    """verify=True loads XLA:GPU's plugin (the installed jaxlib's own version) into the process:
    the user's CPU programs, linalg and custom partitioning included, must still lower and run."""
    from stablehlo_layout.xla.gpu_deviceless import plugin_available, plugin_version_mismatch

    if not plugin_available() or plugin_version_mismatch():
        pytest.skip("XLA:GPU's compiler of this jaxlib's version is not installed (pip install -e '.[gpu-oracle]')")
    verify = """
        v = analyze(model, x, y, target="xla-gpu", gpu="h100", verify=True)
        assert v.verified is True, v.mismatches
    """
    script = (_PRELUDE + textwrap.dedent(verify) + textwrap.dedent(CASES["linalg"])
              + textwrap.dedent(CASES["custom_partitioning"]) + "\nprint('ok')\n")
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
