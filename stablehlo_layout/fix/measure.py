"""What XLA's layout assignment costs a program: its copies and their bytes, as XLA dumps them.

The one measure every number of ``fix`` comes from: compile the program
with the target's XLA (``xla.pipeline.compile_module``) and count the
``copy`` instructions of the module XLA's layout assignment returns, each
at its element count times its element size; on XLA:TPU at the bytes its
tiled layout occupies (the copy writes its padded tiles).  Counted from the
after-layout-assignment dump alone, so that anyone who compiles the same
program with the same XLA gets the same numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.errors import InputError
from stablehlo_layout.xla.gpu_deviceless import XlaCopy, copies_in
from stablehlo_layout.xla.pipeline import backend_of, compile_module, gpu_options

if TYPE_CHECKING:
    from jaxlib.mlir import ir

    from stablehlo_layout.targets.base import Target

_DIMS = re.compile(r"^([a-z][a-z0-9]*)\[([^\]]*)\]$")


@dataclass(frozen=True)
class Measured:
    """XLA's copies of one compiled program."""

    copies: int
    bytes: int
    items: tuple[XlaCopy, ...]
    before: str  # the module XLA's layout assignment received
    after: str  # the module it returned
    # Copies between layouts that differ only where size-1 dims sit: counted
    # above as XLA's, though they move no data (XLA turns them into bitcasts).
    moving_no_data: int = 0

    def to_json(self) -> dict[str, int]:
        return {"copies": self.copies, "bytes": self.bytes, "moving_no_data": self.moving_no_data}


def moves_no_data(copy: XlaCopy) -> bool:
    """Whether a copy's two layouts hold the elements in the same order (they differ in size-1 dims only)."""
    m = _DIMS.match(copy.shape)
    if m is None or copy.src is None or "?" in m.group(2):
        return False
    dims = tuple(int(d) for d in m.group(2).split(",") if d.strip())
    return len(copy.src) == len(copy.dst) == len(dims) and L.same_bytes(dims, copy.src, copy.dst)


def copy_bytes(copy: XlaCopy, tiled: bool) -> int:
    """Bytes one copy writes: its array's, padded to tiles on a tiling backend; 0 for a dynamic size."""
    m = _DIMS.match(copy.shape)
    if m is None:  # a tuple-shaped copy: XLA prints none after layout assignment
        return 0
    element = m.group(1)
    dims = tuple(int(d) for d in m.group(2).split(",") if d.strip()) if "?" not in m.group(2) else None
    if dims is None:
        return 0
    if tiled:
        from stablehlo_layout.targets.tpu_tiles import padded_bytes

        padded = padded_bytes(element, dims, copy.dst)  # minor_to_major, as tpu_tiles reads it
        if padded is not None:
            return padded
    return L.array_bytes(element, dims) or 0


class Measure:
    """Compiles programs for one target and counts XLA's copies; ``path`` names the input in errors."""

    def __init__(self, target: Target, path: str) -> None:
        self.backend = backend_of(target)
        self.options: dict[str, Any] = gpu_options(target)
        self.path = path
        self.tiled = self.backend == "xla-tpu"
        self.label = ""

    def __call__(self, module: ir.Module, quiet: bool = True) -> Measured:
        compiled = compile_module(module, self.path, self.backend, "default", quiet=quiet, **self.options)
        self.label = compiled.backend
        if compiled.after is None:
            raise InputError(self.path, f"{compiled.backend} dumped no module after layout assignment")
        items = tuple(copies_in(compiled.after))
        return Measured(len(items), sum(copy_bytes(c, self.tiled) for c in items), items,
                        compiled.before, compiled.after,
                        # On a tiling backend two such layouts may still tile differently.
                        0 if self.tiled else sum(moves_no_data(c) for c in items))
