"""Makes linalg_solve.{before,after}_layout-assignment.txt: XLA:GPU's own dumps (deviceless H100).

    JAX_PLATFORMS=cpu python tests/lit/Inputs/xla_gpu_dump/make.py

A Cholesky solve and a QR of a column-major argument (``linalg_solve`` of
tests/differential/as_compiled.py).  jnp.linalg.cholesky is a
nested jax.jit: its symmetrization ``(x + x.T) / 2`` reads ``x`` twice, and
XLA's call inliner leaves the add ahead of the transpose in x's user list.
Needs XLA:GPU's compiler (pip install 'stablehlo-layout[xla-gpu]').
"""

import glob
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
from jax.experimental.layout import Format, Layout
from jax.sharding import SingleDeviceSharding

from stablehlo_layout.targets.gpu_config import load_gpu
from stablehlo_layout.xla.gpu_deviceless import deviceless_device


def linalg_solve(a, b):
    spd = a @ a.T + 8.0 * jnp.eye(a.shape[0], dtype=a.dtype)
    chol = jnp.linalg.cholesky(spd)
    sol = jax.scipy.linalg.cho_solve((chol, True), b)
    return sol, jnp.linalg.qr(a)[1]


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    dump = tempfile.mkdtemp()
    device = deviceless_device(load_gpu("h100").text)
    s = SingleDeviceSharding(device)
    args = [jax.ShapeDtypeStruct((16, 16), jnp.float32, sharding=s),
            jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=s)]
    jitted = jax.jit(linalg_solve, in_shardings=(Format(Layout(major_to_minor=(1, 0)), s), None))
    try:
        jitted.lower(*args).compile(
            compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
    except Exception:  # a pass after layout assignment may fail deviceless; the dumps are written
        pass
    for stage in ("before", "after"):
        (src,) = glob.glob(os.path.join(dump, f"*.{stage}_layout-assignment*.txt"))
        shutil.copyfile(src, os.path.join(here, f"linalg_solve.{stage}_layout-assignment.txt"))
    shutil.rmtree(dump)


if __name__ == "__main__":
    main()
