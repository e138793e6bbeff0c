"""Regenerate the XLA:GPU dump pairs in this folder (needs the gpu-oracle extra; not run by the tests).

    JAX_PLATFORMS=cpu python examples/xla_gpu_dump/make.py

One conv + bias + relu block, as a PyTorch-minded user writes it (NCHW
activations, OIHW kernel, f32), compiled by XLA:GPU for an H100 and for an
A100 without either GPU: XLA:GPU compiles deviceless for the GpuTargetConfigProto
of each (the configs shipped in stablehlo_layout/gpus/).  Before layout
assignment XLA:GPU has already fused the three ops into one cuDNN call,
``__cudnn$convBiasActivationForward``; the H100 runs it NHWC, so its layout
assignment adds copies around it, and the A100 keeps f32 NCHW and adds none.
"""

from __future__ import annotations

import glob
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding

from stablehlo_layout.targets import load_gpu

HERE = os.path.dirname(os.path.abspath(__file__))


def block(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return jax.nn.relu(y + b[None, :, None, None])


def main() -> None:
    for gpu in ("h100", "a100"):
        topo = topologies.get_topology_desc(platform="cuda", target_config=load_gpu(gpu).text, topology="1x1x1")
        s = SingleDeviceSharding(topo.devices[0])
        args = [jax.ShapeDtypeStruct(shape, jnp.float32, sharding=s)
                for shape in ((8, 3, 16, 16), (16, 3, 3, 3), (16,))]
        dump = tempfile.mkdtemp()
        jax.jit(block).lower(*args).compile(
            compiler_options={"xla_dump_to": dump, "xla_dump_hlo_pass_re": "layout-assignment"})
        for pattern, name in (("*before_layout-assignment.txt", "before_layout-assignment.txt"),
                              ("*after_layout-assignment*.txt", "after_layout-assignment.txt")):
            shutil.copy(glob.glob(os.path.join(dump, pattern))[0], os.path.join(HERE, f"{gpu}.{name}"))
        shutil.rmtree(dump)


if __name__ == "__main__":
    main()
