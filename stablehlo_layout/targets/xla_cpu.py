"""XLA's CPU backend rules (``CpuLayoutAssignment::AddBackendConstraints``).

On CPU nearly everything reads row-major: Eigen GEMMs and convolutions,
batch dots, TopK, and — through the catch-all — every operand of every
other instruction that nothing constrained yet.  The exceptions are a
vector·matrix dot whose constant matrix is made column-major, the gathered
or scattered dimension of all-gather / reduce-scatter (made most major), and
whatever a layout-constrained custom call or an entry pin demands later.
"""

from __future__ import annotations

import functools
from itertools import compress
from operator import itemgetter, methodcaller
from types import MappingProxyType
from typing import TYPE_CHECKING, Iterable, Sequence

from stablehlo_layout.model import layout as L
from stablehlo_layout.targets.demands import (
    ASCENDING_OPERAND,
    MOST_MAJOR_DIM,
    NO_DEMAND,
    ROW_MAJOR_KERNEL,
    Demand,
    DemandPlan,
    PlanStep,
)
from stablehlo_layout.model.rules import rule_for
from stablehlo_layout.targets.base import Target
from stablehlo_layout.targets.xla_version import loop_demands_first, propagate_loop_demands

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Graph, Instruction, Value
    from stablehlo_layout.model.layout import Dims
    from stablehlo_layout.targets.view import TargetView

# Eigen wants 16-byte aligned tensors; XLA's CPU allocator aligns a buffer to
# the smallest power of two covering it, capped at 16.
_EIGEN_ALIGNMENT = 16
_FLOATS = {"f16", "bf16", "f32", "f64"}
_GEMM_TYPES = {"f16", "f32", "f64", "c64", "c128", "s32"}
# The ops that may need more than the catch-all (a runtime kernel's row-major
# or column-major layouts, TopK, a collective's dimension).  The reshapes an
# XLA pass made, which come last in its instruction list, are found apart.
_DOTS = frozenset({"dot", "dot_general"})
_OTHERS = frozenset({"convolution", "custom_call", "reduce_scatter", "all_gather"})
_SINGLED_OUT = _DOTS | _OTHERS
_NO_DEMAND = PlanStep(NO_DEMAND)
_NO_STEPS: "MappingProxyType[int, PlanStep]" = MappingProxyType({})
_CATCH_ALL_RULE = "target:cpu-row-major-operand"
_CATCH_ALL_NOTE = "XLA:CPU reads every otherwise unconstrained operand row-major"
_LATE_NOTE = (_CATCH_ALL_NOTE + "; an XLA pass made this instruction, so it comes last in XLA's"
              " instruction list and its demand propagates before those of the instructions JAX made")
_LISTED_NOTE = (_CATCH_ALL_NOTE + "; XLA's instruction list (its HloProto's ids) holds this instruction after"
                " ones the dump prints later, so its demand propagates before theirs")


@functools.lru_cache(maxsize=256)
def _step_of(code: int, arg: int, hlo: str) -> PlanStep:
    """A step and its words; the few distinct ones are shared by every instruction that takes one."""
    if code == MOST_MAJOR_DIM:
        return PlanStep(code, arg, "target:cpu-collective-dim-major", f"the {hlo} dimension {arg} must be most major")
    if code == ROW_MAJOR_KERNEL:
        return PlanStep(code, arg, "target:cpu-row-major-kernel",
                        f"{hlo} is emitted as an Eigen/runtime kernel that reads row-major")
    return PlanStep(code, arg, "target:cpu-column-major-constant",
                    "a vector·matrix dot reads its constant matrix column-major")


def _bytes(v: "Value") -> int:
    return L.array_bytes(v.element, v.dims) or 0  # a dynamic shape is not known to be aligned


def _aligned_bytes(size: int) -> bool:
    """Whether an array of ``size`` bytes (0: not known) is aligned for Eigen."""
    return size > 0 and min(1 << max(size - 1, 0).bit_length(), _EIGEN_ALIGNMENT) >= _EIGEN_ALIGNMENT


def _is_int_or_float(element: str) -> bool:
    return element in _FLOATS or element[0] in "su" and element[1:].isdigit()


# A large module has thousands of dots and a handful of distinct shapes: the
# answer depends on the shapes alone, so it is worked out once per shape.
@functools.lru_cache(maxsize=4096)
def _gemm_needs_row_major(lhs_element: str, lhs_dims: "Dims", rhs_element: str, rhs_dims: "Dims",
                          out_element: str, out_dims: "Dims") -> bool:
    """Whether a dot without batch dimensions of these shapes runs a kernel that reads row-major."""
    # Matrix-vector products use a tiled GEMV that reads either layout.
    if (len(out_dims) <= 1 or (len(out_dims) == 2 and 1 in out_dims)) and _is_int_or_float(out_element):
        return False

    # Tiny operands use the naive loop, which reads either layout.
    def small(dims: "Dims") -> bool:
        return len(dims) <= 1 or (len(dims) == 2 and any(d is not None and d <= 3 for d in dims))

    if small(lhs_dims) and small(rhs_dims):
        return False
    # Aligned GEMMs go to Eigen or the tiled GEMM: both need row-major.
    return (len(lhs_dims) == len(rhs_dims) == len(out_dims) == 2 and (L.array_bytes(lhs_element, lhs_dims) or 0) > 0
            and (L.array_bytes(rhs_element, rhs_dims) or 0) > 0 and out_element in _GEMM_TYPES)


# What PotentiallyImplementedAsEigenConvolution reads of the dimension numbers.
_CONV_FIELDS = ("input_batch", "input_feature", "input_spatial", "kernel_input_feature", "kernel_output_feature",
                "kernel_spatial", "output_batch", "output_feature", "output_spatial")


# A convnet has hundreds of convolutions and a handful of distinct shapes, and
# explain's what-if reruns ask again for each: answered once per shape.
@functools.lru_cache(maxsize=4096)
def _eigen_convolution(inp_element: str, inp_dims: "Dims", ker_element: str, ker_dims: "Dims", out_element: str,
                       out_dims: "Dims", reversal: bool, numbers: tuple) -> bool:
    """XLA's PotentiallyImplementedAsEigenConvolution, on the facts it reads (numbers: _CONV_FIELDS' values)."""
    if not all(_aligned_bytes(L.array_bytes(e, d) or 0) for e, d in
               ((inp_element, inp_dims), (ker_element, ker_dims), (out_element, out_dims))):
        return False
    if inp_element not in ("f16", "f32") or reversal:
        return False
    (input_batch, input_feature, input_spatial, kernel_input_feature, kernel_output_feature, kernel_spatial,
     output_batch, output_feature, output_spatial) = numbers
    n = len(output_spatial)
    if n > 3:
        return False
    for i in range(n):
        if input_spatial[i] != i + 1 or kernel_spatial[i] != i or output_spatial[i] != i + 1:
            return False
    return (input_batch == 0 and input_feature == len(inp_dims) - 1
            and output_batch == 0 and output_feature == len(out_dims) - 1
            and kernel_input_feature == len(ker_dims) - 2
            and kernel_output_feature == len(ker_dims) - 1)


class XlaCpuTarget(Target):
    name = "xla-cpu"
    inline_calls = True
    uniform_rounds = True

    # -- which instructions need row-major everything ----------------------
    def eigen_convolution(self, g: "Graph", ins: "Instruction") -> bool:
        """XLA's PotentiallyImplementedAsEigenConvolution."""
        if rule_for(ins.op).hlo != "convolution" or "conv" not in ins.attrs:
            return False
        inp, ker = (g.values[v] for v in ins.operands[:2])
        out = g.values[ins.results[0]]
        c = ins.attrs["conv"]
        return _eigen_convolution(inp.element, inp.dims, ker.element, ker.dims, out.element, out.dims,
                                  bool(ins.attrs.get("window_reversal")), tuple(map(c.__getitem__, _CONV_FIELDS)))

    def dot_needs_row_major(self, g: "Graph", ins: "Instruction") -> bool:
        """XLA's DotOperandsAndResultMustHaveRowMajorLayout."""
        if rule_for(ins.op).hlo not in ("dot", "dot_general") or "lhs_batch" not in ins.attrs:
            return False
        if ins.attrs["lhs_batch"]:
            return True  # DotDecomposer puts batch dims first: they must be major
        values, operands = g.values, ins.operands
        lhs, rhs, out = values[operands[0]], values[operands[1]], values[ins.results[0]]
        return _gemm_needs_row_major(lhs.element, lhs.dims, rhs.element, rhs.dims, out.element, out.dims)

    def column_major_operand(self, g: "Graph", ins: "Instruction") -> int | None:
        """XLA's ShouldMakeOperandColumnMajor: a constant matrix in a vector·matrix dot."""
        if rule_for(ins.op).hlo not in ("dot", "dot_general") or "lhs_batch" not in ins.attrs:
            return None
        lhs, rhs = (g.values[v] for v in ins.operands[:2])
        out = g.values[ins.results[0]]
        if not (out.rank <= 1 and lhs.rank == 1 and ins.attrs["rhs_contracting"] == (0,) and _bytes(lhs) >= 32):
            return None
        producer = g.instrs[rhs.producer]
        if rule_for(producer.op).hlo != "constant":
            return None
        for user, _ in rhs.uses:
            uins = g.instrs[user]
            if uins.operands.count(rhs.id) != 1 or self._profitable_col_major(g, uins) != 1:
                return None
        return 1

    def _profitable_col_major(self, g: "Graph", ins: "Instruction") -> int | None:
        if rule_for(ins.op).hlo not in ("dot", "dot_general") or "lhs_batch" not in ins.attrs:
            return None
        lhs = g.values[ins.operands[0]]
        out = g.values[ins.results[0]]
        if out.rank <= 1 and lhs.rank == 1 and ins.attrs["rhs_contracting"] == (0,) and _bytes(lhs) >= 32:
            return 1
        return None

    # -- the hook ------------------------------------------------------------
    def _step(self, g: "Graph", ins: "Instruction", hlo: str) -> PlanStep | None:
        """The demands of a kernel op, a custom call or a collective; None: the catch-all's."""
        if hlo == "reduce_scatter" or hlo == "all_gather":
            if "dim" not in ins.attrs:
                return None
            if not g.values[ins.results[0]].is_array:
                return _NO_DEMAND
            return _step_of(MOST_MAJOR_DIM, ins.attrs["dim"], hlo)
        if self.eigen_convolution(g, ins) or self.dot_needs_row_major(g, ins) or ins.attrs.get("target") == "TopK":
            return _step_of(ROW_MAJOR_KERNEL, 0, hlo)
        col = self.column_major_operand(g, ins)
        if col is not None:
            return _step_of(ASCENDING_OPERAND, col, hlo)
        return None

    def _singled_out(self, view: "TargetView") -> tuple[dict[int, dict[int, PlanStep]], dict[int, set[int]]]:
        """Per computation, the steps of the instructions that need more than the
        catch-all, and the reshapes an XLA pass made (one pass per run).

        Dots are most of them (thousands in a transformer): with this class's
        own dot rules they are sorted in bulk, by their batch dimensions and
        then by their shapes (``_gemm_needs_row_major``, once per shape); a
        target that refines those rules is asked dot by dot.  The bulk work
        reads the graph's columns (graph.Columns: each op's computation,
        attributes, operands and results) rather than a view per instruction.
        """
        g = view.graph
        instrs, cols = g.instrs, g.columns
        comp_of, op_start, op_items, attrs_of = cols.comp, cols.op_start, cols.op_items, cols.attrs
        steps: dict[int, dict[int, PlanStep]] = {}
        late: dict[int, set[int]] = {}
        found = view.instructions_of(_SINGLED_OUT)  # one scan, then split by op
        hlos = view.hlos_of(found)
        # The importer lists every marked reshape among its attributed ops (graph.CORE_ATTRIBUTES).
        attributed = cols.attributed
        reshapes = attributed
        marks = map(methodcaller("get", "xla_pass_created"), map(attrs_of.__getitem__, reshapes))
        for iid in compress(reshapes, marks):
            late.setdefault(comp_of[iid], set()).add(iid)
        cls = type(self)
        bulk_dots = (cls.dot_needs_row_major is XlaCpuTarget.dot_needs_row_major
                     and cls.eigen_convolution is XlaCpuTarget.eigen_convolution and cls.rule is Target.rule)
        rest: list[int] = []
        if bulk_dots:
            dots = [(i, h) for i, h in zip(found, hlos) if h in _DOTS]
            batch = list(map(methodcaller("get", "lhs_batch"), map(attrs_of.__getitem__, map(itemgetter(0), dots))))
            kernels = list(compress(dots, batch))
            # No dimension numbers: no dot rule applies (the catch-all's, as dot by dot).
            plain_dots = [d for d, b in zip(dots, batch) if b is not None and not b]
            plain = list(map(itemgetter(0), plain_dots))
            firsts = list(map(op_start.__getitem__, plain))
            lhs = list(map(op_items.__getitem__, firsts))
            rhs = list(map(op_items.__getitem__, map((1).__add__, firsts)))
            out = list(map(cols.res_items.__getitem__, map(cols.res_start.__getitem__, plain)))
            # Each value's element and dims, from its rows (graph.Value reads the same).
            element = cols.element.__getitem__
            shape, dims_of = cols.shape.__getitem__, cols.shape_dims.__getitem__
            gemm = list(map(_gemm_needs_row_major, map(element, lhs), map(dims_of, map(shape, lhs)),
                            map(element, rhs), map(dims_of, map(shape, rhs)),
                            map(element, out), map(dims_of, map(shape, out))))
            kernels += compress(plain_dots, gemm)
            rest += (d for d, k in zip(plain, gemm) if not k)  # a column-major constant, maybe
            kernel_step = {h: _step_of(ROW_MAJOR_KERNEL, 0, h) for h in _DOTS}
            for (iid, h), c in zip(kernels, map(comp_of.__getitem__, map(itemgetter(0), kernels))):
                in_comp = steps.get(c)
                if in_comp is None:
                    in_comp = steps[c] = {}
                in_comp[iid] = kernel_step[h]
        others = _OTHERS if bulk_dots else _OTHERS | _DOTS
        rest += (i for i, h in zip(found, hlos) if h in others)
        rule = view.rule
        for iid in rest:
            ins = instrs[iid]
            step = self._step(g, ins, rule(iid).hlo)
            if step is not None:
                steps.setdefault(ins.comp, {})[iid] = step
        return steps, late

    def _plan(self, view: "TargetView", comp: int) -> DemandPlan:
        """What the backend demands of the instructions of ``comp``: the same in
        every round (each at the round's priority), so made once per run.

        One pass per run over the few instructions that may need more than the
        catch-all (kernels, custom calls, collectives) and the reshapes that
        may come late; every other instruction gets the catch-all, which the
        core works out from its own facts when the plan is applied.

        XLA's AddBackendConstraints walks the instruction list, where the
        instructions earlier XLA passes made come last (``hlo_metadata``);
        the rest keep the order of the input.  The engine drains the demands
        depth-first, the last added first, so this order decides ties
        between equally strong demands: the plan's ``late``.
        """
        cache = view.cache("xla-cpu-plan")
        plan = cache.get(comp)
        if plan is not None:
            return plan
        found = cache.get(None)
        if found is None:  # once per run
            found = cache[None] = self._singled_out(view)
        steps, late = found
        marked = late.get(comp)
        # XLA's list keeps the late ones in their block order.
        late_ids: tuple[int, ...] = ()
        late_note = _LATE_NOTE
        listed = view.graph.list_order.get(comp)
        if listed is not None:
            late_note = _LISTED_NOTE
            late_ids = _after_the_block_order(view.graph.comps[comp].instrs, listed)
        elif marked:
            in_order = tuple(filter(marked.__contains__, view.graph.comps[comp].instrs))
            attrs_of = view.graph.columns.attrs
            early = tuple(i for i in in_order if attrs_of[i].get("xla_pass_created") == "early")
            late_ids = early + tuple(i for i in in_order if attrs_of[i].get("xla_pass_created") is True)
        plan = cache[comp] = DemandPlan(view, comp, late_ids, steps.get(comp, _NO_STEPS), _CATCH_ALL_RULE,
                                        _CATCH_ALL_NOTE, late_note)
        return plan

    def backend_demands(self, view: "TargetView", comp: int) -> Iterable[Demand]:
        plan = self._plan(view, comp)
        if loop_demands_first():
            # Applied before the plan: they read the store as the earlier steps left it.
            return plan.after(propagate_loop_demands(view, comp))
        return plan


def _after_the_block_order(block: Sequence[int], listed: tuple[int, ...]) -> tuple[int, ...]:
    """XLA's list (``Graph.list_order``) as a plan's ``late``: the list's longest prefix that
    keeps the block order stays in place; the rest, in the list's order, comes after it."""
    index = {iid: k for k, iid in enumerate(block)}
    k, last = 0, -1
    while k < len(listed) and index[listed[k]] > last:
        last = index[listed[k]]
        k += 1
    return listed[k:]
