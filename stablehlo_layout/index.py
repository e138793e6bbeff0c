"""The graph handed to the compiled core: one walk into its flat arrays.

The core (``cpp/``, module ``stablehlo_layout._core``) keeps the program as
struct-of-arrays keyed by our integer ids; this is the one place that fills
them from a ``Graph``.  Rows (a value's tuple elements, an instruction's
operands, ...) travel as a ``start`` list and an ``items`` list: row ``i`` is
``items[start[i]:start[i + 1]]``.
"""

from __future__ import annotations

from itertools import accumulate, chain
from operator import attrgetter
from typing import Sequence

from . import _core
from .graph import Graph
from .rules import OpRule


def _rows(rows: list[Sequence[int]]) -> tuple[list[int], list[int]]:
    # map / chain / accumulate keep the per-row work in C: this runs over every op.
    return [0, *accumulate(map(len, rows))], list(chain.from_iterable(rows))


def _field(name: str, items: Sequence[object]) -> list:
    return list(map(attrgetter(name), items))


def build_index(g: Graph, rules: Sequence[OpRule]) -> _core.Index:
    """The core's view of ``g``; ``rules`` (per instruction, the target's) say which ops are whiles."""
    assert g.entry is not None
    values, instrs, comps = g.values, g.instrs, g.comps
    given = _field("elements", values)  # None for an array value, its leaves for a tuple
    elements = [() if e is None else e for e in given]
    return _core.Index(
        _field("producer", values),
        [e is not None for e in given],
        list(map(bool, _field("uses", values))),  # captures count: the importer records them as uses
        *_rows(elements),
        _field("comp", instrs),
        [op == "root" for op in _field("op", instrs)],
        [hlo == "while" for hlo in _field("hlo", rules)],
        *_rows(_field("operands", instrs)),
        *_rows(_field("results", instrs)),
        *_rows(_field("callees", instrs)),
        _field("root", comps),
        [kind == "func" for kind in _field("kind", comps)],
        *_rows(_field("instrs", comps)),
        g.entry,
    )
