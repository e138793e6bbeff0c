"""Small JAX programs compiled by the installed XLA:GPU, deviceless, in a child process.

The version tests (``tests/unit/test_xla_gpu_*_versions.py``) each hold a
program body that lowers a function to ``lowered`` on an A100 described by
the package's config; this module gives them the lines around it and runs
the child.  A child process, because the GPU plugin and its topology stay
loaded for the life of a process and the tests must not leave them in
pytest's.

Each program's dumps are kept on disk, as the differential harnesses keep
theirs (``bench/cache/xla-gpu-versions/<key>/``): the key changes with the
program, the lines around it, the code that compiles it (the package's
``xla/`` and GPU configs, ``programs.py``) and the installed jax, jaxlib
and CUDA plugin, so a test compiles anew exactly when its answer could
change; several tests of one program share one compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support import ROOT

ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}

# What every program may use: jax, lax, the device and the layout pins.
PRELUDE = """
import sys
import jax, jax.numpy as jnp
from jax import lax
from jax.sharding import SingleDeviceSharding
from stablehlo_layout.xla.dumps import run_to_layout_assignment
from stablehlo_layout.xla.gpu_deviceless import gpu_device
from tests.differential.programs import layout_format
"""

# The program has set ``lowered``: run XLA up to layout assignment, keep both dumps.
WRITE_DUMPS = """
dumps = run_to_layout_assignment(lambda flags: lowered.compile(compiler_options=flags))
open(sys.argv[1] + "/before.txt", "w").write(dumps.before)
open(sys.argv[1] + "/after.txt", "w").write(dumps.after)
"""


CACHE = ROOT / "bench" / "cache" / "xla-gpu-versions"
# What the child's compile reads besides the program: the package's XLA driver and GPU configs.
_PACKAGE = ROOT / "stablehlo_layout"
_COMPILER_SOURCES = (_PACKAGE / "xla", _PACKAGE / "targets" / "gpus", _PACKAGE / "targets" / "gpu_config.py",
                     ROOT / "tests" / "differential" / "programs.py")
_DUMPS = ("before.txt", "after.txt")


def cache_key(source: str) -> str:
    """Changes with the child's source, the compiler code it reads and the installed XLA."""
    import importlib.metadata as md

    h = hashlib.sha1(source.encode())
    for root in _COMPILER_SOURCES:
        for path in sorted(root.rglob("*.py")) + sorted(root.rglob("*.txtpb")) if root.is_dir() else [root]:
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    for pkg in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"):
        try:
            h.update(f"{pkg}={md.version(pkg)}".encode())
        except md.PackageNotFoundError:
            h.update(f"{pkg}=-".encode())
    return h.hexdigest()[:16]


def compile_in_child(program: str, folder: Path) -> tuple[Path, Path]:
    """Run ``PRELUDE + program + WRITE_DUMPS`` in a child (or find its dumps in the cache);
    the paths of the before and after dumps, copied into ``folder``."""
    source = PRELUDE + program + WRITE_DUMPS
    kept = CACHE / cache_key(source)
    if not all((kept / name).is_file() for name in _DUMPS):
        CACHE.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix="compiling-", dir=CACHE))
        out = subprocess.run([sys.executable, "-c", source, str(fresh)], env=ENV, cwd=ROOT, capture_output=True,
                             text=True)
        if out.returncode != 0:
            shutil.rmtree(fresh, ignore_errors=True)
        assert out.returncode == 0, out.stderr[-2000:]
        try:
            fresh.rename(kept)  # whole or not at all; a concurrent run may have put it there first
        except OSError:
            shutil.rmtree(fresh, ignore_errors=True)
    for name in _DUMPS:
        shutil.copyfile(kept / name, folder / name)
    return folder / "before.txt", folder / "after.txt"
