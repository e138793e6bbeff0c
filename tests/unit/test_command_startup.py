"""What the console command imports before it works: nothing it does not use.

It imports jaxlib's MLIR bindings with numpy deferred (``deferred_numpy``),
reads jaxlib's version without ``importlib.metadata``, and imports the JAX
front door (``stablehlo_layout.frontends.jax``) only for an input that is no file.
Each check runs the command or the import in a fresh interpreter: what is
tested is what a process imports, and pytest's own process has numpy long
since.  numpy must stay out of a command that reads MLIR, and everything
that needs numpy (jaxlib's attribute builders, jax itself) must still get
the real one.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.command import QUIET, environment, run_command

EXAMPLE = str(ROOT / "examples" / "pinned_transpose.mlir")


def _imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` reports as imported."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_assign_on_mlir_text_imports_neither_numpy_nor_what_it_does_not_use() -> None:
    out = run_command("assign", EXAMPLE, python=["-X", "importtime"])
    assert out.returncode == 0, out.stderr[-2000:]
    assert "mhlo.copy %arg0" in out.stdout  # it did its work: the example's one copy
    modules = _imported(out.stderr)
    assert "jaxlib.mlir.ir" in modules and "stablehlo_layout.ir.rewrite" in modules
    assert not {m for m in modules if m == "numpy" or m.startswith("numpy.")}
    assert "importlib.metadata" not in modules  # ~9 ms: jaxlib's version is read from jaxlib
    assert "stablehlo_layout.frontends.jax" not in modules  # ~5 ms: an existing file is no MODULE:FUNCTION


@pytest.mark.parametrize("target", ["generic", "xla-cpu"])
def test_a_cpu_run_imports_no_gpu_target(target: str) -> None:
    """The GPU target's rules and GPU models load when a GPU target is asked for, not before."""
    out = run_command("assign", "--target", target, EXAMPLE, python=["-X", "importtime"])
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'xla_shape = "f32[4,16]{1,0}"' in out.stdout  # it did its work
    modules = _imported(out.stderr)
    assert "stablehlo_layout.targets.xla_cpu" in modules
    assert not modules & {"stablehlo_layout.targets.xla_gpu", "stablehlo_layout.targets.gpu_config"}


def test_the_gpu_target_and_its_models_load_on_first_use() -> None:
    out = _python("""
        import sys
        import stablehlo_layout.targets as t
        assert "stablehlo_layout.targets.xla_gpu" not in sys.modules
        target, _ = t.get_target("xla-gpu", "a100")
        assert type(target) is t.XlaGpuTarget and target.name == "xla-gpu" == t.TARGET_NAMES[2]
        assert isinstance(target.gpu, t.GpuModel) and t.load_gpu("a100") == target.gpu
        assert t.DEFAULT_GPU in t.shipped_gpus()
        from stablehlo_layout.targets import XlaGpuTarget, load_gpu  # noqa: F401
        builtin = (t.GenericTarget, t.XlaCpuTarget, t.XlaGpuTarget, t.XlaTpuTarget)
        assert [cls.name for cls in builtin] == list(t.TARGET_NAMES)
        try:
            t.NoSuchName
        except AttributeError as e:
            assert "NoSuchName" in str(e)
        else:
            raise AssertionError("no AttributeError")
        print("ok")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def _python(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          env=environment(QUIET), cwd=ROOT)


def test_jaxlib_attribute_builders_load_numpy_when_they_run() -> None:
    out = _python("""
        import sys, types
        from stablehlo_layout.ir.deferred_numpy import import_bindings
        import_bindings()
        assert "numpy" not in sys.modules
        from jaxlib.mlir import ir
        ctx = ir.Context()
        with ctx:
            for kind, want in [("I64ElementsAttr", "dense<[1, 2, 3]> : tensor<3xi64>"),
                               ("I32ElementsAttr", "dense<[1, 2, 3]> : tensor<3xi32>"),
                               ("IndexElementsAttr", "dense<[1, 2, 3]> : tensor<3xindex>")]:
                got = str(ir.AttrBuilder.get(kind)([1, 2, 3], ctx))
                assert got == want, (kind, got)
        numpy = sys.modules["numpy"]
        assert type(numpy) is types.ModuleType and numpy.__file__.endswith("__init__.py"), numpy
        import numpy as np
        assert np is numpy and np.arange(3).sum() == 3
        print("ok")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_numpy_imported_later_is_the_real_one_for_jax() -> None:
    pytest.importorskip("jax")
    out = _python("""
        import sys
        from stablehlo_layout.ir.deferred_numpy import import_bindings
        import_bindings()
        import stablehlo_layout.frontends.api
        import jax, jax.numpy as jnp
        import numpy as np
        assert "_DeferredNumpy" not in type(sys.modules["numpy"]).__name__
        got = jax.jit(lambda a: (a @ a.T).sum())(jnp.arange(6.0).reshape(2, 3))
        assert float(got) == float((np.arange(6.0).reshape(2, 3) @ np.arange(6.0).reshape(2, 3).T).sum())
        print("ok")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_assign_on_a_jax_export_artifact_still_imports_jax(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    art = tmp_path / "f.bin"
    spec = jax.ShapeDtypeStruct((16, 4), jnp.float32)
    art.write_bytes(bytes(jax.export.export(jax.jit(lambda x: jnp.sin(x).T))(spec).serialize()))
    out = run_command("assign", "--target", "xla-cpu", str(art))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "stablehlo.transpose" in out.stdout and 'xla_shape = "f32[4,16]{1,0}"' in out.stdout
