"""The engine's state: what the rooms of XLA's pass share, and the setters every demand goes through.

It follows the structure of XLA's pass so that it reaches the same answers:
computations callee-first, at least two rounds (priority +1 per round), per
computation the mandatory constraints, backend constraints, one two-ended
deque drained by the buffer / operand / result propagators, then the
default layout for whatever nobody constrained, one buffer at a time.

The compiled core (``cpp/``) holds the program index, the constraint store,
the worklist and the propagators.  Around it, one room per part of XLA's
pass: ``rounds.py`` (the rounds over the module), ``computation.py`` (the
steps of one computation), ``interfaces.py`` (computation interfaces and
callers agreeing with them), ``result.py`` (the answer and its copy edges);
``driver.py`` makes them and runs them.  This file holds what they share:
the state, the setters a target's demands go through (XLA's Set*Layout)
and the worklist's drain.  It knows none of the rooms.

Everything here is plain data; the engine never prints and never touches
MLIR.  Every constraint records its ``Origin`` so that ``explain`` can walk
the chain from any copy back to its sources.
"""

from __future__ import annotations

from array import array
from operator import attrgetter, itemgetter
from typing import Iterable, Sequence
from weakref import WeakMethod

from stablehlo_layout.engine import core as seam
from stablehlo_layout.model import layout as L
from stablehlo_layout.engine.survey import per_computation
from stablehlo_layout.model.constraints import BEGINNING_PRIORITY, Origin, TraceEvent
from stablehlo_layout.targets.demands import BUFFER, FREE_OPERANDS, OPERAND, RESULTS, Demand, DemandPlan
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import Graph, Value, shape_text
from stablehlo_layout.engine.core import RuleTable, build_engine, build_index
from stablehlo_layout.model.options import check_entry_mode
from stablehlo_layout.engine.records import BufferConstraints, OperandConstraints, Records
from stablehlo_layout.model.rules import RULES, OpRule, rule_for
from stablehlo_layout.targets.view import TargetView

from stablehlo_layout.targets.base import Target


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


class EngineState:
    """One run's state over the compiled core (``cpp/engine/propagators.*``).

    The core holds the constraint store, the worklist and the propagators;
    this class holds what the rooms around it share (``rounds.py``,
    ``computation.py``, ``interfaces.py``, ``result.py``) and the setters
    their demands and a target's go through (``set_*_layout``,
    ``demand_operands``; ``bc`` and ``oc`` read the store).
    """

    def __init__(self, graph: Graph, target: "Target", entry_mode: str = "default",
                 trace: bool = False, exact: bool = False, provenance: bool = True) -> None:
        check_entry_mode(entry_mode)
        self.g = graph
        self.target = target
        self.entry_mode = entry_mode
        self.trace: list[TraceEvent] | None = [] if trace else None
        # Exact: run every round and every computation through the worklist,
        # so that traces and explanations show XLA's steps and numbering; the
        # core then also keeps every provenance fact.
        self.exact = exact or trace
        self.comp = -1  # the computation being laid out (trace events name it)
        # Per-instruction facts the driver and targets read, computed once.
        refined = target.refined_ops
        if type(target).rule is Target.rule or refined is not None:  # the table's rules: one lookup per op name
            table = RULES.get
            by_code = [table(op) or rule_for(op) for op in graph.columns.op_names]
            rule_table = RuleTable(by_code, graph.columns.op)
            # Tuples: the target's view shares them instead of copying them.
            self.rules: Sequence[OpRule] = tuple(map(by_code.__getitem__, graph.columns.op))
            codes = [code for code, op in enumerate(graph.columns.op_names) if refined and op in refined]
            if codes:  # the target refines a few ops: ask it about those instructions alone
                rules = list(self.rules)
                for iid in (i for i, code in enumerate(graph.columns.op) if code in codes):
                    rules[iid] = target.rule(graph, graph.instrs[iid])
                self.rules = tuple(rules)
                rule_table = RuleTable.of_rules(self.rules)
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
        # Per computation: whether it has one layout per array (trivial), and
        # which instructions its steps look at (survey.py; computation.py keeps them).
        self.trivial, self.specials = per_computation(graph, rule_table)
        # The instructions the worklist can reach: a fast run lays trivial
        # computations out directly and never asks about their instructions.
        # A byte per instruction, as the core takes it (a list cost 8 bytes an instruction, kept all run).
        reached = [0 if t else 1 for t in self.trivial]
        self.active = array("B", [1]) * len(graph.instrs) if self.exact else \
            array("B", map(reached.__getitem__, graph.columns.comp))
        self.op_values = _OperandValues(graph)
        # A target with its own unconstrained layout lays defaults out through Python.
        self.own_defaults = type(target).unconstrained_layout is not Target.unconstrained_layout
        # The core calls back through weak references: it must not keep this engine alive.
        back, fwd, own = (WeakMethod(m) for m in (self._derive_operand, self._derive_output, self._rule_operand))
        # Without provenance (a caller that never asks why: the command's assign) the
        # core keeps no record of its own derivations; exact runs keep every one.
        self.core = build_engine(graph, self.index, rule_table, target, self.active, self.exact, trace,
                                 lambda *a: back()(*a), lambda *a: fwd()(*a),  # type: ignore[misc]
                                 lambda *a: own()(*a), provenance or self.exact)  # type: ignore[misc]
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
        no longer shifts of one another (see rounds._repeats)."""
        return self.core.weakened

    # -- ordering (the core's order room: cpp/engine/order.cpp) --------------------
    def post_order(self, c: int) -> list[int]:
        """Instructions of computation ``c`` in XLA's post-order: operands first, left to right."""
        return self.index.post_order(c)

    def _number_buffers(self) -> None:
        """XLA's buffer ids: the order in which unconstrained buffers get defaults."""
        exact, trivial = self.exact, self.trivial
        # Trivial computations are laid out without the default loop (fast runs).
        skip = [trivial[c] and not exact for c in range(len(self.g.comps))]
        self.order_key = seam.number_buffers(self.index, self.comp_order, skip)

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

    # -- setting constraints (XLA's Set*Layout, in the core) -----------------
    # ``origin`` may be an Origin or the tuple ``(rule, instr, parent[, note])``
    # to build one from: the core makes a record only when a constraint takes it.
    def set_buffer_layout(self, layout: L.Layout, buffer: int, mandatory: bool, dfs: bool,
                          priority: int, origin: Origin | tuple) -> None:
        r = self.records
        try:
            self.core.set_buffer(r.lid(layout), buffer, mandatory, dfs, priority, *r.why(origin))
        except seam.DemandError as e:
            raise self.demand_error(e) from None

    def set_operand_layout(self, layout: L.Layout, iid: int, n: int, mandatory: bool, dfs: bool,
                           priority: int, origin: Origin | tuple) -> None:
        r = self.records
        try:
            self.core.set_operand(r.lid(layout), iid, n, mandatory, dfs, priority, *r.why(origin))
        except seam.DemandError as e:
            raise self.demand_error(e) from None

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
        except seam.DemandError as e:
            raise self.demand_error(e) from None

    # -- the target's demands (targets/base.py, demands.py) ------------------
    def view_for_target(self) -> TargetView:
        view = self.target_view
        if view is None:
            view = self.target_view = TargetView(self.g, self.rules, self.leaves, self.op_values,
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
            self.apply_demands(demands.before)
            self._apply_plan(demands)
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
        """A target's plan for a computation, in one call to the core (``cpp/engine/demands.h``).

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
        except seam.DemandError as e:
            raise self.demand_error(e) from None

    def push_result(self, c: int, layouts: list[L.Layout | None], priority: int, origin: Origin) -> None:
        r = self.records
        self.core.push_result(c, [-1 if lay is None else r.lid(lay) for lay in layouts], priority,
                              *r.why(origin))

    def demand_error(self, e: seam.DemandError) -> PassError:
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
        except seam.DemandError as e:
            raise self.demand_error(e) from None
        self.take_events()

    def take_events(self) -> None:
        """The trace events of the worklist runs since the last call, all in this round and computation."""
        if self.trace is not None:
            origin = self.records.origin
            for popped, derived, seeds in self.core.take_events():
                self.trace.append(TraceEvent(self.round, self.comp, origin(popped),  # type: ignore[arg-type]
                                             [origin(d) for d in derived],  # type: ignore[misc]
                                             None if seeds is None else [origin(s) for s in seeds]))  # type: ignore[misc]

    def layout_of(self, vid: int) -> L.Layout | None:
        """The layout value ``vid``'s buffer holds now (None: none yet)."""
        lid = self.core.buffer_layout(self.g.values[vid].buffer)
        return None if lid < 0 else self.records.layout(lid)
