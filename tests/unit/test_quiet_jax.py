"""Commands that read through jax (a JAX function, a jax.export artifact) keep stderr clean.

Where XLA:GPU's plugin is installed, starting jax on a machine without a GPU
writes absl's banner and a driver probe ("Could not find cuda drivers ...")
straight to file descriptor 2, and the plugin's failed initialization prints
a traceback; none of that is the command's to say.  Run without
JAX_PLATFORMS, as a user runs it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.command import QUIET, environment, run_command

ARGS = ["--arg", "f32[2,3,16,16]", "--arg", "f32[8,3,3,3]", "--arg", "f32[16,8,3,3]"]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: from the checkout, neither of QUIET's variables set."""
    return run_command(*argv, env=environment(drop=QUIET), cwd=ROOT)


def test_a_jax_function_prints_only_the_report() -> None:
    out = _run("explain", "--target", "xla-cpu", "examples.models:convnet_nchw", *ARGS)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert "summary: 0 copies" in out.stdout  # the raw NCHW program, as the README says


def test_a_jax_export_artifact_prints_only_the_report(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax import export

    artifact = tmp_path / "f.bin"
    f = export.export(jax.jit(lambda x: (x @ x).T))(jax.ShapeDtypeStruct((4, 4), jnp.float32))
    artifact.write_bytes(f.serialize())
    out = _run("explain", "--target", "xla-cpu", str(artifact))
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert out.stdout.startswith("copy #1: f32[4,4] {0,1} -> {1,0}")
