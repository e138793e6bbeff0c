"""Make the XLA:TPU layout-assignment dumps in this folder (run by hand; one command).

Each program below is compiled by XLA:TPU *deviceless* (libtpu's compiler, no
TPU) for a TPU generation of ``tests/differential/tpu_oracle.TPU_GENERATIONS``
through ``tpu_oracle.run_tpu_oracle``, and kept as::

    <generation>/<program>/before.txt          the module layout assignment receives (XLA's
                                               *.Layout_assignment.after_pipeline-start.before_layout-assignment.txt)
    <generation>/<program>/after.txt           the module it returns (XLA's
                                               *.Layout_assignment.after_layout-assignment.before_pipeline-end.txt)
    <generation>/<program>/target_arguments.txt  the chip compiled for (XLA's *.target_arguments.txt)
    <generation>/<program>/meta.json           the program, versions, XLA's own file names
    _target/tpu_comp_env.txt                   libtpu's compilation environment, and
    _target/hlo_module_config.txt              the module config of the first program compiled:
                                               stored once because every program's copy, on every
                                               generation, is the same apart from what is the
                                               program's own (make.py checks; see below)

The two modules are XLA's files untouched.  The only thing done to the
programs for the sake of the corpus: JAX is told to write source paths
relative to the repository (``jax_hlo_source_file_canonicalization_regex``),
so that regenerating from another checkout gives the same bytes.

``tpu_comp_env.txt`` (54 kB) and ``hlo_module_config.txt`` (16 kB) are kept once
for all generations (neither names the generation: ``target_arguments.txt``
does): every program's ``tpu_comp_env.txt`` must be byte-identical to
the kept one, and its ``hlo_module_config.txt`` identical apart from what is
the program's own: the ``entry_computation_layout`` block and the
``allow_spmd_sharding_propagation_to_*`` flags (its BEFORE module's header
states both), the ``xla_dump_to`` folder and ``xla_detailed_logging`` (jax turns
it on for modules of many ops); make.py stops when that fails.

Needs the tpu-oracle test extra in a Python 3.12 venv outside the repository::

    /root/.pyenv/versions/3.12.1/bin/python -m venv /work/tpu-venv
    /work/tpu-venv/bin/pip install 'jax[tpu]==0.12.0.1' flax==0.12.12 dm-haiku==0.0.17 equinox==0.13.8 optax==0.2.8
    /work/tpu-venv/bin/python tests/unit/xla_tpu_dumps/make.py [--generation v5e,v6e] [NAME ...]

Each program is compiled for each generation asked for (default: all five;
``ONLY_V5E_V6E`` names the programs kept for v5e and v6e only, to hold the
corpus under about 3 MB) in a fresh process.  libtpu aborts some compiles
deviceless in a pass long after layout assignment (a ``Check failed`` in its
fusion emitter); the layout-assignment dumps are complete by then and are
kept, with the abort's message in meta.json's ``jax_error``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

# Big programs whose dumps are kept for two generations only.
ONLY_V5E_V6E = {"flax_transformer_train", "tiles_row_major", "conv_layouts_f32", "conv_layouts_types",
                "conv_operands_as_is", "dot_layouts", "topk_paths", "pallas_add", "reduce_follows_operand",
                "fusion_row_major", "dense_dots", "reshape_of_custom_call",
                "dot_reduce_ties", "batched_dot_ties", "dot_chain_ties", "reshape_bitcast",
                "reshape_copies_operand", "reshape_keeps_minor"}


def programs():  # noqa: C901  (a table of small programs)
    """name -> NamedProgram builder; built lazily so the parent process needs no jax."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    from tests.differential.tpu_oracle import NamedProgram

    f32, bf16, f16, s32, s8, pred = jnp.float32, jnp.bfloat16, jnp.float16, jnp.int32, jnp.int8, jnp.bool_

    def P(name, fn, shapes, in_layouts=None, out_layouts=None, single=True):
        def build():
            args = [jax.ShapeDtypeStruct(s, d) for s, d in shapes]
            fn.__name__ = fn.__qualname__ = name
            return NamedProgram(name, fn, args, list(in_layouts or [None] * len(args)), out_layouts, single)
        return build

    def conv(dn, stride=(1, 1)):
        return lambda x, w: lax.conv_general_dilated(x, w, stride, "SAME", dimension_numbers=dn)

    nchw = ("NCHW", "OIHW", "NCHW")
    nhwc = ("NHWC", "HWIO", "NHWC")

    def net_grad(dn):
        c = conv(dn)
        def loss(x, w1, w2):
            return jnp.sum(c(jax.nn.relu(c(x, w1)), w2).astype(f32) ** 2)
        return jax.grad(loss, argnums=(0, 1, 2))

    def attention(q, k, v):  # [batch, time, heads, head_dim], as flax writes it
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.array(q.shape[-1], q.dtype))
        p = jax.nn.softmax(s.astype(f32), axis=-1).astype(q.dtype)
        return jnp.einsum("bhqk,bkhd->bqhd", p, v)

    def attention_grad(q, k, v):
        return jax.grad(lambda q, k, v: jnp.sum(attention(q, k, v) ** 2), argnums=(0, 1, 2))(q, k, v)

    def einsums(a, b, q, k):
        return jnp.einsum("bij,bjk->bik", a, b), jnp.einsum("bqhd,bkhd->bhqk", q, k)

    def reduces(x, y):
        return (jnp.sum(x, axis=0), jnp.sum(x, axis=1), jnp.sum(x, axis=2), jnp.sum(x, axis=(0, 2)),
                jnp.max(y, axis=0), jnp.max(y, axis=1), jnp.max(y, axis=2))

    def reduce_follow(x, y):
        """A reduce writes its operand's layout, reduced dims taken out: of a pinned
        {2,3,1,0} x the sum over dim 2 is {2,1,0}, copied to the pinned {0,2,1} result;
        of a pinned {1,0,2} y the sum over dim 1 is {0,1}, copied to the default {1,0}."""
        return jnp.sum(x, axis=2), jnp.sum(y, axis=1), jnp.min(jnp.sum(y, axis=1), axis=0)

    def fused_gathers(x, idx):
        """Inside the gather / scatter fusions XLA:TPU forms before layout assignment,
        what nothing constrains is row-major, not the layout that pads least."""
        return jnp.take(x, idx, axis=1) * 2, jnp.take_along_axis(x, jnp.stack([idx, idx, idx, idx] * 2), axis=1)

    def dense_dots(x, w, y, v):
        """Dots without batch dims whose lhs has several free dims: x [b,t,d] @ w [d,h]
        with x pinned {1,2,0} and w column-major; y [8,4,3,3,3] @ v [3,5]."""
        return x @ w, y @ v

    def bd(a, b):
        return jnp.einsum("bij,bjk->bik", a, b)

    def dot_reduce_ties(a, b, c, d, e, f, g, h):
        """Dots whose two result orders pad alike: a reduce downstream makes the
        dim it reduces the major one.  [4,4] summed over its last dim is written
        {0,1} (and copied to the entry result's {1,0}); over dim 0, or over both
        dims by two reduces, it stays {1,0}; a batched [2,8,8] summed over its
        last dim through exp is {1,2,0} and reads its pinned operands accordingly."""
        ab = a @ b
        return (jnp.sum(ab, axis=1), ab, jnp.sum(c @ d, axis=0), jnp.sum(c @ d, axis=1),
                jnp.sum(jnp.exp(bd(e, f)) * 2, axis=2), jnp.max(bd(g, h), axis=1))

    def batched_dot_ties(*xs):
        """Batched dots whose operands' two orders pad alike, for the three
        contracting-dim placements, result left as is (summed over dim 1) or
        swapped (summed over dim 2): an operand is read contracting dim minor or
        last dim minor, the lhs the former unless the result is swapped."""
        outs = []
        for i, (eq, axis) in enumerate((("bij,bjk->bik", 1), ("bij,bjk->bik", 2), ("bij,bkj->bik", 1),
                                        ("bij,bkj->bik", 2), ("bji,bjk->bik", 1), ("bji,bjk->bik", 2))):
            outs.append(jnp.sum(jnp.einsum(eq, xs[2 * i], xs[2 * i + 1]), axis=axis))
        return tuple(outs)

    def dot_chain_ties(a, b, c, d, e, f, g, h, k, m, n):
        """A tied dot whose result only dots downstream read, through layout-keeping
        ops, takes the layout those dots read it in, and reads its own operands as
        they come (pinned {1,2,0} a, b: no copy; the three-dot chain: the middle
        dot is swapped, the first not); one with another reader (an exp to the
        entry result) keeps its own order and the later dot's operand is copied."""
        t = jnp.tanh(bd(a, b))
        u = jnp.exp(jnp.einsum("bji,bjk->bik", t, c))
        w = jnp.tanh(bd(e, f))
        return (jnp.einsum("bji,bjk->bik", u, d), jnp.einsum("bji,bjk->bik", w, g), jnp.exp(w),
                jnp.einsum("bji,bjk->bik", bd(h, k) * m[:, None, :], n))

    def reshape_bitcast(a, x, y, z, w):
        """XLA:TPU keeps every reshape a bitcast: where the value reaching it is laid
        out otherwise (a transpose's bitcast, an elementwise op on a column-major
        parameter), the copy goes on the reshape's operand; where the operand's
        layout already is a bitcast of the result's (only a size-1 dim placed
        elsewhere), there is no copy."""
        return (jnp.transpose(a, (1, 0, 2)).reshape(128, 32), (x * 2).reshape(2, 8, 8),
                y.reshape(2, 4, 16) * 2, z.reshape(3, 8) + 1, jnp.swapaxes(w, 1, 2).reshape(4, 256))

    def reshape_copies_operand(a, b, c, d, e, w):
        """A reshape of a value laid out so that the reshape cannot be a bitcast
        (a transpose of a computed value) copies that value before the reshape;
        a reshape whose operand differs from a bitcast only in where a size-1
        dim sits copies nothing."""
        return (jnp.transpose(jnp.tanh(a), (1, 0, 2)).reshape(128, 32),
                jnp.swapaxes(jnp.tanh(b), 0, 1).reshape(8, 512),
                jnp.tanh(c).reshape(6, 4, 8), (d.reshape(2, 64, 32) * 2).astype(jnp.int8),
                jnp.transpose(jnp.tanh(e), (2, 1, 0)).reshape(8, 16) @ w)

    def reshape_keeps_minor(a, b, c):
        """A reshape of a transposed value that no layout of the result makes a
        bitcast of: the copy before it keeps the value's minor dim (bf16
        [4,16,8,32] -> [4,128,32] reads {3,1,2,0}, though {1,2,0} pads less);
        where one does, the reshape of the transposed value (f32, s32)."""
        return (jnp.transpose(jnp.tanh(a), (0, 2, 1, 3)).reshape(4, 128, 32),
                jnp.transpose(jnp.exp(b), (2, 0, 1)).reshape(12, 60),
                jnp.transpose(c * 3, (1, 0)).reshape(2, 8, 8))

    def small_solves(a, b):
        """Triangular solves small enough to be one block: XLA:TPU's
        InvertDiagBlocks* custom calls write [1,n,n] {1,2,0}; the reshape after
        them stays a bitcast, so the copy goes between."""
        return (jax.scipy.linalg.solve_triangular(a, b, lower=True),
                jax.scipy.linalg.solve_triangular(a, b, lower=False))

    def pools(x, y):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        avg = lax.reduce_window(y, jnp.array(0, y.dtype), lax.add, (1, 1, 3, 3), (1, 1, 2, 2), "SAME") / 9
        return mx, avg

    def pads(x, y, z):
        return (jnp.pad(x, ((1, 2), (3, 4))),
                lax.pad(y, jnp.array(0, y.dtype), ((0, 0, 0), (1, 1, 1), (0, 0, 0))),
                lax.pad(z, 0.0, ((0, 0, 0), (-2, 3, 0))))

    def sorts(x):
        return jnp.sort(x, axis=0), jnp.argsort(x, axis=-1), *lax.top_k(x, 8)

    def topks(a, b, c, d):  # TopK fed by a parameter or by a computed value, read whole or in part
        return (*jax.lax.top_k(a, 8), *jax.lax.top_k(b * 2.0, 8), jnp.exp(jax.lax.top_k(c, 8)[0]),
                jax.nn.softmax(jax.lax.top_k(d / 2.0, 8)[0]))

    def pallas_add(x, y):  # a Mosaic kernel: tpu_custom_call with operand_layout_constraints
        from jax.experimental import pallas as pl

        def kernel(x_ref, y_ref, o_ref):
            o_ref[...] = x_ref[...] + y_ref[...]

        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y.T) * 2.0

    def slices(a, b, i):
        c = jnp.concatenate([a, b], axis=1)
        d = jnp.concatenate([a[:64], a[64:] * 2], axis=0)
        return c, d, a[3:100:2, 5:], lax.dynamic_slice(a, (i, 0), (8, 256))

    def transposes(a, b, c, d, e):
        return a.T * 2, jnp.transpose(b, (1, 0, 2)), jnp.transpose(c, (0, 2, 1, 3)), d.T, jnp.transpose(e, (3, 2, 1, 0))

    def broadcasts(x, bias, rows, s, v, m):
        return (x + bias, x * rows[:, None], x * s, jnp.broadcast_to(v, (4, 16, 128)) + 1,
                jnp.where(m, x, 0.0))

    def layer_norm_residual(x, g, b, w1, w2):
        xf = x.astype(f32)
        mu = jnp.mean(xf, axis=-1, keepdims=True)
        var = jnp.mean((xf - mu) ** 2, axis=-1, keepdims=True)
        h = ((xf - mu) * lax.rsqrt(var + 1e-6) * g + b).astype(x.dtype)
        return x + jax.nn.gelu(h @ w1) @ w2

    def scan_layers(h, ws, bs):
        def stack(ws, bs, h):
            def layer(h, p):
                w, b = p
                return jnp.tanh(h @ w + b), None
            return lax.scan(layer, h, (ws, bs))[0]
        y = stack(ws, bs, h)
        return y, jax.grad(lambda ws, bs: jnp.sum(stack(ws, bs, h) ** 2), argnums=(0, 1))(ws, bs)

    def pinned(a, b):
        return a + b.T, a @ b

    def linalg(a, b, c):
        spd = a @ a.T + 64 * jnp.eye(64, dtype=a.dtype)
        chol = jnp.linalg.cholesky(spd)
        solved = lax.linalg.triangular_solve(chol, b, left_side=True, lower=True)
        q, r = jnp.linalg.qr(c)
        w, v = jnp.linalg.eigh(spd[:32, :32])
        return chol, solved, q, r, w, v

    def embedding_grad(table, ids):
        return jax.grad(lambda t: jnp.sum(jnp.tanh(t[ids])))(table)

    # Every dtype over shapes of every rank, with short minor / second-minor
    # dims: the tiles XLA:TPU chooses (and the entry layouts PJRT picks).
    probe_dtypes = (f32, bf16, f16, s32, s8, pred)
    probe_shapes = ((), (1,), (7,), (128,), (300,), (1000,), (2048,), (5000,), (1, 128), (2, 128), (3, 128),
                    (4, 128), (5, 128), (8, 128), (16, 128), (32, 128), (48, 128), (64, 128), (128, 1), (128, 2),
                    (128, 7), (8, 8), (100, 200), (2, 1, 128), (3, 5, 7), (4, 16, 256))
    probe = [(s, d) for d in probe_dtypes for s in probe_shapes]

    def tiles(*xs):
        return tuple(~x if x.dtype == jnp.bool_ else x + x for x in xs)

    def row_major(shapes):
        return [tuple(range(len(s))) for s, _ in shapes]

    # Convolutions and dots with their entry layouts pinned (the pass's own choice then
    # shows as a copy): the rules of TPU-OBSERVED §5 (tests/unit/test_tpu_rules.py).
    def convs(cases):
        """One convolution per (input, kernel) pair of arguments, each with its own dimension numbers."""
        def fn(*xs):
            return tuple(lax.conv_general_dilated(xs[2 * i], xs[2 * i + 1], (1,) * (len(dn[0]) - 2), "SAME",
                                                  dimension_numbers=dn) for i, dn in enumerate(cases))
        return fn

    def conv_case(dn, b, fi, fo, dtype=f32, sp=(12, 12), k=(3, 3)):
        """(dimension numbers, [input, kernel] shapes) for a convolution of these sizes."""
        lhs, rhs, _ = dn
        si = dict(N=b, C=fi, H=sp[0], W=sp[1], D=6, X=sp[0])
        sk = dict(O=fo, I=fi, H=k[0], W=k[1], D=3, X=k[0])
        return dn, [(tuple(si[c] for c in lhs), dtype), (tuple(sk[c] for c in rhs), dtype)]

    nchw1 = ("NCHW", "OIHW", "NCHW")
    conv_sizes = [conv_case(nchw1, *s) for s in ((8, 32, 64), (32, 8, 64), (64, 32, 8), (4, 3, 16), (16, 16, 16),
                                                 (1, 16, 16), (200, 64, 64), (64, 200, 300), (3, 5, 7), (130, 8, 8))]
    conv_sizes += [conv_case(("NCHW", "IOHW", "NCHW"), 16, 32, 32), conv_case(("NCHW", "OHWI", "NCHW"), 16, 32, 32),
                   conv_case(("CHWN", "OIHW", "CHWN"), 32, 32, 32), conv_case(("NWHC", "OIHW", "NHWC"), 16, 32, 64,
                                                                              sp=(12, 20)),
                   conv_case(("NCX", "OIX", "NCX"), 8, 32, 64, sp=(50, 50)),
                   conv_case(("NCDHW", "OIDHW", "NCDHW"), 4, 16, 32, sp=(8, 10))]
    conv_types = [conv_case(nchw1, 12, 8, 8, bf16), conv_case(nchw1, 12, 16, 12, bf16), conv_case(nchw1, 12, 8, 8, s8),
                  conv_case(nchw1, 24, 40, 24, s8), conv_case(nchw1, 1, 64, 1, bf16)]

    def conv_program(name, cases, in_m2m=None, out_m2m=None):
        shapes = [s for _, ss in cases for s in ss]
        major = [tuple(reversed(m)) for m in in_m2m] if in_m2m else [tuple(range(len(s))) for s, _ in shapes]
        outs = [tuple(reversed(m)) for m in out_m2m] if out_m2m else [tuple(range(len(s))) for s, _ in shapes[::2]]
        return P(name, convs([dn for dn, _ in cases]), shapes, major, outs, single=False)

    # Operands already in a layout of the convolution's shape are read as they come:
    # {0,1,3,2} (batch minor) though {1,0,3,2} pads less; spatial dims reversed are copied.
    as_is = [conv_case(nchw1, 8, 32, 64), conv_case(nchw1, 16, 16, 16), conv_case(nchw1, 16, 16, 16),
             conv_case(nchw1, 16, 16, 16), conv_case(("HWCN", "OIHW", "HWCN"), 8, 32, 16)]
    as_is_in = [(0, 1, 3, 2), (1, 0, 3, 2), (0, 1, 3, 2), (0, 1, 3, 2), (1, 0, 2, 3), (1, 0, 2, 3),
                (2, 3, 1, 0), (2, 3, 0, 1), (3, 2, 1, 0), (1, 0, 3, 2)]
    as_is_out = [(1, 0, 3, 2), (0, 1, 3, 2), (1, 0, 3, 2), (1, 0, 3, 2), (2, 3, 1, 0)]

    def bdot(a, b):
        return jnp.einsum("bij,bjk->bik", a, b)

    def qk(q, k):
        return jnp.einsum("bqhd,bkhd->bhqk", q, k)

    def dots(*xs):
        fns = (bdot, bdot, bdot, bdot, bdot, bdot, qk, qk, jnp.matmul, jnp.matmul, jnp.matmul)
        return tuple(f(xs[2 * i], xs[2 * i + 1]) for i, f in enumerate(fns))

    dot_shapes = [((8, 128, 64), f32), ((8, 64, 256), f32)] * 3 + [((8, 128, 128), f32)] * 4 + [
        ((8, 128, 64), f32), ((8, 64, 128), f32), ((2, 128, 4, 64), bf16), ((2, 128, 4, 64), bf16),
        ((2, 128, 4, 64), bf16), ((2, 64, 4, 64), bf16), ((100, 128), f32), ((128, 8), f32),
        ((8, 128), f32), ((128, 100), f32), ((256, 256), f32), ((256, 256), f32)]
    dot_in = [(2, 1, 0), (2, 1, 0), (2, 1, 0), (1, 2, 0), (1, 2, 0), (1, 2, 0), (1, 2, 0), (2, 1, 0),
              (1, 2, 0), (1, 2, 0), (1, 2, 0), (2, 1, 0), (1, 3, 2, 0), (1, 3, 2, 0), (1, 3, 2, 0), (1, 3, 2, 0),
              (1, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0)]
    dot_out = [(2, 1, 0)] * 5 + [(1, 2, 0), (3, 2, 1, 0), (3, 2, 1, 0), (1, 0), (1, 0), (0, 1)]

    table = {
        "matmul_f32": P("matmul_f32", lambda a, b: a @ b, [((256, 512), f32), ((512, 384), f32)]),
        "matmul_bf16": P("matmul_bf16", lambda a, b: a @ b, [((256, 512), bf16), ((512, 384), bf16)]),
        "matmul_bt_f32": P("matmul_bt_f32", lambda a, b: a @ b.T, [((256, 512), f32), ((384, 512), f32)]),
        "matmul_small_f32": P("matmul_small_f32", lambda a, b, c: a @ b + c,
                              [((37, 100), f32), ((100, 5), f32), ((5,), f32)]),
        "einsum_batched_bf16": P("einsum_batched_bf16", einsums,
                                 [((8, 128, 256), bf16), ((8, 256, 64), bf16), ((2, 128, 4, 64), bf16),
                                  ((2, 128, 4, 64), bf16)], single=False),
        "attention_bf16": P("attention_bf16", attention, [((2, 128, 4, 64), bf16)] * 3),
        "attention_grad_f32": P("attention_grad_f32", attention_grad, [((2, 64, 4, 32), f32)] * 3, single=False),
        "conv_nchw_f32": P("conv_nchw_f32", conv(nchw), [((8, 32, 28, 28), f32), ((64, 32, 3, 3), f32)]),
        "conv_nhwc_bf16": P("conv_nhwc_bf16", conv(nhwc), [((8, 28, 28, 32), bf16), ((3, 3, 32, 64), bf16)]),
        "conv_nchw_grad_f32": P("conv_nchw_grad_f32", net_grad(nchw),
                                [((4, 16, 16, 16), f32), ((32, 16, 3, 3), f32), ((32, 32, 3, 3), f32)], single=False),
        "conv_nhwc_grad_bf16": P("conv_nhwc_grad_bf16", net_grad(nhwc),
                                 [((4, 16, 16, 16), bf16), ((3, 3, 16, 32), bf16), ((3, 3, 32, 32), bf16)],
                                 single=False),
        "reduce_axes": P("reduce_axes", reduces, [((16, 32, 256), f32), ((16, 32, 256), bf16)], single=False),
        "reduce_follows_operand": P("reduce_follows_operand", reduce_follow, [((6, 4, 6, 4), f32), ((3, 2, 6), f32)],
                                    [(0, 1, 3, 2), (2, 0, 1)], [(1, 2, 0), None, None], single=False),
        "fusion_row_major": P("fusion_row_major", fused_gathers, [((8, 3), f32), ((2,), s32)], single=False),
        "dense_dots": P("dense_dots", dense_dots, [((2, 4, 32), f32), ((32, 96), f32), ((8, 4, 3, 3, 3), f32),
                                                  ((3, 5), f32)], [(0, 2, 1), (1, 0), None, None], single=False),
        "dot_reduce_ties": P("dot_reduce_ties", dot_reduce_ties, [((4, 4), f32)] * 4 + [((2, 8, 8), f32)] * 4,
                             [None] * 4 + [(0, 1, 2), (0, 2, 1), (0, 2, 1), (0, 2, 1)], single=False),
        "batched_dot_ties": P("batched_dot_ties", batched_dot_ties, [((2, 8, 8), f32)] * 12,
                              [(0, 2, 1), (0, 2, 1)] * 6, single=False),
        "dot_chain_ties": P("dot_chain_ties", dot_chain_ties, [((2, 8, 8), f32)] * 9 + [((2, 8), f32), ((2, 8, 8), f32)],
                            [(0, 2, 1), (0, 2, 1)] + [None] * 9, single=False),
        "reshape_bitcast": P("reshape_bitcast", reshape_bitcast,
                             [((8, 16, 32), f32), ((16, 8), f32), ((2, 4, 1, 16), bf16), ((3, 1, 8), f32),
                              ((4, 32, 8), s8)], [None, (1, 0), (0, 2, 1, 3), (1, 0, 2), None], single=False),
        "reshape_copies_operand": P("reshape_copies_operand", reshape_copies_operand,
                                    [((8, 16, 32), f32), ((4, 8, 128), bf16), ((6, 4, 1, 8), f32),
                                     ((2, 1, 64, 32), s8), ((4, 4, 8), f32), ((16, 8), f32)],
                                    [None, None, (0, 2, 1, 3), (1, 0, 2, 3), None, None], single=False),
        "reshape_keeps_minor": P("reshape_keeps_minor", reshape_keeps_minor,
                                 [((4, 8, 16, 32), bf16), ((6, 10, 12), f32), ((8, 16), s32)], single=False),
        "reshape_of_custom_call": P("reshape_of_custom_call", small_solves, [((4, 4), f32), ((4, 3), f32)],
                                    single=False),
        "pooling": P("pooling", pools, [((8, 32, 32, 64), f32), ((8, 64, 32, 32), bf16)], single=False),
        "pad": P("pad", pads, [((30, 100), f32), ((4, 8, 128), bf16), ((16, 256), f32)], single=False),
        "sort_topk_f32": P("sort_topk_f32", sorts, [((64, 1000), f32)], single=False),
        "topk_paths": P("topk_paths", topks, [((64, 1000), f32), ((64, 1000), f32), ((64, 32000), f32),
                                              ((16, 32000), f32)], single=False),
        "pallas_add": P("pallas_add", pallas_add, [((256, 512), f32), ((512, 256), f32)]),
        "slice_concat_f32": P("slice_concat_f32", slices, [((128, 256), f32), ((128, 128), f32), ((), s32)],
                              single=False),
        "transposes": P("transposes", transposes,
                        [((256, 384), f32), ((8, 128, 256), f32), ((2, 16, 8, 128), bf16), ((64, 128), s32),
                         ((4, 8, 16, 32), f32)], single=False),
        "broadcasts": P("broadcasts", broadcasts,
                        [((256, 384), f32), ((384,), f32), ((256,), f32), ((), f32), ((128,), bf16),
                         ((256, 384), pred)], single=False),
        "layer_norm_residual_bf16": P("layer_norm_residual_bf16", layer_norm_residual,
                                      [((4, 128, 512), bf16), ((512,), f32), ((512,), f32), ((512, 1024), bf16),
                                       ((1024, 512), bf16)]),
        "scan_layers_f32": P("scan_layers_f32", scan_layers, [((32, 256), f32), ((4, 256, 256), f32), ((4, 256), f32)],
                             single=False),
        # Entry layouts pinned by jax Format(Layout(major_to_minor=...)): row-major a,
        # column-major b; results a + b.T row-major, a @ b column-major.
        "pinned_layouts_f32": P("pinned_layouts_f32", pinned, [((256, 128), f32), ((128, 256), f32)],
                                [(0, 1), (1, 0)], [(0, 1), (1, 0)], single=False),
        "conv_layouts_f32": conv_program("conv_layouts_f32", conv_sizes),
        "conv_layouts_types": conv_program("conv_layouts_types", conv_types),
        "conv_operands_as_is": conv_program("conv_operands_as_is", as_is, as_is_in, as_is_out),
        "dot_layouts": P("dot_layouts", dots, dot_shapes, [tuple(reversed(m)) for m in dot_in],
                         [tuple(reversed(m)) for m in dot_out], single=False),
        "linalg_f32": P("linalg_f32", linalg, [((64, 64), f32), ((64, 16), f32), ((64, 32), f32)], single=False),
        "embedding_grad_f32": P("embedding_grad_f32", embedding_grad, [((1000, 128), f32), ((4, 16), s32)]),
        # JAX's default (PJRT-chosen) entry layouts, and row-major pinned ones.
        "tiles_default": P("tiles_default", tiles, probe, single=False),
        "tiles_row_major": P("tiles_row_major", tiles, probe, row_major(probe), row_major(probe), single=False),
    }

    def flax_transformer_train():
        from tests.differential.models import build

        return build("linen_transformer_train")

    table["flax_transformer_train"] = flax_transformer_train
    return table


def compile_one(name: str, generation: str, out_dir: str) -> None:
    """In a fresh process: compile ``name`` for ``generation`` into ``out_dir`` (``run_tpu_oracle``'s files)."""
    import jax

    jax.config.update("jax_hlo_source_file_canonicalization_regex",
                      "^(" + re.escape(str(REPO) + os.sep) + r"|.*/site-packages/)")
    from tests.differential.tpu_oracle import run_tpu_oracle

    res = run_tpu_oracle(programs()[name](), generation, out_dir)
    if res.status != "ok":
        raise SystemExit(f"{generation}/{name}: {res.reason}")


def make(name: str, generation: str, env: dict[str, str]) -> None:
    """Compile ``name`` for ``generation`` in a child process and keep its files here.

    libtpu may abort the child in a pass after layout assignment (a ``Check
    failed`` deviceless); the dumps are complete then, and are kept with the
    abort's message in meta.json's ``jax_error``.
    """
    from tests.differential.tpu_oracle import recover_tpu_oracle

    # A fixed folder, so that the xla_dump_to path the module config records is the same on every run.
    tmp = Path(tempfile.gettempdir()) / "xla-tpu-make" / generation / name
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        child = subprocess.run([sys.executable, __file__, "--one", generation, name, str(tmp)], env=env,
                               capture_output=True, text=True)
        note = ""
        if child.returncode != 0:
            checks = re.findall(r"(Check failed: .*)", child.stderr)
            why = checks[0][:300] if checks else (child.stderr.strip().splitlines() or ["?"])[-1][:300]
            res = recover_tpu_oracle(tmp, f"exit {child.returncode}: {why}")
            if res is None or res.status != "ok":
                raise SystemExit(f"{generation}/{name}: the compile failed: {why}")
            note = f"  (libtpu aborted after layout assignment: {why[:100]})"
        out = HERE / generation / name
        shutil.rmtree(out, ignore_errors=True)
        _keep(tmp, out, HERE / "_target", f"{generation}/{name}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{generation}/{name}{note}")


_ENTRY_BLOCK = re.compile(r"^entry_computation_layout \{\n.*?^\}\n", re.S | re.M)
# What differs between programs: the dump folder, jax's detailed-logging switch
# (on for modules of many ops) and one propagation flag per parameter / result.
_PER_PROGRAM = re.compile(r'^\s*(xla_dump_to: ".*"|xla_detailed_logging: \w+|'
                          r'allow_spmd_sharding_propagation_to_(output|parameters): \w+)\n', re.M)


def _config_body(text: str) -> str:
    return _PER_PROGRAM.sub("", _ENTRY_BLOCK.sub("", text, count=1))


def _keep(tmp: Path, out: Path, target: Path, label: str) -> None:
    out.mkdir(parents=True)
    for f in ("before.txt", "after.txt", "target_arguments.txt"):
        shutil.copyfile(tmp / f, out / f)
    meta = json.loads((tmp / "meta.json").read_text())
    meta.pop("seconds", None)  # the same bytes on every run
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    target.mkdir(parents=True, exist_ok=True)
    env, config = target / "tpu_comp_env.txt", target / "hlo_module_config.txt"
    if not env.exists():
        shutil.copyfile(tmp / "tpu_comp_env.txt", env)
        shutil.copyfile(tmp / "hlo_module_config.txt", config)
        return
    if not filecmp.cmp(tmp / "tpu_comp_env.txt", env, shallow=False):
        raise SystemExit(f"{label}: tpu_comp_env.txt differs from {env}; keep it per program")
    if _config_body((tmp / "hlo_module_config.txt").read_text()) != _config_body(config.read_text()):
        raise SystemExit(f"{label}: hlo_module_config.txt differs from {config} beyond the entry layout")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--generation", default="v4,v5e,v5p,v6e,tpu7x")
    p.add_argument("--one", nargs=3, metavar=("GENERATION", "NAME", "OUT"), help=argparse.SUPPRESS)
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    if args.one:
        compile_one(args.one[1], args.one[0], args.one[2])
        return
    names = args.names or list(programs())
    gens = [g for g in args.generation.split(",") if g]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(REPO)}
    if not args.names:  # the kept target files are the first program's: start afresh
        shutil.rmtree(HERE / "_target", ignore_errors=True)
    for name in names:
        for g in gens:
            if name not in ONLY_V5E_V6E or g in ("v5e", "v6e"):
                make(name, g, env)


if __name__ == "__main__":
    main()
