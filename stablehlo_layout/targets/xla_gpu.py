"""XLA's GPU backend rules (``GpuLayoutAssignment``), expressed on StableHLO.

What the GPU libraries need, and what this target therefore demands:

* cuDNN convolutions read NCHW or NHWC (with OIHW / OHWI filters), chosen by
  element type and device generation;
* cuBLAS matmuls need each of the batch / row / column dimension groups
  physically contiguous and no batch dimension most minor; int8 and FP8
  GEMMs also need the contracting dimensions most minor;
* cuFFT, CUB sort and the TopK kernel read row-major (the default layout);
  the LAPACK-style triangular solve reads the two minor dimensions
  column-major ("Fortran" order);
* collectives want the gathered / scattered / split dimension most major;
  host transfers and receives use the default layout;
* a reduction whose reduced dimensions hold at least 32 elements asks its
  operand to put them most minor (a row reduction); across a reshape a
  size-1 dimension travels with its logical neighbour, and a layout the dump
  already gives is kept where it is an equivalent bitcast layout;
* a layout an XLA:GPU dump already gives an instruction (passes before
  layout assignment set some) is its existing layout, which the dot rules
  keep when cuBLAS can use it.

Rules of XLA's pass that cannot be expressed on StableHLO are listed where
they would go, with the reason.  The device is one of XLA's GPU target
configs (``gpu_config.py``; ``--gpu``), ``h100`` unless told otherwise, with
XLA's default debug flags.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Iterator, Sequence

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import Demand
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.rules import OpRule, reduce_operand, rule_for
from stablehlo_layout.targets.base import Derived, Target
from stablehlo_layout.targets.gpu_config import GpuModel, load_gpu
from stablehlo_layout.targets import xla_version

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Graph, Instruction, Value
    from stablehlo_layout.targets.view import TargetView

# Custom-call targets XLA:GPU knows by name.
_TOPK = "__gpu$TopK"
# CUB radix sorts, as XLA:GPU names them before and after their scratch size is known.
_CUB_SORT = ("__cub$DeviceRadixSort", "xla.gpu.ext.cub_sort_unassigned_scratch_size")
# cuDNN convolutions XLA:GPU forms before layout assignment, by kind: which
# of (operand 0, operand 1, result 0) is the convolution's input, filter and
# output.
_CUDNN_CONV_PREFIX = "__cudnn$conv"
_ROCM_NHWC_ARCHS = {"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"}
_CUDNN_CONV_ROLES = {
    "__cudnn$convForward": ("input", "filter", "output"),
    "__cudnn$convBiasActivationForward": ("input", "filter", "output"),
    "__cudnn$convForwardGraph": ("input", "filter", "output"),
    "__cudnn$convBackwardInput": ("output", "filter", "input"),
    "__cudnn$convBackwardFilter": ("input", "output", "filter"),
}
_RAGGED_ALL_TO_ALL = "ragged_all_to_all"  # how JAX spells kRaggedAllToAll in StableHLO
# MoveToHost / MoveToDevice are XLA's internal names; JAX emits
# annotate_device_placement, which XLA turns into one of the two before
# layout assignment.  Both directions get the same rule, so the direction
# (a frontend attribute the importer does not keep) is not needed.
_MEMORY_PLACEMENT = ("MoveToHost", "MoveToDevice", "annotate_device_placement")
# Gemm custom calls only exist after gemm rewriting, which must run later.
_CUBLAS = ("__cublas$gemm", "__cublas$lt$matmul", "__cublas$lt$matmul$f8")

_DOTS = ("dot", "dot_general")
_SUB_BYTE = {"s1", "s2", "s4", "u1", "u2", "u4", "f4e2m1fn"}
_FP8_MINOR_K = {"f8e4m3fn", "f8e5m2fnuz"}
# Element types cuBLAS takes (se::gpu::AsBlasDataType); MatrixLayout::For
# fails for anything else, so such dots fall through to the forced layout.
_BLAS_TYPES = {"s8", "s32", "f16", "bf16", "f32", "f64", "c64", "c128",
               "f8e5m2", "f8e4m3fn", "f8e5m2fnuz", "f8e4m3fnuz", "f8e4m3", "f8e3m4"}
_UNARY_ELEMENTWISE = set("""
abs cbrt ceil convert cosine count_leading_zeros exponential exponential_minus_one floor
imag is_finite log log_plus_one logistic negate not popcnt real reduce_precision
round_nearest_afz round_nearest_even rsqrt sign sine sqrt tan tanh
""".split())
_BINARY_ELEMENTWISE = set("""
add and atan2 compare complex divide maximum minimum multiply or power remainder
shift_left shift_right_arithmetic shift_right_logical subtract xor
""".split())


def _operand(layout: L.Layout, iid: int, n: int, why: Origin, mandatory: bool = True,
             dfs: bool = True) -> Demand:
    """XLA's SetOperandLayout as a demand (arguments in XLA's order: layout first)."""
    return Demand.on_operand(iid, n, layout, why, mandatory, dfs)


def _short(op: str) -> str:
    return op.split(".", 1)[1] if "." in op else op


def _move_dim_to_minor(layout: L.Layout, dim: int) -> L.Layout:
    return L.intern([dim] + [d for d in layout if d != dim])


def _move_dim_to_major(layout: L.Layout, dim: int) -> L.Layout:
    return L.intern([d for d in layout if d != dim] + [dim])


def _fortran(rank: int) -> L.Layout:
    """The default layout with its two most minor entries swapped."""
    m2m = list(L.default_layout(rank))
    m2m[0], m2m[1] = m2m[1], m2m[0]
    return L.intern(m2m)


def matrix_layout_ok(layout: L.Layout, element: str, batch: Sequence[int],
                     rows: Sequence[int], cols: Sequence[int]) -> bool:
    """XLA's ``MatrixLayout::For(shape, batch, rows, cols).ok()``.

    Walking minor to major, each group must appear contiguously and in its
    logical order; the groups' physical order (major to minor) must then be
    one of (B,R,C), (B,C,R), (R,B,C), (C,B,R): no batch dimension most minor.
    """
    if element not in _BLAS_TYPES:
        return False
    groups = ((1, list(rows)), (2, list(cols)), (0, list(batch)))
    order: list[int] = []
    i = 0
    while i < len(layout):
        dim = layout[i]
        for tag, dims in groups:
            if dims and dim == dims[-1]:
                for d in reversed(dims):
                    if i >= len(layout) or layout[i] != d:
                        return False
                    i += 1
                order.append(tag)
                break
        else:
            return False
    # Missing groups sit most major: columns, then rows, then batch.
    for tag, group in ((2, cols), (1, rows), (0, batch)):
        if not group:
            order.append(tag)
    major_to_minor = tuple(reversed(order))
    return major_to_minor in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (2, 0, 1))


def reshape_layout(in_dims: Sequence[int], in_layout: L.Layout, out_dims: Sequence[int],
                   given: L.Layout | None = None) -> L.Layout | None:
    """The layout XLA:GPU derives for one side of a reshape from the other's.

    The dims that are not size 1 are aligned as AlignLayouts does.  Each
    size-1 output dim keeps its place beside the dims that are not: it sits
    right above (more major than) the dim that follows it, major to minor, in
    the layout the side already has, and after the last such dim it is most
    minor.  The layout it already has is the one the dump gives it
    (``given``), else row-major, so a size-1 dim travels with its logical
    neighbour as in a row-major reshape.  (Observed on jaxlib 0.10.2's
    XLA:GPU, e.g. f32[10,20]{0,1} -> [1,10,20]{1,0,2}, [10,1,20]{0,2,1},
    [10,20,1]{2,0,1}; and on a dump whose f32[1,2,16,16] is given
    {2,0,3,1}, where the size-1 dim 0 sits above dim 2, the reshape to a
    row-major [2,16,16] reads it {3,2,0,1}, not row-major.  AlignLayouts
    proper would put every size-1 dim most major.)
    """
    if 1 not in in_dims and 1 not in out_dims:
        return L.align_layouts(in_dims, in_layout, out_dims)
    found = _align_without_size1(in_dims, in_layout, out_dims)
    if found is None:
        return None
    keep_out, simple = found
    if given is None or len(given) != len(out_dims):
        given = L.default_layout(len(out_dims))
    # Major to minor in the layout the side has: each size-1 dim belongs to the next dim that is not.
    carried: dict[int, list[int]] = {d: [] for d in keep_out}
    waiting: list[int] = []
    for d in reversed(given):
        if out_dims[d] == 1:
            waiting.append(d)
        else:
            carried[d], waiting = waiting, []
    trailing = waiting
    major_to_minor: list[int] = []
    for k in reversed(simple):
        major_to_minor.extend(carried[keep_out[k]])
        major_to_minor.append(keep_out[k])
    major_to_minor.extend(trailing)
    return L.intern(reversed(major_to_minor))


def _align_without_size1(in_dims: Sequence[int], in_layout: L.Layout,
                         out_dims: Sequence[int]) -> tuple[list[int], L.Layout] | None:
    """AlignLayouts over the dims that are not size 1: the output's such dims, and
    their layout (numbered among themselves); None where the reshape is no bitcast."""
    keep_in = [d for d, e in enumerate(in_dims) if e != 1]
    renum = {d: i for i, d in enumerate(keep_in)}
    simple_in = tuple(renum[d] for d in in_layout if d in renum)
    keep_out = [d for d, e in enumerate(out_dims) if e != 1]
    simple = L.align_layouts([in_dims[d] for d in keep_in], simple_in, [out_dims[d] for d in keep_out])
    return None if simple is None else (keep_out, simple)


class XlaGpuTarget(Target):
    name = "xla-gpu"
    inline_calls = True  # XLA:GPU flattens the call graph before layout assignment
    uniform_rounds = True
    reads_given_layouts = True

    @property
    def loop_state_from_caller(self) -> bool:  # type: ignore[override]  # a class attribute in Target
        # Read when a pass runs, not at import: importing the targets reads no package metadata.
        return xla_version.loop_state_from_caller()

    @property
    def branch_interface_from_caller(self) -> bool:  # type: ignore[override]  # a class attribute in Target
        return xla_version.branch_interface_from_caller()

    def __init__(self, gpu: GpuModel | str | None = None, rocm_nhwc: bool = False,
                 force_conv_layout: str | None = None,
                 pack_dot_operands_along_k: bool = False, xla: tuple[int, ...] | None = None) -> None:
        """``gpu`` is the device XLA compiles for: a ``GpuModel``, the name of a
        shipped config (``a100``, ``h100``, ...) or a ``GpuTargetConfigProto``
        text file; ``None`` means ``h100``.  ``rocm_nhwc`` stands for
        TF_USE_ROCM_NHWC set (it matters on ROCm devices with NHWC support);
        ``force_conv_layout`` ("nchw" / "nhwc") and ``pack_dot_operands_along_k``
        mirror the XLA debug flags xla_gpu_force_conv_nchw / _nhwc and
        xla_gpu_experimental_pack_dot_operands_along_k_dimension.  ``xla`` is the XLA version
        whose version-keyed rules apply (``xla_version``); None: the installed jaxlib's.
        Only the row-reduction rule reads it; the loop and branch rules follow the installed XLA."""
        if force_conv_layout not in (None, "nchw", "nhwc"):
            raise ValueError(f"force_conv_layout must be nchw or nhwc, not {force_conv_layout!r}")
        self.gpu = gpu if isinstance(gpu, GpuModel) else load_gpu(gpu)
        self.compute_capability = self.gpu.compute_capability
        self.platform = self.gpu.platform
        self.rocm_nhwc = rocm_nhwc
        self.force_conv_layout = force_conv_layout
        self.pack_dot_operands_along_k = pack_dot_operands_along_k
        self.xla = xla

    # -- per-op rules the backend refines --------------------------------------
    def rule(self, g: "Graph", ins: "Instruction") -> OpRule:
        r = rule_for(ins.op)
        # XLA:GPU's InstructionCanChangeLayoutInstance: the TopK kernel reads
        # its operand in the layout it writes.  ragged-all-to-all cannot change
        # layout in the base pass; in StableHLO it is a custom call.
        if r.hlo == "custom_call" and ins.attrs.get("target") in (_TOPK, _RAGGED_ALL_TO_ALL):
            return replace(r, can_change=False)
        return r

    def propagate_reduction_to_operand(self, g: "Graph", ins: "Instruction") -> bool:
        """A row reduction pays off only for as many reduced elements as the XLA's heuristic wants
        (``xla_version.row_reduction_pays``: >= 32 in the tested jaxlibs)."""
        dims = g.values[ins.operands[0]].dims
        sizes = [dims[d] for d in ins.attrs.get("dims", ())]
        if any(s is None for s in sizes):
            return False
        return xla_version.row_reduction_pays(math.prod(sizes), self.xla)

    def operand_from_output(self, g: "Graph", ins: "Instruction", n: int,
                            output: L.Layout, rule: OpRule) -> Derived | None:
        if rule.hlo == "reduce":
            if not self.propagate_reduction_to_operand(g, ins):
                return None
            return reduce_operand(g, ins, n, output), "target:gpu-reduce-row-reduction"
        if rule.hlo == "reshape":
            if n != 0:
                return None
            src = g.values[ins.operands[0]].dims
            dst = g.values[ins.results[0]].dims
            if not L.reshape_derivable(src, dst):
                return None
            lay = reshape_layout(dst, output, src, self.given_layout(g, ins.operands[0]))  # type: ignore[arg-type]
            return (lay, "target:gpu-reshape-bitcast") if lay is not None else None
        return super().operand_from_output(g, ins, n, output, rule)

    def output_from_operand(self, g: "Graph", ins: "Instruction", n: int, operand: L.Layout,
                            result: int, rule: OpRule) -> Derived | None:
        if rule.hlo == "reshape":
            if n != 0:
                return None
            src = g.values[ins.operands[0]].dims
            dst = g.values[ins.results[result]].dims
            if not L.reshape_derivable(src, dst):
                return None
            lay = reshape_layout(src, operand, dst, self.given_layout(g, ins.results[result]))  # type: ignore[arg-type]
            return (lay, "target:gpu-reshape-bitcast") if lay is not None else None
        return super().output_from_operand(g, ins, n, operand, result, rule)

    # -- what the input already says about a value -----------------------------
    @staticmethod
    def given_layout(g: "Graph", vid: int) -> L.Layout | None:
        """The layout the input dump writes on the instruction defining ``vid``, if any."""
        ins = g.instrs[g.values[vid].producer]
        given = ins.attrs.get("given_layout")
        if given is not None and ins.results[0] == vid and len(given) == g.values[vid].rank:
            return given
        return None

    def existing_layout(self, g: "Graph", vid: int) -> L.Layout:
        """The layout XLA would find on the HLO before the pass.

        XLA:GPU's module before layout assignment gives every instruction the
        default layout, entry parameters included (their pinned layouts live
        in the entry computation layout only: seen on every parameter of the
        harness's dumps), except where an earlier pass laid one out (e.g.
        transposes and the reshapes around dots); such a layout comes with
        the input as ``given_layout``.  XLA's dot rules keep an existing
        layout when cuBLAS can use it.
        """
        return self.given_layout(g, vid) or L.default_layout(g.values[vid].rank)

    # -- helpers to set constraints ---------------------------------------------
    def _set_instruction(self, view: "TargetView", iid: int, layouts: list[L.Layout | None],
                         why: Origin) -> Iterator[Demand]:
        """XLA's SetInstructionLayout (mandatory, dfs).

        For an op that cannot change layout and has one array result, XLA
        also pins every operand of that rank to the same layout.
        """
        g = view.graph
        ins = g.instrs[iid]
        rule = view.rule(iid)
        yield Demand.on_results(iid, layouts, why)
        leaves = view.leaves(iid)
        if rule.can_change or rule.tuple_operand or len(leaves) != 1 or layouts[0] is None:
            return
        out = g.values[leaves[0]]
        if not out.is_array:
            return
        for n, vid in enumerate(ins.operands):
            v = g.values[vid]
            if v.is_array and v.rank == out.rank:
                yield Demand.on_operand(iid, n, layouts[0], why)

    def _default_results(self, view: "TargetView", iid: int, why: Origin) -> Iterator[Demand]:
        g = view.graph
        return self._set_instruction(view, iid, [L.default_layout(g.values[r].rank) if g.values[r].is_array else None
                                                 for r in view.leaves(iid)], why)

    # -- the hook ---------------------------------------------------------------
    def backend_demands(self, view: "TargetView", comp: int) -> Iterator[Demand]:
        g = view.graph
        # Reverse post-order: users before producers, so a dot sees the
        # operand constraints its users already placed on it.
        for iid in reversed(view.post_order(comp)):
            ins = g.instrs[iid]
            if ins.op in ("parameter", "root"):
                continue
            hlo = view.rule(iid).hlo
            target = ins.attrs.get("target") if hlo == "custom_call" else None
            if target in _CUBLAS:
                raise PassError(f"custom_call @{target} is a rewritten gemm; XLA:GPU rewrites "
                                "gemms only after layout assignment", ins.loc)
            if target is not None and target.startswith(_CUDNN_CONV_PREFIX):
                yield from self._cudnn_conv(view, ins, target)
            # XLA rewrites every convolution cuDNN can run into a cuDNN custom
            # call before this pass; on raw StableHLO the same heuristic
            # applies to the convolution itself, as a forward convolution.  A
            # convolution an XLA:GPU dump still holds is one cuDNN cannot run,
            # and XLA:GPU places no constraint on it.
            elif hlo == "convolution" and "conv" in ins.attrs and not ins.attrs.get("not_cudnn"):
                yield from self._convolution(view, ins)
            elif hlo in _DOTS and "lhs_batch" in ins.attrs:
                yield from self._dot(view, ins)
            elif hlo == "ragged-dot":
                why = Origin("target:gpu-ragged-dot", iid, None, "ragged dots read and write the default layout")
                for n in (0, 1):
                    v = g.values[ins.operands[n]]
                    if v.is_array:
                        yield _operand(L.default_layout(v.rank), iid, n, why)
                yield from self._default_results(view, iid, why)
            elif hlo == "transpose":
                yield from self._transpose_of_dot(view, ins)
            elif hlo == "fft":
                why = Origin("target:gpu-fft-default", iid, None, "cuFFT needs dimension 0 most major")
                v = g.values[ins.operands[0]]
                yield _operand(L.default_layout(v.rank), iid, 0, why)
                yield from self._default_results(view, iid, why)
            elif (hlo == "sort" or target in _CUB_SORT) and g.values[ins.operands[0]].rank > 1:
                yield from self._sort(view, ins)
            elif target == _TOPK or hlo == "topk":
                # chlo.top_k becomes either the TopK custom call or a sort
                # before XLA:GPU lays it out; both end in default layouts.
                why = Origin("target:gpu-topk-default", iid, None, "the TopK kernel writes the default layout")
                rank = g.values[ins.operands[0]].rank
                for r in view.leaves(iid)[:2]:
                    if g.values[r].is_array and g.values[r].buffer == r:
                        yield Demand.on_buffer(r, L.default_layout(rank), why)
            elif hlo == "bitcast_convert":
                yield from self._bitcast_convert(view, ins)
            elif hlo == "triangular_solve":
                why = Origin("target:gpu-triangular-solve-fortran", iid, None,
                             "the solver reads the two minor dimensions column-major")
                for n in (0, 1):
                    yield _operand(_fortran(g.values[ins.operands[n]].rank), iid, n, why)
                yield from self._set_instruction(view, iid, [_fortran(g.values[ins.results[0]].rank)], why)
            # cholesky: XLA:GPU has no rule of its own (it cannot change layout
            # in the base pass, and GPU rewrites it earlier).
            elif hlo in ("reduce_scatter", "all_gather") or (
                    hlo == "all_to_all" and len(view.leaves(iid)) == 1):
                if "dim" in ins.attrs:
                    yield from self._collective_dim_major(view, ins, ins.attrs["dim"], hlo)
            elif target == _RAGGED_ALL_TO_ALL:
                yield from self._collective_dim_major(view, ins, 0, "ragged-all-to-all")
            # send: the engine already reads what send transfers in the default
            # layout (XLA's pre-pass copy, constrained by GPU to the default
            # on both sides); the GPU rule would add nothing.
            elif hlo == "recv":
                yield from self._default_results(view, iid, Origin("target:gpu-recv-default", iid, None,
                                                          "received buffers use the default layout"))
            elif target in _MEMORY_PLACEMENT:
                why = Origin("target:gpu-host-memory-default", iid, None,
                             "host memory buffers keep the default layout (no transposes on host)")
                first = g.values[ins.operands[0]] if ins.operands else None
                if first is not None and first.is_array:
                    yield _operand(L.default_layout(first.rank), iid, 0, why)
                yield from self._default_results(view, iid, why)
            # Host-thread async-start / async-done: StableHLO has no async ops
            # with an execution thread, so that rule has nothing to match.

    # -- convolution --------------------------------------------------------------
    def conv_format(self, element: str, spatial: int, output_rank: int) -> str:
        """XLA's HeuristicLayoutAssignment: "NCHW" or "NHWC" for input, filter and output.

        NCHW_VECT_C (int8 with a fifth, vector dimension) cannot occur: a
        stablehlo.convolution names every dimension of its operands.
        """
        integral = element[0] in "su" and element[1:].isdigit()
        if integral or element.startswith("f8"):
            return "NHWC"
        if self.force_conv_layout is not None:
            return self.force_conv_layout.upper()
        half = element in ("f16", "bf16")
        if self.platform == "cuda":
            if self.compute_capability >= (9, 0):
                if element == "f64" or spatial > 2:
                    return "NCHW"
                return "NHWC"
            if not half or self.compute_capability < (7, 0) or output_rank != 4:
                return "NCHW"
            return "NHWC"
        if not half or not self.rocm_nhwc or not self.rocm_has_nhwc() or output_rank != 4:
            return "NCHW"
        return "NHWC"

    def rocm_has_nhwc(self) -> bool:
        """RocmComputeCapability::has_nhwc_layout_support: CDNA (MI100) and later."""
        arch = self.gpu.rocm_arch.split(":", 1)[0]
        return arch in _ROCM_NHWC_ARCHS

    def conv_layouts(self, c: dict, element: str, output_rank: int) -> tuple[str, dict[str, L.Layout]]:
        """XLA's StreamExecutorConvLayoutsToXlaLayouts for the heuristic's format:
        the layouts of the convolution's input, filter and output by role."""
        fmt = self.conv_format(element, len(c["input_spatial"]), output_rank)
        if fmt == "NHWC":
            data_in = [c["input_batch"], *c["input_spatial"], c["input_feature"]]
            filt = [c["kernel_output_feature"], *c["kernel_spatial"], c["kernel_input_feature"]]
            data_out = [c["output_batch"], *c["output_spatial"], c["output_feature"]]
        else:
            data_in = [c["input_batch"], c["input_feature"], *c["input_spatial"]]
            filt = [c["kernel_output_feature"], c["kernel_input_feature"], *c["kernel_spatial"]]
            data_out = [c["output_batch"], c["output_feature"], *c["output_spatial"]]
        return fmt, {"input": L.from_major_to_minor(data_in), "filter": L.from_major_to_minor(filt),
                     "output": L.from_major_to_minor(data_out)}

    def _convolution(self, view: "TargetView", ins: "Instruction") -> Iterator[Demand]:
        g = view.graph
        inp = g.values[ins.operands[0]]
        out = g.values[ins.results[0]]
        fmt, lay = self.conv_layouts(ins.attrs["conv"], inp.element, out.rank)
        why = Origin("target:gpu-conv-layout", ins.id, None,
                     f"cuDNN runs this {inp.element} convolution as {fmt} on {self.gpu.name}")
        yield _operand(lay["input"], ins.id, 0, why)
        yield _operand(lay["filter"], ins.id, 1, why)
        yield Demand.on_results(ins.id, [lay["output"]], why)

    def _cudnn_conv(self, view: "TargetView", ins: "Instruction", target: str) -> Iterator[Demand]:
        """XLA's AddBackendConstraintsToDnnConvCustomCall.

        The heuristic reads the element type of operand 0 and the rank of
        result 0; operands 0 and 1 and result 0 take the layouts of their
        roles; a fused convolution's side input (operand 3) and a graph
        convolution's non-scalar extra operands follow the output.
        """
        g = view.graph
        roles = _CUDNN_CONV_ROLES.get(target)
        if roles is None:
            raise PassError(f"custom_call @{target}: not a cuDNN convolution kind XLA:GPU knows", ins.loc)
        if "conv" not in ins.attrs:
            raise PassError(f"custom_call @{target} carries no dimension numbers (dim_labels); give the "
                            "tool XLA's HLO dump itself, where they are written", ins.loc)
        leaves = view.leaves(ins.id)
        if len(ins.operands) < 2 or not leaves:
            raise PassError(f"custom_call @{target} needs two operands and a result", ins.loc)
        lhs = g.values[ins.operands[0]]
        result = g.values[leaves[0]]
        fmt, lay = self.conv_layouts(ins.attrs["conv"], lhs.element, result.rank)
        why = Origin("target:gpu-cudnn-conv-layout", ins.id, None,
                     f"cuDNN runs this {lhs.element} {target[len('__cudnn$'):]} as {fmt} on {self.gpu.name}")
        yield _operand(lay[roles[0]], ins.id, 0, why)
        yield _operand(lay[roles[1]], ins.id, 1, why)
        if result.is_array and result.buffer == result.id:
            yield Demand.on_buffer(result.id, lay[roles[2]], why)
        extra = range(2, len(ins.operands))
        if target == "__cudnn$convBiasActivationForward":
            extra = range(3, 4) if len(ins.operands) == 4 else range(0)
        elif target != "__cudnn$convForwardGraph":
            if len(ins.operands) > 2:
                raise PassError(f"custom_call @{target} has a side input, which only fused and graph "
                                "convolutions take", ins.loc)
        for n in extra:
            v = g.values[ins.operands[n]]
            if v.is_array and v.rank > 0:
                yield _operand(lay["output"], ins.id, n, why)

    # -- dot ------------------------------------------------------------------------
    @staticmethod
    def _dot_sides(g: "Graph", ins: "Instruction") -> list[tuple[int, "Value", tuple[int, ...], tuple[int, ...], list[int]]]:
        sides = []
        for n, batch, contracting in ((0, ins.attrs["lhs_batch"], ins.attrs["lhs_contracting"]),
                                      (1, ins.attrs["rhs_batch"], ins.attrs["rhs_contracting"])):
            v = g.values[ins.operands[n]]
            free = [d for d in range(v.rank) if d not in batch and d not in contracting]
            sides.append((n, v, tuple(batch), tuple(contracting), free))
        return sides

    def dot_supports(self, g: "Graph", ins: "Instruction", layout: L.Layout) -> bool:
        """XLA's DotCanSupportShapeWithLayout for the dot's result."""
        (_, lhs, lb, lc, lnc), (_, rhs, rb, rc, rnc) = self._dot_sides(g, ins)
        out = g.values[ins.results[0]]
        nb = max(len(lb), len(rb))
        if out.rank != nb + len(lnc) + len(rnc) or len(layout) != out.rank:
            return False
        dims = list(range(out.rank))
        return matrix_layout_ok(layout, out.element, dims[:nb], dims[nb:nb + len(lnc)],
                                dims[out.rank - len(rnc):])

    def _is_packed(self, g: "Graph", vid: int, seen: set[int]) -> bool:
        """A sub-byte value somewhere up a chain of unary or binary elementwise ops."""
        while True:
            if vid in seen:
                return False
            seen.add(vid)
            v = g.values[vid]
            if v.element in _SUB_BYTE:
                return True
            ins = g.instrs[v.producer]
            if ins.op in ("parameter", "root") or len(ins.operands) != 1:
                break
            vid = ins.operands[0]
        if _short(ins.op) in _BINARY_ELEMENTWISE and len(ins.operands) == 2:
            return any(self._is_packed(g, o, seen) for o in ins.operands)
        return False

    def _chain_ends_with_auto(self, view: "TargetView", vid: int) -> bool:
        """XLA's ChainEndsWithAutoLayout: up through unary elementwise ops,
        transposes and reshapes (and into any concatenate operand) to an entry
        parameter whose layout nobody gave."""
        g = view.graph
        ins = g.instrs[g.values[vid].producer]
        if ins.comp != g.entry:
            return False
        while ins.op not in ("parameter", "root") and ins.operands and (
                (_short(ins.op) in _UNARY_ELEMENTWISE and len(ins.operands) == 1)
                or view.rule(ins.id).hlo in ("transpose", "reshape")):
            ins = g.instrs[g.values[ins.operands[0]].producer]
        if ins.op == "parameter":
            params = g.comps[g.entry].params
            if ins.id not in params:
                return False
            p = params.index(ins.id)
            return p < len(view.given_params) and view.given_params[p] is None
        if view.rule(ins.id).hlo == "concatenate":
            return any(self._chain_ends_with_auto(view, o) for o in ins.operands)
        return False

    def _dot_operand(self, view: "TargetView", ins: "Instruction", n: int, v: "Value",
                     batch: Sequence[int], rows: Sequence[int], cols: Sequence[int],
                     mandatory: bool, why: Origin) -> Iterator[Demand]:
        """XLA's SetDotOperandLayout: the existing layout, else the default,
        else [batch, rows, cols] major to minor."""
        for lay in (self.existing_layout(view.graph, v.id), L.default_layout(v.rank)):
            if matrix_layout_ok(lay, v.element, batch, rows, cols):
                yield _operand(lay, ins.id, n, why, mandatory, True)
                return
        forced = L.from_major_to_minor([*batch, *rows, *cols])
        yield _operand(forced, ins.id, n, why, mandatory, mandatory)

    def _dot(self, view: "TargetView", ins: "Instruction") -> Iterator[Demand]:
        g = view.graph
        sides = self._dot_sides(g, ins)
        lhs, rhs = sides[0][1], sides[1][1]
        out = g.values[ins.results[0]]
        s8 = out.element == "s32" and lhs.element == "s8" and rhs.element == "s8"
        fp8 = lhs.element in _FP8_MINOR_K and rhs.element in _FP8_MINOR_K
        blackwell = self.platform == "cuda" and self.compute_capability[0] in (10, 11, 12)
        minor_k = s8 or (fp8 and not blackwell)
        for n, v, batch, contracting, free in sides:
            if not v.is_array:
                continue
            if minor_k or (self.pack_dot_operands_along_k and self._is_packed(g, v.id, set())):
                why = Origin("target:gpu-dot-minor-contracting", ins.id, None,
                             f"{'int8' if s8 else 'FP8' if minor_k else 'packed'} GEMMs need the "
                             "contracting dimensions most minor")
                lay = self.existing_layout(g, v.id)
                k = len(contracting)
                if all(d in contracting for d in lay[:k]) and matrix_layout_ok(lay, v.element, batch, free, contracting):
                    yield _operand(lay, ins.id, n, why)
                else:
                    yield _operand(L.from_major_to_minor([*batch, *free, *contracting]), ins.id, n, why)
            elif batch or len(contracting) > 1 or len(free) > 1:
                why = Origin("target:gpu-dot-operand", ins.id, None,
                             "cuBLAS needs batch, contracting and free dimensions each contiguous, "
                             "batch not most minor")
                yield from self._dot_operand(view, ins, n, v, batch, contracting, free, True, why)
            elif self._chain_ends_with_auto(view, v.id):
                why = Origin("target:gpu-dot-auto-layout", ins.id, None,
                             "a matrix read from a free entry parameter: suggest a layout cuBLAS takes")
                yield from self._dot_operand(view, ins, n, v, batch, contracting, free, False, why)
        (_, _, lb, _, lnc), (_, _, _, _, rnc) = sides
        if lb or len(lnc) > 1 or len(rnc) > 1:
            # A layout a user already asked for, if cuBLAS can write it.
            for user, i in out.uses:
                if g.instrs[user].op == "root":
                    continue
                c = view.operand_constraint(user, i)
                if c is not None and self.dot_supports(g, ins, c.layout):
                    why = Origin("target:gpu-dot-output", ins.id, None,
                                 "the dot writes the layout its user asked for")
                    yield Demand.on_results(ins.id, [c.layout], why)
                    return
            why = Origin("target:gpu-dot-output", ins.id, None,
                         "a batched or multi-dimensional dot writes the default layout")
            yield Demand.on_results(ins.id, [L.default_layout(out.rank)], why)

    def _transpose_of_dot(self, view: "TargetView", ins: "Instruction") -> Iterator[Demand]:
        """Make a transpose of a single-use dot a bitcast to a default-layout result."""
        g = view.graph
        v = g.values[ins.operands[0]]
        dot = g.instrs[v.producer]
        if dot.op in ("parameter", "root") or view.rule(dot.id).hlo not in _DOTS or "lhs_batch" not in dot.attrs:
            return
        if len({user for user, _ in v.uses}) > 1:
            return
        lay = L.from_major_to_minor(ins.attrs["perm"])
        if self.dot_supports(g, dot, lay):
            why = Origin("target:gpu-transpose-of-dot", ins.id, None,
                         "the dot writes a layout that makes this transpose a bitcast")
            yield _operand(lay, ins.id, 0, why)

    # -- the rest ---------------------------------------------------------------------
    def _sort(self, view: "TargetView", ins: "Instruction") -> Iterator[Demand]:
        g = view.graph
        why = Origin("target:gpu-sort-default", ins.id, None,
                     "the GPU sort reads and writes every array in the default layout")
        keys = L.default_layout(g.values[ins.operands[0]].rank)
        leaves = view.leaves(ins.id)
        for n, vid in enumerate(ins.operands):
            v = g.values[vid]
            if v.is_array and v.rank == len(keys):
                yield _operand(keys, ins.id, n, why)
            if n < len(leaves):
                r = g.values[leaves[n]]
                if r.is_array and r.buffer == r.id and r.rank == len(keys):
                    yield Demand.on_buffer(r.id, keys, why)

    def _bitcast_convert(self, view: "TargetView", ins: "Instruction") -> Iterator[Demand]:
        g = view.graph
        op = g.values[ins.operands[0]]
        out = g.values[ins.results[0]]
        if op.rank == out.rank or not (op.is_array and out.is_array):
            return
        larger, smaller = (op, out) if op.rank > out.rank else (out, op)
        big = _move_dim_to_minor(self.existing_layout(g, larger.id), larger.rank - 1)
        small = L.intern(big[1:])
        op_lay, out_lay = (big, small) if larger is op else (small, big)
        why = Origin("target:gpu-bitcast-convert-rank-change", ins.id, None,
                     "the split or merged element dimension is most minor, so the convert is a bitcast")
        yield _operand(op_lay, ins.id, 0, why)
        yield Demand.on_results(ins.id, [out_lay], why)

    def _collective_dim_major(self, view: "TargetView", ins: "Instruction", dim: int, what: str) -> Iterator[Demand]:
        g = view.graph
        why = Origin("target:gpu-collective-dim-major", ins.id, None,
                     f"XLA:GPU runs {what} only with dimension {dim} most major")
        layouts: list[L.Layout | None] = []
        for r in view.leaves(ins.id):
            v = g.values[r]
            layouts.append(_move_dim_to_major(self.existing_layout(g, r), dim)
                           if v.is_array and dim < v.rank else None)
        yield from self._set_instruction(view, ins.id, layouts, why)
