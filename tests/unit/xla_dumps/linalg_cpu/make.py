"""Remake before.txt / after.txt: XLA:CPU's layout-assignment dumps of jnp.linalg calls.

    JAX_PLATFORMS=cpu python tests/unit/xla_dumps/linalg_cpu/make.py

Cholesky, a Cholesky solve (two trsm) and QR: four LAPACK custom calls that
overwrite an operand in place, so XLA's after dump holds its same-layout
copies of those operands (test_aliasing.py).  Made with jax 0.10.2.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def f(a, b):
    import jax
    import jax.numpy as jnp

    spd = a @ a.T + 8.0 * jnp.eye(a.shape[0], dtype=a.dtype)
    chol = jnp.linalg.cholesky(spd)
    sol = jax.scipy.linalg.cho_solve((chol, True), b)
    return sol, jnp.linalg.qr(a)[1]


def main() -> int:
    out = tempfile.mkdtemp()
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={out} --xla_dump_hlo_pass_re=layout-assignment"
    import jax
    import jax.numpy as jnp

    jax.jit(f).lower(jnp.ones((16, 16)), jnp.ones((16, 4))).compile()
    for kind, name in (("before_layout-assignment", "before.txt"), ("after_layout-assignment", "after.txt")):
        [path] = [p for p in glob.glob(os.path.join(out, f"*jit_f*{kind}*"))]
        shutil.copy(path, os.path.join(HERE, name))
    shutil.rmtree(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
