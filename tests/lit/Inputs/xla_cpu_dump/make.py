"""Makes head_proj.{before,after}_layout-assignment.txt: XLA:CPU's own dumps.

    JAX_PLATFORMS=cpu python tests/lit/Inputs/xla_cpu_dump/make.py

An attention-style head projection with one head, ``einsum('sd,dhk->shk')``
with h = 1: XLA's DotDecomposer rewrites the dot_general as a plain dot and a
reshape that inserts the size-1 head dim, both made after the tanh and the
multiply that read the result.
"""

import glob
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp


def head_proj(x, w):
    y = jnp.einsum("sd,dhk->shk", x, w)
    return jnp.tanh(y) * y


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    dump = tempfile.mkdtemp()
    x = jax.ShapeDtypeStruct((8, 32), jnp.float32)
    w = jax.ShapeDtypeStruct((32, 1, 16), jnp.float32)
    jax.jit(head_proj).lower(x, w).compile(
        compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
    for stage in ("before", "after"):
        (src,) = glob.glob(os.path.join(dump, f"*.{stage}_layout-assignment*.txt"))
        shutil.copyfile(src, os.path.join(here, f"head_proj.{stage}_layout-assignment.txt"))
    shutil.rmtree(dump)


if __name__ == "__main__":
    main()
