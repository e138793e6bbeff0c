"""Make the XLA:GPU layout-assignment dump pairs in this folder (run by hand).

Each program below is compiled by XLA:GPU *deviceless* for a GPU model of
``stablehlo_layout/targets/gpus/`` (the same config text the tool reads for
``--gpu``), and the ``before_layout-assignment`` / ``after_layout-assignment``
dumps are kept as ``<gpu>/<program>.before.txt`` / ``.after.txt``, untouched.

Needs the oracle packages (test-only)::

    .venv/bin/pip install jax-cuda12-plugin==0.10.2 jax-cuda12-pjrt==0.10.2
    JAX_PLATFORMS=cpu .venv/bin/python tests/unit/xla_gpu_dumps/make.py [--gpu a100,h100] [NAME ...]

Each program runs in its own process (XLA_FLAGS are read once per process).
A100 and H100 get every program; B200 and V100 a few whose layouts depend
on the generation (``--gpu b200,v100 conv_nchw_f32 conv_nchw_f16 fp8_dot``).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def programs():
    """name -> (function, [(shape, dtype)]); built lazily so the parent needs no jax."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(dn, stride=(1, 1)):
        return lambda x, w: lax.conv_general_dilated(x, w, stride, "SAME", dimension_numbers=dn)

    nchw = ("NCHW", "OIHW", "NCHW")
    nhwc = ("NHWC", "HWIO", "NHWC")

    def net_loss(dn):
        c = conv(dn)
        return lambda x, w1, w2: jnp.sum(c(jax.nn.relu(c(x, w1)), w2) ** 2)

    def grouped_filter_grad(x, w):
        c = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "HWIO", "NHWC"),
                                                  feature_group_count=2)
        return jax.grad(lambda w: jnp.sum(c(x, w) ** 2))(w)

    def transformer_loss(x, g, wqkv, wo, wi, wout, heads=4):
        # A pre-norm attention + MLP block as model code writes it: the head
        # split and merge are reshapes and transposes around batched dots.
        b, t, d = x.shape
        h = x * lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * g
        q, k, v = jnp.split(h @ wqkv, 3, axis=-1)
        split = lambda a: a.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        att = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k) / (d // heads) ** 0.5, axis=-1)
        o = jnp.einsum("bhqk,bhkd->bhqd", att, v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = x + o @ wo
        return jnp.sum(x + jax.nn.gelu(x @ wi) @ wout)

    def conv_bias_relu(x, w, b):
        return jax.nn.relu(conv(nhwc)(x, w) + b)

    def batch_norm(x, g, b):
        mean = jnp.mean(x, axis=(0, 1, 2))
        var = jnp.var(x, axis=(0, 1, 2))
        return (x - mean) * lax.rsqrt(var + 1e-5) * g + b

    def dots(a, b, c):
        return jnp.einsum("bij,bjk->bik", a, b).transpose(0, 2, 1) @ c

    def sort_topk(x):
        return jnp.sort(x, axis=0), lax.top_k(x, 3)

    def linalg(a, b):
        spd = a @ a.T + 8 * jnp.eye(8, dtype=a.dtype)
        return jnp.linalg.cholesky(spd), jnp.linalg.solve(a, b), jnp.linalg.qr(a)[1], jnp.linalg.eigh(spd)[0]

    f32, bf16, f16 = jnp.float32, jnp.bfloat16, jnp.float16
    return {
        "conv_nchw_f32": (conv(nchw), [((2, 8, 16, 16), f32), ((16, 8, 3, 3), f32)]),
        "conv_nhwc_bf16": (conv(nhwc, (2, 2)), [((2, 16, 16, 8), bf16), ((3, 3, 8, 16), bf16)]),
        "conv_nchw_f16": (conv(nchw), [((2, 8, 16, 16), f16), ((16, 8, 3, 3), f16)]),
        "convnet_grad_nchw_f32": (jax.grad(net_loss(nchw), argnums=(0, 1, 2)),
                                  [((2, 4, 8, 8), f32), ((8, 4, 3, 3), f32), ((8, 8, 3, 3), f32)]),
        "convnet_grad_nhwc_bf16": (jax.grad(net_loss(nhwc), argnums=(0, 1, 2)),
                                   [((2, 8, 8, 4), bf16), ((3, 3, 4, 8), bf16), ((3, 3, 8, 8), bf16)]),
        "conv_bias_relu_f16": (conv_bias_relu, [((2, 16, 16, 8), f16), ((3, 3, 8, 16), f16), ((16,), f16)]),
        "batch_norm_f32": (batch_norm, [((4, 8, 8, 16), f32), ((16,), f32), ((16,), f32)]),
        "dots_f32": (dots, [((4, 8, 16), f32), ((4, 16, 8), f32), ((8, 32), f32)]),
        "sort_topk_f32": (sort_topk, [((16, 8), f32)]),
        "linalg_f32": (linalg, [((8, 8), f32), ((8, 4), f32)]),
        # Large enough for XLA:GPU's TopK kernel (a __gpu$TopK custom call),
        # read from a transposed operand as XLA's TopKLayout test does.
        "topk_transposed_f32": (lambda x: lax.top_k(x.T, 8), [((4096, 16), f32)]),
        # Host offloading: MoveToHost / MoveToDevice custom calls.
        "host_offload_f32": (lambda x: jax.device_put(jax.device_put(jnp.sin(x).T, jax.memory.Space.Host),
                                                      jax.memory.Space.Device) * 2, [((16, 32), f32)]),
        # FP8 GEMMs want the contracting dims most minor, except on Blackwell.
        "fp8_dot": (lambda a, b: jnp.dot(a, b, preferred_element_type=f32),
                    [((16, 32), jnp.float8_e4m3fn), ((32, 64), jnp.float8_e4m3fn)]),
        "conv3d_f32": (lambda x, w: lax.conv_general_dilated(x, w, (1, 1, 1), "SAME",
                                                             dimension_numbers=("NCDHW", "OIDHW", "NCDHW")),
                       [((2, 4, 8, 8, 8), f32), ((8, 4, 3, 3, 3), f32)]),
        "transformer_grad_f32": (jax.grad(transformer_loss, argnums=(0, 2, 3)),
                                 [((1, 8, 16), f32), ((16,), f32), ((16, 48), f32), ((16, 16), f32),
                                  ((16, 32), f32), ((32, 16), f32)]),
        # A weight gradient cuDNN cannot run: XLA:GPU leaves it a convolution.
        "grouped_filter_grad_f32": (grouped_filter_grad, [((1, 6, 6, 5), f32), ((3, 3, 3, 8), f32)]),
        # XLA:GPU makes a reduction a row reduction only when the reduced
        # elements number at least 32 (16, a divisor of the warp size, is not enough).
        "reduce_16_f32": (lambda x: jnp.sum(jnp.sin(x), axis=1), [((64, 16, 64), f32)]),
        "reduce_32_f32": (lambda x: jnp.sum(jnp.sin(x), axis=1), [((64, 32, 64), f32)]),
    }


def compile_one(name: str, gpu: str, out_dir: Path) -> None:
    """In a fresh process: compile ``name`` for ``gpu`` and keep its two dumps."""
    dump = Path(tempfile.mkdtemp(prefix="xla-gpu-dump-"))
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump} --xla_dump_hlo_pass_re=layout-assignment"
    import jax
    from jax.experimental import topologies
    from jax.sharding import SingleDeviceSharding

    config = (REPO / "stablehlo_layout" / "targets" / "gpus" / f"{gpu}.txtpb").read_text()
    topo = topologies.get_topology_desc(platform="cuda", target_config=config, topology="1x1x1")
    s = SingleDeviceSharding(topo.devices[0])
    fn, shapes = programs()[name]
    args = [jax.ShapeDtypeStruct(shape, dtype, sharding=s) for shape, dtype in shapes]
    try:
        jax.jit(fn).lower(*args).compile()
    except Exception as e:  # a later pass may fail deviceless; the dumps are already written
        print(f"{gpu}/{name}: compile stopped after layout assignment: {str(e).splitlines()[0][:120]}")
    before = glob.glob(str(dump / "*.before_layout-assignment.txt"))
    after = glob.glob(str(dump / "*.after_layout-assignment*.txt"))
    if len(before) != 1 or len(after) != 1:
        raise SystemExit(f"{gpu}/{name}: expected one dump pair, found {len(before)} / {len(after)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(before[0], out_dir / f"{name}.before.txt")
    shutil.copy(after[0], out_dir / f"{name}.after.txt")
    shutil.rmtree(dump)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", default="a100,h100")
    p.add_argument("--one", nargs=2, metavar=("GPU", "NAME"), help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    if args.one:
        compile_one(args.one[1], args.one[0], HERE / args.one[0])
        return
    names = args.names or list(programs())
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO)}
    for gpu in args.gpu.split(","):
        for name in names:
            subprocess.run([sys.executable, __file__, "--one", gpu, name], check=True, env=env)
            print(f"{gpu}/{name}")


if __name__ == "__main__":
    main()
