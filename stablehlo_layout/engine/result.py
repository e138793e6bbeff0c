"""The engine's answer (XLA's AssignLayouts): every value's layout, the copy edges, and the trace.

After the last round, the core reads every value's layout and every
operand slot whose demanded layout differs from what its value holds; this
room adds the copies XLA makes at region boundaries (captured values, a
branch's parameter) and at computation roots, and hands the result out as
plain data.  ``copy_groups`` is the rewrite's and explain's one order of the
copies to make.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import (
    BufferConstraint,
    ComputationLayout,
    Constraint,
    OperandConstraint,
    Origin,
    TraceEvent,
    new_result,
)
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import ARRAY, KIND_CODE, Graph, shape_text
from stablehlo_layout.engine.records import BufferConstraints, OperandConstraints

if TYPE_CHECKING:
    from stablehlo_layout.engine.interfaces import Interfaces
    from stablehlo_layout.engine.state import EngineState
    from stablehlo_layout.targets.base import Target


class _Unread:
    """A copy's demand not read yet: its operand slot in the store.

    Only explain and trace read a copy's demand (an ``OperandConstraint`` and
    its chain of ``Origin`` objects); the rewrite never does, so the result
    phase leaves it in the core until someone asks.
    """

    __slots__ = ("store", "key")

    def __init__(self, store: OperandConstraints, key: tuple[int, int]) -> None:
        self.store, self.key = store, key


class CopyEdge:
    """A consumer edge whose required layout differs from its producer's.

    ``demand`` is the constraint that asked for ``dst``; the answer hands most
    edges over with their operand slot in the store instead, read on first
    use (a large module has tens of thousands of edges and few readers).
    """

    __slots__ = ("value", "src", "dst", "consumer", "operand", "_demand", "inside", "aliased_output")
    _FIELDS = ("value", "src", "dst", "consumer", "operand", "demand", "inside", "aliased_output")

    def __init__(self, value: int, src: L.Layout, dst: L.Layout, consumer: int, operand: int,
                 demand: Constraint | _Unread | None, inside: int | None = None,
                 aliased_output: int | None = None) -> None:
        self.value = value
        self.src = src
        self.dst = dst
        self.consumer = consumer  # instruction id (a ``root`` pseudo-instruction for results)
        self.operand = operand
        self._demand = demand
        # A conditional's branch reads the value through a parameter that keeps
        # the outer layout; XLA then copies inside that branch (its computation id).
        self.inside = inside
        # Not a relayout: XLA's copy of an operand the custom call overwrites in
        # place through this output (aliasing.py); src == dst.
        self.aliased_output = aliased_output

    @property
    def demand(self) -> Constraint | None:
        got = self._demand
        if got.__class__ is _Unread:
            got = self._demand = got.store.get(got.key)
        return got  # type: ignore[return-value]

    @demand.setter
    def demand(self, demand: Constraint | None) -> None:
        self._demand = demand

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is CopyEdge and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return "CopyEdge(" + ", ".join(f"{n}={v!r}" for n, v in zip(self._FIELDS, self._fields())) + ")"


@dataclass
class CopyGroup:
    """One copy to make: a value, the layout it is copied to, and the edges it serves.

    Consumers of the same value that need the same layout in the same function
    body share one copy (XLA makes one per use and leaves merging to CSE).
    """

    value: int
    dst: L.Layout
    scope: str
    edges: list[CopyEdge]

    @property
    def in_place(self) -> bool:
        """XLA's same-layout copy of an operand a custom call overwrites (aliasing.py)."""
        return self.edges[0].aliased_output is not None


@dataclass
class Assignment:
    """The engine's answer, as plain data."""

    graph: Graph
    layouts: list[L.Layout | None]  # per value id
    copies: list[CopyEdge]
    buffer_constraints: dict[int, BufferConstraint]
    operand_constraints: dict[tuple[int, int], OperandConstraint]
    comp_layouts: dict[int, ComputationLayout]
    entry_params: list[L.Layout | None]
    entry_results: list[L.Layout | None]
    rounds: int
    target: "Target"
    entry_mode: str
    trace: list[TraceEvent] | None = None
    notes: list[str] = field(default_factory=list)
    # Rounds actually run: fewer than ``rounds`` when the engine proved the
    # rest would repeat the last one (``rounds.repeats``).
    rounds_computed: int = 0
    # Exact runs carry provenance facts (explain, trace); fast runs do not.
    exact: bool = False
    # The entry layouts the input gave; None where it left the layout open.
    given_params: list[L.Layout | None] = field(default_factory=list)
    given_results: list[L.Layout | None] = field(default_factory=list)


def assignment_of(e: "EngineState", iface: "Interfaces", rounds: int, computed: int) -> Assignment:
    """The answer once the rounds are over (``rounds``: XLA's count, ``computed``: those run here).

    Every value's layout and every operand slot whose demand differs come
    from the core; the copies XLA makes at region boundaries (a captured
    value, a branch's parameter) and at computation roots are added here.
    """
    g = e.g
    known = e.records.layout
    missing, layouts = e.core.value_layouts(e.records.table())
    if missing >= 0:
        raise PassError(f"internal: no layout was assigned to value {missing}",
                        g.instrs[g.values[missing].producer].loc)
    assert layouts is not None
    bc, oc = BufferConstraints(e.records, cache=True), OperandConstraints(e.records, cache=True)
    candidates = e.core.copy_candidates()
    # The readers of the answer need the store only: the run's facts go
    # before the rest of the answer (its edges first) and the rewrite allocate.
    e.core.finish()
    copies = [CopyEdge(v, layouts[v], known(want), iid, n, _Unread(oc, key))  # type: ignore[arg-type]
              for key, (v, want) in candidates for iid, n in (key,)]
    del candidates
    # Implicit captures must match the region parameter they stand for.
    shared = _shared_branch_operands(g)
    # Inside a branch that copies its parameter, every use reads the copy:
    # the layout uses see, where it differs from the parameter's own.
    effective: dict[int, L.Layout | None] = {}
    # Outer region ops come before the ones nested in them (ids in walk order).
    for ins in map(g.instrs.__getitem__, sorted(g.columns.captures)):
        base = len(ins.operands)
        for k, (comp, number) in enumerate(ins.attrs.get("capture_params", ())):
            ov = g.values[ins.captures[k]]
            param = g.instrs[g.comps[comp].params[number]].results[0]
            want = layouts[param]
            have = effective.get(ov.id, layouts[ov.id])
            if want is not None and have is not None and want != have and ov.rank > 0:
                inside = comp if g.comps[comp].kind == "branch" and comp not in shared else None
                copies.append(CopyEdge(ov.id, have, want, ins.id, base + k,
                                       _Unread(oc, (ins.id, base + k)), inside))
                if inside is not None:
                    # XLA's CopyOperandIfLayoutsDiffer: the branch parameter
                    # takes the operand's layout, the copy sits in the branch.
                    layouts[param] = have
                    effective[param] = want
    # Root copies where a computation's result layout is fully known and differs.
    # An entry root can have tens of thousands of operands: read from the columns, not a view each.
    kind, shape, shape_dims = g.columns.kind, g.columns.shape, g.columns.shape_dims
    array_kind = KIND_CODE[ARRAY]
    entry_results: list[L.Layout | None] = []
    for comp in g.comps:
        cl = iface.comp_layouts.get(comp.id)
        if cl is None or comp.root < 0:
            continue
        if not (comp.is_entry or cl.result_set):
            continue
        root_operands = g.instrs[comp.root].operands  # read once: a view lists them anew on every read
        arrays = [i for i, v in enumerate(root_operands) if kind[v] == array_kind]
        if any(cl.results[i] is None for i in arrays):
            continue
        demand = None  # made for the first copy: most computations need none
        for i in arrays:
            vid = root_operands[i]
            want, have = cl.results[i], effective.get(vid, layouts[vid])
            if want is not None and have is not None and want != have and shape_dims[shape[vid]]:
                if demand is None:
                    demand = new_result(comp.id, tuple(cl.results), cl.priority,
                                        Origin("entry-result" if comp.is_entry else "computation-result",
                                               comp.root), e.round)
                copies.append(CopyEdge(vid, have, want, comp.root, i, demand))
    entry = g.comps[g.entry]  # type: ignore[index]
    ecl = iface.comp_layouts[entry.id]
    entry_params = [layouts[g.instrs[p].results[0]] for p in entry.params]
    root_operands = g.instrs[entry.root].operands
    arrays_set = all(ecl.results[i] is not None for i, v in enumerate(root_operands) if kind[v] == array_kind)
    for i, vid in enumerate(root_operands):
        if kind[vid] != array_kind:
            entry_results.append(None)
        elif arrays_set:
            entry_results.append(ecl.results[i])
        else:
            entry_results.append(layouts[vid])
    notes = check_entry_pins(g, layouts, copies, entry_params, entry_results, e.given_params, e.given_results,
                             arrays_set)
    return Assignment(g, layouts, copies, bc, oc, iface.comp_layouts,  # type: ignore[arg-type]
                      entry_params, entry_results, rounds, e.target, e.entry_mode, e.trace, notes,
                      rounds_computed=computed, exact=e.exact,
                      given_params=list(e.given_params), given_results=list(e.given_results))


def check_entry_pins(g: Graph, layouts: list[L.Layout | None], copies: list[CopyEdge],
                     entry_params: list[L.Layout | None], entry_results: list[L.Layout | None],
                     given_params: list[L.Layout | None], given_results: list[L.Layout | None],
                     results_set: bool) -> list[str]:
    """The pins the caller gave hold in the answer (XLA §8.5); notes for the result pins XLA drops.

    XLA's ``PropagateComputationLayouts`` fails with an internal error when a
    set parameter leaf or a fully set result disagrees with what the pass
    made, so does this check: a pinned parameter keeps its pin, and with
    every array result set each pinned result is returned in its pin (its
    value holds it, or a root copy makes it).  A result layout with a leaf
    left open (``auto``) is not set at all for XLA (``ShapeLayout::
    LayoutIsSet``): the pass replaces it whole with the layouts it computed,
    pinned leaves included.  A pinned result aliased to a donated parameter
    left open takes the parameter's new layout too (XLA §3.7).  Those are
    XLA's answers, not ours to mend; each pinned result they change gets a
    note saying why.
    """
    entry = g.comps[g.entry]  # type: ignore[index]
    for i, (want, have) in enumerate(zip(given_params, entry_params)):
        if want is not None and have is not None and tuple(want) != tuple(have):
            raise PassError(f"internal: entry parameter {i} is pinned to {L.format_layout(want)} "
                            f"but was laid out {L.format_layout(have)}", g.instrs[entry.params[i]].loc)
    root = g.instrs[entry.root]
    root_operands = root.operands
    copied = {e.operand: e.dst for e in copies if e.consumer == root.id}
    notes: list[str] = []
    kind, array_kind = g.columns.kind, KIND_CODE[ARRAY]
    # A donated parameter left open and its aliased result: XLA resets both to one layout.
    realiased = {r: p for p, r in g.entry_aliases if p < len(given_params) and given_params[p] is None}
    open_results = [i for i, v in enumerate(root_operands)
                    if kind[v] == array_kind and (i >= len(given_results) or given_results[i] is None)]
    for i, vid in enumerate(root_operands):
        want = given_results[i] if i < len(given_results) else None
        if want is None or kind[vid] != array_kind:
            continue
        returned = copied.get(i, layouts[vid])
        got = entry_results[i]
        if i in realiased and got is not None and tuple(got) != tuple(want):
            notes.append(f"note: entry result {i} ({shape_text(g.values[vid])}) was pinned to "
                         f"{L.format_layout(want)} and is returned as {L.format_layout(got)}: it aliases "
                         f"parameter {realiased[i]}, which is left to the compiler, and XLA gives both the "
                         "layout the result's value holds (XLA §3.7); pin the parameter too to keep it")
        elif results_set:
            if returned is None or got is None or tuple(returned) != tuple(want) or tuple(got) != tuple(want):
                raise PassError(f"internal: entry result {i} is pinned to {L.format_layout(want)} but is "
                                f"returned as {L.format_layout(returned or got or ())}", root.loc)
        elif got is not None and tuple(got) != tuple(want):
            notes.append(f"note: entry result {i} ({shape_text(g.values[vid])}) was pinned to "
                         f"{L.format_layout(want)} and is returned as {L.format_layout(got)}: "
                         f"result {open_results[0]} is left to the compiler (auto), and XLA lays out an entry "
                         "result with any leaf open as a whole, replacing the pins of the others "
                         "(PropagateComputationLayouts); pin every result, or leave each one open, to keep them")
    return notes


def _shared_branch_operands(g: Graph) -> set[int]:
    """Branches whose HLO operand tuple other branches use too.

    XLA builds one tuple of the outer values a branch reads, and CSE
    merges identical ones; such a tuple has several users, so XLA copies
    it before the conditional instead of inside the branch.
    """
    users: dict[tuple[int, tuple[int, ...]], set[int]] = {}
    branches: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for c in g.comps:
        if c.kind == "branch" and c.caller is not None and c.params:
            key = (g.instrs[c.caller].comp, _branch_signature(g, c.id))
            # Branches of one conditional reading the same tuple are one user.
            users.setdefault(key, set()).add(c.caller)
            branches.setdefault(key, []).append(c.id)
    return {c for key, comps in branches.items() if len(users[key]) > 1 for c in comps}

def copy_groups(a: Assignment) -> list[CopyGroup]:
    """The copies to insert, outer computations first, in a stable order.

    XLA's copies of in-place operands (``aliased_output`` set) come last, one
    per aliased operand: each reads what its consumer reads after the
    relayout copies are in, so a relayout and an in-place copy chain.
    """
    g = a.graph
    # The columns, not a view per copy: a large module has thousands of copies.
    scope_of, comp_of, producer_of = g.columns.scope, g.columns.comp, g.columns.producer
    groups: dict[tuple[int, L.Layout, str, int, tuple[int, int]], list[CopyEdge]] = {}
    for e in a.copies:
        in_place = (-1, -1) if e.aliased_output is None else (e.consumer, e.operand)
        key = (e.value, e.dst, scope_of[e.consumer], -1 if e.inside is None else e.inside, in_place)
        groups.setdefault(key, []).append(e)

    depths: dict[int, int] = {}  # per computation: copies of one value share it

    def depth(vid: int) -> int:
        comp = comp_of[producer_of[vid]]
        d = depths.get(comp)
        if d is None:
            d, c = 0, g.comps[comp]
            while c.caller is not None:
                d += 1
                c = g.comps[comp_of[c.caller]]
            depths[comp] = d
        return d

    ordered = sorted(groups.items(), key=lambda kv: (kv[0][4] != (-1, -1), depth(kv[0][0]), kv[0][0], kv[0][2],
                                                     kv[0][3], kv[0][1], kv[0][4]))
    return [CopyGroup(vid, dst, scope, edges) for (vid, dst, scope, _, _), edges in ordered]


def _branch_signature(g: Graph, comp: int) -> tuple[int, ...]:
    """The outer values a branch reads, in parameter order: its HLO tuple operand."""
    return tuple(g.instrs[p].attrs.get("capture", -1) for p in g.comps[comp].params)
