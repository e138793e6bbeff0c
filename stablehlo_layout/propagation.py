"""The worklist engine: XLA's LayoutAssignment over the constraint graph.

It follows the structure of XLA's pass so that it reaches the same answers:
computations callee-first, at least two rounds (priority +1 per round), per
computation the mandatory constraints, backend constraints, one two-ended
deque drained by the buffer / operand / result propagators, then the
default layout for whatever nobody constrained, one buffer at a time.

Everything here is plain data; the engine never prints and never touches
MLIR.  Every constraint records its ``Origin`` so that ``explain`` can walk
the chain from any copy back to its sources.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

from . import layout as L
from .constraints import (
    BEGINNING_PRIORITY,
    new_buffer,
    new_operand,
    new_result,
    DEFAULT_PRIORITY,
    GIVEN_PRIORITY,
    NUMBER_OF_ROUNDS,
    BufferConstraint,
    ComputationLayout,
    Constraint,
    OperandConstraint,
    Origin,
    ResultConstraint,
    as_origin,
)
from .demands import BUFFER, FREE_OPERANDS, OPERAND, RESULTS, Demand
from .errors import PassError
from .graph import Graph, Instruction, Value, shape_text
from .index import build_index
from .options import check_entry_mode
from .rules import OpRule, dfs_for
from .target_view import TargetView

if TYPE_CHECKING:
    from .targets.base import Target


@dataclass(slots=True)
class TraceEvent:
    """One worklist pop: the popped constraint as it was, and what its propagation set.

    ``seeds`` is set on the first pop of each worklist run (one ``propagate``
    call): the deque as the run began, front first.  Every later state of the
    deque follows from it and the derived lists (DFS to the front, BFS to the
    back), so a reader can replay the deque without guessing.
    """

    round: int
    comp: int
    constraint: Origin
    derived: list[Origin]
    seeds: list[Origin] | None = None


@dataclass
class CopyEdge:
    """A consumer edge whose required layout differs from its producer's."""

    value: int
    src: L.Layout
    dst: L.Layout
    consumer: int  # instruction id (a ``root`` pseudo-instruction for results)
    operand: int
    demand: Constraint | None  # the constraint that asked for ``dst``
    # A conditional's branch reads the value through a parameter that keeps
    # the outer layout; XLA then copies inside that branch (its computation id).
    inside: int | None = None
    # Not a relayout: XLA's copy of an operand the custom call overwrites in
    # place through this output (aliasing.py); src == dst.
    aliased_output: int | None = None


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
    # rest would repeat the last one (``Engine._repeats``).
    rounds_computed: int = 0
    # Exact runs carry provenance facts (explain, trace); fast runs do not.
    exact: bool = False
    # The entry layouts the input gave; None where it left the layout open.
    given_params: list[L.Layout | None] = field(default_factory=list)
    given_results: list[L.Layout | None] = field(default_factory=list)


class Engine:
    def __init__(self, graph: Graph, target: "Target", entry_mode: str = "default",
                 trace: bool = False, exact: bool = False) -> None:
        check_entry_mode(entry_mode)
        self.g = graph
        self.target = target
        self.entry_mode = entry_mode
        self.trace: list[TraceEvent] | None = [] if trace else None
        self._run_seeds: list[Origin] | None = None  # the current run's initial deque, until its first pop
        # Exact: run every round and every computation through the worklist,
        # so that traces and explanations show XLA's steps and numbering.
        self.exact = exact or trace
        # Provenance facts are built only for runs that will be explained.
        self.facts = self.exact
        # Set when a demand was weakened below the current priority: then the
        # rounds are no longer shifts of one another (see _repeats).
        self.weakened = False
        self.entry_result_pushed = False
        self.current_priority = BEGINNING_PRIORITY
        self.round = 0
        self.bc: dict[int, BufferConstraint] = {}
        self.oc: dict[tuple[int, int], OperandConstraint] = {}
        self.comp_layouts: dict[int, ComputationLayout] = {}
        self.conditional_mismatch: dict[int, list[L.Layout | None]] = {}
        # Cross-module all-reduces on one channel agree on a layout; the first
        # one laid out decides, and the others follow from the next round on.
        self.channel_layouts: dict[int, L.Layout] = {}
        # XLA 0.12+'s XLA:GPU (target.loop_state_from_caller): per loop
        # computation, the buffers still unconstrained when its defaults began;
        # per while, the carried slots whose layout its caller decides.
        self.unconstrained_at_defaults: dict[int, set[int]] = {}
        self.caller_decides: dict[int, list[int]] = {}
        # Per loop condition, its body and the slots the caller left to the body.
        self.cond_follows_body: dict[int, tuple[int, list[int]]] = {}
        self.added: list[Constraint] = []
        self.comp_plans: dict[int, tuple[list[int], list[int]]] = {}
        self.comp = -1
        # Per-instruction facts the hot loops read, computed once.
        self.rules: list[OpRule] = [target.rule(graph, ins) for ins in graph.instrs]
        self.target_view: TargetView | None = None  # what the target reads; made at its first call
        # The program as the compiled core holds it; the orders come from there.
        self.index = build_index(graph, self.rules)
        # XLA's shape indices: per instruction, its results with tuples flattened
        # (the core flattens; most instructions have no tuple result and keep their list).
        self.leaves: list[list[int]] = [ins.results for ins in graph.instrs]
        for iid, flat in self.index.tuple_shape_indices():
            self.leaves[iid] = flat
        self.trivial = [self._trivial(c.id) for c in graph.comps]
        # The instructions the worklist can reach: a fast run lays trivial
        # computations out directly and never asks about their instructions.
        exact_, trivial = self.exact, self.trivial
        self.active = [exact_ or not trivial[ins.comp] for ins in graph.instrs]
        self.forwarding = [r.forwards for r in self.rules]
        self._precompute_edges()
        self.comp_order: list[int] = self.index.computation_order()  # callees first, the entry last
        self._number_buffers()
        self.given_params: list[L.Layout | None] = []
        self.given_results: list[L.Layout | None] = []

    # -- ordering (the core's order room: cpp/order.cpp) --------------------
    def post_order(self, c: int) -> list[int]:
        """Instructions of computation ``c`` in XLA's post-order: operands first, left to right."""
        return self.index.post_order(c)

    def _number_buffers(self) -> None:
        """XLA's buffer ids: the order in which unconstrained buffers get defaults."""
        exact, trivial = self.exact, self.trivial
        # Trivial computations are laid out without the default loop (fast runs).
        skip = [trivial[c] and not exact for c in range(len(self.g.comps))]
        self.order_key = self.index.number_buffers(self.comp_order, skip)

    # -- small queries -------------------------------------------------------
    def rule(self, iid: int) -> OpRule:
        """The op's rule as the target sees it (a target may refine the table)."""
        return self.rules[iid]

    def _precompute_edges(self) -> None:
        """The per-instruction and per-buffer facts the propagators read on every pop."""
        g = self.g
        values, instrs, comps = g.values, g.instrs, g.comps
        self.dfs_of: list[bool] = []
        # Is the HLO shape a tuple (several results, a tuple, a while, or a
        # parameter of a loop or branch computation)?
        self.tshape: list[bool] = []
        self.op_values: list[Sequence[Value]] = []  # every operand, implicit captures last
        self.n_results: list[int] = []
        self.n_operands: list[int] = []
        self.alias_pairs: list = []
        self.variadic_reduce: list[bool] = []
        self.own_buffers: list[tuple[Value, ...]] = []  # own array buffers among the result leaves
        self.to_siblings = [r.to_siblings for r in self.rules]
        self.array_operands: list[tuple[int, ...]] = []  # operands that can carry a choice (numbers)
        # What a buffer constraint asks of the producer's operands: nothing for
        # parameters, roots, ops whose results are all scalars or vectors, and
        # tuple operands of ops that cannot change layout.
        self.b2o: list[tuple[int, ...]] = []
        # What an operand constraint derives inside its user, past the aliases:
        # None (a root), "stop", "all_reduce" (its result follows), or "go".
        self.o2r: list[str | None] = []
        # One pass with the appends bound: this runs once per instruction.
        add_values, add_results = self.op_values.append, self.n_results.append
        add_operands, add_aliases = self.n_operands.append, self.alias_pairs.append
        add_variadic, add_own = self.variadic_reduce.append, self.own_buffers.append
        add_arrays, add_b2o, add_o2r = self.array_operands.append, self.b2o.append, self.o2r.append
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        add_dfs, add_tshape = self.dfs_of.append, self.tshape.append
        for ins, rule, lv, on in zip(instrs, self.rules, self.leaves, self.active):
            if not on:
                add_dfs(False)
                add_tshape(False)
                add_values(())
                add_own(())
                add_arrays(())
                add_b2o(())
                add_results(0)
                add_operands(0)
                add_aliases(())
                add_variadic(False)
                add_o2r(None)
                continue
            op = ins.op
            ops = ins.operands + ins.captures if ins.captures else ins.operands  # captures last
            if op == "root":
                add_dfs(False)
                ts = False
            elif op == "parameter":
                add_dfs(False)
                ts = comps[ins.comp].kind in ("body", "cond", "branch")
            else:
                add_dfs(dfs_for(g, ins, rule))
                ts = len(lv) != 1 or ins.results[0] != lv[0] or rule.hlo == "while"
            add_tshape(ts)
            ovs = [values[v] for v in ops]
            add_values(ovs)
            add_results(len(ins.results))
            nops = len(ins.operands)
            add_operands(nops)
            add_aliases(ins.attrs.get("aliases", ()) if ins.attrs else ())
            add_variadic(len(lv) > 1 and rule.hlo == "reduce")
            if len(lv) == 1:
                r = values[lv[0]]
                add_own((r,) if r.is_array and r.buffer == r.id else ())
                scalar_results = r.rank <= 1 or not r.is_array
            else:
                lvs = [values[r] for r in lv]
                add_own(tuple(r for r in lvs if r.is_array and r.buffer == r.id))
                scalar_results = all(r.rank <= 1 or not r.is_array for r in lvs)
            arrays = tuple([n for n, ov in enumerate(ovs[:nops] if ins.captures else ovs)
                            if ov.rank > 1 and ov.is_array])
            arrays = shared.setdefault(arrays, arrays)  # (0,), (0, 1), ...: a handful in all
            add_arrays(arrays)
            if (op == "parameter" or op == "root" or (not rule.can_change and rule.tuple_operand)
                    or scalar_results):
                add_b2o(())
            else:
                add_b2o(arrays)
            if op == "root":
                add_o2r(None)
            elif rule.tuple_operand:
                add_o2r("stop")
            elif rule.hlo == "all_reduce":
                add_o2r("all_reduce")
            elif rule.can_change and ts and rule.hlo != "reduce":
                add_o2r("stop")
            else:
                add_o2r("go")
        # Per buffer: the (user, operand) slots a producer's layout is offered
        # to, and the while-body parameters its value feeds back into.
        is_root = [ins.op == "root" for ins in instrs]
        forwarding, n_results = self.forwarding, self.n_results
        # A buffer's uses are those of every value that aliases it, in value order.
        self.consumers: dict[int, list[tuple[int, int]]] = {}
        consumers, active = self.consumers, self.active
        for v in values:
            if v.is_array and active[v.producer]:
                slots = consumers.get(v.buffer)
                if slots is None:
                    slots = consumers[v.buffer] = []
                if v.rank:
                    for use in v.uses:
                        user, n = use
                        if not is_root[user] and not (forwarding[user] and n < n_results[user]):
                            slots.append(use)
        self.back_edges: dict[int, list[tuple[int, int]]] = {}
        for comp in g.comps:
            if comp.kind != "body" or comp.caller is None or comp.root < 0:
                continue
            found: list[tuple[int, int, int, int]] = []
            for p, vid in enumerate(instrs[comp.root].operands):
                v = values[vid]
                if p < len(comp.params) and v.is_array and instrs[values[v.buffer].producer].comp == comp.id:
                    found.append((v.buffer, vid, p, instrs[comp.params[p]].results[0]))
            for buf, _, _, param_value in sorted(found):
                self.back_edges.setdefault(buf, []).append((param_value, comp.caller))

    def _trivial(self, c: int) -> bool:
        """Every array of non-entry computation ``c`` has rank 0 or 1, so one layout each.

        Reducer and comparator bodies are like this.  Nothing in them can
        differ from the default layout, and nothing they record can change a
        caller, so the worklist has nothing to decide there.
        """
        g = self.g
        comp = g.comps[c]
        if comp.is_entry or comp.root < 0:
            return False
        values = g.values
        for iid in comp.instrs:
            ins = g.instrs[iid]
            rule = self.rules[iid]
            if ins.op in ("parameter", "root"):
                pass
            elif (not rule.known or rule.hlo == "bitcast" or "infeed_layouts" in ins.attrs
                    or "channel" in ins.attrs):
                return False  # keep their errors and pins on the worklist path
            for r in self.leaves[iid]:
                if values[r].is_array and values[r].rank > 1:
                    return False
        return True

    # -- setting constraints (XLA's Set*Layout) ------------------------------
    # ``origin`` may be an Origin or the tuple to build one from (see as_origin).
    def set_buffer_layout(self, layout: L.Layout, buffer: int, mandatory: bool, dfs: bool,
                          priority: int, origin: Origin | tuple) -> None:
        v = self.g.values[buffer]
        if not v.is_array:
            raise PassError(f"internal: layout for non-array value {buffer}")
        if len(layout) != v.rank:
            raise PassError(
                f"layout {L.format_layout(layout)} has the wrong rank for "
                f"{shape_text(v)}",
                self.g.instrs[v.producer].loc,
            )
        c = self.bc.get(buffer)
        if c is None:
            c = new_buffer(buffer, layout, mandatory, dfs, priority, origin, self.round, self.facts)
            self.bc[buffer] = c
        elif not c.update(layout, mandatory, dfs, priority, origin, self.round,
                          not self.tshape[v.producer], self.facts):
            return
        if c.dfs:  # _push's common case, without the call
            self.added.append(c)
        else:
            self._push(c)
        aliases = self.alias_pairs[v.producer]
        if aliases:
            position = self.leaves[v.producer].index(buffer)
            for out_index, operand_no in aliases:
                if out_index == position:
                    self.set_operand_layout(layout, v.producer, operand_no, mandatory, dfs, priority,
                                            ("custom-call-alias", v.producer, c.origin))

    def set_operand_layout(self, layout: L.Layout, iid: int, n: int, mandatory: bool, dfs: bool,
                           priority: int, origin: Origin | tuple) -> None:
        v = self.op_values[iid][n]
        if not v.is_array or v.rank == 0:
            return
        if len(layout) != v.rank:
            raise PassError(f"layout {L.format_layout(layout)} has the wrong rank for operand {n}",
                            self.g.instrs[iid].loc)
        if self.forwarding[iid] and n < self.n_results[iid]:
            return
        if not mandatory:
            # XLA lets operand 0 decide a dynamic-update-slice, and a reshape of
            # a dynamic-slice, by weakening the other demands.
            hlo = self.rules[iid].hlo
            if hlo == "dynamic_update_slice" and n > 0 and priority > DEFAULT_PRIORITY:
                dfs = False
                priority -= 1
                self.weakened = True
            elif hlo == "reshape" and self.rules[self.op_values[iid][0].producer].hlo == "dynamic_slice":
                dfs = False
                priority -= 1
                self.weakened = True
        key = (iid, n)
        cur = self.oc.get(key)
        if cur is None:
            c = new_operand(iid, n, layout, mandatory, dfs, priority, origin, self.round, self.facts)
            self.oc[key] = c
        else:
            if cur.layout == layout:
                return
            if not mandatory:
                return  # first writer wins: XLA never negotiates operand layouts
            if cur.priority > priority:
                return
            # XLA keeps one slot per (instruction, operand) and queues pointers
            # to it: an entry still waiting in the worklist propagates the
            # replacement, not the layout it was queued with.
            c = cur
            c.layout, c.mandatory, c.dfs, c.priority, c.round = layout, mandatory, dfs, priority, self.round
            c.origin = (as_origin(origin).attached("operand", key, layout, priority, mandatory, dfs, self.round)
                        if self.facts else origin)
        if c.dfs:  # _push's common case, without the call
            self.added.append(c)
        else:
            self._push(c)

    def demand_operands(self, iid: int, slots: Sequence[tuple[int, L.Layout]], priority: int,
                        origin: tuple) -> None:
        """Mandatory depth-first demands on operands of ``iid`` that nothing constrained yet.

        The same as ``set_operand_layout`` for each slot, for callers that
        already know each slot holds an array of rank >= 1 that the
        instruction does not forward, and that ``layout`` has its rank.
        """
        oc, added, round_, facts = self.oc, self.added, self.round, self.facts
        for n, layout in slots:
            key = (iid, n)
            if key not in oc:
                c = oc[key] = new_operand(iid, n, layout, True, True, priority, origin, round_, facts)
                added.append(c)

    def _push(self, c: Constraint) -> None:
        if c.dfs:
            self.added.append(c)
            return
        # Keep the batch's BFS tail in descending priority: insert after the
        # last entry whose priority is at least ours.
        i = len(self.added)
        while i > 0 and self.added[i - 1].priority < c.priority:
            i -= 1
        self.added.insert(i, c)

    def set_instruction_layout(self, layouts: list[L.Layout | None], iid: int, mandatory: bool,
                               priority: int, origin: Origin) -> None:
        values = self.g.values
        for r, lay in zip(self.leaves[iid], layouts):
            if lay is not None and values[r].is_array and values[r].buffer == r:
                self.set_buffer_layout(lay, r, mandatory, True, priority, origin)
        # XLA's SetInstructionLayout: an array-shaped op that cannot change
        # layout takes its same-rank operands along (while/conditional excepted).
        rule = self.rules[iid]
        leaves = self.leaves[iid]
        if (rule.can_change or rule.tuple_operand or len(leaves) != 1 or not layouts
                or layouts[0] is None or not values[leaves[0]].is_array):
            return
        lay = layouts[0]
        for n, vid in enumerate(self.g.instrs[iid].operands):
            v = values[vid]
            if v.is_array and v.rank == len(lay) and v.rank > 0:
                self.set_operand_layout(lay, iid, n, mandatory, True, priority, Origin(
                    "same-layout-operand", iid, origin if origin.kind else None, origin.note))

    # -- the target's demands (targets/base.py, demands.py) ------------------
    def _view_for_target(self) -> TargetView:
        view = self.target_view
        if view is None:
            view = self.target_view = TargetView(self.g, self.rules, self.leaves, self.op_values, self.forwarding,
                                                 self.index.post_order, self.given_params)
        view._at(self.current_priority, self.bc, self.oc)
        return view

    def apply_demands(self, demands: Iterable[Demand]) -> None:
        """Apply a target's demands in the order given, through XLA's overwrite rules.

        Each demand is applied before the next one is asked for, so a target
        that reads the constraint store (``TargetView``) sees what its earlier
        demands set, as XLA's backends do between their Set*Layout calls.
        """
        current = self.current_priority
        for d in demands:
            kind = d.kind
            priority = current if d.priority is None else d.priority
            if kind == FREE_OPERANDS:
                self.demand_operands(d.target, d.slots, priority, d.origin)  # type: ignore[arg-type]
            elif kind == OPERAND:
                self.set_operand_layout(d.layout, d.target, d.operand, d.mandatory, d.dfs, priority,  # type: ignore[arg-type]
                                        d.origin)  # type: ignore[arg-type]
            elif kind == RESULTS:
                self.set_instruction_layout(d.layouts, d.target, d.mandatory, priority, d.origin)  # type: ignore[arg-type]
            elif kind == BUFFER:
                self.set_buffer_layout(d.layout, d.target, d.mandatory, d.dfs, priority, d.origin)  # type: ignore[arg-type]
            else:
                raise PassError(f"internal: a demand of unknown kind {kind!r}")

    # -- the worklist --------------------------------------------------------
    def propagate(self) -> None:
        """Drain the worklist.  The buffer propagator's common steps are written
        out here: this loop runs once per constraint."""
        work: deque[Constraint] = deque()
        self._drain(work, None)
        added, tracing = self.added, self.trace is not None
        if tracing:
            self._run_seeds = [c.origin for c in work]
        values, op_values, n_operands = self.g.values, self.op_values, self.n_operands
        oc, o2r, b2o = self.oc, self.o2r, self.b2o
        consumers, back_edges = self.consumers, self.back_edges
        set_buffer, set_operand, use_to_defs = self.set_buffer_layout, self.set_operand_layout, self._use_to_defs
        while work:
            c = work.popleft()
            cls = c.__class__
            if cls is OperandConstraint:
                iid, n = c.instr, c.operand  # type: ignore[attr-defined]
                ov = op_values[iid][n]
                if ov.rank > 1 and ov.is_array:
                    use_to_defs(ov, c.layout, c.priority, c)
                    if o2r[iid] is not None and n < n_operands[iid]:
                        self._operand_to_user(c, ov)  # type: ignore[arg-type]
            elif cls is BufferConstraint:
                v = values[c.buffer]  # type: ignore[attr-defined]
                if v.is_array:
                    if b2o[v.producer]:
                        self._buffer_to_operands(c, v)  # type: ignore[arg-type]
                    # The producer's layout is offered to every consumer (PropagateBufferConstraintToUses).
                    layout, prio, parent = c.layout, c.priority, c.origin
                    for slot in consumers[v.buffer]:
                        if slot not in oc:  # a non-mandatory demand never replaces one
                            set_operand(layout, slot[0], slot[1], False, True, prio,
                                        ("producer-layout", slot[0], parent))
                    back = back_edges.get(v.buffer)
                    if back:
                        for param_value, caller in back:
                            set_buffer(layout, param_value, False, True, self.current_priority,
                                       ("while-back-edge", caller, parent))
            else:
                assert isinstance(c, ResultConstraint)
                self._propagate_result(c)
            if tracing:
                self._drain(work, c)
            elif added:
                for x in added:
                    if x.dfs:
                        work.appendleft(x)
                    else:
                        work.append(x)
                added.clear()

    def _drain(self, work: deque[Constraint], popped: Constraint | None) -> None:
        if self.trace is not None and popped is not None:
            # Constraints change in place later; the trace keeps them as they were.
            self.trace.append(TraceEvent(self.round, self.comp, popped.origin,
                                         [c.origin for c in self.added], self._run_seeds))
            self._run_seeds = None
        for c in self.added:
            if c.dfs:
                work.appendleft(c)
            else:
                work.append(c)
        self.added.clear()

    # -- propagators ---------------------------------------------------------
    # Each demand is checked against the slot it would change before it is
    # made: most are refused by XLA's overwrite rules, and a refused demand
    # costs a dict lookup instead of a call and a provenance record.
    def _buffer_to_operands(self, c: BufferConstraint, v: Value) -> None:
        iid = v.producer
        rule = self.rules[iid]
        prio = self.current_priority
        layout = c.layout
        if not rule.can_change:
            oc, ovs = self.oc, self.op_values[iid]
            for n in self.b2o[iid]:
                ov = ovs[n]
                if ov.rank == v.rank:
                    cur = oc.get((iid, n))
                    if cur is not None and (cur.layout == layout or cur.priority > prio):
                        continue
                    self.set_operand_layout(layout, iid, n, True, True, prio,
                                            ("same-layout-operand", iid, c.origin))
                elif rule.hlo == "bitcast_convert":
                    lay = _bitcast_convert_operand_layout(layout, ov.rank)
                    self.set_operand_layout(lay, iid, n, True, True, prio,
                                            ("bitcast-convert-rank-change", iid, c.origin))
            return
        g = self.g
        ins = g.instrs[iid]
        if rule.broadcast:
            for n in self.b2o[iid]:
                lay = rule.operand_from_output(g, ins, n, layout)  # type: ignore[misc]
                if lay is not None:
                    self.set_operand_layout(lay, iid, n, True, self.dfs_of[iid], prio,
                                            ("broadcast-operand", iid, c.origin))
        elif not self.tshape[iid]:
            for n in self.b2o[iid]:
                derive = self.target.operand_from_output(g, ins, n, layout, rule)
                if derive is not None:
                    lay, name = derive
                    self.set_operand_layout(lay, iid, n, rule.always_backward, self.dfs_of[iid], prio,
                                            (name, iid, c.origin))

    def _operand_to_user(self, c: OperandConstraint, ov: Value) -> None:
        """What an operand's layout derives inside its user (not a root, not a capture)."""
        iid = c.instr
        step = self.o2r[iid]
        g = self.g
        rule = self.rules[iid]
        aliases = self.alias_pairs[iid]
        if aliases:
            # A custom call's output aliased to this operand follows it.
            leaves = self.leaves[iid]
            for out_index, operand_no in aliases:
                if (operand_no == c.operand and out_index < len(leaves)
                        and g.values[leaves[out_index]].is_array):
                    self.set_buffer_layout(c.layout, leaves[out_index], rule.always_forward,
                                           self.dfs_of[iid], c.priority, ("custom-call-alias", iid, c.origin))
        if step == "stop":
            return
        ins = g.instrs[iid]
        if ins.attrs and ins.attrs.get("layout_constrained"):
            return
        if step == "all_reduce":
            leaves = self.leaves[iid]
            r = leaves[c.operand] if len(leaves) > 1 else leaves[0]
            self.set_buffer_layout(c.layout, r, True, True, self.current_priority,
                                   ("all-reduce-operand", iid, c.origin))
            if rule.can_change and self.tshape[iid]:
                return
        if self.forwarding[iid] and c.operand < self.n_results[iid]:
            return
        layout, prio = c.layout, c.priority
        if self.to_siblings[iid]:
            if rule.hlo == "concatenate":
                dim = ins.attrs["dim"]
                mine = ov.dims[dim]
                for s in ins.operands:
                    other = g.values[s].dims[dim]
                    if mine is None or (other is not None and other > mine):
                        return
            oc, bc, ovs = self.oc, self.bc, self.op_values[iid]
            rank = ov.rank
            for m in self.array_operands[iid]:
                if m == c.operand or ovs[m].rank != rank:
                    continue
                cur = oc.get((iid, m))
                if cur is not None and (cur.layout == layout or cur.priority > prio):
                    continue
                self.set_operand_layout(layout, iid, m, True, True, prio,
                                        ("same-layout-sibling", iid, c.origin))
            for rv in self.own_buffers[iid]:
                if rv.rank == rank:
                    cur = bc.get(rv.id)
                    if (cur is not None and cur.layout == layout and cur.mandatory and cur.dfs
                            and cur.priority >= prio):
                        continue
                    self.set_buffer_layout(layout, rv.id, True, True, prio, ("same-layout-result", iid, c.origin))
            return
        for r_index, r in enumerate(ins.results):
            rv = g.values[r]
            if not rv.is_array or rv.rank <= 1 or rv.buffer != r:
                continue
            derive = self.target.output_from_operand(g, ins, c.operand, layout, r_index, rule)
            if derive is not None:
                lay, name = derive
                self.set_buffer_layout(lay, r, rule.always_forward, self.dfs_of[iid], prio,
                                       (name, iid, c.origin))

    def _use_to_defs(self, v: Value, layout: L.Layout, priority: int, parent: Constraint) -> None:
        """A demand on a use asks the value's producer for the same layout
        (XLA's PropagateUseConstraintToDefs)."""
        buf = v.buffer
        producer = self.g.values[buf].producer
        if self.variadic_reduce[producer]:
            return  # XLA never lets a variadic reduce's outputs take use demands
        cur = self.bc.get(buf)
        if cur is not None and priority <= cur.priority and (cur.dfs or cur.layout != layout):
            return  # a non-mandatory request needs a higher priority (or to turn on DFS)
        self.set_buffer_layout(layout, buf, False, True, priority, ("consumer-demand", producer, parent.origin))

    def _propagate_result(self, c: ResultConstraint) -> None:
        root = self.g.instrs[self.g.comps[c.comp].root]
        for vid, lay in zip(root.operands, c.layouts):
            v = self.g.values[vid]
            if lay is None or not v.is_array or v.rank <= 1:
                continue
            self._use_to_defs(v, lay, self.current_priority, c)

    # -- one computation -----------------------------------------------------
    def _layout_of(self, vid: int) -> L.Layout | None:
        v = self.g.values[vid]
        c = self.bc.get(v.buffer)
        return c.layout if c is not None else None

    def _new_comp_layout(self, c: int) -> ComputationLayout:
        comp = self.g.comps[c]
        root = self.g.instrs[comp.root]
        return ComputationLayout([None] * len(comp.params), [None] * len(root.operands))

    def run_on_computation(self, c: int) -> None:
        g = self.g
        comp = g.comps[c]
        self.comp = c
        cl = self.comp_layouts.get(c)
        if cl is None:
            cl = self.comp_layouts[c] = self._new_comp_layout(c)
        if self.trivial[c] and not self.exact:
            self._lay_out_trivial(c)
            return
        defaults, specials = self._comp_plan(c)

        # 1. Values whose layouts are fixed: parameters, infeed, what send reads.
        is_entry = comp.is_entry
        params_fixed = (is_entry and any(x is not None for x in cl.params + cl.results)) or (
            not is_entry and c not in self.conditional_mismatch and cl.params_set)
        if self.cond_follows_body:
            self._cond_follows_body(c, cl)
        param_layouts = dict(zip(comp.params, cl.params))
        for iid in specials:
            ins = g.instrs[iid]
            if ins.op == "parameter":
                lay = param_layouts.get(iid)
                if params_fixed and lay is not None:
                    why = "entry-parameter" if is_entry else "computation-parameter"
                    self.set_instruction_layout([lay], iid, True, self.current_priority,
                                                Origin(why, iid, None, self._param_note(c, iid)))
            elif "infeed_layouts" in ins.attrs:
                self.set_instruction_layout(ins.attrs["infeed_layouts"], iid, True, self.current_priority,
                                            Origin("infeed-layout", iid, None, "the layout the infeed carries"))
            elif self.rules[iid].hlo == "outfeed":
                # XLA pins what outfeed reads to its outfeed_shape; StableHLO
                # carries no such layout, so it is the default one.
                self._default_operands(ins, Origin("outfeed-layout", iid, None,
                                                   "outfeed transfers its operands in their given layout"))
            elif self.rules[iid].hlo == "send":
                # XLA copies what send reads before it starts (send aliases its
                # input); nothing constrains that copy, so it is the default.
                self._default_operands(ins, Origin("send-operand", iid, None, "send transfers a default-layout copy"))
            elif ("channel" in ins.attrs and not g.spmd and ins.attrs["channel"] in self.channel_layouts
                  and all(len(self.channel_layouts[ins.attrs["channel"]]) == g.values[r].rank
                          for r in self.leaves[iid])):
                lay = self.channel_layouts[ins.attrs["channel"]]
                self.set_instruction_layout([lay] * len(self.leaves[iid]), iid, True, self.current_priority,
                                            Origin("channel-layout", iid, None,
                                                   f"channel {ins.attrs['channel']} was laid out {L.format_layout(lay)}"))
            elif self.rule(ins.id).hlo == "bitcast" and ins.op.startswith("mhlo."):
                raise PassError("a bitcast already exists before layout assignment; XLA rejects "
                                "this too: run the pass on the module before layouts were decided", ins.loc)
        # 2. Callers of computations already laid out; ops nobody knows.
        for iid in specials:
            ins = g.instrs[iid]
            if ins.op in ("parameter", "root"):
                continue
            if ins.callees:
                self._constrain_call_site(ins)
            if not self.rule(ins.id).known:
                self._pin_unknown(ins)
        # 3. The result, once it is known (entry with a given result, or any later round).
        if c in self.conditional_mismatch:
            cl.results = list(self.conditional_mismatch[c])
            cl.priority = self.current_priority + NUMBER_OF_ROUNDS
            cl.result_set = True
            self._push(new_result(c, tuple(cl.results), cl.priority,
                                  Origin("branch-result-agreement", comp.caller), self.round))
        elif (is_entry and any(x is not None for x in cl.params + cl.results)
              and any(x is not None for x in cl.results)) or (
                self.current_priority > BEGINNING_PRIORITY and (is_entry or cl.result_set)):
            why = "entry-result" if is_entry else "computation-result"
            self._push(new_result(c, tuple(cl.results), cl.priority, Origin(why, comp.root), self.round))
            if is_entry:
                self.entry_result_pushed = True
        # 4. Backend rules, then layout-constrained custom calls.
        self.apply_demands(self.target.backend_demands(self._view_for_target(), c))
        for iid in specials:
            ins = g.instrs[iid]
            if "operand_layouts" in ins.attrs:
                self._constrain_custom_call(ins)
        self.propagate()
        if self.caller_decides:
            self._loop_state_from_initial_values(specials)
        # 5. Defaults, one buffer at a time, each propagated before the next.
        bc = self.bc
        if self.target.loop_state_from_caller and (comp.kind in ("body", "cond") or self.caller_decides):
            self.unconstrained_at_defaults[c] = {b for b in defaults if b not in bc}
        for b in defaults:
            if b in bc:
                continue
            v = g.values[b]
            lay = self.target.unconstrained_layout(g, v)
            self.set_buffer_layout(lay, b, False, True, self.current_priority,
                                   ("default-layout", v.producer, None))
            self.propagate()
        self._record_computation_layout(c)
        if self.caller_decides:
            self._push_loop_state_into_callees(specials)
        if not g.spmd:
            for iid in specials:
                channel = g.instrs[iid].attrs.get("channel")
                if channel is not None and channel not in self.channel_layouts:
                    lay = self._layout_of(self.leaves[iid][0])
                    if lay is not None:
                        self.channel_layouts[channel] = lay

    def _comp_plan(self, c: int) -> tuple[list[int], list[int]]:
        """Per computation, the same every round: its buffers in the order the
        default loop visits them (XLA's buffer ids), and the instructions steps
        1, 2, 4 and the channel bookkeeping look at (all others are plain ops)."""
        plan = self.comp_plans.get(c)
        if plan is None:
            g = self.g
            values, key = g.values, self.order_key
            comp = g.comps[c]
            buffers = [v for iid in comp.instrs for v in self.leaves[iid]
                       if values[v].is_array and values[v].buffer == v]
            buffers.sort(key=key.__getitem__)  # keys are distinct within a computation
            specials = []
            for iid in comp.instrs:
                ins = g.instrs[iid]
                rule = self.rules[iid]
                attrs = ins.attrs
                if (ins.op in ("parameter", "root") or ins.callees or not rule.known
                        or rule.hlo in ("outfeed", "send", "bitcast")
                        or (attrs and ("infeed_layouts" in attrs or "channel" in attrs
                                       or "operand_layouts" in attrs))):
                    specials.append(iid)
            plan = self.comp_plans[c] = (buffers, specials)
        return plan

    def _lay_out_trivial(self, c: int) -> None:
        """A computation of scalars and vectors: each buffer takes its only layout."""
        g = self.g
        values, bc = g.values, self.bc
        for iid in g.comps[c].instrs:
            for r in self.leaves[iid]:
                v = values[r]
                if v.is_array and v.buffer == r:
                    bc[r] = new_buffer(r, L.default_layout(v.rank), True, True, self.current_priority,
                                       ("only-layout", v.producer, None), self.round, self.facts)
        self._record_computation_layout(c)

    def _param_note(self, c: int, p: int) -> str:
        comp = self.g.comps[c]
        number = self.g.instrs[p].attrs.get("number", 0)
        if comp.is_entry:
            return f"entry parameter {number}"
        return f"parameter {number} of {comp.name}"

    def _default_operands(self, ins: Instruction, origin: Origin) -> None:
        """Every array operand of ``ins`` read in the default layout, mandatory."""
        for n, vid in enumerate(ins.operands):
            v = self.g.values[vid]
            if v.is_array:
                self.set_operand_layout(L.default_layout(v.rank), ins.id, n, True, True,
                                        self.current_priority, origin)

    def _pin_unknown(self, ins: Instruction) -> None:
        origin = Origin("unknown-op-default", ins.id, None, f"{ins.op} is not known to the rules")
        self._default_operands(ins, origin)
        self.set_instruction_layout([L.default_layout(self.g.values[r].rank) for r in self.leaves[ins.id]],
                                    ins.id, True, self.current_priority, origin)

    def _constrain_custom_call(self, ins: Instruction) -> None:
        g = self.g
        target = ins.attrs.get("target", "")
        ins.attrs["layout_constrained"] = True
        origin = Origin("custom-call-layout", ins.id, None, f"custom_call @{target}")
        results = ins.attrs["result_layouts"]
        lays = [lay if g.values[r].is_array and lay is not None and len(lay) == g.values[r].rank else None
                for r, lay in zip(self.leaves[ins.id], results)]
        self.set_instruction_layout(lays, ins.id, True, self.current_priority, origin)
        if target == "LayoutConstraint":
            if lays and lays[0] is not None:
                self.set_operand_layout(lays[0], ins.id, 0, True, True, self.current_priority, origin)
            return
        for n, lay in enumerate(ins.attrs["operand_layouts"]):
            if n >= len(ins.operands):
                break
            v = g.values[ins.operands[n]]
            if v.is_array and lay is not None and len(lay) == v.rank:
                self.set_operand_layout(lay, ins.id, n, True, True, self.current_priority, origin)

    def _constrain_call_site(self, ins: Instruction) -> None:
        """Make a caller agree with the interfaces its callees recorded (XLA 2.2)."""
        g = self.g
        hlo = self.rule(ins.id).hlo
        prio = self.current_priority
        if hlo == "call":
            callee = ins.callees[0]
            cl = self.comp_layouts.get(callee)
            if cl is None:
                return
            origin = Origin("call-interface", ins.id, None, f"@{g.comps[callee].name}")
            for n, lay in enumerate(cl.params):
                if lay is not None:
                    self.set_operand_layout(lay, ins.id, n, True, True, prio, origin)
            self.set_instruction_layout(cl.results, ins.id, True, prio, origin)
        elif hlo == "while":
            cond, body = ins.callees
            bl, cdl = self.comp_layouts.get(body), self.comp_layouts.get(cond)
            if bl is None or cdl is None:
                return
            n_carried = len(ins.operands)
            if bl.params[:n_carried] != bl.results:
                bl.params[:n_carried] = list(bl.results)
                bl.priority = prio + NUMBER_OF_ROUNDS
                bl.params_set = bl.result_set = True
            if cdl.params[:n_carried] != bl.params[:n_carried]:
                cdl.params[:n_carried] = bl.params[:n_carried]
                cdl.priority = prio + NUMBER_OF_ROUNDS
                cdl.params_set = cdl.result_set = True
            origin = Origin("while-interface", ins.id)
            free = self._free_loop_slots(ins, n_carried) if self.target.loop_state_from_caller else []
            results = [None if n in free else lay for n, lay in enumerate(bl.results)]
            for n, lay in enumerate(results):
                if lay is not None:
                    self.set_operand_layout(lay, ins.id, n, True, True, prio, origin)
            self.set_instruction_layout(results, ins.id, True, prio, origin)
            self._constrain_captures(ins, origin)
        elif hlo in ("case", "if"):
            branches = ins.callees
            layouts = [self.comp_layouts.get(b) for b in branches]
            if any(x is None for x in layouts):
                return
            sizes = [len(g.comps[b].instrs) for b in branches]
            best = sizes.index(max(sizes))
            best_results = layouts[best].results  # type: ignore[union-attr]
            for b, bl2 in zip(branches, layouts):
                assert bl2 is not None
                if bl2.results != best_results:
                    self.conditional_mismatch[b] = list(best_results)
            origin = Origin("branch-interface", ins.id, None, f"branch {best} has the most instructions")
            self.set_instruction_layout(best_results, ins.id, True, prio, origin)
            self._constrain_captures(ins, origin)
        else:
            # Reducer-style regions work on scalars; their captures keep the
            # layout the region recorded.
            self._constrain_captures(ins, Origin("region-interface", ins.id))

    def _free_loop_slots(self, ins: Instruction, n_carried: int) -> list[int]:
        """XLA 0.12+'s XLA:GPU, first round: the carried slots nothing in the loop constrained.

        A slot is free when its body parameter, its body result and its
        condition parameter were all still unconstrained when the loop's
        computations took their defaults; the caller then lays the slot out
        (targets/xla_version.py, ``loop_state_from_caller``).
        """
        if self.round != 0:
            return []
        g = self.g
        cond, body = ins.callees
        body_free = self.unconstrained_at_defaults.get(body, set())
        cond_free = self.unconstrained_at_defaults.get(cond, set())
        body_params, cond_params = g.comps[body].params, g.comps[cond].params
        body_results = g.instrs[g.comps[body].root].operands
        free = []
        for n in range(min(n_carried, len(body_params), len(body_results))):
            pv = g.values[g.instrs[body_params[n]].results[0]]
            if not pv.is_array or pv.rank <= 1:
                continue
            if pv.buffer not in body_free or g.values[body_results[n]].buffer not in body_free:
                continue
            if n < len(cond_params):
                cv = g.values[g.instrs[cond_params[n]].results[0]]
                if cv.buffer not in cond_free:
                    continue
            free.append(n)
        if free:
            self.caller_decides[ins.id] = free
        return free

    def _loop_state_from_initial_values(self, specials: list[int]) -> None:
        """XLA 0.12+'s XLA:GPU, first round: a free slot nobody asked for takes its initial value's layout.

        Before the caller's defaults, each loop (in instruction order) hands
        the layout of an initial value that holds one to the matching result
        that holds none, non-mandatorily, so that the layout carries on to
        what reads the loop's result (a second loop included).  A demand on
        the result, already propagated, wins over it.
        """
        g, bc = self.g, self.bc
        for iid in specials:
            free = self.caller_decides.get(iid)
            if not free:
                continue
            ins = g.instrs[iid]
            for n in free:
                result = g.values[self.leaves[iid][n]].buffer
                init = bc.get(g.values[ins.operands[n]].buffer)
                if result in bc or init is None:
                    continue
                self.set_buffer_layout(init.layout, result, False, True, self.current_priority,
                                       Origin("loop-state-from-initial-value", iid, init.origin
                                              if isinstance(init.origin, Origin) else None,
                                              f"carried value {n} of the loop"))
                self.propagate()

    def _push_loop_state_into_callees(self, specials: list[int]) -> None:
        """The layout the caller chose for each free slot becomes the loop's interface for the next round.

        The caller chooses only where it constrained the slot before its
        defaults: a demand on the loop's result first, else the initial
        value's layout.  A slot neither constrains stays free, and the body
        lays it out again next round, around the slots the caller did choose.
        """
        g = self.g
        unconstrained = self.unconstrained_at_defaults.get(self.comp, set())
        for iid in specials:
            free = self.caller_decides.pop(iid, None)
            if not free:
                continue
            ins = g.instrs[iid]
            cond, body = ins.callees
            bl, cdl = self.comp_layouts[body], self.comp_layouts[cond]
            for n in free:
                result = g.values[self.leaves[iid][n]].buffer
                initial = g.values[ins.operands[n]].buffer
                if result not in unconstrained:
                    lay = self._layout_of(result)
                elif initial not in unconstrained:
                    lay = self._layout_of(initial)
                else:
                    lay = None
                    self.cond_follows_body.setdefault(cond, (body, []))[1].append(n)
                bl.params[n] = bl.results[n] = cdl.params[n] = lay
            bl.priority = cdl.priority = self.current_priority + NUMBER_OF_ROUNDS
            bl.params_set = bl.result_set = cdl.params_set = cdl.result_set = True

    def _cond_follows_body(self, c: int, cl: ComputationLayout) -> None:
        """A slot the caller left to the body: the condition reads it as the body laid it out this round."""
        follow = self.cond_follows_body.pop(c, None)
        if follow is None:
            return
        body, slots = follow
        if self.comp_order.index(body) > self.comp_order.index(c):
            return  # the body comes later this round; the loop's interface aligns them next round
        bl = self.comp_layouts[body]
        for n in slots:
            cl.params[n] = bl.params[n]

    def _constrain_captures(self, ins: Instruction, origin: Origin) -> None:
        """An outer value read inside a region must arrive in the region parameter's layout."""
        base = len(ins.operands)
        for k, (comp, number) in enumerate(ins.attrs.get("capture_params", ())):
            cl = self.comp_layouts.get(comp)
            if cl is None or cl.params[number] is None:
                continue
            self.set_operand_layout(cl.params[number], ins.id, base + k, True, True,
                                    self.current_priority, origin)

    def _record_computation_layout(self, c: int) -> None:
        """XLA's CalculateComputationLayout: remember the interface this round chose."""
        g = self.g
        comp = g.comps[c]
        cl = self.comp_layouts[c]
        params = [self._layout_of(g.instrs[p].results[0]) for p in comp.params]
        results = [self._layout_of(v) if g.values[v].is_array else None for v in g.instrs[comp.root].operands]
        new_priority = self.current_priority + NUMBER_OF_ROUNDS
        if c in self.conditional_mismatch:
            cl.params = params  # a mismatched branch re-records its parameters every round
        if cl.priority < new_priority:
            if comp.is_entry:
                # What the caller gave stays; only open leaves take the inferred layout.
                cl.params = [x if x is not None else y for x, y in zip(self.given_params, params)]
                cl.results = [x if x is not None else y for x, y in zip(self.given_results, results)]
            else:
                # A result this round enforced (with a root copy where needed) is
                # what the computation returns, whatever its root buffers hold.
                if cl.result_set and all(x is not None for x, v in zip(cl.results, results) if v is not None):
                    results = [x if y is not None else None for x, y in zip(cl.results, results)]
                cl.params, cl.results = params, results
            cl.priority = new_priority
            cl.params_set = cl.result_set = True

    # -- the whole module ----------------------------------------------------
    def run(self) -> Assignment:
        g = self.g
        assert g.entry is not None
        self._seed_entry_layout()
        i = computed = 0
        changed = False
        while changed or i < NUMBER_OF_ROUNDS:
            self.round = i
            # New tables, not cleared ones: the Assignment keeps the last round's.
            self.bc = {}
            self.oc = {}
            self.entry_result_pushed = False
            before = self._entry_interface()
            for c in self.comp_order:
                self.run_on_computation(c)
            self.current_priority += 1
            changed = self._reconcile_aliases()
            i += 1
            computed += 1
            if i > 16:
                raise PassError("layout assignment did not settle after 16 rounds")
            if i < NUMBER_OF_ROUNDS and not changed and self._repeats(before):
                i = NUMBER_OF_ROUNDS
        return self._assign(i, computed)

    def _entry_interface(self) -> tuple:
        cl = self.comp_layouts[self.g.entry]  # type: ignore[index]
        return (tuple(cl.params), tuple(cl.results), cl.priority, cl.params_set, cl.result_set)

    def _repeats(self, before: tuple) -> bool:
        """Would the next round only repeat this one, one priority higher?

        A round reads, besides the graph, the recorded computation interfaces,
        the channel and branch agreements, and the current priority.  When the
        only computation with a choice is the entry, its interface is what it
        was when this round began and its result was enforced, no channel or
        branch agreement was made, and no demand was weakened below the
        current priority, the next round sees the same inputs with every
        priority one higher; XLA's overwrite rules compare priorities only
        with each other, so it makes the same decisions.  The built-in targets
        read nothing else; a user target opts in with ``uniform_rounds``.
        """
        if self.exact or self.weakened or not self.target.uniform_rounds:
            return False
        if self.channel_layouts or self.conditional_mismatch:
            return False
        if not all(self.trivial[c] for c in self.comp_order if c != self.g.entry):
            return False
        after = self._entry_interface()
        return after == before and (self.entry_result_pushed or all(x is None for x in after[1]))

    def _seed_entry_layout(self) -> None:
        g = self.g
        comp = g.comps[g.entry]  # type: ignore[index]
        params = [g.values[g.instrs[p].results[0]] for p in comp.params]
        results = [g.values[v] for v in g.instrs[comp.root].operands]

        def given(mode: L.Layout | str | None, v: Value) -> L.Layout | None:
            if not v.is_array:
                return None
            if isinstance(mode, tuple):
                return mode
            if mode is None and self.entry_mode == "default":
                return L.default_layout(v.rank)
            return None

        self.given_params = [given(m, v) for m, v in zip(g.entry_param_modes, params)]
        self.given_results = [given(m, v) for m, v in zip(g.entry_result_modes, results)]
        any_set = any(x is not None for x in self.given_params + self.given_results)
        self.comp_layouts[comp.id] = ComputationLayout(
            list(self.given_params), list(self.given_results),
            GIVEN_PRIORITY if any_set else DEFAULT_PRIORITY,
        )

    def _shared_branch_operands(self) -> set[int]:
        """Branches whose HLO operand tuple other branches use too.

        XLA builds one tuple of the outer values a branch reads, and CSE
        merges identical ones; such a tuple has several users, so XLA copies
        it before the conditional instead of inside the branch.
        """
        g = self.g
        users: dict[tuple[int, tuple[int, ...]], set[int]] = {}
        branches: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        for c in g.comps:
            if c.kind == "branch" and c.caller is not None and c.params:
                key = (g.instrs[c.caller].comp, _branch_signature(g, c.id))
                # Branches of one conditional reading the same tuple are one user.
                users.setdefault(key, set()).add(c.caller)
                branches.setdefault(key, []).append(c.id)
        return {c for key, comps in branches.items() if len(users[key]) > 1 for c in comps}

    def _reconcile_aliases(self) -> bool:
        """A donated parameter and its aliased result end up with one layout."""
        g = self.g
        if not g.entry_aliases:
            return False
        cl = self.comp_layouts[g.entry]  # type: ignore[index]
        comp = g.comps[g.entry]  # type: ignore[index]
        changed = False
        for p, r in g.entry_aliases:
            if p >= len(cl.params) or r >= len(cl.results):
                continue
            if self.given_params[p] is not None and self.given_results[r] is not None:
                continue
            pl = self._layout_of(g.instrs[comp.params[p]].results[0])
            rl = self._layout_of(g.instrs[comp.root].operands[r])
            if pl is None or rl is None or pl == rl:
                continue  # XLA leaves an alias pair alone once its layouts agree
            changed = True
            chosen = rl if self.given_params[p] is None else pl
            cl.params[p] = cl.results[r] = chosen
        return changed

    # -- AssignLayouts -------------------------------------------------------
    def _assign(self, rounds: int, computed: int) -> Assignment:
        g = self.g
        layouts: list[L.Layout | None] = [None] * len(g.values)
        bc = self.bc
        for v in g.values:
            if v.is_array:
                c = bc.get(v.buffer)
                if c is None:
                    raise PassError(f"internal: no layout was assigned to value {v.id}",
                                    g.instrs[v.producer].loc)
                layouts[v.id] = c.layout
        copies: list[CopyEdge] = []
        op_values, n_operands = self.op_values, self.n_operands
        for (iid, n), c in self.oc.items():
            if n >= n_operands[iid]:
                continue  # implicit captures are settled below
            ov = op_values[iid][n]
            have = layouts[ov.id]
            if have is not None and have != c.layout and ov.rank > 0 and ov.is_array:
                copies.append(CopyEdge(ov.id, have, c.layout, iid, n, c))
        # Implicit captures must match the region parameter they stand for.
        shared = self._shared_branch_operands()
        # Inside a branch that copies its parameter, every use reads the copy:
        # the layout uses see, where it differs from the parameter's own.
        effective: dict[int, L.Layout | None] = {}
        for ins in g.instrs:  # outer region ops come before the ones nested in them
            if not ins.captures:
                continue
            base = len(ins.operands)
            for k, (comp, number) in enumerate(ins.attrs.get("capture_params", ())):
                ov = g.values[ins.captures[k]]
                param = g.instrs[g.comps[comp].params[number]].results[0]
                want = layouts[param]
                have = effective.get(ov.id, layouts[ov.id])
                if want is not None and have is not None and want != have and ov.rank > 0:
                    inside = comp if g.comps[comp].kind == "branch" and comp not in shared else None
                    copies.append(CopyEdge(ov.id, have, want, ins.id, base + k,
                                           self.oc.get((ins.id, base + k)), inside))
                    if inside is not None:
                        # XLA's CopyOperandIfLayoutsDiffer: the branch parameter
                        # takes the operand's layout, the copy sits in the branch.
                        layouts[param] = have
                        effective[param] = want
        # Root copies where a computation's result layout is fully known and differs.
        entry_results: list[L.Layout | None] = []
        for comp in g.comps:
            cl = self.comp_layouts.get(comp.id)
            if cl is None or comp.root < 0:
                continue
            if not (comp.is_entry or cl.result_set):
                continue
            root = g.instrs[comp.root]
            arrays = [i for i, v in enumerate(root.operands) if g.values[v].is_array]
            if any(cl.results[i] is None for i in arrays):
                continue
            demand = None  # made for the first copy: most computations need none
            for i in arrays:
                vid = root.operands[i]
                want, have = cl.results[i], effective.get(vid, layouts[vid])
                if want is not None and have is not None and want != have and g.values[vid].rank > 0:
                    if demand is None:
                        demand = new_result(comp.id, tuple(cl.results), cl.priority,
                                            Origin("entry-result" if comp.is_entry else "computation-result",
                                                   comp.root), self.round)
                    copies.append(CopyEdge(vid, have, want, comp.root, i, demand))
        entry = g.comps[g.entry]  # type: ignore[index]
        ecl = self.comp_layouts[entry.id]
        entry_params = [layouts[g.instrs[p].results[0]] for p in entry.params]
        root = g.instrs[entry.root]
        arrays_set = all(ecl.results[i] is not None for i, v in enumerate(root.operands) if g.values[v].is_array)
        for i, vid in enumerate(root.operands):
            if not g.values[vid].is_array:
                entry_results.append(None)
            elif arrays_set:
                entry_results.append(ecl.results[i])
            else:
                entry_results.append(layouts[vid])
        return Assignment(g, layouts, copies, self.bc, self.oc, self.comp_layouts,
                          entry_params, entry_results, rounds, self.target, self.entry_mode, self.trace,
                          rounds_computed=computed, exact=self.exact,
                          given_params=list(self.given_params), given_results=list(self.given_results))


def copy_groups(a: Assignment) -> list[CopyGroup]:
    """The copies to insert, outer computations first, in a stable order.

    XLA's copies of in-place operands (``aliased_output`` set) come last, one
    per aliased operand: each reads what its consumer reads after the
    relayout copies are in, so a relayout and an in-place copy chain.
    """
    g = a.graph
    groups: dict[tuple[int, L.Layout, str, int, tuple[int, int]], list[CopyEdge]] = {}
    for e in a.copies:
        in_place = (-1, -1) if e.aliased_output is None else (e.consumer, e.operand)
        key = (e.value, e.dst, g.instrs[e.consumer].scope, -1 if e.inside is None else e.inside, in_place)
        groups.setdefault(key, []).append(e)

    def depth(vid: int) -> int:
        d, c = 0, g.comps[g.instrs[g.values[vid].producer].comp]
        while c.caller is not None:
            d += 1
            c = g.comps[g.instrs[c.caller].comp]
        return d

    ordered = sorted(groups.items(), key=lambda kv: (kv[0][4] != (-1, -1), depth(kv[0][0]), kv[0][0], kv[0][2],
                                                     kv[0][3], kv[0][1], kv[0][4]))
    return [CopyGroup(vid, dst, scope, edges) for (vid, dst, scope, _, _), edges in ordered]


def _branch_signature(g: Graph, comp: int) -> tuple[int, ...]:
    """The outer values a branch reads, in parameter order: its HLO tuple operand."""
    return tuple(g.instrs[p].attrs.get("capture", -1) for p in g.comps[comp].params)


def _bitcast_convert_operand_layout(output: L.Layout, operand_rank: int) -> L.Layout:
    """A rank-changing bitcast-convert splits or merges the last dimension, most minor."""
    if operand_rank < len(output):
        return L.intern(d for d in output if d != len(output) - 1)
    return L.intern([operand_rank - 1] + list(output))


def assign_layouts(graph: Graph, target: "Target", entry_mode: str = "default",
                   trace: bool = False, exact: bool = False) -> Assignment:
    """Run the engine; ``exact`` (implied by ``trace``) runs every round and computation in full.

    The answer also lists XLA's copies of operands custom calls overwrite in
    place (``aliasing.py``): they follow from the layouts, not the worklist.
    """
    from .aliasing import in_place_copies

    a = Engine(graph, target, entry_mode, trace, exact).run()
    a.copies.extend(in_place_copies(a))
    return a
