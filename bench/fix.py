"""How much of XLA's copy traffic ``fix`` removes, and what it costs, on programs of the kinds users write.

    python bench/fix.py [--target xla-cpu] [--models] [--layers 64] [--jobs N]

Programs: a CNN training step with NCHW convolutions, attention forward and
backward, an embedding lookup with a dense head, layer norm with residuals,
a linear solve; each with the default (row-major) entry layouts, with every
rank-2+ parameter pinned column-major, and with free entry layouts.
``--models`` adds the 24 flax / haiku / equinox / optax programs of the
differential corpus.  Every number is XLA's (``fix``'s own measure); the
written program is run against the original through XLA:CPU on the same
inputs (exact where only layouts changed, within 1e-4 otherwise, or within
what one ulp of input moves the original itself: ``same_results``).

The cost line compiles the benchmark transformer (``workload.py``, L
layers) once with XLA, then runs ``fix`` on it: the ratio is fix's time
over one compile.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from stablehlo_layout.fix.search import fix_module  # noqa: E402
from stablehlo_layout.ir import entry_modes, mlir  # noqa: E402
from stablehlo_layout.targets import get_target  # noqa: E402

F32 = jnp.float32


def _s(*shape: int, dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _conv(x, k):
    return lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))


def cnn_step(k1, b1, k2, w, x, y):
    def loss(k1, b1, k2, w):
        h = jax.nn.relu(_conv(x, k1) + b1[None, :, None, None])
        h = jax.nn.relu(_conv(h, k2))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return jnp.mean((h.mean(axis=(2, 3)) @ w - y) ** 2)

    value, grads = jax.value_and_grad(loss, argnums=(0, 1, 2, 3))(k1, b1, k2, w)
    return (value, *(p - 0.01 * g for p, g in zip((k1, b1, k2, w), grads)))


def attention(x, wq, wk, wv, wo):
    b, s, d = x.shape
    heads = 4
    split = lambda t: t.reshape(b, s, heads, d // heads)  # noqa: E731
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    p = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / 4.0, axis=-1)
    return x + jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, d) @ wo


def attention_grad(x, wq, wk, wv, wo):
    return jax.grad(lambda *ws: jnp.sum(attention(x, *ws) ** 2), argnums=(0, 1, 2, 3))(wq, wk, wv, wo)


def embed_head(table, ids, w):
    return jnp.tanh(table[ids] @ w).sum(axis=1)


def layer_norm_residual(x, g, b, w1, w2):
    def norm(t):
        m = t.mean(-1, keepdims=True)
        return (t - m) * lax.rsqrt(((t - m) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    h = x + jax.nn.gelu(norm(x) @ w1) @ w2
    return norm(h)


def linear_solve(a, b):
    return jnp.linalg.solve(a @ a.T + 4.0 * jnp.eye(a.shape[0]), b)


PROGRAMS: dict[str, tuple[Callable[..., Any], list[jax.ShapeDtypeStruct]]] = {
    "cnn_nchw_train_step": (cnn_step, [_s(16, 3, 3, 3), _s(16), _s(32, 16, 3, 3), _s(32, 10), _s(8, 3, 32, 32),
                                       _s(8, 10)]),
    "attention_forward": (attention, [_s(2, 32, 64), *[_s(64, 64)] * 4]),
    "attention_backward": (attention_grad, [_s(2, 32, 64), *[_s(64, 64)] * 4]),
    "embedding_head": (embed_head, [_s(1000, 64), _s(8, 16, dtype=jnp.int32), _s(64, 32)]),
    "layer_norm_residual": (layer_norm_residual, [_s(64, 128), _s(128), _s(128), _s(128, 256), _s(256, 128)]),
    "linear_solve": (linear_solve, [_s(64, 64), _s(64, 16)]),
}
ENTRY_MODES = ("default", "column-major", "free")


def lowered(fn: Callable[..., Any], args: list[jax.ShapeDtypeStruct], mode: str) -> tuple[str, str]:
    """The program's StableHLO text and the --entry-layouts it goes with."""
    text = jax.jit(fn).lower(*args).as_text()
    if mode != "column-major":
        return text, mode
    module = mlir.load(text, fn.__name__, mlir.make_context())
    pins = {i: "{" + ",".join(map(str, range(len(a.shape)))) + "}" for i, a in enumerate(args) if len(a.shape) >= 2}
    entry_modes.set_modes(module, pins, {})
    return str(module.operation.get_asm(enable_debug_info=True)), "default"


def _worst_relative(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The largest |a - b| / (|a| + 1e-3) over the finite float elements of every output."""
    worst = 0.0
    for x, y in zip(a, b):
        if x.dtype.kind != "f":
            continue
        both = np.isfinite(x) & np.isfinite(y)
        if both.any():
            diff = np.abs(x[both].astype(np.float64) - y[both]) / (np.abs(x[both]) + 1e-3)
            worst = max(worst, float(diff.max()))
    return worst


def same_results(original: str, fixed: str, exact: bool) -> str:
    """"yes" if the fixed program computes what the original does; "NO" if not.

    Only layouts changed: bit for bit.  A rewrite that reorders arithmetic (a
    convolution in another order, a dot with its operands swapped): within
    1e-4, or, for a program so ill-conditioned on random inputs that XLA's own
    rounding moves it further (a training step whose gradients reach 1e8),
    within what the original itself moves when its float inputs move by one
    ulp — then "yes, within rounding".
    """
    from tests.support import equivalence

    inputs = equivalence.make_inputs(original, seed=0)
    a, b = equivalence.run(original, inputs), equivalence.run(fixed, inputs)
    if exact:
        return "yes" if all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b)) else "NO"
    if all(np.allclose(x, y, rtol=1e-4, atol=1e-4, equal_nan=True) for x, y in zip(a, b)):
        return "yes"
    if any(not np.array_equal(np.isfinite(x), np.isfinite(y)) for x, y in zip(a, b) if x.dtype.kind == "f"):
        return "NO"
    nudged = [np.nextafter(x, np.inf).astype(x.dtype) if x.dtype.kind == "f" else x for x in inputs]
    noise = _worst_relative(a, equivalence.run(original, nudged))
    change = _worst_relative(a, b)
    return f"yes, within rounding ({change:.1e}; 1 ulp of input: {noise:.1e})" if change <= noise else "NO"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", default="xla-cpu")
    p.add_argument("--gpu", default=None)
    p.add_argument("--tpu", default=None)
    p.add_argument("--models", action="store_true", help="add the 24 library-model programs")
    p.add_argument("--layers", type=int, default=64, help="layers of the transformer the cost line times (0: skip)")
    p.add_argument("--jobs", type=int, default=None)
    args = p.parse_args()
    target, _ = get_target(args.target, args.gpu, args.tpu)
    cases: list[tuple[str, str, str]] = []
    for name, (fn, shapes) in PROGRAMS.items():
        for mode in ENTRY_MODES:
            text, entry = lowered(fn, shapes, mode)
            cases.append((f"{name} [{mode}]", text, entry))
    if args.models:
        from tests.differential import models

        for name in models.MODELS:
            m = models.build(name)
            cases.append((f"{name} [default]", jax.jit(m.fn).lower(*m.args).as_text(), "default"))
    total_before = total_after = 0
    print(f"{'program':<44} {'copies':>13} {'bytes before':>13} {'after':>11} {'removed':>8} {'kept':>5}  same")
    for label, text, entry in cases:
        module = mlir.load(text, label, mlir.make_context())
        t0 = time.perf_counter()
        r = fix_module(module, label, target, entry, jobs=args.jobs)
        seconds = time.perf_counter() - t0
        total_before += r.before.bytes
        total_after += r.after.bytes
        kinds = {t.candidate.kind for t in r.fixes}
        same = "-"
        if args.target == "xla-cpu" and r.fixes:
            same = same_results(text, r.fixed_text, exact=kinds == {"entry-layout"})
        removed = (1 - r.after.bytes / r.before.bytes) if r.before.bytes else 0.0
        print(f"{label:<44} {r.before.copies:>5} -> {r.after.copies:<5} {r.before.bytes:>13} {r.after.bytes:>11} "
              f"{removed:>7.1%} {len(r.fixes):>5}  {same}  ({seconds:.1f}s)")
    share = 1 - total_after / total_before if total_before else 0.0
    print(f"total: {total_before} -> {total_after} bytes of XLA copies: {share:.1%} removed")
    if args.layers:
        from bench import workload
        from stablehlo_layout.fix.measure import Measure

        ctx = mlir.make_context()
        module = mlir.load(bytes(workload.export(args.layers)), f"transformer L={args.layers}", ctx)
        t0 = time.perf_counter()
        Measure(target, "transformer")(module)
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = fix_module(module, "transformer", target, "default", jobs=args.jobs)
        whole = time.perf_counter() - t0
        print(f"cost: transformer L={args.layers}: one {r.target} compile {one:.1f}s, fix {whole:.1f}s "
              f"= {whole / one:.1f}x ({len(r.tried)} candidates, copies {r.before.copies} -> {r.after.copies})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
