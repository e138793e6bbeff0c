"""XLA:GPU's own layout-assignment unit tests, replayed through our xla-gpu target.

Each scenario in ``xla_gpu_scenarios/`` is one test of XLA's
``xla/service/gpu/transforms/layout_assignment_test.cc`` (every test of the
file), as an HLO text module (StableHLO where the HLO->StableHLO converter
cannot carry the test's HLO).  As in ``test_xla_scenarios.py``: the layouts
the test's ``ComputationLayout`` holds are the entry layout of the module;
a layout it leaves unset (``set_fill_missing_layouts(false)``) is written
without braces and stays free.  The test's device is the GPU named here:
``h100`` where the test runs on whatever GPU the machine has (its
expectations hold from Volta to Hopper), Hopper where it names Hopper, and
ROCm RDNA / CDNA models for the ROCm tests.  Each test asserts what the XLA
test asserts, in our terms.

The file replayed is openxla/xla's at commit 0970ea329a0e (33 tests).  Where
that XLA and the tested jaxlibs differ, both rules are kept, keyed by the XLA
version (``targets/xla_version.py``), and both are tested
(ReduceOperandLayoutDivisorOfWarpSize and its ``_tested_jaxlibs`` twin).  Not replayed:
BlockScaledDotFusionLayout of other versions (a cuDNN fusion instruction:
StableHLO has no fusions, and XLA:GPU fuses after layout assignment) and the
whole-pipeline MatchOptimizedHlo tests of older versions (ConvCuDNNF8 / BF16
/ FP16), whose layout part the real dumps in ``xla_gpu_dumps/`` cover.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.targets import XlaGpuTarget, load_gpu, xla_version
from tests.unit.test_xla_scenarios import Outcome

SCENARIOS = Path(__file__).parent / "xla_gpu_scenarios"
Layout = tuple[int, ...]

# The ROCm tests' devices (se::RocmComputeCapability::EarliestRDNASupport /
# EarliestCDNASupport): only CDNA has NHWC convolutions.
RDNA = replace(load_gpu("h100"), name="rdna", platform="rocm", compute_capability=(0, 0), rocm_arch="gfx1030")
CDNA = replace(load_gpu("h100"), name="cdna", platform="rocm", compute_capability=(0, 0), rocm_arch="gfx908")


@cache
def _ctx():
    return mlir.make_context()


def run(name: str, target: XlaGpuTarget | None = None) -> Outcome:
    module = mlir.read_input(str(SCENARIOS / name), _ctx())
    return Outcome(assign_module(module, target or XlaGpuTarget("h100"), "default"))


def test_every_scenario_has_a_test() -> None:
    files = {p.stem for p in SCENARIOS.iterdir() if p.suffix in (".hlo", ".mlir")}
    tested = {n[5:] for n in globals() if n.startswith("test_") and n != "test_every_scenario_has_a_test"}
    assert files <= tested | {"Elementwise"}, files - tested
    assert len(files) + 1 == 33  # Elementwise is built below, one module per layout combination


@pytest.mark.parametrize("lhs", [(1, 0), (0, 1)])
@pytest.mark.parametrize("rhs", [(1, 0), (0, 1)])
@pytest.mark.parametrize("out", [(1, 0), (0, 1)])
def test_Elementwise(lhs: Layout, rhs: Layout, out: Layout) -> None:
    # The add and its two operands share a layout, whatever the entry layouts.
    def fmt(lay: Layout) -> str:
        return "{" + ",".join(map(str, lay)) + "}"

    text = (f"HloModule Elementwise, entry_computation_layout={{(f32[42,12]{fmt(lhs)}, f32[42,12]{fmt(rhs)})"
            f"->f32[42,12]{fmt(out)}}}\n\nENTRY e {{\n  x = f32[42,12] parameter(0)\n"
            "  y = f32[42,12] parameter(1)\n  ROOT add = f32[42,12] add(x, y)\n}\n")
    o = Outcome(assign_module(mlir.load(text.encode(), "Elementwise.hlo", _ctx()), XlaGpuTarget("h100")))
    assert o.operand_layout("add", 0) == o.operand_layout("add", 1) == o.layout("add")


# -- dots -----------------------------------------------------------------------


def test_DotLayoutUnchangedIfValid() -> None:
    o = run("DotLayoutUnchangedIfValid.hlo")
    assert (o.operand_layout("dot.1330.10585", 0), o.operand_layout("dot.1330.10585", 1)) == ((1, 2, 0), (1, 2, 0))
    assert o.layout("dot.1330.10585") == (2, 1, 0)
    assert o.copies == []


def test_DotLayoutSetToDefaultIfDefaultValid() -> None:
    o = run("DotLayoutSetToDefaultIfDefaultValid.hlo")
    assert (o.operand_layout("dot.1330.10585", 0), o.operand_layout("dot.1330.10585", 1)) == ((2, 1, 0), (2, 1, 0))
    assert o.layout("dot.1330.10585") == (2, 1, 0)


def test_DotOperandLayoutSetToBatchRowsColsOtherwise() -> None:
    o = run("DotOperandLayoutSetToBatchRowsColsOtherwise.hlo")
    assert o.operand_layout("dot.1330.10585", 0) == (0, 1, 2)
    assert o.operand_layout("dot.1330.10585", 1) == (1, 0, 2)


def test_DotOperandInconsistentDimLayouts() -> None:
    o = run("DotOperandInconsistentDimLayouts.hlo")
    assert o.operand_layout("dot.1330.10585", 0) == (3, 2, 1, 0)
    assert o.operand_layout("dot.1330.10585", 1) == (3, 2, 0, 1)


def test_TransposedDotLayout() -> None:
    o = run("TransposedDotLayout.hlo")
    assert (o.operand_layout("dot", 0), o.operand_layout("dot", 1)) == ((2, 1, 0), (3, 2, 1, 0))
    assert o.layout("dot") == (3, 2, 0, 1)
    assert o.layout("out") == o.root_layout(0) == (3, 2, 1, 0)
    assert o.copies == []  # the transpose is a bitcast of the dot


def test_TransposedDotOfDotLayout() -> None:
    o = run("TransposedDotOfDotLayout.hlo")
    assert (o.operand_layout("dot.1", 0), o.operand_layout("dot.1", 1)) == ((1, 0), (3, 2, 0, 1))
    assert o.layout("dot.1") == (3, 2, 1, 0)
    # dot.2 reads dot.1 through a copy: its lhs needs {3,1,0,2}, which dot.1 cannot write.
    assert [c for c in o.copies if c.consumer == "dot.2"] == [
        type(o.copies[0])("dot.1", "dot.2", 0, (3, 2, 1, 0), (3, 1, 0, 2))]
    assert o.operand_layout("dot.2", 1) == (1, 0)
    assert o.layout("dot.2") == (3, 2, 1, 0)
    assert o.layout("out") == (2, 3, 0, 1)


def test_DotLayoutS8() -> None:
    o = run("DotLayoutS8.hlo")
    assert (o.operand_layout("out", 0), o.operand_layout("out", 1)) == ((1, 0), (0, 1))


def test_AutoLayoutE4M3ContractingMinorFirst() -> None:
    o = run("AutoLayoutE4M3ContractingMinorFirst.hlo")
    assert (o.param(0), o.param(1), o.layout("dot")) == ((1, 0), (0, 1), (1, 0))
    assert o.copies == []
    # On Blackwell FP8 GEMMs take any layout cuBLAS does: no contracting-minor rule.
    b = run("AutoLayoutE4M3ContractingMinorFirst.hlo", XlaGpuTarget("b200"))
    assert b.param(1) == (1, 0)


PACKED = XlaGpuTarget("h100", pack_dot_operands_along_k=True)


def test_AutoLayoutS4DotContractingMinorLhs() -> None:
    o = run("AutoLayoutS4DotContractingMinorLhs.hlo", PACKED)
    assert (o.param(0), o.param(1), o.layout("dot")) == ((0, 1), (1, 0), (1, 0))


def test_AutoLayoutS4DotContractingMinorRhs() -> None:
    o = run("AutoLayoutS4DotContractingMinorRhs.hlo", PACKED)
    assert (o.param(0), o.param(1), o.layout("dot")) == ((1, 0), (0, 1), (1, 0))


def test_AutoLayoutS4DotFollowingTheChain() -> None:
    o = run("AutoLayoutS4DotFollowingTheChain.hlo", PACKED)
    assert (o.param(0), o.param(1), o.param(2), o.layout("dot")) == ((0, 1), (0, 1), (1, 0), (1, 0))


def test_DotSetsNonMandatoryConstraintIfAutoLayout() -> None:
    o = run("DotSetsNonMandatoryConstraintIfAutoLayout.hlo")
    assert o.param(1) == (1, 2, 0)


# -- sort, TopK, bitcast-convert, fft -----------------------------------------------


def test_SameLayoutOnOperandsAndOutputsOfSort() -> None:
    o = run("SameLayoutOnOperandsAndOutputsOfSort.hlo")
    assert (o.operand_layout("sort", 0), o.operand_layout("sort", 1)) == ((1, 0), (1, 0))


def test_SameLayoutOnOperandsAndOutputsOfCubDeviceRadixSort() -> None:
    o = run("SameLayoutOnOperandsAndOutputsOfCubDeviceRadixSort.hlo")
    reads, out = call_layouts(o, "sort")
    assert reads == [(1, 0), (1, 0)] and out == (1, 0)


def test_TopKLayout() -> None:
    o = run("TopKLayout.hlo")
    reads, out = call_layouts(o, "custom-call.1")
    assert reads == [(1, 0)] and o.layout("t") == (1, 0) and out == (1, 0)
    assert o.operand_layout("t", 0) == (0, 1)
    assert [(c.source, c.consumer, c.dst) for c in o.copies] == [("param0", "t", (0, 1))]


def test_BitcastConvertFromNarrowerTypeGetsOptimalInputLayout() -> None:
    o = run("BitcastConvertFromNarrowerTypeGetsOptimalInputLayout.hlo")
    assert o.param(0) == (0, 1, 2)
    assert [(c.source, c.consumer, c.dst) for c in o.copies] == [("param0", "b", (2, 0, 1))]


def test_BitcastConvertToNarrowerTypeGetsOptimalOutputLayout() -> None:
    o = run("BitcastConvertToNarrowerTypeGetsOptimalOutputLayout.hlo")
    assert o.param(0) == (1, 0)
    assert o.operand_layout("b", 0) == (0, 1)
    assert o.layout("b") == (2, 0, 1)
    assert o.root_layout(0) == (0, 1, 2)  # root = copy(bitcast-convert(copy(p)))


def test_FftLayout() -> None:
    o = run("FftLayout.hlo")
    assert o.operand_layout("fft", 0) == o.layout("fft") == (1, 0)
    assert o.root_layout(0) == (1, 0) and o.layout("transpose") != (1, 0)  # root = copy(transpose(fft))


# -- custom calls ------------------------------------------------------------------


def test_CustomCallConstrainedAlias() -> None:
    o = run("CustomCallConstrainedAlias.hlo")
    reads, out = call_layouts(o, "custom-call.0")
    assert out == (1, 2, 0)
    assert reads == [(1, 2, 0), (1, 2, 0)]


def check_memory_placement(name: str) -> None:
    o = run(name)
    assert o.operand_layout("custom-call.0", 0) == o.layout("custom-call.0") == (2, 1, 0)


def test_MoveToHostCustomCallConstrained() -> None:
    check_memory_placement("MoveToHostCustomCallConstrained.hlo")


def test_MoveToDeviceCustomCallConstrained() -> None:
    check_memory_placement("MoveToDeviceCustomCallConstrained.hlo")


# -- cuDNN / MIOpen convolutions (custom calls with dim_labels b10f_o10i->b10f) --


def call_layouts(o: Outcome, name: str) -> tuple[list[Layout], Layout]:
    """What custom call ``name`` reads (copies included) and its result element 0."""
    call = next(i for i in o.g.instrs if i.loc == name and i.op == "stablehlo.custom_call")
    reads = []
    for n, vid in enumerate(call.operands):
        dst = [c.dst for c in o.copies if c.consumer == name and c.operand == n]
        reads.append(dst[0] if dst else tuple(o.a.layouts[vid]))
    return reads, tuple(o.a.layouts[o.g.leaves(call.results[0])[0]])


def conv_layouts(o: Outcome) -> tuple[Layout, Layout, Layout]:
    (lhs, rhs), out = call_layouts(o, "conv")
    return lhs, rhs, out


def copied_params(o: Outcome) -> set[str]:
    return {c.source for c in o.copies if c.consumer == "conv"}


def check_conv(name: str, target: XlaGpuTarget, want: Layout) -> None:
    o = run(name, target)
    assert conv_layouts(o) == (want, want, want)
    assert copied_params(o) == {"param0", "param1"}


def test_FP16ROCmConvolutionHasNCHWLayoutRDNA() -> None:
    check_conv("FP16ROCmConvolutionHasNCHWLayoutRDNA.hlo", XlaGpuTarget(RDNA, rocm_nhwc=True), (1, 2, 3, 0))


def test_FP32ROCmConvolutionHasNCHWLayoutRDNA() -> None:
    check_conv("FP32ROCmConvolutionHasNCHWLayoutRDNA.hlo", XlaGpuTarget(RDNA), (1, 2, 3, 0))


def test_FP16ROCmConvolutionHasNHWCLayoutCDNA() -> None:
    check_conv("FP16ROCmConvolutionHasNHWCLayoutCDNA.hlo", XlaGpuTarget(CDNA, rocm_nhwc=True), (3, 1, 2, 0))
    # Without TF_USE_ROCM_NHWC the same device stays NCHW.
    assert conv_layouts(run("FP16ROCmConvolutionHasNHWCLayoutCDNA.hlo", XlaGpuTarget(CDNA)))[0] == (1, 2, 3, 0)


def test_FP32ROCmConvolutionHasNCHWLayoutCDNA() -> None:
    check_conv("FP32ROCmConvolutionHasNCHWLayoutCDNA.hlo", XlaGpuTarget(CDNA), (1, 2, 3, 0))


def test_CuDNNConvolutionHasNHWCLayoutPostHopper() -> None:
    check_conv("CuDNNConvolutionHasNHWCLayoutPostHopper.hlo", XlaGpuTarget("h100"), (3, 1, 2, 0))
    # Before Hopper the same f32 convolution is NCHW.
    assert conv_layouts(run("CuDNNConvolutionHasNHWCLayoutPostHopper.hlo", XlaGpuTarget("a100")))[0] == (1, 2, 3, 0)


def test_F64CuDNNConvolutionHasNCHWLayoutPostHopper() -> None:
    check_conv("F64CuDNNConvolutionHasNCHWLayoutPostHopper.hlo", XlaGpuTarget("h100"), (1, 2, 3, 0))


# -- reductions ----------------------------------------------------------------------


def test_ReduceOperandLayout() -> None:
    o = run("ReduceOperandLayout.hlo")
    assert o.operand_layout("reduce.2", 0) == (3, 1, 4, 2, 0)


def test_ReduceOperandLayoutDivisorOfWarpSize() -> None:
    """The XLA of the replayed test: 16 reduced elements divide the warp size, a row reduction.

    Run with that XLA's rule (``xla_version.ROW_REDUCTION_WARP_DIVISORS_SINCE``); the tested
    jaxlibs' own rule is the next test's."""
    o = run("ReduceOperandLayoutDivisorOfWarpSize.hlo",
            XlaGpuTarget("h100", xla=xla_version.ROW_REDUCTION_WARP_DIVISORS_SINCE))
    assert o.operand_layout("reduce.2", 0) == (1, 3, 2, 0)


def test_ReduceOperandLayoutDivisorOfWarpSize_tested_jaxlibs() -> None:
    """jaxlib 0.10.2's and 0.12.0.1's XLA:GPU need >= 32 reduced elements: the 16-element
    reduction keeps reading the row-major operand, as their real dumps show
    (xla_gpu_dumps/*/reduce_16_f32 vs reduce_32_f32, docs/VERSIONS.md item 6)."""
    for xla in ((0, 10, 2), (0, 12, 0, 1)):
        o = run("ReduceOperandLayoutDivisorOfWarpSize.hlo", XlaGpuTarget("h100", xla=xla))
        assert o.operand_layout("reduce.2", 0) == (3, 2, 1, 0)
    if xla_version.installed_xla() < xla_version.ROW_REDUCTION_WARP_DIVISORS_SINCE:
        assert run("ReduceOperandLayoutDivisorOfWarpSize.hlo").operand_layout("reduce.2", 0) == (3, 2, 1, 0)


def test_VariadicReduceSameOperandLayout() -> None:
    o = run("VariadicReduceSameOperandLayout.hlo")
    assert o.operand_layout("reduce.2", 0) == o.operand_layout("reduce.2", 1)


# -- collectives and transfers -------------------------------------------------------


def test_SendRcvLayout() -> None:
    o = run("SendRcvLayout.mlir")
    assert o.layout("rcvd", 0) == (1, 0)
    assert o.operand_layout("snd", 0) == o.operand_layout("snd.1", 0) == (1, 0)


def test_RaggedAllToAllLayoutSetRaggedDimToMajor() -> None:
    o = run("RaggedAllToAllLayoutSetRaggedDimToMajor.hlo")
    op0, op1 = o.operand_layout("ra2a", 0), o.operand_layout("ra2a", 1)
    assert op0 == op1 == o.layout("ra2a")
    assert o.layout("ra2a")[-1] == 0  # the ragged dimension is most major
