"""The graph handed to the compiled core: one walk into its flat arrays.

The core (``cpp/``, module ``stablehlo_layout._core``) keeps the program as
struct-of-arrays keyed by our integer ids; this is the one place that fills
them from a ``Graph``.  Rows (a value's tuple elements, an instruction's
operands, ...) travel as a ``start`` list and an ``items`` list: row ``i`` is
``items[start[i]:start[i + 1]]``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from . import _core
from .graph import Graph
from .rules import OpRule


def _rows(rows: Iterable[Sequence[int]]) -> tuple[list[int], list[int]]:
    start, items = [0], []
    add, extend = start.append, items.extend
    for row in rows:
        extend(row)
        add(len(items))
    return start, items


def build_index(g: Graph, rules: Sequence[OpRule]) -> _core.Index:
    """The core's view of ``g``; ``rules`` (per instruction, the target's) say which ops are whiles."""
    assert g.entry is not None
    values, instrs, comps = g.values, g.instrs, g.comps
    return _core.Index(
        [v.producer for v in values],
        [v.elements is not None for v in values],
        [bool(v.uses) for v in values],
        *_rows(v.elements or () for v in values),
        [ins.comp for ins in instrs],
        [ins.op == "root" for ins in instrs],
        [r.hlo == "while" for r in rules],
        *_rows(ins.operands for ins in instrs),
        *_rows(ins.results for ins in instrs),
        *_rows(ins.callees for ins in instrs),
        [c.root for c in comps],
        [c.kind == "func" for c in comps],
        *_rows(c.instrs for c in comps),
        g.entry,
    )
