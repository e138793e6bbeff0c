"""Why is there a copy?  Reports built from the provenance every constraint keeps.

For each copy: where it sits, the chain of constraints that made the consumer
want its layout, the chain that gave the producer its own, which rule of the
priority arithmetic settled the clash, what the copy costs, and the smallest
entry-layout change that removes it — checked by running the pass again.

Everything here works on plain data (``Graph``, ``Assignment``); rendering is
separate from building, and the JSON form is versioned (``SCHEMA``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import BUFFER, OPERAND, BufferConstraint, Constraint, Origin, ResultConstraint
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import Graph, Value, shape_text
from stablehlo_layout.model.mesh import Mesh
from stablehlo_layout.engine.aliasing import what_removes, why_copied
from stablehlo_layout.engine.driver import assign_layouts, quiet_gc
from stablehlo_layout.engine.result import Assignment, CopyGroup, copy_groups
from stablehlo_layout.ir.metadata import Source, entry_parameter_key
from stablehlo_layout.report.collectives import Collective, behind, use_sharding, value_sharding
from stablehlo_layout.targets.base import Target, tiling_of

SCHEMA = "stablehlo-layout.explain/1"

# Human wording for the rules that start or carry a chain.
RULE_TEXT = {
    "entry-parameter": "entry parameter layout (pinned)",
    "entry-result": "entry result layout",
    "computation-parameter": "parameter layout recorded for this computation",
    "computation-result": "result layout recorded for this computation",
    "default-layout": "default layout: nothing else asked for one",
    "consumer-demand": "a consumer asked its producer for this layout",
    "producer-layout": "the producer's layout offered to its consumer",
    "same-layout-operand": "the op cannot change layout: same-rank operands follow its result",
    "same-layout-sibling": "the op cannot change layout: its operands share one layout",
    "same-layout-result": "the op cannot change layout: its result follows its operand",
    "transpose-bitcast": "the layout that makes the transpose a bitcast",
    "reshape-bitcast": "the layout that makes the reshape a bitcast",
    "broadcast-operand": "the broadcast's output layout restricted to the broadcast dimensions",
    "custom-call-layout": "layout-constrained custom call",
    "custom-call-alias": "a custom call output aliases this operand",
    "custom-call-in-place": "a custom call overwrites this operand in place: XLA copies it first (no relayout)",
    "call-interface": "the callee's recorded interface",
    "while-interface": "the loop's body and condition agree on one layout per carried value",
    "while-back-edge": "the loop body's result nudges the body parameter it feeds",
    "loop-state-from-initial-value": "nothing asked for the loop's result: it carries its initial value's layout",
    "loop-state-from-result": "the loop's result was asked for first: its initial value starts in that layout",
    "branch-interface": "conditional branches agree on their results",
    "branch-result-agreement": "this branch must return the layout the other branch chose",
    "region-interface": "a region reads an outer value in its parameter's layout",
    "infeed-layout": "the layout the infeed carries",
    "send-operand": "send transfers a default-layout copy",
    "outfeed-layout": "outfeed transfers its operands in the layout it was given",
    "channel-layout": "all-reduces on one channel agree on a layout",
    "unknown-op-default": "op unknown to the rules: pinned to the default layout",
    "bitcast-convert-rank-change": "a rank-changing bitcast-convert splits the minor dimension",
    "all-reduce-operand": "an all-reduce result follows its operand",
}


@functools.lru_cache(maxsize=4096)
def _cached_layout_text(layout: L.Layout) -> str:
    return L.format_layout(layout)


def layout_text(layout: L.Layout) -> str:
    """``{1,0}``: reports spell the same few layouts tens of thousands of times, so each is spelled once."""
    # Layouts are tuples (interned); anything else is spelled each time.
    return _cached_layout_text(layout) if layout.__class__ is tuple else L.format_layout(layout)


def rule_text(rule: str) -> str:
    if rule in RULE_TEXT:
        return RULE_TEXT[rule]
    if rule.startswith("target:"):
        return f"backend rule {rule[7:]}"
    return rule


@dataclass
class Link:
    """One constraint in a chain, as a reader sees it."""

    kind: str  # "buffer" | "operand" | "result"
    subject: str
    layout: str
    rule: str
    priority: int
    mandatory: bool
    round: int
    note: str = ""
    # Where the subject came from in the user's program (``--as-compiled``: XLA's metadata).
    source: Source | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "subject": self.subject, "layout": self.layout, "rule": self.rule,
               "why": rule_text(self.rule), "priority": self.priority, "mandatory": self.mandatory,
               "round": self.round, "note": self.note}
        if self.source is not None:
            out["source"] = self.source.to_json()
        return out


@dataclass
class Fix:
    """An entry-layout change and what it did when the pass was run again."""

    change: str  # "auto-parameter" | "auto-result" | "pin-parameter" | "pin-result"
    index: int
    description: str
    removes: bool
    copies_delta: int
    bytes_delta: int
    new_layout: L.Layout | None

    def to_json(self) -> dict[str, Any]:
        return {"change": self.change, "index": self.index, "description": self.description,
                "removes_copy": self.removes, "copies_delta": self.copies_delta,
                "bytes_delta": self.bytes_delta,
                "new_layout": layout_text(self.new_layout) if self.new_layout is not None else None}


@dataclass(frozen=True)
class TiledCost:
    """A copy on a tiling backend: its layouts as the backend prints them and its padded bytes."""

    src: str  # ``{1,0:T(8,128)}``
    dst: str
    read_bytes: int
    written_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"from": self.src, "to": self.dst, "padded_bytes_read": self.read_bytes,
                "padded_bytes_written": self.written_bytes}


@dataclass
class CopyReport:
    """Everything known about one inserted copy."""

    index: int
    shape: str
    src: L.Layout
    dst: L.Layout
    producer: dict[str, Any]
    consumers: list[dict[str, Any]]
    bytes: int | None  # None: a dynamic shape, size unknown until run time
    loop_trips: list[int | None]  # one entry per enclosing loop, innermost first
    consumer_chain: list[Link]
    producer_chain: list[Link]
    verdict: str
    reason: str
    fix: Fix | None
    fix_note: str = ""
    edges: tuple[tuple[int, int], ...] = ()  # (consumer instruction, operand) it serves
    # One chain per consumer, in ``consumers`` order (``consumer_chain`` is the first):
    # consumers that share a copy may want its layout for different reasons.
    consumer_chains: list[list[Link]] = field(default_factory=list)
    # XLA's same-layout copy of an operand a custom call overwrites (aliasing.py):
    # the output that overwrites it; None for a copy that changes the layout.
    aliased_output: int | None = None
    # False when the two layouts hold the same bytes (they differ only in
    # where size-1 dims sit, and in no tile): the copy moves nothing.
    moves_data: bool = True
    # On a backend that tiles (XLA:TPU): both layouts in full, and the bytes
    # the copy reads and writes with the tiles' padding, which is what memory
    # really moves; None elsewhere.
    tiled: "TiledCost | None" = None
    # The collectives the chains pass through, each with the mesh axis it spans (collectives.py).
    collectives: list[Collective] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "relayout" if self.aliased_output is None else "in-place"

    # Per consumer chain: where it joins an earlier consumer's, as (consumer, link) indexes,
    # or None.  A chain stops at the first link an earlier one already shows: chains of
    # many consumers through one long path would otherwise repeat it, quadratic in size.
    chain_joins: list[tuple[int, int] | None] = field(default_factory=list)

    @property
    def in_loop(self) -> bool:
        return bool(self.loop_trips)

    @property
    def total_bytes(self) -> int | None:
        """Bytes moved per execution of the whole program, None when a trip count or the size is unknown."""
        if self.bytes is None or any(t is None for t in self.loop_trips):
            return None
        return self.bytes * math.prod(t for t in self.loop_trips if t is not None)

    def explain(self) -> str:
        return render_copy(self)

    def chains(self) -> list[list[Link]]:
        return self.consumer_chains or [self.consumer_chain] * len(self.consumers)

    def joins(self) -> list[tuple[int, int] | None]:
        return self.chain_joins or [None] * len(self.chains())

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index, "shape": self.shape, "kind": self.kind,
            "aliased_output": self.aliased_output,
            "from": {"minor_to_major": layout_text(self.src), "jax_major_to_minor": list(L.to_major_to_minor(self.src))},
            "to": {"minor_to_major": layout_text(self.dst), "jax_major_to_minor": list(L.to_major_to_minor(self.dst))},
            "producer": self.producer,
            "consumers": [{**c, "chain": [x.to_json() for x in chain],
                           **({"chain_continues": {"consumer": join[0], "link": join[1]}} if join else {})}
                          for c, chain, join in zip(self.consumers, self.chains(), self.joins())],
            "cost": {"bytes_per_copy": self.bytes, "moves_data": self.moves_data, "in_loop": self.in_loop,
                     "loop_trip_counts": self.loop_trips, "bytes_per_execution": self.total_bytes,
                     **({"tiled": self.tiled.to_json()} if self.tiled is not None else {})},
            "consumer_chain": [x.to_json() for x in self.consumer_chain],
            "producer_chain": [x.to_json() for x in self.producer_chain],
            "verdict": self.verdict, "reason": self.reason,
            "fix": self.fix.to_json() if self.fix else None, "fix_note": self.fix_note,
            **({"collectives": [c.to_json() for c in self.collectives]} if self.collectives else {}),
        }


@dataclass
class ParameterCost:
    index: int
    layout: L.Layout | None
    pinned: bool
    copies_if_free: int | None  # change in copy count when left unpinned
    bytes_if_free: int | None
    name: str = ""  # its HLO name where the input is XLA's module (a dump, --as-compiled)
    sharding: str | None = None  # as the input states it, in a partitioned program


@dataclass
class Explanation:
    target: str
    entry_layouts: str
    copies: list[CopyReport]
    parameters: list[ParameterCost]
    by_reason: dict[str, tuple[int, int]] = field(default_factory=dict)  # reason -> (count, bytes)
    # A partitioned program's meshes by name (``sdy.mesh``).
    meshes: dict[str, Mesh] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """Bytes of the copies whose size is known (see ``unknown_size``)."""
        return sum(c.bytes for c in self.copies if c.bytes is not None)

    @property
    def unknown_size(self) -> int:
        """Copies of dynamically shaped values: their bytes are not in any total."""
        return sum(1 for c in self.copies if c.bytes is None)

    def to_json(self) -> dict[str, Any]:
        with quiet_gc():
            return self._json()

    def _json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "target": self.target, "entry_layouts": self.entry_layouts,
            "copies": [c.to_json() for c in self.copies],
            "summary": {
                "copies": len(self.copies), "bytes": self.total_bytes,
                "copies_of_unknown_size": self.unknown_size,
                "by_reason": [{"reason": r, "why": rule_text(r), "copies": n, "bytes": b}
                              for r, (n, b) in sorted(self.by_reason.items())],
                "parameters": [{"index": p.index, **({"name": p.name} if p.name else {}),
                                "layout": layout_text(p.layout) if p.layout is not None else None,
                                "pinned": p.pinned, "copies_delta_if_free": p.copies_if_free,
                                "bytes_delta_if_free": p.bytes_if_free,
                                **({"sharding": p.sharding} if p.sharding is not None else {})}
                               for p in self.parameters],
            },
            **({"meshes": [{"name": k, "axes": [{"name": a, "size": n} for a, n in m.axes],
                            "device_ids": list(m.device_ids) if m.device_ids is not None else None}
                           for k, m in self.meshes.items()]} if self.meshes else {}),
        }

    def render(self) -> str:
        with quiet_gc():
            parts = [render_copy(c) for c in self.copies]
            parts.append(render_summary(self))
            return "\n\n".join(parts) + "\n"


# --- describing graph objects ------------------------------------------------


def value_bytes(v: Value) -> int | None:
    """Bytes a copy of ``v`` moves: None (unknown) for a dynamically shaped array."""
    return L.array_bytes(v.element, v.dims) if v.is_array else 0


def tiled_cost(target: "Target", v: Value, src: L.Layout, dst: L.Layout) -> TiledCost | None:
    """A copy's full layouts and padded bytes on a target that tiles; None on one that does not."""
    tiling = tiling_of(target)
    if tiling is None or not v.is_array:
        return None
    read, written = target.padded_bytes(v.element, v.dims, src), target.padded_bytes(v.element, v.dims, dst)
    if read is None or written is None:
        return None
    return TiledCost(L.format_layout(src, tiling(v.element, v.dims, src)),
                     L.format_layout(dst, tiling(v.element, v.dims, dst)), read, written)


def describe_value(g: Graph, vid: int) -> str:
    v = g.values[vid]
    ins = g.instrs[v.producer]
    if ins.op == "parameter":
        comp = g.comps[ins.comp]
        if comp.is_entry:
            return f"parameter {ins.attrs['number']} of @{comp.name}"
        return f"parameter {ins.attrs['number']} of {comp.name}"
    where = f" at {ins.loc}" if ins.loc else ""
    index = f" #{v.index}" if len(ins.results) > 1 else ""
    return f"result{index} of {ins.op}{where}"


def describe_use(g: Graph, iid: int, operand: int) -> str:
    ins = g.instrs[iid]
    if ins.op == "root":
        comp = g.comps[ins.comp]
        return f"result {operand} of @{comp.name}" if comp.is_entry else f"result {operand} of {comp.name}"
    where = f" at {ins.loc}" if ins.loc else ""
    if operand >= len(ins.operands):
        return f"a value read inside a region of {ins.op}{where}"
    return f"operand {operand} of {ins.op}{where}"


def link_of(g: Graph, f: Origin) -> Link:
    """A reader's view of one fact: what was set, by which rule, how strongly."""
    if f.kind == BUFFER:
        subject = describe_value(g, f.target[0])
        layout = layout_text(f.layout)
    elif f.kind == OPERAND:
        subject = describe_use(g, f.target[0], f.target[1])
        layout = layout_text(f.layout)
    else:
        comp = g.comps[f.target[0]]
        subject = f"results of @{comp.name}" if comp.is_entry else f"results of {comp.name}"
        layout = ", ".join(layout_text(x) if x is not None else "free" for x in f.layout)
    note = f.note
    if f.instr is not None and f.rule not in ("default-layout", "entry-parameter", "consumer-demand"):
        via = g.instrs[f.instr]
        if via.op not in ("parameter", "root") and not note:
            note = f"via {via.op}" + (f" at {via.loc}" if via.loc else "")
    return Link(f.kind, subject, layout, f.rule, f.priority, f.mandatory, f.round, note)


def chain(g: Graph, c: Constraint | None, sources: Mapping[str, Source] | None = None) -> list[Link]:
    """The constraint and its ancestors, from ``c`` back to the source."""
    return shared_chains(g, [c], sources)[0][0]


def shared_chains(g: Graph, demands: Sequence[Constraint | None], sources: Mapping[str, Source] | None = None
                  ) -> tuple[list[list[Link]], list[tuple[int, int] | None]]:
    """``chain`` for each demand, each cut where it reaches a fact an earlier one already shows.

    Returns the chains and, per chain, the (chain, link) it joins there, or None.
    """
    shown: dict[int, tuple[int, int]] = {}  # id(fact) -> where it is shown
    chains: list[list[Link]] = []
    joins: list[tuple[int, int] | None] = []
    for k, c in enumerate(demands):
        out: list[Link] = []
        join = None
        node = c.origin if c is not None else None
        while node is not None:
            join = shown.get(id(node))
            if join is not None:
                break
            shown[id(node)] = (k, len(out))
            link = link_of(g, node)
            if sources:
                link.source = sources.get(_subject_location(g, node))
            out.append(link)
            node = node.parent
        chains.append(out)
        joins.append(join)
    return chains, joins


def _subject_location(g: Graph, f: Origin) -> str:
    """The key of what a fact constrains in a sources table: its HLO instruction name, for HLO input."""
    if f.kind == BUFFER:
        return _source_key(g, g.instrs[g.values[f.target[0]].producer])
    if f.kind == OPERAND:
        return _source_key(g, g.instrs[f.target[0]])
    return ""


def _source_key(g: Graph, ins: Any) -> str:
    if ins.op == "parameter" and g.comps[ins.comp].is_entry:
        return entry_parameter_key(ins.attrs["number"])
    if ins.op in ("root", "parameter"):
        return ""
    # A name over a call site reads "name (file:line:col)": the table is keyed by the name.
    return ins.loc.split(" (", 1)[0]


def _with_source(entry: dict[str, Any], sources: Mapping[str, Source] | None, g: Graph, ins: Any) -> dict[str, Any]:
    if sources:
        src = sources.get(_source_key(g, ins))
        if src is not None and src.known:
            entry["source"] = src.to_json()
        if src is not None and src.name and "name" in entry:
            entry["name"] = src.name  # an entry parameter: the dump's name for it, not the graph's main.argN
    return entry


def source_rule(c: Constraint | None) -> str:
    return c.origin.source().rule if c is not None else "unknown"


# --- loops -------------------------------------------------------------------


def _constant(g: Graph, vid: int) -> int | None:
    ins = g.instrs[g.values[vid].producer]
    while ins.op == "parameter" and "capture" in ins.attrs:  # through every enclosing region
        ins = g.instrs[g.values[ins.attrs["capture"]].producer]
    return ins.attrs.get("scalar")


def trip_count(g: Graph, while_iid: int) -> int | None:
    """The trip count of a counted loop (``i = c0; while i < n: i += step``), if static."""
    ins = g.instrs[while_iid]
    if len(ins.callees) != 2:
        return None
    cond, body = (g.comps[c] for c in ins.callees)
    root = g.instrs[cond.root]
    if not root.operands:
        return None
    cmp = g.instrs[g.values[root.operands[0]].producer]
    direction = cmp.attrs.get("direction")
    if direction is None or len(cmp.operands) != 2:
        return None
    lhs, rhs = cmp.operands
    param_ids = [g.instrs[p].results[0] for p in cond.params]
    if lhs in param_ids and (bound := _constant(g, rhs)) is not None:
        k = param_ids.index(lhs)
    elif rhs in param_ids and (bound := _constant(g, lhs)) is not None:
        k = param_ids.index(rhs)
        direction = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}.get(direction, direction)
    else:
        return None
    if k >= len(ins.operands):
        return None
    start = _constant(g, ins.operands[k])
    body_root = g.instrs[body.root]
    if start is None or k >= len(body_root.operands):
        return None
    step_op = g.instrs[g.values[body_root.operands[k]].producer]
    body_param = g.instrs[body.params[k]].results[0] if k < len(body.params) else -1
    if not step_op.op.endswith(".add") or body_param not in step_op.operands:
        return None
    other = [o for o in step_op.operands if o != body_param]
    step = _constant(g, other[0]) if other else None
    if not step:
        return None
    span = {"LT": bound - start, "LE": bound - start + 1, "GT": start - bound,
            "GE": start - bound + 1, "NE": bound - start}.get(direction)
    if span is None:
        return None
    step = abs(step) if direction in ("GT", "GE") else step
    if step <= 0:
        return None
    return max(0, -(-span // step))


def loop_trips(g: Graph, iid: int) -> list[int | None]:
    """Trip counts of the loops around instruction ``iid``, innermost first."""
    trips: list[int | None] = []
    comp = g.comps[g.instrs[iid].comp]
    while comp.caller is not None:
        caller = g.instrs[comp.caller]
        if comp.kind in ("body", "cond"):
            trips.append(trip_count(g, caller.id))
        comp = g.comps[caller.comp]
    return trips


# --- the verdict -------------------------------------------------------------

_UNREAD: Any = object()  # an argument not given, where None is a value


def verdict(a: Assignment, group: CopyGroup, producer: BufferConstraint | None = _UNREAD) -> str:
    """Which rule of XLA's priority arithmetic let the producer keep its layout.

    ``producer``: the copied value's buffer constraint, where the caller has
    already read it (each read builds it afresh from the compiled store).
    """
    g = a.graph
    if producer is _UNREAD:
        producer = a.buffer_constraints.get(g.values[group.value].buffer)
    demand = group.edges[0].demand
    if isinstance(demand, ResultConstraint):
        return ("a result layout is a soft demand: XLA does not force the producer, it enforces the "
                "layout with a copy at the return")
    if producer is None or demand is None:
        return "the producer's layout was decided first"
    if producer.mandatory and demand.priority <= producer.priority:
        return (f"the producer's layout is mandatory at priority {producer.priority}; the consumer's "
                f"request reached it as a non-mandatory one at priority {demand.priority}, and a "
                "non-mandatory request needs strictly higher priority")
    if demand.priority <= producer.priority:
        return (f"both at priority {producer.priority}: a buffer keeps the layout it was given first "
                "(a non-mandatory request needs strictly higher priority), so the consumer "
                "keeps its demand and gets a copy")
    if len(producer.history) >= 2:
        return "the producer's layout had already changed twice; XLA refuses a third change"
    return ("a mandatory constraint on the producer came after the consumer's request "
            "(among mandatory constraints the last one wins)")


# --- fixes -------------------------------------------------------------------


def rerun(a: Assignment, params: list[Any], results: list[Any]) -> Assignment:
    """The pass again on the same graph with other entry layouts."""
    g = a.graph
    saved = g.entry_param_modes, g.entry_result_modes
    g.entry_param_modes, g.entry_result_modes = params, results
    try:
        return assign_layouts(g, a.target, a.entry_mode)
    finally:
        g.entry_param_modes, g.entry_result_modes = saved


def _copy_bytes(a: Assignment, groups: list[CopyGroup] | None = None) -> tuple[int, int]:
    """(copies, bytes of those whose size is known): what a fix is measured by (``groups``: ``a``'s, if made)."""
    if groups is None:
        groups = copy_groups(a)
    return len(groups), sum(value_bytes(a.graph.values[c.value]) or 0 for c in groups)


def _edges(a: Assignment) -> set[tuple[int, int]]:
    """The uses relayout copies serve (an in-place copy of the same use is another matter)."""
    return {(e.consumer, e.operand) for e in a.copies if e.aliased_output is None}


class _Fixer:
    """Tries entry-layout changes, within a budget of reruns, and caches them.

    Each candidate costs one run of the pass; a large module with many
    pinned entries would otherwise cost one run per entry.
    """

    def __init__(self, a: Assignment, max_reruns: int, groups: list[CopyGroup] | None = None) -> None:
        self.a = a
        self.base = _copy_bytes(a, groups)
        self.cache: dict[tuple[str, int], Assignment | None] = {}
        self.max_reruns = max_reruns
        self.skipped = 0

    def _pinned(self, modes: list[Any], i: int) -> bool:
        mode = modes[i]
        if isinstance(mode, tuple):
            return True
        return mode is None and self.a.entry_mode == "default"

    def _results_of(self, buffer: int) -> list[int]:
        g = self.a.graph
        root = g.instrs[g.comps[g.entry].root]  # type: ignore[index]
        return [i for i, v in enumerate(root.operands) if g.values[v].buffer == buffer]

    def candidates(self, group: CopyGroup, producer: BufferConstraint | None = _UNREAD) -> list[tuple[str, int, Any]]:
        """Entry pins in this copy's chains, and the changes that might undo them (``producer``: as for ``verdict``)."""
        g = self.a.graph
        if producer is _UNREAD:
            producer = self.a.buffer_constraints.get(g.values[group.value].buffer)
        out: list[tuple[str, int, Any]] = []
        for node in _ancestry(producer):
            if node.rule == "entry-parameter" and node.kind == BUFFER:
                i = g.instrs[g.values[node.target[0]].producer].attrs["number"]
                if self._pinned(g.entry_param_modes, i):
                    out.append(("auto-parameter", i, "auto"))
                    # Pinning to the consumer's layout only means something for the
                    # parameter the copy reads, not one further up the chain.
                    if g.values[node.target[0]].buffer == g.values[group.value].buffer:
                        out.append(("pin-parameter", i, group.dst))
        child = None
        for node in _ancestry(group.edges[0].demand):
            if node.rule == "entry-result":
                # The result(s) whose demand this is: the root operand the next link constrained,
                # or the root edge the copy itself sits on.
                results = [e.operand for e in group.edges
                           if g.instrs[e.consumer].op == "root" and g.comps[g.instrs[e.consumer].comp].is_entry]
                if child is not None and child.kind == BUFFER:
                    results += self._results_of(child.target[0])
                # Read once: a view lists its operands anew on every read.
                root_operands = g.instrs[g.comps[g.entry].root].operands  # type: ignore[index]
                for i in dict.fromkeys(results):
                    if self._pinned(g.entry_result_modes, i):
                        out.append(("auto-result", i, "auto"))
                        # The producer's layout fits only the result that is the copied value.
                        if g.values[root_operands[i]].buffer == g.values[group.value].buffer:
                            out.append(("pin-result", i, self.a.layouts[group.value]))
            child = node
        return list({(c, i): (c, i, m) for c, i, m in out}.values())

    def run(self, change: str, i: int, mode: Any) -> Assignment | None:
        key = (change, i)
        if key not in self.cache:
            if len(self.cache) >= self.max_reruns:
                self.skipped += 1
                return None
            g = self.a.graph
            params, results = list(g.entry_param_modes), list(g.entry_result_modes)
            (params if change.endswith("parameter") else results)[i] = mode
            try:
                self.cache[key] = rerun(self.a, params, results)
            except PassError:
                # A what-if the pass rejects is no fix; the report itself must not fail.
                self.cache[key] = None
        return self.cache[key]

    def best(self, group: CopyGroup, producer: BufferConstraint | None = _UNREAD) -> tuple[Fix | None, str]:
        edges = {(e.consumer, e.operand) for e in group.edges}
        found: list[Fix] = []
        unchecked = 0
        for change, i, mode in self.candidates(group, producer):
            if len(self.cache) >= self.max_reruns and (change, i) not in self.cache:
                unchecked += 1
                continue
            b = self.run(change, i, mode)
            if b is None:
                continue
            removes = not (edges & _edges(b))
            count, nbytes = _copy_bytes(b)
            new_layout = b.entry_params[i] if change.endswith("parameter") else b.entry_results[i]
            found.append(Fix(change, i, _fix_text(change, i, mode), removes,
                             count - self.base[0], nbytes - self.base[1], new_layout))
        good = [f for f in found if f.removes]
        if not good:
            if unchecked:
                return None, (f"{unchecked} candidate change(s) not checked: the rerun budget "
                              f"({self.max_reruns}) is spent; raise --max-reruns")
            if not found:
                return None, ("no entry-layout change reaches this copy: both layouts come from inside the "
                              "program (see the chains); `stablehlo-layout fix` tries changes to the program "
                              "(the convolutions' order, ...) and confirms each with XLA")
            return None, "no single entry-layout change removes this copy"
        # Fewest copies overall, then fewest bytes, then the simplest change ("auto" first).
        good.sort(key=lambda f: (f.copies_delta, f.bytes_delta, not f.change.startswith("auto")))
        return good[0], ""


def _fix_text(change: str, i: int, mode: Any) -> str:
    what = "parameter" if change.endswith("parameter") else "result"
    if change.startswith("auto"):
        return f'leave {what} {i} unpinned (mhlo.layout_mode = "auto")'
    return f'pin {what} {i} to {layout_text(mode)} (mhlo.layout_mode = "{layout_text(mode)}")'


def _ancestry(c: Constraint | None):
    node = c.origin if c is not None else None
    while node is not None:
        yield node
        node = node.parent


# --- building ----------------------------------------------------------------


def explain(a: Assignment, fixes: bool = True, max_reruns: int = 16,
            sources: Mapping[str, Source] | None = None) -> Explanation:
    """Reports for every copy; ``max_reruns`` bounds the what-if runs behind the fixes.

    ``sources`` (HLO instruction name -> where it came from, see ``sources.py``)
    adds the user's op and source line to producers, consumers and chain links.
    """
    with quiet_gc():
        return _explain(a, fixes, max_reruns, sources)




def _explain(a: Assignment, fixes: bool, max_reruns: int, sources: Mapping[str, Source] | None) -> Explanation:
    if not a.exact:
        # A fast run keeps no provenance; the exact run reaches the same
        # layouts and copies on the same graph and records why.
        a = assign_layouts(a.graph, a.target, a.entry_mode, exact=True)
    g = a.graph
    groups = copy_groups(a)
    fixer = _Fixer(a, max_reruns if fixes else 0, groups)
    reports: list[CopyReport] = []
    relayout_uses = _edges(a)
    for n, group in enumerate(groups, 1):
        v = g.values[group.value]
        demand = group.edges[0].demand
        producer_c = a.buffer_constraints.get(v.buffer)
        if group.in_place:
            # No entry-layout change removes it: the layout is not why it is there.
            e = group.edges[0]
            fix, note = None, what_removes(g, e, (e.consumer, e.operand) in relayout_uses)
            why, reason = why_copied(g, group.edges[0]), "custom-call-in-place"
        else:
            fix, note = fixer.best(group, producer_c) if fixes else (None, "")
            why, reason = verdict(a, group, producer_c), source_rule(demand)
        chains, joins = shared_chains(g, [e.demand for e in group.edges], sources)
        # An in-place copy keeps the layout and moves every byte all the same.
        moves = group.edges[0].aliased_output is not None or _moves_data(a.target, v, group.edges[0].src, group.dst)
        reports.append(CopyReport(
            index=n,
            shape=shape_text(v),
            src=group.edges[0].src,
            dst=group.dst,
            producer=_sharded(_with_source({"value": describe_value(g, v.id), "op": g.instrs[v.producer].op,
                                            "location": g.instrs[v.producer].loc, "result": v.index,
                                            "name": g.value_name(v.id)}, sources, g, g.instrs[v.producer]),
                              value_sharding(g, v.id)),
            consumers=[_sharded(_with_source({"use": describe_use(g, e.consumer, e.operand),
                                              "op": g.instrs[e.consumer].op,
                                              "location": g.instrs[e.consumer].loc, "operand": e.operand,
                                              "name": g.use_name(e.consumer, e.operand)}, sources, g,
                                             g.instrs[e.consumer]),
                                use_sharding(g, e.consumer, e.operand))
                       for e in group.edges],
            bytes=value_bytes(v) if moves else 0,
            moves_data=moves,
            loop_trips=loop_trips(g, group.edges[0].consumer),
            consumer_chain=chains[0],
            producer_chain=chain(g, producer_c, sources),
            verdict=why,
            reason=reason,
            fix=fix,
            fix_note=note,
            edges=tuple((e.consumer, e.operand) for e in group.edges),
            consumer_chains=chains,
            aliased_output=group.edges[0].aliased_output,
            chain_joins=joins,
            tiled=tiled_cost(a.target, v, group.edges[0].src, group.dst),
            collectives=behind(g, [*(("consumer", e.demand.origin if e.demand is not None else None)
                                     for e in group.edges),
                                   ("producer", producer_c.origin if producer_c is not None else None)]),
        ))
    _name_what_in_place_copies_read(reports)
    by_reason: dict[str, tuple[int, int]] = {}
    for r in reports:
        n, b = by_reason.get(r.reason, (0, 0))
        by_reason[r.reason] = (n + 1, b + (r.bytes or 0))
    name = a.target.name if a.target.device is None else f"{a.target.name} {a.target.device}"
    costs = _parameter_costs(a, fixer, reports)
    if sources:
        from dataclasses import replace

        # The dump's names for the entry's parameters, which its reader knows them by.
        costs = [replace(p, name=src.name) if (src := sources.get(entry_parameter_key(p.index))) else p
                 for p in costs]
    if g.shardings:
        from dataclasses import replace

        params = g.comps[g.entry].params  # type: ignore[index]
        costs = [replace(p, sharding=value_sharding(g, g.instrs[params[p.index]].results[0])) for p in costs]
    return Explanation(name, a.entry_mode, reports, costs, by_reason, dict(g.meshes))


def _sharded(entry: dict[str, Any], sharding: str | None) -> dict[str, Any]:
    """A producer's or consumer's entry with the sharding the input states for it, where it states one."""
    if sharding is not None:
        entry["sharding"] = sharding
    return entry


def _name_what_in_place_copies_read(reports: list[CopyReport]) -> None:
    """An in-place copy of an operand that also needs a relayout copies that relayout copy's result.

    XLA's layout assignment adds its relayout copy between the value and
    the call, so the in-place copy reads the relayout's fresh buffer, not the
    value (aliasing.py): its producer is that copy, named by its report.
    """
    relayout_of = {edge: r for r in reports if r.aliased_output is None for edge in r.edges}
    for r in reports:
        first = relayout_of.get(r.edges[0]) if r.aliased_output is not None and r.edges else None
        if first is None:
            continue
        r.producer = {"value": f"result of copy #{first.index} (the relayout of {first.producer['value']})",
                      # XLA makes its relayout copy where the call reads it: at the consumer.
                      "op": "copy", "location": r.consumers[0]["location"], "result": 0,
                      "name": f"copy #{first.index}",
                      "copy": first.index, "copy_of": first.producer}


def _parameter_costs(a: Assignment, fixer: _Fixer, reports: list[CopyReport]) -> list[ParameterCost]:
    """What each pinned entry parameter costs: copies its pin causes, checked by a rerun.

    A parameter whose pin starts no copy's chain costs none; only the others
    are re-run (within the fixer's budget).
    """
    g = a.graph
    involved = {int(link.subject.split()[1]) for r in reports for link in r.producer_chain + r.consumer_chain
                if link.rule == "entry-parameter" and link.subject.startswith("parameter ")}
    out = []
    for i, lay in enumerate(a.entry_params):
        v = g.values[g.instrs[g.comps[g.entry].params[i]].results[0]]  # type: ignore[index]
        pinned = v.is_array and fixer._pinned(g.entry_param_modes, i)
        if not (pinned and v.rank > 1):
            out.append(ParameterCost(i, lay, pinned, None, None))
        elif i not in involved:
            out.append(ParameterCost(i, lay, True, 0, 0))
        else:
            b = fixer.run("auto-parameter", i, "auto")
            if b is None:  # budget spent, or the pass rejected the what-if
                out.append(ParameterCost(i, lay, True, None, None))
            else:
                count, nbytes = _copy_bytes(b)
                out.append(ParameterCost(i, lay, True, count - fixer.base[0], nbytes - fixer.base[1]))
    return out


# --- rendering -----------------------------------------------------------------


def fmt_bytes(n: int | None) -> str:
    """Exact bytes while they are easy to read, binary units beyond."""
    if n is None:
        return "unknown bytes (dynamic shape)"
    if n < 10 * 1024:
        return f"{n} B"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _layouts(lay: L.Layout) -> str:
    return _cached_layouts(lay) if lay.__class__ is tuple else _spell_layouts(lay)


def _spell_layouts(lay: L.Layout) -> str:
    return f"{layout_text(lay)} (jax major_to_minor {tuple(L.to_major_to_minor(lay))})"


_cached_layouts = functools.lru_cache(maxsize=4096)(_spell_layouts)


def _render_link(link: Link, first: bool) -> str:
    flags = ("mandatory" if link.mandatory else "derived") + f", priority {link.priority}, round {link.round}"
    arrow = "  " if first else "<-"
    note = f"; {link.note}" if link.note else ""
    source = f" ({link.source.text()})" if link.source is not None else ""
    return f"    {arrow} {link.subject}{source} = {link.layout}  [{rule_text(link.rule)}; {flags}{note}]"


def _source_suffix(entry: dict[str, Any]) -> str:
    return f" ({entry['source']['text']})" if "source" in entry else ""


def _sharding_suffix(entry: dict[str, Any]) -> str:
    return f" [sharding {entry['sharding']}]" if "sharding" in entry else ""


def render_copy(r: CopyReport) -> str:
    if r.aliased_output is not None:
        return _render_in_place(r)
    lines = [f"copy #{r.index}: {r.shape} {layout_text(r.src)} -> {layout_text(r.dst)}"]
    lines.append(f"  layouts: {_layouts(r.src)} -> {_layouts(r.dst)}")
    lines.append(f"  producer: {r.producer['value']}{_source_suffix(r.producer)}{_sharding_suffix(r.producer)}")
    for c in r.consumers:
        lines.append(f"  consumer: {c['use']}{_source_suffix(c)}{_sharding_suffix(c)}")
    if len(r.consumers) > 1:
        lines.append(f"  note: XLA makes one copy per use ({len(r.consumers)} here, as its dumps show); "
                     "one copy serves them all")
    lines.append(_cost_line(r))
    if r.tiled is not None:
        t = r.tiled
        lines.append(f"  tiled: {t.src} -> {t.dst}; with the tiles' padding it reads {fmt_bytes(t.read_bytes)} "
                     f"and writes {fmt_bytes(t.written_bytes)}")
    for col in r.collectives:
        lines.append(f"  collective: the {col.side}'s layout comes from {col.words()}")
    chains = r.chains()
    for k, (links, join) in enumerate(zip(chains, r.joins())):
        who = "the consumer" if len(chains) == 1 else f"consumer {k + 1}"
        if join is not None and not links:
            lines.append(f"  {who} wants {layout_text(r.dst)} for the reason consumer {join[0] + 1} does"
                         + (f", from its link {join[1] + 1} on" if join[1] else ""))
            continue
        lines.append(f"  {who} wants {layout_text(r.dst)} because:")
        lines.extend(_render_link(x, i == 0) for i, x in enumerate(links))
        if join is not None:
            lines.append(f"    <- then as consumer {join[0] + 1}'s chain from its link {join[1] + 1}: "
                         f"{chains[join[0]][join[1]].subject}")
    lines.append(f"  the producer has {layout_text(r.src)} because:")
    lines.extend(_render_link(x, i == 0) for i, x in enumerate(r.producer_chain))
    lines.append(f"  why the producer kept its layout: {r.verdict}")
    if r.fix is not None:
        f = r.fix
        gain = f"{f.copies_delta:+d} cop{'y' if abs(f.copies_delta) == 1 else 'ies'}"
        if r.bytes is not None:  # a dynamic shape's bytes are in no total
            gain += f", {f.bytes_delta:+d} B"
        took = f"; the {'parameter' if f.change.endswith('parameter') else 'result'} would take " \
               f"{layout_text(f.new_layout)}" if f.new_layout is not None else ""
        lines.append(f"  fix: {f.description}: {gain} overall{took} (checked by running the pass again)")
    elif r.fix_note:
        lines.append(f"  fix: {r.fix_note}")
    return "\n".join(lines)


def _moves_data(target: "Target", v: Value, src: L.Layout, dst: L.Layout) -> bool:
    if not v.is_array or not L.same_bytes(v.dims, src, dst):
        return True
    tiling = tiling_of(target)
    return tiling is not None and tiling(v.element, v.dims, src) != tiling(v.element, v.dims, dst)


def _cost_line(r: CopyReport) -> str:
    if not r.moves_data:
        return ("  cost: none: the two layouts hold the same bytes (they differ only in where size-1 dims sit); "
                "XLA makes the copy and a later pass turns it into a bitcast")
    if not r.in_loop:
        return f"  cost: {fmt_bytes(r.bytes)} per execution"
    if r.bytes is None:  # a dynamic shape: unknown per iteration, whatever the trip count
        return f"  cost: {fmt_bytes(r.bytes)} per iteration"
    if r.total_bytes is None:
        return f"  cost: {fmt_bytes(r.bytes)} per iteration (inside a loop whose trip count is not static)"
    trips = " x ".join(str(t) for t in r.loop_trips)
    return (f"  cost: {fmt_bytes(r.bytes)} per iteration x {trips} iterations = "
            f"{fmt_bytes(r.total_bytes)} per execution")


def _render_in_place(r: CopyReport) -> str:
    """An in-place copy: no layout changes, so no priority story; why XLA copies, and what removes it."""
    lay = layout_text(r.dst)
    lines = [f"copy #{r.index}: {r.shape} {lay} -> {lay} (same layout: an in-place operand, not a relayout)",
             f"  layout: {_layouts(r.dst)}",
             f"  producer: {r.producer['value']}{_source_suffix(r.producer)}"]
    lines.extend(f"  consumer: {c['use']}{_source_suffix(c)}" for c in r.consumers)
    lines.append(_cost_line(r))
    lines.append(f"  why: {rule_text(r.reason)}: {r.verdict}")
    lines.append(f"  the consumer reads it in {lay} because:")
    lines.extend(_render_link(x, i == 0) for i, x in enumerate(r.consumer_chain))
    lines.append(f"  fix: {r.fix_note}")
    return "\n".join(lines)


def render_summary(e: Explanation) -> str:
    known = sum(c.total_bytes for c in e.copies if c.total_bytes is not None)
    unknown = [c for c in e.copies if c.total_bytes is None and c.bytes is not None]
    moved = f"{fmt_bytes(known)} moved per execution"
    if e.unknown_size:
        moved += (f", plus {e.unknown_size} cop{'y' if e.unknown_size == 1 else 'ies'} of dynamically "
                  "shaped values (unknown bytes)")
    if unknown:
        moved += (f", plus {len(unknown)} cop{'y' if len(unknown) == 1 else 'ies'} in loops of unknown trip "
                  f"count ({fmt_bytes(sum(c.bytes for c in unknown))} per iteration)")  # type: ignore[misc]
    free = sum(1 for c in e.copies if not c.moves_data)
    if free:
        moved += f" ({free} of them {'moves' if free == 1 else 'move'} no data)"
    lines = [f"summary: {len(e.copies)} cop{'y' if len(e.copies) == 1 else 'ies'}, {moved} "
             f"(target {e.target}, entry layouts {e.entry_layouts})"]
    tiled = [(c, c.tiled) for c in e.copies if c.tiled is not None]
    if tiled:
        def times(c: CopyReport) -> int:  # executions of the copy per execution of the program
            return c.total_bytes // c.bytes if c.bytes and c.total_bytes is not None else 1

        read = sum(t.read_bytes * times(c) for c, t in tiled)
        written = sum(t.written_bytes * times(c) for c, t in tiled)
        lines.append(f"  with the tiles' padding: {fmt_bytes(read)} read, {fmt_bytes(written)} written per execution")
    unknown_by_reason: dict[str, int] = {}
    for c in e.copies:
        if c.bytes is None:
            unknown_by_reason[c.reason] = unknown_by_reason.get(c.reason, 0) + 1
    for reason, (n, b) in sorted(e.by_reason.items(), key=lambda kv: (-kv[1][0], kv[0])):
        k = unknown_by_reason.get(reason, 0)
        size = fmt_bytes(b) if not k else (f"{fmt_bytes(b)} and {k} of unknown size" if k < n else "unknown size")
        lines.append(f"  {n} x {rule_text(reason)} ({reason}): {size}")
    lines.extend(_collective_lines(e))
    free_of_cost = [p for p in e.parameters if p.copies_if_free == 0 and not p.bytes_if_free]
    # By identity: ``p not in free_of_cost`` compared every pair of parameters, quadratic.
    free_ids = {id(p) for p in free_of_cost}
    shown = e.parameters if len(e.parameters) <= 16 else [p for p in e.parameters if id(p) not in free_ids]
    for p in shown:
        lay = layout_text(p.layout) if p.layout is not None else "-"
        sharding = f"; sharding {p.sharding}" if p.sharding is not None else ""
        if p.copies_if_free is None:
            state = ("pinned; not checked" if p.pinned and p.layout is not None and len(p.layout) > 1
                     else "pinned" if p.pinned else "free")
            lines.append(f"  parameter {p.index} {lay}: {state}{sharding}")
        elif p.copies_if_free < 0 or p.bytes_if_free:
            lines.append(f"  parameter {p.index} {lay}: pinned; unpinning it changes copies by "
                         f"{p.copies_if_free:+d} ({p.bytes_if_free:+d} B){sharding}")
        else:
            lines.append(f"  parameter {p.index} {lay}: pinned; costs no copies{sharding}")
    if len(shown) < len(e.parameters):
        lines.append(f"  {len(free_of_cost)} other pinned parameters cost no copies")
    return "\n".join(lines)


def _collective_lines(e: Explanation) -> list[str]:
    """Per collective and mesh axis: the copies whose chains pass through one, and their bytes."""
    by: dict[tuple[str, str], tuple[int, int]] = {}
    for c in e.copies:
        for key in dict.fromkeys((x.op, x.axis) for x in c.collectives):
            n, b = by.get(key, (0, 0))
            by[key] = (n + 1, b + (c.total_bytes or 0))
    return [f"  {n} x next to {op} over {axis}: {fmt_bytes(b)}"
            for (op, axis), (n, b) in sorted(by.items(), key=lambda kv: (-kv[1][0], kv[0]))]


# --- trace -------------------------------------------------------------------


# The wording of a trace, shared by ``render_trace`` and the trace page (which
# fills the same templates in the browser from the page's data), so the two
# can never say a step differently.
_FACT = "{subject} = {layout}  [{kind}; {rule}; {strength}, {order}, priority {priority}]"
TRACE_WORDS: dict[str, str] = {
    "header": "round {round}, current priority {round}: {comp}",
    "fact": _FACT,
    "pop": "pop {n}: " + _FACT,
    "derived": "+ {subject} = {layout}{was}  [{kind}; {rule}; {strength}, priority {priority}]",
    "was": " (was {layout})",
    "mandatory": "mandatory",
    "not-mandatory": "derived",
    "dfs": "dfs",
    "bfs": "bfs",
    # Only the page says these.
    "in-place-header": "in-place copies (XLA copies these operands before analysis; no layout changes):",
    "in-place": "copy of {value} for {use} = {layout}  [custom-call-in-place; output {output} overwrites it]",
    "why": "why: {text}",
    "why-note": "why: {text} ({note})",
    "origin-source": "origin: a source (nothing before it)",
    "origin-chain": "origin (derived from, back to the source):",
    "link": "\u2190 {subject} = {layout}  [{rule}; {text}]",
    "more": "\u2026 {n} more \u2026",
    "changed": "\u0394 {subject}: {before} \u2192 {after}",
    "unset": "unset",
    "step-start": "step 0 / {last}: start",
    "step-end": "step {last} / {last}: end state",
    "step-pop": "step {step} / {last}: pop {step} of {pops}",
    "nothing-popped": "(none)",
    "done": "(done: the worklist is empty)",
    "waiting": "({n} waiting)",
    "badge-priority": "priority {n}",
    "badge-mandatory": "mandatory",
    "badge-not-mandatory": "derived (not mandatory)",
    "badge-dfs": "dfs (front)",
    "badge-bfs": "bfs (back)",
    "badge-round": "round {n}",
    "badge-rule": "rule: {rule}",
    "wants": "wants {layout}",
    "wants-other": "\u2260 wants {layout}",
    "pinned-tag": "  [PINNED]",
    "more-results": "+{n} more",
    "expand": "\u25b8 expand {what}",
    "collapse": "\u25be collapse {what}",
    "popped-tag": "\u25b6 POPPED",
    "derived-tag": "+ DERIVED",
    "changed-tag": "\u0394 CHANGED",
    "no-copies": "no copies",
    # Filled in Python by html.py, once per page.
    "start": "start: nothing popped yet ({pops} pops, {rounds} rounds)",
    "end": "end state: the layouts assigned, {copies} inserted",
    "summary": "{copies}, {bytes} moved per execution; target {target}, entry layouts {mode}; "
               "{pops} pops in {rounds} rounds.",
    "copy-title": "copy #{k}: {shape} {src} \u2192 {dst}",
    "copy-item": "{title}, {bytes}{per_run} \u2014 {producer} \u2192 {consumer}",
    "copy-per-run": " ({bytes} per execution)",
    "copy-label": "copy #{k} \u00b7 {bytes} {src}\u2192{dst}",
    "if-free": "{copies}, {sign}{bytes} B",
    "calls": "calls {names} (drawn at its first call)",
    "regions": "{regions} ({ops} ops)",
    "pinned": "pinned",
    "free": "free",
    "node-parameter": "parameter {n}",
    "node-parameter-named": "parameter {n}: {name}",
    "node-entry-return": "return (entry results)",
    "node-return": "return",
    "box-entry": "@{name} (entry function) \u2014 {ops} ops",
    "box-func": "@{name} \u2014 {ops} ops",
    "box-region": "{name} ({kind}) \u2014 {ops} ops",
    "tip": "{op} at {loc}",
    "no-explanation": "(no explanation: pass explain(assignment) to render_trace_html)",
}


def quantity(n: int, one: str, many: str) -> str:
    """``1 copy``, ``2 copies``, ``-1 copy``."""
    return f"{n} {one if abs(n) == 1 else many}"


def comp_label(g: Graph, cid: int) -> str:
    comp = g.comps[cid]
    return f"@{comp.name}" if comp.kind == "func" else comp.name


def fact_words(g: Graph, f: Origin, subject: Callable[[Origin], str] | None = None) -> dict[str, Any]:
    """The fields a trace line fills in for one fact (see ``TRACE_WORDS``); ``subject`` names it otherwise."""
    c = link_of(g, f)
    return {"subject": subject(f) if subject else c.subject, "layout": c.layout, "kind": c.kind, "rule": c.rule,
            "priority": c.priority,
            "strength": TRACE_WORDS["mandatory" if c.mandatory else "not-mandatory"],
            "order": TRACE_WORDS["dfs" if f.dfs else "bfs"],
            "was": TRACE_WORDS["was"].format(layout=layout_text(f.was)) if f.was is not None else ""}


def render_trace(a: Assignment, sources: Mapping[str, Source] | None = None) -> str:
    """Every worklist pop in order: what was popped, from where, and what it set.

    ``sources`` (as for ``explain``) names each subject's op and source line.
    """
    with quiet_gc():
        return _render_trace(a, sources)


def _render_trace(a: Assignment, sources: Mapping[str, Source] | None) -> str:
    g = a.graph

    def subject(f: Origin) -> str:
        text = link_of(g, f).subject
        src = sources.get(_subject_location(g, f)) if sources else None
        return f"{text} ({src.text()})" if src is not None else text

    lines: list[str] = []
    last: tuple[int, int] | None = None
    for n, ev in enumerate(a.trace or (), 1):
        if (ev.round, ev.comp) != last:
            last = (ev.round, ev.comp)
            lines.append(TRACE_WORDS["header"].format(round=ev.round, comp=comp_label(g, ev.comp)))
        lines.append("  " + TRACE_WORDS["pop"].format(n=n, **fact_words(g, ev.constraint, subject)))
        for d in ev.derived:
            lines.append("      " + TRACE_WORDS["derived"].format(**fact_words(g, d, subject)))
    # They come from no worklist pop (aliasing.py): listed after the pops.
    in_place = [e for e in a.copies if e.aliased_output is not None]
    if in_place:
        lines.append(TRACE_WORDS["in-place-header"])
        for e in in_place:
            lines.append("  " + TRACE_WORDS["in-place"].format(
                value=describe_value(g, e.value), use=describe_use(g, e.consumer, e.operand),
                layout=layout_text(e.dst), output=e.aliased_output))
    return "\n".join(lines) + "\n"
