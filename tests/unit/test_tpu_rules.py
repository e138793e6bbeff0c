"""XLA:TPU's convolution and dot layout rules (TPU-OBSERVED §5) against its own dumps.

Each probe program of ``xla_tpu_dumps/make.py`` named below was compiled by
libtpu deviceless; our ``xla-tpu`` target runs on its BEFORE module and must
give every named value XLA's AFTER layout and make exactly XLA's copies.
Reads the stored dumps only: no jax[tpu] or libtpu needed.
"""

from __future__ import annotations

import os
import re

import pytest

from stablehlo_layout.targets import tpu_conv
from tests.differential import compare
from tests.support.hlo_dumps import jaxlib_reads

DUMPS = os.path.join(os.path.dirname(__file__), "xla_tpu_dumps")

# program -> what it shows
PROBES = {
    "conv_layouts_f32": "spatial dims most major, the batch/feature (kernel: i/o) pair minor in the order "
                        "that pads least, every label order, 1-D to 3-D",
    "conv_layouts_types": "the same pad-least choice under bf16 and s8 tiles",
    "conv_operands_as_is": "operands already in a convolution-shaped layout are read as they come",
    "dot_layouts": "batched dot operands and every dot result: pad-least pair, the last dim minor on a tie",
    "conv_nchw_f32": "forward convolution on PJRT's default entry layouts: no copy",
    "conv_nhwc_bf16": "forward convolution on PJRT's default entry layouts: no copy",
    "pinned_layouts_f32": "a 2-D dot's square result is row-major, then copied to the pinned layout",
    "sort_topk_f32": "TopK fed by a parameter: operand and results share the entry results' layout",
    "reduce_follows_operand": "a reduce writes its operand's layout, reduced dims taken out, and the copy to its "
                              "users' layout comes after it",
    "dense_dots": "dots without batch dims whose lhs has several free dims: lhs contracting dim in the minor pair, "
                  "rhs pad-least, result rhs free dim minor, the lhs free dims above it in the lhs's order",
    "pallas_add": "a Pallas (Mosaic) kernel's tpu_custom_call: its operand_layout_constraints honoured",
    "dot_reduce_ties": "a dot whose two result orders pad alike makes the dim the reduces downstream reduce the major "
                       "one, against the entry result's layout",
    "batched_dot_ties": "a batched dot's tied operands: lhs contracting dim minor and rhs last dim minor, the other "
                        "way round when the result is swapped, for every contracting-dim placement",
    "dot_chain_ties": "a tied dot that only batched dots read is left to them, operands read as they come; one with "
                      "another reader keeps its order",
    "reshape_bitcast": "a reshape stays a bitcast: of a transposed parameter both sides row-major, the copy between; "
                       "of a computed value the result follows it; a size-1 dim placed elsewhere costs no copy",
    "reshape_keeps_minor": "a reshape that no result layout makes a bitcast of its transposed operand: both row-major "
                           "(bf16, f32); one that some layout does, of a computed value: the result follows (s32)",
}


def _compared(generation: str, name: str) -> dict:
    """Our target against XLA:TPU on a committed probe (skipped where this jaxlib cannot read
    XLA 0.11+'s ``%t#i`` operands in its dump)."""
    folder = os.path.join(DUMPS, generation, name)
    if not jaxlib_reads(os.path.join(folder, "before.txt")):
        pytest.skip("this jaxlib cannot read XLA 0.11+'s tuple-element operands (%t#i) in the dump")
    r = compare.compare_dumps(os.path.join(folder, "before.txt"), os.path.join(folder, "after.txt"),
                              target="xla-tpu", tpu=generation, unique_keys=True)
    assert r["status"] == "ok", r.get("error")
    return r


@pytest.mark.parametrize("generation", ("v5e", "v6e"))
@pytest.mark.parametrize("program", sorted(PROBES))
def test_probe_agrees_with_xla(program, generation):
    r = _compared(generation, program)
    assert r["agree"] == r["values"], [d for d in r["diffs"] if d["kind"] == "layout"][:3]
    assert r["xla_copies_matched"] == r["xla_copies"] == r["our_copies"], \
        [d for d in r["diffs"] if d["kind"] != "layout"][:3]


@pytest.mark.parametrize("generation", ("v5e", "v6e"))
def test_inside_a_fusion_what_nothing_constrains_is_row_major(generation):
    """In ``fusion_row_major`` the second gather fusion (``fused_computation.1``:
    index arithmetic on s32[8,2,1], a bitpacking custom call, the gather) is
    row-major throughout, though {0,2,1} / {0,1} pad less: XLA gives fused
    instructions the default layout.  Its parameter takes the fusion operand's
    layout, which the target does not model (the fusion op is pinned row-major),
    nor the first fusion, whose gather reaches its root through a transpose."""
    folder = os.path.join(DUMPS, generation, "fusion_row_major")
    if not jaxlib_reads(os.path.join(folder, "before.txt")):
        pytest.skip("this jaxlib cannot read XLA 0.11+'s tuple-element operands (%t#i) in the dump")
    with open(os.path.join(folder, "after.txt")) as f:
        body = f.read().split("%fused_computation.1 ", 1)[1].split("\n}", 1)[0]
    # %name = type[dims]{minor_to_major:tiles} op(...), arrays of rank >= 2 only.
    fused = re.findall(r"%(\S+) = \w+\[(\d+(?:,\d+)+)\]\{([\d,]+)[:}].*? (\w[\w-]*)\(", body)
    names = {name for name, _, _, op in fused if op != "parameter"}
    assert len(names) >= 10
    assert all(m2m == ",".join(map(str, range(dims.count(","), -1, -1)))
               for name, dims, m2m, _ in fused if name in names), "XLA lays the fused instructions out row-major"
    r = compare.compare_dumps(os.path.join(folder, "before.txt"), os.path.join(folder, "after.txt"),
                              target="xla-tpu", tpu=generation, unique_keys=True)
    assert r["status"] == "ok", r.get("error")
    wrong = [d for d in r["diffs"] if d["kind"] == "layout" and d["name"] in names]
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("generation", ("v5e", "v6e"))
def test_the_copy_of_a_fixed_custom_call_result_goes_before_the_reshape(generation):
    """``reshape_of_custom_call``: each triangular solve's InvertDiagBlocks* custom
    call writes f32[1,4,4] ``{1,2,0}`` (its fixed layout); XLA:TPU keeps the reshape
    after it a bitcast and copies the custom call's result to ``{2,1,0}``.  (The
    dots after them break a tie the target does not reproduce: TPU-OBSERVED §8.)"""
    r = _compared(generation, "reshape_of_custom_call")
    xla = [c for c in r["xla_copy_full_info"] if c["src"].startswith("custom-call")]
    assert len(xla) == 2 and all(c["dst"].startswith("{2,1,0") for c in xla)
    assert all(c["matched"] for c in xla), xla
    assert all(c["in_xla"] for c in r["our_copy_full_info"]), r["our_copy_full_info"]


@pytest.mark.parametrize("generation", ("v5e", "v6e"))
def test_the_copy_before_a_reshape_goes_right_after_the_transpose(generation):
    """``reshape_copies_operand``: tanh(a) transposed and reshaped is copied
    after the transpose (f32[16,8,32] ``{2,0,1}`` -> ``{2,1,0}``), not at the
    parameter; so is tanh(e) (f32[8,4,4] ``{0,1,2}``); an s8 parameter whose
    layout pads more under the reshape is copied to the least-padded
    result's bitcast.  Not reproduced: e's copy keeps its minor dim
    (``{0,2,1}``, the reshape read by a dot; the target copies it row-major),
    the explicitly pinned f32[6,4,1,8] ``{3,1,2,0}``, copied to ``{3,1,0,2}``
    though only its size-1 dim moves, and the bf16 [8,4,128] ``{2,0,1}`` ->
    [8,512] reshape, a bitcast in the (8,128) tiles only, not copied."""
    r = _compared(generation, "reshape_copies_operand")
    xla = {c["src"]: c for c in r["xla_copy_full_info"]}
    for src, dst in (("transpose.3", "{2,1,0"), ("d.1", "{2,3,0,1")):
        assert xla[src]["dst"].startswith(dst) and xla[src]["matched"], xla[src]
    ours = {c["src"] for c in r["our_copy_full_info"]}
    assert "transpose.5" in ours and not ours & {"a.1", "e.1"}, r["our_copy_full_info"]
    wrong = {d["name"] for d in r["diffs"] if d["kind"] == "layout"}
    assert wrong <= {"tanh.6", "reshape.9"}, wrong


def test_conv_layout_pads_least():
    # NCHW input [b, f, 12, 12]: the pair (feature, batch), feature minor on a tie.
    assert tpu_conv.conv_layout("f32", (8, 32, 12, 12), (1, 0), (2, 3)) == (1, 0, 3, 2)
    assert tpu_conv.conv_layout("f32", (32, 8, 12, 12), (1, 0), (2, 3)) == (0, 1, 3, 2)
    assert tpu_conv.conv_layout("f32", (16, 16, 12, 12), (1, 0), (2, 3)) == (1, 0, 3, 2)
    # bf16 rows pad to 8 as f32's do (the instruction tiles): batch 12 vs feature 8.
    assert tpu_conv.conv_layout("bf16", (12, 8, 12, 12), (1, 0), (2, 3)) == (0, 1, 3, 2)
    # Past 128 lanes: f32[200, 300] pads less with 300 minor.
    assert tpu_conv.conv_layout("f32", (200, 300, 6, 6), (1, 0), (2, 3)) == (1, 0, 3, 2)


def test_conv_shape_check():
    assert tpu_conv.fits((0, 1, 3, 2), (1, 0), (2, 3))
    assert tpu_conv.fits((1, 0, 3, 2), (1, 0), (2, 3))
    assert not tpu_conv.fits((1, 0, 2, 3), (1, 0), (2, 3))  # spatial dims out of order
    assert not tpu_conv.fits((3, 2, 1, 0), (1, 0), (2, 3))


def test_an_array_of_no_elements_is_untiled():
    """XLA:TPU prints bf16[1,16,2,0]{3,2,1,0} with no tiles (the TPU differential, seed 1, program 7)."""
    from stablehlo_layout.targets import tpu_tiles
    from stablehlo_layout.targets.xla_tpu import XlaTpuTarget

    assert tpu_tiles.tiles("bf16", (1, 16, 2, 0), (3, 2, 1, 0)) is None
    assert tpu_tiles.least_padded("bf16", (1, 16, 2, 0)) is None
    assert XlaTpuTarget().tiling("bf16", (1, 16, 2, 0), (3, 2, 1, 0)) == ""
    assert XlaTpuTarget().tiling("bf16", (1, 16, 2, 1), (3, 2, 1, 0)) == "T(2,128)(2,1)"
