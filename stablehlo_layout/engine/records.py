"""The compiled core's constraint store and provenance, as Python reads them.

The core (``cpp/engine/store.*``, ``cpp/engine/provenance.*``) keeps constraints and their
provenance records as flat arrays of integers: layouts and rule names are
interned ids.  This module is the one place that translates: it interns
layouts and names for the core, turns the ``Origin`` objects the driver and
targets pass into core records, and builds ``Origin`` and constraint objects
back from the core's tables when explain, trace or a target reads them.  A
record becomes one ``Origin`` object at most, so identity (which explain's
chain sharing relies on) is stable.
"""

from __future__ import annotations

from typing import Any, Iterator

from stablehlo_layout.engine import core as seam
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import BUFFER, OPERAND, RESULT, BufferConstraint, OperandConstraint, Origin

_KINDS = ("", BUFFER, OPERAND, RESULT)
# The rule of a constraint's origin in a run without provenance (state.EngineState).
UNRECORDED = "unrecorded"
_KIND_CODES = {k: n for n, k in enumerate(_KINDS)}


class Records:
    """Layout and name ids, and Origins to and from core records, for one engine run."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.layouts: list[L.Layout] = []  # by core id
        self.layout_ids: dict[L.Layout, int] = {}
        self.names: list[str] = list(seam.RULE_NAMES)
        self.name_ids: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self._objects: dict[int, Origin] = {}  # record -> its Origin
        self._records: dict[int, tuple[Origin, int]] = {}  # id(Origin) -> (the Origin, kept alive; record)

    # -- ids ----------------------------------------------------------------
    def lid(self, layout: L.Layout) -> int:
        if layout.__class__ is not tuple:
            layout = L.intern(layout)  # a user target may hand over a list
        i = self.layout_ids.get(layout)
        if i is None:
            i = self.layout_ids[layout] = self.core.intern(list(layout))
            self._sync(i)
        return i

    def layout(self, i: int) -> L.Layout:
        if i >= len(self.layouts):
            self._sync(i)
        return self.layouts[i]

    def table(self) -> list[L.Layout]:
        """Every layout the core interned so far, by id (the list itself, not a copy)."""
        self._sync(len(self.layouts))
        return self.layouts

    def _sync(self, i: int) -> None:
        for t in self.core.layouts_from(len(self.layouts)):
            lay = L.intern(t)
            self.layout_ids.setdefault(lay, len(self.layouts))
            self.layouts.append(lay)

    def name(self, text: str) -> int:
        i = self.name_ids.get(text)
        if i is None:
            i = self.name_ids[text] = len(self.names)
            self.names.append(text)
        return i

    # -- Origins into records -------------------------------------------------
    def record(self, origin: Origin | None) -> int:
        """The core record of ``origin``, made on first sight; -1 for None."""
        if origin is None:
            return -1
        got = self._records.get(id(origin))
        if got is not None:
            return got[1]
        rec = self.core.make_origin(self.name(origin.rule), -1 if origin.instr is None else origin.instr,
                                    self.record(origin.parent), self.name(origin.note),
                                    _KIND_CODES[origin.kind])
        self._records[id(origin)] = (origin, rec)
        self._objects[rec] = origin
        return rec

    def why(self, origin: Origin | tuple) -> tuple[int, int, int, int, int]:
        """(rule, instr, parent, note, made): a tuple origin as its parts, an Origin as its record."""
        if origin.__class__ is Origin:
            return 0, -1, -1, 0, self.record(origin)
        # The built-in targets hand over one per instruction: known names are looked up inline.
        ids = self.name_ids
        parts: tuple = origin  # type: ignore[assignment]  # not an Origin: a tuple
        rule, instr, parent = parts[0], parts[1], parts[2]
        r = ids.get(rule)
        if r is None:
            r = self.name(rule)
        n = 0
        if len(parts) > 3:
            note = ids.get(parts[3])
            if note is None:
                note = self.name(parts[3])
            n = note
        return r, -1 if instr is None else instr, -1 if parent is None else self.record(parent), n, -1

    # -- records into Origins -------------------------------------------------
    def origin(self, rec: int) -> Origin | None:
        if rec < 0:
            return None
        chain = []
        r = rec
        while r >= 0 and r not in self._objects:
            chain.append(r)
            r = self.core.origin(r)[2]
        for r in reversed(chain):
            rule, instr, parent, note, *_ = self.core.origin(r)
            o = Origin(self.names[rule], None if instr < 0 else instr, self.origin(parent), self.names[note])
            self._objects[r] = o
            self._records[id(o)] = (o, r)
        o = self._objects[rec]
        if not o.kind:
            self._fill(o, rec)
        return o

    def _fill(self, o: Origin, rec: int) -> None:
        _, _, parent, _, kind, a, b, lay, priority, mandatory, dfs, round_, was = self.core.origin(rec)
        if not kind:
            return
        if o.parent is None and parent >= 0:
            o.parent = self.origin(parent)
        o.kind = _KINDS[kind]
        if kind == 3:
            o.target = (a,)
            o.layout = tuple(None if x < 0 else self.layout(x) for x in self.core.result_layouts(lay))
        else:
            o.target = (a,) if kind == 1 else (a, b)
            o.layout = self.layout(lay)
        o.priority, o.mandatory, o.dfs, o.round = priority, mandatory, dfs, round_
        o.was = None if was < 0 else self.layout(was)

    # -- constraints ----------------------------------------------------------
    def buffer(self, b: int) -> BufferConstraint | None:
        got = self.core.buffer(b)
        if got is None:
            return None
        lay, mandatory, dfs, priority, round_, origin = got
        history = tuple(self.layout(h) for h in self.core.history(b))
        return BufferConstraint(self.layout(lay), mandatory, dfs, priority, self._origin(origin), round_, b, history)

    def operand(self, key: tuple[int, int]) -> OperandConstraint | None:
        got = self.core.operand(*key)
        if got is None:
            return None
        lay, mandatory, dfs, priority, round_, origin = got
        return OperandConstraint(self.layout(lay), mandatory, dfs, priority, self._origin(origin), round_, *key)

    def _origin(self, rec: int) -> Origin:
        # A fast run's records hold the links (rule, instruction, parent, note)
        # but no facts; the Origin is built only when a constraint is read.
        # A constraint has a record unless the run keeps no provenance: then
        # what the core derived reads as unrecorded (a fresh one per read, as
        # a reader may fill an Origin in).
        o = self.origin(rec)
        if o is None:
            return Origin(UNRECORDED, None, None, "this run kept no provenance")
        return o


class BufferConstraints:
    """The buffer constraints of the current round, read-only, by buffer (value id)."""

    def __init__(self, records: Records, cache: bool = False) -> None:
        self._r = records
        self._cache: dict[int, BufferConstraint | None] | None = {} if cache else None

    def get(self, b: int, default: BufferConstraint | None = None) -> BufferConstraint | None:
        if self._cache is None:
            got = self._r.buffer(b)
        elif b in self._cache:
            got = self._cache[b]
        else:
            got = self._cache[b] = self._r.buffer(b)
        return default if got is None else got

    def __getitem__(self, b: int) -> BufferConstraint:
        got = self.get(b)
        if got is None:
            raise KeyError(b)
        return got

    def __contains__(self, b: object) -> bool:
        return isinstance(b, int) and self._r.core.has_buffer(b)

    def __iter__(self) -> Iterator[int]:
        return iter(self._r.core.buffer_order())

    def __len__(self) -> int:
        return len(self._r.core.buffer_order())

    def keys(self) -> list[int]:
        return list(self)

    def items(self) -> list[tuple[int, BufferConstraint]]:
        return [(b, self[b]) for b in self]

    def values(self) -> list[BufferConstraint]:
        return [self[b] for b in self]


class OperandConstraints:
    """The operand constraints of the current round, read-only, by (instruction, operand)."""

    def __init__(self, records: Records, cache: bool = False) -> None:
        self._r = records
        self._cache: dict[tuple[int, int], OperandConstraint | None] | None = {} if cache else None

    def get(self, key: tuple[int, int], default: OperandConstraint | None = None) -> OperandConstraint | None:
        if self._cache is None:
            got = self._r.operand(key)
        elif key in self._cache:
            got = self._cache[key]
        else:
            got = self._cache[key] = self._r.operand(key)
        return default if got is None else got

    def __getitem__(self, key: tuple[int, int]) -> OperandConstraint:
        got = self.get(key)
        if got is None:
            raise KeyError(key)
        return got

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self._r.core.operand(*key) is not None

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._r.core.operand_order())

    def __len__(self) -> int:
        return len(self._r.core.operand_order())

    def keys(self) -> list[tuple[int, int]]:
        return list(self)

    def items(self) -> list[tuple[tuple[int, int], OperandConstraint]]:
        return [(k, self[k]) for k in self]

    def values(self) -> list[OperandConstraint]:
        return [self[k] for k in self]
