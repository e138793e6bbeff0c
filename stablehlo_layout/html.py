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
  back, reconstructed by replaying the trace (``plan_calls``);
* the end state: every inserted copy on its edge with the bytes it moves;
  clicking one shows ``explain``'s text for it;
* a summary: copies by reason, total bytes, the entry layouts chosen.

Only what is in view is drawn, and the data is compact JSON arrays whose
size grows with the graph plus the trace.  The output is deterministic.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from typing import Any

from . import layout as L
from .constraints import BUFFER, OPERAND, Origin
from .graph import Graph
from .propagation import Assignment, TraceEvent, copy_groups

# Groups (regions, called functions) hold at most this many instructions,
# nested ones included, to start expanded; a module with more than
# BIG_MODULE instructions starts with every group collapsed.
EXPAND_LIMIT = 40
BIG_MODULE = 2000
_KINDS = {BUFFER: 0, OPERAND: 1}  # anything else is a result constraint (2)


# --- replaying the worklist ----------------------------------------------------


def _key(f: Origin) -> tuple:
    return (f.kind, f.target)


@dataclass
class CallPlan:
    """One ``propagate()`` call as seen in the trace.

    ``start`` is the index of its first pop; ``seeds`` the indices of the pops
    that took a constraint queued before the call began (its initial deque,
    in deque order).  Everything else it popped was derived inside the call.
    """

    start: int
    seeds: list[int]


def plan_calls(trace: list[TraceEvent]) -> list[CallPlan]:
    """Split the trace into worklist runs and find each run's initial deque.

    The engine's deque is always F + S + B: F the DFS-derived constraints
    (each batch pushed to the front one by one, so the last added is first),
    S what was queued before the run, B the BFS-derived ones (appended at the
    back).  Pops take the front.  F and B are known from the derived lists;
    a pop that matches neither came from S.  A run starts with each
    (round, computation) and with each default-layout seed.
    """
    plans: list[CallPlan] = []
    front: deque[tuple] = deque()  # keys; front[0] is the deque's front
    back: deque[tuple[tuple, Origin]] = deque()
    last: tuple[int, int] | None = None
    for i, ev in enumerate(trace):
        f = ev.constraint
        k = _key(f)
        if (ev.round, ev.comp) != last:
            last = (ev.round, ev.comp)
            front.clear()
            back.clear()
            plans.append(CallPlan(i, []))
        if front and front[0] == k:
            front.popleft()
        elif not front and back and back[0][0] == k and (back[0][1] is f or f.parent is not None):
            back.popleft()
        else:
            if (not front and not back and f.rule == "default-layout" and f.parent is None
                    and plans[-1].start != i):
                plans.append(CallPlan(i, []))
            plans[-1].seeds.append(i)
        for d in ev.derived:
            if d.dfs:
                front.appendleft(_key(d))
            else:
                back.append((_key(d), d))
    return plans


def deque_states(trace: list[TraceEvent], plans: list[CallPlan] | None = None):
    """Yield, after each pop and its drain, the deque as a list of facts (front first).

    Seeds show the fact they were popped with.  The page runs the same replay.
    """
    plans = plan_calls(trace) if plans is None else plans
    starts = {p.start: p for p in plans}
    seed_steps = {s for p in plans for s in p.seeds}
    front: list[Origin] = []  # a stack: front[-1] is the deque's front
    seeds: deque[Origin] = deque()
    back: deque[Origin] = deque()
    for i, ev in enumerate(trace):
        plan = starts.get(i)
        if plan is not None:
            front, back = [], deque()
            seeds = deque(trace[s].constraint for s in plan.seeds)
        if i in seed_steps:
            if seeds:
                seeds.popleft()
        elif front:
            front.pop()
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


_LOC_DASH = re.compile(r"(?<![\w./-])-:(\d+):(\d+)")


def _shape_text(v) -> str:
    if v.kind == "array":
        return str(L.ArrayShape(v.element, v.dims))
    if v.kind == "tuple":
        return f"tuple({len(v.elements or ())})"
    return v.element or v.kind


def _fmt(layout) -> str:
    return L.format_layout(layout)


def build_data(graph: Graph, assignment: Assignment, explanation=None, title: str = "",
               input_name: str | None = None) -> dict[str, Any]:
    """Everything the page needs, as plain JSON-able lists."""
    from .explain import rule_text, source_rule, value_bytes

    g, a = graph, assignment
    fixloc = (lambda s: _LOC_DASH.sub(lambda m: f"{input_name}:{m.group(1)}:{m.group(2)}", s)) \
        if input_name else (lambda s: s)
    trace = a.trace or []
    ops = _Interner()
    lays = _Interner()
    rules = _Interner()
    notes = _Interner()
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
    total = sum(size[t] for t in tops)
    expand_default = total <= BIG_MODULE

    comps_out = []
    placed: dict[int, tuple[int, int]] = {}
    for c in g.comps:
        if c.id not in size:  # declarations: nothing to draw
            comps_out.append([c.name, c.kind, -2, 0, 1 if c.is_entry else 0, []])
            continue
        placed.update(layout_comp(g, c.id))
        comps_out.append([c.name, c.kind, home.get(c.id, -1), size[c.id], 1 if c.is_entry else 0,
                          list(c.instrs)])
    instrs_out = []
    for ins in g.instrs:
        layer, slot = placed.get(ins.id, (0, 0))
        hosted = [x for x in ins.callees if home.get(x) == ins.id]
        group_size = sum(size.get(x, 0) for x in hosted)
        extra = ins.attrs.get("number", -1) if ins.op == "parameter" else -1
        instrs_out.append([ops(ins.op), ins.comp, fixloc(ins.loc), ins.results, ins.operands,
                           ins.captures, ins.callees, layer, slot, extra,
                           1 if hosted and expand_default and group_size <= EXPAND_LIMIT else 0])
    values_out = []
    for v in g.values:
        values_out.append([_shape_text(v), v.producer, v.index, v.buffer, 1 if v.is_array else 0, v.rank])

    # Facts: every Origin the trace mentions, ancestors included.
    fact_ids: dict[int, int] = {}
    facts: list[int] = []
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
            parent = -1 if node.parent is None else fact_ids[id(node.parent)]
            kind = _KINDS.get(node.kind, 2)
            if kind == 2:
                lay = ", ".join(_fmt(x) if x is not None else "free" for x in node.layout)
                t0, t1 = node.target[0], -1
            else:
                lay = _fmt(node.layout)
                t0 = node.target[0]
                t1 = node.target[1] if kind == 1 else -1
            flags = (1 if node.mandatory else 0) | (2 if node.dfs else 0)
            facts.extend([kind, t0, t1, lays(lay), node.priority, flags, node.round,
                          rules(node.rule), notes(node.note) if node.note else -1,
                          lays(_fmt(node.was)) if node.was is not None else -1, parent,
                          -1 if node.instr is None else node.instr])
            fact_ids[id(node)] = len(keep)
            keep.append(node)
        return fact_ids[id(f)]

    events: list[int] = []  # per pop: comp, fact, round, n derived, derived...
    for ev in trace:
        events.append(ev.comp)
        events.append(ev.round)
        events.append(fact(ev.constraint))
        events.append(len(ev.derived))
        events.extend(fact(d) for d in ev.derived)
    plans = plan_calls(trace)
    calls = [[p.start, p.seeds] for p in plans]

    final = [lays(_fmt(x)) if x is not None else -1 for x in a.layouts]
    # Copies: one per inserted copy (explain's order is copy_groups' order).
    groups = copy_groups(a)
    copies = []
    reports = explanation.copies if explanation is not None else [None] * len(groups)
    by_reason: dict[str, tuple[int, int]] = {}
    for group, report in zip(groups, reports):
        edges = [[e.consumer, e.operand] for e in group.edges]
        v = g.values[group.value]
        src = a.layouts[v.id] or ()
        if report is not None:
            nbytes, total, trips, reason = report.bytes, report.total_bytes, report.loop_trips, report.reason
            text = fixloc(report.explain())
        else:  # no explanation given: what the assignment alone tells
            nbytes, total, trips, reason = value_bytes(v), None, [], source_rule(group.edges[0].demand)
            text = "(no explanation: pass explain(assignment) to render_trace_html)"
        n, b = by_reason.get(reason, (0, 0))
        by_reason[reason] = (n + 1, b + (nbytes or 0))  # None: a dynamic shape's unknown size
        copies.append([group.value, lays(_fmt(src)), lays(_fmt(group.dst)), nbytes,
                       total if total is not None else -1, trips, reason, edges, text,
                       str(L.ArrayShape(v.element, v.dims))])
    entry = g.comps[g.entry]
    params = []
    costs = {p.index: p for p in explanation.parameters} if explanation is not None else {}
    for i, p in enumerate(entry.params):
        v = g.values[g.instrs[p].results[0]]
        mode = g.entry_param_modes[i] if i < len(g.entry_param_modes) else None
        pinned = v.is_array and (isinstance(mode, tuple) or (mode is None and a.entry_mode == "default"))
        lay = a.entry_params[i] if i < len(a.entry_params) else None
        cost = costs.get(i)
        params.append([p, v.id, lays(_fmt(lay)) if lay is not None else -1, 1 if pinned else 0,
                       cost.copies_if_free if cost and cost.copies_if_free is not None else None,
                       cost.bytes_if_free if cost and cost.bytes_if_free is not None else None])
    results = []
    root = g.instrs[entry.root] if entry.root >= 0 else None
    for i, lay in enumerate(a.entry_results):
        v = g.values[root.operands[i]] if root is not None else None
        mode = g.entry_result_modes[i] if i < len(g.entry_result_modes) else None
        pinned = v is not None and v.is_array and (isinstance(mode, tuple)
                                                   or (mode is None and a.entry_mode == "default"))
        results.append([v.id if v is not None else -1, lays(_fmt(lay)) if lay is not None else -1,
                        1 if pinned else 0])
    by_reason_out = [[r, rule_text(r), n, b] for r, (n, b) in
                     sorted(by_reason.items(), key=lambda kv: (-kv[1][0], kv[0]))]
    return {
        "v": 1,
        "title": title,
        "target": a.target.name,
        "entryMode": a.entry_mode,
        "entry": g.entry,
        "tops": tops,
        "ops": ops.items,
        "layouts": lays.items,
        "rules": rules.items,
        "ruleText": [rule_text(r) for r in rules.items],
        "notes": notes.items,
        "comps": comps_out,
        "instrs": instrs_out,
        "values": values_out,
        "facts": facts,
        "events": events,
        "calls": calls,
        "final": final,
        "copies": copies,
        "params": params,
        "results": results,
        "byReason": by_reason_out,
        "totalBytes": sum(c[3] for c in copies),
        "rounds": a.rounds,
    }


def _script_json(data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True, sort_keys=False)
    # Safe inside <script>: no "</script", no "<!--".
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_trace_html(graph: Graph, assignment: Assignment, explanation=None,
                      title: str = "stablehlo-layout trace", *, input_name: str | None = None) -> str:
    """The whole page as one string (deterministic: same input, same bytes).

    ``explanation`` is ``explain(assignment)``, whose text each copy shows
    when clicked; with None the copies are drawn from the assignment alone
    (no text, no parameter costs).  ``input_name`` replaces a parsed
    buffer's ``-`` in locations, as the CLI does for its text.
    """
    if assignment.trace is None:
        raise ValueError("the assignment carries no trace: run analyze(..., trace=True)")
    data = build_data(graph, assignment, explanation, title, input_name)
    return (_PAGE.replace("%TITLE%", _esc(title))
            .replace("%CSS%", _CSS)
            .replace("%JS%", _JS)
            .replace("%DATA%", _script_json(data)))


def write_trace_html(graph: Graph, assignment: Assignment, explanation, path: str, title: str,
                     *, input_name: str | None = None) -> None:
    """Write ``render_trace_html(...)`` to ``path`` (UTF-8) through ``output.write_output``."""
    from .output import write_output

    text = render_trace_html(graph, assignment, explanation, title, input_name=input_name)
    write_output(path, text.encode("utf-8"))


# --- the page ------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%TITLE%</title>
<style>%CSS%</style>
</head>
<body>
<header id="top">
  <h1>%TITLE%</h1>
  <div id="controls" role="group" aria-label="step through the worklist">
    <button id="b-first" title="first (Home)" aria-label="first step">&laquo; first</button>
    <button id="b-prev" title="back (Left arrow)" aria-label="previous step">&#x25C0; back</button>
    <button id="b-next" title="next (Right arrow)" aria-label="next step">next &#x25B6;</button>
    <button id="b-last" title="last (End)" aria-label="last step">last &raquo;</button>
    <input id="slider" type="range" min="0" max="0" value="0" aria-label="step">
    <span id="stepno" aria-live="polite"></span>
  </div>
  <div id="viewctl">
    <button id="z-out" aria-label="zoom out">&minus;</button>
    <button id="z-in" aria-label="zoom in">+</button>
    <button id="z-fit" aria-label="fit">fit</button>
    <button id="g-expand" aria-label="expand all groups">expand all</button>
    <button id="g-collapse" aria-label="collapse all groups">collapse all</button>
    <label><input id="follow" type="checkbox" checked> follow the pop</label>
  </div>
</header>
<main>
  <div id="graphwrap">
    <div id="view"><div id="sizer"></div></div>
    <svg id="svg" role="img" aria-label="dataflow graph">
      <defs>
        <pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
          <rect width="6" height="6" fill="#eef1f7"/><line x1="0" y1="0" x2="0" y2="6" stroke="#8a94ad" stroke-width="2"/>
        </pattern>
        <pattern id="dots" width="5" height="5" patternUnits="userSpaceOnUse">
          <rect width="5" height="5" fill="#fff7e0"/><circle cx="2.5" cy="2.5" r="1" fill="#c9a23a"/>
        </pattern>
        <marker id="arr" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">
          <path d="M0,0 L8,4 L0,8 z" fill="#7b8296"/>
        </marker>
      </defs>
      <g id="world"></g>
    </svg>
  </div>
  <aside id="panel">
    <section id="s-step" aria-label="current step">
      <div id="where"></div>
      <h2>Popped</h2>
      <div id="pop" class="line"></div>
      <div id="badges"></div>
      <div id="origin"></div>
      <h2>Derived <span id="nderived"></span></h2>
      <ol id="derived" class="lines"></ol>
      <h2>Layouts changed <span id="nchanged"></span></h2>
      <ul id="changed" class="lines"></ul>
      <h2>Deque <span id="dsize"></span></h2>
      <div class="dq"><b>front</b> (popped next, in order)<ol id="dfront" class="lines"></ol></div>
      <div class="dq"><b>back</b> (the last three, the very back last)<ol id="dback" class="lines"></ol></div>
    </section>
    <section id="s-copies" aria-label="copies">
      <h2>Copies</h2>
      <ul id="copylist" class="lines"></ul>
      <div id="explainbox" hidden>
        <h3 id="explaintitle"></h3>
        <button id="explainclose" aria-label="close explanation">close</button>
        <pre id="explain"></pre>
      </div>
    </section>
    <section id="s-summary" aria-label="summary">
      <h2>Summary</h2>
      <div id="summary"></div>
    </section>
  </aside>
</main>
<script type="application/json" id="data">%DATA%</script>
<script>%JS%</script>
</body>
</html>
"""

_CSS = r"""
*{box-sizing:border-box}
html,body{margin:0;height:100%;overflow:hidden;font:13px/1.35 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1d2230;background:#fafbfc}
header{display:flex;flex-wrap:wrap;align-items:center;gap:6px 16px;padding:6px 10px;border-bottom:1px solid #d5d9e2;background:#fff}
h1{font-size:15px;margin:0 8px 0 0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:30vw}
h2{font-size:13px;margin:10px 0 4px;border-bottom:1px solid #e1e4ea}
h3{font-size:13px;margin:6px 0;display:inline-block}
button{font:inherit;padding:2px 8px;border:1px solid #aab1c2;border-radius:4px;background:#f4f6fa;cursor:pointer}
button:hover{background:#e8ecf4}
button:focus-visible,input:focus-visible{outline:2px solid #3564c4;outline-offset:1px}
#controls,#viewctl{display:flex;align-items:center;gap:6px}
#slider{width:min(32vw,420px)}
#stepno{font-variant-numeric:tabular-nums;min-width:12em}
body{display:flex;flex-direction:column;height:100vh}
header{flex:none}
main{display:flex;flex:1;min-height:0}
#graphwrap{position:relative;flex:1;min-width:0;background:#fdfdfe}
#view{position:absolute;inset:0;overflow:auto}
#sizer{position:relative}
#svg{position:absolute;left:0;top:0;pointer-events:none;font:11px ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
#svg .n,#svg .copy,#svg .tog{pointer-events:auto;cursor:pointer}
#panel{width:460px;max-width:45vw;overflow:auto;border-left:1px solid #d5d9e2;background:#fff;padding:4px 10px 20px}
.line,.lines li{font:11.5px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word}
.lines{margin:0;padding-left:18px}
.lines li{margin:1px 0}
.lines li.click{cursor:pointer}
.lines li.click:hover{background:#eef2fa}
#pop{padding:4px 6px;border:2px solid #1d2230;border-radius:4px;background:#fff7e0}
#where{font-weight:600;margin-top:4px}
#badges{margin:4px 0;display:flex;flex-wrap:wrap;gap:4px}
.badge{display:inline-block;border:1px solid #8a94ad;border-radius:3px;padding:0 5px;font-size:11.5px;background:#f4f6fa}
.badge.m{border-width:2px;font-weight:700}
#origin{font-size:12px}
#origin ol{margin:2px 0;padding-left:18px}
.dq{margin:2px 0}
.muted{color:#5b6275}
table{border-collapse:collapse;margin:4px 0;font-size:12px}
td,th{border:1px solid #e1e4ea;padding:2px 6px;text-align:left;vertical-align:top}
pre#explain{white-space:pre-wrap;font:11.5px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;background:#f7f8fb;border:1px solid #d5d9e2;padding:6px;margin:4px 0}
#explainbox{border:2px solid #b3261e;border-radius:4px;padding:4px 6px;margin-top:6px}
#explainclose{float:right}
/* graph */
.n rect.bg{fill:#fff;stroke:#7b8296;stroke-width:1}
.n.param rect.bg{fill:#f3f6fb}
.n.pinned rect.bg{fill:url(#hatch)}
.n.root rect.bg{fill:#f1f1f1}
.n.group rect.bg{fill:#f6f3fb}
.n.derived rect.bg{stroke:#3564c4;stroke-width:2;stroke-dasharray:5 3}
.n.changed rect.bg{fill:url(#dots)}
.n.popped rect.bg{stroke:#1d2230;stroke-width:3.5;stroke-dasharray:none}
.n.focus rect.bg{stroke:#b3261e;stroke-width:3}
.n text{fill:#1d2230}
.n text.op{font-weight:700}
.n text.chg{font-weight:700}
.tag{font-weight:700;font-size:10.5px}
.tag.pop{fill:#1d2230}
.tag.der{fill:#2b4f9e}
.tag.pin{fill:#3a4258}
.box{fill:none;stroke:#a79bc4;stroke-width:1.2;stroke-dasharray:6 3}
.boxt{fill:#4b3f72;font-weight:700}
.e{fill:none;stroke:#9aa1b3;stroke-width:1.1}
.e.want{stroke:#b3261e;stroke-width:1.6;stroke-dasharray:4 3}
.e.hot{stroke:#1d2230;stroke-width:2.4}
.e.cp{stroke:#b3261e;stroke-width:2.6;stroke-dasharray:7 3}
.wl{fill:#b3261e;font-weight:700}
.copy rect{fill:#fff;stroke:#b3261e;stroke-width:2}
.copy text{fill:#b3261e;font-weight:700}
.copy.sel rect{fill:#fde8e6;stroke-width:3}
.tog{fill:#4b3f72;font-weight:700}
.ov{fill:#c9cfdc;stroke:#7b8296;stroke-width:.5}
"""

_JS = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const NI = D.instrs.length, NV = D.values.length, NF = D.facts.length / 12;
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
// instr: [op, comp, loc, results, operands, captures, callees, layer, slot, number, expanded]
const I_OP = 0, I_COMP = 1, I_LOC = 2, I_RES = 3, I_OPS = 4, I_CAP = 5, I_CALLEES = 6, I_LAYER = 7, I_SLOT = 8, I_NUM = 9, I_EXP = 10;
// value: [shape, producer, index, buffer, isArray, rank]
// comp: [name, kind, home, size, isEntry, instrs]
// fact (12 ints): kind, t0, t1, layout, priority, flags, round, rule, note, was, parent, instr
const F = D.facts;
const KIND = ["buffer", "operand", "result"];
const opName = (i) => D.ops[D.instrs[i][I_OP]];
const fKind = (f) => F[f * 12], fT0 = (f) => F[f * 12 + 1], fT1 = (f) => F[f * 12 + 2], fLay = (f) => F[f * 12 + 3];
const fPrio = (f) => F[f * 12 + 4], fMand = (f) => (F[f * 12 + 5] & 1) !== 0, fDfs = (f) => (F[f * 12 + 5] & 2) !== 0;
const fRound = (f) => F[f * 12 + 6], fRule = (f) => D.rules[F[f * 12 + 7]], fRuleText = (f) => D.ruleText[F[f * 12 + 7]];
const fNote = (f) => F[f * 12 + 8] < 0 ? "" : D.notes[F[f * 12 + 8]], fWas = (f) => F[f * 12 + 9], fParent = (f) => F[f * 12 + 10];
const fInstr = (f) => F[f * 12 + 11];

// --- words, as explain.py says them ---------------------------------------
function compLabel(c) { const k = D.comps[c]; return k[4] ? "@" + k[0] : k[0]; }
function describeValue(v) {
  const val = D.values[v], ins = D.instrs[val[1]], op = D.ops[ins[I_OP]];
  if (op === "parameter") return "parameter " + ins[I_NUM] + " of " + compLabel(ins[I_COMP]);
  const where = ins[I_LOC] ? " at " + ins[I_LOC] : "";
  const index = ins[I_RES].length > 1 ? " #" + val[2] : "";
  return "result" + index + " of " + op + where;
}
function describeUse(i, n) {
  const ins = D.instrs[i], op = D.ops[ins[I_OP]];
  if (op === "root") return "result " + n + " of " + compLabel(ins[I_COMP]);
  const where = ins[I_LOC] ? " at " + ins[I_LOC] : "";
  if (n >= ins[I_OPS].length) return "a value read inside a region of " + op + where;
  return "operand " + n + " of " + op + where;
}
function subject(f) {
  const k = fKind(f);
  if (k === 0) return describeValue(fT0(f));
  if (k === 1) return describeUse(fT0(f), fT1(f));
  return "results of " + compLabel(fT0(f));
}
const lay = (n) => n < 0 ? "unset" : D.layouts[n];
function popLine(step) {  // render_trace's line for pop `step` (1-based)
  const f = evFact[step - 1];
  return "pop " + step + ": " + subject(f) + " = " + D.layouts[fLay(f)] + "  [" + KIND[fKind(f)] + "; " + fRule(f) + "; " +
    (fMand(f) ? "mandatory" : "derived") + ", " + (fDfs(f) ? "dfs" : "bfs") + ", priority " + fPrio(f) + "]";
}
function derivedLine(d) {
  const was = fWas(d) >= 0 ? " (was " + D.layouts[fWas(d)] + ")" : "";
  return "+ " + subject(d) + " = " + D.layouts[fLay(d)] + was + "  [" + KIND[fKind(d)] + "; " + fRule(d) + "; " +
    (fMand(d) ? "mandatory" : "derived") + ", priority " + fPrio(d) + "]";
}
function factShort(f) {
  return subject(f) + " = " + D.layouts[fLay(f)] + "  [" + KIND[fKind(f)] + "; " + fRule(f) + "; " +
    (fMand(f) ? "mandatory" : "derived") + ", " + (fDfs(f) ? "dfs" : "bfs") + ", priority " + fPrio(f) + "]";
}
function header(step) {
  const c = evComp[step - 1], k = D.comps[c];
  return "round " + evRound[step - 1] + ", current priority " + evRound[step - 1] + ": " + (k[1] === "func" ? "@" + k[0] : k[0]);
}

// --- the trace ---------------------------------------------------------------
const NE = (() => { let n = 0, p = 0; const E = D.events; while (p < E.length) { p += 4 + E[p + 3]; n++; } return n; })();
const evComp = new Int32Array(NE), evRound = new Int32Array(NE), evFact = new Int32Array(NE), evD0 = new Int32Array(NE), evDn = new Int32Array(NE);
(() => { let p = 0; const E = D.events; for (let i = 0; i < NE; i++) { evComp[i] = E[p]; evRound[i] = E[p + 1]; evFact[i] = E[p + 2]; evDn[i] = E[p + 3]; evD0[i] = p + 4; p += 4 + E[p + 3]; } })();
const derivedOf = (i) => D.events.slice(evD0[i], evD0[i] + evDn[i]);
const callAt = new Map(); const seedStep = new Uint8Array(NE);
for (const [start, seeds] of D.calls) { callAt.set(start, seeds); for (const s of seeds) seedStep[s] = 1; }
const LAST = NE + 1;  // step 0: before the first pop; 1..NE: after pop k; NE+1: the end state

// State: buffer layouts (per value id, only buffers used), operand demands.
let bufLay = new Int32Array(NV).fill(-1);
let opDem = new Map();  // "i,n" -> layout index
let dqFront = [], dqSeeds = [], dqSeedHead = 0, dqBack = [], dqBackHead = 0;
let step = 0, stepChanged = [];  // [value, before, after]
let curRound = -1;

function applyFact(f, changed) {
  const k = fKind(f);
  if (k === 0) {
    const b = fT0(f), before = bufLay[b];
    if (before !== fLay(f)) { bufLay[b] = fLay(f); if (changed) changed.push([b, before, fLay(f), f]); }
  } else if (k === 1) opDem.set(fT0(f) + "," + fT1(f), fLay(f));
}
function reset() {
  bufLay.fill(-1); opDem = new Map(); dqFront = []; dqSeeds = []; dqSeedHead = 0; dqBack = []; dqBackHead = 0; step = 0; curRound = -1; stepChanged = [];
}
function advance() {  // apply pop number step+1
  const i = step, changed = [];
  if (evRound[i] !== curRound) { bufLay.fill(-1); opDem = new Map(); curRound = evRound[i]; }
  const seeds = callAt.get(i);
  if (seeds !== undefined) {
    dqFront = []; dqBack = []; dqBackHead = 0; dqSeedHead = 0;
    dqSeeds = seeds.map((s) => evFact[s]);
    // What was set before the run began: the seeds as first set.
    for (const s of seeds) if (fParent(evFact[s]) < 0) applyFact(evFact[s], changed);
  }
  if (seedStep[i]) { if (dqSeedHead < dqSeeds.length) dqSeedHead++; }
  else if (dqFront.length) dqFront.pop();
  else if (dqBackHead < dqBack.length) dqBackHead++;
  applyFact(evFact[i], changed);
  for (let p = evD0[i]; p < evD0[i] + evDn[i]; p++) {
    const d = D.events[p];
    applyFact(d, changed);
    if (fDfs(d)) dqFront.push(d); else dqBack.push(d);
  }
  step++;
  stepChanged = changed;
}
function dequeSize() { return dqFront.length + dqSeeds.length - dqSeedHead + dqBack.length - dqBackHead; }
function dequeFront(n) {
  const out = [];
  for (let k = dqFront.length - 1; k >= 0 && out.length < n; k--) out.push(dqFront[k]);
  for (let k = dqSeedHead; k < dqSeeds.length && out.length < n; k++) out.push(dqSeeds[k]);
  for (let k = dqBackHead; k < dqBack.length && out.length < n; k++) out.push(dqBack[k]);
  return out;
}
function dequeBack(n) {  // last first
  const out = [];
  for (let k = dqBack.length - 1; k >= dqBackHead && out.length < n; k--) out.push(dqBack[k]);
  for (let k = dqSeeds.length - 1; k >= dqSeedHead && out.length < n; k--) out.push(dqSeeds[k]);
  for (let k = 0; k < dqFront.length && out.length < n; k++) out.push(dqFront[k]);
  return out;
}
function goStep(k) {
  k = Math.max(0, Math.min(LAST, k | 0));
  const target = Math.min(k, NE);
  if (target < step || (step === 0 && target === 0)) reset();
  while (step < target) advance();
  shown = k;
  update();
}
let shown = 0;

// --- layout of the picture (sizes here; layers and slots came from Python) ---
const NW = 190, LH = 14, PADY = 6, GAPX = 26, GAPY = 48, BOXPAD = 12, BOXTITLE = 18, MAXLINES = 4;
const pinnedParamIds = new Set(D.params.filter((p) => p[3]).map((p) => p[0]));
const pinnedParam = pinnedParamIds;
const expanded = new Uint8Array(NI);
for (let i = 0; i < NI; i++) expanded[i] = D.instrs[i][I_EXP];
const hosted = (i) => D.instrs[i][I_CALLEES].filter((c) => D.comps[c][2] === i);
const isGroup = (i) => hosted(i).length > 0;
function nodeLines(i) {
  const ins = D.instrs[i], op = D.ops[ins[I_OP]];
  if (op === "root") return Math.max(1, Math.min(ins[I_OPS].length, MAXLINES));
  let n = Math.min(ins[I_RES].length, MAXLINES) + (ins[I_RES].length > MAXLINES ? 1 : 0);
  if (isGroup(i) || ins[I_CALLEES].length) n += 1;
  return n;
}
// Width: enough for the longest line (monospace), within bounds.
const CHW = 6.7;
const nodeW = new Float64Array(NI);
for (let i = 0; i < NI; i++) {
  const ins = D.instrs[i], op = D.ops[ins[I_OP]];
  let n = (op.startsWith("stablehlo.") ? op.length - 10 : op.length) + (pinnedParamIds.has(i) ? 11 : 0);
  if (op === "root") n = Math.max(n, 22);
  const vals = op === "root" ? ins[I_OPS] : ins[I_RES];
  for (let k = 0; k < Math.min(vals.length, MAXLINES); k++) {
    const v = D.values[vals[k]];
    n = Math.max(n, v[0].length + (v[4] ? 2 * Math.max(v[5], 1) + 3 : 0) + 4);
  }
  if (ins[I_CALLEES].length) n = Math.max(n, 32);
  nodeW[i] = Math.max(150, Math.min(460, Math.ceil(n * CHW + 14)));
}
let posX, posY, posW, posH, visList, boxes, edges, rep, worldW, worldH;
function layoutComp(c, ox, oy) {  // place computation c's nodes at (ox, oy); returns [w, h]
  const list = D.comps[c][5];
  const rows = [];
  for (const i of list) { const L = D.instrs[i][I_LAYER]; (rows[L] || (rows[L] = [])).push(i); }
  // sizes first (groups lay out their insides at 0,0 and are shifted later)
  const sz = new Map();
  for (const i of list) {
    if (expanded[i] && isGroup(i)) sz.set(i, measureGroup(i));
    else sz.set(i, [nodeW[i], 2 * PADY + LH * (1 + nodeLines(i))]);
  }
  let y = oy, w = 0;
  for (const row of rows) {
    if (!row) continue;
    row.sort((a, b) => D.instrs[a][I_SLOT] - D.instrs[b][I_SLOT]);
    let x = ox, rowH = 0;
    for (const i of row) {
      const s = sz.get(i);
      x = Math.max(x, ox + D.instrs[i][I_SLOT] * (NW + GAPX));
      placeNode(i, x, y, s[0], s[1]);
      x += s[0] + GAPX; rowH = Math.max(rowH, s[1]);
    }
    w = Math.max(w, x - GAPX - ox); y += rowH + GAPY;
  }
  return [Math.max(w, NW), Math.max(y - GAPY - oy, 20)];
}
const groupHead = (i) => 2 * PADY + LH * (1 + nodeLines(i));
function measureGroup(i) {  // lay out once at 0,0 into a scratch, report size
  let w = 0, h = 0;
  for (const c of hosted(i)) { const s = compSize(c); w += s[0] + 2 * BOXPAD + GAPX; h = Math.max(h, s[1]); }
  return [Math.max(NW, w - GAPX + 2 * BOXPAD), h + 2 * BOXPAD + BOXTITLE + groupHead(i)];
}
const compSizeCache = new Map();
function compSize(c) {
  // size of a computation box's content without placing it
  const key = c; if (compSizeCache.has(key)) return compSizeCache.get(key);
  const list = D.comps[c][5]; const rows = [];
  for (const i of list) { const L = D.instrs[i][I_LAYER]; (rows[L] || (rows[L] = [])).push(i); }
  let y = 0, w = 0;
  for (const row of rows) {
    if (!row) continue;
    row.sort((a, b) => D.instrs[a][I_SLOT] - D.instrs[b][I_SLOT]);
    let x = 0, rowH = 0;
    for (const i of row) {
      const s = (expanded[i] && isGroup(i)) ? measureGroup(i) : [nodeW[i], 2 * PADY + LH * (1 + nodeLines(i))];
      x = Math.max(x, D.instrs[i][I_SLOT] * (NW + GAPX));
      x += s[0] + GAPX; rowH = Math.max(rowH, s[1]);
    }
    w = Math.max(w, x - GAPX); y += rowH + GAPY;
  }
  const r = [Math.max(w, NW), Math.max(y - GAPY, 20)];
  compSizeCache.set(key, r); return r;
}
function placeNode(i, x, y, w, h) {
  posX[i] = x; posY[i] = y; posW[i] = w; posH[i] = h; visList.push(i);
  if (expanded[i] && isGroup(i)) {
    let bx = x + BOXPAD; const by = y + groupHead(i);
    for (const c of hosted(i)) {
      const s = compSize(c);
      boxes.push([c, bx, by, s[0] + 2 * BOXPAD, s[1] + 2 * BOXPAD + BOXTITLE]);
      layoutComp(c, bx + BOXPAD, by + BOXTITLE + BOXPAD);
      bx += s[0] + 2 * BOXPAD + GAPX;
    }
  }
}
function relayout() {
  compSizeCache.clear();
  posX = new Float64Array(NI).fill(NaN); posY = new Float64Array(NI); posW = new Float64Array(NI); posH = new Float64Array(NI);
  visList = []; boxes = [];
  let x = 0; worldH = 0;
  for (const c of D.tops) {
    const s = compSize(c);
    boxes.push([c, x, 0, s[0] + 2 * BOXPAD, s[1] + 2 * BOXPAD + BOXTITLE]);
    layoutComp(c, x + BOXPAD, BOXTITLE + BOXPAD);
    x += s[0] + 2 * BOXPAD + 60; worldH = Math.max(worldH, s[1] + 2 * BOXPAD + BOXTITLE);
  }
  worldW = x;
  // nearest visible stand-in for every instruction
  rep = new Int32Array(NI);
  for (let i = 0; i < NI; i++) {
    let j = i, guard = 0;
    while (isNaN(posX[j]) && guard++ < 1000) { const h = D.comps[D.instrs[j][I_COMP]][2]; if (h < 0) break; j = h; }
    rep[i] = isNaN(posX[j]) ? -1 : j;
  }
  // edges between visible nodes of the same computation
  edges = [];
  for (const i of visList) {
    const ins = D.instrs[i], ops = ins[I_OPS].concat(ins[I_CAP]), k = ops.length;
    for (let n = 0; n < k; n++) {
      const v = ops[n], p = D.values[v][1];
      if (p === i || D.instrs[p][I_COMP] !== ins[I_COMP] || isNaN(posX[p])) continue;
      const x1 = posX[p] + posW[p] / 2, y1 = posY[p] + posH[p];
      const x2 = posX[i] + posW[i] * (n + 1) / (k + 1), y2 = posY[i];
      edges.push([x1, y1, x2, y2, v, i, n]);
    }
  }
  $("sizer").style.width = Math.ceil(worldW * scale + 40) + "px";
  $("sizer").style.height = Math.ceil(worldH * scale + 40) + "px";
}

// --- drawing (only what is in view) -----------------------------------------
let scale = 1, focusInstr = -1, selCopy = -1, frame = 0;
const view = $("view"), svg = $("svg"), world = $("world");
function schedule() { if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw(); }); }
function layoutOf(v) { const b = D.values[v][3]; return shown === LAST ? D.final[v] : bufLay[b]; }
function shapeLine(v) {
  const val = D.values[v], l = layoutOf(v);
  if (!val[4]) return val[0];
  return val[0] + " " + (l < 0 ? "{?}" : D.layouts[l]);
}
function draw() {
  const cw = view.clientWidth, ch = view.clientHeight;
  svg.setAttribute("width", cw); svg.setAttribute("height", ch);
  const sl = view.scrollLeft, st = view.scrollTop, M = 80;
  const x0 = sl / scale - M, y0 = st / scale - M, x1 = (sl + cw) / scale + M, y1 = (st + ch) / scale + M;
  const parts = [];
  const ev = shown >= 1 && shown <= NE ? shown - 1 : -1;
  const hot = new Map();  // instr -> class set
  const mark = (i, cls) => { const r = rep[i]; if (r < 0) return; (hot.get(r) || hot.set(r, new Set()).get(r)).add(cls); };
  const changedVals = new Set();
  let popEdge = "";
  const derivedEdges = new Set();
  if (ev >= 0) {
    const f = evFact[ev];
    targetInstrs(f).forEach((i) => mark(i, "popped"));
    if (fKind(f) === 1) popEdge = fT0(f) + "," + fT1(f);
    for (const d of derivedOf(ev)) { targetInstrs(d).forEach((i) => mark(i, "derived")); if (fKind(d) === 1) derivedEdges.add(fT0(d) + "," + fT1(d)); }
    for (const [b] of stepChanged) { changedVals.add(b); mark(D.values[b][1], "changed"); }
  }
  if (focusInstr >= 0) mark(focusInstr, "focus");
  const copyEdges = new Map();
  if (shown === LAST) D.copies.forEach((c, k) => { for (const [i, n] of c[7]) copyEdges.set(i + "," + n, k); });
  const many = visList.length > 0 && (x1 - x0) * (y1 - y0) / ((NW + GAPX) * 60) > 2500;
  const inView = (i) => !(posX[i] > x1 || posY[i] > y1 || posX[i] + posW[i] < x0 || posY[i] + posH[i] < y0);
  // open groups first (outer before inner), so their insides draw on top
  for (const i of visList) if (expanded[i] && isGroup(i) && inView(i)) parts.push(nodeSvg(i, hot.get(i), changedVals));
  // boxes
  for (const [c, bx, by, bw, bh] of boxes) {
    if (bx > x1 || by > y1 || bx + bw < x0 || by + bh < y0) continue;
    const k = D.comps[c];
    const title = (k[4] ? "@" + k[0] + " (entry function)" : (k[1] === "func" ? "@" + k[0] : k[0] + " (" + k[1] + ")")) + " \u2014 " + k[3] + " ops";
    // Each side clipped to the view: a dashed outline of a huge box is slow to paint.
    const cx0 = Math.max(bx, x0), cx1 = Math.min(bx + bw, x1), cy0 = Math.max(by, y0), cy1 = Math.min(by + bh, y1);
    const side = (ax, ay, bx2, by2) => parts.push('<path class="box" d="M' + ax + " " + ay + "L" + bx2 + " " + by2 + '"/>');
    if (by >= y0) side(cx0, by, cx1, by);
    if (by + bh <= y1) side(cx0, by + bh, cx1, by + bh);
    if (bx >= x0) side(bx, cy0, bx, cy1);
    if (bx + bw <= x1) side(bx + bw, cy0, bx + bw, cy1);
    if (by >= y0) parts.push('<text class="boxt" x="' + (bx + 6) + '" y="' + (by + 13) + '">' + esc(title) + "</text>");
  }
  // edges
  let ne = 0; const labels = [];
  for (const e of edges) {
    const ex0 = Math.min(e[0], e[2]), ex1 = Math.max(e[0], e[2]), ey0 = Math.min(e[1], e[3]), ey1 = Math.max(e[1], e[3]);
    if (ex0 > x1 || ey0 > y1 || ex1 < x0 || ey1 < y0) continue;
    if (++ne > 6000) break;
    const key = e[5] + "," + e[6];
    let cls = "e";
    const dem = shown === LAST ? undefined : opDem.get(key);
    const have = layoutOf(e[4]);
    const dy = Math.max(18, (e[3] - e[1]) * 0.45);
    if (copyEdges.has(key)) cls += " cp";
    else if (dem !== undefined && dem !== have) cls += " want";
    if (key === popEdge) cls += " hot";
    parts.push('<path class="' + cls + '" d="M' + e[0] + " " + e[1] + "C" + e[0] + " " + (e[1] + dy) + " " + e[2] + " " + (e[3] - dy) + " " + e[2] + " " + e[3] + '" marker-end="url(#arr)"/>');
    if (!many && dem !== undefined && (dem !== have || key === popEdge || derivedEdges.has(key)))
      labels.push('<text class="wl" x="' + (e[2] + 4) + '" y="' + (e[3] - 5) + '">' + (dem !== have ? "\u2260 " : "") + "wants " + esc(D.layouts[dem]) + "</text>");
    if (copyEdges.has(key)) {
      const k = copyEdges.get(key), c = D.copies[k];
      const mx = (e[0] + e[2]) / 2, my = (e[1] + e[3]) / 2;
      const text = "copy #" + (k + 1) + " \u00b7 " + fmtBytes(c[3]) + " " + D.layouts[c[1]] + "\u2192" + D.layouts[c[2]];
      const w = 7 * text.length + 12;
      const lx = mx + 8;  // beside the edge, never left of the picture
      labels.push('<g class="copy' + (selCopy === k ? " sel" : "") + '" data-copy="' + k + '" role="button" tabindex="0" aria-label="' + esc("explain " + text) + '"><rect x="' + lx + '" y="' + (my - 10) + '" width="' + w + '" height="20" rx="4"/><text x="' + (lx + 6) + '" y="' + (my + 4) + '">' + esc(text) + "</text></g>");
    }
  }
  parts.push(...labels);
  // nodes
  for (const i of visList) {
    const x = posX[i], y = posY[i], w = posW[i], h = posH[i];
    if (x > x1 || y > y1 || x + w < x0 || y + h < y0) continue;
    if (expanded[i] && isGroup(i)) continue;  // drawn above
    if (many) { parts.push('<rect class="ov" x="' + x + '" y="' + y + '" width="' + w + '" height="' + h + '"/>'); continue; }
    parts.push(nodeSvg(i, hot.get(i), changedVals));
  }
  world.setAttribute("transform", "translate(" + (-sl) + "," + (-st) + ") scale(" + scale + ")");
  world.innerHTML = parts.join("");
}
function fmtBytes(n) {
  const units = [["GiB", 1 << 30], ["MiB", 1 << 20], ["KiB", 1 << 10]];
  for (const [u, s] of units) if (n >= s && n % (s / 1024) === 0) { const v = n / s; return (v === Math.floor(v) ? v.toFixed(0) : v.toFixed(1)) + " " + u; }
  return n + " B";
}
function targetInstrs(f) {
  const k = fKind(f);
  if (k === 0) return [D.values[fT0(f)][1]];
  if (k === 1) return [fT0(f)];
  const root = D.comps[fT0(f)][5].find((i) => D.ops[D.instrs[i][I_OP]] === "root");
  return root === undefined ? [] : [root];
}
function nodeSvg(i, cls, changedVals) {
  const ins = D.instrs[i], op = D.ops[ins[I_OP]];
  const pinned = pinnedParam.has(i);
  let c = "n";
  if (op === "parameter") c += " param"; if (op === "root") c += " root"; if (isGroup(i)) c += " group"; if (pinned) c += " pinned";
  if (cls) for (const k of cls) c += " " + k;
  const s = [];
  s.push('<g class="' + c + '" data-i="' + i + '" transform="translate(' + posX[i] + "," + posY[i] + ')">');
  s.push('<title>' + esc(op + (ins[I_LOC] ? " at " + ins[I_LOC] : "")) + "</title>");
  s.push('<rect class="bg" width="' + posW[i] + '" height="' + posH[i] + '" rx="4"/>');
  let name = op.startsWith("stablehlo.") ? op.slice(10) : op;
  if (op === "parameter") name = "parameter " + ins[I_NUM];
  if (op === "root") name = D.comps[ins[I_COMP]][4] ? "return (entry results)" : "return";
  s.push('<text class="op" x="6" y="' + (PADY + 10) + '">' + esc(name) + (pinned ? "  [PINNED]" : "") + "</text>");
  let y = PADY + 10 + LH;
  if (op === "root") {
    const ops = ins[I_OPS];
    for (let n = 0; n < Math.min(ops.length, MAXLINES); n++) {
      s.push('<text x="6" y="' + y + '">' + esc("#" + n + " " + shapeLine(ops[n])) + "</text>");
      y += LH;
    }
  } else {
    const res = ins[I_RES];
    for (let n = 0; n < Math.min(res.length, MAXLINES); n++) {
      const v = res[n], ch = changedVals.has(D.values[v][3]);
      s.push('<text' + (ch ? ' class="chg"' : "") + ' x="6" y="' + y + '">' + esc((ch ? "\u0394 " : "") + (res.length > 1 ? "#" + n + " " : "") + shapeLine(v)) + "</text>");
      y += LH;
    }
    if (res.length > MAXLINES) { s.push('<text x="6" y="' + y + '">+' + (res.length - MAXLINES) + " more</text>"); y += LH; }
    const callees = ins[I_CALLEES];
    if (callees.length) {
      const own = hosted(i);
      if (own.length) {
        const n = own.reduce((a, c2) => a + D.comps[c2][3], 0);
        s.push('<text class="tog" data-tog="' + i + '" x="6" y="' + y + '">' + (expanded[i] ? "\u25be collapse" : "\u25b8 expand") + " " + own.length + " region" + (own.length > 1 ? "s" : "") + " (" + n + " ops)</text>");
      } else s.push('<text x="6" y="' + y + '">calls ' + esc(callees.map(compLabel).join(", ")) + " (drawn at its first call)</text>");
    }
  }
  if (cls && cls.has("popped")) s.push('<text class="tag pop" x="0" y="-4">\u25b6 POPPED</text>');
  else if (cls && cls.has("derived")) s.push('<text class="tag der" x="0" y="-4">+ DERIVED</text>');
  if (cls && cls.has("changed")) s.push('<text class="tag der" x="' + (posW[i] - 70) + '" y="-4">\u0394 CHANGED</text>');
  s.push("</g>");
  return s.join("");
}

// --- the side panel -----------------------------------------------------------
function li(text, onclick) {
  const e = document.createElement("li"); e.textContent = text;
  if (onclick) { e.className = "click"; e.tabIndex = 0; e.addEventListener("click", onclick); e.addEventListener("keydown", (k) => { if (k.key === "Enter") onclick(); }); }
  return e;
}
function fill(id, items) { const el = $(id); el.replaceChildren(...items); }
function update() {
  $("slider").value = shown;
  $("stepno").textContent = shown === 0 ? "step 0 / " + LAST + ": start" : shown === LAST ? "step " + LAST + " / " + LAST + ": end state" : "step " + shown + " / " + LAST + ": pop " + shown + " of " + NE;
  const ev = shown >= 1 && shown <= NE ? shown - 1 : -1;
  if (ev >= 0) {
    const f = evFact[ev];
    $("where").textContent = header(shown);
    $("pop").textContent = popLine(shown);
    const b = [KIND[fKind(f)], "priority " + fPrio(f), fMand(f) ? "mandatory" : "derived (not mandatory)", fDfs(f) ? "dfs (front)" : "bfs (back)", "round " + fRound(f), "rule: " + fRule(f)];
    $("badges").replaceChildren(...b.map((t, k) => { const e = document.createElement("span"); e.className = "badge" + (k === 2 && fMand(f) ? " m" : ""); e.textContent = t; return e; }));
    const o = $("origin"); o.replaceChildren();
    const why = document.createElement("div"); why.textContent = "why: " + fRuleText(f) + (fNote(f) ? " (" + fNote(f) + ")" : ""); o.appendChild(why);
    const ol = document.createElement("ol"); let p = fParent(f), n = 0;
    const od = document.createElement("div"); od.textContent = p < 0 ? "origin: a source (nothing before it)" : "origin (derived from, back to the source):"; o.appendChild(od);
    const link = (q) => li("\u2190 " + subject(q) + " = " + D.layouts[fLay(q)] + "  [" + fRule(q) + "; " + fRuleText(q) + "]", () => focusFact(q));
    while (p >= 0 && n < 5) { ol.appendChild(link(p)); p = fParent(p); n++; }
    if (p >= 0) {  // a long chain: skip to its source
      let src = p, k = 0; while (fParent(src) >= 0) { src = fParent(src); k++; }
      if (k > 0) ol.appendChild(li("\u2026 " + k + " more \u2026"));
      ol.appendChild(link(src));
    }
    o.appendChild(ol);
    const ds = derivedOf(ev);
    $("nderived").textContent = "(" + ds.length + ")";
    fill("derived", ds.map((d) => li(derivedLine(d), () => focusFact(d))));
    $("nchanged").textContent = "(" + stepChanged.length + ")";
    fill("changed", stepChanged.map(([v, a, b2]) => li("\u0394 " + describeValue(v) + ": " + lay(a) + " \u2192 " + lay(b2), () => focusInstr2(D.values[v][1]))));
    $("dsize").textContent = "(" + dequeSize() + " waiting)";
    const fr = dequeFront(3), bk = dequeBack(3).reverse();
    fill("dfront", fr.map((d) => li(factShort(d), () => focusFact(d))));
    fill("dback", dequeSize() > 3 ? bk.map((d) => li(factShort(d), () => focusFact(d))) : []);
  } else {
    $("where").textContent = shown === 0 ? "start: nothing popped yet (" + NE + " pops, " + D.rounds + " rounds)" : "end state: the layouts assigned, " + D.copies.length + " cop" + (D.copies.length === 1 ? "y" : "ies") + " inserted";
    $("pop").textContent = shown === 0 ? "(none)" : "(done: the worklist is empty)";
    $("badges").replaceChildren(); $("origin").replaceChildren();
    $("nderived").textContent = ""; $("nchanged").textContent = ""; $("dsize").textContent = "(0 waiting)";
    fill("derived", []); fill("changed", []); fill("dfront", []); fill("dback", []);
  }
  if ($("follow").checked && ev >= 0) { const t = targetInstrs(evFact[ev]); if (t.length) reveal(t[0], false); }
  schedule();
}
function focusFact(f) { const t = targetInstrs(f); if (t.length) focusInstr2(t[0]); }
function focusInstr2(i) { focusInstr = i; reveal(i, true); schedule(); }
function reveal(i, always) {
  // expand collapsed groups around i, then scroll it into view
  let j = i, changed = false, guard = 0;
  while (guard++ < 1000) { const h = D.comps[D.instrs[j][I_COMP]][2]; if (h < 0) break; if (!expanded[h]) { expanded[h] = 1; changed = true; } j = h; }
  if (changed) relayout();
  const x = posX[i] * scale, y = posY[i] * scale, w = posW[i] * scale, h = posH[i] * scale;
  const cw = view.clientWidth, ch = view.clientHeight;
  if (always || x < view.scrollLeft || y < view.scrollTop || x + w > view.scrollLeft + cw || y + h > view.scrollTop + ch) {
    view.scrollLeft = Math.max(0, x + w / 2 - cw / 2); view.scrollTop = Math.max(0, y + h / 2 - ch / 2);
  }
}
function showCopy(k) {
  selCopy = k; const c = D.copies[k];
  $("explainbox").hidden = false;
  $("explaintitle").textContent = "copy #" + (k + 1) + ": " + c[9] + " " + D.layouts[c[1]] + " \u2192 " + D.layouts[c[2]];
  $("explain").textContent = c[8];
  schedule();
}
function openCopy(k) {
  if (shown !== LAST) goStep(LAST);
  const c = D.copies[k]; const i = c[7][0][0];
  focusInstr = -1; reveal(i, true); showCopy(k);
  const key = c[7][0][0] + "," + c[7][0][1];
  const e = edges.find((e2) => e2[5] + "," + e2[6] === key);
  if (e) { view.scrollLeft = Math.max(0, (e[0] + e[2]) / 2 * scale - view.clientWidth / 2); view.scrollTop = Math.max(0, (e[1] + e[3]) / 2 * scale - view.clientHeight / 2); }
  $("explainbox").scrollIntoView({ block: "nearest" });
}
function summary() {
  const s = $("summary"); s.replaceChildren();
  const p = document.createElement("p");
  p.textContent = D.copies.length + " cop" + (D.copies.length === 1 ? "y" : "ies") + ", " + fmtBytes(D.totalBytes) + " moved per execution; target " + D.target + ", entry layouts " + D.entryMode + "; " + NE + " pops in " + D.rounds + " rounds.";
  s.appendChild(p);
  const table = (head, rows) => {
    const t = document.createElement("table"), tr = document.createElement("tr");
    for (const h of head) { const th = document.createElement("th"); th.textContent = h; tr.appendChild(th); }
    t.appendChild(tr);
    for (const r of rows) { const row = document.createElement("tr"); for (const x of r) { const td = document.createElement("td"); td.textContent = x; row.appendChild(td); } t.appendChild(row); }
    return t;
  };
  const h = (t) => { const e = document.createElement("h3"); e.textContent = t; return e; };
  s.appendChild(h("Copies by reason"));
  s.appendChild(table(["copies", "bytes", "reason"], D.byReason.map((r) => [String(r[2]), fmtBytes(r[3]), r[1] + " (" + r[0] + ")"])));
  s.appendChild(h("Entry parameters"));
  s.appendChild(table(["#", "shape", "layout", "pinned?", "if left free"], D.params.map((r, n) => [String(n), D.values[r[1]][0], lay(r[2]), r[3] ? "pinned" : "free",
    r[4] === null ? "\u2014" : (r[4] + " cop" + (Math.abs(r[4]) === 1 ? "y" : "ies") + ", " + (r[5] >= 0 ? "+" : "") + r[5] + " B")])));
  s.appendChild(h("Entry results"));
  s.appendChild(table(["#", "shape", "layout", "pinned?"], D.results.map((r, n) => [String(n), r[0] >= 0 ? D.values[r[0]][0] : "", lay(r[1]), r[2] ? "pinned" : "free"])));
  fill("copylist", D.copies.length ? D.copies.map((c, k) => li("copy #" + (k + 1) + ": " + c[9] + " " + D.layouts[c[1]] + " \u2192 " + D.layouts[c[2]] + ", " + fmtBytes(c[3]) +
    (c[4] >= 0 && c[5].length ? " (" + fmtBytes(c[4]) + " per execution)" : "") + " \u2014 " + describeValue(c[0]) + " \u2192 " + describeUse(c[7][0][0], c[7][0][1]), () => openCopy(k))) : [li("no copies")]);
}

// --- wiring ---------------------------------------------------------------------
$("slider").max = LAST;
$("b-first").onclick = () => goStep(0);
$("b-prev").onclick = () => goStep(shown - 1);
$("b-next").onclick = () => goStep(shown + 1);
$("b-last").onclick = () => goStep(LAST);
$("slider").addEventListener("input", (e) => goStep(+e.target.value));
document.addEventListener("keydown", (e) => {
  if (e.target && (e.target.tagName === "INPUT" && e.target.type === "range")) return;
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (e.key === "ArrowRight") { goStep(shown + 1); e.preventDefault(); }
  else if (e.key === "ArrowLeft") { goStep(shown - 1); e.preventDefault(); }
  else if (e.key === "Home") { goStep(0); e.preventDefault(); }
  else if (e.key === "End") { goStep(LAST); e.preventDefault(); }
});
const zoomTo = (s) => {
  const cx = (view.scrollLeft + view.clientWidth / 2) / scale, cy = (view.scrollTop + view.clientHeight / 2) / scale;
  scale = Math.max(0.05, Math.min(3, s)); relayout();
  view.scrollLeft = cx * scale - view.clientWidth / 2; view.scrollTop = cy * scale - view.clientHeight / 2; schedule();
};
$("z-in").onclick = () => zoomTo(scale * 1.25);
$("z-out").onclick = () => zoomTo(scale / 1.25);
$("z-fit").onclick = () => zoomTo(Math.min(view.clientWidth / (worldW + 40), view.clientHeight / (worldH + 40), 1.5));
$("g-expand").onclick = () => { for (let i = 0; i < NI; i++) if (isGroup(i)) expanded[i] = 1; relayout(); schedule(); };
$("g-collapse").onclick = () => { for (let i = 0; i < NI; i++) expanded[i] = 0; relayout(); schedule(); };
$("explainclose").onclick = () => { $("explainbox").hidden = true; selCopy = -1; schedule(); };
view.addEventListener("scroll", schedule);
window.addEventListener("resize", schedule);
svg.addEventListener("wheel", (e) => { view.scrollBy(e.deltaX, e.deltaY); e.preventDefault(); }, { passive: false });
svg.addEventListener("click", (e) => {
  const t = e.target.closest("[data-tog],[data-copy],.n");
  if (!t) return;
  if (t.dataset.tog !== undefined) { const i = +t.dataset.tog; expanded[i] = expanded[i] ? 0 : 1; relayout(); schedule(); return; }
  if (t.dataset.copy !== undefined) { showCopy(+t.dataset.copy); $("explainbox").scrollIntoView({ block: "nearest" }); return; }
  if (t.dataset.i !== undefined) { focusInstr = +t.dataset.i; schedule(); }
});
svg.addEventListener("keydown", (e) => { const t = e.target.closest && e.target.closest("[data-copy]"); if (t && e.key === "Enter") showCopy(+t.dataset.copy); });
// drag to pan
(() => { let drag = null;
  view.addEventListener("mousedown", (e) => { drag = [e.clientX, e.clientY, view.scrollLeft, view.scrollTop]; });
  window.addEventListener("mousemove", (e) => { if (drag) { view.scrollLeft = drag[2] - (e.clientX - drag[0]); view.scrollTop = drag[3] - (e.clientY - drag[1]); } });
  window.addEventListener("mouseup", () => { drag = null; });
})();
// test and debugging hooks (read-only)
window.traceText = () => {
  const out = []; let last = "";
  for (let s = 1; s <= NE; s++) {
    const h = header(s); if (h !== last) { out.push(h); last = h; }
    out.push("  " + popLine(s));
    for (const d of derivedOf(s - 1)) out.push("      " + derivedLine(d));
  }
  return out.join("\n") + "\n";
};
window.traceState = () => ({ step: shown, last: LAST, pops: NE, dequeSize: dequeSize(), front: dequeFront(1e9).map(factShort), drawn: world.querySelectorAll(".n").length, nodes: visList.length,
  groups: D.instrs.filter((_, i) => isGroup(i)).length, expanded: D.instrs.filter((_, i) => isGroup(i) && expanded[i]).length });
window.goStep = goStep;
relayout();
(() => {  // start zoomed to fit a small graph, at 1:1 for a big one
  const fit = Math.min(view.clientWidth / (worldW + 40), view.clientHeight / (worldH + 40));
  if (fit > 1) { scale = Math.min(1.5, fit); relayout(); }
  else if (fit > 0.6) { scale = fit; relayout(); }
})();
summary();
(() => {
  const m = /step=(end|\d+)/.exec(location.hash); const c = /copy=(\d+)/.exec(location.hash);
  const first = D.comps[D.entry][5][0];
  if (first !== undefined) reveal(first, false);  // start at the entry's first parameter
  goStep(m ? (m[1] === "end" ? LAST : +m[1]) : 0);
  if (c && D.copies[+c[1] - 1]) openCopy(+c[1] - 1);
})();
"""
