"""XLA:TPU's layouts for convolutions, as its dumps show them (TPU-OBSERVED §5).

A convolution on TPU runs with its spatial dimensions most major, in order
(spatial dimension 0 most major), and two dimensions in the minor, tiled
pair: batch and feature for its input and output, input and output feature
for its kernel.  Of the two orders of that pair, the pass picks the one whose
array pads least under the ``(8,128)`` tiles (``tpu_tiles``); on a tie the
feature dimension is minor for input and output, and the kernel's
higher-numbered dimension is minor.

The result always takes that layout.  An operand that already comes in a
layout of the same shape (spatial dims major and in order, the pair minor, in
either order) is read as it comes: a pinned ``{0,1,3,2}`` NCHW input with a
small batch is not copied, though ``{1,0,3,2}`` would pad less.  Any other
operand is copied to the preferred layout.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Sequence

from stablehlo_layout.targets import tpu_tiles

if TYPE_CHECKING:
    from stablehlo_layout.model.layout import Dims


def pads(element: str, dims: "Dims", m2m: tuple[int, ...]) -> int:
    """Elements ``dims`` takes in ``m2m`` once padded to whole tiles (0: unknown type or dims)."""
    return _pads(element, tuple(dims), tuple(m2m))


# Every dot of a large module asks this of its result, of a few dozen shapes.
@functools.lru_cache(maxsize=4096)
def _pads(element: str, dims: "Dims", m2m: tuple[int, ...]) -> int:
    if any(d is None for d in dims):
        return 0
    t = tpu_tiles.tiles(element, dims, m2m)
    return 0 if t is None else tpu_tiles.padded_elements(dims, m2m, t)  # type: ignore[arg-type]


def conv_layout(element: str, dims: "Dims", pair: tuple[int, int], spatial: Sequence[int]) -> tuple[int, ...]:
    """The layout a convolution wants for one array: ``spatial`` most major in
    order, then ``pair`` in the order that pads least; on a tie ``pair[0]``
    is minor."""
    return _conv_layout(element, tuple(dims), pair, tuple(spatial))


# A large program has thousands of dots of a few dozen shapes, asked every round.
@functools.lru_cache(maxsize=4096)
def _conv_layout(element: str, dims: "Dims", pair: tuple[int, int], spatial: tuple[int, ...]) -> tuple[int, ...]:
    above = tuple(reversed(spatial))
    a, b = pair
    first, second = (a, b) + above, (b, a) + above
    pa, pb = pads(element, dims, first), pads(element, dims, second)
    return second if pb < pa else first


def fits(layout: Sequence[int], pair: tuple[int, int], spatial: Sequence[int]) -> bool:
    """Whether ``layout`` has the shape of a convolution layout: the pair minor
    (either order) and the spatial dims above it, dimension 0 most major."""
    return set(layout[:2]) == set(pair) and tuple(layout[2:]) == tuple(reversed(tuple(spatial)))


def roles(c: dict, ranks: tuple[int, int, int]) -> tuple[tuple[tuple[int, int], Sequence[int]], ...]:
    """(minor pair with the tie's minor first, spatial dims) of input, kernel and output."""
    ko, ki = c["kernel_output_feature"], c["kernel_input_feature"]
    kernel_pair = (ko, ki) if ko > ki else (ki, ko)
    return (((c["input_feature"], c["input_batch"]), c["input_spatial"]),
            (kernel_pair, c["kernel_spatial"]),
            ((c["output_feature"], c["output_batch"]), c["output_spatial"]))
