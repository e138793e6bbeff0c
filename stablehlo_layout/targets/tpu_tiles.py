"""XLA:TPU's tiles and the entry layouts PJRT picks for TPU arrays.

XLA:TPU's pass is closed source: these rules are read off its dumps
(docs/XLA.md, "XLA:TPU"; docs/TPU-OBSERVED.md sections 3 and 4, with the
dumps under tests/unit/xla_tpu_dumps/), and ``tests/differential/tpu_tiles_check.py``
holds them against every array of those dumps.

A tile list is XLA's: the first tile covers the most minor physical dims
(``(8,128)``: 8 rows of the second-minor dim by 128 of the minor dim); a
second ``(k,1)`` packs k rows of a sub-32-bit type into one 32-bit word.
"""

from __future__ import annotations

import functools
import itertools
import math

Tile = tuple[int, ...]
Tiles = tuple[Tile, ...]

# Bits per element as XLA:TPU stores them: pred takes a byte.  Only these
# widths were seen in the dumps (8, 16 and 32 bits); other types get no
# tiles from us rather than a guess (``tiles`` returns None).
BITS: dict[str, int] = {
    "pred": 8, "s8": 8, "u8": 8, "f8e4m3fn": 8, "f8e5m2": 8, "f8e4m3b11fnuz": 8,
    "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32,
}

# The rows a rank >= 2 tile may have, smallest first (the sublanes of a
# TPU vector register are 8 of 32-bit words).
_ROWS = (1, 2, 4, 8)
_LANES = 128
# A rank-1 tile grows with the array up to this many elements.
_RANK1_MOST = 1024
# Entry arrays of 8-bit types whose second-minor dim is a multiple of this
# get (32,128) tiles (four 8-row tiles packed into words).
_ENTRY_8BIT_ROWS = 32


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _packing(bits: int) -> Tiles:
    return () if bits == 32 else ((32 // bits, 1),)


@functools.lru_cache(maxsize=4096)
def tiles(element: str, dims: tuple[int, ...], m2m: tuple[int, ...], entry: bool = False) -> Tiles | None:
    """The tiles XLA:TPU gives an array of this type, shape and minor_to_major.

    Rank 0: ``T(128·k)`` with k = 32 / bits.  Rank 1 of n elements:
    ``T(max(128·k, min(1024, next power of two >= n)))``, then ``(128)(k,1)``
    below 32 bits.  Rank >= 2: ``T(r,128)`` with r the smallest of 1, 2, 4, 8
    that is at least k and at least the second-minor physical dim (8 when
    that is larger), then ``(k,1)`` below 32 bits.  ``entry``: an entry
    parameter or result of an 8-bit type whose second-minor dim is a
    multiple of 32 gets ``T(32,128)(4,1)`` instead (the instruction inside
    keeps ``T(8,128)(4,1)``).  None for a type no dump has shown, and for an
    array of no elements, which XLA:TPU prints untiled (bf16[1,16,2,0]{3,2,1,0}).
    """
    bits = BITS.get(element)
    if bits is None or any(d is None or d == 0 for d in dims):
        return None
    pack = 32 // bits
    if not dims:
        return ((_LANES * pack,),)
    if len(dims) == 1:
        t = max(_LANES * pack, min(_RANK1_MOST, _pow2_ceil(dims[0])))
        return ((t,),) if bits == 32 else ((t,), (_LANES,), (pack, 1))
    second = dims[m2m[1]]
    if entry and bits == 8 and second % _ENTRY_8BIT_ROWS == 0:
        return ((_ENTRY_8BIT_ROWS, _LANES),) + _packing(bits)
    rows = next(r for r in _ROWS if r >= pack and (r >= second or r == _ROWS[-1]))
    return ((rows, _LANES),) + _packing(bits)


def tiles_text(t: Tiles) -> str:
    """``T(8,128)(2,1)``: the tiling field of XLA's layout text."""
    return "T" + "".join("(" + ",".join(map(str, tile)) + ")" for tile in t)


def padded_elements(dims: tuple[int, ...], m2m: tuple[int, ...], t: Tiles) -> int:
    """Elements the array takes once padded to whole tiles of its first tile."""
    if not dims:
        return t[0][0]
    first = t[0]
    n = 1
    for k, d in enumerate(m2m):
        size = dims[d]
        if k < len(first):
            step = first[len(first) - 1 - k]
            size = math.ceil(size / step) * step
        n *= size
    return n


def padded_bytes(element: str, dims: tuple[int, ...], m2m: tuple[int, ...]) -> int | None:
    """Bytes the array takes in HBM, padded to its tiles (None: no tile rule for the type)."""
    t = tiles(element, dims, m2m)
    if t is None:
        return None
    return padded_elements(dims, m2m, t) * BITS[element] // 8


def default_entry_layout(element: str, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """The minor_to_major PJRT fixes for an entry array the program leaves to it:
    ``least_padded`` under the entry tiles."""
    return least_padded(element, dims, entry=True)


@functools.lru_cache(maxsize=4096)
def least_padded(element: str, dims: tuple[int, ...], entry: bool = False,
                 minor_pair_has: int | None = None) -> tuple[int, ...] | None:
    """The minor_to_major whose array pads least under its tiles (``entry``: an entry array's).

    Among all orders, the one whose array pads to the fewest elements; a tie
    goes to the lexicographically greatest minor_to_major (row-major beats
    any other order; otherwise the dims above the two minor ones stay in
    row-major order).  ``minor_pair_has``: only orders whose two minor
    dims include this one.  None for a type no dump has shown, and for an
    array of no elements (nothing pads; the caller's default stands).
    """
    if element not in BITS or any(d is None or d == 0 for d in dims):
        return None
    rank = len(dims)
    if rank < 2:
        return tuple(range(rank - 1, -1, -1))
    best: tuple[int, tuple[int, ...]] | None = None
    # Only the two minor dims are tiled: the cost depends on which two they
    # are and in which order, and the tie rule orders the rest row-major.
    for minor, second in itertools.permutations(range(rank), 2):
        if minor_pair_has is not None and minor_pair_has not in (minor, second):
            continue
        rest = tuple(d for d in range(rank) if d not in (minor, second))
        perm = (minor, second) + tuple(sorted(rest, reverse=True))
        t = tiles(element, dims, perm, entry=entry)
        assert t is not None
        cost = padded_elements(dims, perm, t)
        if best is None or cost < best[0] or (cost == best[0] and perm > best[1]):
            best = (cost, perm)
    assert best is not None
    return best[1]
