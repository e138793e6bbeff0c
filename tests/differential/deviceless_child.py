"""Small JAX programs compiled by the installed XLA:GPU, deviceless, in a child process.

The version tests (``tests/unit/test_xla_gpu_*_versions.py``) each hold a
program body that lowers a function to ``lowered`` on an A100 described by
the package's config; this module gives them the lines around it and runs
the child.  A child process, because the GPU plugin and its topology stay
loaded for the life of a process and the tests must not leave them in
pytest's.
"""

from __future__ import annotations

import os
import subprocess
import sys
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


def compile_in_child(program: str, folder: Path) -> tuple[Path, Path]:
    """Run ``PRELUDE + program + WRITE_DUMPS`` in a child; the paths of its before and after dumps."""
    out = subprocess.run([sys.executable, "-c", PRELUDE + program + WRITE_DUMPS, str(folder)], env=ENV,
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return folder / "before.txt", folder / "after.txt"
