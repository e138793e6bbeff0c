"""Regenerate the XLA dump pair in this folder (needs jax; not run by the tests).

    python examples/xla_dump/make.py

A column-major input feeds both a matmul and an elementwise chain that ends
in a transpose; XLA:CPU's layout assignment adds copies, and the two dumps
around the pass show where.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
from jax.experimental.layout import Format, Layout
from jax.sharding import SingleDeviceSharding

HERE = os.path.dirname(os.path.abspath(__file__))


def f(x, y):
    return (x @ y).T, jnp.sin(x).T + 1


def main() -> None:
    col = Format(Layout((1, 0)), SingleDeviceSharding(jax.devices()[0]))
    dump = tempfile.mkdtemp()
    jax.jit(f, in_shardings=(col, None)).lower(jnp.ones((3, 4)), jnp.ones((4, 5))).compile(
        compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
    for pattern, name in (("*before_layout-assignment.txt", "before_layout-assignment.txt"),
                          ("*after_layout-assignment*.txt", "after_layout-assignment.txt")):
        shutil.copy(glob.glob(os.path.join(dump, pattern))[0], os.path.join(HERE, name))
    shutil.rmtree(dump)


if __name__ == "__main__":
    main()
