"""Makes a sharded program's StableHLO and XLA:CPU's own dumps of it, on 8 host devices.

    python tests/lit/Inputs/sharded/make.py

A sequence-parallel block over a 2x4 mesh (``data`` x ``model``) in
``shard_map``: an all-gather of the sequence over ``model``, a matmul, a
reduce-scatter back over ``model``, an all-reduce of a statistic over
``data`` and a ring ``ppermute`` over ``model``.

- ``seq_parallel.mlir``: ``jax.jit(f).lower(...).as_text()`` (Shardy: an
  ``sdy.mesh`` and ``sdy.sharding`` on the arguments);
- ``seq_parallel.{before,after}_layout-assignment.txt``: XLA:CPU's dumps of the
  partitioned per-device module (``sharding={...}`` on its parameters).
"""

import os

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import glob  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))

    def local(x, w):
        full = lax.all_gather(x, "model", axis=1, tiled=True)  # [b, s, d]: the whole sequence
        h = jnp.einsum("bsd,de->bse", full, w)
        y = lax.psum_scatter(h, "model", scatter_dimension=1, tiled=True)
        m = lax.pmean(jnp.mean(y, axis=(0, 1)), "data")
        nxt = lax.ppermute(y, "model", [(i, (i + 1) % 4) for i in range(4)])
        return (nxt - m).transpose(0, 2, 1)

    f = jax.shard_map(local, mesh=mesh, in_specs=(P("data", "model"), P(None, "model")),
                      out_specs=P("data", None, "model"), check_vma=False)
    x = jax.ShapeDtypeStruct((4, 16, 8), jnp.float32, sharding=NamedSharding(mesh, P("data", "model")))
    w = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(mesh, P(None, "model")))
    lowered = jax.jit(f).lower(x, w)
    with open(os.path.join(here, "seq_parallel.mlir"), "w") as out:
        out.write(lowered.as_text())
    dump = tempfile.mkdtemp()
    lowered.compile(compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
    for stage in ("before", "after"):
        (src,) = glob.glob(os.path.join(dump, f"*.{stage}_layout-assignment*.txt"))
        shutil.copyfile(src, os.path.join(here, f"seq_parallel.{stage}_layout-assignment.txt"))
    shutil.rmtree(dump)


if __name__ == "__main__":
    main()
