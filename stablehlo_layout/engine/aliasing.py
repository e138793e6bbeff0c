"""XLA's copies of operands a layout-constrained custom call overwrites in place.

Before it assigns any layout, XLA's LayoutAssignment (``RunImpl``, through
``AddCopyForOperand``) gives every operand that a layout-constrained custom
call aliases to one of its outputs (``output_to_operand_aliasing``; StableHLO
``output_operand_aliases``) a ``copy`` of its own, unless that operand already
is a copy with no other user.  The custom call then overwrites the copy, never
the value itself: the value may be an entry parameter the caller still owns, a
constant, or be read by other ops after the call.  The pass adds these copies
without looking at layouts (making them during propagation would have to
patch its aliasing information), so most of them keep the layout: the copy
only gives the call a buffer it may clobber.  XLA's later passes remove such a
copy where the value dies at the call and is not an entry parameter; the ones
that stay cost their bytes.

The LAPACK (XLA:CPU) and cuSOLVER (XLA:GPU) calls of ``jnp.linalg`` and
``jax.scipy.linalg`` (potrf, getrf, geqrf, syevd, gesvd, trsm, ...) are
such calls, in raw StableHLO and in XLA's dumps alike.

In propagation we treat the copy as transparent: the call's declared
operand layout reaches the copy's operand as it reaches the operand itself
without it, so a value in another layout gets XLA's relayout copy first and
this copy after it.  That is what XLA's dumps show (XLA:CPU's all agree);
one XLA:GPU program (a Cholesky solve, examples/xla_gpu_dump/) shows the demand arriving
later than ours, after a transpose's forward layout took the operand.  Here the copies
are derived from the engine's answer, as plain data: one ``CopyEdge`` per
(custom call, aliased operand), with ``aliased_output`` set to the output
that overwrites it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.rules import rule_for

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Graph
    from stablehlo_layout.engine.result import Assignment, CopyEdge


def live_computations(g: "Graph") -> set[int]:
    """The computations the entry reaches (a private function nothing calls is left as written)."""
    if g.entry is None:
        return set()
    # The calls, as the importer listed them (graph.Columns): a few per op
    # with regions, instead of a visit of every instruction.
    c = g.columns
    calls: dict[int, list[int]] = {}
    for caller, callee in zip(map(c.comp.__getitem__, c.callee_owner), c.callee_item):
        calls.setdefault(caller, []).append(callee)
    live = {g.entry}
    stack = [g.entry]
    while stack:
        for callee in calls.get(stack.pop(), ()):
            if callee not in live:
                live.add(callee)
                stack.append(callee)
    return live


def aliased_operands(g: "Graph", iid: int) -> list[tuple[int, int]]:
    """(operand number, output index) of each operand ``iid`` overwrites and XLA copies first.

    Only a layout-constrained custom call (one with operand and result
    layouts) has them; each operand counts once, at its first alias, as XLA
    processes them.  An operand that already is a copy read by nothing else
    is the buffer XLA lets the call overwrite: no copy.
    """
    ins = g.instrs[iid]
    attrs = ins.attrs
    if not attrs or "operand_layouts" not in attrs or not attrs.get("aliases"):
        return []
    out: list[tuple[int, int]] = []
    seen: set[int] = set()
    for output, n in attrs["aliases"]:
        if n in seen or n >= ins.operand_count:
            continue
        seen.add(n)
        v = g.values[ins.operands[n]]
        if not v.is_array:
            continue  # a tuple or token operand: StableHLO's custom calls alias arrays
        producer = g.instrs[v.producer]
        if rule_for(producer.op).hlo == "copy" and len(v.uses) == 1:
            continue
        out.append((n, output))
    return out


def in_place_copies(a: "Assignment") -> list["CopyEdge"]:
    """One copy per aliased operand of every layout-constrained custom call the entry reaches.

    The copy has the layout the call declares for that operand (what the
    engine made the operand arrive in); ``src == dst`` says it keeps the
    layout it is given, which is what the rewrite then feeds it.
    """
    from stablehlo_layout.engine.result import CopyEdge

    g = a.graph
    out: list[CopyEdge] = []
    # Only custom calls alias, and the importer lists every op with aliases
    # among the ones carrying the core's attributes (graph.Columns.attributed).
    attrs = g.columns.attrs
    calls = [g.instrs[i] for i in g.columns.attributed if attrs[i].get("aliases")]
    if not calls:
        return out
    live = live_computations(g)
    for ins in calls:
        if ins.comp not in live or ins.op in ("parameter", "root"):
            continue
        for n, output in aliased_operands(g, ins.id):
            v = g.values[ins.operands[n]]
            demand = a.operand_constraints.get((ins.id, n))
            lay = demand.layout if demand is not None else a.layouts[v.id]
            if lay is None:
                lay = L.default_layout(v.rank)
            out.append(CopyEdge(v.id, lay, lay, ins.id, n, demand, aliased_output=output))
    return out


# -- words for explain ----------------------------------------------------------------

def _call_name(g: "Graph", iid: int) -> str:
    ins = g.instrs[iid]
    where = f" at {ins.loc}" if ins.loc else ""
    return f"custom_call @{ins.attrs.get('target', '?')}{where}"


def why_copied(g: "Graph", e: "CopyEdge") -> str:
    """Why XLA copies this operand although the layout does not change."""
    return (f"{_call_name(g, e.consumer)} writes its output {e.aliased_output} into the buffer of operand "
            f"{e.operand} (output_operand_aliases: it works in place); XLA's layout assignment gives "
            "every such operand a copy of its own before it assigns layouts, so the call overwrites "
            "the copy and never the value itself, which the caller or other ops may still need; "
            "the layout does not change")


def what_removes(g: "Graph", e: "CopyEdge", after_relayout: bool = False) -> str:
    """What would make the copy go away, as far as the program shows.

    ``after_relayout``: the call reads a relayout copy made for this use, so
    the in-place copy copies that fresh buffer, which nothing else reads.
    """
    if after_relayout:
        return ("it copies the relayout copy made for this same use, a buffer nothing else reads: "
                "XLA's later passes usually remove it (copy elimination); removing the relayout copy "
                "(see its fix) leaves this one copying the value itself")
    v = g.values[e.value]
    producer = g.instrs[v.producer]
    others = len([u for u in v.uses if u != (e.consumer, e.operand)])
    if producer.op == "parameter" and g.comps[producer.comp].is_entry:
        n = producer.attrs.get("number", 0)
        return (f"the value is entry parameter {n}: the caller keeps its buffer, so XLA keeps this copy "
                f"(donating the argument, jax.jit(..., donate_argnums={n}), gives XLA that buffer to reuse"
                + (f"; {others} other op(s) also read it, so a copy stays for them" if others else "") + ")")
    if others:
        return (f"{others} other op(s) read the value too, so the call must not overwrite it: the copy "
                "stays (compute a separate value for the call to consume to make it the only reader)")
    if rule_for(producer.op).hlo == "constant":
        return "the value is a constant, which the call must not overwrite: the copy stays"
    return ("the call is the value's only reader: XLA's later passes usually remove this copy "
            "(copy elimination), so it is listed here as XLA's layout assignment leaves it")
