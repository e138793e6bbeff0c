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

from dataclasses import dataclass, field
from itertools import compress, count
from operator import attrgetter, itemgetter
from typing import Iterable, Sequence
from weakref import WeakMethod

from . import _core
from . import layout as L
from .constraints import (
    BEGINNING_PRIORITY,
    new_result,
    DEFAULT_PRIORITY,
    GIVEN_PRIORITY,
    NUMBER_OF_ROUNDS,
    BufferConstraint,
    ComputationLayout,
    Constraint,
    OperandConstraint,
    Origin,
)
from .demands import BUFFER, FREE_OPERANDS, OPERAND, RESULTS, Demand, DemandPlan
from .errors import PassError
from .graph import Graph, Instruction, Value, shape_text
from .index import RuleTable, build_engine, build_index
from .options import check_entry_mode
from .records import BufferConstraints, OperandConstraints, Records
from .rules import RULES, OpRule, rule_for
from .target_view import TargetView

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


class _Unread:
    """A copy's demand not read yet: its operand slot in the store.

    Only explain and trace read a copy's demand (an ``OperandConstraint`` and
    its chain of ``Origin`` objects); the rewrite never does, so the result
    phase leaves it in the core until someone asks.
    """

    __slots__ = ("store", "key")

    def __init__(self, store: OperandConstraints, key: tuple[int, int]) -> None:
        self.store, self.key = store, key


@dataclass
class CopyEdge:
    """A consumer edge whose required layout differs from its producer's."""

    value: int
    src: L.Layout
    dst: L.Layout
    consumer: int  # instruction id (a ``root`` pseudo-instruction for results)
    operand: int
    demand: Constraint | None  # the constraint that asked for ``dst`` (read from the store on first use)
    # A conditional's branch reads the value through a parameter that keeps
    # the outer layout; XLA then copies inside that branch (its computation id).
    inside: int | None = None
    # Not a relayout: XLA's copy of an operand the custom call overwrites in
    # place through this output (aliasing.py); src == dst.
    aliased_output: int | None = None


def _demand(e: CopyEdge) -> Constraint | None:
    got = e._demand  # type: ignore[attr-defined]
    if got.__class__ is _Unread:
        got = e._demand = got.store.get(got.key)  # type: ignore[attr-defined]
    return got


def _set_demand(e: CopyEdge, demand: Constraint | _Unread | None) -> None:
    e._demand = demand  # type: ignore[attr-defined]


# The dataclass's __init__, __eq__ and __repr__ go through the property.
CopyEdge.demand = property(_demand, _set_demand)  # type: ignore[assignment]


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


class _OperandValues:
    """Per instruction, its operand values, implicit captures last (built when a target asks)."""

    def __init__(self, g: Graph) -> None:
        self._g = g
        self._rows: dict[int, list[Value]] = {}

    def __getitem__(self, iid: int) -> list[Value]:
        row = self._rows.get(iid)
        if row is None:
            ins, values = self._g.instrs[iid], self._g.values
            row = self._rows[iid] = [values[v] for v in (ins.operands + list(ins.captures) if ins.captures
                                                         else ins.operands)]
        return row


class _Leaves(Sequence):
    """Per instruction, XLA's shape indices: its results with tuples flattened
    (the core flattens; most instructions have no tuple result and read their
    results' row)."""

    __slots__ = ("_instrs", "_flat")

    def __init__(self, g: Graph, flat: dict[int, list[int]]) -> None:
        self._instrs, self._flat = g.instrs, flat

    def __len__(self) -> int:
        return len(self._instrs)

    def __getitem__(self, iid: int) -> list[int]:  # type: ignore[override]
        flat = self._flat.get(iid)
        return self._instrs[iid].results if flat is None else flat


class Engine:
    """The driver of XLA's pass over the compiled core (``cpp/propagators.*``).

    The core holds the constraint store, the worklist and the propagators;
    this class runs the rounds and the per-computation steps around them and
    is what targets talk to (``set_*_layout``, ``demand_operands``, ``bc`` and
    ``oc`` to read the store).
    """

    def __init__(self, graph: Graph, target: "Target", entry_mode: str = "default",
                 trace: bool = False, exact: bool = False) -> None:
        check_entry_mode(entry_mode)
        self.g = graph
        self.target = target
        self.entry_mode = entry_mode
        self.trace: list[TraceEvent] | None = [] if trace else None
        # Exact: run every round and every computation through the worklist,
        # so that traces and explanations show XLA's steps and numbering; the
        # core then also keeps every provenance fact.
        self.exact = exact or trace
        self.entry_result_pushed = False
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
        # Per loop body, the (while, slot) pairs it lays out again whose
        # initial value may be another loop's result by then.
        self.body_follows_initial: dict[int, list[tuple[int, int]]] = {}
        # Per round's caller: initial values a later loop's result tied, and
        # the (loop, slot) pairs that saw no layout on theirs when visited.
        self.tied_initial_values: set[int] = set()
        self.untied_at_visit: set[tuple[int, int]] = set()
        # XLA 0.12+'s XLA:GPU (target.branch_interface_from_caller): per
        # conditional, the results and captures its caller decides.
        self.branch_caller_decides: dict[int, tuple[list[int], list[int]]] = {}
        # Per branch, (parameter, other branch, its parameter): a captured value
        # the caller left free is read as the branch laid out first laid it out.
        self.branch_param_follows: dict[int, list[tuple[int, int, int]]] = {}
        # Conditionals whose results the caller left to their branches: where
        # the branches then disagree, one more round lets them agree.
        self.branch_results_left: set[int] = set()
        # Per branch, (result, the branch with the most instructions): a result
        # left to the branches is the one that branch lays out, where it comes first.
        self.branch_result_follows: dict[int, list[tuple[int, int]]] = {}
        self.another_round = False
        self.comp_plans: dict[int, tuple[list[int], list[int]]] = {}
        self._steps_of: dict[int, tuple[list[int], list[int], list[int], list[int]]] = {}
        self._param_notes: dict[int, list[int]] = {}  # per computation, its parameters' note ids
        self.comp = -1
        # Per-instruction facts the driver and targets read, computed once.
        if type(target).rule is Target.rule:  # the table's rules: one lookup per op name
            table = RULES.get
            by_code = [table(op) or rule_for(op) for op in graph.columns.op_names]
            rule_table = RuleTable(by_code, graph.columns.op)
            # Tuples: the target's view shares them instead of copying them.
            self.rules: Sequence[OpRule] = tuple(map(by_code.__getitem__, graph.columns.op))
        else:
            self.rules = tuple(target.rule(graph, ins) for ins in graph.instrs)
            rule_table = RuleTable.of_rules(self.rules)
        self.rule_table = rule_table
        self.target_view: TargetView | None = None  # what the target reads; made at its first call
        # The program as the compiled core holds it; the orders come from there.
        self.index = build_index(graph, rule_table)
        # XLA's shape indices: per instruction, its results with tuples flattened
        # (the core flattens; most instructions have no tuple result and keep their list).
        self.leaves: Sequence[list[int]] = _Leaves(graph, dict(self.index.tuple_shape_indices()))
        self.trivial, self._specials = self._per_computation(rule_table)
        # The instructions the worklist can reach: a fast run lays trivial
        # computations out directly and never asks about their instructions.
        reached = [not t for t in self.trivial]
        self.active = [True] * len(graph.instrs) if self.exact else list(map(reached.__getitem__, graph.columns.comp))
        self.forwarding: Sequence[bool] = tuple(rule_table.per_instruction(attrgetter("forwards")))
        self.op_values = _OperandValues(graph)
        # A target with its own unconstrained layout lays defaults out through Python.
        self._own_defaults = type(target).unconstrained_layout is not Target.unconstrained_layout
        # The core calls back through weak references: it must not keep this engine alive.
        back, fwd, own = (WeakMethod(m) for m in (self._derive_operand, self._derive_output, self._rule_operand))
        self.core = build_engine(graph, self.index, rule_table, target, self.active, self.exact, trace,
                                 lambda *a: back()(*a), lambda *a: fwd()(*a),  # type: ignore[misc]
                                 lambda *a: own()(*a))  # type: ignore[misc]
        self.records = Records(self.core)
        # The store, read-only (targets read it; set_* writes it).
        self.bc = BufferConstraints(self.records)
        self.oc = OperandConstraints(self.records)
        self._slot_ids: dict[int, tuple[object, list[tuple[int, int]]]] = {}
        # A target's plans as the core holds them (made on first sight, applied every round).
        self._plan_ids: dict[tuple, tuple[object, int]] = {}
        self.current_priority = BEGINNING_PRIORITY
        self.round = 0
        self.comp_order: list[int] = self.index.computation_order()  # callees first, the entry last
        self._number_buffers()
        self.given_params: list[L.Layout | None] = []
        self.given_results: list[L.Layout | None] = []

    # The core reads the round and the current priority on every demand it makes.
    @property
    def current_priority(self) -> int:
        return self.core.priority

    @current_priority.setter
    def current_priority(self, value: int) -> None:
        self.core.priority = value

    @property
    def round(self) -> int:
        return self.core.round

    @round.setter
    def round(self, value: int) -> None:
        self.core.round = value

    @property
    def weakened(self) -> bool:
        """A demand was weakened below the current priority: then the rounds are
        no longer shifts of one another (see _repeats)."""
        return self.core.weakened

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

    # -- the target's derivations, called back by the core -------------------
    def _derive_operand(self, iid: int, n: int, output: int) -> tuple[int, int] | None:
        got = self.target.operand_from_output(self.g, self.g.instrs[iid], n, self.records.layout(output),
                                              self.rules[iid])
        return None if got is None else (self.records.lid(got[0]), self.records.name(got[1]))

    def _derive_output(self, iid: int, n: int, operand: int, result: int) -> tuple[int, int] | None:
        got = self.target.output_from_operand(self.g, self.g.instrs[iid], n, self.records.layout(operand),
                                              result, self.rules[iid])
        return None if got is None else (self.records.lid(got[0]), self.records.name(got[1]))

    def _rule_operand(self, iid: int, n: int, output: int) -> int | None:
        derive = self.rules[iid].operand_from_output
        assert derive is not None
        got = derive(self.g, self.g.instrs[iid], n, self.records.layout(output))
        return None if got is None else self.records.lid(got)

    def _per_computation(self, rule_table: RuleTable) -> tuple[list[bool], list[list[int]]]:
        """Per computation, whether it is trivial, and the instructions the driver's
        steps look at, worked out in bulk from the importer's columns.

        Trivial: every array of a non-entry computation has rank 0 or 1, so
        one layout each.  Reducer and comparator bodies are like this.
        Nothing in them can differ from the default layout, and nothing they
        record can change a caller, so the worklist has nothing to decide
        there; an op without a known rule, a bitcast, an infeed's layouts or a
        channel keeps its computation on the worklist (for their errors and pins).

        The instructions steps 1, 2, 4 and the channel bookkeeping of
        ``run_on_computation`` look at, in block order: parameters and the
        root, callers, ops without a known rule, outfeed, send and bitcast, and
        the ops with an infeed's layouts, a channel or a custom call's operand
        layouts (all others are plain ops).
        """
        g = self.g
        c = g.columns
        n_instrs = len(g.instrs)
        interface = [name in ("parameter", "root") for name in c.op_names]
        of = rule_table.of
        # Per distinct rule, then per instruction through the table: C loops, not Python ones.
        special_rule = [not r.known or r.hlo in ("outfeed", "send", "bitcast") for r in rule_table.distinct]
        kept_rule = [not r.known or r.hlo == "bitcast" for r in rule_table.distinct]
        special = set(compress(count(), map(interface.__getitem__, c.op)))
        special.update(c.callee_owner)
        special.update(compress(count(), map(special_rule.__getitem__, of)))
        # The importer lists every op carrying these among its attributed ones (graph.CORE_ATTRIBUTES).
        kept: set[int] = set()
        for i in c.attributed:
            attrs = c.attrs[i]
            if "infeed_layouts" in attrs or "channel" in attrs:
                special.add(i)
                kept.add(i)
            elif "operand_layouts" in attrs:
                special.add(i)
        # Parameters and roots never keep a computation on the worklist.
        ruled = list(compress(count(), map(kept_rule.__getitem__, of)))
        plain_op = [not x for x in interface]
        kept.update(compress(ruled, map(plain_op.__getitem__, map(c.op.__getitem__, ruled))))
        kept_comps = set(map(c.comp.__getitem__, kept))
        # Arrays of rank > 1, by the shape table's rows; each value belongs to its producer's computation.
        starts = c.shape_start
        wide = [bool(a) and starts[k + 1] - starts[k] > 1 for k, a in enumerate(c.shape_is_array)]
        producers = compress(c.producer, map(wide.__getitem__, c.shape))
        if c.producer and min(c.producer) >= 0:
            wide_comps = set(map(c.comp.__getitem__, producers))
        else:  # a value without a producer belongs to no computation
            wide_comps = {c.comp[i] for i in producers if 0 <= i < n_instrs}
        trivial = [not (comp.is_entry or comp.root < 0 or comp.id in kept_comps or comp.id in wide_comps)
                   for comp in g.comps]
        specials = [list(filter(special.__contains__, comp.instrs)) for comp in g.comps]
        return trivial, specials

    # -- setting constraints (XLA's Set*Layout, in the core) -----------------
    # ``origin`` may be an Origin or the tuple ``(rule, instr, parent[, note])``
    # to build one from: the core makes a record only when a constraint takes it.
    def set_buffer_layout(self, layout: L.Layout, buffer: int, mandatory: bool, dfs: bool,
                          priority: int, origin: Origin | tuple) -> None:
        r = self.records
        try:
            self.core.set_buffer(r.lid(layout), buffer, mandatory, dfs, priority, *r.why(origin))
        except _core.DemandError as e:
            raise self._demand_error(e) from None

    def set_operand_layout(self, layout: L.Layout, iid: int, n: int, mandatory: bool, dfs: bool,
                           priority: int, origin: Origin | tuple) -> None:
        r = self.records
        try:
            self.core.set_operand(r.lid(layout), iid, n, mandatory, dfs, priority, *r.why(origin))
        except _core.DemandError as e:
            raise self._demand_error(e) from None

    def demand_operands(self, iid: int, slots: Sequence[tuple[int, L.Layout]], priority: int,
                        origin: tuple) -> None:
        """Mandatory depth-first demands on operands of ``iid`` that nothing constrained yet.

        The same as ``set_operand_layout`` for each slot, for callers that
        already know each slot holds an array of rank >= 1 that the
        instruction does not forward, and that ``layout`` has its rank.
        """
        got = self._slot_ids.get(id(slots))
        if got is None:
            lid = self.records.lid
            got = self._slot_ids[id(slots)] = (slots, [(n, lid(lay)) for n, lay in slots])  # keeps slots alive
        self.core.demand_operands(iid, got[1], priority, *self.records.why(origin))

    def set_instruction_layout(self, layouts: list[L.Layout | None], iid: int, mandatory: bool,
                               priority: int, origin: Origin) -> None:
        r = self.records
        try:
            self.core.set_instruction([-1 if lay is None else r.lid(lay) for lay in layouts], iid, mandatory,
                                      priority, *r.why(origin))
        except _core.DemandError as e:
            raise self._demand_error(e) from None

    # -- the target's demands (targets/base.py, demands.py) ------------------
    def _view_for_target(self) -> TargetView:
        view = self.target_view
        if view is None:
            view = self.target_view = TargetView(self.g, self.rules, self.leaves, self.op_values, self.forwarding,
                                                 self.index.post_order, self.given_params,
                                                 self.rule_table.distinct, self.rule_table.of)
        view._at(self.current_priority, self.bc, self.oc)
        return view

    def apply_demands(self, demands: Iterable[Demand]) -> None:
        """Apply a target's demands in the order given, through XLA's overwrite rules.

        Each demand is applied before the next one is asked for, so a target
        that reads the constraint store (``TargetView``) sees what its earlier
        demands set, as XLA's backends do between their Set*Layout calls.
        """
        if demands.__class__ is DemandPlan:
            self.apply_demands(demands.before)  # type: ignore[attr-defined]
            self._apply_plan(demands)  # type: ignore[arg-type]
            return
        current = self.current_priority
        # A user target's free-operands demands take the inlined path.
        slot_ids, why, demand = self._slot_ids, self.records.why, self.core.demand_operands
        for d in demands:
            kind = d.kind
            priority = current if d.priority is None else d.priority
            if kind == FREE_OPERANDS:
                got = slot_ids.get(id(d.slots))
                if got is None:
                    self.demand_operands(d.target, d.slots, priority, d.origin)  # type: ignore[arg-type]
                else:
                    demand(d.target, got[1], priority, *why(d.origin))  # type: ignore[arg-type]
            elif kind == OPERAND:
                self.set_operand_layout(d.layout, d.target, d.operand, d.mandatory, d.dfs, priority,  # type: ignore[arg-type]
                                        d.origin)  # type: ignore[arg-type]
            elif kind == RESULTS:
                self.set_instruction_layout(d.layouts, d.target, d.mandatory, priority, d.origin)  # type: ignore[arg-type]
            elif kind == BUFFER:
                self.set_buffer_layout(d.layout, d.target, d.mandatory, d.dfs, priority, d.origin)  # type: ignore[arg-type]
            else:
                raise PassError(f"internal: a demand of unknown kind {kind!r}")

    def _apply_plan(self, plan: DemandPlan) -> None:
        """A target's plan for a computation, in one call to the core (``cpp/demands.h``).

        The core keeps the plan from its first round on; each step's shared
        origin is a record the core makes on first use, as ``Records.record``
        would for the ``Origin`` the step stands for.
        """
        key = (plan.comp, id(plan.steps), plan.late, plan.catch_all_rule, plan.catch_all_note, plan.late_note)
        got = self._plan_ids.get(key)
        if got is None:
            name, steps = self.records.name, plan.steps
            made = list(steps.values())
            # Thousands of steps, a few distinct ones: each distinct step's names are looked up once.
            named = {k: (name(s.rule), name(s.note)) for k, s in dict(zip(map(id, made), made)).items()}
            names = list(map(named.__getitem__, map(id, made)))
            got = self._plan_ids[key] = (steps, self.core.add_plan(  # keeps steps alive: its id is in the key
                plan.comp, list(plan.late), list(steps), list(map(attrgetter("code"), made)),
                list(map(attrgetter("arg"), made)), list(map(itemgetter(0), names)), list(map(itemgetter(1), names)),
                name(plan.catch_all_rule), name(plan.catch_all_note), name(plan.late_note)))
        try:
            self.core.apply_plan(got[1], self.current_priority)
        except _core.DemandError as e:
            raise self._demand_error(e) from None

    def _push_result(self, c: int, layouts: list[L.Layout | None], priority: int, origin: Origin) -> None:
        r = self.records
        self.core.push_result(c, [-1 if lay is None else r.lid(lay) for lay in layouts], priority,
                              *r.why(origin))

    def _demand_error(self, e: _core.DemandError) -> PassError:
        what, a, b, lid = e.args
        lay = L.format_layout(self.records.layout(lid))
        if what == 2:
            return PassError(f"internal: layout for non-array value {a}")
        if what == 0:
            v = self.g.values[a]
            return PassError(f"layout {lay} has the wrong rank for {shape_text(v)}", self.g.instrs[v.producer].loc)
        return PassError(f"layout {lay} has the wrong rank for operand {b}", self.g.instrs[a].loc)

    # -- the worklist (in the core) ------------------------------------------
    def propagate(self) -> None:
        """Drain the worklist."""
        try:
            self.core.propagate()
        except _core.DemandError as e:
            raise self._demand_error(e) from None
        self._take_events()

    def _take_events(self) -> None:
        """The trace events of the worklist runs since the last call, all in this round and computation."""
        if self.trace is not None:
            origin = self.records.origin
            for popped, derived, seeds in self.core.take_events():
                self.trace.append(TraceEvent(self.round, self.comp, origin(popped),  # type: ignore[arg-type]
                                             [origin(d) for d in derived],  # type: ignore[misc]
                                             None if seeds is None else [origin(s) for s in seeds]))  # type: ignore[misc]

    # -- one computation -----------------------------------------------------
    def _layout_of(self, vid: int) -> L.Layout | None:
        lid = self.core.buffer_layout(self.g.values[vid].buffer)
        return None if lid < 0 else self.records.layout(lid)

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
        pins, calls, custom_calls, channels = self._step_lists(c)

        # 1. Values whose layouts are fixed: parameters, infeed, what send reads.
        is_entry = comp.is_entry
        params_fixed = (is_entry and any(x is not None for x in cl.params + cl.results)) or (
            not is_entry and c not in self.conditional_mismatch and cl.params_set)
        if self.body_follows_initial:
            self._loop_state_from_earlier_loops(c, cl)
        if self.cond_follows_body:
            self._cond_follows_body(c, cl)
        if self.branch_param_follows or self.branch_result_follows:
            self._branch_param_follows(c, cl)
        if params_fixed:
            self._pin_parameters(c, cl)
        for iid in pins:
            ins = g.instrs[iid]
            if "infeed_layouts" in ins.attrs:
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
        for iid in calls:
            ins = g.instrs[iid]
            if ins.callees:
                self._constrain_call_site(ins)
            if not self.rule(ins.id).known:
                self._pin_unknown(ins)
        # 3. The result, once it is known (entry with a given result, or any later round).
        if c in self.conditional_mismatch:
            cl.results = list(self.conditional_mismatch[c])
            cl.priority = self.current_priority + NUMBER_OF_ROUNDS
            cl.result_set = True
            self._push_result(c, cl.results, cl.priority, Origin("branch-result-agreement", comp.caller))
        elif (is_entry and any(x is not None for x in cl.params + cl.results)
              and any(x is not None for x in cl.results)) or (
                self.current_priority > BEGINNING_PRIORITY and (is_entry or cl.result_set)):
            why = "entry-result" if is_entry else "computation-result"
            self._push_result(c, cl.results, cl.priority, Origin(why, comp.root))
            if is_entry:
                self.entry_result_pushed = True
        # 4. Backend rules, then layout-constrained custom calls.
        self.apply_demands(self.target.backend_demands(self._view_for_target(), c))
        for iid in custom_calls:
            self._constrain_custom_call(g.instrs[iid])
        self.propagate()
        if self.caller_decides:
            self._loop_state_from_initial_values(specials)
        # 5. Defaults, one buffer at a time, each propagated before the next.
        has = self.core.has_buffer
        if (self.target.loop_state_from_caller and (comp.kind in ("body", "cond") or self.caller_decides)) or (
                self.target.branch_interface_from_caller and (comp.kind == "branch" or self.branch_caller_decides)):
            self.unconstrained_at_defaults[c] = {b for b in defaults if not has(b)}
        if self._own_defaults:
            for b in defaults:
                if has(b):
                    continue
                v = g.values[b]
                lay = self.target.unconstrained_layout(g, v)
                self.set_buffer_layout(lay, b, False, True, self.current_priority,
                                       ("default-layout", v.producer, None))
                self.propagate()
        else:
            self.core.lay_out_defaults(defaults)  # the row-major default, each propagated in turn
            self._take_events()
        self._record_computation_layout(c)
        if self.caller_decides:
            self._push_loop_state_into_callees(specials)
        if self.branch_caller_decides:
            self._push_branch_interface_into_callees(specials)
        if not g.spmd:
            for iid in channels:
                channel = g.instrs[iid].attrs["channel"]
                if channel not in self.channel_layouts:
                    lay = self._layout_of(self.leaves[iid][0])
                    if lay is not None:
                        self.channel_layouts[channel] = lay

    def _comp_plan(self, c: int) -> tuple[list[int], list[int]]:
        """Per computation, the same every round: its buffers in the order the
        default loop visits them (XLA's buffer ids), and the instructions steps
        1, 2, 4 and the channel bookkeeping look at (all others are plain ops)."""
        plan = self.comp_plans.get(c)
        if plan is None:
            # Every computation the worklist runs on, in one call to the core.
            comps = [k for k in self.comp_order if k not in self.comp_plans and not (self.trivial[k] and not self.exact)]
            if c not in comps:
                comps.append(c)
            start, items = _core.default_buffers(self.core, self.order_key, comps)
            for n, k in enumerate(comps):
                self.comp_plans[k] = (items[start[n]:start[n + 1]], self._specials[k])
            plan = self.comp_plans[c]
        return plan

    def _step_lists(self, c: int) -> tuple[list[int], list[int], list[int], list[int]]:
        """The specials of ``c`` each step acts on, in block order: step 1's after the
        parameters (infeed, outfeed, send, channels, bitcasts), step 2's (callers, ops without a
        known rule), step 4's (layout-constrained custom calls), and the channels."""
        lists = self._steps_of.get(c)
        if lists is None:
            g, rules = self.g, self.rules
            pins, calls, custom_calls, channels = [], [], [], []
            for iid in self._comp_plan(c)[1]:
                ins, rule = g.instrs[iid], rules[iid]
                attrs = ins.attrs
                if ins.op != "parameter" and ("infeed_layouts" in attrs or "channel" in attrs
                                              or rule.hlo in ("outfeed", "send", "bitcast")):
                    pins.append(iid)
                # A region op that captures nothing (a reducer's) has no interface to agree with.
                if ins.op not in ("parameter", "root") and (not rule.known or ins.callees and (
                        rule.hlo in ("call", "while", "case", "if") or attrs.get("capture_params"))):
                    calls.append(iid)
                if "operand_layouts" in attrs:
                    custom_calls.append(iid)
                if attrs.get("channel") is not None:
                    channels.append(iid)
            lists = self._steps_of[c] = (pins, calls, custom_calls, channels)
        return lists

    def _lay_out_trivial(self, c: int) -> None:
        """A computation of scalars and vectors: each buffer takes its only layout."""
        self.core.lay_out_trivial(c)
        self._record_computation_layout(c)

    def _pin_parameters(self, c: int, cl: ComputationLayout) -> None:
        """Step 1's parameters, in one call to the core: each with a layout takes it,
        mandatory, from an origin of its own (what ``Origin(why, parameter, None,
        note)`` would record).  Parameters come first in block order."""
        comp = self.g.comps[c]
        notes = self._param_notes.get(c)
        if notes is None:
            name = self.records.name
            notes = self._param_notes[c] = [name(self._param_note(c, p)) for p in comp.params]
        lid = self.records.lid
        chosen = [k for k, lay in enumerate(cl.params[:len(comp.params)]) if lay is not None]
        try:
            _core.pin_parameters(self.core, [comp.params[k] for k in chosen], [lid(cl.params[k]) for k in chosen],
                                 [notes[k] for k in chosen],
                                 self.records.name("entry-parameter" if comp.is_entry else "computation-parameter"),
                                 self.current_priority)
        except _core.DemandError as e:
            raise self._demand_error(e) from None

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
        self.core.set_layout_constrained(ins.id)
        origin = Origin("custom-call-layout", ins.id, None, f"custom_call @{target}")
        results = ins.attrs["result_layouts"]
        lays = [lay if g.values[r].is_array and lay is not None and len(lay) == g.values[r].rank else None
                for r, lay in zip(self.leaves[ins.id], results)]
        self.set_instruction_layout(lays, ins.id, True, self.current_priority, origin)
        if target == "LayoutConstraint":
            if lays and lays[0] is not None:
                self.set_operand_layout(lays[0], ins.id, 0, True, True, self.current_priority, origin)
            return
        operands = ins.operands  # read once: a view lists them anew on every read
        for n, lay in enumerate(ins.attrs["operand_layouts"]):
            if n >= len(operands):
                break
            v = g.values[operands[n]]
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
            free_results, free_captures = (self._free_branch_interface(ins) if self.target.branch_interface_from_caller
                                           else ([], []))
            best_results = [None if n in free_results else lay
                            for n, lay in enumerate(layouts[best].results)]  # type: ignore[union-attr]
            for b, bl2 in zip(branches, layouts):
                assert bl2 is not None
                if [None if n in free_results else lay for n, lay in enumerate(bl2.results)] != best_results:
                    if b not in self.conditional_mismatch and ins.id in self.branch_results_left:
                        self.another_round = True
                    self.conditional_mismatch[b] = list(best_results)
            origin = Origin("branch-interface", ins.id, None, f"branch {best} has the most instructions")
            self.set_instruction_layout(best_results, ins.id, True, prio, origin)
            self._constrain_captures(ins, origin, skip=free_captures)
        else:
            # Reducer-style regions work on scalars; their captures keep the
            # layout the region recorded.
            if ins.attrs.get("capture_params"):
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
        """XLA 0.12+'s XLA:GPU, first round: a free slot's initial value and result share one layout.

        Before the caller's defaults, each loop, in the order XLA visits
        them (``_loops_in_xla_order``), ties each free slot: where the
        initial value holds a layout and the result none, the result takes
        it, non-mandatorily, so that the layout carries on to what reads the
        loop's result (a second loop included); where the result holds one
        (a demand on it, already propagated) and the initial value none, the
        initial value takes the result's, and with it the other loops that
        start from the same value and come later (XLA's CSE merges their
        zeros).  A loop visited earlier did not see that layout: its slot is
        left to its body (``_push_loop_state_into_callees``).
        """
        g, bc = self.g, self.bc
        self.tied_initial_values.clear()
        self.untied_at_visit.clear()
        for iid in self._loops_in_xla_order(specials):
            free = self.caller_decides.get(iid)
            if not free:
                continue
            operands, leaves = g.instrs[iid].operands, self.leaves[iid]
            for n in free:
                result = g.values[leaves[n]].buffer
                initial = g.values[operands[n]].buffer
                init = bc.get(initial)
                if init is None:
                    demand = bc.get(result)
                    if demand is None:
                        self.untied_at_visit.add((iid, n))
                        continue
                    self.set_buffer_layout(demand.layout, initial, False, True, self.current_priority,
                                           Origin("loop-state-from-result", iid, demand.origin
                                                  if isinstance(demand.origin, Origin) else None,
                                                  f"carried value {n} of the loop"))
                    self.tied_initial_values.add(initial)
                    self.propagate()
                    continue
                if result in bc:
                    continue
                self.set_buffer_layout(init.layout, result, False, True, self.current_priority,
                                       Origin("loop-state-from-initial-value", iid, init.origin
                                              if isinstance(init.origin, Origin) else None,
                                              f"carried value {n} of the loop"))
                self.propagate()

    def _loops_in_xla_order(self, specials: list[int]) -> list[int]:
        """The computation's loops as XLA 0.12 visits them: in its module's order of their computations
        where the dump gave it (``xla_loop_rank``, hlo_metadata.py), else in instruction order."""
        loops = [iid for iid in specials if self.rule(iid).hlo == "while"]
        return sorted(loops, key=lambda iid: self.g.instrs[iid].attrs.get("xla_loop_rank", -1))

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
            operands, leaves = ins.operands, self.leaves[iid]
            for n in free:
                result = g.values[leaves[n]].buffer
                initial = g.values[operands[n]].buffer
                if result not in unconstrained:
                    lay = self._layout_of(result)
                elif initial not in unconstrained and not (
                        (iid, n) in self.untied_at_visit and initial in self.tied_initial_values):
                    lay = self._layout_of(initial)
                else:
                    lay = None
                    self.cond_follows_body.setdefault(cond, (body, []))[1].append(n)
                    self.body_follows_initial.setdefault(body, []).append((iid, n))
                bl.params[n] = bl.results[n] = cdl.params[n] = lay
            bl.priority = cdl.priority = self.current_priority + NUMBER_OF_ROUNDS
            bl.params_set = bl.result_set = cdl.params_set = cdl.result_set = True

    def _loop_state_from_earlier_loops(self, c: int, cl: ComputationLayout) -> None:
        """A slot left to the body whose initial value another loop returns: the body takes that loop's layout.

        XLA 0.12 visits the loops again once a visit changed a layout: by
        then the loop that returns this slot's initial value has laid it out
        in its own body, and this loop ties the slot to it.  Here that loop's
        body has recorded its interface earlier in this round.
        """
        g = self.g
        for iid, n in self.body_follows_initial.pop(c, []):
            v = g.values[g.instrs[iid].operands[n]]
            producer = g.instrs[v.producer]
            if self.rule(producer.id).hlo != "while" or producer.id == iid or v.id not in self.leaves[producer.id]:
                continue
            other = producer.callees[1]
            if self.comp_order.index(other) > self.comp_order.index(c):
                continue
            lay = self.comp_layouts[other].results[self.leaves[producer.id].index(v.id)]
            if lay is not None:
                cl.params[n] = cl.results[n] = lay

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

    def _free_branch_interface(self, ins: Instruction) -> tuple[list[int], list[int]]:
        """XLA 0.12+'s XLA:GPU, first round: the conditional's results and captures its branches left free.

        A result is free when every branch's root operand for it was still
        unconstrained when the branches took their defaults; a capture is free
        when its branch parameter was.  The caller then lays them out
        (targets/xla_version.py, ``branch_interface_from_caller``).
        """
        if self.round != 0:
            return [], []
        g = self.g
        free_sets = [self.unconstrained_at_defaults.get(b) for b in ins.callees]
        if any(s is None for s in free_sets):
            return [], []
        roots = [g.instrs[g.comps[b].root].operands for b in ins.callees]
        free_results = []
        for n, vid in enumerate(self.leaves[ins.id]):
            v = g.values[vid]
            if not v.is_array or v.rank <= 1:
                continue
            if all(n < len(r) and g.values[r[n]].buffer in s for r, s in zip(roots, free_sets)):  # type: ignore[operator]
                free_results.append(n)
        free_captures = []
        for k, (comp, number) in enumerate(ins.attrs.get("capture_params", ())):
            pv = g.values[g.instrs[g.comps[comp].params[number]].results[0]]
            if pv.is_array and pv.rank > 1 and pv.buffer in self.unconstrained_at_defaults.get(comp, ()):
                free_captures.append(k)
        if free_results or free_captures:
            self.branch_caller_decides[ins.id] = (free_results, free_captures)
        return free_results, free_captures

    def _push_branch_interface_into_callees(self, specials: list[int]) -> None:
        """The layouts the caller chose for a conditional's free results and captures become its branches' interface.

        As for loop state: the caller chooses only what it constrained before
        its defaults (a demand on the conditional's result, the captured
        value's own layout); what it left free too, each branch lays out
        again in the next round.
        """
        g = self.g
        unconstrained = self.unconstrained_at_defaults.get(self.comp, set())
        for iid in specials:
            entry = self.branch_caller_decides.pop(iid, None)
            if entry is None:
                continue
            free_results, free_captures = entry
            ins = g.instrs[iid]
            captures = ins.attrs.get("capture_params", ())
            chosen = False
            sizes = [len(g.comps[b].instrs) for b in ins.callees]
            best = ins.callees[sizes.index(max(sizes))]
            first: dict[int, tuple[int, int]] = {}  # captured buffer -> the branch parameter that lays it out
            for k in free_captures:
                comp, number = captures[k]
                buf = g.values[ins.captures[k]].buffer  # type: ignore[index]
                lay = None if buf in unconstrained else self._layout_of(buf)
                self.comp_layouts[comp].params[number] = lay
                chosen = chosen or lay is not None
                if lay is None:
                    if buf in first:
                        self.branch_param_follows.setdefault(comp, []).append((number, *first[buf]))
                    else:
                        first[buf] = (comp, number)
            for n in free_results:
                # A result demand decides only where no captured value did:
                # otherwise the branches carry the captured layouts through.
                buf = g.values[self.leaves[iid][n]].buffer
                lay = None if chosen or buf in unconstrained else self._layout_of(buf)
                for b in ins.callees:
                    self.comp_layouts[b].results[n] = lay
                if lay is None:
                    self.branch_results_left.add(iid)
                    for b in ins.callees:
                        if b != best:
                            self.branch_result_follows.setdefault(b, []).append((n, best))
            for b in ins.callees:
                cl = self.comp_layouts[b]
                cl.priority = self.current_priority + NUMBER_OF_ROUNDS
                cl.params_set = cl.result_set = True

    def _branch_param_follows(self, c: int, cl: ComputationLayout) -> None:
        """What the caller left to the branches: this branch reads it as an earlier branch laid it out this round.

        A captured value: as the first branch that reads it laid it out; a
        result: as the branch with the most instructions laid it out, XLA's
        rule for agreeing branch results, where that branch comes first.
        """
        order = self.comp_order.index
        for number, other, other_number in self.branch_param_follows.pop(c, ()):
            if order(other) < order(c):
                cl.params[number] = self.comp_layouts[other].params[other_number]
        for n, best in self.branch_result_follows.pop(c, ()):
            if order(best) < order(c):
                cl.results[n] = self.comp_layouts[best].results[n]

    def _constrain_captures(self, ins: Instruction, origin: Origin, skip: list[int] | None = None) -> None:
        """An outer value read inside a region must arrive in the region parameter's layout."""
        base = len(ins.operands)
        for k, (comp, number) in enumerate(ins.attrs.get("capture_params", ())):
            cl = self.comp_layouts.get(comp)
            if cl is None or cl.params[number] is None or (skip and k in skip):
                continue
            self.set_operand_layout(cl.params[number], ins.id, base + k, True, True,
                                    self.current_priority, origin)

    def _record_computation_layout(self, c: int) -> None:
        """XLA's CalculateComputationLayout: remember the interface this round chose."""
        params, results = _core.interface_of(self.core, c)
        get = self._layout_table().__getitem__
        self._record_interface(c, list(map(get, params)), list(map(get, results)))

    def _layout_table(self) -> list[L.Layout | None]:
        """Every layout by its core id, and None at index -1 (the core's "no layout")."""
        n = _core.layout_count(self.core)
        if n > len(self.records.layouts):
            self.records.layout(n - 1)
        return [*self.records.layouts, None]

    def _lay_out_one_layout_run(self, comps: list[int]) -> None:
        """Trivial computations, each buffer its only layout, and their interfaces, in one call to the core."""
        (ps, pi), (rs, ri) = _core.lay_out_one_layout_run(self.core, comps)
        get, known = self._layout_table().__getitem__, self.comp_layouts
        new_priority, mismatched = self.current_priority + NUMBER_OF_ROUNDS, self.conditional_mismatch
        for k, c in enumerate(comps):
            params = list(map(get, pi[ps[k]:ps[k + 1]]))
            results = list(map(get, ri[rs[k]:rs[k + 1]]))
            if c not in known:
                if c not in mismatched:
                    # What _record_interface makes of a fresh layout (its priority is the lowest).
                    known[c] = ComputationLayout(params, results, new_priority, True, True)
                    continue
                known[c] = ComputationLayout([None] * len(params), [None] * len(results))
            self._record_interface(c, params, results)

    def _record_interface(self, c: int, params: list[L.Layout | None], results: list[L.Layout | None]) -> None:
        """The interface computation ``c`` laid out this round becomes its layout, where strong enough."""
        comp = self.g.comps[c]
        cl = self.comp_layouts[c]
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
        # A fast run lays out each run of consecutive trivial computations in one call to the core.
        steps: list[int | list[int]] = []
        for c in self.comp_order:
            if self.trivial[c] and not self.exact:
                if not steps or steps[-1].__class__ is not list:
                    steps.append([])
                steps[-1].append(c)  # type: ignore[union-attr]
            else:
                steps.append(c)
        i = computed = 0
        changed = False
        while changed or i < NUMBER_OF_ROUNDS:
            self.round = i
            self.core.new_round()  # the store keeps one round's constraints
            self.entry_result_pushed = False
            before = self._entry_interface()
            for step in steps:
                if step.__class__ is list:
                    self._lay_out_one_layout_run(step)  # type: ignore[arg-type]
                else:
                    self.run_on_computation(step)  # type: ignore[arg-type]
            self.current_priority += 1
            changed = self._reconcile_aliases() or self.another_round
            self.another_round = False
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
        root_operands = g.instrs[comp.root].operands  # read once: a view lists them anew on every read
        changed = False
        for p, r in g.entry_aliases:
            if p >= len(cl.params) or r >= len(cl.results):
                continue
            if self.given_params[p] is not None and self.given_results[r] is not None:
                continue
            pl = self._layout_of(g.instrs[comp.params[p]].results[0])
            rl = self._layout_of(root_operands[r])
            if pl is None or rl is None or pl == rl:
                continue  # XLA leaves an alias pair alone once its layouts agree
            changed = True
            chosen = rl if self.given_params[p] is None else pl
            cl.params[p] = cl.results[r] = chosen
        return changed

    # -- AssignLayouts -------------------------------------------------------
    def _assign(self, rounds: int, computed: int) -> Assignment:
        g = self.g
        known = self.records.layout
        missing, layouts = self.core.value_layouts(self.records.table())
        if missing >= 0:
            raise PassError(f"internal: no layout was assigned to value {missing}",
                            g.instrs[g.values[missing].producer].loc)
        bc, oc = BufferConstraints(self.records, cache=True), OperandConstraints(self.records, cache=True)
        copies = [CopyEdge(v, layouts[v], known(want), iid, n, _Unread(oc, key))  # type: ignore[arg-type]
                  for key, (v, want) in self.core.copy_candidates() for iid, n in (key,)]
        # The readers of the answer need the store only: the run's facts go
        # before the rest of the answer (and the rewrite) allocates.
        self.core.finish()
        # Implicit captures must match the region parameter they stand for.
        shared = self._shared_branch_operands()
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
        entry_results: list[L.Layout | None] = []
        for comp in g.comps:
            cl = self.comp_layouts.get(comp.id)
            if cl is None or comp.root < 0:
                continue
            if not (comp.is_entry or cl.result_set):
                continue
            root_operands = g.instrs[comp.root].operands  # read once: a view lists them anew on every read
            arrays = [i for i, v in enumerate(root_operands) if g.values[v].is_array]
            if any(cl.results[i] is None for i in arrays):
                continue
            demand = None  # made for the first copy: most computations need none
            for i in arrays:
                vid = root_operands[i]
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
        root_operands = g.instrs[entry.root].operands
        arrays_set = all(ecl.results[i] is not None for i, v in enumerate(root_operands) if g.values[v].is_array)
        for i, vid in enumerate(root_operands):
            if not g.values[vid].is_array:
                entry_results.append(None)
            elif arrays_set:
                entry_results.append(ecl.results[i])
            else:
                entry_results.append(layouts[vid])
        return Assignment(g, layouts, copies, bc, oc, self.comp_layouts,  # type: ignore[arg-type]
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
