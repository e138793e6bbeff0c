"""The rewrite reads a bare-name location's text without printing it, and gets the same text.

``rewrite._name_quickly`` is a shortcut to ``Instruction.loc`` (which prints the
location, ``graph.location_text``) for the names copies are called after; for
every name it must give what ``location_text`` gives, or leave it to it.
"""

from __future__ import annotations

import pytest
from jaxlib.mlir import ir

from stablehlo_layout.graph import Instruction, location_text
from stablehlo_layout.rewrite import _name_quickly

NAMES = [
    "dot.3", "reduce_max.10", "a b", "x.py:12:8", "loc(", "with )", "tab\there", "new\nline", 'say "hi"',
    "back\\slash", "caf\u00e9", "\u2603", "", " ", "del\x7f", "nul\x00byte", "%arg0#1", "#loc3",
]


def _instruction(where) -> Instruction:
    return Instruction(0, "stablehlo.add", 0, [], [], {}, where)


@pytest.mark.parametrize("name", NAMES)
def test_a_bare_name_reads_as_location_text_reads_it(ctx: ir.Context, name: str) -> None:
    with ctx:
        loc = ir.Location.name(name, childLoc=ir.Location.unknown())
    ins = _instruction(loc)
    _name_quickly(ins)
    assert ins.loc == location_text(loc)


def test_the_shortcut_is_taken_for_plain_names_only(ctx: ir.Context) -> None:
    with ctx:
        plain = ir.Location.name("dot.3", childLoc=ir.Location.unknown())
        quoted = ir.Location.name('say "hi"', childLoc=ir.Location.unknown())
        over_a_file = ir.Location.name("dot.3", childLoc=ir.Location.file("m.py", 3, 4))
        a_file = ir.Location.file("m.py", 3, 4)
    ins = _instruction(plain)
    _name_quickly(ins)
    assert ins.where == "dot.3"  # formatted, without printing
    for loc in (quoted, over_a_file, a_file):
        ins = _instruction(loc)
        _name_quickly(ins)
        assert ins.where is loc  # left to location_text
        assert ins.loc == location_text(loc)
    assert _instruction(over_a_file).loc == "dot.3 (m.py:3:4)"
