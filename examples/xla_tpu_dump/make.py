"""Regenerate the XLA:TPU dumps in this folder (needs the xla-tpu extra; not run by the tests).

    JAX_PLATFORMS=cpu python examples/xla_tpu_dump/make.py

The sampling head of a language model: scale a batch of logits by a
temperature, keep the top 8, softmax over them.  libtpu compiles it for a
v5e and for a v6e without either chip (deviceless, for a topology of each
generation), writing what ``--xla_dump_to=DIR --xla_dump_hlo_pass_re=layout-assignment``
writes on a TPU host.  Each generation's folder keeps, under XLA's own
names, the module layout assignment receives, the one it returns, and
``target_arguments.txt``, which names the chip.  XLA:TPU's TopK reads its
sorted dimension most major, so layout assignment copies the row-major
logits to column-major: 125 KiB of logits per row of the batch, and, with the
tiles' padding, more than that written.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
from jax.sharding import SingleDeviceSharding

from stablehlo_layout.xla.tpu_deviceless import tpu_device

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP = ("*before_layout-assignment.txt", "*after_layout-assignment*.txt", "*target_arguments.txt")


def sample_top_k(logits, temperature):
    values, indices = jax.lax.top_k(logits / temperature, 8)
    return jax.nn.softmax(values, axis=-1), indices


def main() -> None:
    for generation in ("v5e", "v6e"):
        s = SingleDeviceSharding(tpu_device(generation))
        args = [jax.ShapeDtypeStruct((64, 32000), jnp.float32, sharding=s),
                jax.ShapeDtypeStruct((), jnp.float32, sharding=s)]
        dump = tempfile.mkdtemp()
        try:
            jax.jit(sample_top_k).lower(*args).compile(
                compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
            out = os.path.join(HERE, generation)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            for pattern in KEEP:
                for path in glob.glob(os.path.join(dump, pattern)):
                    shutil.copy(path, out)
        finally:
            shutil.rmtree(dump)


if __name__ == "__main__":
    main()
