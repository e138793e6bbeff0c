"""Layouts as plain tuples, and the permutation algebra XLA's pass relies on.

A layout is a ``minor_to_major`` tuple: a permutation of ``range(rank)`` whose
first entry is the fastest-varying dimension.  JAX's ``major_to_minor`` is the
reverse; the helpers that speak JAX say so in their names.

Layouts are interned (``intern``) so the engine can compare them by identity
cheaply and so that a module with 100k values holds a handful of tuples.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

Layout = tuple[int, ...]
# A shape is a tuple of extents; ``None`` stands for a dynamic extent.
Dims = tuple[int | None, ...]

_INTERNED: dict[Layout, Layout] = {}
_DEFAULTS: list[Layout] = []


def intern(layout: Iterable[int]) -> Layout:
    t = tuple(layout)
    return _INTERNED.setdefault(t, t)


def default_layout(rank: int) -> Layout:
    """Descending minor_to_major: dimension 0 is most major (row-major)."""
    while len(_DEFAULTS) <= rank:
        r = len(_DEFAULTS)
        _DEFAULTS.append(intern(range(r - 1, -1, -1)))
    return _DEFAULTS[rank]


def is_permutation(layout: Sequence[int], rank: int) -> bool:
    return len(layout) == rank and sorted(layout) == list(range(rank))


def inverse(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def to_major_to_minor(layout: Layout) -> tuple[int, ...]:
    return tuple(reversed(layout))


def from_major_to_minor(major_to_minor: Sequence[int]) -> Layout:
    return intern(reversed(tuple(major_to_minor)))


# --- transpose -------------------------------------------------------------
# stablehlo.transpose: result dim i is operand dim ``perm[i]``.


def transpose_operand_layout(perm: Sequence[int], output: Layout) -> Layout:
    """The operand layout that makes the transpose a bitcast of ``output``."""
    return intern(perm[d] for d in output)


def transpose_output_layout(perm: Sequence[int], operand: Layout) -> Layout:
    """The output layout that makes the transpose a bitcast of ``operand``."""
    inv = inverse(perm)
    return intern(inv[d] for d in operand)


def transpose_is_bitcast(operand: Layout, output: Layout, perm: Sequence[int]) -> bool:
    return len(operand) == len(output) and all(
        operand[i] == perm[output[i]] for i in range(len(output))
    )


# --- broadcast -------------------------------------------------------------


def broadcast_operand_layout(output: Layout, broadcast_dims: Sequence[int]) -> Layout:
    """Output layout restricted to the broadcast dimensions, renumbered.

    Operand dimension ``j`` lands on output dimension ``broadcast_dims[j]``;
    keeping the output's relative order is what XLA requires of a broadcast.
    """
    where = {d: j for j, d in enumerate(broadcast_dims)}
    return intern(where[d] for d in output if d in where)


# --- reduce ----------------------------------------------------------------


def reduce_output_layout(operand: Layout, reduced_dims: Sequence[int]) -> Layout:
    """Operand layout with the reduced dimensions deleted, renumbered."""
    reduced = set(reduced_dims)
    kept = [d for d in range(len(operand)) if d not in reduced]
    new_index = {d: i for i, d in enumerate(kept)}
    return intern(new_index[d] for d in operand if d not in reduced)


def reduce_operand_layout(
    output: Layout, reduced_dims: Sequence[int], operand_rank: int
) -> Layout:
    """Reduced dims most minor (last listed most minor), kept dims in output order."""
    reduced = set(reduced_dims)
    kept = [d for d in range(operand_rank) if d not in reduced]
    return intern(list(reversed(list(reduced_dims))) + [kept[d] for d in output])


# --- reshape ---------------------------------------------------------------


def true_num_dims(dims: Dims) -> int:
    return sum(1 for d in dims if d != 1)


def reshape_derivable(in_dims: Dims, out_dims: Dims) -> bool:
    """Whether XLA derives a layout across a reshape from ``in_dims`` to ``out_dims``.

    Both of XLA's derivations (ChooseOperandLayoutFromOutputLayout and
    ChooseOutputLayoutFromOperandLayout) give up on a reshape between two
    effectively rank-1 shapes; a dynamic extent leaves nothing to align.
    """
    if any(d is None for d in in_dims) or any(d is None for d in out_dims):
        return False
    return not (true_num_dims(in_dims) == 1 and true_num_dims(out_dims) == 1)


def same_bytes(dims: Dims, a: Layout, b: Layout) -> bool:
    """Whether an array of ``dims`` holds the same bytes laid out as ``a`` and as
    ``b``: the two orders agree once size-1 dims are dropped, so a copy from
    one to the other moves nothing (XLA turns it into a bitcast later)."""
    return [d for d in a if dims[d] != 1] == [d for d in b if dims[d] != 1]


def reshape_only_size1_change(in_dims: Dims, out_dims: Dims) -> bool:
    """XLA's ReshapeMerelyInsertsOrDeletes1SizedDimensions: the non-1 extents agree in order."""
    return [d for d in in_dims if d != 1] == [d for d in out_dims if d != 1]


def _linear(index: Sequence[int], dims: Sequence[int], layout: Layout) -> int:
    scale, offset = 1, 0
    for d in layout:
        offset += index[d] * scale
        scale *= dims[d]
    return offset


def _delinear(linear: int, dims: Sequence[int]) -> list[int]:
    index = [0] * len(dims)
    for d in range(len(dims) - 1, -1, -1):
        if dims[d]:
            index[d] = linear % dims[d]
            linear //= dims[d]
    return index


def reshape_is_bitcast(
    in_dims: Sequence[int], in_layout: Layout, out_dims: Sequence[int], out_layout: Layout
) -> bool:
    """True when reinterpreting the bytes performs the reshape.

    Every unit step along a non-trivial dimension on one side must land at the
    same physical offset as the logically-equal index on the other side.
    """
    if math.prod(in_dims) != math.prod(out_dims):
        return False
    if math.prod(in_dims) == 0:
        return True

    def one_way(a: Sequence[int], al: Layout, b: Sequence[int], bl: Layout) -> bool:
        row_major_a = default_layout(len(a))
        for dim, extent in enumerate(a):
            if extent <= 1:
                continue
            unit = [0] * len(a)
            unit[dim] = 1
            logical = _linear(unit, a, row_major_a)
            b_index = _delinear(logical, b)
            if _linear(unit, a, al) != _linear(b_index, b, bl):
                return False
        return True

    return one_way(in_dims, in_layout, out_dims, out_layout) and one_way(
        out_dims, out_layout, in_dims, in_layout
    )


def common_factors(a: Sequence[int], b: Sequence[int]) -> list[tuple[int, int]]:
    """Boundaries (i, j) where prod(a[:i]) == prod(b[:j]); callers drop size-1 dims."""
    if math.prod(a) == 0 or math.prod(b) == 0:
        return [(0, 0), (len(a), len(b))]
    bounds = [(0, 0)]
    i = j = 0
    pa = pb = 1
    while i < len(a) or j < len(b):
        if (pa <= pb and i < len(a)) or j >= len(b):
            pa *= a[i]
            i += 1
        else:
            pb *= b[j]
            j += 1
        if pa == pb and (i, j) != bounds[-1]:
            bounds.append((i, j))
    if bounds[-1] != (len(a), len(b)):
        bounds.append((len(a), len(b)))
    return bounds


def align_layouts(
    in_dims: Sequence[int], in_layout: Layout, out_dims: Sequence[int]
) -> Layout | None:
    """The output layout that makes ``reshape(in -> out)`` a bitcast, if any.

    XLA's AlignLayouts: size-1 dims are dropped, matched, then appended most
    major in descending order (descending layouts tend to need fewer copies).
    Large modules reshape the same shapes over and over, so answers are cached.
    """
    return _align_layouts(tuple(in_dims), tuple(in_layout), tuple(out_dims))


@functools.lru_cache(maxsize=65536)
def _align_layouts(in_dims: tuple[int, ...], in_layout: Layout, out_dims: tuple[int, ...]) -> Layout | None:
    if 1 in in_dims or 1 in out_dims:
        keep_in = [d for d, e in enumerate(in_dims) if e != 1]
        renum = {d: i for i, d in enumerate(keep_in)}
        simple_in_layout = tuple(renum[d] for d in in_layout if d in renum)
        keep_out = [d for d, e in enumerate(out_dims) if e != 1]
        simple = _align_layouts(
            tuple(in_dims[d] for d in keep_in), simple_in_layout, tuple(out_dims[d] for d in keep_out)
        )
        if simple is None:
            return None
        layout = [keep_out[d] for d in simple]
        layout += [d for d in range(len(out_dims) - 1, -1, -1) if out_dims[d] == 1]
        return intern(layout)

    factors = common_factors(in_dims, out_dims)
    in_to_factor = [0] * len(in_dims)
    position = {d: p for p, d in enumerate(in_layout)}
    for f in range(len(factors) - 1):
        start, end = factors[f][0], factors[f + 1][0]
        if start == end:
            continue
        physical = position[start]
        in_to_factor[start] = f
        for d in range(start + 1, end):
            physical -= 1
            if physical < 0 or in_layout[physical] != d:
                return None
            in_to_factor[d] = f

    out_layout: list[int] = []
    minor = 0
    while len(out_layout) < len(out_dims):
        if minor >= len(in_layout):
            return None
        f = in_to_factor[in_layout[minor]]
        (in_start, out_start), (in_end, out_end) = factors[f], factors[f + 1]
        out_layout.extend(range(out_end - 1, out_start - 1, -1))
        minor += max(in_end - in_start, 1)
    # By construction the reshape is a bitcast of the result (XLA CHECKs it;
    # the unit tests check it exhaustively).
    return intern(out_layout)


# --- XLA shape strings -----------------------------------------------------

# MLIR element type spelling -> XLA primitive type spelling.
_XLA_ELEMENT = {
    "i1": "pred",
    "i2": "s2", "i4": "s4", "i8": "s8", "i16": "s16", "i32": "s32", "i64": "s64",
    "ui2": "u2", "ui4": "u4", "ui8": "u8", "ui16": "u16", "ui32": "u32", "ui64": "u64",
    "si8": "s8", "si16": "s16", "si32": "s32", "si64": "s64",
    "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64",
    "f8E5M2": "f8e5m2", "f8E4M3FN": "f8e4m3fn", "f8E4M3B11FNUZ": "f8e4m3b11fnuz",
    "f8E5M2FNUZ": "f8e5m2fnuz", "f8E4M3FNUZ": "f8e4m3fnuz", "f8E4M3": "f8e4m3",
    "f8E3M4": "f8e3m4", "f4E2M1FN": "f4e2m1fn", "f8E8M0FNU": "f8e8m0fnu",
    "complex<f32>": "c64", "complex<f64>": "c128",
    "index": "s64",
}
_BYTES = {
    "pred": 1, "s2": 1, "s4": 1, "s8": 1, "s16": 2, "s32": 4, "s64": 8,
    "u2": 1, "u4": 1, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16,
}


def xla_element_type(mlir_element: str) -> str:
    """XLA's name for an MLIR element type; unknown types keep a readable name."""
    known = _XLA_ELEMENT.get(mlir_element)
    if known is not None:
        return known
    if mlir_element.startswith("!quant.uniform"):
        storage = re.match(r"!quant\.uniform<(\w+)", mlir_element)
        if storage:
            return _XLA_ELEMENT.get(storage.group(1), storage.group(1))
    return mlir_element


def element_bytes(xla_element: str) -> int:
    if xla_element.startswith("f8") or xla_element.startswith("f4"):
        return 1
    return _BYTES.get(xla_element, 4)


def array_bytes(xla_element: str, dims: Dims) -> int | None:
    """Bytes an array of this shape occupies; None when a dimension is dynamic.

    The one place bytes are counted: copy costs, fixes' deltas and the CPU
    target's alignment rule all read it.
    """
    return _array_bytes(xla_element, tuple(dims))


# Explain counts the bytes of every copy after each what-if rerun: a module
# has thousands of copies and a few hundred shapes.  A cache of values.
@functools.lru_cache(maxsize=4096)
def _array_bytes(xla_element: str, dims: Dims) -> int | None:
    if any(d is None for d in dims):
        return None
    return math.prod(dims) * element_bytes(xla_element)  # type: ignore[arg-type]


def format_layout(layout: Layout, tiling: str = "") -> str:
    """``{1,0}``, or with XLA's layout fields after a colon: ``{1,0:T(8,128)}``, ``{:T(128)}``."""
    return "{" + ",".join(map(str, layout)) + (":" + tiling if tiling else "") + "}"


def parse_layout(text: str) -> Layout:
    """Parse ``{1,0}`` (tiling after ``:`` is accepted and ignored)."""
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise ValueError(f"layout {text!r} is not of the form {{d0,d1,...}}")
    body = s[1:-1].split(":", 1)[0].strip()
    if not body:
        return ()
    try:
        return intern(int(x) for x in body.split(","))
    except ValueError:
        raise ValueError(f"layout {text!r} has a non-integer entry") from None


@dataclass(frozen=True, slots=True)
class ArrayShape:
    element: str  # XLA spelling: f32, s32, pred, ...
    dims: Dims
    layout: Layout | None = None
    # The layout's fields after minor_to_major as XLA prints them
    # (``T(8,128)(2,1)`` on TPU); a scalar with tiles prints ``{:T(128)}``.
    tiling: str = ""

    def __str__(self) -> str:
        dims = ",".join("?" if d is None else str(d) for d in self.dims)
        text = f"{self.element}[{dims}]"
        if self.layout is not None and (self.dims or self.tiling):
            text += format_layout(self.layout, self.tiling)
        return text


@dataclass(frozen=True, slots=True)
class TupleShape:
    elements: tuple["ArrayShape | TupleShape", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


Shape = ArrayShape | TupleShape

_ARRAY = re.compile(r"\s*([a-z][a-z0-9]*)\[([^\]]*)\](\{[^}]*\})?\s*")


def parse_shape(text: str) -> Shape:
    """Parse an XLA shape string such as ``f32[16,4]{0,1}`` or ``(f32[], s32[2])``."""
    shape, rest = _parse_shape(text, 0)
    if text[rest:].strip():
        raise ValueError(f"trailing text in shape {text!r}")
    return shape


def _parse_shape(text: str, pos: int) -> tuple[Shape, int]:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos < len(text) and text[pos] == "(":
        pos += 1
        elements: list[Shape] = []
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos < len(text) and text[pos] == ")":
                return TupleShape(tuple(elements)), pos + 1
            part, pos = _parse_shape(text, pos)
            elements.append(part)
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos < len(text) and text[pos] == ",":
                pos += 1
            elif pos < len(text) and text[pos] == ")":
                return TupleShape(tuple(elements)), pos + 1
            else:
                raise ValueError(f"malformed tuple shape {text!r}")
    m = _ARRAY.match(text, pos)
    if not m:
        raise ValueError(f"malformed shape {text[pos:]!r}")
    element, dims_text, layout_text = m.groups()
    dims: list[int | None] = []
    for d in filter(None, (x.strip() for x in dims_text.split(","))):
        if d in ("?", "<=?"):
            dims.append(None)
        else:
            dims.append(int(d.lstrip("<=")))
    layout = parse_layout(layout_text) if layout_text else None
    if layout is not None and layout and not is_permutation(layout, len(dims)):
        raise ValueError(f"layout {layout_text} is not a permutation of rank {len(dims)}")
    return ArrayShape(element, tuple(dims), layout), m.end()


def format_shape(shapes: Sequence[ArrayShape]) -> str:
    """One shape prints bare; several print as XLA's tuple form."""
    if len(shapes) == 1:
        return str(shapes[0])
    return str(TupleShape(tuple(shapes)))
