"""The benchmark workload: jax.grad of an L-layer attention + MLP stack.

Batch 2, 16 tokens, width 64 (issue 7).  ``export(L)`` returns the serialized
StableHLO bytecode of the gradient function; generation is not timed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BATCH, TOKENS, WIDTH, HEADS = 2, 16, 64, 4


def _layer(x, p):
    wq, wk, wv, wo, w1, w2 = p
    h = x.shape[-1] // HEADS
    q = (x @ wq).reshape(BATCH, TOKENS, HEADS, h).transpose(0, 2, 1, 3)
    k = (x @ wk).reshape(BATCH, TOKENS, HEADS, h).transpose(0, 2, 3, 1)
    v = (x @ wv).reshape(BATCH, TOKENS, HEADS, h).transpose(0, 2, 1, 3)
    a = jax.nn.softmax((q @ k) / jnp.sqrt(h), axis=-1)
    o = (a @ v).transpose(0, 2, 1, 3).reshape(BATCH, TOKENS, WIDTH) @ wo
    x = x + o
    x = x + jax.nn.gelu(x @ w1) @ w2
    return x / (jnp.linalg.norm(x, axis=-1, keepdims=True) + 1e-6)


def params(layers: int):
    shapes = [(WIDTH, WIDTH)] * 4 + [(WIDTH, 4 * WIDTH), (4 * WIDTH, WIDTH)]
    return [[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes] for _ in range(layers)]


def loss(ps, x):
    for p in ps:
        x = _layer(x, p)
    return jnp.sum(x * x)


def export(layers: int) -> bytes:
    x = jax.ShapeDtypeStruct((BATCH, TOKENS, WIDTH), jnp.float32)
    exported = jax.export.export(jax.jit(jax.grad(loss)))(params(layers), x)
    return exported.mlir_module_serialized


def compile_with_dumps(layers: int, dump_dir: str):
    """Compile the same function with XLA's layout-assignment dumps."""
    x = jax.ShapeDtypeStruct((BATCH, TOKENS, WIDTH), jnp.float32)
    return jax.jit(jax.grad(loss)).lower(params(layers), x).compile(
        compiler_options={"xla_dump_to": dump_dir, "xla_dump_hlo_pass_re": "layout-assignment"})
