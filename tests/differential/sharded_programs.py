"""Seeded sharded JAX programs for the sharded differential (``sharded_run.py``).

``generate(seed, index, devices)`` is deterministic in ``(seed, index)``: the
kind of program is ``KINDS[index % len(KINDS)]``; the seed and index choose
the mesh (1-D of 8, or 2-D 2x4 / 4x2), the sizes, the element type and the
entry layout pins (none, column-major, AUTO).  The kinds are the programs
people shard:

- ``data_parallel``: an MLP's loss and gradients, batch sharded (``jax.jit``
  with ``NamedSharding``; the gradients' all-reduce);
- ``megatron_mlp``: tensor-parallel MLP (column- then row-sharded weights),
  residual and layer norm, ``jax.jit``;
- ``megatron_attention``: heads sharded (``shard_map``), one or more heads per
  device, output projection with ``psum``;
- ``sequence_parallel``: layer norm on a sequence shard, ``all_gather`` to
  the tensor-parallel matmuls, ``psum_scatter`` back (``shard_map``);
- ``fsdp``: weights all-gathered before use, gradients reduce-scattered
  (``shard_map`` under ``jax.grad``);
- ``all_to_all_attention``: Ulysses-style attention, ``all_to_all`` from
  sequence to heads and back;
- ``ring_matmul``: a ring of ``ppermute`` in a ``fori_loop``;
- ``scanned_layers``: ``lax.scan`` over stacked, sharded layer weights;
- ``mesh_2d``: data x tensor parallel MLP on a 2-D mesh with ``jax.jit``.

Layout pins are plain data (``None``, ``"auto"`` or a major_to_minor tuple) as
in ``programs.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

LayoutSpec = Any

KINDS = ("data_parallel", "megatron_mlp", "megatron_attention", "sequence_parallel", "fsdp",
         "all_to_all_attention", "ring_matmul", "scanned_layers", "mesh_2d")


@dataclass
class ShardedProgram:
    seed: int
    index: int
    kind: str
    mesh_shape: tuple[int, ...]
    axis_names: tuple[str, ...]
    fn: Callable[..., Any]
    args: list[tuple[tuple[int, ...], Any, tuple[Any, ...]]]  # (shape, dtype, PartitionSpec entries)
    in_layouts: list[LayoutSpec]
    out_specs: Any  # PartitionSpec entries per output (a tuple of them), or None: jax's choice
    sizes: dict[str, int]

    @property
    def name(self) -> str:
        return f"shard_s{self.seed}_i{self.index}"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind,
                "mesh": dict(zip(self.axis_names, self.mesh_shape)),
                "args": [f"{np.dtype(d).name}{list(s)} P{tuple(p)}" for s, d, p in self.args],
                "in_layouts": [list(x) if isinstance(x, tuple) else x for x in self.in_layouts],
                "sizes": self.sizes}

    def lower(self, devices: list[Any]) -> Any:
        """``jax.jit(fn).lower`` on a mesh of ``devices`` (8 of them), entry layouts pinned as asked."""
        import jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        from .programs import layout_format

        mesh = Mesh(np.array(devices[:int(np.prod(self.mesh_shape))]).reshape(self.mesh_shape), self.axis_names)
        shardings = [NamedSharding(mesh, P(*p)) for _, _, p in self.args]
        structs = [jax.ShapeDtypeStruct(s, d, sharding=sh) for (s, d, _), sh in zip(self.args, shardings)]
        ins = tuple(layout_format(spec, sh, unpinned=sh) for spec, sh in zip(self.in_layouts, shardings))
        outs = None
        if self.out_specs is not None:
            outs = tuple(NamedSharding(mesh, P(*p)) for p in self.out_specs)
        fn = self.fn(mesh)
        return jax.jit(fn, in_shardings=ins, out_shardings=outs, keep_unused=True).lower(*structs)


def _pick(rng: random.Random, *xs: Any) -> Any:
    return xs[rng.randrange(len(xs))]


def _layouts(rng: random.Random, ranks: list[int]) -> list[LayoutSpec]:
    """Entry pins: most arguments unpinned, some column-major, some AUTO."""
    out: list[LayoutSpec] = []
    for r in ranks:
        u = rng.random()
        if r >= 2 and u < 0.15:
            out.append(tuple(reversed(range(r))))  # column-major (major_to_minor)
        elif r >= 2 and u < 0.25:
            out.append("auto")
        else:
            out.append(None)
    return out


def _mesh(rng: random.Random, two_d: bool | None = None) -> tuple[tuple[int, ...], tuple[str, ...]]:
    if two_d is None:
        two_d = rng.random() < 0.4
    if two_d:
        return _pick(rng, (2, 4), (4, 2)), ("data", "model")
    return (8,), ("x",)


def _layer_norm(x: Any) -> Any:
    import jax.numpy as jnp

    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean(jnp.square(x - m), axis=-1, keepdims=True)
    return (x - m) * (1.0 / jnp.sqrt(v + 1e-5))


def generate(seed: int, index: int) -> ShardedProgram:
    """The sharded program ``index`` of ``seed``."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import PartitionSpec as P

    shard_map = jax.shard_map
    rng = random.Random(f"sharded/{seed}/{index}")
    kind = KINDS[index % len(KINDS)]
    dtype = _pick(rng, jnp.float32, jnp.float32, jnp.bfloat16)
    mesh_shape, names = _mesh(rng, two_d=True if kind == "mesh_2d" else (False if kind in (
        "ring_matmul", "all_to_all_attention") else None))
    n = int(np.prod(mesh_shape))
    last = names[-1]  # the tensor / sequence axis
    first = names[0]  # the data axis (the only one on a 1-D mesh)
    t = mesh_shape[-1]
    sizes: dict[str, int] = {}

    def mult(k: int, *choices: int) -> int:
        return k * _pick(rng, *choices)

    if kind == "data_parallel":
        B, D, H = mult(mesh_shape[0], 2, 4, 8), mult(1, 16, 32, 24), mult(1, 32, 64, 48)
        sizes = {"B": B, "D": D, "H": H}
        args = [((B, D), dtype, (first, None)), ((D, H), dtype, (None, None)), ((H, D), dtype, (None, None)),
                ((B, D), dtype, (first, None))]
        act = _pick(rng, jax.nn.relu, jax.nn.gelu, jnp.tanh)

        def make(mesh: Any) -> Callable[..., Any]:
            def loss(w1: Any, w2: Any, x: Any, y: Any) -> Any:
                h = act(x @ w1)
                return jnp.mean(jnp.square((h @ w2 + x) - y))

            def f(x: Any, w1: Any, w2: Any, y: Any) -> Any:
                val, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2, x, y)
                return val, w1 - 0.1 * g1, w2 - 0.1 * g2
            return f
        out_specs = None
    elif kind in ("megatron_mlp", "mesh_2d"):
        B, S, D, H = mult(mesh_shape[0], 1, 2), mult(1, 8, 16), mult(1, 16, 32), mult(t, 8, 16, 32)
        sizes = {"B": B, "S": S, "D": D, "H": H}
        dp = first if kind == "mesh_2d" or len(names) == 2 else None
        args = [((B, S, D), dtype, (dp, None, None)), ((D, H), dtype, (None, last)), ((H,), dtype, (last,)),
                ((H, D), dtype, (last, None)), ((D,), dtype, (None,))]
        layers = rng.randint(1, 2)

        def make(mesh: Any) -> Callable[..., Any]:
            def f(x: Any, w1: Any, b1: Any, w2: Any, g: Any) -> Any:
                for _ in range(layers):
                    h = jax.nn.gelu(jnp.einsum("bsd,dh->bsh", _layer_norm(x) * g, w1) + b1)
                    x = x + jnp.einsum("bsh,hd->bsd", h, w2)
                return x
            return f
        out_specs = None
    elif kind == "megatron_attention":
        heads_per = _pick(rng, 1, 1, 2)
        Hn, B, S, Dh = heads_per * t, mult(1, 1, 2), mult(1, 8, 16), _pick(rng, 8, 16)
        D = Hn * Dh
        sizes = {"heads": Hn, "B": B, "S": S, "Dh": Dh}
        args = [((B, S, D), dtype, (None, None, None)), ((D, Hn, Dh), dtype, (None, last, None)),
                ((D, Hn, Dh), dtype, (None, last, None)), ((D, Hn, Dh), dtype, (None, last, None)),
                ((Hn, Dh, D), dtype, (last, None, None))]

        def make(mesh: Any) -> Callable[..., Any]:
            def local(x: Any, wq: Any, wk: Any, wv: Any, wo: Any) -> Any:
                q = jnp.einsum("bsd,dhk->bhsk", x, wq)
                k = jnp.einsum("bsd,dhk->bhsk", x, wk)
                v = jnp.einsum("bsd,dhk->bhsk", x, wv)
                a = jax.nn.softmax(jnp.einsum("bhqk,bhsk->bhqs", q, k) / np.sqrt(Dh), axis=-1)
                o = jnp.einsum("bhqs,bhsk->bqhk", a, v)
                y = lax.psum(jnp.einsum("bqhk,hkd->bqd", o, wo), last)
                return _layer_norm(x + y)
            return shard_map(local, mesh=mesh, in_specs=(P(), P(None, last), P(None, last), P(None, last), P(last)),
                             out_specs=P(), check_vma=False)
        out_specs = None
    elif kind == "sequence_parallel":
        B, S, D, H = mult(1, 1, 2), mult(t, 2, 4), mult(1, 16, 32), mult(t, 8, 16)
        sizes = {"B": B, "S": S, "D": D, "H": H}
        args = [((B, S, D), dtype, (None, last, None)), ((D, H), dtype, (None, last)),
                ((H, D), dtype, (last, None)), ((D,), dtype, (None,))]

        def make(mesh: Any) -> Callable[..., Any]:
            def local(x: Any, w1: Any, w2: Any, g: Any) -> Any:
                h = _layer_norm(x) * g
                full = lax.all_gather(h, last, axis=1, tiled=True)
                u = jax.nn.gelu(jnp.einsum("bsd,dh->bsh", full, w1))
                y = lax.psum_scatter(jnp.einsum("bsh,hd->bsd", u, w2), last, scatter_dimension=1, tiled=True)
                return x + y
            return shard_map(local, mesh=mesh, in_specs=(P(None, last), P(None, last), P(last), P()),
                             out_specs=P(None, last), check_vma=False)
        out_specs = None
    elif kind == "fsdp":
        B, D, H = mult(n, 1, 2), mult(n, 2, 4), mult(n, 4, 8)
        sizes = {"B": B, "D": D, "H": H}
        axes = names if len(names) > 1 else names[0]
        args = [((B, D), dtype, (axes, None)), ((D, H), dtype, (axes, None)), ((H, D), dtype, (axes, None))]

        def make(mesh: Any) -> Callable[..., Any]:
            def local_loss(w1s: Any, w2s: Any, x: Any) -> Any:
                w1 = lax.all_gather(w1s, axes, axis=0, tiled=True)
                w2 = lax.all_gather(w2s, axes, axis=0, tiled=True)
                h = jax.nn.relu(x @ w1)
                return jnp.sum(jnp.square(h @ w2 - x))

            def local(x: Any, w1s: Any, w2s: Any) -> Any:
                loss, (g1, g2) = jax.value_and_grad(local_loss, argnums=(0, 1))(w1s, w2s, x)
                return lax.psum(loss, axes), w1s - 0.01 * g1, w2s - 0.01 * g2
            return shard_map(local, mesh=mesh, in_specs=(P(axes), P(axes), P(axes)),
                             out_specs=(P(), P(axes), P(axes)), check_vma=False)
        out_specs = None
    elif kind == "all_to_all_attention":
        heads_per = _pick(rng, 1, 1, 2)
        Hn, B, S, Dh = heads_per * n, mult(1, 1, 2), mult(n, 2, 4), _pick(rng, 8, 16)
        sizes = {"heads": Hn, "B": B, "S": S, "Dh": Dh}
        args = [((B, S, Hn, Dh), dtype, (None, last, None, None))] * 3

        def make(mesh: Any) -> Callable[..., Any]:
            def local(q: Any, k: Any, v: Any) -> Any:
                # sequence-sharded -> head-sharded
                q, k, v = (lax.all_to_all(z, last, split_axis=2, concat_axis=1, tiled=True) for z in (q, k, v))
                a = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(Dh), axis=-1)
                o = jnp.einsum("bhqk,bkhd->bqhd", a, v)
                return lax.all_to_all(o, last, split_axis=1, concat_axis=2, tiled=True)
            return shard_map(local, mesh=mesh, in_specs=(P(None, last),) * 3, out_specs=P(None, last),
                             check_vma=False)
        out_specs = None
    elif kind == "ring_matmul":
        M, K, N = mult(n, 2, 4), mult(n, 2, 4), mult(1, 16, 32)
        sizes = {"M": M, "K": K, "N": N}
        args = [((M, K), dtype, (last, None)), ((K, N), dtype, (last, None))]
        perm = [(i, (i + 1) % n) for i in range(n)]

        def make(mesh: Any) -> Callable[..., Any]:
            def local(a: Any, b: Any) -> Any:
                kb = b.shape[0]
                idx = lax.axis_index(last)

                def body(i: Any, carry: Any) -> Any:
                    acc, blk = carry
                    j = (idx - i) % n
                    part = lax.dynamic_slice_in_dim(a, j * kb, kb, axis=1)
                    return acc + part @ blk, lax.ppermute(blk, last, perm)
                acc = jnp.zeros((a.shape[0], b.shape[1]), a.dtype)
                acc, _ = lax.fori_loop(0, n, body, (acc, b))
                return acc
            return shard_map(local, mesh=mesh, in_specs=(P(last), P(last)), out_specs=P(last), check_vma=False)
        out_specs = None
    elif kind == "scanned_layers":
        L, B, D, H = _pick(rng, 2, 3, 4), mult(mesh_shape[0], 2, 4), mult(1, 16, 32), mult(t, 8, 16)
        sizes = {"L": L, "B": B, "D": D, "H": H}
        dp = first if len(names) == 2 else None
        args = [((B, D), dtype, (dp, None)), ((L, D, H), dtype, (None, None, last)),
                ((L, H, D), dtype, (None, last, None))]

        def make(mesh: Any) -> Callable[..., Any]:
            def f(x: Any, w1: Any, w2: Any) -> Any:
                def layer(h: Any, ws: Any) -> Any:
                    a, b = ws
                    return h + jax.nn.relu(_layer_norm(h) @ a) @ b, jnp.sum(h, axis=0)
                return lax.scan(layer, x, (w1, w2))
            return f
        out_specs = None
    else:
        raise KeyError(kind)
    ranks = [len(s) for s, _, _ in args]
    return ShardedProgram(seed, index, kind, mesh_shape, names, make, args, _layouts(rng, ranks), out_specs, sizes)
