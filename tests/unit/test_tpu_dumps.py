"""XLA:TPU's layout-assignment dumps (tests/unit/xla_tpu_dumps) against the rules docs/TPU-OBSERVED.md states.

Reads the stored dumps only: no jax[tpu] or libtpu needed.  The rules live in
``tests/differential/tpu_tiles_check.py``; a regenerated corpus (``make.py``)
that breaks one fails here.
"""

from __future__ import annotations

import os

import pytest

from tests.differential import tpu_tiles_check as check

GENERATIONS = ("v4", "v5e", "v5p", "v6e", "tpu7x")


def test_layout_grammar():
    lay = check.parse_layout("{2,0,1:T(8,128)(2,1)}")
    assert lay.minor_to_major == (2, 0, 1) and lay.tiles == ((8, 128), (2, 1)) and not lay.unknown
    assert check.parse_layout("{:T(128)}") == check.TpuLayout((), ((128,),))
    assert check.parse_layout("{0:T(256)(128)(2,1)}").tiles == ((256,), (128,), (2, 1))
    assert check.parse_layout("{1,0:T(8,128)S(1)}").memory_space == 1
    assert str(check.parse_layout("{1,0:T(4,128)(4,1)}")) == "{1,0:T(4,128)(4,1)}"


def test_tile_rules():
    assert check.instruction_tiles("f32", (), ()) == ((128,),)
    assert check.instruction_tiles("bf16", (300,), (0,)) == ((512,), (128,), (2, 1))
    assert check.instruction_tiles("f32", (5000,), (0,)) == ((1024,),)
    assert check.instruction_tiles("f32", (3, 5, 7), (2, 0, 1)) == ((4, 128),)
    assert check.instruction_tiles("bf16", (128, 1), (0, 1)) == ((2, 128), (2, 1))
    assert check.instruction_tiles("pred", (64, 128), (1, 0)) == ((8, 128), (4, 1))
    assert check.entry_tiles("pred", (64, 128), (1, 0)) == ((32, 128), (4, 1))
    assert check.default_entry_layout("f32", (100, 5)) == (0, 1)
    assert check.default_entry_layout("f32", (8, 32, 28, 28)) == (1, 0, 3, 2)
    assert check.default_entry_layout("bf16", (2, 1, 128)) == (2, 0, 1)
    assert check.default_entry_layout("f32", (2, 1, 128)) == (2, 1, 0)


@pytest.mark.parametrize("generation", GENERATIONS)
def test_every_array_of_the_corpus_follows_the_rules(generation):
    folder = os.path.join(check.DEFAULT_DUMPS, generation)
    r = check.check_generation(folder)
    assert r["programs"] >= 24
    for key in ("instruction", "entry", "default"):
        tally = r[key]
        assert tally.total > 300 and not tally.misses, (key, tally.misses[:5])
    assert not r["unknown_fields"]


def test_the_same_module_gets_the_same_layouts_on_every_generation():
    (agree, disagree), differ = check.across_generations(check.DEFAULT_DUMPS, list(GENERATIONS))
    assert agree > 200 and disagree == 0
