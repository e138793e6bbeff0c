"""Regenerate the XLA:TPU dumps in this folder (needs the xla-tpu extra; not run by the tests).

    JAX_PLATFORMS=cpu python examples/xla_tpu_dump/make.py

Two programs as users write them, compiled by libtpu for a v5e and for a
v6e without either chip (deviceless, for a topology of each generation),
writing what ``--xla_dump_to=DIR --xla_dump_hlo_pass_re=layout-assignment``
writes on a TPU host:

- ``stem``: NHWC images fed to an NCHW model's first convolution + relu.
  XLA:TPU wants a convolution's spatial dims most major and its
  batch/feature pair minor, so layout assignment copies the images, the
  kernel and the result (three copies);
- ``sample``: the sampling head of a language model, top 8 of the logits
  and a softmax over them.  TopK reads its operand in the layout its results
  take, column-major for f32[64,8] entry results, so the whole f32[64,32000]
  logits are copied to column-major.

Each generation's folder keeps, under XLA's own names, the module layout
assignment receives, the one it returns, and ``target_arguments.txt``, which
names the chip.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import SingleDeviceSharding

from stablehlo_layout.xla.tpu_deviceless import tpu_device

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP = ("*before_layout-assignment.txt", "*after_layout-assignment*.txt", "*target_arguments.txt")


def stem(images, w):
    x = images.transpose(0, 3, 1, 2)
    y = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jax.nn.relu(y)


def sample(logits, temperature):
    values, indices = jax.lax.top_k(logits, 8)
    return jax.nn.softmax(values / temperature, axis=-1), indices


PROGRAMS = ((stem, [((8, 64, 64, 3), jnp.float32), ((32, 3, 3, 3), jnp.float32)]),
            (sample, [((64, 32000), jnp.float32), ((), jnp.float32)]))


def main() -> None:
    for generation in ("v5e", "v6e"):
        s = SingleDeviceSharding(tpu_device(generation))
        out = os.path.join(HERE, generation)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for fn, shapes in PROGRAMS:
            args = [jax.ShapeDtypeStruct(shape, dtype, sharding=s) for shape, dtype in shapes]
            dump = tempfile.mkdtemp()
            try:
                jax.jit(fn).lower(*args).compile(
                    compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
                for pattern in KEEP:
                    for path in glob.glob(os.path.join(dump, pattern)):
                        shutil.copy(path, out)
            finally:
                shutil.rmtree(dump)


if __name__ == "__main__":
    main()
