"""Small real JAX models for trying the layout pass from Python or the CLI.

Each model is a plain function of arrays.  ``EXAMPLES`` maps a name to the
function and the XLA shape strings of its arguments (one ``--arg`` each):

    stablehlo-layout explain examples.models:mlp --arg 'f32[8,128]{0,1}' --arg 'f32[128,256]'

    from stablehlo_layout.frontends.jax import analyze
    from examples.models import EXAMPLES, specs_to_args
    fn, specs = EXAMPLES["attention"]
    print(analyze(fn, *specs_to_args(specs), verify=True))

A layout in a spec (``{0,1}``, XLA minor_to_major) pins that argument; no
layout means the row-major default.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def mlp(x, w):
    """Two-layer MLP with tied weights (a small autoencoder): ``gelu(x @ w) @ w.T``.

    Args: ``x`` f32[8,128] (batch, features), ``w`` f32[128,256].
    Returns f32[8,128].  The second layer reads ``w`` transposed, so the same
    buffer is consumed in two orientations.
    """
    h = jax.nn.gelu(x @ w)
    return h @ w.T


def attention(x, wq, wk, wv, wo):
    """One multi-head self-attention block (4 heads) with a residual connection.

    Args: ``x`` f32[16,64] (sequence, model), ``wq``/``wk``/``wv``/``wo`` f32[64,64].
    Returns f32[16,64].  The head split is a reshape plus transposes; the
    einsums become batched dot_generals over the head dimension.
    """
    seq, model = x.shape
    heads = 4
    head_dim = model // heads

    def split(t):  # [seq, model] -> [heads, seq, head_dim]
        return t.reshape(seq, heads, head_dim).transpose(1, 0, 2)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(jnp.float32(head_dim))
    probs = jax.nn.softmax(scores, axis=-1)
    ctx = jnp.einsum("hqk,hkd->hqd", probs, v)
    merged = ctx.transpose(1, 0, 2).reshape(seq, model)
    return x + merged @ wo


def convnet_nhwc(x, k1, k2):
    """Two 3x3 convolutions with ReLU and global average pooling, channels last.

    Args: ``x`` f32[2,16,16,3] (NHWC), ``k1`` f32[3,3,3,8] (HWIO),
    ``k2`` f32[3,3,8,16] (HWIO).  Returns f32[2,16] (batch, channels).
    """
    dn = ("NHWC", "HWIO", "NHWC")
    y = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
    y = jax.nn.relu(lax.conv_general_dilated(y, k2, (2, 2), "SAME", dimension_numbers=dn))
    return y.mean(axis=(1, 2))


def convnet_nchw(x, k1, k2):
    """The same convnet in PyTorch's channels-first convention.

    Args: ``x`` f32[2,3,16,16] (NCHW), ``k1`` f32[8,3,3,3] (OIHW),
    ``k2`` f32[16,8,3,3] (OIHW).  Returns f32[2,16] (batch, channels).
    XLA:CPU runs convolutions channels-last, so the logical NCHW order has
    to be laid out (or copied) physically as NHWC.
    """
    dn = ("NCHW", "OIHW", "NCHW")
    y = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
    y = jax.nn.relu(lax.conv_general_dilated(y, k2, (2, 2), "SAME", dimension_numbers=dn))
    return y.mean(axis=(2, 3))


def cholesky_solve(a, b):
    """Solve ``(a a^T + n I) x = b`` with a Cholesky factorization.

    Args: ``a`` f32[32,32], ``b`` f32[32,4].  Returns f32[32,4].
    On CPU the factorization is LAPACK ``potrf`` and the solves are BLAS
    ``trsm``, custom calls that pin their operands column-major ({0,1}).
    """
    n = a.shape[0]
    spd = a @ a.T + n * jnp.eye(n, dtype=a.dtype)
    chol = jnp.linalg.cholesky(spd)
    return jax.scipy.linalg.cho_solve((chol, True), b)


# name -> (function, XLA shape strings of its arguments).
EXAMPLES = {
    "mlp": (mlp, ["f32[8,128]", "f32[128,256]"]),
    "attention": (attention, ["f32[16,64]"] + ["f32[64,64]"] * 4),
    "convnet_nhwc": (convnet_nhwc, ["f32[2,16,16,3]", "f32[3,3,3,8]", "f32[3,3,8,16]"]),
    "convnet_nchw": (convnet_nchw, ["f32[2,3,16,16]", "f32[8,3,3,3]", "f32[16,8,3,3]"]),
    "cholesky_solve": (cholesky_solve, ["f32[32,32]", "f32[32,4]"]),
}


def specs_to_args(specs):
    """``jax.ShapeDtypeStruct``s for a list of XLA shape strings (layouts ignored)."""
    from stablehlo_layout.frontends.jax import shape_dtype_struct

    return [shape_dtype_struct(s) for s in specs]
