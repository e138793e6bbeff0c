"""A seeded generator of small, varied JAX programs for the XLA differential test.

``generate(seed, index)`` is deterministic: the same pair always gives the same
program (same ops, shapes, argument/result layout pins).  A program composes
2-6 "steps" drawn from a menu of op kinds that stress layout assignment:
dot_general with batch dims, transposes of rank 2-5, reshapes, broadcasts,
reductions, concatenates, slices, pads, NCHW/NHWC convolutions, sort, cumsum,
gather/scatter, fori_loop/while_loop, cond, LAPACK custom calls and
elementwise chains.  Steps take their inputs from earlier values (so they
chain) or from fresh parameters of whatever shape they need.

Layout pins are kept as plain data (``None``, ``"auto"`` or a major_to_minor
tuple) so programs can be described, cached and compared without JAX objects;
``Program.formats()`` turns them into ``jax.experimental.layout.Format``s.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

LayoutSpec = Any  # None | "auto" | tuple[int, ...] (major_to_minor)

DIMS = (2, 3, 4, 5, 6, 8)


@dataclass
class Program:
    seed: int
    index: int
    fn: Callable[..., Any]
    args: list[jax.ShapeDtypeStruct]
    in_layouts: list[LayoutSpec]
    out_layouts: list[LayoutSpec]
    steps: list[str]
    single_output: bool

    @property
    def name(self) -> str:
        return f"prog_s{self.seed}_i{self.index}"

    def describe(self) -> dict[str, Any]:
        def spec(s: LayoutSpec) -> Any:
            return list(s) if isinstance(s, tuple) else s

        return {
            "name": self.name,
            "args": [f"{a.dtype}{list(a.shape)}" for a in self.args],
            "in_layouts": [spec(s) for s in self.in_layouts],
            "out_layouts": [spec(s) for s in self.out_layouts],
            "steps": list(self.steps),
        }

    def formats(self) -> tuple[Any, Any]:
        """(in_shardings, out_shardings) for ``jax.jit`` on XLA:CPU's device."""
        from jax.sharding import SingleDeviceSharding

        sharding = SingleDeviceSharding(jax.devices("cpu")[0])
        # AUTO without the sharding, as the generator has always lowered it (the cached dumps keep their keys).
        ins = tuple(layout_format(s, sharding, auto_sharded=False) for s in self.in_layouts)
        outs = tuple(layout_format(s, sharding, auto_sharded=False) for s in self.out_layouts)
        return ins, (outs[0] if self.single_output else outs)


def layout_format(spec: LayoutSpec, sharding: Any, unpinned: Any = None, auto_sharded: bool = True) -> Any:
    """A layout pin as ``jax.jit`` takes it, on ``sharding``: ``unpinned`` for None, AUTO, or a major_to_minor."""
    from jax.experimental.layout import Format, Layout

    if spec is None:
        return unpinned
    if spec == "auto":
        return Format(Layout.AUTO, sharding) if auto_sharded else Format(Layout.AUTO)
    return Format(Layout(major_to_minor=tuple(spec)), sharding)


@dataclass
class _Val:
    shape: tuple[int, ...]
    dtype: Any


@dataclass
class _Builder:
    rng: random.Random
    args: list[jax.ShapeDtypeStruct] = field(default_factory=list)
    vals: list[_Val] = field(default_factory=list)
    # A step: (callable on arrays -> tuple of arrays, input value ids, output ids)
    steps: list[tuple[Callable[..., tuple], list[int], list[int]]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    arg_ids: list[int] = field(default_factory=list)  # value ids that are arguments

    # -- values ---------------------------------------------------------------
    def new_arg(self, shape: tuple[int, ...], dtype: Any = jnp.float32) -> int:
        # Fresh arguments may be created mid-way; replay maps them by ``arg_ids``.
        self.args.append(jax.ShapeDtypeStruct(tuple(shape), dtype))
        self.vals.append(_Val(tuple(shape), np.dtype(dtype)))
        vid = len(self.vals) - 1
        self.arg_ids.append(vid)
        return vid

    def shape(self, vid: int) -> tuple[int, ...]:
        return self.vals[vid].shape

    def rand_shape(self, rank: int, dims: tuple[int, ...] = DIMS) -> tuple[int, ...]:
        return tuple(self.rng.choice(dims) for _ in range(rank))

    def pick(self, ok: Callable[[_Val], bool], make_rank: int | tuple[int, int] = (2, 4),
             dtype: Any = jnp.float32, fresh: float = 0.25) -> int:
        """An earlier float value satisfying ``ok`` (recent ones preferred), or a new argument."""
        return self._pick(ok, make_rank, dtype, fresh, None)

    def pick_shape(self, shape: tuple[int, ...], fresh: float = 0.5, dtype: Any = jnp.float32) -> int:
        """An earlier value of exactly ``shape``, or a new argument of that shape."""
        return self._pick(lambda v: v.shape == shape, len(shape), dtype, fresh, shape)

    def _pick(self, ok: Callable[[_Val], bool], make_rank: int | tuple[int, int], dtype: Any,
              fresh: float, exact: tuple[int, ...] | None) -> int:
        cands = [i for i, v in enumerate(self.vals)
                 if v.dtype == np.dtype(dtype) and ok(v) and np.prod(v.shape, dtype=np.int64) <= 4096]
        if cands and self.rng.random() > fresh:
            # Bias towards the most recent values so that steps chain.
            weights = [1.0 + 3.0 * (k + 1) / len(cands) for k in range(len(cands))]
            return self.rng.choices(cands, weights)[0]
        if exact is not None:
            return self.new_arg(exact, dtype)
        rank = make_rank if isinstance(make_rank, int) else self.rng.randint(*make_rank)
        for _ in range(50):
            s = self.rand_shape(rank)
            if ok(_Val(s, np.dtype(dtype))):
                return self.new_arg(s, dtype)
        raise _Retry()

    def add(self, name: str, fn: Callable[..., Any], ins: list[int]) -> list[int]:
        structs = [jax.ShapeDtypeStruct(self.vals[i].shape, self.vals[i].dtype) for i in ins]

        def wrapped(*xs: Any) -> tuple:
            out = fn(*xs)
            return tuple(out) if isinstance(out, (tuple, list)) else (out,)

        outs = jax.eval_shape(wrapped, *structs)
        ids = []
        for o in outs:
            self.vals.append(_Val(tuple(o.shape), np.dtype(o.dtype)))
            ids.append(len(self.vals) - 1)
        self.steps.append((wrapped, list(ins), ids))
        self.names.append(name)
        return ids


class _Retry(Exception):
    """The step could not be built with the shapes at hand: try another kind."""


def _perm(rng: random.Random, n: int, non_identity: bool = True) -> tuple[int, ...]:
    p = list(range(n))
    for _ in range(10):
        rng.shuffle(p)
        if not non_identity or p != sorted(p) or n < 2:
            break
    return tuple(p)


def _factorizations(n: int, rank: int, rng: random.Random) -> tuple[int, ...] | None:
    """A random factorization of ``n`` into ``rank`` factors (each > 1 when possible)."""
    for _ in range(30):
        rest, out = n, []
        for _k in range(rank - 1):
            divs = [d for d in range(2, rest) if rest % d == 0]
            if not divs:
                break
            d = rng.choice(divs)
            out.append(d)
            rest //= d
        if len(out) == rank - 1 and rest > 1:
            out.append(rest)
            rng.shuffle(out)
            return tuple(out)
    return None


# -- step kinds ---------------------------------------------------------------

def s_elementwise(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 4))
    ops = []
    for _ in range(b.rng.randint(1, 3)):
        ops.append(b.rng.choice(["sin", "exp", "tanh", "scale", "add", "max", "where"]))
    other = None
    if any(o in ("add", "max", "where") for o in ops):
        other = b.pick_shape(b.shape(x), fresh=0.5)

    def fn(x, *rest):
        y = x
        for o in ops:
            if o == "sin":
                y = jnp.sin(y)
            elif o == "exp":
                y = jnp.exp(-jnp.abs(y))
            elif o == "tanh":
                y = jnp.tanh(y)
            elif o == "scale":
                y = y * 1.5 + 0.25
            elif o == "add":
                y = y + rest[0]
            elif o == "max":
                y = jnp.maximum(y, rest[0])
            else:
                y = jnp.where(y > 0, y, rest[0])
        return y

    b.add("elementwise(" + ",".join(ops) + ")", fn, [x] + ([other] if other is not None else []))


def s_transpose(b: _Builder) -> None:
    rank = b.rng.randint(2, 5)
    x = b.pick(lambda v: len(v.shape) == rank, rank, fresh=0.4)
    perm = _perm(b.rng, rank)
    b.add(f"transpose{perm}", lambda x: jnp.transpose(x, perm), [x])


def s_reshape(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (2, 4))
    shape = b.shape(x)
    n = int(np.prod(shape))
    mode = b.rng.choice(["flatten", "merge", "split", "refactor"])
    new: tuple[int, ...] | None = None
    if mode == "flatten":
        new = (n,)
    elif mode == "merge" and len(shape) >= 2:
        i = b.rng.randrange(len(shape) - 1)
        new = shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:]
    elif mode == "split":
        cands = [i for i, d in enumerate(shape) if d in (4, 6, 8)]
        if cands:
            i = b.rng.choice(cands)
            d = shape[i]
            f = 2
            new = shape[:i] + (f, d // f) + shape[i + 1:]
    if new is None:
        new = _factorizations(n, b.rng.randint(2, 4), b.rng) or (n,)
    b.add(f"reshape{shape}->{new}", lambda x: jnp.reshape(x, new), [x])


def s_broadcast(b: _Builder) -> None:
    x = b.pick(lambda v: 1 <= len(v.shape) <= 3, (1, 3))
    shape = b.shape(x)
    out = list(shape)
    dims = list(range(len(shape)))
    for _ in range(b.rng.randint(1, 2)):
        pos = b.rng.randint(0, len(out))
        out.insert(pos, b.rng.choice((2, 3, 4)))
        dims = [d + 1 if d >= pos else d for d in dims]
    out_t, dims_t = tuple(out), tuple(dims)
    b.add(f"broadcast_in_dim{shape}->{out_t} dims={dims_t}",
          lambda x: lax.broadcast_in_dim(x, out_t, dims_t), [x])


def s_reduce(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 2, (2, 4))
    rank = len(b.shape(x))
    k = b.rng.randint(1, rank - 1)
    axes = tuple(sorted(b.rng.sample(range(rank), k)))
    kind = b.rng.choice(["sum", "max", "mean", "argmax"])
    keep = b.rng.random() < 0.3
    if kind == "argmax":
        ax = axes[0]
        b.add(f"argmax(axis={ax})", lambda x: jnp.argmax(x, axis=ax).astype(jnp.float32), [x])
        return
    f = {"sum": jnp.sum, "max": jnp.max, "mean": jnp.mean}[kind]
    b.add(f"reduce_{kind}(axes={axes}, keepdims={keep})", lambda x: f(x, axis=axes, keepdims=keep), [x])


def s_concatenate(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 4))
    shape = b.shape(x)
    ax = b.rng.randrange(len(shape))
    parts = [x]
    for _ in range(b.rng.randint(1, 2)):
        if b.rng.random() < 0.4:
            parts.append(x)
        else:
            s = list(shape)
            s[ax] = b.rng.choice(DIMS)
            t = tuple(s)
            parts.append(b.pick_shape(t, fresh=0.6))
    b.add(f"concatenate(axis={ax}, n={len(parts)})", lambda *xs: jnp.concatenate(xs, axis=ax), parts)


def s_slice(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1 and max(v.shape) >= 3, (1, 4))
    shape = b.shape(x)
    starts, limits, strides = [], [], []
    for d in shape:
        s = b.rng.randint(0, max(0, d // 2))
        e = b.rng.randint(s + 1, d)
        starts.append(s)
        limits.append(e)
        strides.append(b.rng.choice((1, 1, 2)))
    st, li, sr = tuple(starts), tuple(limits), tuple(strides)
    b.add(f"slice({st},{li},{sr})", lambda x: lax.slice(x, st, li, sr), [x])


def s_pad(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 4))
    cfg = []
    for d in b.shape(x):
        lo = b.rng.randint(-1 if d > 2 else 0, 2)
        hi = b.rng.randint(-1 if d > 2 else 0, 2)
        cfg.append((lo, hi, b.rng.choice((0, 0, 1))))
    c = tuple(cfg)
    b.add(f"pad{c}", lambda x: lax.pad(x, jnp.float32(0.5), c), [x])


def s_dot_general(b: _Builder) -> None:
    x = b.pick(lambda v: 2 <= len(v.shape) <= 4, (2, 4))
    xs = b.shape(x)
    r = len(xs)
    dims = list(range(r))
    b.rng.shuffle(dims)
    n_batch = b.rng.randint(0, min(2, r - 1))
    n_contract = b.rng.randint(1, min(2, r - n_batch))
    lb = dims[:n_batch]
    lc = dims[n_batch:n_batch + n_contract]
    n_free = b.rng.randint(0 if r - n_batch - n_contract > 0 else 1, 2)
    # rhs dims in a random order: batch, contracting and free dims.
    roles = [("b", i) for i in range(n_batch)] + [("c", i) for i in range(n_contract)] + \
            [("f", i) for i in range(n_free)]
    b.rng.shuffle(roles)
    rshape, rb, rc = [], [0] * n_batch, [0] * n_contract
    for pos, (role, i) in enumerate(roles):
        if role == "b":
            rshape.append(xs[lb[i]])
            rb[i] = pos
        elif role == "c":
            rshape.append(xs[lc[i]])
            rc[i] = pos
        else:
            rshape.append(b.rng.choice(DIMS))
    rt = tuple(rshape)
    y = b.pick_shape(rt, fresh=0.8)
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    b.add(f"dot_general{xs}x{rt} dn={dn}", lambda x, y: lax.dot_general(x, y, dn), [x, y])


def s_conv(b: _Builder) -> None:
    layouts = b.rng.choice([("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"),
                            ("NHWC", "OIHW", "NCHW"), ("NCHW", "HWIO", "NHWC"),
                            ("NWC", "WIO", "NWC"), ("NCW", "OIW", "NCW")])
    lhs_spec, rhs_spec, out_spec = layouts
    nd = len(lhs_spec) - 2
    sizes = {"N": b.rng.choice((1, 2)), "C": b.rng.choice((2, 3, 4))}
    spatial = [b.rng.choice((5, 6, 8)) for _ in range(nd)]
    lhs_shape = []
    sp = iter(spatial)
    for ch in lhs_spec:
        lhs_shape.append(sizes[ch] if ch in sizes else next(sp))
    lt = tuple(lhs_shape)
    x = b.pick_shape(lt, fresh=0.7)
    o = b.rng.choice((2, 4))
    k = [b.rng.choice((1, 3)) for _ in range(nd)]
    rshape = []
    ks = iter(k)
    for ch in rhs_spec:
        rshape.append(o if ch == "O" else sizes["C"] if ch == "I" else next(ks))
    w = b.new_arg(tuple(rshape))
    strides = tuple(b.rng.choice((1, 2)) for _ in range(nd))
    padding = b.rng.choice(("SAME", "VALID"))
    b.add(f"conv{layouts} strides={strides} {padding}",
          lambda x, w: lax.conv_general_dilated(x, w, strides, padding, dimension_numbers=layouts), [x, w])


def s_sort(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 3))
    ax = b.rng.randrange(len(b.shape(x)))
    mode = b.rng.choice(["sort", "sort", "argsort", "kv"])
    if mode == "sort":
        b.add(f"sort(axis={ax})", lambda x: jnp.sort(x, axis=ax), [x])
    elif mode == "argsort":
        b.add(f"argsort(axis={ax})", lambda x: jnp.argsort(x, axis=ax).astype(jnp.float32), [x])
    else:
        b.add(f"sort_kv(dim={ax})", lambda x: lax.sort((x, x * 2.0), dimension=ax, num_keys=1), [x])


def s_cumsum(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 3))
    ax = b.rng.randrange(len(b.shape(x)))
    kind = b.rng.choice(["cumsum", "cumsum", "cummax", "rev_cumsum"])
    if kind == "cumsum":
        b.add(f"cumsum(axis={ax})", lambda x: jnp.cumsum(x, axis=ax), [x])
    elif kind == "cummax":
        b.add(f"cummax(axis={ax})", lambda x: lax.cummax(x, axis=ax), [x])
    else:
        b.add(f"cumsum(axis={ax}, reverse)", lambda x: lax.cumsum(x, axis=ax, reverse=True), [x])


def s_gather(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 2, (2, 4))
    shape = b.shape(x)
    ax = b.rng.randrange(len(shape))
    n = b.rng.choice((2, 3, 5))
    mode = b.rng.choice(["take", "const", "along"])
    if mode == "along":
        ishape = tuple(n if i == ax else d for i, d in enumerate(shape))
        idx = b.new_arg(ishape, jnp.int32)
        b.add(f"take_along_axis(axis={ax})", lambda x, i: jnp.take_along_axis(x, i % shape[ax], axis=ax), [x, idx])
    elif mode == "take":
        idx = b.new_arg((n,), jnp.int32)
        b.add(f"take(axis={ax}, n={n})", lambda x, i: jnp.take(x, i, axis=ax, mode="clip"), [x, idx])
    else:
        consts = np.array([b.rng.randrange(shape[ax]) for _ in range(n)], dtype=np.int32)
        b.add(f"x[..const idx..](axis={ax})", lambda x: jnp.take(x, consts, axis=ax), [x])


def s_scatter(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 2, (2, 4))
    shape = b.shape(x)
    ax = b.rng.choice([0, 0, 1])
    n = b.rng.choice((2, 3))
    idx = b.new_arg((n,), jnp.int32)
    mode = b.rng.choice(["set", "add_scalar", "set_upd"])
    if mode == "set_upd":
        ushape = shape[:ax] + (n,) + shape[ax + 1:]
        upd = b.pick_shape(ushape, fresh=0.7)
        sl = (slice(None),) * ax

        def fn(x, i, u):
            return x.at[sl + (i,)].set(u)

        b.add(f"x.at[idx](axis={ax}).set(updates)", fn, [x, idx, upd])
    elif mode == "set":
        sl = (slice(None),) * ax
        b.add(f"x.at[idx](axis={ax}).set(1.0)", lambda x, i: x.at[sl + (i,)].set(1.0), [x, idx])
    else:
        sl = (slice(None),) * ax
        b.add(f"x.at[idx](axis={ax}).add(2.0)", lambda x, i: x.at[sl + (i,)].add(2.0), [x, idx])


def _shape_preserving(b: _Builder, shape: tuple[int, ...]) -> tuple[str, Callable[..., Any], list[int]]:
    """A body op that keeps ``shape`` but moves data across dims (for loops/conds)."""
    r = len(shape)
    choices = ["swap", "matmul", "cumsum", "sort", "elementwise"]
    kind = b.rng.choice(choices)
    if kind == "matmul" and r >= 1:
        w = b.pick_shape((shape[-1], shape[-1]), fresh=0.9)
        return "matmul", (lambda x, w: jnp.tanh(x @ w)), [w]
    if kind == "swap" and r >= 2:
        i, j = b.rng.sample(range(r), 2)
        ax = b.rng.randrange(r)
        return (f"swapaxes({i},{j})+cumsum+swap",
                (lambda x: jnp.swapaxes(jnp.cumsum(jnp.swapaxes(x, i, j), axis=ax), i, j) * 0.5), [])
    if kind == "cumsum":
        ax = b.rng.randrange(r)
        return f"cumsum({ax})", (lambda x: jnp.cumsum(x, axis=ax) * 0.5), []
    if kind == "sort":
        ax = b.rng.randrange(r)
        return f"sort({ax})", (lambda x: jnp.sort(x, axis=ax) + 1.0), []
    return "sin", (lambda x: jnp.sin(x) * 1.1), []


def s_fori(b: _Builder) -> None:
    x = b.pick(lambda v: 2 <= len(v.shape) <= 3, (2, 3))
    shape = b.shape(x)
    name, body_op, extra = _shape_preserving(b, shape)
    n = b.rng.randint(1, 4)
    use_while = b.rng.random() < 0.4

    def fn(x, *ex):
        if use_while:
            def cond(c):
                return c[0] < n

            def body(c):
                i, y, acc = c
                y = body_op(y, *ex)
                return i + 1, y, acc + jnp.sum(y)

            _, y, acc = lax.while_loop(cond, body, (jnp.int32(0), x, jnp.float32(0)))
            return y, acc
        return lax.fori_loop(0, n, lambda i, y: body_op(y, *ex) + i.astype(jnp.float32), x)

    b.add(f"{'while_loop' if use_while else 'fori_loop'}(n={n}, body={name})", fn, [x] + extra)


def s_cond(b: _Builder) -> None:
    x = b.pick(lambda v: 2 <= len(v.shape) <= 3, (2, 3))
    shape = b.shape(x)
    n1, f1, e1 = _shape_preserving(b, shape)
    n2, f2, e2 = _shape_preserving(b, shape)
    k1 = len(e1)

    def fn(x, *ex):
        return lax.cond(jnp.sum(x) > 0, lambda x: f1(x, *ex[:k1]), lambda x: f2(x, *ex[k1:]), x)

    b.add(f"cond({n1} | {n2})", fn, [x] + e1 + e2)


def s_lapack(b: _Builder) -> None:
    kind = b.rng.choice(["cholesky", "solve", "solve_vec", "inv"])
    n = b.rng.choice((3, 4, 6))
    batch = b.rng.random() < 0.3
    bshape = (b.rng.choice((2, 3)),) if batch else ()
    a = b.pick_shape(bshape + (n, n), fresh=0.5)
    eye = jnp.eye(n, dtype=jnp.float32)
    if kind == "cholesky":
        b.add(f"cholesky({bshape + (n, n)})",
              lambda a: jnp.linalg.cholesky(a @ jnp.swapaxes(a, -1, -2) + n * eye), [a])
    elif kind == "inv":
        b.add(f"inv({bshape + (n, n)})", lambda a: jnp.linalg.inv(a + n * eye), [a])
    else:
        k = b.rng.choice((1, 2, 5))
        rs = bshape + ((n,) if kind == "solve_vec" and not batch else (n, k))
        r = b.pick_shape(rs, fresh=0.7)
        b.add(f"solve({bshape + (n, n)}, {rs})", lambda a, r: jnp.linalg.solve(a + n * eye, r), [a, r])


def s_reverse(b: _Builder) -> None:
    x = b.pick(lambda v: len(v.shape) >= 1, (1, 4))
    ax = b.rng.randrange(len(b.shape(x)))
    b.add(f"flip(axis={ax})", lambda x: jnp.flip(x, axis=ax), [x])


STEP_KINDS: dict[str, Callable[[_Builder], None]] = {
    "elementwise": s_elementwise,
    "transpose": s_transpose,
    "reshape": s_reshape,
    "broadcast": s_broadcast,
    "reduce": s_reduce,
    "concatenate": s_concatenate,
    "slice": s_slice,
    "pad": s_pad,
    "dot_general": s_dot_general,
    "conv": s_conv,
    "sort": s_sort,
    "cumsum": s_cumsum,
    "gather": s_gather,
    "scatter": s_scatter,
    "loop": s_fori,
    "cond": s_cond,
    "lapack": s_lapack,
    "reverse": s_reverse,
}
# Relative frequencies: the layout-changing ops come up more often.
WEIGHTS = {"transpose": 3, "dot_general": 3, "reshape": 2, "conv": 2, "elementwise": 2}


def _layout_spec(rng: random.Random, rank: int) -> LayoutSpec:
    r = rng.random()
    if r < 0.45:
        return None
    if r < 0.6:
        return "auto"
    return _perm(rng, rank, non_identity=False)


def generate(seed: int, index: int) -> Program:
    """Program number ``index`` of the stream ``seed``."""
    rng = random.Random(f"stablehlo-layout-differential:{seed}:{index}")
    b = draw_steps(rng, _Builder, STEP_KINDS, WEIGHTS, lambda: rng.randint(2, 6))
    if b is None:
        raise RuntimeError(f"could not generate program {seed}:{index}")
    return _finish(b, rng, seed, index)


def draw_steps(rng: random.Random, builder: Callable[[random.Random], _Builder],
               table: dict[str, Callable[[_Builder], None]], weights: dict[str, int],
               n_steps: Callable[[], int]) -> _Builder | None:
    """A builder with ``n_steps()`` steps drawn from ``table`` (by ``weights``), or None after 20 tries.

    A step that cannot be built with the shapes at hand, or one JAX refuses,
    is drawn again (up to 40 draws per attempt).
    """
    kinds = list(table)
    kind_weights = [weights.get(k, 1) for k in kinds]
    for _attempt in range(20):
        b = builder(rng)
        wanted = n_steps()
        done = tries = 0
        while done < wanted and tries < 40:
            tries += 1
            kind = rng.choices(kinds, kind_weights)[0]
            try:
                table[kind](b)
                done += 1
            except _Retry:
                continue
            except (TypeError, ValueError):
                continue  # a shape combination JAX refuses: draw another step
        if b.steps:
            return b
    return None


def _finish(b: _Builder, rng: random.Random, seed: int, index: int) -> Program:
    arg_ids = b.arg_ids
    consumed = {i for _f, ins, _ids in b.steps for i in ins}
    # Every step's result that nothing later reads is an output, so no step is
    # dead code; at most four, the most recent first.
    leaves = [ids[0] for _f, _ins, ids in reversed(b.steps) if ids[0] not in consumed]
    outs = leaves[:4]
    extra = [i for _f, _ins, ids in b.steps for i in ids[1:] if i not in consumed]
    if extra and rng.random() < 0.3:
        outs.append(rng.choice(extra))
    if rng.random() < 0.05:
        outs.append(rng.choice(arg_ids))  # a parameter returned as is
    return program_of(b, rng, seed, index, outs)


def program_of(b: _Builder, rng: random.Random, seed: int, index: int, outs: list[int],
               name_prefix: str = "") -> Program:
    """The program that replays ``b``'s steps and returns the values ``outs``, with drawn layout pins."""
    steps = list(b.steps)
    arg_ids = b.arg_ids
    slot = {vid: k for k, vid in enumerate(arg_ids)}

    def fn(*args: Any) -> Any:
        env: dict[int, Any] = {vid: args[slot[vid]] for vid in arg_ids}
        for f, ins, ids in steps:
            res = f(*[env[i] for i in ins])
            for vid, r in zip(ids, res):
                env[vid] = r
        res = tuple(env[o] for o in outs)
        return res[0] if len(res) == 1 else res

    prog = Program(seed, index, fn, list(b.args), [], [], list(b.names), len(outs) == 1)
    fn.__name__ = fn.__qualname__ = name_prefix + prog.name
    prog.in_layouts = [_layout_spec(rng, len(a.shape)) for a in b.args]
    prog.out_layouts = [_layout_spec(rng, len(b.vals[o].shape)) for o in outs]
    return prog
