"""Layout algebra, checked exhaustively over small ranks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stablehlo_layout.model import layout as L


def perms(rank: int):
    return [tuple(p) for p in itertools.permutations(range(rank))]


def physical(x: np.ndarray, layout: L.Layout) -> np.ndarray:
    """The bytes of ``x`` stored in ``layout``, as a flat array."""
    return np.ascontiguousarray(np.transpose(x, L.to_major_to_minor(layout))).reshape(-1)


def test_default_layout_is_descending():
    assert L.default_layout(0) == ()
    assert L.default_layout(2) == (1, 0)
    assert L.default_layout(4) == (3, 2, 1, 0)


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
def test_transpose_derived_layouts_make_a_bitcast(rank):
    dims = tuple(range(2, 2 + rank))
    x = np.arange(np.prod(dims)).reshape(dims)
    for perm in perms(rank):
        y = np.transpose(x, perm)
        for out in perms(rank):
            operand = L.transpose_operand_layout(perm, out)
            assert L.transpose_is_bitcast(operand, out, perm)
            # Bitcast means: same bytes in memory.
            assert np.array_equal(physical(x, operand), physical(y, out))
            assert L.transpose_output_layout(perm, operand) == out


def test_transpose_is_bitcast_rejects_other_layouts():
    assert not L.transpose_is_bitcast((1, 0), (1, 0), (1, 0))
    assert L.transpose_is_bitcast((0, 1), (1, 0), (1, 0))


@pytest.mark.parametrize("rank", [2, 3, 4])
def test_broadcast_operand_layout_keeps_relative_order(rank):
    for out in perms(rank):
        for k in range(1, rank + 1):
            for bdims in itertools.combinations(range(rank), k):
                lay = L.broadcast_operand_layout(out, bdims)
                assert sorted(lay) == list(range(k))
                positions = [out.index(bdims[j]) for j in lay]
                assert positions == sorted(positions)


def test_reshape_is_bitcast_matches_memory():
    for in_dims, out_dims in [((2, 3, 4), (6, 4)), ((2, 3, 4), (2, 12)), ((4, 6), (24,)), ((2, 3), (3, 2))]:
        x = np.arange(np.prod(in_dims)).reshape(in_dims)
        y = x.reshape(out_dims)
        for a in perms(len(in_dims)):
            for b in perms(len(out_dims)):
                expect = np.array_equal(physical(x, a), physical(y, b))
                assert L.reshape_is_bitcast(in_dims, a, out_dims, b) == expect, (in_dims, a, out_dims, b)


@pytest.mark.parametrize("in_dims,out_dims", [
    ((2, 3, 4), (6, 4)), ((2, 3, 4), (2, 12)), ((6, 4), (2, 3, 4)), ((4, 6), (24,)),
    ((2, 1, 3), (3, 2)), ((1, 6), (2, 1, 3)), ((3, 8, 5, 7, 11), (4, 3, 2, 7, 5, 11)),
])
def test_align_layouts_finds_every_bitcast(in_dims, out_dims):
    """When it answers, the reshape is a bitcast; when it gives up, none with the same relative order exists."""
    x = np.arange(np.prod(in_dims)).reshape(in_dims)
    y = x.reshape(out_dims)
    for a in perms(len(in_dims)):
        got = L.align_layouts(in_dims, a, out_dims)
        if got is not None:
            assert L.is_permutation(got, len(out_dims))
            assert np.array_equal(physical(x, a), physical(y, got))
        elif all(d != 1 for d in in_dims + out_dims):
            assert not any(np.array_equal(physical(x, a), physical(y, b)) for b in perms(len(out_dims)))


def test_align_layouts_known_answers():
    # XLA's ShapeUtilTest.AlignLayoutsWithoutTrivialDimensions.
    assert L.align_layouts((3, 8, 5, 7, 11), (3, 2, 1, 0, 4), (4, 3, 2, 7, 5, 11)) == (4, 3, 2, 1, 0, 5)
    # Size-1 output dims go most major, in descending order.
    assert L.align_layouts((6,), (0,), (1, 6, 1)) == (1, 2, 0)


def test_reduce_layouts():
    assert L.reduce_output_layout((0, 1, 2), (1,)) == (0, 1)
    # XLA GPU test: operand c64[512,64,1024,32,128] dims {1,3}, output {2,1,0} -> operand {3,1,4,2,0}.
    assert L.reduce_operand_layout((2, 1, 0), (1, 3), 5) == (3, 1, 4, 2, 0)


@pytest.mark.parametrize("text", [
    "f32[16,4]{0,1}", "f32[]", "s32[3]{0}", "(f32[4,8]{0,1}, s32[4,8]{1,0})", "(f32[2]{0}, (pred[], u8[1,2]{1,0}))",
])
def test_shape_strings_round_trip(text):
    assert str(L.parse_shape(text)) == text


def test_shape_string_errors():
    with pytest.raises(ValueError):
        L.parse_shape("f32[2,3]{0,0}")
    with pytest.raises(ValueError):
        L.parse_layout("1,0")
    with pytest.raises(ValueError):
        L.parse_layout("{a,b}")


def test_jax_order_is_reversed():
    assert L.to_major_to_minor((0, 1)) == (1, 0)
    assert L.from_major_to_minor((1, 0)) == (0, 1)


def test_interning_shares_tuples():
    assert L.intern([1, 0]) is L.default_layout(2)


def test_reshape_derivable_is_xlas_one_rule_for_both_directions():
    # Two effectively rank-1 shapes: XLA derives nothing either way.
    assert not L.reshape_derivable((8,), (1, 8, 1))
    assert not L.reshape_derivable((1, 8), (8, 1))
    # A dynamic extent leaves nothing to align.
    assert not L.reshape_derivable((None, 4), (4, None))
    assert L.reshape_derivable((2, 8), (2, 8, 1))
    assert L.reshape_derivable((16,), (4, 4))


def test_reshape_only_size1_change():
    assert L.reshape_only_size1_change((2, 8), (2, 8, 1))
    assert L.reshape_only_size1_change((1, 2, 4, 8, 8), (2, 4, 8, 1, 8))
    assert not L.reshape_only_size1_change((2, 8), (8, 2))
    assert not L.reshape_only_size1_change((4, 4), (16,))
