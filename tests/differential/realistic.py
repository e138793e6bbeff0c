"""A corpus like the users' for ``--as-compiled``: whole programs of the kinds real code exports.

``as_compiled.programs()`` holds 11 hand-written programs, one of each kind;
the programs here are what users hand the tool from ``jax.export``: library
training and inference steps (flax linen and nnx, haiku, equinox, optax), with
conditionals (``lax.cond`` / ``lax.switch``), ``scan`` / ``while`` loops, linalg
(Cholesky, QR, eigh, LU, triangular solves: XLA:CPU's LAPACK custom calls work
in place), donated arguments, bf16 mixed precision, gathers and scatters,
sorts and top-k, keepdims reductions, and ``AUTO`` results.

``corpus(seed)`` draws each program's sizes and entry-layout requests from
``seed``: seed 0 is the corpus rules were written against, other seeds are
held out.

    python -m tests.differential.as_compiled --corpus realistic --seed 0
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from .as_compiled import Realistic

S = jax.ShapeDtypeStruct


def _flat(name: str, inner: Callable[..., Any], trees: tuple[Any, ...], *, in_layouts: Any = None,
          out_layouts: Any = None, donate: tuple[int, ...] = ()) -> Realistic:
    """``inner(*trees)`` as a function of the trees' array leaves (as a user's jit of a pytree step)."""
    leaves, treedef = jax.tree_util.tree_flatten(trees)

    def fn(*xs: Any) -> Any:
        # Flat results: an export serializes no optimizer-state classes.
        return tuple(jax.tree_util.tree_leaves(inner(*jax.tree_util.tree_unflatten(treedef, list(xs)))))

    fn.__name__ = fn.__qualname__ = name
    args = [S(jnp.shape(x), jnp.result_type(x)) for x in leaves]
    lay = in_layouts(len(args)) if callable(in_layouts) else (in_layouts or [])
    return Realistic(name, fn, args, lay, out_layouts, donate=donate)


def _key(n: int) -> jax.Array:
    return jax.random.PRNGKey(n)


def _x(shape: tuple[int, ...], n: int = 1, dtype: Any = jnp.float32) -> jax.Array:
    return jax.random.normal(_key(n), shape, jnp.float32).astype(dtype)


def _train(name: str, loss: Callable[..., Any], opt: Any, params: Any, batch: tuple[Any, ...],
           rng: random.Random, **kw: Any) -> Realistic:
    """One optax step of ``loss(params, *batch)``; params and optimizer state donated as users do."""
    import optax

    opt_state = opt.init(params)

    def step(params: Any, opt_state: Any, batch: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, *batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    n_state = len(jax.tree_util.tree_leaves((params, opt_state)))
    donate = tuple(range(n_state)) if rng.random() < 0.7 else ()
    if kw.get("in_layouts") is not None or kw.get("out_layouts") == "auto":
        # jax.jit donates an AUTO argument only into AUTO results, and the other way round.
        kw["in_layouts"] = kw.get("in_layouts") or (lambda n: ["auto"] * n)
        kw["out_layouts"] = "auto"
    return _flat(name, step, (params, opt_state, batch), donate=donate, **kw)


def _pins(rng: random.Random) -> Callable[[int], list[Any]] | None:
    """Entry requests as users give them: none (row-major pins), or AUTO everywhere."""
    if rng.random() < 0.6:
        return None
    return lambda n: ["auto"] * n


def _out(rng: random.Random) -> Any:
    return "auto" if rng.random() < 0.3 else None


# -- library steps ------------------------------------------------------------------------


def linen_mlp_cond(rng: random.Random) -> Realistic:
    """flax linen MLP, Adam, a ``lax.cond`` choosing the loss (label smoothing on or off)."""
    import flax.linen as nn
    import optax

    d, h, c, b = rng.choice([16, 32, 48]), rng.choice([32, 64]), rng.choice([8, 10]), rng.choice([4, 8])

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            return nn.Dense(c)(nn.relu(nn.Dense(h)(x)))

    m = MLP()
    x, y = _x((b, d)), jnp.arange(b, dtype=jnp.int32) % c

    def loss(p: Any, x: jax.Array, y: jax.Array, smooth: jax.Array) -> jax.Array:
        logits = m.apply(p, x)
        onehot = jax.nn.one_hot(y, c)
        target = lax.cond(smooth > 0, lambda t: t * 0.9 + 0.1 / c, lambda t: t, onehot)
        return optax.softmax_cross_entropy(logits, target).mean()

    return _train("linen_mlp_cond", loss, optax.adam(1e-3), m.init(_key(0), x), (x, y, jnp.float32(1.0)), rng,
                  out_layouts=_out(rng))


def linen_cnn_bf16(rng: random.Random) -> Realistic:
    """flax linen NHWC conv net in bf16 with f32 params (mixed precision), SGD momentum."""
    import flax.linen as nn
    import optax

    hw, b = rng.choice([8, 12]), rng.choice([2, 4])

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            for f in (8, 16):
                x = nn.relu(nn.Conv(f, (3, 3), dtype=jnp.bfloat16)(x))
            x = x.mean(axis=(1, 2), keepdims=True).reshape(x.shape[0], -1)
            return nn.Dense(10, dtype=jnp.bfloat16)(x).astype(jnp.float32)

    m = CNN()
    x = _x((b, hw, hw, 3))

    def loss(p: Any, x: jax.Array, y: jax.Array) -> jax.Array:
        return optax.softmax_cross_entropy_with_integer_labels(m.apply(p, x.astype(jnp.bfloat16)), y).mean()

    return _train("linen_cnn_bf16", loss, optax.sgd(0.1, momentum=0.9), m.init(_key(0), x),
                  (x, jnp.arange(b, dtype=jnp.int32) % 10), rng)


def linen_lstm_scan(rng: random.Random) -> Realistic:
    """flax linen LSTM over time with ``nn.scan``, gradient and Adam."""
    import flax.linen as nn
    import optax

    t, b, d, h = rng.choice([6, 10]), rng.choice([2, 4]), rng.choice([8, 16]), rng.choice([16, 32])

    class RNN(nn.Module):
        @nn.compact
        def __call__(self, xs: jax.Array) -> jax.Array:
            cell = nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params", split_rngs={"params": False},
                           in_axes=1, out_axes=1)(h)
            carry = cell.initialize_carry(_key(1), xs[:, 0].shape)
            _, ys = cell(carry, xs)
            return nn.Dense(1)(ys).squeeze(-1)

    m = RNN()
    xs = _x((b, t, d))

    def loss(p: Any, xs: jax.Array) -> jax.Array:
        return jnp.mean(m.apply(p, xs) ** 2)

    return _train("linen_lstm_scan", loss, optax.adam(1e-3), m.init(_key(0), xs), (xs,), rng)


def nnx_transformer_switch(rng: random.Random) -> Realistic:
    """flax nnx transformer block, ``lax.switch`` over activations, AdamW."""
    import optax
    from flax import nnx

    d, heads, s, b = rng.choice([16, 32]), rng.choice([2, 4]), rng.choice([6, 8]), rng.choice([1, 2])

    class Block(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.up = nnx.Linear(d, 2 * d, rngs=rngs)
            self.down = nnx.Linear(2 * d, d, rngs=rngs)

        def __call__(self, x: jax.Array, act: jax.Array) -> jax.Array:
            h = self.ln1(x)
            x = x + self.attn(h, h)
            h = self.up(self.ln2(x))
            h = lax.switch(act, [jax.nn.gelu, jax.nn.relu, jnp.tanh], h)
            return x + self.down(h)

    model = Block(nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    x = _x((b, s, d))

    def loss(p: Any, x: jax.Array, act: jax.Array) -> jax.Array:
        return jnp.mean(nnx.merge(graphdef, p)(x, act) ** 2)

    return _train("nnx_transformer_switch", loss, optax.adamw(1e-3), state, (x, jnp.int32(1)), rng,
                  out_layouts=_out(rng))


def haiku_resnet_nchw(rng: random.Random) -> Realistic:
    """haiku NCHW residual block with batch norm (state), SGD."""
    import haiku as hk

    c, hw, b = rng.choice([4, 8]), rng.choice([8, 10]), rng.choice([2, 4])

    def net(x: jax.Array, train: bool) -> jax.Array:
        conv = lambda o: hk.Conv2D(o, 3, data_format="NCHW")  # noqa: E731
        y = jax.nn.relu(hk.BatchNorm(True, True, 0.9, data_format="NC...")(conv(c)(x), train))
        y = hk.BatchNorm(True, True, 0.9, data_format="NC...")(conv(c)(y), train)
        y = jax.nn.relu(y + conv(c)(x))
        return hk.Linear(5)(y.mean(axis=(2, 3)))

    f = hk.transform_with_state(net)
    x = _x((b, 3, hw, hw))
    params, state = f.init(_key(0), x, True)

    def step(params: Any, state: Any, x: jax.Array) -> Any:
        def loss(p: Any) -> Any:
            out, st = f.apply(p, state, None, x, True)
            return jnp.mean(out ** 2), st

        (value, st), g = jax.value_and_grad(loss, has_aux=True)(params)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, g), st, value

    return _flat("haiku_resnet_nchw", step, (params, state, x),
                 donate=tuple(range(len(jax.tree_util.tree_leaves((params, state))))))


def haiku_embed_scatter(rng: random.Random) -> Realistic:
    """haiku embedding lookup (gather) into an MLP; the gradient scatters into the table."""
    import haiku as hk
    import optax

    v, d, b, t = rng.choice([50, 100]), rng.choice([16, 32]), rng.choice([2, 4]), rng.choice([5, 8])

    def net(ids: jax.Array) -> jax.Array:
        e = hk.Embed(v, d)(ids)
        h = jax.nn.gelu(hk.Linear(d)(e))
        return hk.Linear(v)(h.mean(axis=1))

    f = hk.without_apply_rng(hk.transform(net))
    ids = jnp.arange(b * t, dtype=jnp.int32).reshape(b, t) % v

    def loss(p: Any, ids: jax.Array, y: jax.Array) -> jax.Array:
        return optax.softmax_cross_entropy_with_integer_labels(f.apply(p, ids), y).mean()

    return _train("haiku_embed_scatter", loss, optax.adam(1e-3), f.init(_key(0), ids),
                  (ids, jnp.arange(b, dtype=jnp.int32)), rng, in_layouts=_pins(rng))


def equinox_convnet_adamw(rng: random.Random) -> Realistic:
    """equinox NCHW conv net (vmapped over the batch), AdamW, optionally AUTO everywhere."""
    import equinox as eqx
    import optax

    c, hw, b = rng.choice([4, 8]), rng.choice([8, 12]), rng.choice([2, 4])
    keys = jax.random.split(_key(0), 3)
    model = [eqx.nn.Conv2d(3, c, 3, padding=1, key=keys[0]), eqx.nn.Conv2d(c, c, 3, padding=1, key=keys[1]),
             eqx.nn.Linear(c, 10, key=keys[2])]
    params, static = eqx.partition(model, eqx.is_array)

    def fwd(p: Any, x: jax.Array) -> jax.Array:
        m = eqx.combine(p, static)
        y = jax.nn.relu(m[0](x))
        y = jax.nn.relu(m[1](y))
        return m[2](y.mean(axis=(1, 2)))

    x = _x((b, 3, hw, hw))

    def loss(p: Any, x: jax.Array, y: jax.Array) -> jax.Array:
        import optax as ox

        return ox.softmax_cross_entropy_with_integer_labels(jax.vmap(fwd, (None, 0))(p, x), y).mean()

    return _train("equinox_convnet_adamw", loss, optax.adamw(1e-3), params,
                  (x, jnp.arange(b, dtype=jnp.int32)), rng, in_layouts=_pins(rng), out_layouts=_out(rng))


def equinox_gru_scan(rng: random.Random) -> Realistic:
    """equinox GRU cell over a ``lax.scan``, gradient, SGD."""
    import equinox as eqx
    import optax

    t, d, h = rng.choice([5, 9]), rng.choice([4, 8]), rng.choice([8, 16])
    cell = eqx.nn.GRUCell(d, h, key=_key(0))
    params, static = eqx.partition(cell, eqx.is_array)
    xs = _x((t, d))

    def loss(p: Any, xs: jax.Array) -> jax.Array:
        c = eqx.combine(p, static)
        hT, hs = lax.scan(lambda hh, x: (c(x, hh),) * 2, jnp.zeros(h), xs)
        return jnp.sum(hs ** 2) + jnp.sum(hT)

    return _train("equinox_gru_scan", loss, optax.sgd(1e-2), params, (xs,), rng)


# -- linalg, as written in scientific code ---------------------------------------------------


def gp_marginal_likelihood(rng: random.Random) -> Realistic:
    """A Gaussian process's negative log marginal likelihood and its gradient: Cholesky, triangular solves."""
    n, d = rng.choice([16, 24, 32]), rng.choice([2, 3])

    def nll(log_ls: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        diff = (x[:, None, :] - x[None, :, :]) / jnp.exp(log_ls)
        k = jnp.exp(-0.5 * jnp.sum(diff ** 2, axis=-1)) + 1e-2 * jnp.eye(n)
        chol = jnp.linalg.cholesky(k)
        alpha = jax.scipy.linalg.cho_solve((chol, True), y)
        return 0.5 * jnp.sum(y * alpha) + jnp.sum(jnp.log(jnp.diagonal(chol)))

    def step(log_ls: jax.Array, x: jax.Array, y: jax.Array) -> Any:
        v, g = jax.value_and_grad(nll)(log_ls, x, y)
        return log_ls - 0.01 * g, v

    return Realistic("gp_marginal_likelihood", step, [S((d,), jnp.float32), S((n, d), jnp.float32),
                                                       S((n, 4), jnp.float32)],
                     [None, (1, 0) if rng.random() < 0.5 else None], _out(rng))


def linalg_decompositions(rng: random.Random) -> Realistic:
    """QR, eigh, LU solve, triangular solve and slogdet on one matrix."""
    n = rng.choice([8, 16, 20])

    def f(a: jax.Array, b: jax.Array) -> Any:
        q, r = jnp.linalg.qr(a)
        sym = a @ a.T
        w, v = jnp.linalg.eigh(sym)
        x = jnp.linalg.solve(a + n * jnp.eye(n), b)
        t = jax.scipy.linalg.solve_triangular(r + n * jnp.eye(n), b, lower=False)
        sign, logdet = jnp.linalg.slogdet(sym + jnp.eye(n))
        return q @ v, w, x + t, sign * logdet

    pin = rng.choice([None, (1, 0), "auto"])
    return Realistic("linalg_decompositions", f, [S((n, n), jnp.float32), S((n, 3), jnp.float32)], [pin], _out(rng))


def kalman_filter_scan(rng: random.Random) -> Realistic:
    """A Kalman filter: ``scan`` over observations with a linear solve (LU) inside each step."""
    t, n, m = rng.choice([8, 12]), rng.choice([4, 6]), rng.choice([2, 3])

    def kf(f: jax.Array, h: jax.Array, q: jax.Array, ys: jax.Array) -> Any:
        def step(carry: Any, y: jax.Array) -> Any:
            mu, p = carry
            mu, p = f @ mu, f @ p @ f.T + q
            s = h @ p @ h.T + jnp.eye(m)
            k = jnp.linalg.solve(s, h @ p).T
            mu = mu + k @ (y - h @ mu)
            p = p - k @ h @ p
            return (mu, p), mu

        (mu, p), mus = lax.scan(step, (jnp.zeros(n), jnp.eye(n)), ys)
        return mus, p

    return Realistic("kalman_filter_scan", kf, [S((n, n), jnp.float32), S((m, n), jnp.float32),
                                                 S((n, n), jnp.float32), S((t, m), jnp.float32)],
                     [rng.choice([None, (1, 0)])])


def power_iteration_while(rng: random.Random) -> Realistic:
    """Power iteration to a tolerance in a ``while_loop``, then a Rayleigh quotient with keepdims norms."""
    n = rng.choice([16, 32])

    def f(a: jax.Array, v0: jax.Array) -> Any:
        def cond(c: Any) -> jax.Array:
            return (c[2] < 50) & (c[1] > 1e-5)

        def body(c: Any) -> Any:
            v, _, i = c
            w = a @ v
            w = w / jnp.linalg.norm(w, axis=0, keepdims=True)
            return w, jnp.max(jnp.abs(w - v)), i + 1

        v, _, _ = lax.while_loop(cond, body, (v0, jnp.float32(1.0), 0))
        return v.T @ a @ v, v

    return Realistic("power_iteration_while", f, [S((n, n), jnp.float32), S((n, 2), jnp.float32)],
                     [rng.choice([None, (1, 0), "auto"])], _out(rng))


# -- sorting, top-k, gathers ------------------------------------------------------------------


def topk_beam_step(rng: random.Random) -> Realistic:
    """One beam-search step: log-softmax, top-k over beams x vocab, gather the chosen beams' states."""
    b, k, v, d = rng.choice([2, 4]), rng.choice([2, 3]), rng.choice([16, 32]), rng.choice([8, 16])

    def f(scores: jax.Array, states: jax.Array, w: jax.Array) -> Any:
        logits = jax.nn.log_softmax(states @ w, axis=-1) + scores[..., None]
        flat = logits.reshape(b, k * v)
        top, idx = lax.top_k(flat, k)
        beam = idx // v
        new_states = jnp.take_along_axis(states, beam[..., None], axis=1)
        return top, idx % v, new_states

    return Realistic("topk_beam_step", f, [S((b, k), jnp.float32), S((b, k, d), jnp.float32),
                                            S((d, v), jnp.float32)],
                     [None, rng.choice([None, (2, 1, 0)]), rng.choice([None, (1, 0)])], _out(rng))


def sort_ranking_loss(rng: random.Random) -> Realistic:
    """Sort-based ranking metrics and a pairwise loss's gradient: argsort, sort along rows, gathers."""
    b, n = rng.choice([4, 8]), rng.choice([16, 32])

    def f(scores: jax.Array, labels: jax.Array) -> Any:
        order = jnp.argsort(-scores, axis=1)
        ranked = jnp.take_along_axis(labels, order, axis=1)
        dcg = jnp.sum(ranked / jnp.log2(jnp.arange(n) + 2.0), axis=1, keepdims=True)

        def pair(s: jax.Array) -> jax.Array:
            d = s[:, :, None] - s[:, None, :]
            w = labels[:, :, None] > labels[:, None, :]
            return jnp.sum(jnp.where(w, jax.nn.softplus(-d), 0.0))

        g = jax.grad(pair)(scores)
        return dcg, g, jnp.sort(scores, axis=0)

    return Realistic("sort_ranking_loss", f, [S((b, n), jnp.float32), S((b, n), jnp.float32)],
                     [rng.choice([None, (1, 0)])], _out(rng))


def scatter_segment_mean(rng: random.Random) -> Realistic:
    """Graph message passing: gather node features along edges, scatter-add them back, keepdims norms."""
    n, e, d = rng.choice([10, 20]), rng.choice([30, 40]), rng.choice([8, 16])

    def f(x: jax.Array, w: jax.Array, src: jax.Array, dst: jax.Array) -> Any:
        def loss(w: jax.Array) -> jax.Array:
            msg = jnp.take(x, src, axis=0) @ w
            agg = jnp.zeros((n, w.shape[1])).at[dst].add(msg)
            deg = jnp.zeros((n, 1)).at[dst].add(1.0)
            h = agg / jnp.maximum(deg, 1.0)
            h = h / jnp.linalg.norm(h, axis=-1, keepdims=True)
            return jnp.sum(h.T @ h)

        return jax.value_and_grad(loss)(w)

    return Realistic("scatter_segment_mean", f, [S((n, d), jnp.float32), S((d, d), jnp.float32),
                                                  S((e,), jnp.int32), S((e,), jnp.int32)],
                     [rng.choice([None, (1, 0)]), rng.choice([None, (1, 0), "auto"])], _out(rng))


def attention_cond_mask(rng: random.Random) -> Realistic:
    """Causal or full attention chosen by ``lax.cond``, bf16 matmuls with f32 softmax, gradient."""
    s, d, heads = rng.choice([8, 16]), rng.choice([32, 64]), rng.choice([2, 4])

    def f(x: jax.Array, wqkv: jax.Array, wo: jax.Array, causal: jax.Array) -> Any:
        def loss(wqkv: jax.Array, wo: jax.Array) -> jax.Array:
            qkv = (x.astype(jnp.bfloat16) @ wqkv.astype(jnp.bfloat16)).reshape(s, 3, heads, d // heads)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
            logits = jnp.einsum("qhd,khd->hqk", q, k).astype(jnp.float32)
            mask = lax.cond(causal, lambda: jnp.tril(jnp.ones((s, s), bool)), lambda: jnp.ones((s, s), bool))
            p = jax.nn.softmax(jnp.where(mask, logits, -1e9), axis=-1).astype(jnp.bfloat16)
            ctx = jnp.einsum("hqk,khd->qhd", p, v).reshape(s, d)
            return jnp.mean((ctx.astype(jnp.float32) @ wo) ** 2)

        return jax.grad(loss, argnums=(0, 1))(wqkv, wo)

    return Realistic("attention_cond_mask", f, [S((s, d), jnp.float32), S((d, 3 * d), jnp.float32),
                                                 S((d, d), jnp.float32), S((), jnp.bool_)],
                     [rng.choice([None, (1, 0)])], _out(rng))


def cumsum_logsumexp(rng: random.Random) -> Realistic:
    """Sequence statistics: cumsum / cummax along time, logsumexp with keepdims, a transposed output."""
    b, t, d = rng.choice([2, 4]), rng.choice([8, 16]), rng.choice([4, 8])

    def f(x: jax.Array) -> Any:
        c = jnp.cumsum(x, axis=1)
        m = lax.cummax(x, axis=1)
        lse = jax.nn.logsumexp(x, axis=(1,), keepdims=True)
        return (c - lse).transpose(2, 0, 1), m.max(axis=-1, keepdims=True)

    return Realistic("cumsum_logsumexp", f, [S((b, t, d), jnp.float32)],
                     [rng.choice([None, (2, 1, 0), (0, 2, 1), "auto"])], _out(rng))


def batched_linalg_vmap(rng: random.Random) -> Realistic:
    """Batched (vmapped) Cholesky, inverse, SVD and determinant: LAPACK calls with batch dimensions."""
    b, n = rng.choice([2, 3, 4]), rng.choice([4, 8, 12])

    def f(a: jax.Array, y: jax.Array) -> Any:
        spd = a @ jnp.swapaxes(a, -1, -2) + n * jnp.eye(n)
        chol = jnp.linalg.cholesky(spd)
        inv = jnp.linalg.inv(spd)
        u, s, vt = jnp.linalg.svd(a, full_matrices=False)
        x = jax.scipy.linalg.solve_triangular(chol, y, lower=True)
        return chol, inv @ y, u * s[..., None, :] @ vt, jnp.linalg.det(spd), x

    return Realistic("batched_linalg_vmap", f, [S((b, n, n), jnp.float32), S((b, n, 2), jnp.float32)],
                     [rng.choice([None, (0, 2, 1), "auto"]), rng.choice([None, (0, 2, 1)])], _out(rng))


def fft_spectral_filter(rng: random.Random) -> Realistic:
    """An FFT low-pass filter over the last axis and a 2-D FFT power spectrum."""
    b, n = rng.choice([2, 4]), rng.choice([16, 32])

    def f(x: jax.Array, img: jax.Array) -> Any:
        spec = jnp.fft.rfft(x, axis=-1)
        keep = jnp.arange(spec.shape[-1]) < n // 4
        low = jnp.fft.irfft(spec * keep, n=n, axis=-1)
        p2 = jnp.abs(jnp.fft.fft2(img)) ** 2
        return low.T, p2.sum(axis=0, keepdims=True)

    return Realistic("fft_spectral_filter", f, [S((b, n), jnp.float32), S((b, n, n), jnp.float32)],
                     [rng.choice([None, (1, 0)]), rng.choice([None, (0, 2, 1)])], _out(rng))


def maxpool_dropout_cnn(rng: random.Random) -> Realistic:
    """NHWC conv net with max pooling (its gradient is select-and-scatter), dropout from a key, argmax accuracy."""
    import flax.linen as nn
    import optax

    hw, b = rng.choice([8, 12]), rng.choice([2, 4])

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array, key: jax.Array) -> jax.Array:
            x = nn.relu(nn.Conv(8, (3, 3))(x))
            x = nn.max_pool(x, (2, 2), (2, 2))
            x = nn.relu(nn.Conv(8, (3, 3), feature_group_count=8)(x))  # depthwise
            x = x.reshape(x.shape[0], -1)
            keep = jax.random.bernoulli(key, 0.9, x.shape)
            return nn.Dense(10)(jnp.where(keep, x / 0.9, 0.0))

    m = CNN()
    x = _x((b, hw, hw, 3))

    def loss(p: Any, x: jax.Array, y: jax.Array, key: jax.Array) -> jax.Array:
        logits = m.apply(p, x, key)
        acc = jnp.mean(jnp.argmax(logits, -1) == y)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean() + 0.0 * acc

    return _train("maxpool_dropout_cnn", loss, optax.sgd(0.1), m.init(_key(0), x, _key(1)),
                  (x, jnp.arange(b, dtype=jnp.int32), _key(2)), rng, out_layouts=_out(rng))


def kv_cache_decode(rng: random.Random) -> Realistic:
    """Greedy decoding with a KV cache: ``fori_loop`` writing each step's keys with dynamic_update_slice."""
    t, d, v = rng.choice([4, 6]), rng.choice([16, 32]), rng.choice([20, 32])

    def f(emb: jax.Array, wq: jax.Array, wk: jax.Array, wv: jax.Array, tok0: jax.Array) -> Any:
        def body(i: jax.Array, c: Any) -> Any:
            kc, vc, tok, out = c
            h = emb[tok]
            kc = lax.dynamic_update_slice(kc, (h @ wk)[None], (i, 0))
            vc = lax.dynamic_update_slice(vc, (h @ wv)[None], (i, 0))
            att = jax.nn.softmax(jnp.where(jnp.arange(t) <= i, kc @ (h @ wq), -1e9))
            nxt = jnp.argmax((att @ vc) @ emb.T).astype(jnp.int32)
            return kc, vc, nxt, out.at[i].set(nxt)

        z = jnp.zeros((t, d))
        kc, vc, _, out = lax.fori_loop(0, t, body, (z, z, tok0, jnp.zeros(t, jnp.int32)))
        return out, kc.T, vc

    return Realistic("kv_cache_decode", f, [S((v, d), jnp.float32)] + [S((d, d), jnp.float32)] * 3
                     + [S((), jnp.int32)], [rng.choice([None, (1, 0)]), rng.choice([None, (1, 0)])], _out(rng))


def remat_scanned_layers(rng: random.Random) -> Realistic:
    """Layers stacked and scanned (``scan`` over a weight stack) under ``jax.checkpoint``, with gradients."""
    layers, d, b = rng.choice([3, 4]), rng.choice([16, 32]), rng.choice([4, 8])

    def f(ws: jax.Array, bs: jax.Array, x: jax.Array) -> Any:
        def loss(ws: jax.Array, bs: jax.Array) -> jax.Array:
            @jax.checkpoint
            def layer(h: jax.Array, wb: Any) -> Any:
                w, bb = wb
                z = h @ w + bb
                return h + jax.nn.gelu(z) / jnp.sqrt(jnp.mean(z ** 2, axis=-1, keepdims=True) + 1e-6), None

            h, _ = lax.scan(layer, x, (ws, bs))
            return jnp.mean(h ** 2)

        return jax.value_and_grad(loss, argnums=(0, 1))(ws, bs)

    pin, out, donate = rng.choice([None, (0, 2, 1), "auto"]), _out(rng), (0, 1) if rng.random() < 0.5 else ()
    if donate and "auto" in (pin, out):
        pin = out = "auto"  # jax.jit donates an AUTO argument only into AUTO results, and the other way round
    return Realistic("remat_scanned_layers", f, [S((layers, d, d), jnp.float32), S((layers, d), jnp.float32),
                                                  S((b, d), jnp.float32)], [pin], out, donate=donate)


def newton_solver_cond_in_loop(rng: random.Random) -> Realistic:
    """Damped Newton's method: a ``while_loop`` whose body solves (LU) and picks a step with ``lax.cond``."""
    n = rng.choice([4, 6, 8])

    def f(a: jax.Array, b: jax.Array, x0: jax.Array) -> Any:
        def grad_hess(x: jax.Array) -> Any:
            r = a @ x + 0.1 * x ** 3 - b
            jac = a + 0.3 * jnp.diag(x ** 2)
            return r, jac

        def body(c: Any) -> Any:
            x, i, _ = c
            r, jac = grad_hess(x)
            dx = jnp.linalg.solve(jac, r)
            x = lax.cond(jnp.linalg.norm(dx) > 1.0, lambda: x - 0.5 * dx, lambda: x - dx)
            return x, i + 1, jnp.linalg.norm(r)

        x, i, res = lax.while_loop(lambda c: (c[1] < 20) & (c[2] > 1e-6), body, (x0, 0, jnp.float32(1.0)))
        return x, res, a.T @ jnp.outer(x, x)

    return Realistic("newton_solver_cond_in_loop", f, [S((n, n), jnp.float32), S((n,), jnp.float32),
                                                        S((n,), jnp.float32)],
                     [rng.choice([None, (1, 0), "auto"])], _out(rng))


def conv_transpose_decoder(rng: random.Random) -> Realistic:
    """A decoder: transposed and dilated convolutions (NCHW), upsampling by resize, a BCE loss gradient."""
    c, hw, b = rng.choice([4, 8]), rng.choice([4, 6]), rng.choice([1, 2])
    dn = ("NCHW", "OIHW", "NCHW")

    def f(z: jax.Array, k1: jax.Array, k2: jax.Array, target: jax.Array) -> Any:
        def loss(k1: jax.Array, k2: jax.Array) -> jax.Array:
            y = lax.conv_transpose(z, k1, (2, 2), "SAME", dimension_numbers=dn)
            y = jax.nn.relu(y)
            y = lax.conv_general_dilated(y, k2, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=dn)
            y = jax.image.resize(y, (b, 1, 4 * hw, 4 * hw), "nearest")
            return jnp.mean(optax_bce(y, target))

        return jax.grad(loss, argnums=(0, 1))(k1, k2)

    return Realistic("conv_transpose_decoder", f, [S((b, c, hw, hw), jnp.float32), S((c, c, 3, 3), jnp.float32),
                                                    S((1, c, 3, 3), jnp.float32),
                                                    S((b, 1, 4 * hw, 4 * hw), jnp.float32)],
                     [None, rng.choice([None, (2, 3, 1, 0)])], _out(rng))


def optax_bce(logits: jax.Array, labels: jax.Array) -> jax.Array:
    import optax

    return optax.sigmoid_binary_cross_entropy(logits, labels)


def mixture_em_step(rng: random.Random) -> Realistic:
    """One EM step of a Gaussian mixture: per-component Cholesky (vmapped), log-densities, keepdims
    logsumexp, responsibilities, weighted covariances with einsum."""
    k, n, d = rng.choice([2, 3]), rng.choice([32, 64]), rng.choice([2, 3])

    def f(x: jax.Array, mu: jax.Array, cov: jax.Array, logw: jax.Array) -> Any:
        chol = jnp.linalg.cholesky(cov)
        diff = x[None] - mu[:, None]
        sol = jax.scipy.linalg.solve_triangular(chol, jnp.swapaxes(diff, 1, 2), lower=True)
        logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(chol, axis1=1, axis2=2)), axis=1)
        logp = logw[:, None] - 0.5 * (jnp.sum(sol ** 2, axis=1) + logdet[:, None])
        resp = jnp.exp(logp - jax.nn.logsumexp(logp, axis=0, keepdims=True))
        nk = resp.sum(axis=1)
        mu_new = (resp @ x) / nk[:, None]
        dm = x[None] - mu_new[:, None]
        cov_new = jnp.einsum("kn,kni,knj->kij", resp, dm, dm) / nk[:, None, None] + 1e-3 * jnp.eye(d)
        return mu_new, cov_new, jnp.log(nk / n)

    return Realistic("mixture_em_step", f, [S((n, d), jnp.float32), S((k, d), jnp.float32),
                                             S((k, d, d), jnp.float32), S((k,), jnp.float32)],
                     [rng.choice([None, (1, 0)]), None, rng.choice([None, (0, 2, 1)])], _out(rng))


def embedding_grad(rng: random.Random) -> Realistic:
    """An embedding lookup's gradient: ``jnp.take``'s scatter-add back into the table.

    XLA's passes rebuild the scatter and then merge the reshapes around it
    into new ones, which its instruction list holds after the scatter: their
    bitcast layouts win and XLA copies into the scatter (hlo_proto).
    """
    v, d, b, t = rng.choice([30, 50]), rng.choice([8, 16]), rng.choice([2, 3]), rng.choice([4, 8])

    def f(table: jax.Array, w: jax.Array, ids: jax.Array) -> Any:
        def loss(table: jax.Array, w: jax.Array) -> jax.Array:
            return jnp.mean(jax.nn.gelu(jnp.take(table, ids, axis=0) @ w) ** 2)

        return jax.grad(loss, argnums=(0, 1))(table, w)

    return Realistic("embedding_grad", f, [S((v, d), jnp.float32), S((d, d), jnp.float32), S((b, t), jnp.int32)])


BUILDERS: tuple[Callable[[random.Random], Realistic], ...] = (
    linen_mlp_cond, linen_cnn_bf16, linen_lstm_scan, nnx_transformer_switch, haiku_resnet_nchw,
    haiku_embed_scatter, equinox_convnet_adamw, equinox_gru_scan, gp_marginal_likelihood, linalg_decompositions,
    kalman_filter_scan, power_iteration_while, topk_beam_step, sort_ranking_loss, scatter_segment_mean,
    attention_cond_mask, cumsum_logsumexp, batched_linalg_vmap, fft_spectral_filter, maxpool_dropout_cnn,
    kv_cache_decode, remat_scanned_layers, newton_solver_cond_in_loop, conv_transpose_decoder, mixture_em_step,
    embedding_grad,
)
NAMES = tuple(b.__name__ for b in BUILDERS)


def build(name: str, seed: int = 0) -> Realistic:
    """The builder ``name``'s program for ``seed``, named ``<name>_s<seed>``."""
    i = NAMES.index(name)
    p = BUILDERS[i](random.Random(seed * 1000 + i))
    p.name = f"{p.name}_s{seed}"
    return p


def corpus(seed: int = 0, names: list[str] | None = None) -> list[Realistic]:
    """Every builder's program (or those of ``names``), sizes and layout requests drawn from ``seed``."""
    return [build(n, seed) for n in NAMES if not names or f"{n}_s{seed}" in names or n in names]
