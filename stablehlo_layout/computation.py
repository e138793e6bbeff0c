"""One computation (XLA's RunOnComputation): its steps, each round.

1. values whose layouts are fixed (parameters, infeed, outfeed, send,
   channels); 2. callers of computations already laid out, ops no rule
   knows; 3. the result, once known; 4. the target's demands and
   layout-constrained custom calls, then the worklist; 5. the default
   layout for every buffer nothing constrained, one at a time, each
   propagated before the next; then the interface is recorded
   (``interfaces.py``).

Which instructions each step looks at is worked out once, in bulk, from
the importer's columns (``per_computation``); a computation of scalars and
vectors only (a reducer's body) is laid out without the worklist in fast
runs.  Every method takes the engine (``propagation.Engine``) whose store it
writes.
"""

from __future__ import annotations

from itertools import compress, count
from operator import and_
from typing import TYPE_CHECKING

from . import _core
from . import layout as L
from .constraints import BEGINNING_PRIORITY, NUMBER_OF_ROUNDS, ComputationLayout, Origin
from .errors import PassError
from .graph import Graph, Instruction
from .index import RuleTable

if TYPE_CHECKING:
    from .propagation import Engine


def per_computation(g: Graph, rule_table: RuleTable) -> tuple[list[bool], list[list[int]]]:
    """Per computation, whether it is trivial, and the instructions the driver's
    steps look at, worked out in bulk from the importer's columns.

    Trivial: every array of a non-entry computation has rank 0 or 1, so
    one layout each.  Reducer and comparator bodies are like this.
    Nothing in them can differ from the default layout, and nothing they
    record can change a caller, so the worklist has nothing to decide
    there; an op without a known rule, a bitcast, an infeed's layouts or a
    channel keeps its computation on the worklist (for their errors and pins).

    The instructions steps 1, 2, 4 and the channel bookkeeping of
    ``ComputationSteps.run`` look at, in block order: calls, loops and
    conditionals, region ops that capture outer values, ops without a known
    rule, outfeed, send and bitcast, and the ops with an infeed's layouts, a
    channel or a custom call's operand layouts.  All others are plain ops
    to every step: parameters (pinned from the interface), roots, and the
    region ops that read nothing from outside their region (a reduce and
    its reducer), which are most of the callers in a large module.
    """
    c = g.columns
    n_instrs = len(g.instrs)
    interface = [name in ("parameter", "root") for name in c.op_names]
    of = rule_table.of
    # Per distinct rule, then per instruction through the table: C loops, not Python ones.
    special_rule = [not r.known or r.hlo in ("outfeed", "send", "bitcast") for r in rule_table.distinct]
    kept_rule = [not r.known or r.hlo == "bitcast" for r in rule_table.distinct]
    interface_rule = [r.hlo in ("call", "while", "case", "if") for r in rule_table.distinct]
    captures = c.captures
    special = {i for i in c.callee_owner if interface_rule[of[i]] or i in captures}
    # Parameters and roots have no rule of their own (not known): they are no step's concern.
    plain_op = [not x for x in interface]
    special.update(compress(count(), map(and_, map(special_rule.__getitem__, of), map(plain_op.__getitem__, c.op))))
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
    # Block order, from each computation's list; most computations have none.
    with_specials = set(map(c.comp.__getitem__, special))
    specials = [list(filter(special.__contains__, comp.instrs)) if comp.id in with_specials else []
                for comp in g.comps]
    return trivial, specials


class ComputationSteps:
    """What the steps of each computation keep from one round to the next."""

    def __init__(self, specials: list[list[int]]) -> None:
        # Per computation, the instructions steps 1, 2, 4 and the channel
        # bookkeeping look at (``per_computation``).
        self.specials = specials
        # Per computation, the same every round: its buffers in the default
        # loop's order and its specials (``_comp_plan``); its specials by step
        # (``_step_lists``); its parameters' note ids.
        self.comp_plans: dict[int, tuple[list[int], list[int]]] = {}
        self.steps_of: dict[int, tuple[list[int], list[int], list[int], list[int]]] = {}
        self.param_notes: dict[int, list[int]] = {}
        # Cross-module all-reduces on one channel agree on a layout; the first
        # one laid out decides, and the others follow from the next round on.
        self.channel_layouts: dict[int, L.Layout] = {}
        # Whether this round enforced the entry's result (``rounds.py`` reads it).
        self.entry_result_pushed = False

    def run(self, e: "Engine", c: int) -> None:
        """Lay computation ``c`` out for this round (the module docstring's steps 1-5), then record its interface."""
        g, iface = e.g, e.interfaces
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
                    lay = e.layout_of(e.leaves[iid][0])
                    if lay is not None:
                        self.channel_layouts[channel] = lay

    def _comp_plan(self, e: "Engine", c: int) -> tuple[list[int], list[int]]:
        """Per computation, the same every round: its buffers in the order the
        default loop visits them (XLA's buffer ids), and the instructions steps
        1, 2, 4 and the channel bookkeeping look at (all others are plain ops)."""
        plan = self.comp_plans.get(c)
        if plan is None:
            # Every computation the worklist runs on, in one call to the core.
            comps = [k for k in e.comp_order if k not in self.comp_plans and not (e.trivial[k] and not e.exact)]
            if c not in comps:
                comps.append(c)
            start, items = _core.default_buffers(e.core, e.order_key, comps)
            for n, k in enumerate(comps):
                self.comp_plans[k] = (items[start[n]:start[n + 1]], self.specials[k])
            plan = self.comp_plans[c]
        return plan

    def _step_lists(self, e: "Engine", c: int) -> tuple[list[int], list[int], list[int], list[int]]:
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

    def _lay_out_trivial(self, e: "Engine", c: int) -> None:
        """A computation of scalars and vectors: each buffer takes its only layout."""
        e.core.lay_out_trivial(c)
        e.interfaces.record_computation_layout(e, c)

    def _pin_parameters(self, e: "Engine", c: int, cl: ComputationLayout) -> None:
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
            _core.pin_parameters(e.core, [comp.params[k] for k in chosen], [lid(cl.params[k]) for k in chosen],
                                 [notes[k] for k in chosen],
                                 e.records.name("entry-parameter" if comp.is_entry else "computation-parameter"),
                                 e.current_priority)
        except _core.DemandError as err:
            raise e.demand_error(err) from None

    def _param_note(self, e: "Engine", c: int, p: int) -> str:
        comp = e.g.comps[c]
        number = e.g.instrs[p].attrs.get("number", 0)
        if comp.is_entry:
            return f"entry parameter {number}"
        return f"parameter {number} of {comp.name}"

    def _default_operands(self, e: "Engine", ins: Instruction, origin: Origin) -> None:
        """Every array operand of ``ins`` read in the default layout, mandatory."""
        for n, vid in enumerate(ins.operands):
            v = e.g.values[vid]
            if v.is_array:
                e.set_operand_layout(L.default_layout(v.rank), ins.id, n, True, True,
                                     e.current_priority, origin)

    def _pin_unknown(self, e: "Engine", ins: Instruction) -> None:
        origin = Origin("unknown-op-default", ins.id, None, f"{ins.op} is not known to the rules")
        self._default_operands(e, ins, origin)
        e.set_instruction_layout([L.default_layout(e.g.values[r].rank) for r in e.leaves[ins.id]],
                                 ins.id, True, e.current_priority, origin)

    def _constrain_custom_call(self, e: "Engine", ins: Instruction) -> None:
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
