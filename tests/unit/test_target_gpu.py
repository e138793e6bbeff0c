"""XLA:GPU backend rules, run in-process on small modules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends import cli
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.targets import XlaGpuTarget, get_target, load_gpu
from stablehlo_layout.targets.xla_gpu import matrix_layout_ok, reshape_layout
from tests.support.equivalence import assert_bit_identical
from tests.unit.test_lit_semantics import entry_mode, load_executable, run_lines
from tests.conftest import assign_text
from tests.support import ROOT

GPU_LIT_FILES = sorted((ROOT / "tests" / "lit").glob("xla_gpu_*.mlir"))


def run(text: str, target="xla-gpu", entry_layouts: str = "default"):
    r = assign_text(text, target, entry_layouts, exact=True)  # origins() reads provenance
    # The one note allowed: a pinned result XLA re-lays out beside an open one (XLA §8.5).
    assert [w for w in r.warnings if not w.startswith("note: entry result ")] == []
    return r


def layout_of(r, op: str, nth: int = 0, result: int = 0):
    hits = [i for i in r.graph.instrs if i.op == op]
    return r.assignment.layouts[hits[nth].results[result]]


def operand_layouts(r, op: str, nth: int = 0):
    """What the op reads: the copy's layout where one was inserted, else the producer's."""
    hits = [i for i in r.graph.instrs if i.op == op]
    ins = hits[nth]
    a = r.assignment
    out = []
    for n, vid in enumerate(ins.operands):
        c = a.operand_constraints.get((ins.id, n))
        out.append(c.layout if c is not None else a.layouts[vid])
    return out


def origins(r, op: str):
    iid = next(i.id for i in r.graph.instrs if i.op == op)
    rules = set()
    for c in list(r.assignment.buffer_constraints.values()) + list(r.assignment.operand_constraints.values()):
        o = c.origin
        while o is not None:
            if o.instr == iid and o.rule.startswith("target:gpu-"):
                rules.add(o.rule)
            o = o.parent
    return rules


def test_get_target_returns_gpu_without_warning():
    target, warning = get_target("xla-gpu")
    assert isinstance(target, XlaGpuTarget) and warning is None
    assert target.name == "xla-gpu" and target.inline_calls


BATCH_DOT = """
func.func public @main(%a: tensor<2x3x5xf32>, %b: tensor<3x4x5xf32>) -> tensor<5x2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [2] x [2], contracting_dims = [1] x [0] : (tensor<2x3x5xf32>, tensor<3x4x5xf32>) -> tensor<5x2x4xf32>
  return %0 : tensor<5x2x4xf32>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)


def test_batch_dot_operands_batch_rows_cols():
    r = run(BATCH_DOT)
    assert operand_layouts(r, "stablehlo.dot_general") == [(0, 1, 2), (1, 0, 2)]
    assert layout_of(r, "stablehlo.dot_general") == (2, 1, 0)
    assert len(r.copies) == 2
    assert "target:gpu-dot-operand" in origins(r, "stablehlo.dot_general")


def test_generic_target_leaves_batch_dot_alone():
    r = run(BATCH_DOT, target="generic")
    assert not r.copies


def test_s8_dot_contracting_minor():
    r = run("""
func.func public @main(%a: tensor<32x64xi8>, %b: tensor<64x96xi8>) -> tensor<32x96xi32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<32x64xi8>, tensor<64x96xi8>) -> tensor<32x96xi32>
  return %0 : tensor<32x96xi32>
}
""")
    assert operand_layouts(r, "stablehlo.dot_general") == [(1, 0), (0, 1)]


def test_packed_operand_needs_the_flag():
    text = """
func.func public @main(%p0: tensor<5120x128xi4> {mhlo.layout_mode = "auto"}, %p1: tensor<5120x1024xbf16> {mhlo.layout_mode = "auto"}) -> tensor<128x1024xbf16> {
  %c = stablehlo.convert %p0 : (tensor<5120x128xi4>) -> tensor<5120x128xbf16>
  %0 = stablehlo.dot_general %c, %p1, contracting_dims = [0] x [0] : (tensor<5120x128xbf16>, tensor<5120x1024xbf16>) -> tensor<128x1024xbf16>
  return %0 : tensor<128x1024xbf16>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    # GPUT "AutoLayoutS4DotContractingMinorLhs": with the flag the packed
    # lhs is read contracting-minor, and the free parameter follows.
    r = run(text, target=XlaGpuTarget(pack_dot_operands_along_k=True))
    assert r.assignment.entry_params == [(0, 1), (1, 0)]
    assert layout_of(r, "stablehlo.dot_general") == (1, 0)
    r = run(text)
    assert r.assignment.entry_params[0] == (1, 0)


TRANSPOSED_DOT = """
func.func public @main(%p0: tensor<5x2x3xf32>, %p1: tensor<5x3x4x6xf32>) -> tensor<2x5x4x6xf32> {
  %0 = stablehlo.dot_general %p0, %p1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<5x2x3xf32>, tensor<5x3x4x6xf32>) -> tensor<5x2x4x6xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0, 2, 3] : (tensor<5x2x4x6xf32>) -> tensor<2x5x4x6xf32>
  return %1 : tensor<2x5x4x6xf32>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)


def test_transposed_dot_writes_bitcast_layout():
    r = run(TRANSPOSED_DOT)
    assert layout_of(r, "stablehlo.dot_general") == (3, 2, 0, 1)
    assert layout_of(r, "stablehlo.transpose") == (3, 2, 1, 0)
    assert not r.copies
    assert "target:gpu-dot-output" in origins(r, "stablehlo.dot_general")
    assert "target:gpu-transpose-of-dot" in origins(r, "stablehlo.transpose")


def test_reduce_threshold():
    big = """
func.func public @main(%x: tensor<8x64x16xf32> {mhlo.layout_mode = "auto"}) -> tensor<8x16xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<8x64x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    r = run(big)
    assert r.assignment.entry_params == [(1, 2, 0)]
    r = run(big.replace("8x64x16", "8x16x16"))
    assert r.assignment.entry_params == [(2, 1, 0)]


def test_conv_depends_on_device():
    text = """
func.func public @main(%x: tensor<1x16x32x32xf16>, %w: tensor<32x16x3x3xf16>) -> tensor<1x32x32x32xf16> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x16x32x32xf16>, tensor<32x16x3x3xf16>) -> tensor<1x32x32x32xf16>
  return %0 : tensor<1x32x32x32xf16>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    nhwc = (1, 3, 2, 0)
    nchw = (3, 2, 1, 0)
    # f16 2-D: NHWC on Volta and later, NCHW on Pascal; ROCm only when enabled.
    assert layout_of(run(text), "stablehlo.convolution") == nhwc
    pascal = replace(load_gpu("v100"), compute_capability=(6, 1))
    rocm = replace(load_gpu("v100"), platform="rocm", compute_capability=(0, 0), rocm_arch="gfx90a")
    assert layout_of(run(text, XlaGpuTarget("v100")), "stablehlo.convolution") == nhwc
    assert layout_of(run(text, XlaGpuTarget(pascal)), "stablehlo.convolution") == nchw
    assert layout_of(run(text, XlaGpuTarget(rocm)), "stablehlo.convolution") == nchw
    assert layout_of(run(text, XlaGpuTarget(rocm, rocm_nhwc=True)), "stablehlo.convolution") == nhwc
    assert layout_of(run(text, XlaGpuTarget(force_conv_layout="nchw")), "stablehlo.convolution") == nchw
    # f32 before Hopper: NCHW (already the logical order, so no copies).
    r = run(text.replace("f16", "f32"), XlaGpuTarget("a100"))
    assert layout_of(r, "stablehlo.convolution") == nchw and not r.copies


def test_sort_and_triangular_solve():
    r = run("""
func.func public @main(%k: tensor<4x5xf32> {mhlo.layout_mode = "{0,1}"}, %a: tensor<2x4x4xf32>, %b: tensor<2x4x3xf32>) -> (tensor<4x5xf32> {mhlo.layout_mode = "auto"}, tensor<2x4x3xf32>) {
  %0 = "stablehlo.sort"(%k) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %1 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x4x4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %0, %1 : tensor<4x5xf32>, tensor<2x4x3xf32>
}
""")  # noqa: E501 (IR text, one op per line, as the tool reads it)
    assert layout_of(r, "stablehlo.sort") == (1, 0)
    assert operand_layouts(r, "stablehlo.sort") == [(1, 0)]
    assert layout_of(r, "stablehlo.triangular_solve") == (1, 2, 0)
    assert operand_layouts(r, "stablehlo.triangular_solve") == [(1, 2, 0), (1, 2, 0)]
    assert origins(r, "stablehlo.sort") == {"target:gpu-sort-default"}
    # Result 0 is auto, so XLA lays out the whole result: result 1 loses its row-major pin.
    assert [w[:71] for w in r.warnings] == ["note: entry result 1 (f32[2,4,3]) was pinned to {2,1,0} and is returned"]


def test_rewritten_gemm_is_rejected():
    with pytest.raises(PassError, match="after layout assignment"):
        run("""
func.func public @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.custom_call @"__cublas$gemm"(%a, %a) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
""")


def test_matrix_layout_ok():
    # (B,R,C), (B,C,R), (R,B,C), (C,B,R) major to minor are fine.
    assert matrix_layout_ok((2, 1, 0), "f32", [0], [1], [2])
    assert matrix_layout_ok((1, 2, 0), "f32", [0], [1], [2])
    assert matrix_layout_ok((2, 0, 1), "f32", [0], [1], [2])
    assert matrix_layout_ok((1, 0, 2), "f32", [0], [1], [2])
    # Batch most minor, a split group, or a type cuBLAS lacks: refused.
    assert not matrix_layout_ok((0, 1, 2), "f32", [0], [1], [2])
    assert not matrix_layout_ok((3, 1, 2, 0), "f32", [0], [1, 2], [3])
    assert not matrix_layout_ok((2, 1, 0), "s64", [0], [1], [2])


def test_reshape_layout_size_one_dims_travel_with_their_neighbour():
    # What jaxlib 0.10.2's XLA:GPU compiled for these reshapes (deviceless, H100).
    assert reshape_layout((10, 20), (0, 1), (1, 10, 20)) == (1, 0, 2)
    assert reshape_layout((10, 20), (0, 1), (10, 1, 20)) == (0, 2, 1)
    assert reshape_layout((10, 20), (0, 1), (10, 20, 1)) == (2, 0, 1)
    assert reshape_layout((10, 1, 20), (0, 2, 1), (10, 20)) == (0, 1)
    # Row-major stays row-major, with any number of size-1 dims.
    assert reshape_layout((2, 3), (1, 0), (1, 1, 2, 1, 3, 1)) == (5, 4, 3, 2, 1, 0)
    # A layout the dump gives that is an equivalent bitcast layout is kept.
    assert reshape_layout((10, 20), (1, 0), (1, 10, 20), given=(0, 2, 1)) == (0, 2, 1)
    assert reshape_layout((10, 20), (1, 0), (1, 10, 1, 20), given=(0, 2, 3, 1)) == (0, 2, 3, 1)
    # Another keeps where its size-1 dims sit: above the dim that follows them, major to minor.
    assert reshape_layout((10, 20), (1, 0), (1, 10, 20), given=(1, 2, 0)) == (2, 0, 1)
    assert reshape_layout((10, 20), (0, 1), (200,)) is None


def test_a_size_one_dim_keeps_its_place_from_the_dump(tmp_path, capsys):
    """XLA:GPU h100 on a sharded attention's dump (one head per device): the BEFORE module gives
    f32[1,2,16,16] {2,0,3,1}, its size-1 dim 0 above dim 2; a row-major f32[2,16,16] reshape of it
    makes XLA read it {3,2,0,1}, the size-1 dim still above dim 2 (AlignLayouts proper: {3,2,1,0})."""
    folder = ROOT / "tests" / "unit" / "xla_sharded_dumps" / "gpu" / "megatron_attention-2"
    before, after = ((folder / name).read_text() for name in ("before.txt", "after.txt"))
    assert "f32[1,2,16,16]{2,0,3,1} transpose(%dot_general.29)" in before
    assert "f32[1,2,16,16]{3,2,0,1} transpose(%dot_general.29)" in after
    assert reshape_layout((2, 16, 16), (2, 1, 0), (1, 2, 16, 16), given=(2, 0, 3, 1)) == (3, 2, 0, 1)
    out = tmp_path / "out.mlir"
    assert cli.main(["assign", "--target", "xla-gpu", "--gpu", "h100", str(folder / "before.txt"), "-o", str(out)]) == 0
    assert 'xla_shape = "f32[1,2,16,16]{3,2,0,1}"' in out.read_text()
    capsys.readouterr()


@pytest.mark.parametrize("path", GPU_LIT_FILES, ids=[p.name for p in GPU_LIT_FILES])
def test_gpu_rewrite_computes_the_same(path):
    """What the GPU rules write (copies, layouts) leaves the program's meaning alone."""
    module, original = load_executable(path)
    r = assign_module(module, "xla-gpu", entry_mode(run_lines(path.read_text())[0]))
    assert r.warnings == []
    assert module.operation.verify()
    assert_bit_identical(original, mlir.print_module(module))
