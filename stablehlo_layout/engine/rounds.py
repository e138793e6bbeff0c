"""The rounds over the whole module (XLA's RunOnComputation loop in Run).

XLA runs every computation, callees first, at least twice: each round starts
an empty store one priority higher, so that what a round recorded
(computation interfaces, ``interfaces.py``) outranks what the next one
derives anew.  A round can ask for another (a donated parameter and its
aliased result disagreeing, branches a caller left free disagreeing), up to
16.  A fast run stops early where the next round could only repeat this one
(``_repeats``), and lays out each run of consecutive one-layout computations
in one call to the core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import DEFAULT_PRIORITY, GIVEN_PRIORITY, NUMBER_OF_ROUNDS, ComputationLayout
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import Value

if TYPE_CHECKING:
    from stablehlo_layout.engine.computation import ComputationSteps
    from stablehlo_layout.engine.interfaces import Interfaces
    from stablehlo_layout.engine.state import EngineState

# A module whose rounds keep asking for another is refused after this many.
_MOST_ROUNDS = 16


def run_rounds(e: "EngineState", iface: "Interfaces", one: "ComputationSteps") -> tuple[int, int]:
    """Run the rounds; return how many XLA runs and how many were computed here."""
    g = e.g
    assert g.entry is not None
    seed_entry_layout(e, iface)
    # A fast run lays out each run of consecutive trivial computations in one call to the core.
    steps: list[int | list[int]] = []
    for c in e.comp_order:
        if e.trivial[c] and not e.exact:
            if not steps or steps[-1].__class__ is not list:
                steps.append([])
            steps[-1].append(c)  # type: ignore[union-attr]
        else:
            steps.append(c)
    i = computed = 0
    changed = False
    while changed or i < NUMBER_OF_ROUNDS:
        e.round = i
        e.core.new_round()  # the store keeps one round's constraints
        one.entry_result_pushed = False
        before = _entry_interface(e, iface)
        for step in steps:
            if step.__class__ is list:
                iface.lay_out_one_layout_run(e, step)
            else:
                one.run(e, step)  # type: ignore[arg-type]
        e.current_priority += 1
        changed = _reconcile_aliases(e, iface) or iface.another_round
        iface.another_round = False
        i += 1
        computed += 1
        if i > _MOST_ROUNDS:
            raise PassError(f"layout assignment did not settle after {_MOST_ROUNDS} rounds")
        if i < NUMBER_OF_ROUNDS and not changed and _repeats(e, iface, one, before):
            i = NUMBER_OF_ROUNDS
    return i, computed


def seed_entry_layout(e: "EngineState", iface: "Interfaces") -> None:
    """The entry's interface before the first round: what the input gave, by entry mode."""
    g = e.g
    comp = g.comps[g.entry]  # type: ignore[index]
    params = [g.values[g.instrs[p].results[0]] for p in comp.params]
    results = [g.values[v] for v in g.instrs[comp.root].operands]

    def given(mode: L.Layout | str | None, v: Value) -> L.Layout | None:
        if not v.is_array:
            return None
        if isinstance(mode, tuple):
            return mode
        if mode is None and e.entry_mode == "default":
            return e.target.default_entry_layout(v)
        return None

    e.given_params = [given(m, v) for m, v in zip(g.entry_param_modes, params)]
    e.given_results = [given(m, v) for m, v in zip(g.entry_result_modes, results)]
    any_set = any(x is not None for x in e.given_params + e.given_results)
    iface.comp_layouts[comp.id] = ComputationLayout(
        list(e.given_params), list(e.given_results),
        GIVEN_PRIORITY if any_set else DEFAULT_PRIORITY,
    )


def _entry_interface(e: "EngineState", iface: "Interfaces") -> tuple:
    cl = iface.comp_layouts[e.g.entry]  # type: ignore[index]
    return (tuple(cl.params), tuple(cl.results), cl.priority, cl.params_set, cl.result_set)


def _repeats(e: "EngineState", iface: "Interfaces", one: "ComputationSteps", before: tuple) -> bool:
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
    if e.exact or e.weakened or not e.target.uniform_rounds:
        return False
    if one.channel_layouts or iface.conditional_mismatch:
        return False
    if not all(e.trivial[c] for c in e.comp_order if c != e.g.entry):
        return False
    after = _entry_interface(e, iface)
    return after == before and (one.entry_result_pushed or all(x is None for x in after[1]))


def _reconcile_aliases(e: "EngineState", iface: "Interfaces") -> bool:
    """A donated parameter and its aliased result end up with one layout."""
    g = e.g
    if not g.entry_aliases:
        return False
    cl = iface.comp_layouts[g.entry]  # type: ignore[index]
    comp = g.comps[g.entry]  # type: ignore[index]
    root_operands = g.instrs[comp.root].operands  # read once: a view lists them anew on every read
    changed = False
    for p, r in g.entry_aliases:
        if p >= len(cl.params) or r >= len(cl.results):
            continue
        if e.given_params[p] is not None and e.given_results[r] is not None:
            continue
        pl = e.layout_of(g.instrs[comp.params[p]].results[0])
        rl = e.layout_of(root_operands[r])
        if pl is None or rl is None or pl == rl:
            continue  # XLA leaves an alias pair alone once its layouts agree
        changed = True
        chosen = rl if e.given_params[p] is None else pl
        cl.params[p] = cl.results[r] = chosen
    return changed
