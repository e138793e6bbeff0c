"""Real XLA:GPU dumps: our xla-gpu target on XLA's before dump vs XLA's after dump.

``xla_gpu_dumps/<gpu>/<program>.{before,after}.txt`` were compiled deviceless
by XLA:GPU (jax-cuda12-plugin 0.10.2) for the shipped GPU configs
(``make.py`` there).  On each pair, every named value's layout must agree and
every copy XLA made must be one of ours, by (source, consumer, layout), the
same-layout copies of operands a cusolver call overwrites in place included
(``aliasing.py``); where XLA makes one copy per use and we share one, the copy
is ours by (source, layout).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.targets import XlaGpuTarget
from tests.differential.compare import compare_dumps

DUMPS = Path(__file__).parent / "xla_gpu_dumps"
PAIRS = sorted(DUMPS.glob("*/*.before.txt"))


def test_the_dumps_cover_four_generations():
    assert {p.parent.name for p in PAIRS} == {"a100", "b200", "h100", "v100"}
    assert len(PAIRS) == 2 * 18 + 2 * 3


@pytest.mark.parametrize("before", PAIRS, ids=lambda p: f"{p.parent.name}/{p.name[:-11]}")
def test_agrees_with_xla_gpu(before: Path):
    gpu = before.parent.name
    r = compare_dumps(str(before), str(before).replace(".before.", ".after."), target=XlaGpuTarget(gpu))
    assert r["status"] == "ok", r
    assert r["values"] > 0 and r["agree"] == r["values"], r["diffs"]
    assert [d for d in r["diffs"] if d["kind"] != "layout"] == []
    assert r["xla_copies_matched"] == r["xla_copies"]


def test_cusolver_in_place_operands_get_xla_same_layout_copies():
    """potrf, getrf, geqrf and syevd overwrite their operand: XLA copies each one first."""
    before = DUMPS / "h100" / "linalg_f32.before.txt"
    r = compare_dumps(str(before), str(before).replace(".before.", ".after."), target=XlaGpuTarget("h100"))
    # potrf's and syevd's operand is already column-major: copied as it is; getrf's
    # and geqrf's is the row-major parameter: a relayout copy, then the in-place one.
    same = [c for c in r["xla_copy_info"] if c["src_layout"] == c["dst"]]
    assert len(same) == 2 and all(c["matched"] for c in same), same
    assert r["xla_copies_matched"] == r["xla_copies"] == 13
    res = assign_module(mlir.read_input(str(before), mlir.make_context()), "xla-gpu", gpu="h100")
    in_place = [c for c in res.copies if c.in_place]
    targets = sorted(res.graph.instrs[c.edges[0].consumer].attrs["target"] for c in in_place)
    assert targets == ["cusolver_geqrf_ffi", "cusolver_getrf_ffi", "cusolver_potrf_ffi", "cusolver_syevd_ffi"]
    assert all(c.src == c.dst for c in in_place)


def conv_results(path: Path, gpu: str) -> dict[str, tuple[int, ...]]:
    """The layout of each cuDNN custom call's result (tuple element 0)."""
    ctx = mlir.make_context()
    res = assign_module(mlir.read_input(str(path), ctx), "xla-gpu", gpu=gpu)
    g = res.graph
    return {ins.attrs["target"]: tuple(res.assignment.layouts[g.leaves(ins.results[0])[0]])
            for ins in g.instrs if ins.attrs.get("target", "").startswith("__cudnn$conv")}


def test_the_same_dump_differs_by_gpu():
    # XLA:GPU's heuristic: f32 convolutions NHWC from Hopper on, NCHW before.
    before = DUMPS / "a100" / "conv_nchw_f32.before.txt"
    assert conv_results(before, "a100") == {"__cudnn$convForward": (3, 2, 1, 0)}
    assert conv_results(before, "h100") == {"__cudnn$convForward": (1, 3, 2, 0)}
    assert conv_results(before, "v100") == {"__cudnn$convForward": (3, 2, 1, 0)}
    # f16 goes NHWC from Volta on.
    f16 = DUMPS / "a100" / "conv_nchw_f16.before.txt"
    assert conv_results(f16, "v100") == {"__cudnn$convForward": (1, 3, 2, 0)}
    # 3-D convolutions stay NCHW, Hopper included.
    assert conv_results(DUMPS / "h100" / "conv3d_f32.before.txt", "h100") == {"__cudnn$convForward": (4, 3, 2, 1, 0)}


def test_fp8_gemm_rule_by_generation():
    # XLA copies the FP8 rhs to contracting-minor before Blackwell, not on it.
    for gpu, copies in (("v100", 1), ("a100", 1), ("h100", 1), ("b200", 0)):
        r = compare_dumps(str(DUMPS / gpu / "fp8_dot.before.txt"), str(DUMPS / gpu / "fp8_dot.after.txt"),
                          target=XlaGpuTarget(gpu))
        assert (r["xla_edges"], r["edges_matched"], r["our_edges"]) == (copies, copies, copies), gpu


@pytest.mark.parametrize("name", ["convnet_grad_nhwc_bf16", "transformer_grad_f32", "linalg_f32"])
def test_a_run_on_its_own_output_changes_nothing(name: str):
    # The layouts our output writes are read back as the instructions' given
    # layouts (as XLA:GPU reads a laid-out module's); the answer is the same.
    ctx = mlir.make_context()
    first = assign_module(mlir.read_input(str(DUMPS / "h100" / f"{name}.before.txt"), ctx), "xla-gpu", gpu="h100")
    text = str(first.module)
    again = assign_module(mlir.load(text.encode(), "out.mlir", ctx), "xla-gpu", gpu="h100")
    assert str(again.module) == text
