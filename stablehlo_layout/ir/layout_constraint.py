"""A layout constraint after a slice: ``stablehlo.custom_call @LayoutConstraint``, what JAX's
``with_layout_constraint`` writes.

A slice keeps its operand's layout, so when a consumer of the slice wants
another layout, XLA's propagation carries that layout back through the slice
and copies the whole sliced array before it (XLA:CPU copies a 1024x1024
column-major parameter to row-major to read its first 8 columns into a dot).
Pinned to the layout the array already has, the slice runs in place and the
copy moves after it, where it moves only the slice.  This module finds the
slices and writes the constraint; whether it spares bytes is XLA's to say
(``fix`` compiles it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import prod

from jaxlib.mlir import ir

from stablehlo_layout.ir.transposes import dims_of, is_static, ops_of
from stablehlo_layout.model.layout import Layout

SLICING = frozenset({"stablehlo.slice", "stablehlo.dynamic_slice"})


@dataclass(frozen=True)
class SliceSite:
    """A slice of the program that reads fewer elements than its operand holds."""

    index: int  # its position among the module's slices (both kinds), in program order
    op: str  # stablehlo.slice or stablehlo.dynamic_slice
    location: str
    operand: tuple[int, ...]
    result: tuple[int, ...]


def _slicing(module: ir.Module) -> Iterator[tuple[int, ir.Operation]]:
    return enumerate(op for op in ops_of(module) if op.name in SLICING)


def slices(module: ir.Module) -> list[SliceSite]:
    out = []
    for n, op in _slicing(module):
        source, result = op.operands[0], op.results[0]
        if not (is_static(source) and is_static(result)):
            continue
        shape, sliced = tuple(dims_of(source)), tuple(dims_of(result))
        if prod(sliced) < prod(shape):
            out.append(SliceSite(n, op.name, str(op.location), shape, sliced))
    return out


def _layouts_attr(layout: Layout) -> ir.Attribute:
    """``[dense<[...]> : tensor<Nxindex>]``, as JAX writes a custom call's operand and result layouts."""
    return ir.Attribute.parse(f"[dense<[{', '.join(map(str, layout))}]> : tensor<{len(layout)}xindex>]")


def constrain_slices(module: ir.Module, wanted: dict[int, Layout]) -> int:
    """After each slice whose index is in ``wanted``, a ``@LayoutConstraint`` of its result to that
    layout (minor_to_major), which every former reader of the slice now reads; in place.
    Returns how many slices got one."""
    changed = 0
    with module.context:
        for n, op in _slicing(module):
            layout = wanted.get(n)
            out = op.results[0]
            if layout is None or len(layout) != len(dims_of(out)):
                continue
            readers = [(use.owner, use.operand_number) for use in out.uses]
            with ir.InsertionPoint(op), op.location:
                attrs = _layouts_attr(layout)
                constraint = ir.Operation.create(
                    "stablehlo.custom_call", results=[out.type], operands=[out], loc=op.location,
                    attributes={"call_target_name": ir.StringAttr.get("LayoutConstraint"),
                                "operand_layouts": attrs, "result_layouts": attrs})
            constraint.move_after(op)
            for owner, i in readers:
                owner.operands[i] = constraint.results[0]
            changed += 1
    return changed
