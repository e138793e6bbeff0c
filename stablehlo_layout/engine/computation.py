"""One computation (XLA's RunOnComputation): its steps, each round.

1. values whose layouts are fixed (parameters, infeed, outfeed, send,
   channels); 2. callers of computations already laid out, ops no rule
   knows; 3. the result, once known; 4. the target's demands and
   layout-constrained custom calls, then the worklist; 5. the default
   layout for every buffer nothing constrained, one at a time, each
   propagated before the next; then the interface is recorded
   (``interfaces.py``).

Which instructions each step looks at is worked out once, in bulk, from
the importer's columns (``survey.py``); a computation of scalars and
vectors only (a reducer's body) is laid out without the worklist in fast
runs.  Every method takes the engine's state (``state.EngineState``) whose
store it writes; the steps read and record interfaces in the
``Interfaces`` they were made with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from stablehlo_layout.engine import core as seam
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import BEGINNING_PRIORITY, NUMBER_OF_ROUNDS, ComputationLayout, Origin
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import Instruction

if TYPE_CHECKING:
    from stablehlo_layout.engine.interfaces import Interfaces
    from stablehlo_layout.engine.state import EngineState


class ComputationSteps:
    """What the steps of each computation keep from one round to the next."""

    def __init__(self, specials: list[list[int]], interfaces: Interfaces) -> None:
        # The interfaces the steps read and record (``interfaces.py``).
        self.interfaces = interfaces
        # Per computation, the instructions steps 1, 2, 4 and the channel
        # bookkeeping look at (``per_computation``).
        self.specials = specials
        # Per computation, the same every round: its buffers in the default
        # loop's order and its specials (``_comp_plan``); its specials by step
        # (``_step_lists``); its parameters' note ids.
        self.comp_plans: dict[int, tuple[Sequence[int], list[int]]] = {}
        self.steps_of: dict[int, tuple[list[int], list[int], list[int], list[int]]] = {}
        self.param_notes: dict[int, list[int]] = {}
        # Cross-module all-reduces on one channel agree on a layout; the first
        # one laid out decides, and the others follow from the next round on.
        self.channel_layouts: dict[int, L.Layout] = {}
        # Whether this round enforced the entry's result (``rounds.py`` reads it).
        self.entry_result_pushed = False

    def run(self, e: "EngineState", c: int) -> None:
        """Lay computation ``c`` out for this round (the module docstring's steps 1-5), then record its interface."""
        g, iface = e.g, self.interfaces
        comp = g.comps[c]
        e.comp = c
        cl = iface.comp_layouts.get(c)
        if cl is None:
            cl = iface.comp_layouts[c] = iface.new_comp_layout(e, c)
        if e.trivial[c] and not e.exact:
            self._lay_out_trivial(e, c)
            return
        defaults, specials = self._comp_plan(e, c)
        pins, calls, custom_calls, channels = self._step_lists(e, c)

        # 1. Values whose layouts are fixed: parameters, infeed, what send reads.
        is_entry = comp.is_entry
        params_fixed = (is_entry and any(x is not None for x in cl.params + cl.results)) or (
            not is_entry and c not in iface.conditional_mismatch and cl.params_set)
        if iface.body_follows_initial:
            iface.loop_state_from_earlier_loops(e, c, cl)
        if iface.cond_follows_body:
            iface.condition_follows_body(e, c, cl)
        if iface.branch_param_follows or iface.branch_result_follows:
            iface.branches_follow_earlier(e, c, cl)
        if params_fixed:
            self._pin_parameters(e, c, cl)
        for iid in pins:
            ins = g.instrs[iid]
            if "infeed_layouts" in ins.attrs:
                e.set_instruction_layout(ins.attrs["infeed_layouts"], iid, True, e.current_priority,
                                         Origin("infeed-layout", iid, None, "the layout the infeed carries"))
            elif e.rules[iid].hlo == "outfeed":
                # XLA pins what outfeed reads to its outfeed_shape; StableHLO
                # carries no such layout, so it is the default one.
                self._default_operands(e, ins, Origin("outfeed-layout", iid, None,
                                                      "outfeed transfers its operands in their given layout"))
            elif e.rules[iid].hlo == "send":
                # XLA copies what send reads before it starts (send aliases its
                # input); nothing constrains that copy, so it is the default.
                self._default_operands(e, ins, Origin("send-operand", iid, None, "send transfers a default-layout copy"))
            elif ("channel" in ins.attrs and not g.spmd and ins.attrs["channel"] in self.channel_layouts
                  and all(len(self.channel_layouts[ins.attrs["channel"]]) == g.values[r].rank
                          for r in e.leaves[iid])):
                lay = self.channel_layouts[ins.attrs["channel"]]
                e.set_instruction_layout([lay] * len(e.leaves[iid]), iid, True, e.current_priority,
                                         Origin("channel-layout", iid, None,
                                                f"channel {ins.attrs['channel']} was laid out {L.format_layout(lay)}"))
            elif e.rule(ins.id).hlo == "bitcast" and ins.op.startswith("mhlo."):
                raise PassError("a bitcast already exists before layout assignment; XLA rejects "
                                "this too: run the pass on the module before layouts were decided", ins.loc)
        # 2. Callers of computations already laid out; ops nobody knows.
        for iid in calls:
            ins = g.instrs[iid]
            if ins.callees:
                iface.constrain_call_site(e, ins)
            if not e.rule(ins.id).known:
                self._pin_unknown(e, ins)
        # 3. The result, once it is known (entry with a given result, or any later round).
        if c in iface.conditional_mismatch:
            cl.results = list(iface.conditional_mismatch[c])
            cl.priority = e.current_priority + NUMBER_OF_ROUNDS
            cl.result_set = True
            e.push_result(c, cl.results, cl.priority, Origin("branch-result-agreement", comp.caller))
        elif (is_entry and any(x is not None for x in cl.params + cl.results)
              and any(x is not None for x in cl.results)) or (
                e.current_priority > BEGINNING_PRIORITY and (is_entry or cl.result_set)):
            why = "entry-result" if is_entry else "computation-result"
            e.push_result(c, cl.results, cl.priority, Origin(why, comp.root))
            if is_entry:
                self.entry_result_pushed = True
        # 4. Backend rules, then layout-constrained custom calls.
        e.apply_demands(e.target.backend_demands(e.view_for_target(), c))
        for iid in custom_calls:
            self._constrain_custom_call(e, g.instrs[iid])
        e.propagate()
        if iface.caller_decides:
            iface.loop_state_from_initial_values(e, specials)
        # 5. Defaults, one buffer at a time, each propagated before the next.
        has = e.core.has_buffer
        if (e.target.loop_state_from_caller and (comp.kind in ("body", "cond") or iface.caller_decides)) or (
                e.target.branch_interface_from_caller and (comp.kind == "branch" or iface.branch_caller_decides)):
            iface.unconstrained_at_defaults[c] = {b for b in defaults if not has(b)}
        if e.own_defaults:
            for b in defaults:
                if has(b):
                    continue
                v = g.values[b]
                lay = e.target.unconstrained_layout(g, v)
                e.set_buffer_layout(lay, b, False, True, e.current_priority,
                                    ("default-layout", v.producer, None))
                e.propagate()
        else:
            e.core.lay_out_defaults(defaults)  # the row-major default, each propagated in turn
            e.take_events()
        iface.record_computation_layout(e, c)
        if iface.caller_decides:
            iface.push_loop_state_into_callees(e, specials)
        if iface.branch_caller_decides:
            iface.push_branch_interface_into_callees(e, specials)
        if not g.spmd:
            for iid in channels:
                channel = g.instrs[iid].attrs["channel"]
                if channel not in self.channel_layouts:
                    held = e.layout_of(e.leaves[iid][0])
                    if held is not None:
                        self.channel_layouts[channel] = held

    def _comp_plan(self, e: "EngineState", c: int) -> tuple[Sequence[int], list[int]]:
        """Per computation, the same every round: its buffers in the order the
        default loop visits them (XLA's buffer ids), and the instructions steps
        1, 2, 4 and the channel bookkeeping look at (all others are plain ops)."""
        plan = self.comp_plans.get(c)
        if plan is None:
            # Every computation the worklist runs on, in one call to the core.
            comps = [k for k in e.comp_order if k not in self.comp_plans and not (e.trivial[k] and not e.exact)]
            if c not in comps:
                comps.append(c)
            start, items = seam.default_buffers(e.core, e.order_key, comps)
            for n, k in enumerate(comps):
                self.comp_plans[k] = (items[start[n]:start[n + 1]], self.specials[k])
            plan = self.comp_plans[c]
        return plan

    def _step_lists(self, e: "EngineState", c: int) -> tuple[list[int], list[int], list[int], list[int]]:
        """The specials of ``c`` each step acts on, in block order: step 1's after the
        parameters (infeed, outfeed, send, channels, bitcasts), step 2's (callers, ops without a
        known rule), step 4's (layout-constrained custom calls), and the channels."""
        lists = self.steps_of.get(c)
        if lists is None:
            g, rules = e.g, e.rules
            pins, calls, custom_calls, channels = [], [], [], []
            # Parameters and roots are no specials (per_computation).
            for iid in self._comp_plan(e, c)[1]:
                ins, rule = g.instrs[iid], rules[iid]
                attrs = ins.attrs
                if "infeed_layouts" in attrs or "channel" in attrs or rule.hlo in ("outfeed", "send", "bitcast"):
                    pins.append(iid)
                # A region op that captures nothing (a reducer's) has no interface to agree with.
                if not rule.known or ins.callees and (
                        rule.hlo in ("call", "while", "case", "if") or attrs.get("capture_params")):
                    calls.append(iid)
                if "operand_layouts" in attrs:
                    custom_calls.append(iid)
                if attrs.get("channel") is not None:
                    channels.append(iid)
            lists = self.steps_of[c] = (pins, calls, custom_calls, channels)
        return lists

    def _lay_out_trivial(self, e: "EngineState", c: int) -> None:
        """A computation of scalars and vectors: each buffer takes its only layout."""
        e.core.lay_out_trivial(c)
        self.interfaces.record_computation_layout(e, c)

    def _pin_parameters(self, e: "EngineState", c: int, cl: ComputationLayout) -> None:
        """Step 1's parameters, in one call to the core: each with a layout takes it,
        mandatory, from an origin of its own (what ``Origin(why, parameter, None,
        note)`` would record).  Parameters come first in block order."""
        comp = e.g.comps[c]
        notes = self.param_notes.get(c)
        if notes is None:
            name = e.records.name
            notes = self.param_notes[c] = [name(self._param_note(e, c, p)) for p in comp.params]
        lid = e.records.lid
        chosen = [k for k, lay in enumerate(cl.params[:len(comp.params)]) if lay is not None]
        try:
            seam.pin_parameters(e.core, [comp.params[k] for k in chosen], [lid(cl.params[k]) for k in chosen],  # type: ignore[arg-type]  # chosen: not None
                                 [notes[k] for k in chosen],
                                 e.records.name("entry-parameter" if comp.is_entry else "computation-parameter"),
                                 e.current_priority)
        except seam.DemandError as err:
            raise e.demand_error(err) from None

    def _param_note(self, e: "EngineState", c: int, p: int) -> str:
        comp = e.g.comps[c]
        number = e.g.instrs[p].attrs.get("number", 0)
        if comp.is_entry:
            return f"entry parameter {number}"
        return f"parameter {number} of {comp.name}"

    def _default_operands(self, e: "EngineState", ins: Instruction, origin: Origin) -> None:
        """Every array operand of ``ins`` read in the default layout, mandatory."""
        for n, vid in enumerate(ins.operands):
            v = e.g.values[vid]
            if v.is_array:
                e.set_operand_layout(L.default_layout(v.rank), ins.id, n, True, True,
                                     e.current_priority, origin)

    def _pin_unknown(self, e: "EngineState", ins: Instruction) -> None:
        origin = Origin("unknown-op-default", ins.id, None, f"{ins.op} is not known to the rules")
        self._default_operands(e, ins, origin)
        e.set_instruction_layout([L.default_layout(e.g.values[r].rank) for r in e.leaves[ins.id]],
                                 ins.id, True, e.current_priority, origin)

    def _constrain_custom_call(self, e: "EngineState", ins: Instruction) -> None:
        g = e.g
        target = ins.attrs.get("target", "")
        ins.attrs["layout_constrained"] = True
        e.core.set_layout_constrained(ins.id)
        origin = Origin("custom-call-layout", ins.id, None, f"custom_call @{target}")
        results = ins.attrs["result_layouts"]
        lays = [lay if g.values[r].is_array and lay is not None and len(lay) == g.values[r].rank else None
                for r, lay in zip(e.leaves[ins.id], results)]
        e.set_instruction_layout(lays, ins.id, True, e.current_priority, origin)
        if target == "LayoutConstraint":
            if lays and lays[0] is not None:
                e.set_operand_layout(lays[0], ins.id, 0, True, True, e.current_priority, origin)
            return
        operands = ins.operands  # read once: a view lists them anew on every read
        for n, lay in enumerate(ins.attrs["operand_layouts"]):
            if n >= len(operands):
                break
            v = g.values[operands[n]]
            if v.is_array and lay is not None and len(lay) == v.rank:
                e.set_operand_layout(lay, ins.id, n, True, True, e.current_priority, origin)
