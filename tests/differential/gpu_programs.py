"""What GPU users write, for the XLA:GPU differential test: the seeded generator, extended.

``generate(seed, index)`` is deterministic, as ``programs.generate`` is, and
returns the same ``programs.Program``.  Three programs in ten are whole
models as people write them for GPUs:

* conv nets, NCHW or NHWC, f32 / bf16 / f16, conv + bias + relu, optional
  batch norm, pooling and a dense head, forward or ``jax.grad`` (which gives
  XLA:GPU's backward-input and backward-filter convolutions);
* attention blocks (layer norm, multi-head attention, MLP), forward or with
  their gradient;
* MLPs with layer norm and their gradient;
* layer stacks scanned over stacked weights (``lax.scan``), maybe with their gradient.

The other seven compose steps, drawn from the CPU generator's menu
(``programs.STEP_KINDS``: transposes, reshapes, dots, pads, loops, conds, ...)
and from GPU steps: convolutions in every layout and float type, conv + bias
+ relu, a conv's gradient, attention and its gradient, batch norm,
reductions over every axis, sort / top_k, cumsum, FFT and the cuSOLVER-backed
linear algebra.  Shapes take size-1 dimensions often, as batch 1 and single
channels do in practice.

The CPU generator stays as it is (its programs and cache keep their numbers).
"""

from __future__ import annotations

import random
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import programs as P

GPU_DIMS = (1, 1, 2, 3, 4, 5, 6, 8)
FLOATS = (jnp.float32, jnp.float32, jnp.bfloat16, jnp.float16)


class _GpuBuilder(P._Builder):
    def rand_shape(self, rank: int, dims: tuple[int, ...] = GPU_DIMS) -> tuple[int, ...]:
        return tuple(self.rng.choice(dims) for _ in range(rank))


def _dtype_name(dt: Any) -> str:
    return np.dtype(dt).name


def _size(rng: random.Random, choices: tuple[int, ...], one: float = 0.25) -> int:
    """A dimension size, 1 with probability ``one``."""
    return 1 if rng.random() < one else rng.choice(choices)


# -- convolutions --------------------------------------------------------------------------

_CONV_LAYOUTS_2D = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"),
                    ("NHWC", "HWIO", "NHWC"), ("NHWC", "OHWI", "NHWC"), ("NCHW", "HWIO", "NHWC")]


def _conv_case(b: P._Builder, dtype: Any) -> tuple[tuple[str, str, str], tuple[int, ...], tuple[int, ...], dict[str, Any]]:
    rng = b.rng
    r = rng.random()
    if r < 0.8:
        specs = rng.choice(_CONV_LAYOUTS_2D)
    elif r < 0.92:
        specs = rng.choice([("NWC", "WIO", "NWC"), ("NCW", "OIW", "NCW")])
    else:
        specs = rng.choice([("NCDHW", "OIDHW", "NCDHW"), ("NDHWC", "DHWIO", "NDHWC")])
    lhs_spec, rhs_spec, _out = specs
    nd = len(lhs_spec) - 2
    groups = rng.choice((1, 1, 1, 2)) if nd == 2 else 1
    n = _size(rng, (2, 4), 0.4)
    c = rng.choice((1, 2, 3, 4, 8)) * groups
    o = rng.choice((1, 2, 4, 8)) * groups
    spatial = [rng.choice((4, 5, 6, 8) if nd < 3 else (3, 4)) for _ in range(nd)]
    k = [rng.choice((1, 3, 3)) for _ in range(nd)]
    sp, ks = iter(spatial), iter(k)
    lhs = tuple(n if ch == "N" else c if ch == "C" else next(sp) for ch in lhs_spec)
    rhs = tuple(o if ch == "O" else c // groups if ch == "I" else next(ks) for ch in rhs_spec)
    opts = {
        "window_strides": tuple(rng.choice((1, 1, 2)) for _ in range(nd)),
        "padding": rng.choice(("SAME", "VALID", "SAME")),
        "rhs_dilation": tuple(rng.choice((1, 1, 1, 2)) for _ in range(nd)),
        "feature_group_count": groups,
        "dimension_numbers": specs,
    }
    return specs, lhs, rhs, opts


def _conv(x: Any, w: Any, opts: dict[str, Any]) -> Any:
    return lax.conv_general_dilated(x, w, **opts)


def _bias_axis(specs: tuple[str, str, str]) -> int:
    return specs[2].index("C")


def s_conv(b: P._Builder) -> None:
    """A convolution in any layout and float type, often with bias and relu (cuDNN fuses them)."""
    dtype = b.rng.choice(FLOATS)
    specs, lhs, rhs, opts = _conv_case(b, dtype)
    x = b.pick_shape(lhs, fresh=0.6, dtype=dtype)
    w = b.new_arg(rhs, dtype)
    epilogue = b.rng.choice(["none", "bias_relu", "bias_relu", "relu", "bias"])
    ins = [x, w]
    if "bias" in epilogue:
        ins.append(b.new_arg((rhs[specs[1].index("O")],), dtype))
    axis = _bias_axis(specs)

    def fn(x, w, *bias):
        y = _conv(x, w, opts)
        if bias:
            shape = [1] * y.ndim
            shape[axis] = bias[0].shape[0]
            y = y + bias[0].reshape(shape)
        if "relu" in epilogue:
            y = jax.nn.relu(y)
        return y

    b.add(f"conv{specs} {_dtype_name(dtype)} {opts['padding']} s={opts['window_strides']} "
          f"d={opts['rhs_dilation']} g={opts['feature_group_count']} +{epilogue}", fn, ins)


def s_conv_grad(b: P._Builder) -> None:
    """jax.grad of a conv's loss: XLA:GPU's backward-input and backward-filter convolutions."""
    dtype = b.rng.choice(FLOATS)
    specs, lhs, rhs, opts = _conv_case(b, dtype)
    x = b.pick_shape(lhs, fresh=0.6, dtype=dtype)
    w = b.new_arg(rhs, dtype)
    wrt = b.rng.choice([(0, 1), (0, 1), (1,), (0,)])

    def loss(x, w):
        y = jax.nn.relu(_conv(x, w, opts))
        return jnp.sum(y.astype(jnp.float32) ** 2)

    def fn(x, w):
        return jax.grad(loss, argnums=wrt)(x, w)

    b.add(f"grad{wrt} conv{specs} {_dtype_name(dtype)} {opts['padding']} s={opts['window_strides']} "
          f"g={opts['feature_group_count']}", fn, [x, w])


# -- attention -------------------------------------------------------------------------------

def _attention_shapes(b: P._Builder) -> tuple[int, int, int, int]:
    rng = b.rng
    return _size(rng, (2, 3), 0.4), rng.choice((1, 4, 5, 8)), rng.choice((1, 2, 4)), rng.choice((4, 8, 16))


def _attention(q: Any, k: Any, v: Any, mode: str, causal: bool) -> Any:
    d = q.shape[-1]
    if mode == "library":
        return jax.nn.dot_product_attention(q, k, v, is_causal=causal)
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(d).astype(np.float32)
    if causal:
        t = q.shape[1]
        mask = jnp.tril(jnp.ones((t, k.shape[1]), bool))
        s = jnp.where(mask, s, jnp.asarray(-1e4, s.dtype))
    p = jax.nn.softmax(s.astype(jnp.float32), axis=-1).astype(q.dtype)
    return jnp.einsum("bhqk,bkhd->bqhd", p, v)


def s_attention(b: P._Builder) -> None:
    """Softmax attention as users write it (einsum or jax.nn.dot_product_attention), maybe its grad."""
    bs, t, h, d = _attention_shapes(b)
    dtype = b.rng.choice((jnp.float32, jnp.float32, jnp.bfloat16))
    q = b.pick_shape((bs, t, h, d), fresh=0.7, dtype=dtype)
    k = b.new_arg((bs, t, h, d), dtype)
    v = b.new_arg((bs, t, h, d), dtype)
    mode = b.rng.choice(["einsum", "einsum", "library"])
    causal = b.rng.random() < 0.4
    grad = b.rng.random() < 0.4
    if grad:
        def fn(q, k, v):
            return jax.grad(lambda q, k, v: jnp.sum(_attention(q, k, v, mode, causal).astype(jnp.float32) ** 2),
                            argnums=(0, 1, 2))(q, k, v)
    else:
        def fn(q, k, v):
            return _attention(q, k, v, mode, causal)
    b.add(f"{'grad ' if grad else ''}attention[{mode}{', causal' if causal else ''}]"
          f"(b={bs}, t={t}, h={h}, d={d}) {_dtype_name(dtype)}", fn, [q, k, v])


# -- normalization, reductions, scans ---------------------------------------------------------

def s_batchnorm(b: P._Builder) -> None:
    """Batch norm over every axis but the channels (NCHW or NHWC), in training form."""
    layout = b.rng.choice(["NCHW", "NHWC", "NC"])
    rank = len(layout)
    x = b.pick(lambda v: len(v.shape) == rank, rank, fresh=0.4)
    c_axis = layout.index("C")
    c = b.shape(x)[c_axis]
    scale = b.new_arg((c,))
    offset = b.new_arg((c,))
    axes = tuple(i for i in range(rank) if i != c_axis)

    def fn(x, g, o):
        mean = jnp.mean(x, axis=axes, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
        shape = [1] * rank
        shape[c_axis] = c
        y = (x - mean) * lax.rsqrt(var + 1e-5) * g.reshape(shape) + o.reshape(shape)
        return y, mean.reshape(c), var.reshape(c)

    b.add(f"batch_norm[{layout}]", fn, [x, scale, offset])


def s_reduce_axes(b: P._Builder) -> None:
    """A reduction over one axis (any of them), several, or all."""
    x = b.pick(lambda v: len(v.shape) >= 2, (2, 4), fresh=0.3)
    rank = len(b.shape(x))
    r = b.rng.random()
    if r < 0.6:
        axes: tuple[int, ...] = (b.rng.randrange(rank),)
    elif r < 0.85:
        axes = tuple(sorted(b.rng.sample(range(rank), b.rng.randint(2, rank))))
    else:
        axes = tuple(range(rank))
    kind = b.rng.choice(["sum", "max", "min", "mean", "prod", "logsumexp", "var"])
    keep = b.rng.random() < 0.3
    f: Callable[..., Any] = {
        "sum": jnp.sum, "max": jnp.max, "min": jnp.min, "mean": jnp.mean, "prod": jnp.prod,
        "logsumexp": jax.nn.logsumexp, "var": jnp.var}[kind]
    b.add(f"reduce_{kind}(axes={axes}, keepdims={keep})", lambda x: f(x, axis=axes, keepdims=keep), [x])


def s_topk(b: P._Builder) -> None:
    """top_k over the last axis, or a sort / argsort on any axis.

    XLA:GPU sorts a small top_k and runs one over 1024 or more elements as its
    TopK kernel (the ``__gpu$TopK`` custom call): both come up.
    """
    if b.rng.random() < 0.35:
        batch: tuple[int, ...] = b.rng.choice([(), (1,), (2,), (3,), (2, 2)])
        n = b.rng.choice((1024, 2048))
        x = b.new_arg(batch + (n,))
        k = b.rng.choice((1, 2, 4, 8))
        b.add(f"top_k(k={k}, n={n}, batch={batch})", lambda x: lax.top_k(x, k), [x])
        return
    x = b.pick(lambda v: len(v.shape) >= 1 and v.shape[-1] >= 2, (1, 3))
    shape = b.shape(x)
    mode = b.rng.choice(["top_k", "top_k", "sort", "argsort", "sort_kv"])
    ax = b.rng.randrange(len(shape))
    if mode == "top_k":
        k = b.rng.randint(1, min(shape[-1], 4))
        b.add(f"top_k(k={k})", lambda x: lax.top_k(x, k), [x])
    elif mode == "sort":
        b.add(f"sort(axis={ax})", lambda x: jnp.sort(x, axis=ax), [x])
    elif mode == "argsort":
        b.add(f"argsort(axis={ax})", lambda x: jnp.argsort(x, axis=ax), [x])
    else:
        b.add(f"sort_kv(dim={ax})", lambda x: lax.sort((x, jnp.cos(x)), dimension=ax, num_keys=1), [x])


def s_cumsum(b: P._Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 4))
    ax = b.rng.randrange(len(b.shape(x)))
    kind = b.rng.choice(["cumsum", "cumprod", "cummax", "cumlogsumexp", "rev"])
    f = {"cumsum": lambda x: jnp.cumsum(x, axis=ax), "cumprod": lambda x: jnp.cumprod(x, axis=ax),
         "cummax": lambda x: lax.cummax(x, axis=ax), "cumlogsumexp": lambda x: lax.cumlogsumexp(x, axis=ax),
         "rev": lambda x: lax.cumsum(x, axis=ax, reverse=True)}[kind]
    b.add(f"{kind}(axis={ax})", f, [x])


def s_fft(b: P._Builder) -> None:
    """FFTs over the innermost one, two or three axes (XLA's fft op, cuFFT on the GPU)."""
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 4))
    rank = len(b.shape(x))
    kind = b.rng.choice(["fft", "rfft", "ifft", "fft2", "rfft2", "irfft", "fftn"])
    if kind in ("fft2", "rfft2") and rank < 2:
        kind = "fft"
    if kind == "fftn" and rank < 3:
        kind = "fft"
    f = {
        "fft": lambda x: jnp.abs(jnp.fft.fft(x)),
        "ifft": lambda x: jnp.real(jnp.fft.ifft(x.astype(jnp.complex64))),
        "rfft": lambda x: jnp.abs(jnp.fft.rfft(x)),
        "irfft": lambda x: jnp.fft.irfft(jnp.fft.rfft(x), n=x.shape[-1]),
        "fft2": lambda x: jnp.abs(jnp.fft.fft2(x)),
        "rfft2": lambda x: jnp.abs(jnp.fft.rfft2(x)),
        "fftn": lambda x: jnp.real(jnp.fft.fftn(x, axes=(-3, -2, -1))),
    }[kind]
    b.add(kind, f, [x])


def s_linalg(b: P._Builder) -> None:
    """Dense linear algebra: cuSOLVER calls (potrf, getrf, geqrf, syevd, gesvd) and triangular solves."""
    kind = b.rng.choice(["cholesky", "solve", "qr", "eigh", "svd", "lu", "triangular", "inv", "det"])
    n = b.rng.choice((2, 3, 4, 6))
    batch: tuple[int, ...] = b.rng.choice([(), (), (1,), (2,), (2, 3)])
    a = b.pick_shape(batch + (n, n), fresh=0.6)
    eye = jnp.eye(n, dtype=jnp.float32)
    spd = lambda a: a @ jnp.swapaxes(a, -1, -2) + n * eye  # noqa: E731
    if kind in ("solve", "triangular"):
        k = b.rng.choice((1, 2, 5))
        rhs = b.pick_shape(batch + (n, k), fresh=0.7)
        if kind == "solve":
            b.add(f"linalg.solve({batch + (n, n)}, k={k})", lambda a, r: jnp.linalg.solve(a + n * eye, r), [a, rhs])
        else:
            lower = b.rng.random() < 0.5
            left = b.rng.random() < 0.7
            if not left:
                rhs = b.pick_shape(batch + (k, n), fresh=0.9)
            b.add(f"linalg.triangular_solve(lower={lower}, left={left})",
                  lambda a, r: lax.linalg.triangular_solve(jnp.tril(a) + n * eye if lower else jnp.triu(a) + n * eye,
                                                           r, left_side=left, lower=lower), [a, rhs])
        return
    f: Callable[..., Any] = {
        "cholesky": lambda a: jnp.linalg.cholesky(spd(a)),
        "qr": lambda a: jnp.linalg.qr(a),
        "eigh": lambda a: jnp.linalg.eigh(spd(a)),
        "svd": lambda a: jnp.linalg.svd(a, full_matrices=False),
        "lu": lambda a: jax.scipy.linalg.lu_factor(a + n * eye),
        "inv": lambda a: jnp.linalg.inv(a + n * eye),
        "det": lambda a: jnp.linalg.slogdet(a + n * eye)[1],
    }[kind]
    b.add(f"linalg.{kind}({batch + (n, n)})", f, [a])


def s_dot_lowp(b: P._Builder) -> None:
    """A matmul or batched einsum in bf16 / f16 (XLA:GPU's dot rules look at the element type)."""
    dtype = b.rng.choice((jnp.bfloat16, jnp.float16))
    m, k, n = (_size(b.rng, (2, 4, 8, 16), 0.2) for _ in range(3))
    batch = b.rng.choice([(), (), (2,), (1, 3)])
    x = b.pick_shape(batch + (m, k), fresh=0.7, dtype=dtype)
    w = b.new_arg((k, n) if b.rng.random() < 0.5 else batch + (k, n), dtype)
    acc = b.rng.random() < 0.3
    if acc:
        b.add(f"matmul{batch + (m, k)} {_dtype_name(dtype)} -> f32",
              lambda x, w: jnp.matmul(x, w, preferred_element_type=jnp.float32), [x, w])
    else:
        b.add(f"matmul{batch + (m, k)} {_dtype_name(dtype)}", lambda x, w: jnp.matmul(x, w), [x, w])


GPU_STEP_KINDS: dict[str, Callable[[P._Builder], None]] = {
    "gpu_conv": s_conv,
    "gpu_conv_grad": s_conv_grad,
    "gpu_attention": s_attention,
    "gpu_batchnorm": s_batchnorm,
    "gpu_reduce": s_reduce_axes,
    "gpu_topk": s_topk,
    "gpu_cumsum": s_cumsum,
    "gpu_fft": s_fft,
    "gpu_linalg": s_linalg,
    "gpu_dot_lowp": s_dot_lowp,
}
STEP_KINDS = {**P.STEP_KINDS, **GPU_STEP_KINDS}
WEIGHTS = {**P.WEIGHTS, "conv": 1, "lapack": 1, "gpu_conv": 4, "gpu_conv_grad": 3, "gpu_attention": 2,
           "gpu_reduce": 2, "gpu_batchnorm": 2, "gpu_topk": 3, "gpu_fft": 2, "gpu_linalg": 2}


# -- whole models --------------------------------------------------------------------------

def _params(b: P._Builder, shapes: list[tuple[int, ...]], dtype: Any) -> list[int]:
    return [b.new_arg(s, dtype) for s in shapes]


def m_convnet(b: P._Builder) -> None:
    """A small conv net: (conv + bias [+ batch norm] + relu [+ pool]) x L, a dense head; maybe its grad."""
    rng = b.rng
    nhwc = rng.random() < 0.5
    dtype = rng.choice(FLOATS)
    depth = rng.randint(1, 3)
    n = _size(rng, (2, 4), 0.4)
    hw = rng.choice((4, 6, 8))
    chans = [rng.choice((1, 3, 4))] + [rng.choice((2, 4, 8)) for _ in range(depth)]
    norm = rng.random() < 0.4
    pool = rng.random() < 0.4
    classes = rng.choice((1, 3, 10))
    specs = ("NHWC", "HWIO", "NHWC") if nhwc else ("NCHW", "OIHW", "NCHW")
    x = b.new_arg((n, hw, hw, chans[0]) if nhwc else (n, chans[0], hw, hw), dtype)
    shapes: list[tuple[int, ...]] = []
    for i in range(depth):
        shapes.append((3, 3, chans[i], chans[i + 1]) if nhwc else (chans[i + 1], chans[i], 3, 3))
        shapes.append((chans[i + 1],))
    shapes.append((chans[-1], classes))
    ps = _params(b, shapes, dtype)
    c_axis = 3 if nhwc else 1
    sp_axes = (1, 2) if nhwc else (2, 3)
    mode = rng.choice(["forward", "grad", "grad", "grad_x"])

    def net(params: list[Any], x: Any) -> Any:
        h = x
        for i in range(depth):
            w, bias = params[2 * i], params[2 * i + 1]
            h = lax.conv_general_dilated(h, w, (1, 1), "SAME", dimension_numbers=specs)
            shape = [1, 1, 1, 1]
            shape[c_axis] = bias.shape[0]
            h = h + bias.reshape(shape)
            if norm:
                axes = tuple(a for a in range(4) if a != c_axis)
                mu = jnp.mean(h, axis=axes, keepdims=True)
                h = (h - mu) * lax.rsqrt(jnp.mean(jnp.square(h - mu), axis=axes, keepdims=True) + 1e-5)
            h = jax.nn.relu(h)
            if pool and h.shape[sp_axes[0]] >= 2:
                win = [1, 1, 1, 1]
                for a in sp_axes:
                    win[a] = 2
                h = lax.reduce_window(h, jnp.asarray(-jnp.inf, h.dtype), lax.max, win, win, "VALID")
        h = jnp.mean(h, axis=sp_axes)
        return h @ params[-1]

    def loss(params: list[Any], x: Any) -> Any:
        return jnp.mean(jax.nn.log_softmax(net(params, x).astype(jnp.float32)))

    def fn(x: Any, *params: Any) -> Any:
        if mode == "forward":
            return net(list(params), x)
        if mode == "grad_x":
            return jax.grad(loss, argnums=(0, 1))(list(params), x)
        return tuple(jax.grad(loss)(list(params), x))

    b.add(f"convnet[{'NHWC' if nhwc else 'NCHW'}, {_dtype_name(dtype)}, depth={depth}, chans={chans}, "
          f"norm={norm}, pool={pool}] {mode}", lambda *a: _flat(fn(*a)), [x] + ps)


def m_transformer(b: P._Builder) -> None:
    """A pre-norm transformer block (layer norm, multi-head attention, MLP); maybe its grad."""
    rng = b.rng
    dtype = rng.choice((jnp.float32, jnp.float32, jnp.bfloat16))
    bs, t, h, dh = _size(rng, (2,), 0.5), rng.choice((1, 4, 8)), rng.choice((1, 2, 4)), rng.choice((4, 8))
    d = h * dh
    x = b.new_arg((bs, t, d), dtype)
    ps = _params(b, [(d,), (d, 3 * d), (d, d), (d,), (d, 2 * d), (2 * d, d)], dtype)
    causal = rng.random() < 0.5
    mode = rng.choice(["forward", "grad", "grad"])

    def ln(x: Any, g: Any) -> Any:
        mu = jnp.mean(x, -1, keepdims=True)
        return (x - mu) * lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-5) * g

    def block(params: list[Any], x: Any) -> Any:
        g1, wqkv, wo, g2, w1, w2 = params
        y = ln(x, g1) @ wqkv
        q, k, v = (a.reshape(bs, t, h, dh) for a in jnp.split(y, 3, axis=-1))
        a = _attention(q, k, v, "einsum", causal).reshape(bs, t, d) @ wo
        x = x + a
        return x + jax.nn.gelu(ln(x, g2) @ w1) @ w2

    def fn(x: Any, *params: Any) -> Any:
        if mode == "forward":
            return block(list(params), x)
        return tuple(jax.grad(lambda p, x: jnp.sum(block(p, x).astype(jnp.float32) ** 2))(list(params), x))

    b.add(f"transformer_block[b={bs}, t={t}, heads={h}, d={d}, {_dtype_name(dtype)}, causal={causal}] {mode}",
          lambda *a: _flat(fn(*a)), [x] + ps)


def m_mlp(b: P._Builder) -> None:
    """An MLP with layer norm and its gradient (an optimizer-free training step)."""
    rng = b.rng
    dtype = rng.choice((jnp.float32, jnp.bfloat16))
    widths = [rng.choice((1, 4, 8, 16)) for _ in range(rng.randint(2, 4))]
    n = _size(rng, (2, 8), 0.3)
    x = b.new_arg((n, widths[0]), dtype)
    ps = _params(b, [(widths[i], widths[i + 1]) for i in range(len(widths) - 1)], dtype)

    def net(params: list[Any], x: Any) -> Any:
        for w in params:
            x = jax.nn.relu(x @ w)
            x = (x - jnp.mean(x, -1, keepdims=True)) * lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-5)
        return x

    def fn(x: Any, *params: Any) -> Any:
        grads = jax.grad(lambda p, x: jnp.sum(net(p, x).astype(jnp.float32) ** 2))(list(params), x)
        return tuple(p - 0.1 * g for p, g in zip(params, grads))

    b.add(f"mlp_step[widths={widths}, n={n}, {_dtype_name(dtype)}]", lambda *a: _flat(fn(*a)), [x] + ps)


def m_scanned_layers(b: P._Builder) -> None:
    """A layer stack as ``lax.scan`` over stacked weights (flax's nn.scan, remat-free); maybe its grad.

    XLA sees a while loop whose body slices one layer's weights per step: the
    loop-carried activations and the dynamic slices of the stack get layouts.
    """
    rng = b.rng
    dtype = rng.choice((jnp.float32, jnp.float32, jnp.bfloat16))
    layers, n, d = rng.choice((1, 2, 3)), _size(rng, (2, 4), 0.3), rng.choice((4, 8, 16))
    x = b.new_arg((n, d), dtype)
    ps = _params(b, [(layers, d, d), (layers, d)], dtype)
    mode = rng.choice(["forward", "grad"])

    def stack(params: list[Any], x: Any) -> Any:
        def layer(h: Any, p: Any) -> tuple[Any, Any]:
            w, g = p
            y = jax.nn.gelu(h @ w)
            y = (y - jnp.mean(y, -1, keepdims=True)) * lax.rsqrt(jnp.var(y, -1, keepdims=True) + 1e-5) * g
            return h + y, jnp.sum(y.astype(jnp.float32))

        h, sums = lax.scan(layer, x, tuple(params))
        return h, sums

    def fn(x: Any, *params: Any) -> Any:
        if mode == "forward":
            return stack(list(params), x)
        return tuple(jax.grad(lambda p, x: jnp.sum(stack(p, x)[0].astype(jnp.float32) ** 2))(list(params), x))

    b.add(f"scanned_layers[L={layers}, n={n}, d={d}, {_dtype_name(dtype)}] {mode}", lambda *a: _flat(fn(*a)), [x] + ps)


MODEL_KINDS: dict[str, Callable[[P._Builder], None]] = {
    "convnet": m_convnet,
    "transformer": m_transformer,
    "mlp": m_mlp,
    "scanned_layers": m_scanned_layers,
}
MODEL_WEIGHTS = {"convnet": 3, "transformer": 2, "mlp": 1, "scanned_layers": 1}


def _flat(out: Any) -> Any:
    leaves = jax.tree.leaves(out)
    return leaves[0] if len(leaves) == 1 else tuple(leaves)


def _finish(b: P._Builder, rng: random.Random, seed: int, index: int) -> P.Program:
    """As ``programs._finish``, but every result of the last steps is an output (gradients included)."""
    consumed = {i for _f, ins, _ids in b.steps for i in ins}
    outs: list[int] = []
    for _f, _ins, ids in reversed(b.steps):
        for i in ids:
            if i not in consumed and len(outs) < 8:
                outs.append(i)
    if rng.random() < 0.05:
        outs.append(rng.choice(b.arg_ids))
    prog = P.program_of(b, rng, seed, index, outs, name_prefix="gpu_")
    # XLA:GPU re-chooses pinned results when another is AUTO: pin all results or none, mostly.
    if len(outs) > 1 and any(s == "auto" for s in prog.out_layouts) and rng.random() < 0.8:
        prog.out_layouts = ["auto"] * len(outs) if rng.random() < 0.5 else [
            None if s == "auto" else s for s in prog.out_layouts]
    return prog


def generate(seed: int, index: int) -> P.Program:
    """GPU program number ``index`` of the stream ``seed``."""
    rng = random.Random(f"stablehlo-layout-gpu-differential:{seed}:{index}")
    model = rng.random() < 0.3
    table = MODEL_KINDS if model else STEP_KINDS
    b = P.draw_steps(rng, _GpuBuilder, table, MODEL_WEIGHTS if model else WEIGHTS,
                     lambda: 1 if model else rng.randint(2, 5))
    if b is None:
        raise RuntimeError(f"could not generate GPU program {seed}:{index}")
    return _finish(b, rng, seed, index)
