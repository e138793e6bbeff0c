"""Computation interfaces: what each computation recorded, and callers agreeing with it.

XLA keeps one ComputationLayout per computation (its parameters' and
result's layouts); a round records it after laying the computation out, and
the next computation that calls it (call, while, conditional, a region op's
captures) is constrained to it.  XLA 0.12's XLA:GPU lets a caller decide the
loop state and branch interface its callees left free
(``targets/xla_version.py``); what that decision carries from one
computation to the next within a round lives here too.

Every method takes the engine (``propagation.Engine``) whose store it reads
and writes; this room keeps only the interfaces and the agreements between
computations, never the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stablehlo_layout.engine import core as seam
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import NUMBER_OF_ROUNDS, ComputationLayout, Origin
from stablehlo_layout.model.graph import Instruction

if TYPE_CHECKING:
    from stablehlo_layout.engine.state import EngineState


class Interfaces:
    """Per computation its interface, and the agreements made between computations."""

    def __init__(self) -> None:
        self.comp_layouts: dict[int, ComputationLayout] = {}
        # Per branch whose results differ from those of the branch with the most
        # instructions: the results it must return instead (a copy at its root).
        self.conditional_mismatch: dict[int, list[L.Layout | None]] = {}
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
        # Set when branches a caller left free disagree: the rounds run once more.
        self.another_round = False

    def new_comp_layout(self, e: "EngineState", c: int) -> ComputationLayout:
        """A computation's interface before any round recorded one: nothing chosen."""
        comp = e.g.comps[c]
        root = e.g.instrs[comp.root]
        return ComputationLayout([None] * len(comp.params), [None] * len(root.operands))

    def constrain_call_site(self, e: "EngineState", ins: Instruction) -> None:
        """Make a caller agree with the interfaces its callees recorded (XLA 2.2)."""
        g = e.g
        hlo = e.rule(ins.id).hlo
        prio = e.current_priority
        if hlo == "call":
            callee = ins.callees[0]
            cl = self.comp_layouts.get(callee)
            if cl is None:
                return
            origin = Origin("call-interface", ins.id, None, f"@{g.comps[callee].name}")
            for n, lay in enumerate(cl.params):
                if lay is not None:
                    e.set_operand_layout(lay, ins.id, n, True, True, prio, origin)
            e.set_instruction_layout(cl.results, ins.id, True, prio, origin)
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
            free = self._free_loop_slots(e, ins, n_carried) if e.target.loop_state_from_caller else []
            results = [None if n in free else lay for n, lay in enumerate(bl.results)]
            for n, lay in enumerate(results):
                if lay is not None:
                    e.set_operand_layout(lay, ins.id, n, True, True, prio, origin)
            e.set_instruction_layout(results, ins.id, True, prio, origin)
            self._constrain_captures(e, ins, origin)
        elif hlo in ("case", "if"):
            branches = ins.callees
            layouts = [self.comp_layouts.get(b) for b in branches]
            if any(x is None for x in layouts):
                return
            sizes = [len(g.comps[b].instrs) for b in branches]
            best = sizes.index(max(sizes))
            free_results, free_captures = (self._free_branch_interface(e, ins) if e.target.branch_interface_from_caller
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
            e.set_instruction_layout(best_results, ins.id, True, prio, origin)
            self._constrain_captures(e, ins, origin, skip=free_captures)
        else:
            # Reducer-style regions work on scalars; their captures keep the
            # layout the region recorded.
            if ins.attrs.get("capture_params"):
                self._constrain_captures(e, ins, Origin("region-interface", ins.id))

    def _free_loop_slots(self, e: "EngineState", ins: Instruction, n_carried: int) -> list[int]:
        """XLA 0.12+'s XLA:GPU, first round: the carried slots nothing in the loop constrained.

        A slot is free when its body parameter, its body result and its
        condition parameter were all still unconstrained when the loop's
        computations took their defaults; the caller then lays the slot out
        (targets/xla_version.py, ``loop_state_from_caller``).
        """
        if e.round != 0:
            return []
        g = e.g
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

    def loop_state_from_initial_values(self, e: "EngineState", specials: list[int]) -> None:
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
        g, bc = e.g, e.bc
        self.tied_initial_values.clear()
        self.untied_at_visit.clear()
        for iid in self._loops_in_xla_order(e, specials):
            free = self.caller_decides.get(iid)
            if not free:
                continue
            operands, leaves = g.instrs[iid].operands, e.leaves[iid]
            for n in free:
                result = g.values[leaves[n]].buffer
                initial = g.values[operands[n]].buffer
                init = bc.get(initial)
                if init is None:
                    demand = bc.get(result)
                    if demand is None:
                        self.untied_at_visit.add((iid, n))
                        continue
                    e.set_buffer_layout(demand.layout, initial, False, True, e.current_priority,
                                        Origin("loop-state-from-result", iid, demand.origin
                                               if isinstance(demand.origin, Origin) else None,
                                               f"carried value {n} of the loop"))
                    self.tied_initial_values.add(initial)
                    e.propagate()
                    continue
                if result in bc:
                    continue
                e.set_buffer_layout(init.layout, result, False, True, e.current_priority,
                                    Origin("loop-state-from-initial-value", iid, init.origin
                                           if isinstance(init.origin, Origin) else None,
                                           f"carried value {n} of the loop"))
                e.propagate()

    def _loops_in_xla_order(self, e: "EngineState", specials: list[int]) -> list[int]:
        """The computation's loops as XLA 0.12 visits them: in its module's order of their computations
        where the dump gave it (``xla_loop_rank``, hlo_metadata.py), else in instruction order."""
        loops = [iid for iid in specials if e.rule(iid).hlo == "while"]
        return sorted(loops, key=lambda iid: e.g.instrs[iid].attrs.get("xla_loop_rank", -1))

    def push_loop_state_into_callees(self, e: "EngineState", specials: list[int]) -> None:
        """The layout the caller chose for each free slot becomes the loop's interface for the next round.

        The caller chooses only where it constrained the slot before its
        defaults: a demand on the loop's result first, else the initial
        value's layout.  A slot neither constrains stays free, and the body
        lays it out again next round, around the slots the caller did choose.
        """
        g = e.g
        unconstrained = self.unconstrained_at_defaults.get(e.comp, set())
        for iid in specials:
            free = self.caller_decides.pop(iid, None)
            if not free:
                continue
            ins = g.instrs[iid]
            cond, body = ins.callees
            bl, cdl = self.comp_layouts[body], self.comp_layouts[cond]
            operands, leaves = ins.operands, e.leaves[iid]
            for n in free:
                result = g.values[leaves[n]].buffer
                initial = g.values[operands[n]].buffer
                if result not in unconstrained:
                    lay = e.layout_of(result)
                elif initial not in unconstrained and not (
                        (iid, n) in self.untied_at_visit and initial in self.tied_initial_values):
                    lay = e.layout_of(initial)
                else:
                    lay = None
                    self.cond_follows_body.setdefault(cond, (body, []))[1].append(n)
                    self.body_follows_initial.setdefault(body, []).append((iid, n))
                bl.params[n] = bl.results[n] = cdl.params[n] = lay
            bl.priority = cdl.priority = e.current_priority + NUMBER_OF_ROUNDS
            bl.params_set = bl.result_set = cdl.params_set = cdl.result_set = True

    def loop_state_from_earlier_loops(self, e: "EngineState", c: int, cl: ComputationLayout) -> None:
        """A slot left to the body whose initial value another loop returns: the body takes that loop's layout.

        XLA 0.12 visits the loops again once a visit changed a layout: by
        then the loop that returns this slot's initial value has laid it out
        in its own body, and this loop ties the slot to it.  Here that loop's
        body has recorded its interface earlier in this round.
        """
        g = e.g
        for iid, n in self.body_follows_initial.pop(c, []):
            v = g.values[g.instrs[iid].operands[n]]
            producer = g.instrs[v.producer]
            if e.rule(producer.id).hlo != "while" or producer.id == iid or v.id not in e.leaves[producer.id]:
                continue
            other = producer.callees[1]
            if e.comp_order.index(other) > e.comp_order.index(c):
                continue
            lay = self.comp_layouts[other].results[e.leaves[producer.id].index(v.id)]
            if lay is not None:
                cl.params[n] = cl.results[n] = lay

    def condition_follows_body(self, e: "EngineState", c: int, cl: ComputationLayout) -> None:
        """A slot the caller left to the body: the condition reads it as the body laid it out this round."""
        follow = self.cond_follows_body.pop(c, None)
        if follow is None:
            return
        body, slots = follow
        if e.comp_order.index(body) > e.comp_order.index(c):
            return  # the body comes later this round; the loop's interface aligns them next round
        bl = self.comp_layouts[body]
        for n in slots:
            cl.params[n] = bl.params[n]

    def _free_branch_interface(self, e: "EngineState", ins: Instruction) -> tuple[list[int], list[int]]:
        """XLA 0.12+'s XLA:GPU, first round: the conditional's results and captures its branches left free.

        A result is free when every branch's root operand for it was still
        unconstrained when the branches took their defaults; a capture is free
        when its branch parameter was.  The caller then lays them out
        (targets/xla_version.py, ``branch_interface_from_caller``).
        """
        if e.round != 0:
            return [], []
        g = e.g
        free_sets = [self.unconstrained_at_defaults.get(b) for b in ins.callees]
        if any(s is None for s in free_sets):
            return [], []
        roots = [g.instrs[g.comps[b].root].operands for b in ins.callees]
        free_results = []
        for n, vid in enumerate(e.leaves[ins.id]):
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

    def push_branch_interface_into_callees(self, e: "EngineState", specials: list[int]) -> None:
        """The layouts the caller chose for a conditional's free results and captures become its branches' interface.

        As for loop state: the caller chooses only what it constrained before
        its defaults (a demand on the conditional's result, the captured
        value's own layout); what it left free too, each branch lays out
        again in the next round.
        """
        g = e.g
        unconstrained = self.unconstrained_at_defaults.get(e.comp, set())
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
                buf = g.values[ins.captures[k]].buffer
                lay = None if buf in unconstrained else e.layout_of(buf)
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
                buf = g.values[e.leaves[iid][n]].buffer
                lay = None if chosen or buf in unconstrained else e.layout_of(buf)
                for b in ins.callees:
                    self.comp_layouts[b].results[n] = lay
                if lay is None:
                    self.branch_results_left.add(iid)
                    for b in ins.callees:
                        if b != best:
                            self.branch_result_follows.setdefault(b, []).append((n, best))
            for b in ins.callees:
                cl = self.comp_layouts[b]
                cl.priority = e.current_priority + NUMBER_OF_ROUNDS
                cl.params_set = cl.result_set = True

    def branches_follow_earlier(self, e: "EngineState", c: int, cl: ComputationLayout) -> None:
        """What the caller left to the branches: this branch reads it as an earlier branch laid it out this round.

        A captured value: as the first branch that reads it laid it out; a
        result: as the branch with the most instructions laid it out, XLA's
        rule for agreeing branch results, where that branch comes first.
        """
        order = e.comp_order.index
        for number, other, other_number in self.branch_param_follows.pop(c, ()):
            if order(other) < order(c):
                cl.params[number] = self.comp_layouts[other].params[other_number]
        for n, best in self.branch_result_follows.pop(c, ()):
            if order(best) < order(c):
                cl.results[n] = self.comp_layouts[best].results[n]

    def _constrain_captures(self, e: "EngineState", ins: Instruction, origin: Origin,
                            skip: list[int] | None = None) -> None:
        """An outer value read inside a region must arrive in the region parameter's layout."""
        base = len(ins.operands)
        for k, (comp, number) in enumerate(ins.attrs.get("capture_params", ())):
            cl = self.comp_layouts.get(comp)
            if cl is None or cl.params[number] is None or (skip and k in skip):
                continue
            e.set_operand_layout(cl.params[number], ins.id, base + k, True, True,
                                 e.current_priority, origin)

    def record_computation_layout(self, e: "EngineState", c: int) -> None:
        """XLA's CalculateComputationLayout: remember the interface this round chose."""
        params, results = seam.interface_of(e.core, c)
        get = self._layout_table(e).__getitem__
        self.record_interface(e, c, list(map(get, params)), list(map(get, results)))

    def _layout_table(self, e: "EngineState") -> list[L.Layout | None]:
        """Every layout by its core id, and None at index -1 (the core's "no layout")."""
        n = seam.layout_count(e.core)
        if n > len(e.records.layouts):
            e.records.layout(n - 1)
        return [*e.records.layouts, None]

    def lay_out_one_layout_run(self, e: "EngineState", comps: list[int]) -> None:
        """Trivial computations, each buffer its only layout, and their interfaces, in one call to the core."""
        (ps, pi), (rs, ri) = seam.lay_out_one_layout_run(e.core, comps)
        get, known = self._layout_table(e).__getitem__, self.comp_layouts
        new_priority, mismatched = e.current_priority + NUMBER_OF_ROUNDS, self.conditional_mismatch
        for k, c in enumerate(comps):
            params = list(map(get, pi[ps[k]:ps[k + 1]]))
            results = list(map(get, ri[rs[k]:rs[k + 1]]))
            if c not in known:
                if c not in mismatched:
                    # What record_interface makes of a fresh layout (its priority is the lowest).
                    known[c] = ComputationLayout(params, results, new_priority, True, True)
                    continue
                known[c] = ComputationLayout([None] * len(params), [None] * len(results))
            self.record_interface(e, c, params, results)

    def record_interface(self, e: "EngineState", c: int, params: list[L.Layout | None],
                         results: list[L.Layout | None]) -> None:
        """The interface computation ``c`` laid out this round becomes its layout, where strong enough."""
        comp = e.g.comps[c]
        cl = self.comp_layouts[c]
        new_priority = e.current_priority + NUMBER_OF_ROUNDS
        if c in self.conditional_mismatch:
            cl.params = params  # a mismatched branch re-records its parameters every round
        if cl.priority < new_priority:
            if comp.is_entry:
                # What the caller gave stays; only open leaves take the inferred layout.
                # A result an earlier round recorded and this one enforced (with a root
                # copy where needed) is what the entry returns, as for any computation.
                if cl.result_set and all(x is not None for x, v in zip(cl.results, results) if v is not None):
                    results = [x if y is not None else None for x, y in zip(cl.results, results)]
                cl.params = [x if x is not None else y for x, y in zip(e.given_params, params)]
                cl.results = [x if x is not None else y for x, y in zip(e.given_results, results)]
            else:
                # A result this round enforced (with a root copy where needed) is
                # what the computation returns, whatever its root buffers hold.
                if cl.result_set and all(x is not None for x, v in zip(cl.results, results) if v is not None):
                    results = [x if y is not None else None for x, y in zip(cl.results, results)]
                cl.params, cl.results = params, results
            cl.priority = new_priority
            cl.params_set = cl.result_set = True
