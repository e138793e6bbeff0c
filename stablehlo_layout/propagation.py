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

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

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
)
from .errors import PassError
from .graph import Graph, Instruction, Value
from .rules import OpRule, dfs_for

if TYPE_CHECKING:
    from .targets.base import Target


@dataclass(slots=True)
class TraceEvent:
    """One worklist pop: the popped constraint as it was, and what its propagation set."""

    round: int
    comp: int
    constraint: Origin
    derived: list[Origin]


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
    # The entry layouts the input gave; None where it left the layout open.
    given_params: list[L.Layout | None] = field(default_factory=list)
    given_results: list[L.Layout | None] = field(default_factory=list)


class Engine:
    def __init__(self, graph: Graph, target: "Target", entry_mode: str = "default",
                 trace: bool = False) -> None:
        if entry_mode not in ("default", "free"):
            raise PassError(f"unknown entry layout mode {entry_mode!r} (expected default or free)")
        self.g = graph
        self.target = target
        self.entry_mode = entry_mode
        self.trace: list[TraceEvent] | None = [] if trace else None
        self.current_priority = BEGINNING_PRIORITY
        self.round = 0
        self.bc: dict[int, BufferConstraint] = {}
        self.oc: dict[tuple[int, int], OperandConstraint] = {}
        self.comp_layouts: dict[int, ComputationLayout] = {}
        self.conditional_mismatch: dict[int, list[L.Layout | None]] = {}
        # Cross-module all-reduces on one channel agree on a layout; the first
        # one laid out decides, and the others follow from the next round on.
        self.channel_layouts: dict[int, L.Layout] = {}
        self.added: list[Constraint] = []
        self.unconstrained: list[tuple[int, int]] = []
        self.comp = -1
        self.order_key = [0] * len(graph.values)
        # Per-instruction facts the hot loops read, computed once.
        self.rules: list[OpRule] = [target.rule(graph, ins) for ins in graph.instrs]
        self.all_operands = [ins.operands + ins.captures if ins.captures else ins.operands
                             for ins in graph.instrs]
        self.forwarding = [r.forwards for r in self.rules]
        self.dfs_of = [dfs_for(graph, ins, r) if ins.op not in ("parameter", "root") else False
                       for ins, r in zip(graph.instrs, self.rules)]
        self.memo: dict[str, object] = {}  # per-run caches for targets
        # XLA's shape indices: an instruction's results with tuples flattened.
        self.leaves = [[leaf for r in ins.results for leaf in graph.leaves(r)] for ins in graph.instrs]
        self.aliases: dict[int, list[Value]] = {}
        for v in graph.values:
            if v.is_array:
                self.aliases.setdefault(v.buffer, []).append(v)
        self.tshape = [self._tuple_shaped(ins) for ins in graph.instrs]
        self.comp_order = self._computation_order()
        self._number_buffers()
        self.given_params: list[L.Layout | None] = []
        self.given_results: list[L.Layout | None] = []

    # -- ordering ------------------------------------------------------------
    def _computation_order(self) -> list[int]:
        """Callees before callers, the entry last (XLA's post-order)."""
        g = self.g
        seen: set[int] = set()
        order: list[int] = []

        def visit(c: int) -> None:
            stack: list[tuple[int, list[int]]] = [(c, self._callees(c))]
            seen.add(c)
            while stack:
                comp, todo = stack[-1]
                if todo:
                    nxt = todo.pop(0)
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append((nxt, self._callees(nxt)))
                else:
                    stack.pop()
                    order.append(comp)

        for c in g.comps:
            if c.kind == "func" and c.id != g.entry and c.root >= 0 and c.id not in seen:
                visit(c.id)
        assert g.entry is not None
        if g.entry not in seen:
            visit(g.entry)
        return order

    def _callees(self, c: int) -> list[int]:
        out: list[int] = []
        for iid in self.g.comps[c].instrs:
            ins = self.g.instrs[iid]
            callees = ins.callees
            if self.rule(ins.id).hlo == "while" and len(callees) == 2:
                callees = [callees[1], callees[0]]  # HLO lists the body first
            out.extend(callees)
        return out

    def post_order(self, c: int) -> list[int]:
        """Instructions of computation ``c`` in XLA's post-order: operands first, left to right."""
        g = self.g
        comp = g.comps[c]
        done: set[int] = set()
        order: list[int] = []
        for start in comp.instrs:
            ins = g.instrs[start]
            if ins.op != "root" and any(g.values[v].uses for v in ins.results):
                continue
            if start in done:
                continue
            stack = [(start, 0)]
            done.add(start)
            while stack:
                iid, k = stack[-1]
                operands = g.instrs[iid].operands
                if k < len(operands):
                    stack[-1] = (iid, k + 1)
                    p = g.values[operands[k]].producer
                    if p not in done and g.instrs[p].comp == c:
                        done.add(p)
                        stack.append((p, 0))
                else:
                    stack.pop()
                    order.append(iid)
        for iid in comp.instrs:  # anything only reachable through a dead cycle
            if iid not in done:
                order.append(iid)
        return order

    def _number_buffers(self) -> None:
        key = 0
        for c in self.comp_order:
            for iid in self.post_order(c):
                for v in self.g.instrs[iid].results:
                    for leaf in [v] + self.g.leaves(v):
                        self.order_key[leaf] = key
                        key += 1

    # -- small queries -------------------------------------------------------
    def rule(self, iid: int) -> OpRule:
        """The op's rule as the target sees it (a target may refine the table)."""
        return self.rules[iid]

    def _tuple_shaped(self, ins: Instruction) -> bool:
        if ins.op == "parameter":
            kind = self.g.comps[ins.comp].kind
            return kind in ("body", "cond", "branch")
        if ins.op == "root":
            return False
        if len(ins.results) != 1 or self.g.values[ins.results[0]].elements is not None:
            return True
        return self.rules[ins.id].hlo == "while"

    def forwards_operand(self, iid: int, n: int) -> bool:
        """The user aliases this operand's buffer into its own result (points-to)."""
        return self.forwarding[iid] and n < len(self.g.instrs[iid].results)

    # -- setting constraints (XLA's Set*Layout) ------------------------------
    def set_buffer_layout(self, layout: L.Layout, buffer: int, mandatory: bool, dfs: bool,
                          priority: int, origin: Origin) -> None:
        v = self.g.values[buffer]
        if not v.is_array:
            raise PassError(f"internal: layout for non-array value {buffer}")
        if len(layout) != v.rank:
            raise PassError(
                f"layout {L.format_layout(layout)} has the wrong rank for "
                f"{L.ArrayShape(v.element, v.dims)}",
                self.g.instrs[v.producer].loc,
            )
        c = self.bc.get(buffer)
        if c is None:
            c = new_buffer(buffer, layout, mandatory, dfs, priority, origin, self.round)
            self.bc[buffer] = c
        elif not c.update(layout, mandatory, dfs, priority, origin, self.round,
                          buffer_is_array=not self.tshape[v.producer]):
            return
        self._push(c)
        producer = self.g.instrs[v.producer]
        aliases = producer.attrs.get("aliases", ())
        position = self.leaves[producer.id].index(buffer) if aliases else -1
        for out_index, operand_no in aliases:
            if out_index == position:
                self.set_operand_layout(layout, producer.id, operand_no, mandatory, dfs, priority,
                                        Origin("custom-call-alias", producer.id, c.origin))

    def set_operand_layout(self, layout: L.Layout, iid: int, n: int, mandatory: bool, dfs: bool,
                           priority: int, origin: Origin) -> None:
        g = self.g
        operands = self.all_operands[iid]
        v = g.values[operands[n]]
        if not v.is_array or v.rank == 0:
            return
        if len(layout) != v.rank:
            raise PassError(f"layout {L.format_layout(layout)} has the wrong rank for operand {n}",
                            g.instrs[iid].loc)
        if self.forwarding[iid] and n < len(g.instrs[iid].results):
            return
        if not mandatory:
            # XLA lets operand 0 decide a dynamic-update-slice, and a reshape of
            # a dynamic-slice, by weakening the other demands.
            hlo = self.rules[iid].hlo
            if hlo == "dynamic_update_slice" and n > 0 and priority > DEFAULT_PRIORITY:
                dfs = False
                priority -= 1
            elif hlo == "reshape" and self.rules[g.values[operands[0]].producer].hlo == "dynamic_slice":
                dfs = False
                priority -= 1
        cur = self.oc.get((iid, n))
        if cur is not None:
            if cur.layout == layout:
                return
            if not mandatory:
                return  # first writer wins: XLA never negotiates operand layouts
            if cur.priority > priority:
                return
        if cur is None:
            c = new_operand(iid, n, layout, mandatory, dfs, priority, origin, self.round)
            self.oc[(iid, n)] = c
        else:
            # XLA keeps one slot per (instruction, operand) and queues pointers
            # to it: an entry still waiting in the worklist propagates the
            # replacement, not the layout it was queued with.
            c = cur
            c.layout, c.mandatory, c.dfs, c.priority, c.round = layout, mandatory, dfs, priority, self.round
            c.origin = origin.attached("operand", (iid, n), layout, priority, mandatory, dfs, self.round)
        self._push(c)

    def _operand(self, ins: Instruction, n: int) -> Value:
        return self.g.values[self.all_operands[ins.id][n]]

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

    # -- the worklist --------------------------------------------------------
    def propagate(self) -> None:
        work: deque[Constraint] = deque()
        self._drain(work, None)
        while work:
            c = work.popleft()
            if isinstance(c, BufferConstraint):
                self._propagate_buffer(c)
            elif isinstance(c, OperandConstraint):
                self._propagate_operand(c)
            else:
                assert isinstance(c, ResultConstraint)
                self._propagate_result(c)
            self._drain(work, c)

    def _drain(self, work: deque[Constraint], popped: Constraint | None) -> None:
        if self.trace is not None and popped is not None:
            # Constraints change in place later; the trace keeps them as they were.
            self.trace.append(TraceEvent(self.round, self.comp, popped.origin,
                                         [c.origin for c in self.added]))
        for c in self.added:
            if c.dfs:
                work.appendleft(c)
            else:
                work.append(c)
        self.added.clear()

    # -- propagators ---------------------------------------------------------
    def _propagate_buffer(self, c: BufferConstraint) -> None:
        v = self.g.values[c.buffer]
        if not v.is_array:
            return
        self._buffer_to_operands(c, v)
        self._buffer_to_uses(c, v)

    def _buffer_to_operands(self, c: BufferConstraint, v: Value) -> None:
        g = self.g
        ins = g.instrs[v.producer]
        if ins.op in ("parameter", "root"):
            return
        values = g.values
        if all(not values[r].is_array or values[r].rank <= 1 for r in self.leaves[ins.id]):
            return
        rule = self.rules[ins.id]
        top_level = not self.tshape[ins.id]
        for n, ovid in enumerate(ins.operands):
            ov = values[ovid]
            if not ov.is_array or ov.rank <= 1:
                continue
            if not rule.can_change:
                if rule.tuple_operand:
                    continue
                if ov.rank == v.rank:
                    self.set_operand_layout(c.layout, ins.id, n, True, True, self.current_priority,
                                            Origin("same-layout-operand", ins.id, c.origin))
                elif rule.hlo == "bitcast_convert":
                    lay = _bitcast_convert_operand_layout(c.layout, ov.rank)
                    self.set_operand_layout(lay, ins.id, n, True, True, self.current_priority,
                                            Origin("bitcast-convert-rank-change", ins.id, c.origin))
            elif rule.broadcast:
                lay = rule.operand_from_output(g, ins, n, c.layout)  # type: ignore[misc]
                if lay is not None:
                    self.set_operand_layout(lay, ins.id, n, True, self.dfs_of[ins.id], self.current_priority,
                                            Origin("broadcast-operand", ins.id, c.origin))
            elif top_level:
                derive = self.target.operand_from_output(g, ins, n, c.layout, rule)
                if derive is not None:
                    lay, name = derive
                    self.set_operand_layout(lay, ins.id, n, rule.always_backward, self.dfs_of[ins.id],
                                            self.current_priority, Origin(name, ins.id, c.origin))

    def _buffer_to_uses(self, c: BufferConstraint, v: Value) -> None:
        g = self.g
        instrs, forwarding = g.instrs, self.forwarding
        for alias in self.aliases[v.buffer]:
            for user, n in alias.uses:
                uins = instrs[user]
                if uins.op == "root" or (forwarding[user] and n < len(uins.results)):
                    continue
                self.set_operand_layout(c.layout, user, n, False, True, c.priority,
                                        Origin("producer-layout", user, c.origin))
        # While back edge: the body's result nudges the body parameter it feeds.
        comp = g.comps[g.instrs[v.producer].comp]
        if comp.kind == "body" and comp.caller is not None:
            root = g.instrs[comp.root]
            for alias in self.aliases[v.buffer]:
                for user, p in alias.uses:
                    if user == root.id and p < len(comp.params):
                        param_value = g.instrs[comp.params[p]].results[0]
                        self.set_buffer_layout(c.layout, param_value, False, True, self.current_priority,
                                               Origin("while-back-edge", comp.caller, c.origin))

    def _propagate_operand(self, c: OperandConstraint) -> None:
        g = self.g
        ins = g.instrs[c.instr]
        ov = g.values[self.all_operands[c.instr][c.operand]]
        if not ov.is_array or ov.rank <= 1:
            return
        self._use_to_defs(ov, c.layout, c.priority, c)
        rule = self.rules[c.instr]
        if ins.op == "root" or c.operand >= len(ins.operands):
            return  # root and implicit captures: nothing to derive inside the user
        # A custom call's output aliased to this operand follows it.
        leaves = self.leaves[ins.id]
        for out_index, operand_no in ins.attrs.get("aliases", ()):
            if (operand_no == c.operand and out_index < len(leaves)
                    and g.values[leaves[out_index]].is_array):
                self.set_buffer_layout(c.layout, leaves[out_index], rule.always_forward,
                                       self.dfs_of[ins.id], c.priority, Origin("custom-call-alias", ins.id, c.origin))
        if ins.attrs.get("layout_constrained"):
            return
        if rule.tuple_operand:
            return
        if rule.hlo == "all_reduce":
            r = leaves[c.operand] if len(leaves) > 1 else leaves[0]
            self.set_buffer_layout(c.layout, r, True, True, self.current_priority,
                                   Origin("all-reduce-operand", ins.id, c.origin))
        if rule.can_change and self.tshape[ins.id] and rule.hlo != "reduce":
            return
        if self.forwarding[ins.id] and c.operand < len(ins.results):
            return
        if rule.to_siblings:
            if rule.hlo == "concatenate":
                dim = ins.attrs["dim"]
                mine = ov.dims[dim]
                for s in ins.operands:
                    other = g.values[s].dims[dim]
                    if mine is None or (other is not None and other > mine):
                        return
            for m, svid in enumerate(ins.operands):
                sv = g.values[svid]
                if m == c.operand or not sv.is_array or sv.rank != ov.rank or sv.rank <= 1:
                    continue
                self.set_operand_layout(c.layout, ins.id, m, True, True, c.priority,
                                        Origin("same-layout-sibling", ins.id, c.origin))
            for r in leaves:
                rv = g.values[r]
                if rv.is_array and rv.rank == ov.rank and rv.buffer == r:
                    self.set_buffer_layout(c.layout, r, True, True, c.priority,
                                           Origin("same-layout-result", ins.id, c.origin))
            return
        for r_index, r in enumerate(ins.results):
            rv = g.values[r]
            if not rv.is_array or rv.rank <= 1 or rv.buffer != r:
                continue
            derive = self.target.output_from_operand(g, ins, c.operand, c.layout, r_index, rule)
            if derive is not None:
                lay, name = derive
                self.set_buffer_layout(lay, r, rule.always_forward, self.dfs_of[ins.id], c.priority,
                                       Origin(name, ins.id, c.origin))

    def _use_to_defs(self, v: Value, layout: L.Layout, priority: int, parent: Constraint) -> None:
        """A demand on a use asks the value's producer for the same layout."""
        buf = self.g.values[v.buffer]
        producer = buf.producer
        if self.rules[producer].hlo == "reduce" and len(self.leaves[producer]) > 1:
            return  # XLA never lets a variadic reduce's outputs take use demands
        self.set_buffer_layout(layout, buf.id, False, True, priority,
                               Origin("consumer-demand", producer, parent.origin))

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
        heap = [(self.order_key[v], v) for iid in comp.instrs for v in self.leaves[iid]
                if g.values[v].is_array and g.values[v].buffer == v]
        heapq.heapify(heap)
        self.unconstrained = heap

        # 1. Values whose layouts are fixed: parameters, infeed, what send reads.
        is_entry = comp.is_entry
        params_fixed = (is_entry and any(x is not None for x in cl.params + cl.results)) or (
            not is_entry and c not in self.conditional_mismatch and cl.params_set)
        param_layouts = dict(zip(comp.params, cl.params))
        for iid in comp.instrs:
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
        for iid in comp.instrs:
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
        # 4. Backend rules, then layout-constrained custom calls.
        self.target.add_backend_constraints(self, c)
        for iid in comp.instrs:
            ins = g.instrs[iid]
            if "operand_layouts" in ins.attrs:
                self._constrain_custom_call(ins)
        self.propagate()
        # 5. Defaults, one buffer at a time, each propagated before the next.
        while self.unconstrained:
            _, b = heapq.heappop(self.unconstrained)
            if b in self.bc:
                continue
            v = g.values[b]
            lay = self.target.unconstrained_layout(g, v)
            self.set_buffer_layout(lay, b, False, True, self.current_priority,
                                   Origin("default-layout", v.producer))
            self.propagate()
        self._record_computation_layout(c)
        if not g.spmd:
            for iid in comp.instrs:
                channel = g.instrs[iid].attrs.get("channel")
                if channel is not None and channel not in self.channel_layouts:
                    lay = self._layout_of(self.leaves[iid][0])
                    if lay is not None:
                        self.channel_layouts[channel] = lay

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
            for n, lay in enumerate(bl.results):
                if lay is not None:
                    self.set_operand_layout(lay, ins.id, n, True, True, prio, origin)
            self.set_instruction_layout(bl.results, ins.id, True, prio, origin)
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
        i = 0
        changed = False
        while changed or i < NUMBER_OF_ROUNDS:
            self.round = i
            self.bc.clear()
            self.oc.clear()
            for c in self.comp_order:
                self.run_on_computation(c)
            self.current_priority += 1
            changed = self._reconcile_aliases()
            i += 1
            if i > 16:
                raise PassError("layout assignment did not settle after 16 rounds")
        return self._assign(i)

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
    def _assign(self, rounds: int) -> Assignment:
        g = self.g
        layouts: list[L.Layout | None] = [None] * len(g.values)
        for v in g.values:
            if v.is_array:
                c = self.bc.get(v.buffer)
                if c is None:
                    raise PassError(f"internal: no layout was assigned to value {v.id}",
                                    g.instrs[v.producer].loc)
                layouts[v.id] = c.layout
        copies: list[CopyEdge] = []
        for (iid, n), c in self.oc.items():
            ins = g.instrs[iid]
            if n >= len(ins.operands):
                continue  # implicit captures are settled below
            ov = self._operand(ins, n)
            have = layouts[ov.id]
            if ov.is_array and have is not None and have != c.layout and ov.rank > 0:
                copies.append(CopyEdge(ov.id, have, c.layout, iid, n, c))
        # Implicit captures must match the region parameter they stand for.
        shared = self._shared_branch_operands()
        # Inside a branch that copies its parameter, every use reads the copy:
        # the layout uses see, where it differs from the parameter's own.
        effective: dict[int, L.Layout | None] = {}
        for ins in g.instrs:  # outer region ops come before the ones nested in them
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
            demand = new_result(comp.id, tuple(cl.results), cl.priority,
                                Origin("entry-result" if comp.is_entry else "computation-result", comp.root),
                                self.round)
            for i in arrays:
                vid = root.operands[i]
                want, have = cl.results[i], effective.get(vid, layouts[vid])
                if want is not None and have is not None and want != have and g.values[vid].rank > 0:
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
        return Assignment(g, layouts, copies, dict(self.bc), dict(self.oc), self.comp_layouts,
                          entry_params, entry_results, rounds, self.target, self.entry_mode, self.trace,
                          given_params=list(self.given_params), given_results=list(self.given_results))


def copy_groups(a: Assignment) -> list[CopyGroup]:
    """The copies to insert, outer computations first, in a stable order."""
    g = a.graph
    groups: dict[tuple[int, L.Layout, str, int], list[CopyEdge]] = {}
    for e in a.copies:
        key = (e.value, e.dst, g.instrs[e.consumer].scope, -1 if e.inside is None else e.inside)
        groups.setdefault(key, []).append(e)

    def depth(vid: int) -> int:
        d, c = 0, g.comps[g.instrs[g.values[vid].producer].comp]
        while c.caller is not None:
            d += 1
            c = g.comps[g.instrs[c.caller].comp]
        return d

    ordered = sorted(groups.items(), key=lambda kv: (depth(kv[0][0]), kv[0][0], kv[0][2], kv[0][3], kv[0][1]))
    return [CopyGroup(vid, dst, scope, edges) for (vid, dst, scope, _), edges in ordered]


def _branch_signature(g: Graph, comp: int) -> tuple[int, ...]:
    """The outer values a branch reads, in parameter order: its HLO tuple operand."""
    return tuple(g.instrs[p].attrs.get("capture", -1) for p in g.comps[comp].params)


def _bitcast_convert_operand_layout(output: L.Layout, operand_rank: int) -> L.Layout:
    """A rank-changing bitcast-convert splits or merges the last dimension, most minor."""
    if operand_rank < len(output):
        return L.intern(d for d in output if d != len(output) - 1)
    return L.intern([operand_rank - 1] + list(output))


def assign_layouts(graph: Graph, target: "Target", entry_mode: str = "default",
                   trace: bool = False) -> Assignment:
    return Engine(graph, target, entry_mode, trace).run()
