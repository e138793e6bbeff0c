"""Convolutions rewritten to another dimension order, with their transposes moved out of the way.

A convolution written NCHW / OIHW is not what XLA:CPU's Eigen kernels run:
XLA canonicalizes it to NHWC / HWIO with transposes around it, and those
transposes become copies (XLA:GPU and XLA:TPU have their own native orders
per generation and type).  Rewriting the convolution in the program does
not by itself remove them: the transposes only move into the program.  What
removes them is that they then meet (``transposes.sink_transposes``): a
convolution's result transposed back to NCHW, through a ReLU or a bias add,
into the next convolution that transposes it to NHWC again.

Nothing here decides whether a rewrite helps: ``fix`` compiles the rewritten
program with XLA and keeps it only when XLA makes fewer copy bytes.  The
rewrites keep what the program computes: a convolution in another order
does the same multiply-adds on the same elements (XLA's kernels may sum in
another order: results agree within float rounding), a moved transpose
moves no arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from stablehlo_layout.ir.transposes import (attributes_of, dims_of, inverted, is_identity, is_static, make_transpose,
                                             numbered, permuted_type)

# The two orders convolutions are written in.  "channels-last": input and
# output [batch, spatial..., feature], kernel [spatial..., in, out] (NHWC /
# HWIO, what XLA:CPU runs); "channels-first": [batch, feature, spatial...],
# kernel [out, in, spatial...] (NCHW / OIHW).
ORDERS = ("channels-last", "channels-first")


@dataclass(frozen=True)
class ConvSite:
    """One convolution of the program and the order it is written in."""

    index: int  # its position among the module's convolutions, in program order
    location: str
    order: str | None  # one of ORDERS, or None for another arrangement


def _layouts(dn: stablehlo.ConvDimensionNumbers, rank: int, order: str) -> tuple[list[int], list[int], list[int]]:
    """The permutations that take the input, kernel and output from ``dn``'s arrangement to ``order``'s."""
    sp, ksp, osp = list(dn.input_spatial_dimensions), list(dn.kernel_spatial_dimensions), \
        list(dn.output_spatial_dimensions)
    if order == "channels-last":
        return ([dn.input_batch_dimension, *sp, dn.input_feature_dimension],
                [*ksp, dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension],
                [dn.output_batch_dimension, *osp, dn.output_feature_dimension])
    return ([dn.input_batch_dimension, dn.input_feature_dimension, *sp],
            [dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension, *ksp],
            [dn.output_batch_dimension, dn.output_feature_dimension, *osp])


def _numbers(rank: int, order: str) -> stablehlo.ConvDimensionNumbers:
    spatial = list(range(rank - 2))
    if order == "channels-last":
        return stablehlo.ConvDimensionNumbers.get(0, rank - 1, [1 + s for s in spatial], rank - 2, rank - 1,
                                                  spatial, 0, rank - 1, [1 + s for s in spatial])
    return stablehlo.ConvDimensionNumbers.get(0, 1, [2 + s for s in spatial], 1, 0, [2 + s for s in spatial],
                                              0, 1, [2 + s for s in spatial])


def convolutions(module: ir.Module) -> list[ConvSite]:
    """The module's convolutions in program order, each with the order it is written in."""
    out: list[ConvSite] = []
    for n, op in numbered(module, "stablehlo.convolution"):
        dn = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        rank = len(dims_of(op.operands[0]))
        order = next((o for o in ORDERS if all(is_identity(p) for p in _layouts(dn, rank, o))), None)
        out.append(ConvSite(n, str(op.location), order))
    return out


def rewrite_convolutions(module: ir.Module, order: str, only: set[int] | None = None) -> int:
    """Rewrite every convolution (or those whose index is in ``only``) to ``order``, in place.

    Each gets transposes on its operands and one on its result, so that the
    program computes what it did; ``sink_transposes`` then moves them.
    Returns how many convolutions changed.
    """
    if order not in ORDERS:
        raise ValueError(f"unknown convolution order {order!r}")
    changed = 0
    for n, op in numbered(module, "stablehlo.convolution"):
        if only is not None and n not in only:
            continue
        lhs, rhs, out = op.operands[0], op.operands[1], op.results[0]
        if not all(is_static(v) for v in (lhs, rhs, out)):
            continue
        dn = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
        rank = len(dims_of(lhs))
        p_in, p_kernel, p_out = _layouts(dn, rank, order)
        if is_identity(p_in) and is_identity(p_kernel) and is_identity(p_out):
            continue
        with ir.InsertionPoint(op), op.location:
            attributes = attributes_of(op)
            attributes["dimension_numbers"] = _numbers(rank, order)
            conv = ir.Operation.create("stablehlo.convolution", results=[permuted_type(out, p_out)],
                                       operands=[make_transpose(lhs, p_in, op.location),
                                                 make_transpose(rhs, p_kernel, op.location)],
                                       attributes=attributes, loc=op.location)
            back = make_transpose(conv.results[0], inverted(p_out), op.location)
        out.replace_all_uses_with(back)
        op.erase()
        changed += 1
    return changed
