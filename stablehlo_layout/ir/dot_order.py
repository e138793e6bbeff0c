"""Dots written with their operands the other way round, where the program reads the result transposed.

``dot_general`` produces [batch..., lhs free..., rhs free...].  A program that
wants [batch..., rhs free..., lhs free...] (``einsum('bij,jk->kbi')``,
``einsum('ij,bjk->bki')``) computes the dot and transposes it, and XLA's dot
kernels write their result in the dot's own order, so the transpose moves
every element (a copy in XLA's layout).  The same dot with its operands
swapped computes the same products and sums and writes the other order: here
such a dot is rewritten swapped, with a transpose back to its old order that
``transposes.sink_transposes`` carries to the program's own transpose, where
the two fold.  Whether that spares XLA a copy is XLA's to say (``fix``
compiles it); this module only makes the rewrite and finds where it may help.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from stablehlo_layout.ir.transposes import ELEMENTWISE, attributes_of, dims_of, is_static, make_transpose, numbered

# How many order-free ops a dot's result may pass before the transpose it meets.
_REACH = 4


@dataclass(frozen=True)
class DotSite:
    """A dot of the program whose result reaches a transpose through ops that ignore dimension order."""

    index: int  # its position among the module's dot_generals, in program order
    location: str
    shape: tuple[int, ...]  # its result, as written
    swapped: tuple[int, ...]  # its result with the operands swapped


def _users(value: ir.Value) -> Iterator[ir.Operation]:
    for use in value.uses:
        owner = use.owner
        op = owner.operation if hasattr(owner, "operation") else owner
        if isinstance(op, ir.Operation):
            yield op


def _reaches_transpose(value: ir.Value, depth: int = _REACH) -> bool:
    for user in _users(value):
        if user.name == "stablehlo.transpose":
            return True
        if depth > 0 and user.name in ELEMENTWISE and len(user.results) == 1 and \
                _reaches_transpose(user.results[0], depth - 1):
            return True
    return False


def _swappable(op: ir.Operation) -> bool:
    # An ``algorithm`` names lhs and rhs precisions and component counts apart: left as written.
    return "algorithm" not in attributes_of(op) and all(is_static(v) for v in (*op.operands, *op.results))


def _swapped_order(op: ir.Operation) -> list[int]:
    """The swapped dot's result dims as dims of the written one: batch, then rhs's free dims, then lhs's."""
    dn = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    batch = len(dn.lhs_batching_dimensions)
    lhs_free = len(dims_of(op.operands[0])) - batch - len(dn.lhs_contracting_dimensions)
    rhs_free = len(dims_of(op.operands[1])) - batch - len(dn.rhs_contracting_dimensions)
    return [*range(batch), *range(batch + lhs_free, batch + lhs_free + rhs_free), *range(batch, batch + lhs_free)]


def dots(module: ir.Module) -> list[DotSite]:
    """The dots whose operands swapped might spare a transpose of their result."""
    out: list[DotSite] = []
    for n, op in numbered(module, "stablehlo.dot_general"):
        if _swappable(op) and _reaches_transpose(op.results[0]):
            shape = dims_of(op.results[0])
            out.append(DotSite(n, str(op.location), tuple(shape), tuple(shape[d] for d in _swapped_order(op))))
    return out


def swap_operands(module: ir.Module, only: set[int]) -> int:
    """Rewrite the dots whose index is in ``only`` with their operands swapped, in place.

    Each new dot is followed by the transpose that restores the old result
    order, so the program computes what it did; ``sink_transposes`` then
    moves it.  Returns how many dots changed.
    """
    changed = 0
    for n, op in numbered(module, "stablehlo.dot_general"):
        if n not in only or not _swappable(op):
            continue
        lhs, rhs, out = op.operands[0], op.operands[1], op.results[0]
        dn = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
        shape = dims_of(out)
        order = _swapped_order(op)
        # The old result's dim order[k] is the swapped result's dim k: the transpose back reads it there.
        back = [0] * len(order)
        for k, d in enumerate(order):
            back[d] = k
        with ir.InsertionPoint(op), op.location:
            swapped_type = ir.RankedTensorType.get([shape[d] for d in order], ir.RankedTensorType(out.type).element_type)
            attributes = attributes_of(op)
            attributes["dot_dimension_numbers"] = stablehlo.DotDimensionNumbers.get(
                lhs_batching_dimensions=list(dn.rhs_batching_dimensions),
                rhs_batching_dimensions=list(dn.lhs_batching_dimensions),
                lhs_contracting_dimensions=list(dn.rhs_contracting_dimensions),
                rhs_contracting_dimensions=list(dn.lhs_contracting_dimensions))
            if "precision_config" in attributes:
                precisions = ir.ArrayAttr(attributes["precision_config"])
                attributes["precision_config"] = ir.ArrayAttr.get([precisions[1], precisions[0]])
            dot = ir.Operation.create("stablehlo.dot_general", results=[swapped_type], operands=[rhs, lhs],
                                      attributes=attributes, loc=op.location)
            restored = make_transpose(dot.results[0], back, op.location)
        out.replace_all_uses_with(restored)
        op.erase()
        changed += 1
    return changed
