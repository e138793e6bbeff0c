"""A seeded random StableHLO program generator for the layout pass's robustness tests.

``generate(seed)`` returns ``Program(seed, text, entry_mode)``: the MLIR text of one
small module (static shapes, dims 1-6, ranks 0-4) and the ``--entry-layouts`` mode to
run it with.  The same seed always gives the same text.

What a program may contain:

* elementwise unary / binary ops, select, clamp, compare, convert, complex/real/imag;
* transpose, reshape, broadcast_in_dim, reduce (region, sometimes variadic),
  concatenate, slice (with strides), pad (negative and interior padding), reverse,
  dynamic_slice, dynamic_update_slice, iota, constant (splat and dense);
* dot_general with batch and several contracting dims, sort (single / multi operand),
  gather (jax's ``x[idx]`` form, random offset-dim positions and partial slices) and
  scatter (``x.at[idx].set`` / add form, constant unique indices);
* stablehlo.while (a counted loop carrying arrays whose body may transpose and
  reads outer values), stablehlo.case / stablehlo.if whose branches compute with
  outer values, nested up to two levels;
* func.call to private functions (several call sites, calls between private
  functions);
* custom_call @LayoutConstraint with operand_layouts / result_layouts;
* random ``mhlo.layout_mode`` pins on @main's arguments and results
  (permutations, "auto", "default", absent).

Bit-identical execution is the oracle, so every op whose result could depend on the
order of floating-point operations (reductions and dots over floats) is fed
"exact" values: small integers without NaN or negative zero (see ``_exact``).
Elementwise ops are computed per element and need no such care.

Every module is checked with ``stablehlo_layout.ir.mlir.load``; ``generate`` retries
with a derived seed when a module does not verify (``verify=False`` skips the
check).  ``python -m tests.fuzz.generator SEED`` prints one program.
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field

FLOATS = ("f32", "f16", "bf16")
CPLX = "complex<f32>"
MAX_ELEMS = 240  # keep every tensor small
MAX_DEPTH = 2  # nesting of while / case / if / call

Shape = tuple[int, ...]


@dataclass(frozen=True)
class V:
    name: str
    shape: Shape
    elem: str

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def type(self) -> str:
        return ttype(self.shape, self.elem)


def ttype(shape: Shape, elem: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"


def i64s(xs) -> str:
    xs = list(xs)
    return "array<i64" + (": " + ", ".join(map(str, xs)) if xs else "") + ">"


def dense_index(xs) -> str:
    xs = list(xs)
    return f"dense<[{', '.join(map(str, xs))}]> : tensor<{len(xs)}xindex>"


def is_float(e: str) -> bool:
    return e in FLOATS


@dataclass
class Program:
    seed: int
    text: str
    entry_mode: str = "default"
    tries: int = 1

    @property
    def name(self) -> str:
        return f"fuzz_s{self.seed}"


@dataclass
class _Func:
    name: str
    is_main: bool
    params: list[V] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    results: list[V] = field(default_factory=list)
    # scope stack: each entry is the list of values defined at that level
    scopes: list[list[V]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.counter = 0
        self.funcs: list[_Func] = []
        self.privates: list[_Func] = []  # finished private functions (callable)
        self.f: _Func | None = None
        self.indent = 2
        self.depth = 0

    # -- low-level emission ---------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        assert self.f is not None
        self.f.lines.append("  " * self.indent + line)

    def define(self, rhs: str, shapes: list[tuple[Shape, str]]) -> list[V]:
        name = self.fresh()
        lhs = name if len(shapes) == 1 else f"{name}:{len(shapes)}"
        self.emit(f"{lhs} = {rhs}")
        if len(shapes) == 1:
            vs = [V(name, *shapes[0])]
        else:
            vs = [V(f"{name}#{i}", s, e) for i, (s, e) in enumerate(shapes)]
        for v in vs:
            self.f.scopes[-1].append(v)
        return vs

    def op(self, name: str, operands: list[V], shape: Shape, elem: str, props: str = "") -> V:
        for o in operands:
            self.f.used.add(o.name)
        ins = ", ".join(o.type for o in operands)
        args = ", ".join(o.name for o in operands)
        p = f" <{{{props}}}>" if props else ""
        return self.define(f'"stablehlo.{name}"({args}){p} : ({ins}) -> {ttype(shape, elem)}',
                           [(shape, elem)])[0]

    def visible(self) -> list[V]:
        return [v for scope in self.f.scopes for v in scope]

    # -- random choices ---------------------------------------------------------
    def pick(self, xs):
        return xs[self.rng.randrange(len(xs))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def rand_elem(self) -> str:
        r = self.rng.random()
        if r < 0.50:
            return "f32"
        if r < 0.75:
            return "i32"
        if r < 0.85:
            return "i1"
        if r < 0.90:
            return "f16"
        if r < 0.95:
            return "bf16"
        return CPLX

    def rand_shape(self, rank: int | None = None, limit: int = MAX_ELEMS) -> Shape:
        if rank is None:
            rank = self.rng.choices([0, 1, 2, 3, 4], weights=[1, 2, 4, 3, 2])[0]
        while True:
            dims = tuple(self.rng.choice([1, 2, 2, 3, 3, 4, 4, 5, 6]) for _ in range(rank))
            if math.prod(dims) <= limit:
                return dims

    def scalar_text(self, elem: str, value: float | None = None) -> str:
        if value is None:
            if elem == "i1":
                return self.pick(["true", "false"])
            if elem == "i32":
                return str(self.rng.randint(-5, 5))
            if elem == CPLX:
                return f"({self.rng.randint(-3, 3)}.5, {self.rng.randint(-3, 3)}.25)"
            return f"{self.rng.randint(-8, 8) / 4:.2f}"
        if elem == "i1":
            return "true" if value else "false"
        if elem == "i32":
            return str(int(value))
        if elem == CPLX:
            return f"({float(value)}, 0.0)"
        return f"{float(value)}"

    # -- constants and fresh values --------------------------------------------
    def constant(self, shape: Shape, elem: str, value: float | None = None, splat: bool | None = None) -> V:
        if splat is None:
            splat = value is not None or self.chance(0.5) or math.prod(shape) > 40
        if splat:
            body = self.scalar_text(elem, value)
        else:
            def nest(dims: Shape) -> str:
                if not dims:
                    return self.scalar_text(elem)
                return "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"
            body = nest(shape)
        return self.define(f"stablehlo.constant dense<{body}> : {ttype(shape, elem)}", [(shape, elem)])[0]

    def param(self, shape: Shape, elem: str) -> V:
        f = self.f
        v = V(f"%arg{len(f.params)}", shape, elem)
        f.params.append(v)
        f.scopes[0].append(v)
        return v

    def get(self, shape: Shape | None = None, elem: str | None = None, rank: int | None = None,
            fresh: float = 0.25, elems: tuple[str, ...] | None = None, not_elem: tuple[str, ...] = ()) -> V:
        """A visible value matching the request, or a newly made one."""
        def ok(v: V) -> bool:
            return ((shape is None or v.shape == shape) and (elem is None or v.elem == elem)
                    and (rank is None or v.rank == rank) and (elems is None or v.elem in elems)
                    and v.elem not in not_elem)
        cands = [v for v in self.visible() if ok(v)]
        if cands and not self.chance(fresh):
            # prefer recent and unused values, so programs chain
            unused = [v for v in cands if v.name not in self.f.used]
            pool = unused if unused and self.chance(0.7) else cands
            return pool[-1 - min(int(self.rng.expovariate(0.7)), len(pool) - 1)]
        if elem is None:
            choices = [e for e in (elems or ("f32", "f32", "i32", "i1", "f16", "bf16", CPLX)) if e not in not_elem]
            elem = self.pick(choices)
        if shape is None:
            shape = self.rand_shape(rank)
        return self.make(shape, elem)

    def make(self, shape: Shape, elem: str) -> V:
        """A new value of exactly this type, derived from others when possible."""
        n = math.prod(shape)
        r = self.rng.random()
        if r < 0.35 and (self.f.is_main or self.depth == 0 or True):
            return self.param(shape, elem)
        if r < 0.50:
            return self.constant(shape, elem)
        if r < 0.60 and elem in ("i32", "f32") and shape:
            v = self.op("iota", [], shape, elem, f"iota_dimension = {self.rng.randrange(len(shape))} : i64")
            return v
        if r < 0.75:
            # reshape of some value with the same number of elements
            src = [v for v in self.visible() if v.elem == elem and math.prod(v.shape) == n and v.shape != shape]
            if src:
                return self.op("reshape", [self.pick(src)], shape, elem)
        if r < 0.85:
            # convert from another element type of the same shape
            src = [v for v in self.visible() if v.shape == shape and v.elem != elem
                   and not (v.elem == CPLX and elem != CPLX) and elem != CPLX]
            if src:
                return self.op("convert", [self.pick(src)], shape, elem)
        if r < 0.95 and shape:
            # broadcast a scalar or lower-rank value
            k = self.rng.randrange(len(shape))
            dims = sorted(self.rng.sample(range(len(shape)), k))
            src_shape = tuple(shape[d] if self.chance(0.8) else 1 for d in dims)
            src = self.get(src_shape, elem, fresh=0.5)
            return self.op("broadcast_in_dim", [src], shape, elem, f"broadcast_dimensions = {i64s(dims)}")
        return self.param(shape, elem)

    def zero(self, shape: Shape, elem: str) -> V:
        return self.constant(shape, elem, 0)

    def _exact(self, v: V) -> V:
        """Small integers, no NaN, no -0: any summation order gives the same bits."""
        if not is_float(v.elem):
            return v
        f = self.op("floor", [v], v.shape, v.elem)
        lo = self.constant((), v.elem, -4)
        hi = self.constant((), v.elem, 4)
        c = self.op("clamp", [lo, f, hi], v.shape, v.elem)
        ok = self.op("compare", [c, c], v.shape, "i1",
                     "comparison_direction = #stablehlo<comparison_direction EQ>")
        z = self.zero(v.shape, v.elem)
        s = self.op("select", [ok, c, z], v.shape, v.elem)
        return self.op("add", [s, z], v.shape, v.elem)

    # -- op generators -----------------------------------------------------------
    def g_unary(self) -> V | None:
        x = self.get()
        e = x.elem
        if is_float(e):
            name = self.pick(["abs", "negate", "sine", "cosine", "tanh", "exponential", "floor", "ceil",
                              "sign", "sqrt", "log", "rsqrt", "logistic", "round_nearest_even",
                              "round_nearest_afz", "cbrt", "log_plus_one", "exponential_minus_one"])
        elif e == "i32":
            name = self.pick(["abs", "negate", "not", "popcnt", "count_leading_zeros", "sign"])
        elif e == "i1":
            name = "not"
        else:
            name = self.pick(["negate", "exponential", "sine", "real", "imag", "abs"])
            if name in ("real", "imag", "abs"):
                return self.op(name, [x], x.shape, "f32")
        return self.op(name, [x], x.shape, e)

    def g_binary(self) -> V | None:
        x = self.get()
        y = self.get(x.shape, x.elem, fresh=0.3)
        e = x.elem
        if is_float(e):
            name = self.pick(["add", "subtract", "multiply", "maximum", "minimum", "divide", "atan2",
                              "power", "remainder"])
        elif e == "i32":
            name = self.pick(["add", "subtract", "multiply", "maximum", "minimum", "and", "or", "xor",
                              "shift_left", "shift_right_logical"])
        elif e == "i1":
            name = self.pick(["and", "or", "xor"])
        else:
            name = self.pick(["add", "subtract", "multiply"])
        return self.op(name, [x, y], x.shape, e)

    def g_complex(self) -> V | None:
        x = self.get(elem="f32")
        y = self.get(x.shape, "f32", fresh=0.3)
        return self.op("complex", [x, y], x.shape, CPLX)

    def g_select(self) -> V | None:
        x = self.get()
        y = self.get(x.shape, x.elem, fresh=0.3)
        pshape = () if self.chance(0.2) else x.shape
        p = self.get(pshape, "i1", fresh=0.3)
        return self.op("select", [p, x, y], x.shape, x.elem)

    def g_clamp(self) -> V | None:
        x = self.get(not_elem=(CPLX, "i1"))
        bshape = () if self.chance(0.5) else x.shape
        lo = self.get(bshape, x.elem, fresh=0.5)
        hi = self.get(bshape, x.elem, fresh=0.5)
        return self.op("clamp", [lo, x, hi], x.shape, x.elem)

    def g_compare(self) -> V | None:
        x = self.get()
        y = self.get(x.shape, x.elem, fresh=0.3)
        if x.elem == CPLX:
            d, t = self.pick(["EQ", "NE"]), None
        else:
            d = self.pick(["EQ", "NE", "LT", "LE", "GT", "GE"])
            t = {"i32": "SIGNED", "i1": "UNSIGNED"}.get(x.elem, self.pick(["FLOAT", "TOTALORDER"]))
        props = f"comparison_direction = #stablehlo<comparison_direction {d}>"
        if t and self.chance(0.7):
            props += f", compare_type = #stablehlo<comparison_type {t}>"
        return self.op("compare", [x, y], x.shape, "i1", props)

    def g_convert(self) -> V | None:
        x = self.get(not_elem=(CPLX,))
        e = self.pick([t for t in ("f32", "i32", "i1", "f16", "bf16", CPLX) if t != x.elem])
        return self.op("convert", [x], x.shape, e)

    def g_transpose(self) -> V | None:
        x = self.get(rank=self.pick([2, 2, 3, 3, 4]), fresh=0.2)
        perm = list(range(x.rank))
        while perm == sorted(perm) and x.rank > 1:
            self.rng.shuffle(perm)
        return self.op("transpose", [x], tuple(x.shape[p] for p in perm), x.elem,
                       f"permutation = {i64s(perm)}")

    def factor_shape(self, n: int, rank: int) -> Shape:
        primes: list[int] = []
        m, p = n, 2
        while m > 1:
            while m % p == 0:
                primes.append(p)
                m //= p
            p += 1
        dims = [1] * max(rank, 1)
        for q in primes:
            dims[self.rng.randrange(len(dims))] *= q
        if rank == 0:
            return ()
        return tuple(dims)

    def g_reshape(self) -> V | None:
        x = self.get(fresh=0.2)
        n = math.prod(x.shape)
        rank = self.rng.randint(1 if n > 1 else 0, 4)
        shape = self.factor_shape(n, rank)
        if any(d > 12 for d in shape):
            shape = self.factor_shape(n, 4)
        return self.op("reshape", [x], shape, x.elem)

    def g_broadcast(self) -> V | None:
        x = self.get(rank=self.pick([0, 1, 1, 2, 2, 3]), fresh=0.2)
        out_rank = min(4, x.rank + self.rng.randint(0, 2))
        if out_rank == 0:
            return None
        dims = sorted(self.rng.sample(range(out_rank), x.rank))
        if self.chance(0.15):
            self.rng.shuffle(dims)  # broadcast_in_dim may also transpose
        shape = [0] * out_rank
        for i, d in enumerate(dims):
            shape[d] = x.shape[i] if x.shape[i] != 1 or self.chance(0.5) else self.rng.randint(1, 4)
        for d in range(out_rank):
            if d not in dims:
                shape[d] = self.rng.randint(1, 4)
        if math.prod(shape) > MAX_ELEMS * 2:
            return None
        return self.op("broadcast_in_dim", [x], tuple(shape), x.elem, f"broadcast_dimensions = {i64s(dims)}")

    def _reducer(self, elems: list[str]) -> tuple[str, list[str]]:
        """(region text lines, per-operand init value)."""
        args_a = [self.fresh("a") for _ in elems]
        args_b = [self.fresh("b") for _ in elems]
        sig = ", ".join(f"{a}: {ttype((), e)}" for a, e in zip(args_a, elems)) + ", " + \
            ", ".join(f"{b}: {ttype((), e)}" for b, e in zip(args_b, elems))
        body = [f"^bb0({sig}):"]
        outs, inits = [], []
        for a, b, e in zip(args_a, args_b, elems):
            if e == "i1":
                name, init = self.pick([("and", "true"), ("or", "false")])
            elif e == "i32":
                name, init = self.pick([("add", "0"), ("maximum", "-2147483648"), ("minimum", "2147483647"),
                                        ("xor", "0"), ("multiply", "1")])
            elif e == "f32":
                name, init = self.pick([("add", "0.0"), ("maximum", "0xFF800000"), ("minimum", "0x7F800000")])
            else:  # f16 / bf16: sums may round, use max/min
                inf = {"f16": ("0xFC00", "0x7C00"), "bf16": ("0xFF80", "0x7F80")}[e]
                name, init = self.pick([("maximum", inf[0]), ("minimum", inf[1])])
            r = self.fresh("r")
            body.append(f'  {r} = "stablehlo.{name}"({a}, {b}) : ({ttype((), e)}, {ttype((), e)}) -> {ttype((), e)}')
            outs.append(r)
            inits.append(init)
        body.append(f'  "stablehlo.return"({", ".join(outs)}) : ({", ".join(ttype((), e) for e in elems)}) -> ()')
        return "\n".join(body), inits

    def g_reduce(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 2, 3, 3, 4]), not_elem=(CPLX,), fresh=0.2)
        if x.rank == 0:
            return None
        ops = [x]
        if self.chance(0.25):
            e2 = self.pick(["f32", "i32"])
            if is_float(e2) and is_float(x.elem):
                e2 = x.elem  # XLA rejects a variadic reduce mixing float precisions
            ops.append(self.get(x.shape, e2, fresh=0.5))
        ops = [self._exact(o) for o in ops]
        dims = sorted(self.rng.sample(range(x.rank), self.rng.randint(1, x.rank)))
        out_shape = tuple(d for i, d in enumerate(x.shape) if i not in dims)
        region, inits = self._reducer([o.elem for o in ops])
        init_vs = [self.define(f"stablehlo.constant dense<{i}> : {ttype((), o.elem)}", [((), o.elem)])[0]
                   for i, o in zip(inits, ops)]
        for o in ops:
            self.f.used.add(o.name)
        allops = ops + init_vs
        outs = [(out_shape, o.elem) for o in ops]
        region = region.replace("\n", "\n" + "  " * (self.indent + 1))
        rhs = (f'"stablehlo.reduce"({", ".join(o.name for o in allops)}) <{{dimensions = {i64s(dims)}}}> ({{\n'
               + "  " * (self.indent + 1) + region + "\n" + "  " * self.indent
               + f'}}) : ({", ".join(o.type for o in allops)}) -> ({", ".join(ttype(*t) for t in outs)})')
        return self.define(rhs, outs)[0]

    def g_concatenate(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 3, 4]), fresh=0.2)
        if x.rank == 0:
            return None
        d = self.rng.randrange(x.rank)
        parts = [x]
        for _ in range(self.rng.randint(1, 2)):
            s = list(x.shape)
            s[d] = self.rng.randint(1, 4)
            parts.append(self.get(tuple(s), x.elem, fresh=0.5))
        if self.chance(0.3):
            self.rng.shuffle(parts)
        out = list(x.shape)
        out[d] = sum(p.shape[d] for p in parts)
        return self.op("concatenate", parts, tuple(out), x.elem, f"dimension = {d} : i64")

    def g_slice(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 3, 4]), fresh=0.2)
        start, limit, stride, out = [], [], [], []
        for n in x.shape:
            a = self.rng.randrange(n)
            b = self.rng.randint(a + 1, n)
            s = self.pick([1, 1, 1, 2, 3])
            start.append(a), limit.append(b), stride.append(s)
            out.append((b - a + s - 1) // s)
        return self.op("slice", [x], tuple(out), x.elem,
                       f"start_indices = {i64s(start)}, limit_indices = {i64s(limit)}, strides = {i64s(stride)}")

    def g_pad(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 3]), fresh=0.2)
        if x.rank == 0:
            return None
        pv = self.get((), x.elem, fresh=0.6)
        lo, hi, it, out = [], [], [], []
        for n in x.shape:
            i = self.pick([0, 0, 0, 1])
            full = n + (n - 1) * i
            l_ = self.rng.randint(-min(1, full - 1), 2)
            h = self.rng.randint(-min(1, full - 1 - max(0, -l_)), 2)
            lo.append(l_), hi.append(h), it.append(i)
            out.append(full + l_ + h)
        if any(o < 1 for o in out) or math.prod(out) > MAX_ELEMS * 2:
            return None
        return self.op("pad", [x, pv], tuple(out), x.elem,
                       f"edge_padding_high = {i64s(hi)}, edge_padding_low = {i64s(lo)}, interior_padding = {i64s(it)}")

    def g_reverse(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 3, 4]), fresh=0.2)
        dims = sorted(self.rng.sample(range(x.rank), self.rng.randint(1, x.rank)))
        return self.op("reverse", [x], x.shape, x.elem, f"dimensions = {i64s(dims)}")

    def index_scalar(self) -> V:
        if self.chance(0.6):
            return self.constant((), "i32", self.rng.randint(-1, 5))
        return self.get((), "i32", fresh=0.3)

    def g_dynamic_slice(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 3, 4]), fresh=0.2)
        sizes = [self.rng.randint(1, n) for n in x.shape]
        idx = [self.index_scalar() for _ in x.shape]
        return self.op("dynamic_slice", [x, *idx], tuple(sizes), x.elem, f"slice_sizes = {i64s(sizes)}")

    def g_dynamic_update_slice(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 3, 4]), fresh=0.2)
        ushape = tuple(self.rng.randint(1, n) for n in x.shape)
        u = self.get(ushape, x.elem, fresh=0.4)
        idx = [self.index_scalar() for _ in x.shape]
        return self.op("dynamic_update_slice", [x, u, *idx], x.shape, x.elem)

    def g_iota(self) -> V | None:
        shape = self.rand_shape(self.pick([1, 2, 3]))
        e = self.pick(["i32", "f32", "i32"])
        return self.op("iota", [], shape, e, f"iota_dimension = {self.rng.randrange(len(shape))} : i64")

    def g_constant(self) -> V | None:
        return self.constant(self.rand_shape(), self.rand_elem())

    def g_dot(self) -> V | None:
        e = self.pick(["f32", "f32", "i32"])
        nb, nc = self.rng.randint(0, 2), self.rng.randint(1, 2)
        nl, nr = self.rng.randint(0, 1), self.rng.randint(0, 1)
        bd = [self.rng.randint(1, 4) for _ in range(nb)]
        cd = [self.rng.randint(1, 5) for _ in range(nc)]
        ld = [self.rng.randint(1, 5) for _ in range(nl)]
        rd = [self.rng.randint(1, 5) for _ in range(nr)]

        def arrange(free: list[int]) -> tuple[Shape, list[int], list[int]]:
            tags = [("b", i) for i in range(nb)] + [("c", i) for i in range(nc)] + [("f", i) for i in range(len(free))]
            if self.chance(0.6):
                self.rng.shuffle(tags)
            shape = tuple({"b": bd, "c": cd, "f": free}[k][i] for k, i in tags)
            bpos = [tags.index(("b", i)) for i in range(nb)]
            cpos = [tags.index(("c", i)) for i in range(nc)]
            return shape, bpos, cpos

        ls, lb, lc = arrange(ld)
        rs, rb, rc = arrange(rd)
        lhs = self._exact(self.get(ls, e, fresh=0.3))
        rhs = self._exact(self.get(rs, e, fresh=0.3))
        out = tuple(bd + ld + rd)
        dn = (f"#stablehlo.dot<lhs_batching_dimensions = [{', '.join(map(str, lb))}], "
              f"rhs_batching_dimensions = [{', '.join(map(str, rb))}], "
              f"lhs_contracting_dimensions = [{', '.join(map(str, lc))}], "
              f"rhs_contracting_dimensions = [{', '.join(map(str, rc))}]>")
        return self.op("dot_general", [lhs, rhs], out, e, f"dot_dimension_numbers = {dn}")

    def g_sort(self) -> V | None:
        k = self.get(rank=self.pick([1, 2, 3]), elems=("f32", "i32"), fresh=0.2)
        ops = [k]
        for _ in range(self.rng.randint(0, 2)):
            ops.append(self.get(k.shape, fresh=0.4, not_elem=()))
        dim = self.rng.randrange(k.rank)
        args = [self.fresh("s") for _ in range(2 * len(ops))]
        sig = ", ".join(f"{a}: {ttype((), ops[i // 2].elem)}" for i, a in enumerate(args))
        t = ttype((), k.elem)
        ct = "TOTALORDER" if k.elem == "f32" else "SIGNED"
        d = self.pick(["LT", "GT"])
        c = self.fresh("c")
        ind = "  " * (self.indent + 1)
        region = (f"{ind}^bb0({sig}):\n"
                  f'{ind}  {c} = "stablehlo.compare"({args[0]}, {args[1]}) <{{comparison_direction = '
                  f"#stablehlo<comparison_direction {d}>, compare_type = #stablehlo<comparison_type {ct}>}}> "
                  f": ({t}, {t}) -> tensor<i1>\n"
                  f'{ind}  "stablehlo.return"({c}) : (tensor<i1>) -> ()\n')
        for o in ops:
            self.f.used.add(o.name)
        rhs = (f'"stablehlo.sort"({", ".join(o.name for o in ops)}) <{{dimension = {dim} : i64, is_stable = true}}> '
               f'({{\n{region}{"  " * self.indent}}}) : ({", ".join(o.type for o in ops)}) -> '
               f'({", ".join(o.type for o in ops)})')
        return self.pick(self.define(rhs, [(o.shape, o.elem) for o in ops]))

    def g_gather(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 2, 3, 3]), fresh=0.2)
        if x.rank == 0:
            return None
        kdims = sorted(self.rng.sample(range(x.rank), self.rng.randint(1, min(2, x.rank))))
        n = self.rng.randint(1, 4)
        idx_shape: Shape = (n, len(kdims))
        idx = self.get(idx_shape, "i32", fresh=0.5)
        smap = list(kdims)
        if self.chance(0.3):
            self.rng.shuffle(smap)
        collapsed = [d for d in kdims if self.chance(0.8)]
        sizes = [1 if d in collapsed else (self.rng.randint(1, x.shape[d]) if d in kdims or self.chance(0.3)
                                           else x.shape[d]) for d in range(x.rank)]
        offset_sizes = [sizes[d] for d in range(x.rank) if d not in collapsed]
        out_rank = 1 + len(offset_sizes)
        batch_pos = self.rng.randrange(out_rank)
        offset_dims = [p for p in range(out_rank) if p != batch_pos]
        out = [0] * out_rank
        out[batch_pos] = n
        for p, s in zip(offset_dims, offset_sizes):
            out[p] = s
        dn = (f"#stablehlo.gather<offset_dims = [{', '.join(map(str, offset_dims))}], "
              f"collapsed_slice_dims = [{', '.join(map(str, collapsed))}], "
              f"start_index_map = [{', '.join(map(str, smap))}], index_vector_dim = 1>")
        return self.op("gather", [x, idx], tuple(out), x.elem,
                       f"dimension_numbers = {dn}, indices_are_sorted = false, slice_sizes = {i64s(sizes)}")

    def g_scatter(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 2, 3]), fresh=0.2)
        if x.rank == 0:
            return None
        kdims = sorted(self.rng.sample(range(x.rank), self.rng.randint(1, min(2, x.rank))))
        space = [tuple(t) for t in _product([range(x.shape[d]) for d in kdims])]
        n = self.rng.randint(1, min(4, len(space)))
        rows = self.rng.sample(space, n)
        smap = list(kdims)
        if self.chance(0.3):
            self.rng.shuffle(smap)
            rows = [tuple(r[kdims.index(d)] for d in smap) for r in rows]
        body = "[" + ", ".join("[" + ", ".join(map(str, r)) + "]" for r in rows) + "]"
        idx = self.define(f"stablehlo.constant dense<{body}> : {ttype((n, len(kdims)), 'i32')}",
                          [((n, len(kdims)), "i32")])[0]
        window = [x.shape[d] for d in range(x.rank) if d not in kdims]
        ushape = tuple([n] + window)
        upd = self.get(ushape, x.elem, fresh=0.4)
        t = ttype((), x.elem)
        a, b = self.fresh("u"), self.fresh("u")
        ind = "  " * (self.indent + 1)
        combine = "set" if x.elem in ("i1", CPLX) or self.chance(0.5) else "add"
        if combine == "set":
            inner = f'{ind}  "stablehlo.return"({b}) : ({t}) -> ()\n'
        else:
            s = self.fresh("u")
            inner = (f'{ind}  {s} = "stablehlo.add"({a}, {b}) : ({t}, {t}) -> {t}\n'
                     f'{ind}  "stablehlo.return"({s}) : ({t}) -> ()\n')
        region = f"{ind}^bb0({a}: {t}, {b}: {t}):\n{inner}"
        dn = (f"#stablehlo.scatter<update_window_dims = [{', '.join(map(str, range(1, len(window) + 1)))}], "
              f"inserted_window_dims = [{', '.join(map(str, kdims))}], "
              f"scatter_dims_to_operand_dims = [{', '.join(map(str, smap))}], index_vector_dim = 1>")
        for o in (x, idx, upd):
            self.f.used.add(o.name)
        rhs = (f'"stablehlo.scatter"({x.name}, {idx.name}, {upd.name}) <{{indices_are_sorted = false, '
               f"scatter_dimension_numbers = {dn}, unique_indices = {self.pick(['true', 'false'])}}}> "
               f'({{\n{region}{"  " * self.indent}}}) : ({x.type}, {idx.type}, {upd.type}) -> {x.type}')
        return self.define(rhs, [(x.shape, x.elem)])[0]

    def g_layout_constraint(self) -> V | None:
        x = self.get(rank=self.pick([1, 2, 2, 3, 4]), fresh=0.2)
        if x.rank == 0:
            return None
        perm = list(range(x.rank))
        self.rng.shuffle(perm)
        opl = list(range(x.rank)) if self.chance(0.7) else perm
        self.f.used.add(x.name)
        rhs = (f'stablehlo.custom_call @LayoutConstraint({x.name}) {{backend_config = "", '
               f"operand_layouts = [{dense_index(opl)}], result_layouts = [{dense_index(perm)}]}} "
               f": ({x.type}) -> {x.type}")
        return self.define(rhs, [(x.shape, x.elem)])[0]

    # -- control flow -------------------------------------------------------------
    def produce(self, shape: Shape, elem: str, inner: list[V]) -> V:
        """A value of this exact type, preferably computed in the current region."""
        cands = [v for v in inner if v.shape == shape and v.elem == elem]
        if cands and self.chance(0.6):
            return self.pick(cands)
        r = self.rng.random()
        if r < 0.6:
            x = self.get(shape, elem, fresh=0.1)
            if elem == "i1":
                return self.op("not", [x], shape, elem)
            y = self.get(shape, elem, fresh=0.2)
            name = "add" if elem != "i1" else "xor"
            if self.chance(0.3) and elem in ("f32", "i32"):
                name = self.pick(["maximum", "minimum", "multiply"])
            return self.op(name, [x, y], shape, elem)
        return self.get(shape, elem, fresh=0.2)

    def region_ops(self, n: int) -> None:
        for _ in range(n):
            self.random_op()

    def g_while(self) -> V | None:
        if self.depth >= MAX_DEPTH:
            return None
        carried = [self.get(fresh=0.2, rank=self.pick([1, 2, 2, 3])) for _ in range(self.rng.randint(1, 3))]
        counter = self.constant((), "i32", 0)
        trip = self.rng.randint(0, 3)
        types = [counter] + carried
        tys = ", ".join(v.type for v in types)
        ind = "  " * self.indent
        name = self.fresh()
        self.emit(f'{name}:{len(types)} = "stablehlo.while"({", ".join(v.name for v in types)}) ({{')
        for v in carried:
            self.f.used.add(v.name)
        # cond
        cargs = [V(self.fresh("w"), v.shape, v.elem) for v in types]
        self.emit(f"^bb0({', '.join(f'{a.name}: {a.type}' for a in cargs)}):")
        self.indent += 1
        lim = self.fresh("c")
        self.emit(f"{lim} = stablehlo.constant dense<{trip}> : tensor<i32>")
        p = self.fresh("c")
        self.emit(f'{p} = "stablehlo.compare"({cargs[0].name}, {lim}) <{{comparison_direction = '
                  f"#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>}}> "
                  f": (tensor<i32>, tensor<i32>) -> tensor<i1>")
        self.emit(f'"stablehlo.return"({p}) : (tensor<i1>) -> ()')
        self.indent -= 1
        self.f.lines.append(ind + "}, {")
        # body
        bargs = [V(self.fresh("w"), v.shape, v.elem) for v in types]
        self.emit(f"^bb0({', '.join(f'{a.name}: {a.type}' for a in bargs)}):")
        self.indent += 1
        self.depth += 1
        self.f.scopes.append(list(bargs[1:]))
        self.region_ops(self.rng.randint(0, 3))
        one = self.constant((), "i32", 1)
        nxt = self.op("add", [bargs[0], one], (), "i32")
        outs = [nxt]
        for a in bargs[1:]:
            perms = _shape_preserving_perms(a.shape)
            if perms and self.chance(0.5):
                t = self.op("transpose", [a], a.shape, a.elem, f"permutation = {i64s(self.pick(perms))}")
                if self.chance(0.5):
                    t = self.op("add" if a.elem != "i1" else "xor", [t, self.get(a.shape, a.elem, fresh=0.2)],
                                a.shape, a.elem)
                outs.append(t)
            else:
                outs.append(self.produce(a.shape, a.elem, self.f.scopes[-1]))
        self.emit(f'"stablehlo.return"({", ".join(o.name for o in outs)}) : ({tys}) -> ()')
        self.f.scopes.pop()
        self.depth -= 1
        self.indent -= 1
        self.f.lines.append(ind + f"}}) : ({tys}) -> ({tys})")
        vs = [V(f"{name}#{i}", v.shape, v.elem) for i, v in enumerate(types)]
        self.f.scopes[-1].extend(vs[1:])
        return vs[-1]

    def _branches(self, op: str, selector: V, n: int) -> V | None:
        rtypes = [(v.shape, v.elem) for v in
                  (self.get(fresh=0.3) for _ in range(self.rng.randint(1, 2)))]
        ind = "  " * self.indent
        name = self.fresh()
        lhs = name if len(rtypes) == 1 else f"{name}:{len(rtypes)}"
        self.f.used.add(selector.name)
        self.emit(f'{lhs} = "stablehlo.{op}"({selector.name}) ({{')
        self.depth += 1
        for b in range(n):
            if b:
                self.f.lines.append(ind + "}, {")
            self.indent += 1
            self.f.scopes.append([])
            self.region_ops(self.rng.randint(0, 3))
            outs = [self.produce(s, e, self.f.scopes[-1]) for s, e in rtypes]
            for o in outs:
                self.f.used.add(o.name)
            self.emit(f'"stablehlo.return"({", ".join(o.name for o in outs)}) : '
                      f'({", ".join(o.type for o in outs)}) -> ()')
            self.f.scopes.pop()
            self.indent -= 1
        self.depth -= 1
        self.f.lines.append(ind + f"}}) : ({selector.type}) -> ({', '.join(ttype(s, e) for s, e in rtypes)})")
        vs = [V(name if len(rtypes) == 1 else f"{name}#{i}", s, e) for i, (s, e) in enumerate(rtypes)]
        self.f.scopes[-1].extend(vs)
        return vs[-1]

    def g_case(self) -> V | None:
        if self.depth >= MAX_DEPTH:
            return None
        idx = self.index_scalar()
        return self._branches("case", idx, self.rng.randint(1, 3))

    def g_if(self) -> V | None:
        if self.depth >= MAX_DEPTH:
            return None
        if self.chance(0.5):
            p = self.get((), "i1", fresh=0.3)
        else:
            x = self.get(rank=0, elems=("i32", "f32"), fresh=0.3)
            z = self.zero((), x.elem)
            p = self.op("compare", [x, z], (), "i1", "comparison_direction = #stablehlo<comparison_direction GT>")
        return self._branches("if", p, 2)

    def g_call(self) -> V | None:
        if not self.privates:
            return None
        f = self.pick(self.privates)
        args = [self.get(a.shape, a.elem, fresh=0.2) for a in f.params]
        for a in args:
            self.f.used.add(a.name)
        rt = [(r.shape, r.elem) for r in f.results]
        rhs = (f"func.call @{f.name}({', '.join(a.name for a in args)}) : "
               f"({', '.join(a.type for a in args)}) -> ({', '.join(r.type for r in f.results)})")
        return self.pick(self.define(rhs, rt))

    OPS = [
        ("g_unary", 8), ("g_binary", 10), ("g_select", 3), ("g_clamp", 2), ("g_compare", 3),
        ("g_convert", 3), ("g_complex", 1), ("g_transpose", 10), ("g_reshape", 6), ("g_broadcast", 5),
        ("g_reduce", 5), ("g_concatenate", 4), ("g_slice", 4), ("g_pad", 3), ("g_reverse", 3),
        ("g_dynamic_slice", 3), ("g_dynamic_update_slice", 3), ("g_iota", 2), ("g_constant", 2),
        ("g_dot", 6), ("g_sort", 3), ("g_gather", 3), ("g_scatter", 3), ("g_layout_constraint", 5),
        ("g_while", 4), ("g_case", 2), ("g_if", 2), ("g_call", 4),
    ]

    def random_op(self) -> V | None:
        names, weights = zip(*self.OPS)
        for _ in range(5):
            v = getattr(self, self.rng.choices(names, weights)[0])()
            if v is not None:
                return v
        return None

    # -- functions and the module ---------------------------------------------
    def function(self, name: str, is_main: bool, n_ops: int) -> _Func:
        f = _Func(name, is_main, scopes=[[]])
        self.f = f
        self.indent = 2
        self.depth = 0 if is_main else 1
        for _ in range(n_ops):
            self.random_op()
        pool = [v for v in f.scopes[0] if v not in f.params] or f.scopes[0]
        if not pool:
            pool = [self.get()]
        unused = [v for v in pool if v.name not in f.used]
        k = self.rng.randint(1, 3 if is_main else 2)
        res: list[V] = []
        for _ in range(k):
            src = unused if unused and self.chance(0.8) else pool
            v = src[-1 - min(int(self.rng.expovariate(0.5)), len(src) - 1)]
            if v in unused:
                unused.remove(v)
            res.append(v)
        if is_main and f.params and self.chance(0.1):
            res.append(self.pick(f.params))  # a parameter returned as is
        f.results = res
        self.f = None
        return f

    def layout_mode(self, rank: int) -> str | None:
        r = self.rng.random()
        if r < 0.45:
            return None
        if r < 0.6:
            return "auto"
        if r < 0.65:
            return "default"
        perm = list(range(rank))
        self.rng.shuffle(perm)
        return "{" + ",".join(map(str, perm)) + "}"

    def render(self, f: _Func) -> str:
        def attr(mode: str | None) -> str:
            return f' {{mhlo.layout_mode = "{mode}"}}' if mode is not None else ""

        if f.is_main:
            params = ", ".join(f"{p.name}: {p.type}{attr(self.layout_mode(p.rank))}" for p in f.params)
            results = ", ".join(f"{r.type}{attr(self.layout_mode(r.rank))}" for r in f.results)
            head = f"  func.func public @main({params}) -> ({results}) {{"
        else:
            params = ", ".join(f"{p.name}: {p.type}" for p in f.params)
            results = ", ".join(r.type for r in f.results)
            head = f"  func.func private @{f.name}({params}) -> ({results}) {{"
        ret = (f"    func.return {', '.join(r.name for r in f.results)} : "
               f"{', '.join(r.type for r in f.results)}")
        return "\n".join([head, *f.lines, ret, "  }"])

    def module(self) -> str:
        parts = []
        for i in range(self.rng.choices([0, 1, 2, 3], weights=[4, 3, 2, 1])[0]):
            f = self.function(f"f{i}", False, self.rng.randint(1, 4))
            self.privates.append(f)
            parts.append(self.render(f))
        main = self.function("main", True, self.rng.randint(3, 12))
        parts.append(self.render(main))
        return "module @fuzz {\n" + "\n".join(parts) + "\n}\n"


def _product(ranges):
    out = [()]
    for r in ranges:
        out = [t + (x,) for t in out for x in r]
    return out


def _shape_preserving_perms(shape: Shape) -> list[list[int]]:
    """Non-identity permutations that map the shape onto itself (rank <= 4)."""
    import itertools

    ident = list(range(len(shape)))
    return [list(p) for p in itertools.permutations(ident)
            if list(p) != ident and tuple(shape[i] for i in p) == tuple(shape)]


def generate_text(seed: int) -> tuple[str, str]:
    g = Gen(seed)
    text = g.module()
    mode = "free" if g.rng.random() < 0.2 else "default"
    return text, mode


_CTX = None


def verifies(text: str) -> str | None:
    """None when the module loads and verifies, else the loader's message."""
    global _CTX
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.model.errors import InputError

    if _CTX is None:
        _CTX = mlir.make_context()
    try:
        mlir.load(text.encode(), "fuzz.mlir", _CTX)
    except InputError as e:
        return str(e)
    return None


def generate(seed: int, verify: bool = True, max_tries: int = 20) -> Program:
    """The program for ``seed``; regenerates from a derived seed if it does not verify."""
    last = None
    for attempt in range(max_tries):
        text, mode = generate_text(seed if attempt == 0 else seed * 7919 + 104729 * attempt)
        if not verify:
            return Program(seed, text, mode, attempt + 1)
        last = verifies(text)
        if last is None:
            return Program(seed, text, mode, attempt + 1)
    raise RuntimeError(f"seed {seed}: no verifying program in {max_tries} tries; last error: {last}")


if __name__ == "__main__":
    p = generate(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    sys.stdout.write(f"// seed {p.seed}, entry layouts {p.entry_mode}, tries {p.tries}\n{p.text}")
