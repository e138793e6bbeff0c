"""What each computation's steps look at, worked out once before the first round.

Per computation: whether it is trivial (one layout per array, so nothing
for the worklist to decide), and which of its instructions the steps of
``computation.py`` look at.  Both follow from the importer's columns and
one answer per distinct rule, in bulk, not op by op.
"""

from __future__ import annotations

from itertools import compress, count
from operator import and_

from stablehlo_layout.engine.core import RuleTable
from stablehlo_layout.model.graph import Graph


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
