"""An interactive, self-contained HTML page for one layout-assignment trace.

``render_trace_html`` turns a traced ``Assignment`` into one HTML document
with everything inline (CSS, JS, SVG; no network).  The page shows:

* the dataflow graph of the entry function, laid out here (longest-path
  layering, barycentric ordering, x slots); nested regions and called
  functions are collapsible groups, collapsed by default beyond a size;
* a step control (first / back / next / last, arrow keys, a slider) that
  replays the worklist pops in order: the popped constraint (the same line
  ``render_trace`` prints) with its kind, priority, flags, rule and origin
  chain, what it derived, which layouts changed, and the deque's front and
  back, replayed from the seeds the engine recorded at the start of each
  worklist run (``plan_calls``);
* the end state: every inserted copy on its edge with the bytes it moves;
  clicking one shows ``explain``'s text for it;
* a summary: copies by reason, total bytes, the entry layouts chosen.

Only what is in view is drawn, and the data is compact JSON arrays whose
size grows with the graph plus the trace.  The output is deterministic.

The page's HTML, CSS and JavaScript are package data (``trace_page/``),
inlined into every page; the data's record layout is ``SCHEMA``, which the
page reads by field name; every sentence and label it shows is a template
of ``explain.TRACE_WORDS``, filled here or by the page, or text explain wrote
(subjects, copy reports).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from stablehlo_layout.ir.metadata import Source, entry_parameter_key
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import BUFFER, OPERAND, Origin, TraceEvent
from stablehlo_layout.model.graph import ARRAY, Graph, Value, shape_text
from stablehlo_layout.engine.result import Assignment, copy_groups

# A titled table of the summary: (title, column heads, rows of cells).
Table = tuple[str, list[str], list[list[str]]]
# Groups (regions, called functions) hold at most this many instructions,
# nested ones included, to start expanded; a module with more than
# BIG_MODULE instructions starts with every group collapsed.
EXPAND_LIMIT = 40
BIG_MODULE = 2000


# --- replaying the worklist ----------------------------------------------------


@dataclass
class CallPlan:
    """One worklist run (one ``propagate()`` call) as the trace recorded it.

    ``start`` is the index of its first pop; ``seeds`` the deque as the run
    began, front first; ``seed_pops`` the index of the pop that took each
    seed.  Everything else the run popped was derived inside it.
    """

    start: int
    seeds: list[Origin]
    seed_pops: list[int]


def plan_calls(trace: list[TraceEvent]) -> list[CallPlan]:
    """The worklist runs of a trace, from the seeds the engine recorded.

    Which pop takes which seed follows from the deque's shape (see
    ``deque_states``): a pop takes a seed when no DFS-derived constraint is
    in front of the seeds.
    """
    plans: list[CallPlan] = []
    front = taken = 0
    for i, ev in enumerate(trace):
        if ev.seeds is not None:
            plans.append(CallPlan(i, ev.seeds, []))
            front = taken = 0
        if front:
            front -= 1
        elif plans and taken < len(plans[-1].seeds):
            plans[-1].seed_pops.append(i)
            taken += 1
        front += sum(1 for d in ev.derived if d.dfs)
    return plans


def deque_states(trace: list[TraceEvent]):
    """Yield, after each pop and its drain, the deque as a list of facts (front first).

    The engine's deque is always F + S + B: F the DFS-derived constraints
    (pushed to the front one by one, so the last added is first), S what was
    queued when the run began, B the BFS-derived ones (appended at the back);
    a pop takes the front.  The page runs the same replay.
    """
    front: list[Origin] = []  # a stack: front[-1] is the deque's front
    seeds: deque[Origin] = deque()
    back: deque[Origin] = deque()
    for ev in trace:
        if ev.seeds is not None:
            front, seeds, back = [], deque(ev.seeds), deque()
        if front:
            front.pop()
        elif seeds:
            seeds.popleft()
        elif back:
            back.popleft()
        for d in ev.derived:
            if d.dfs:
                front.append(d)
            else:
                back.append(d)
        yield list(reversed(front)) + list(seeds) + list(back)


# --- laying out the graph ------------------------------------------------------------


def _comp_edges(g: Graph, cid: int) -> list[tuple[int, int]]:
    """Producer -> consumer instruction pairs inside computation ``cid`` (deduplicated)."""
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    for iid in g.comps[cid].instrs:
        ins = g.instrs[iid]
        for v in list(ins.operands) + list(ins.captures):
            p = g.values[v].producer
            if p != iid and g.instrs[p].comp == cid and (p, iid) not in seen:
                seen.add((p, iid))
                out.append((p, iid))
    return out


def layout_comp(g: Graph, cid: int, sweeps: int = 4) -> dict[int, tuple[int, int]]:
    """Layer and x slot per instruction of one computation (Sugiyama-style, no dummies).

    Layers by longest path from the sources, then each node pulled down to
    just above its first user; order within a layer by barycenters of the
    neighbours, alternating down and up sweeps; x slots by neighbour
    averages, kept in order at least one slot apart.
    """
    instrs = g.comps[cid].instrs
    if not instrs:
        return {}
    preds: dict[int, list[int]] = {iid: [] for iid in instrs}
    succs: dict[int, list[int]] = {iid: [] for iid in instrs}
    for p, c in _comp_edges(g, cid):
        preds[c].append(p)
        succs[p].append(c)
    # Longest path from the sources, in a stable topological order.
    indeg = {iid: len(preds[iid]) for iid in instrs}
    layer: dict[int, int] = {}
    topo: list[int] = []
    ready = deque(iid for iid in instrs if indeg[iid] == 0)
    while ready:
        n = ready.popleft()
        topo.append(n)
        layer[n] = max((layer[p] + 1 for p in preds[n]), default=0)
        for s in succs[n]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    for iid in instrs:  # anything on a cycle: after what it follows
        if iid not in layer:
            topo.append(iid)
            layer[iid] = max((layer.get(p, 0) + 1 for p in preds[iid]), default=0)
    # Then as late as possible: each op just above its first user, so a
    # parameter or a side branch sits next to where it is used.
    for iid in reversed(topo):
        if succs[iid]:
            want = min(layer[s] for s in succs[iid]) - 1
            if want > layer[iid]:
                layer[iid] = want
    root = g.comps[cid].root
    if root in layer:
        layer[root] = max(layer.values()) if len(instrs) > 1 else 0
        if any(layer[p] >= layer[root] for p in preds[root]):
            layer[root] += 1
    nlayers = max(layer.values()) + 1
    rows: list[list[int]] = [[] for _ in range(nlayers)]
    for iid in instrs:
        rows[layer[iid]].append(iid)
    pos = {iid: float(k) / max(1, len(row)) for row in rows for k, iid in enumerate(row)}

    def reorder(row: list[int], nbrs: dict[int, list[int]]) -> list[int]:
        keyed = []
        for k, iid in enumerate(row):
            ns = nbrs[iid]
            bary = sum(pos[x] for x in ns) / len(ns) if ns else pos[iid]
            keyed.append((bary, k, iid))
        keyed.sort()
        out = [iid for _, _, iid in keyed]
        for k, iid in enumerate(out):
            pos[iid] = (k + 0.5) / len(out)
        return out

    for s in range(sweeps):
        if s % 2 == 0:
            rows = [rows[0]] + [reorder(r, preds) for r in rows[1:]] if rows else rows
        else:
            rows = [reorder(r, succs) for r in rows[:-1]] + [rows[-1]]
    # X slots: start at the index, then pull towards the neighbours' average.
    x = {iid: k for row in rows for k, iid in enumerate(row)}

    def place(row: list[int], nbrs: dict[int, list[int]]) -> None:
        prev = None
        for iid in row:
            ns = nbrs[iid]
            want = round(sum(x[n] for n in ns) / len(ns)) if ns else x[iid]
            if prev is not None:
                want = max(want, prev + 1)
            want = max(want, 0)
            x[iid] = prev = want

    for _ in range(2):
        for row in rows[1:]:
            place(row, preds)
        for row in reversed(rows[:-1]):
            place(row, succs)
    low = min(x.values())
    return {iid: (layer[iid], x[iid] - low) for iid in instrs}


# --- the data ------------------------------------------------------------------

# The page's data layout, defined once: each record is a list whose fields are
# named here, in order.  The page reads these names from the data ("schema")
# and indexes by them, so neither side counts positions.
SCHEMA: dict[str, tuple[str, ...]] = {
    "comp": ("name", "kind", "home", "size", "entry", "instrs", "label", "title"),
    "instr": ("op", "comp", "loc", "results", "operands", "captures", "callees", "layer", "slot",
              "expanded", "label", "tip", "calls", "regions"),
    "value": ("shape", "producer", "index", "buffer", "array", "rank"),
    # Facts are flat (the bulk of the data): fact k is facts[k * width : (k + 1) * width].
    "fact": ("kind", "t0", "t1", "layout", "priority", "flags", "round", "rule", "note", "was", "parent",
             "instr", "subject"),
    "event": ("comp", "round", "fact", "derived"),
    "call": ("start", "seeds"),
    "copy": ("value", "src", "dst", "bytes", "total", "trips", "reason", "edges", "text", "shape", "title",
             "item", "label"),
    "param": ("instr", "value", "layout", "pinned", "copies_if_free", "bytes_if_free"),
    "result": ("value", "layout", "pinned"),
}
FACT_KINDS = (BUFFER, OPERAND, "result")  # a fact's "kind" indexes this
MANDATORY, DFS = 1, 2  # a fact's "flags"


def _row(record: str, /, **fields: Any) -> list[Any]:
    names = SCHEMA[record]
    if len(fields) != len(names):
        raise ValueError(f"{record} record: fields {sorted(set(fields) ^ set(names))} do not match the schema")
    return [fields[n] for n in names]


class _Interner:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.index: dict[Any, int] = {}

    def __call__(self, item: Any) -> int:
        n = self.index.get(item)
        if n is None:
            n = self.index[item] = len(self.items)
            self.items.append(item)
        return n


def _value_shape(v: Value) -> str:
    """An array's shape; a tuple or token by its kind (the page draws tuple elements apart)."""
    if v.kind == ARRAY:
        return shape_text(v)
    if v.kind == "tuple":
        return f"tuple({len(v.elements or ())})"
    return v.element or v.kind


def _fmt(layout) -> str:
    return L.format_layout(layout)


def _node_label(g: Graph, ins, words: dict[str, str], sources: "Mapping[str, Source] | None" = None) -> str:
    """The node's name: the op; in XLA's own module (a dump, --as-compiled) its HLO name, as the text says it."""
    if ins.op == "parameter":
        n = ins.attrs.get("number", -1)
        src = sources.get(entry_parameter_key(n)) if sources and g.comps[ins.comp].is_entry else None
        if src is not None and src.name:
            return words["node-parameter-named"].format(n=n, name=src.name)
        return words["node-parameter"].format(n=n)
    if ins.op == "root":
        return words["node-entry-return" if g.comps[ins.comp].is_entry else "node-return"]
    if sources is not None and ins.loc:
        return ins.loc.split(" (", 1)[0]  # the instruction's name over its call site
    return ins.op[len("stablehlo."):] if ins.op.startswith("stablehlo.") else ins.op


def _box_title(c, ops: int, words: dict[str, str]) -> str:
    key = "box-entry" if c.is_entry else "box-func" if c.kind == "func" else "box-region"
    return words[key].format(name=c.name, kind=c.kind, ops=ops)


def build_data(graph: Graph, assignment: Assignment, explanation=None, title: str = "",
               sources: "Mapping[str, Source] | None" = None, tables: Sequence[Table] = ()) -> dict[str, Any]:
    """Everything the page needs, as plain JSON-able records (``SCHEMA``).

    ``sources`` (as for ``explain``: the input is XLA's module) names each
    node by its HLO instruction, the name every text on the page uses.
    ``tables`` go below the summary's own (``trace --verify-fixes``: the
    changes XLA confirms, which a stage above this one finds).
    """
    from stablehlo_layout.report.explain import TRACE_WORDS as W
    from stablehlo_layout.report.explain import (
        comp_label,
        describe_use,
        describe_value,
        fmt_bytes,
        link_of,
        quantity,
        rule_text,
        source_rule,
        value_bytes,
    )

    g, a = graph, assignment
    trace = a.trace or []
    ops = _Interner()
    lays = _Interner()
    rules = _Interner()
    notes = _Interner()
    subjects = _Interner()
    lays("")  # index 0: never used as a layout; keeps 0 out of the way
    # Which group hosts each computation: the first caller reached from the entry.
    home: dict[int, int] = {}
    tops: list[int] = []
    assert g.entry is not None

    def walk(start: int) -> None:
        stack = [start]
        while stack:
            cid = stack.pop()
            for iid in reversed(g.comps[cid].instrs):
                for callee in reversed(g.instrs[iid].callees):
                    if callee not in home and callee != g.entry and callee not in tops:
                        home[callee] = iid
                        stack.append(callee)

    tops.append(g.entry)
    walk(g.entry)
    for c in g.comps:
        if c.id not in home and c.id not in tops and c.instrs:
            tops.append(c.id)
            walk(c.id)
    # Nested sizes, callees first.
    size: dict[int, int] = {}

    def comp_size(cid: int) -> int:
        # Iterative post-order over hosted computations.
        order, stack = [], [cid]
        while stack:
            c = stack.pop()
            order.append(c)
            for iid in g.comps[c].instrs:
                stack.extend(x for x in g.instrs[iid].callees if home.get(x) == iid)
        for c in reversed(order):
            if c not in size:
                size[c] = len(g.comps[c].instrs) + sum(
                    size[x] for iid in g.comps[c].instrs for x in g.instrs[iid].callees if home.get(x) == iid)
        return size[cid]

    for t in tops:
        comp_size(t)
    module_size = sum(size[t] for t in tops)
    expand_default = module_size <= BIG_MODULE

    comps_out = []
    placed: dict[int, tuple[int, int]] = {}
    for c in g.comps:
        drawn = c.id in size  # declarations have nothing to draw
        if drawn:
            placed.update(layout_comp(g, c.id))
        comps_out.append(_row(
            "comp", name=c.name, kind=c.kind, home=home.get(c.id, -1) if drawn else -2,
            size=size.get(c.id, 0), entry=1 if c.is_entry else 0, instrs=list(c.instrs) if drawn else [],
            label=comp_label(g, c.id), title=_box_title(c, size.get(c.id, 0), W)))
    instrs_out = []
    for ins in g.instrs:
        layer, slot = placed.get(ins.id, (0, 0))
        hosted = [x for x in ins.callees if home.get(x) == ins.id]
        group_size = sum(size.get(x, 0) for x in hosted)
        loc = ins.loc
        calls = ""
        if ins.callees and not hosted:
            names = ", ".join(f"@{g.comps[x].name}" if g.comps[x].is_entry else g.comps[x].name for x in ins.callees)
            calls = W["calls"].format(names=names)
        instrs_out.append(_row(
            "instr", op=ops(ins.op), comp=ins.comp, loc=loc, results=ins.results, operands=ins.operands,
            captures=ins.captures, callees=ins.callees, layer=layer, slot=slot,
            expanded=1 if hosted and expand_default and group_size <= EXPAND_LIMIT else 0,
            label=_node_label(g, ins, W, sources), tip=W["tip"].format(op=ins.op, loc=loc) if loc else ins.op, calls=calls,
            regions=W["regions"].format(regions=quantity(len(hosted), "region", "regions"), ops=group_size)
            if hosted else ""))
    values_out = []
    for v in g.values:
        values_out.append(_row("value", shape=_value_shape(v), producer=v.producer, index=v.index,
                               buffer=v.buffer, array=1 if v.is_array else 0, rank=v.rank))

    # Facts: every Origin the trace mentions, ancestors included.
    fact_ids: dict[int, int] = {}
    facts: list[Any] = []
    keep: list[Origin] = []  # keeps ids stable while we work

    def fact(f: Origin) -> int:
        n = fact_ids.get(id(f))
        if n is not None:
            return n
        chain = []
        node: Origin | None = f
        while node is not None and id(node) not in fact_ids:
            chain.append(node)
            node = node.parent
        for node in reversed(chain):
            link = link_of(g, node)
            kind = FACT_KINDS.index(node.kind) if node.kind in (BUFFER, OPERAND) else 2
            t1 = node.target[1] if kind == 1 else -1
            facts.extend(_row(
                "fact", kind=kind, t0=node.target[0], t1=t1, layout=lays(link.layout), priority=node.priority,
                flags=(MANDATORY if node.mandatory else 0) | (DFS if node.dfs else 0), round=node.round,
                rule=rules(node.rule), note=notes(node.note) if node.note else -1,
                was=lays(_fmt(node.was)) if node.was is not None else -1,
                parent=-1 if node.parent is None else fact_ids[id(node.parent)],
                instr=-1 if node.instr is None else node.instr, subject=subjects(link.subject)))
            fact_ids[id(node)] = len(keep)
            keep.append(node)
        return fact_ids[id(f)]

    events = [_row("event", comp=ev.comp, round=ev.round, fact=fact(ev.constraint),
                   derived=[fact(d) for d in ev.derived]) for ev in trace]
    # The page shows each seed waiting in the deque as it will be popped
    # (a queued constraint can be changed in place before its pop).
    calls_out = [_row("call", start=p.start, seeds=[fact(trace[i].constraint) for i in p.seed_pops])
                 for p in plan_calls(trace)]

    final = [lays(_fmt(x)) if x is not None else -1 for x in a.layouts]
    # Copies: one per inserted copy (explain's order is copy_groups' order).
    groups = copy_groups(a)
    copies = []
    reports = explanation.copies if explanation is not None else [None] * len(groups)
    by_reason: dict[str, tuple[int, int, int]] = {}  # reason -> (copies, known bytes, copies of unknown size)
    for k, (group, report) in enumerate(zip(groups, reports), 1):
        edges = [[e.consumer, e.operand] for e in group.edges]
        v = g.values[group.value]
        src = a.layouts[v.id] or ()
        if report is not None:
            nbytes, total, trips, reason = report.bytes, report.total_bytes, report.loop_trips, report.reason
            text = report.explain()
        else:  # no explanation given: what the assignment alone tells
            # An in-place copy is filed by why XLA makes it, as explain files it, not by its layout's rule.
            reason = "custom-call-in-place" if group.in_place else source_rule(group.edges[0].demand)
            nbytes, total, trips = value_bytes(v), None, []
            text = W["no-explanation"]
        n, b, unknown = by_reason.get(reason, (0, 0, 0))
        # None: a dynamic shape's size, unknown until run time; no total counts it.
        by_reason[reason] = (n + 1, b + (nbytes or 0), unknown + (nbytes is None))
        shape = shape_text(v)
        head = W["copy-title"].format(k=k, shape=shape, src=_fmt(src), dst=_fmt(group.dst))
        per_run = W["copy-per-run"].format(bytes=fmt_bytes(total)) if total is not None and trips else ""
        first = group.edges[0]
        item = W["copy-item"].format(title=head, bytes=fmt_bytes(nbytes), per_run=per_run,
                                     producer=describe_value(g, v.id),
                                     consumer=describe_use(g, first.consumer, first.operand))
        copies.append(_row(
            "copy", value=group.value, src=lays(_fmt(src)), dst=lays(_fmt(group.dst)), bytes=nbytes,
            total=total if total is not None else -1, trips=trips, reason=reason, edges=edges, text=text,
            shape=shape, title=head, item=item,
            label=W["copy-label"].format(k=k, bytes=fmt_bytes(nbytes), src=_fmt(src), dst=_fmt(group.dst))))
    entry = g.comps[g.entry]
    # A partitioned program: each entry value's sharding as the input states it, in a column of its own.
    sharded = bool(g.shardings or g.result_shardings)
    params = []
    param_rows = []
    costs = {p.index: p for p in explanation.parameters} if explanation is not None else {}
    for i, p in enumerate(entry.params):
        v = g.values[g.instrs[p].results[0]]
        mode = g.entry_param_modes[i] if i < len(g.entry_param_modes) else None
        pinned = v.is_array and (isinstance(mode, tuple) or (mode is None and a.entry_mode == "default"))
        lay = a.entry_params[i] if i < len(a.entry_params) else None
        cost = costs.get(i)
        n_free = cost.copies_if_free if cost and cost.copies_if_free is not None else None
        b_free = cost.bytes_if_free if cost and cost.bytes_if_free is not None else None
        params.append(_row("param", instr=p, value=v.id, layout=lays(_fmt(lay)) if lay is not None else -1,
                           pinned=1 if pinned else 0, copies_if_free=n_free, bytes_if_free=b_free))
        if_free = "\u2014" if n_free is None else W["if-free"].format(
            copies=quantity(n_free, "copy", "copies"), sign="+" if (b_free or 0) >= 0 else "", bytes=b_free)
        param_rows.append([str(i), _value_shape(v), _fmt(lay) if lay is not None else W["unset"],
                           W["pinned" if pinned else "free"], if_free]
                          + ([g.shardings.get(v.id) or "\u2014"] if sharded else []))
    results = []
    result_rows = []
    root_operands = g.instrs[entry.root].operands if entry.root >= 0 else None
    for i, lay in enumerate(a.entry_results):
        v = g.values[root_operands[i]] if root_operands is not None else None
        mode = g.entry_result_modes[i] if i < len(g.entry_result_modes) else None
        pinned = v is not None and v.is_array and (isinstance(mode, tuple)
                                                   or (mode is None and a.entry_mode == "default"))
        results.append(_row("result", value=v.id if v is not None else -1,
                            layout=lays(_fmt(lay)) if lay is not None else -1, pinned=1 if pinned else 0))
        result_rows.append([str(i), _value_shape(v) if v is not None else "",
                            _fmt(lay) if lay is not None else W["unset"], W["pinned" if pinned else "free"]]
                           + ([(g.result_shardings[i] if i < len(g.result_shardings) else None) or "\u2014"]
                              if sharded else []))
    reason_rows = [[str(n), _known_bytes(b, unknown), f"{rule_text(r)} ({r})"] for r, (n, b, unknown) in
                   sorted(by_reason.items(), key=lambda kv: (-kv[1][0], kv[0]))]
    sizes = [c[SCHEMA["copy"].index("bytes")] for c in copies]
    total_bytes = sum(b for b in sizes if b is not None)
    ncopies = quantity(len(copies), "copy", "copies")
    moved = _known_bytes(total_bytes, sizes.count(None))
    summary = W["summary"].format(copies=ncopies, bytes=moved, target=a.target.name,
                                  mode=a.entry_mode, pops=len(trace), rounds=a.rounds)
    return {
        "v": 2,
        "schema": SCHEMA,
        "words": W,
        "title": title,
        "target": a.target.name,
        "entryMode": a.entry_mode,
        "entry": g.entry,
        "tops": tops,
        "kinds": list(FACT_KINDS),
        "ops": ops.items,
        "layouts": lays.items,
        "rules": rules.items,
        "ruleText": [rule_text(r) for r in rules.items],
        "notes": notes.items,
        "subjects": subjects.items,
        "comps": comps_out,
        "instrs": instrs_out,
        "values": values_out,
        "facts": facts,
        "events": events,
        "calls": calls_out,
        "final": final,
        "copies": copies,
        "params": params,
        "results": results,
        "totalBytes": total_bytes,
        "rounds": a.rounds,
        "start": W["start"].format(pops=len(trace), rounds=a.rounds),
        "end": W["end"].format(copies=ncopies),
        "summary": {
            "text": summary,
            "tables": [
                ["Copies by reason", ["copies", "bytes", "reason"], reason_rows],
                ["Entry parameters", ["#", "shape", "layout", "pinned?", "if left free"]
                 + (["sharding"] if sharded else []), param_rows],
                ["Entry results", ["#", "shape", "layout", "pinned?"] + (["sharding"] if sharded else []),
                 result_rows],
                *([title, head, rows] for title, head, rows in tables),
            ],
        },
    }


def _known_bytes(known: int, unknown: int) -> str:
    """Bytes of the copies whose size is known, and how many are of unknown size (dynamic shapes)."""
    from stablehlo_layout.report.explain import fmt_bytes, quantity

    if not unknown:
        return fmt_bytes(known)
    if not known:
        return fmt_bytes(None)
    return f"{fmt_bytes(known)} plus {quantity(unknown, 'copy', 'copies')} of unknown size (dynamic shape)"


def _script_json(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True, sort_keys=False)
    # Safe inside <script>: no "</script", no "<!--".
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _asset(name: str) -> str:
    """One of the page's files (package data in ``trace_page/``), inlined into every page."""
    return (resources.files(__package__) / "trace_page" / name).read_text(encoding="utf-8")


def render_trace_html(graph: Graph, assignment: Assignment, explanation=None,
                      title: str = "stablehlo-layout trace", sources: Mapping[str, Source] | None = None,
                      tables: Sequence[Table] = ()) -> str:
    """The whole page as one string (deterministic: same input, same bytes).

    ``explanation`` is ``explain(assignment)``, whose text each copy shows
    when clicked; with None the copies are drawn from the assignment alone
    (no text, no parameter costs).
    """
    if assignment.trace is None:
        raise ValueError("the assignment carries no trace: run analyze(..., trace=True)")
    data = build_data(graph, assignment, explanation, title, sources, tables)
    return (_asset("page.html").replace("%TITLE%", _esc(title))
            .replace("%CSS%", _asset("page.css"))
            .replace("%JS%", _asset("page.js"))
            .replace("%DATA%", _script_json(data)))


def write_trace_html(graph: Graph, assignment: Assignment, explanation, path: str, title: str,
                     sources: Mapping[str, Source] | None = None, tables: Sequence[Table] = ()) -> None:
    """Write ``render_trace_html(...)`` to ``path`` (UTF-8) through ``output.write_output``."""
    from stablehlo_layout.report.output import write_output

    text = render_trace_html(graph, assignment, explanation, title, sources, tables)
    write_output(path, text.encode("utf-8"))
