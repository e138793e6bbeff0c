"""Programs built from real model libraries, for the XLA differential tests.

The generator in ``programs.py`` composes single ops; users write models with
flax (linen and nnx), haiku, equinox and optax, whose code reaches XLA in
shapes the generator never makes: attention's head split and merge, layer
and batch norms, NCHW convolutions from channels-first libraries, optimizer
updates over whole parameter trees, and ``jax.grad`` of all of it.  This
module builds such programs as users write them.

Each entry of ``MODELS`` builds a ``ModelProgram``: a flat function of
arrays (``fn``), the ``jax.ShapeDtypeStruct`` of each argument (``args``)
and the real example values it was built from (``example_args()``).  Nothing
in it names a backend: the CPU harness (``run.py --corpus models``) and a
GPU harness compile the same programs with their own compiler.  Entry
layouts stay as JAX leaves them (row-major pins), as in a plain ``jax.jit``.

The libraries are test dependencies (the ``test`` extra); ``available()``
says which one is missing instead of failing at import.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata as md
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp

LIBRARIES = ("flax", "dm-haiku", "equinox", "optax")


def available() -> str | None:
    """None when every library imports, else the reason (for a skip)."""
    for dist, module in (("flax", "flax"), ("dm-haiku", "haiku"), ("equinox", "equinox"), ("optax", "optax")):
        try:
            importlib.import_module(module)
        except ImportError as e:
            return f"{dist} is not installed ({e}); install the test extra: pip install -e '.[test]'"
    return None


def versions() -> str:
    """The library versions, for cache keys (new versions emit new programs)."""
    out = []
    for dist in LIBRARIES:
        try:
            out.append(f"{dist}=={md.version(dist)}")
        except md.PackageNotFoundError:
            out.append(f"{dist}==missing")
    return " ".join(out)


@dataclass
class ModelProgram:
    """A model program in the form the differential oracle compiles.

    ``fn(*leaves)`` takes the flattened leaves of ``(params, state, batch)``
    as positional arrays; ``args`` are their shapes; ``tree`` rebuilds the
    structure.  ``formats()`` leaves every layout to JAX's defaults.
    """

    name: str
    library: str
    description: str
    fn: Callable[..., Any]
    args: list[jax.ShapeDtypeStruct]
    leaves: list[Any]

    @property
    def in_layouts(self) -> list[None]:
        return [None] * len(self.args)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "library": self.library,
            "description": self.description,
            "args": [f"{a.dtype}{list(a.shape)}" for a in self.args],
            "in_layouts": self.in_layouts,
            "out_layouts": None,
        }

    def formats(self) -> tuple[Any, Any]:
        return tuple(None for _ in self.args), None

    def example_args(self) -> list[Any]:
        """The concrete values the model was initialized with (same order as ``args``)."""
        return list(self.leaves)


def _program(name: str, library: str, description: str, inner: Callable[..., Any], *trees: Any) -> ModelProgram:
    """Flatten ``inner(*trees)`` into a function of array leaves."""
    leaves, treedef = jax.tree_util.tree_flatten(trees)

    def fn(*xs: Any) -> Any:
        return inner(*jax.tree_util.tree_unflatten(treedef, list(xs)))

    fn.__name__ = fn.__qualname__ = name
    args = [jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)) for x in leaves]
    return ModelProgram(name, library, description, fn, args, leaves)


def _key(n: int = 0) -> jax.Array:
    return jax.random.PRNGKey(n)


def _data(shape: tuple[int, ...], n: int = 1) -> jax.Array:
    return jax.random.normal(_key(n), shape, jnp.float32)


def _labels(batch: int, classes: int) -> jax.Array:
    return jnp.arange(batch, dtype=jnp.int32) % classes


def _xent(logits: jax.Array, labels: jax.Array) -> jax.Array:
    import optax

    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def _train(name: str, library: str, description: str, loss: Callable[..., Any], opt: Any,
           params: Any, batch: Any, state: Any = None) -> ModelProgram:
    """One optimizer step: ``jax.grad`` of ``loss(params, state, *batch)`` and ``opt``'s update.

    ``loss`` returns ``(value, new_state)``; the step returns the new
    params, optimizer state, model state and the loss.
    """
    import optax

    opt_state = opt.init(params)

    def step(params: Any, opt_state: Any, state: Any, batch: Any) -> Any:
        (value, new_state), grads = jax.value_and_grad(loss, has_aux=True)(params, state, *batch)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, new_state, value

    return _program(name, library, description, step, params, opt_state, state, batch)


def _mse_train(name: str, library: str, description: str, forward: Callable[[Any, jax.Array], Any], opt: Any,
               params: Any, x: jax.Array) -> ModelProgram:
    """``_train`` on the mean square of ``forward(params, x)`` (no model state)."""

    def loss(p: Any, s: Any, x: jax.Array) -> Any:
        return jnp.mean(forward(p, x) ** 2), s

    return _train(name, library, description, loss, opt, params, (x,))


def _xent_train(name: str, library: str, description: str, forward: Callable[[Any, jax.Array], Any], opt: Any,
                params: Any, x: jax.Array, y: jax.Array) -> ModelProgram:
    """``_train`` on the cross-entropy of the logits ``forward(params, x)`` against ``y`` (no model state)."""

    def loss(p: Any, s: Any, x: jax.Array, y: jax.Array) -> Any:
        return _xent(forward(p, x), y), s

    return _train(name, library, description, loss, opt, params, (x, y))


def _linen_forward(name: str, description: str, m: Any, x: jax.Array) -> ModelProgram:
    """A flax linen module's forward pass, initialized at ``x``."""
    return _program(name, "flax.linen", description, m.apply, m.init(_key(), x), x)


# -- flax linen -----------------------------------------------------------------------


def linen_mlp() -> ModelProgram:
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.relu(nn.Dense(64)(x))
            x = nn.relu(nn.Dense(32)(x))
            return nn.Dense(10)(x)

    return _linen_forward("linen_mlp", "3-layer MLP forward", MLP(), _data((8, 48)))


def _linen_cnn() -> Any:
    import flax.linen as nn

    class CNN(nn.Module):
        """NHWC, as linen's Conv is: conv-BN-relu twice, mean pool, dense."""

        @nn.compact
        def __call__(self, x: jax.Array, train: bool) -> jax.Array:
            for feat in (8, 16):
                x = nn.Conv(feat, (3, 3), padding="SAME")(x)
                x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
                x = nn.relu(x)
            x = x.mean(axis=(1, 2))
            return nn.Dense(10)(x)

    return CNN()


def linen_cnn_train() -> ModelProgram:
    import optax

    m = _linen_cnn()
    x = _data((4, 12, 12, 3))
    variables = m.init(_key(), x, train=False)
    params, stats = variables["params"], variables["batch_stats"]

    def loss(params: Any, stats: Any, x: jax.Array, y: jax.Array) -> Any:
        logits, upd = m.apply({"params": params, "batch_stats": stats}, x, train=True, mutable=["batch_stats"])
        return _xent(logits, y), upd["batch_stats"]

    return _train("linen_cnn_train", "flax.linen", "NHWC conv+batch-norm net, SGD-momentum step",
                  loss, optax.sgd(0.1, momentum=0.9), params, (x, _labels(4, 10)), stats)


def linen_cnn_eval() -> ModelProgram:
    m = _linen_cnn()
    x = _data((4, 12, 12, 3))
    variables = m.init(_key(), x, train=False)
    return _program("linen_cnn_eval", "flax.linen", "NHWC conv+batch-norm net, inference",
                    lambda v, x: m.apply(v, x, train=False), variables, x)


def _linen_block(heads: int) -> Any:
    import flax.linen as nn

    class Block(nn.Module):
        """Pre-LN transformer block."""

        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=heads, qkv_features=32)(h, h)
            h = nn.LayerNorm()(x)
            return x + nn.Dense(x.shape[-1])(nn.gelu(nn.Dense(64)(h)))

    return Block()


def linen_transformer() -> ModelProgram:
    return _linen_forward("linen_transformer", "transformer block (4 heads) forward", _linen_block(4), _data((2, 8, 32)))


def linen_transformer_train() -> ModelProgram:
    import optax

    m = _linen_block(4)
    x = _data((2, 8, 32))
    return _mse_train("linen_transformer_train", "flax.linen", "transformer block, Adam step",
                      m.apply, optax.adam(1e-3), m.init(_key(), x), x)


def linen_transformer_one_head() -> ModelProgram:
    """Size-1 dims: batch 1 and a single head."""
    return _linen_forward("linen_transformer_one_head", "transformer block, 1 head, batch 1", _linen_block(1),
                          _data((1, 8, 32)))


def linen_gray_cnn_train() -> ModelProgram:
    """Size-1 dims: one input channel, batch 1, a 1x1 conv; Adafactor's factored moments."""
    import flax.linen as nn
    import optax

    class GrayCNN(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            x = nn.relu(nn.Conv(8, (3, 3))(x))
            x = nn.relu(nn.Conv(4, (1, 1))(x))
            return nn.Dense(10)(x.reshape((x.shape[0], -1)))

    m = GrayCNN()
    x = _data((1, 8, 8, 1))
    return _xent_train("linen_gray_cnn_train", "flax.linen",
                       "1-channel NHWC conv net with a 1x1 conv, batch 1, Adafactor step",
                       m.apply, optax.adafactor(1e-2), m.init(_key(), x), x, _labels(1, 10))


def linen_transformer_bf16() -> ModelProgram:
    import flax.linen as nn

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            h = nn.LayerNorm(dtype=jnp.bfloat16)(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=16, dtype=jnp.bfloat16)(h, h)
            return x + nn.Dense(x.shape[-1], dtype=jnp.bfloat16)(nn.gelu(nn.Dense(32, dtype=jnp.bfloat16)(x)))

    return _linen_forward("linen_transformer_bf16", "transformer block in bfloat16 (2 heads) forward", Block(),
                          _data((2, 6, 16)).astype(jnp.bfloat16))


# -- flax nnx --------------------------------------------------------------------------


def _nnx_forward(model: Any) -> tuple[Callable[[Any, jax.Array], Any], Any]:
    """The model's forward pass as a function of its state, and that state."""
    from flax import nnx

    graphdef, state = nnx.split(model)
    return (lambda s, x: nnx.merge(graphdef, s)(x)), state


def _nnx_block(d: int, heads: int) -> Any:
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=d, decode=False, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.fc1 = nnx.Linear(d, 2 * d, rngs=rngs)
            self.fc2 = nnx.Linear(2 * d, d, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))

    return Block(nnx.Rngs(0))


def nnx_transformer() -> ModelProgram:
    forward, state = _nnx_forward(_nnx_block(32, 4))
    return _program("nnx_transformer", "flax.nnx", "transformer block (4 heads) forward", forward, state,
                    _data((2, 8, 32)))


def nnx_transformer_train() -> ModelProgram:
    import optax

    forward, state = _nnx_forward(_nnx_block(32, 4))
    return _mse_train("nnx_transformer_train", "flax.nnx", "transformer block, AdamW step",
                      forward, optax.adamw(1e-3, weight_decay=1e-2), state, _data((2, 8, 32)))


def nnx_transformer_one_head_train() -> ModelProgram:
    """Size-1 dims: batch 1 and one head, SGD step."""
    import optax

    forward, state = _nnx_forward(_nnx_block(16, 1))
    return _mse_train("nnx_transformer_one_head_train", "flax.nnx", "transformer block, 1 head, batch 1, SGD step",
                      forward, optax.sgd(1e-2), state, _data((1, 6, 16)))


def _nnx_cnn() -> Any:
    from flax import nnx

    class CNN(nnx.Module):
        def __init__(self, rngs: nnx.Rngs) -> None:
            self.c1 = nnx.Conv(3, 8, kernel_size=(3, 3), rngs=rngs)
            self.b1 = nnx.BatchNorm(8, rngs=rngs)
            self.c2 = nnx.Conv(8, 8, kernel_size=(1, 1), rngs=rngs)
            self.out = nnx.Linear(8, 10, rngs=rngs)

        def __call__(self, x: jax.Array) -> jax.Array:
            x = nnx.relu(self.b1(self.c1(x)))
            x = nnx.relu(self.c2(x))
            return self.out(x.mean(axis=(1, 2)))

    return CNN(nnx.Rngs(0))


def nnx_cnn_train() -> ModelProgram:
    import optax
    from flax import nnx

    graphdef, params, rest = nnx.split(_nnx_cnn(), nnx.Param, ...)
    opt = optax.adam(1e-3)
    x, y = _data((2, 10, 10, 3)), _labels(2, 10)

    def step(p: Any, opt_state: Any, r: Any, x: jax.Array, y: jax.Array) -> Any:
        # nnx's own grad, so that batch norm may update its statistics in the model.
        model = nnx.merge(graphdef, p, r)
        value, grads = nnx.value_and_grad(lambda m: _xent(m(x), y))(model)
        _, p, r = nnx.split(model, nnx.Param, ...)
        updates, opt_state = opt.update(grads, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, r, value

    return _program("nnx_cnn_train", "flax.nnx", "NHWC conv+batch-norm+1x1 conv net, Adam step (nnx.grad)",
                    step, params, opt.init(params), rest, x, y)


# -- haiku -----------------------------------------------------------------------------


def haiku_mlp_train() -> ModelProgram:
    import haiku as hk
    import optax

    net = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([64, 32, 10])(x)))
    x = _data((8, 20))
    return _xent_train("haiku_mlp_train", "haiku", "hk.nets.MLP, Adam step with gradient clipping",
                       net.apply, optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3)), net.init(_key(), x),
                       x, _labels(8, 10))


def _haiku_resblock(fmt: str) -> Any:
    import haiku as hk

    def block(x: jax.Array, train: bool) -> jax.Array:
        """A ResNet basic block with a projection shortcut, in ``fmt``."""
        bn = "channels_last" if fmt == "NHWC" else "channels_first"
        h = hk.Conv2D(8, 3, data_format=fmt, with_bias=False)(x)
        h = hk.BatchNorm(True, True, 0.9, data_format=bn)(h, is_training=train)
        h = jax.nn.relu(h)
        h = hk.Conv2D(8, 3, data_format=fmt, with_bias=False)(h)
        h = hk.BatchNorm(True, True, 0.9, data_format=bn)(h, is_training=train)
        sc = hk.Conv2D(8, 1, data_format=fmt, with_bias=False)(x)
        out = jax.nn.relu(h + sc)
        axes = (1, 2) if fmt == "NHWC" else (2, 3)
        return hk.Linear(10)(out.mean(axis=axes))

    return hk.without_apply_rng(hk.transform_with_state(block))


def _haiku_resblock_train(fmt: str) -> ModelProgram:
    import optax

    net = _haiku_resblock(fmt)
    x = _data((2, 8, 8, 3) if fmt == "NHWC" else (2, 3, 8, 8))
    params, state = net.init(_key(), x, train=True)

    def loss(p: Any, s: Any, x: jax.Array, y: jax.Array) -> Any:
        logits, s = net.apply(p, s, x, train=True)
        return _xent(logits, y), s

    return _train(f"haiku_resblock_{fmt.lower()}_train", "haiku",
                  f"ResNet basic block ({fmt}) with batch norm, SGD-momentum step",
                  loss, optax.sgd(0.1, momentum=0.9), params, (x, _labels(2, 10)), state)


def haiku_resblock_nchw_train() -> ModelProgram:
    return _haiku_resblock_train("NCHW")


def haiku_resblock_nhwc_train() -> ModelProgram:
    return _haiku_resblock_train("NHWC")


def haiku_resnet_eval() -> ModelProgram:
    import haiku as hk

    def f(x: jax.Array, train: bool) -> jax.Array:
        net = hk.nets.ResNet(blocks_per_group=(1, 1, 1, 1), num_classes=10, bottleneck=False,
                             channels_per_group=(8, 8, 16, 16), use_projection=(True, True, True, True))
        return net(x, is_training=train)

    net = hk.without_apply_rng(hk.transform_with_state(f))
    x = _data((1, 32, 32, 3))
    params, state = net.init(_key(), x, True)  # the moving averages exist once trained
    return _program("haiku_resnet_eval", "haiku", "hk.nets.ResNet (4 groups of 1 block), batch 1, inference",
                    lambda p, s, x: net.apply(p, s, x, False)[0], params, state, x)


def haiku_attention_train() -> ModelProgram:
    import haiku as hk
    import optax

    def f(x: jax.Array) -> jax.Array:
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        x = x + hk.MultiHeadAttention(num_heads=4, key_size=8, w_init=hk.initializers.VarianceScaling())(h, h, h)
        return hk.Linear(x.shape[-1])(jax.nn.gelu(hk.Linear(64)(x)))

    net = hk.without_apply_rng(hk.transform(f))
    x = _data((2, 8, 32))
    return _mse_train("haiku_attention_train", "haiku", "hk.MultiHeadAttention + LayerNorm + MLP, Adam step",
                      net.apply, optax.adam(1e-3), net.init(_key(), x), x)


def haiku_attention_one_head_train() -> ModelProgram:
    """Size-1 dims: batch 1 and one head, with a causal mask."""
    import haiku as hk
    import optax

    def f(x: jax.Array) -> jax.Array:
        t = x.shape[1]
        mask = jnp.tril(jnp.ones((1, 1, t, t), bool))
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        att = hk.MultiHeadAttention(num_heads=1, key_size=16, w_init=hk.initializers.VarianceScaling())
        return x + att(h, h, h, mask=mask)

    net = hk.without_apply_rng(hk.transform(f))
    x = _data((1, 6, 16))
    return _mse_train("haiku_attention_one_head_train", "haiku",
                      "causal hk.MultiHeadAttention, 1 head, batch 1, AdamW step",
                      net.apply, optax.adamw(1e-3), net.init(_key(), x), x)


# -- equinox ---------------------------------------------------------------------------


def _eqx_vmapped(model: Any) -> tuple[Callable[[Any, jax.Array], Any], Any]:
    """The model vmapped over the batch as a function of its arrays, and those arrays."""
    import equinox as eqx

    params, static = eqx.partition(model, eqx.is_array)
    return (lambda p, x: jax.vmap(eqx.combine(p, static))(x)), params


def equinox_mlp_train() -> ModelProgram:
    import equinox as eqx
    import optax

    forward, params = _eqx_vmapped(eqx.nn.MLP(16, 4, width_size=32, depth=2, key=_key()))
    return _mse_train("equinox_mlp_train", "equinox", "eqx.nn.MLP under vmap, RMSProp step",
                      forward, optax.rmsprop(1e-3), params, _data((8, 16)))


def _eqx_convnet() -> Any:
    import equinox as eqx

    k1, k2, k3 = jax.random.split(_key(), 3)

    class ConvNet(eqx.Module):
        """Channels-first (CHW) convs under vmap: NCHW in HLO."""

        c1: eqx.nn.Conv2d
        c2: eqx.nn.Conv2d
        out: eqx.nn.Linear

        def __init__(self) -> None:
            self.c1 = eqx.nn.Conv2d(3, 8, 3, padding=1, key=k1)
            self.c2 = eqx.nn.Conv2d(8, 8, 3, stride=2, key=k2)
            self.out = eqx.nn.Linear(8, 10, key=k3)

        def __call__(self, x: jax.Array) -> jax.Array:
            x = jax.nn.relu(self.c1(x))
            x = jax.nn.relu(self.c2(x))
            return self.out(x.mean(axis=(1, 2)))

    return ConvNet()


def equinox_convnet_train() -> ModelProgram:
    import optax

    forward, params = _eqx_vmapped(_eqx_convnet())
    return _xent_train("equinox_convnet_train", "equinox", "NCHW convnet (eqx.nn.Conv2d under vmap), Adam step",
                       forward, optax.adam(1e-3), params, _data((2, 3, 10, 10)), _labels(2, 10))


def _eqx_attention(heads: int) -> Any:
    import equinox as eqx

    k1, k2 = jax.random.split(_key(), 2)

    class Block(eqx.Module):
        ln: eqx.nn.LayerNorm
        attn: eqx.nn.MultiheadAttention
        mlp: eqx.nn.MLP

        def __init__(self) -> None:
            self.ln = eqx.nn.LayerNorm(32)
            self.attn = eqx.nn.MultiheadAttention(heads, 32, key=k1)
            self.mlp = eqx.nn.MLP(32, 32, width_size=64, depth=1, key=k2)

        def __call__(self, x: jax.Array) -> jax.Array:
            h = jax.vmap(self.ln)(x)
            x = x + self.attn(h, h, h)
            return x + jax.vmap(self.mlp)(jax.vmap(self.ln)(x))

    return Block()


def equinox_attention() -> ModelProgram:
    forward, params = _eqx_vmapped(_eqx_attention(4))
    return _program("equinox_attention", "equinox", "eqx.nn.MultiheadAttention block, vmapped over batch",
                    forward, params, _data((3, 8, 32)))


def equinox_attention_train() -> ModelProgram:
    import optax

    forward, params = _eqx_vmapped(_eqx_attention(2))
    return _mse_train("equinox_attention_train", "equinox", "attention block (2 heads, batch 1), Lion step",
                      forward, optax.lion(1e-4), params, _data((1, 8, 32)))


def equinox_gray_convnet_train() -> ModelProgram:
    """Size-1 dims: a 1-channel NCHW image, batch 1."""
    import equinox as eqx
    import optax

    k1, k2 = jax.random.split(_key(), 2)
    forward, params = _eqx_vmapped(eqx.nn.Sequential([
        eqx.nn.Conv2d(1, 4, 3, key=k1), eqx.nn.Lambda(jax.nn.relu),
        eqx.nn.Conv2d(4, 1, 1, key=k2),
    ]))
    return _mse_train("equinox_gray_convnet_train", "equinox",
                      "1-channel NCHW convs (3x3, then 1x1 to 1 channel), batch 1, Adam step",
                      forward, optax.adam(1e-3), params, _data((1, 1, 8, 8)))


def equinox_attention_one_head() -> ModelProgram:
    forward, params = _eqx_vmapped(_eqx_attention(1))
    return _program("equinox_attention_one_head", "equinox", "eqx.nn.MultiheadAttention block, 1 head, vmapped",
                    forward, params, _data((2, 8, 32)))


MODELS: dict[str, Callable[[], ModelProgram]] = {
    f.__name__: f for f in (
        linen_mlp, linen_cnn_train, linen_cnn_eval, linen_transformer, linen_transformer_train,
        linen_transformer_one_head, linen_gray_cnn_train, linen_transformer_bf16,
        nnx_transformer, nnx_transformer_train, nnx_transformer_one_head_train, nnx_cnn_train,
        haiku_mlp_train, haiku_resblock_nchw_train, haiku_resblock_nhwc_train, haiku_resnet_eval,
        haiku_attention_train, haiku_attention_one_head_train,
        equinox_mlp_train, equinox_convnet_train, equinox_gray_convnet_train, equinox_attention,
        equinox_attention_one_head, equinox_attention_train,
    )
}


def build(name: str) -> ModelProgram:
    """The program ``name`` of ``MODELS``; a clear error for an unknown name."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]()


def corpus_hash() -> str:
    """Changes when the models or the libraries that build them change."""
    h = hashlib.sha1()
    with open(__file__, "rb") as f:
        h.update(f.read())
    h.update(versions().encode())
    return h.hexdigest()[:10]
