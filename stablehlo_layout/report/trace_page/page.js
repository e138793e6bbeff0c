"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
// Every record is a list whose fields Python names in D.schema (html.py's
// SCHEMA); C.<kind>.<field> is a field's position, read from there.
const C = {};
for (const [kind, names] of Object.entries(D.schema)) { C[kind] = {}; names.forEach((n, k) => { C[kind][n] = k; }); }
const IC = C.instr, VC = C.value, CC = C.comp, XC = C.copy, PC = C.param, EC = C.event, FC = C.fact;
const NI = D.instrs.length, NV = D.values.length, FW = D.schema.fact.length, NF = D.facts.length / FW;
// Wording: templates from explain.py (TRACE_WORDS), filled here; "{name}" is a field.
const say = (key, fields) => D.words[key].replace(/\{(\w+)\}/g, (_, k) => String(fields ? fields[k] : ""));
const F = D.facts;
const fget = (f, k) => F[f * FW + k];
const fKind = (f) => fget(f, FC.kind), fT0 = (f) => fget(f, FC.t0), fT1 = (f) => fget(f, FC.t1), fLay = (f) => fget(f, FC.layout);
const fPrio = (f) => fget(f, FC.priority), fMand = (f) => (fget(f, FC.flags) & 1) !== 0, fDfs = (f) => (fget(f, FC.flags) & 2) !== 0;
const fRound = (f) => fget(f, FC.round), fRule = (f) => D.rules[fget(f, FC.rule)], fRuleText = (f) => D.ruleText[fget(f, FC.rule)];
const fNote = (f) => fget(f, FC.note) < 0 ? "" : D.notes[fget(f, FC.note)], fWas = (f) => fget(f, FC.was), fParent = (f) => fget(f, FC.parent);
const subject = (f) => D.subjects[fget(f, FC.subject)];
const opName = (i) => D.ops[D.instrs[i][IC.op]];
const lay = (n) => n < 0 ? say("unset") : D.layouts[n];

// --- the trace's lines, in render_trace's words -----------------------------------
function factWords(f) {
  return { subject: subject(f), layout: D.layouts[fLay(f)], kind: D.kinds[fKind(f)], rule: fRule(f), priority: fPrio(f),
    strength: say(fMand(f) ? "mandatory" : "not-mandatory"), order: say(fDfs(f) ? "dfs" : "bfs"),
    was: fWas(f) >= 0 ? say("was", { layout: D.layouts[fWas(f)] }) : "" };
}
function popLine(step) { const w = factWords(evFact[step - 1]); w.n = step; return say("pop", w); }
const derivedLine = (d) => say("derived", factWords(d));
const factShort = (f) => say("fact", factWords(f));
function header(step) { return say("header", { round: evRound[step - 1], comp: D.comps[evComp[step - 1]][CC.label] }); }

// --- the trace ---------------------------------------------------------------
const NE = D.events.length;
const evComp = new Int32Array(NE), evRound = new Int32Array(NE), evFact = new Int32Array(NE);
D.events.forEach((e, i) => { evComp[i] = e[EC.comp]; evRound[i] = e[EC.round]; evFact[i] = e[EC.fact]; });
const derivedOf = (i) => D.events[i][EC.derived];
// Worklist runs as the engine recorded them: the first pop of each, and its initial deque.
const callAt = new Map();
for (const c of D.calls) callAt.set(c[C.call.start], c[C.call.seeds]);
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
    dqSeeds = seeds;
    // What was set before the run began: the seeds as first set.
    for (const s of seeds) if (fParent(s) < 0) applyFact(s, changed);
  }
  if (dqFront.length) dqFront.pop();
  else if (dqSeedHead < dqSeeds.length) dqSeedHead++;
  else if (dqBackHead < dqBack.length) dqBackHead++;
  applyFact(evFact[i], changed);
  for (const d of derivedOf(i)) {
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
const pinnedParamIds = new Set(D.params.filter((p) => p[PC.pinned]).map((p) => p[PC.instr]));
const pinnedParam = pinnedParamIds;
const expanded = new Uint8Array(NI);
for (let i = 0; i < NI; i++) expanded[i] = D.instrs[i][IC.expanded];
const hosted = (i) => D.instrs[i][IC.callees].filter((c) => D.comps[c][CC.home] === i);
const isGroup = (i) => hosted(i).length > 0;
function nodeLines(i) {
  const ins = D.instrs[i], op = D.ops[ins[IC.op]];
  if (op === "root") return Math.max(1, Math.min(ins[IC.operands].length, MAXLINES));
  let n = Math.min(ins[IC.results].length, MAXLINES) + (ins[IC.results].length > MAXLINES ? 1 : 0);
  if (isGroup(i) || ins[IC.callees].length) n += 1;
  return n;
}
// Width: enough for the longest line (monospace), within bounds.
const CHW = 6.7;
const nodeW = new Float64Array(NI);
for (let i = 0; i < NI; i++) {
  const ins = D.instrs[i], op = D.ops[ins[IC.op]];
  let n = (op.startsWith("stablehlo.") ? op.length - 10 : op.length) + (pinnedParamIds.has(i) ? 11 : 0);
  if (op === "root") n = Math.max(n, 22);
  const vals = op === "root" ? ins[IC.operands] : ins[IC.results];
  for (let k = 0; k < Math.min(vals.length, MAXLINES); k++) {
    const v = D.values[vals[k]];
    n = Math.max(n, v[VC.shape].length + (v[VC.array] ? 2 * Math.max(v[VC.rank], 1) + 3 : 0) + 4);
  }
  if (ins[IC.callees].length) n = Math.max(n, 32);
  nodeW[i] = Math.max(150, Math.min(460, Math.ceil(n * CHW + 14)));
}
let posX, posY, posW, posH, visList, boxes, edges, rep, worldW, worldH;
const nodeSize = (i) => (expanded[i] && isGroup(i)) ? measureGroup(i) : [nodeW[i], 2 * PADY + LH * (1 + nodeLines(i))];
// One computation's nodes in rows by layer, each row in slot order, a node at
// its slot or right of its left neighbour.  Returns the content's [w, h] and,
// given place(i, x, y, w, h), places every node with its top left at (ox, oy).
function arrange(c, ox, oy, place) {
  const rows = [];
  for (const i of D.comps[c][CC.instrs]) { const L = D.instrs[i][IC.layer]; (rows[L] || (rows[L] = [])).push(i); }
  let y = oy, w = 0;
  for (const row of rows) {
    if (!row) continue;
    row.sort((a, b) => D.instrs[a][IC.slot] - D.instrs[b][IC.slot]);
    let x = ox, rowH = 0;
    for (const i of row) {
      const s = nodeSize(i);
      x = Math.max(x, ox + D.instrs[i][IC.slot] * (NW + GAPX));
      if (place) place(i, x, y, s[0], s[1]);
      x += s[0] + GAPX; rowH = Math.max(rowH, s[1]);
    }
    w = Math.max(w, x - GAPX - ox); y += rowH + GAPY;
  }
  return [Math.max(w, NW), Math.max(y - GAPY - oy, 20)];
}
const layoutComp = (c, ox, oy) => arrange(c, ox, oy, placeNode);
const groupHead = (i) => 2 * PADY + LH * (1 + nodeLines(i));
function measureGroup(i) {  // lay out once at 0,0 into a scratch, report size
  let w = 0, h = 0;
  for (const c of hosted(i)) { const s = compSize(c); w += s[0] + 2 * BOXPAD + GAPX; h = Math.max(h, s[1]); }
  return [Math.max(NW, w - GAPX + 2 * BOXPAD), h + 2 * BOXPAD + BOXTITLE + groupHead(i)];
}
const compSizeCache = new Map();
function compSize(c) {  // a computation box's content size, without placing it
  if (!compSizeCache.has(c)) compSizeCache.set(c, arrange(c, 0, 0, null));
  return compSizeCache.get(c);
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
    while (isNaN(posX[j]) && guard++ < 1000) { const h = D.comps[D.instrs[j][IC.comp]][CC.home]; if (h < 0) break; j = h; }
    rep[i] = isNaN(posX[j]) ? -1 : j;
  }
  // edges between visible nodes of the same computation
  edges = [];
  for (const i of visList) {
    const ins = D.instrs[i], ops = ins[IC.operands].concat(ins[IC.captures]), k = ops.length;
    for (let n = 0; n < k; n++) {
      const v = ops[n], p = D.values[v][VC.producer];
      if (p === i || D.instrs[p][IC.comp] !== ins[IC.comp] || isNaN(posX[p])) continue;
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
function layoutOf(v) { const b = D.values[v][VC.buffer]; return shown === LAST ? D.final[v] : bufLay[b]; }
function shapeLine(v) {
  const val = D.values[v], l = layoutOf(v);
  if (!val[VC.array]) return val[VC.shape];
  return val[VC.shape] + " " + (l < 0 ? "{?}" : D.layouts[l]);
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
    for (const [b] of stepChanged) { changedVals.add(b); mark(D.values[b][VC.producer], "changed"); }
  }
  if (focusInstr >= 0) mark(focusInstr, "focus");
  const copyEdges = new Map();
  if (shown === LAST) D.copies.forEach((c, k) => { for (const [i, n] of c[XC.edges]) copyEdges.set(i + "," + n, k); });
  const many = visList.length > 0 && (x1 - x0) * (y1 - y0) / ((NW + GAPX) * 60) > 2500;
  const inView = (i) => !(posX[i] > x1 || posY[i] > y1 || posX[i] + posW[i] < x0 || posY[i] + posH[i] < y0);
  // open groups first (outer before inner), so their insides draw on top
  for (const i of visList) if (expanded[i] && isGroup(i) && inView(i)) parts.push(nodeSvg(i, hot.get(i), changedVals));
  // boxes
  for (const [c, bx, by, bw, bh] of boxes) {
    if (bx > x1 || by > y1 || bx + bw < x0 || by + bh < y0) continue;
    const title = D.comps[c][CC.title];
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
  // Copy labels are placed where they cover no other copy label and no node
  // in view: a model's copies bunch at the few ops (convolutions, dots) that
  // force layouts, and labels at their edges' midpoints would hide each other.
  const taken = [];
  for (const i of visList) {
    const x = posX[i], y = posY[i], w = posW[i], h = posH[i];
    if (x > x1 || y > y1 || x + w < x0 || y + h < y0) continue;
    if (expanded[i] && isGroup(i)) continue;
    taken.push([x, y, x + w, y + h]);
  }
  const nodeBoxes = taken.length;
  const overlaps = (r, from) => {
    for (let j = from; j < taken.length; j++) {
      const t = taken[j];
      if (r[0] < t[2] && t[0] < r[2] && r[1] < t[3] && t[1] < r[3]) return true;
    }
    return false;
  };
  const placeLabel = (lx, my, w) => {
    let fallback = null;  // the nearest spot that covers a node but no other label
    for (let k = 0; k < 24; k++) {  // 0, -22, +22, -44, +44, ... px from the edge's middle
      const y = my + (k % 2 ? 1 : -1) * Math.ceil(k / 2) * 22;
      const r = [lx, y - 10, lx + w, y + 10];
      if (!overlaps(r, 0)) { taken.push(r); return y; }
      if (fallback === null && !overlaps(r, nodeBoxes)) fallback = y;
    }
    const y = fallback === null ? my : fallback;
    taken.push([lx, y - 10, lx + w, y + 10]);
    return y;
  };
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
      labels.push('<text class="wl" x="' + (e[2] + 4) + '" y="' + (e[3] - 5) + '">' + esc(say(dem !== have ? "wants-other" : "wants", { layout: D.layouts[dem] })) + "</text>");
    if (copyEdges.has(key)) {
      const k = copyEdges.get(key), c = D.copies[k];
      const mx = (e[0] + e[2]) / 2, my = (e[1] + e[3]) / 2;
      const text = c[XC.label];
      const w = 7 * text.length + 12;
      const lx = mx + 8;  // beside the edge, never left of the picture
      const ly = placeLabel(lx, my, w);
      if (ly !== my) labels.push('<path class="lead" d="M' + mx + " " + my + "L" + lx + " " + ly + '"/>');
      labels.push('<g class="copy' + (selCopy === k ? " sel" : "") + '" data-copy="' + k + '" role="button" tabindex="0" aria-label="' + esc("explain " + text) + '"><rect x="' + lx + '" y="' + (ly - 10) + '" width="' + w + '" height="20" rx="4"/><text x="' + (lx + 6) + '" y="' + (ly + 4) + '">' + esc(text) + "</text></g>");
    }
  }
  // nodes
  for (const i of visList) {
    const x = posX[i], y = posY[i], w = posW[i], h = posH[i];
    if (x > x1 || y > y1 || x + w < x0 || y + h < y0) continue;
    if (expanded[i] && isGroup(i)) continue;  // drawn above
    if (many) { parts.push('<rect class="ov" x="' + x + '" y="' + y + '" width="' + w + '" height="' + h + '"/>'); continue; }
    parts.push(nodeSvg(i, hot.get(i), changedVals));
  }
  parts.push(...labels);  // above the nodes: a label that had to cover one stays readable
  world.setAttribute("transform", "translate(" + (-sl) + "," + (-st) + ") scale(" + scale + ")");
  world.innerHTML = parts.join("");
}
function targetInstrs(f) {
  const k = fKind(f);
  if (k === 0) return [D.values[fT0(f)][VC.producer]];
  if (k === 1) return [fT0(f)];
  const root = D.comps[fT0(f)][CC.instrs].find((i) => D.ops[D.instrs[i][IC.op]] === "root");
  return root === undefined ? [] : [root];
}
function nodeSvg(i, cls, changedVals) {
  const ins = D.instrs[i], op = D.ops[ins[IC.op]];
  const pinned = pinnedParam.has(i);
  let c = "n";
  if (op === "parameter") c += " param"; if (op === "root") c += " root"; if (isGroup(i)) c += " group"; if (pinned) c += " pinned";
  if (cls) for (const k of cls) c += " " + k;
  const s = [];
  s.push('<g class="' + c + '" data-i="' + i + '" transform="translate(' + posX[i] + "," + posY[i] + ')">');
  s.push('<title>' + esc(ins[IC.tip]) + "</title>");
  s.push('<rect class="bg" width="' + posW[i] + '" height="' + posH[i] + '" rx="4"/>');
  const name = ins[IC.label];
  s.push('<text class="op" x="6" y="' + (PADY + 10) + '">' + esc(name + (pinned ? say("pinned-tag") : "")) + "</text>");
  let y = PADY + 10 + LH;
  if (op === "root") {
    const ops = ins[IC.operands];
    for (let n = 0; n < Math.min(ops.length, MAXLINES); n++) {
      s.push('<text x="6" y="' + y + '">' + esc("#" + n + " " + shapeLine(ops[n])) + "</text>");
      y += LH;
    }
  } else {
    const res = ins[IC.results];
    for (let n = 0; n < Math.min(res.length, MAXLINES); n++) {
      const v = res[n], ch = changedVals.has(D.values[v][VC.buffer]);
      s.push('<text' + (ch ? ' class="chg"' : "") + ' x="6" y="' + y + '">' + esc((ch ? "\u0394 " : "") + (res.length > 1 ? "#" + n + " " : "") + shapeLine(v)) + "</text>");
      y += LH;
    }
    if (res.length > MAXLINES) { s.push('<text x="6" y="' + y + '">' + esc(say("more-results", { n: res.length - MAXLINES })) + "</text>"); y += LH; }
    const callees = ins[IC.callees];
    if (callees.length) {
      const own = hosted(i);
      if (own.length) {
        s.push('<text class="tog" data-tog="' + i + '" x="6" y="' + y + '">' + esc(say(expanded[i] ? "collapse" : "expand", { what: ins[IC.regions] })) + "</text>");
      } else s.push('<text x="6" y="' + y + '">' + esc(ins[IC.calls]) + "</text>");
    }
  }
  if (cls && cls.has("popped")) s.push('<text class="tag pop" x="0" y="-4">' + esc(say("popped-tag")) + "</text>");
  else if (cls && cls.has("derived")) s.push('<text class="tag der" x="0" y="-4">' + esc(say("derived-tag")) + "</text>");
  if (cls && cls.has("changed")) s.push('<text class="tag der" x="' + (posW[i] - 70) + '" y="-4">' + esc(say("changed-tag")) + "</text>");
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
  $("stepno").textContent = shown === 0 ? say("step-start", { last: LAST }) : shown === LAST ? say("step-end", { last: LAST }) : say("step-pop", { step: shown, last: LAST, pops: NE });
  const ev = shown >= 1 && shown <= NE ? shown - 1 : -1;
  if (ev >= 0) {
    const f = evFact[ev];
    $("where").textContent = header(shown);
    $("pop").textContent = popLine(shown);
    const b = [D.kinds[fKind(f)], say("badge-priority", { n: fPrio(f) }), say(fMand(f) ? "badge-mandatory" : "badge-not-mandatory"),
      say(fDfs(f) ? "badge-dfs" : "badge-bfs"), say("badge-round", { n: fRound(f) }), say("badge-rule", { rule: fRule(f) })];
    $("badges").replaceChildren(...b.map((t, k) => { const e = document.createElement("span"); e.className = "badge" + (k === 2 && fMand(f) ? " m" : ""); e.textContent = t; return e; }));
    const o = $("origin"); o.replaceChildren();
    const why = document.createElement("div"); why.textContent = fNote(f) ? say("why-note", { text: fRuleText(f), note: fNote(f) }) : say("why", { text: fRuleText(f) }); o.appendChild(why);
    const ol = document.createElement("ol"); let p = fParent(f), n = 0;
    const od = document.createElement("div"); od.textContent = say(p < 0 ? "origin-source" : "origin-chain"); o.appendChild(od);
    const link = (q) => li(say("link", { subject: subject(q), layout: D.layouts[fLay(q)], rule: fRule(q), text: fRuleText(q) }), () => focusFact(q));
    while (p >= 0 && n < 5) { ol.appendChild(link(p)); p = fParent(p); n++; }
    if (p >= 0) {  // a long chain: skip to its source
      let src = p, k = 0; while (fParent(src) >= 0) { src = fParent(src); k++; }
      if (k > 0) ol.appendChild(li(say("more", { n: k })));
      ol.appendChild(link(src));
    }
    o.appendChild(ol);
    const ds = derivedOf(ev);
    $("nderived").textContent = "(" + ds.length + ")";
    fill("derived", ds.map((d) => li(derivedLine(d), () => focusFact(d))));
    $("nchanged").textContent = "(" + stepChanged.length + ")";
    fill("changed", stepChanged.map(([v, a, b2, by]) => li(say("changed", { subject: subject(by), before: lay(a), after: lay(b2) }), () => focusInstr2(D.values[v][VC.producer]))));
    $("dsize").textContent = say("waiting", { n: dequeSize() });
    const fr = dequeFront(3), bk = dequeBack(3).reverse();
    fill("dfront", fr.map((d) => li(factShort(d), () => focusFact(d))));
    fill("dback", dequeSize() > 3 ? bk.map((d) => li(factShort(d), () => focusFact(d))) : []);
  } else {
    $("where").textContent = shown === 0 ? D.start : D.end;
    $("pop").textContent = say(shown === 0 ? "nothing-popped" : "done");
    $("badges").replaceChildren(); $("origin").replaceChildren();
    $("nderived").textContent = ""; $("nchanged").textContent = ""; $("dsize").textContent = say("waiting", { n: 0 });
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
  while (guard++ < 1000) { const h = D.comps[D.instrs[j][IC.comp]][CC.home]; if (h < 0) break; if (!expanded[h]) { expanded[h] = 1; changed = true; } j = h; }
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
  $("explaintitle").textContent = c[XC.title];
  $("explain").textContent = c[XC.text];
  schedule();
}
function openCopy(k) {
  if (shown !== LAST) goStep(LAST);
  const c = D.copies[k], first = c[XC.edges][0], i = first[0];
  focusInstr = -1; reveal(i, true); showCopy(k);
  const key = first[0] + "," + first[1];
  const e = edges.find((e2) => e2[5] + "," + e2[6] === key);
  if (e) { view.scrollLeft = Math.max(0, (e[0] + e[2]) / 2 * scale - view.clientWidth / 2); view.scrollTop = Math.max(0, (e[1] + e[3]) / 2 * scale - view.clientHeight / 2); }
  $("explainbox").scrollIntoView({ block: "nearest" });
}
function summary() {
  const s = $("summary"); s.replaceChildren();
  const p = document.createElement("p");
  p.textContent = D.summary.text;
  s.appendChild(p);
  const table = (head, rows) => {
    const t = document.createElement("table"), tr = document.createElement("tr");
    for (const h of head) { const th = document.createElement("th"); th.textContent = h; tr.appendChild(th); }
    t.appendChild(tr);
    for (const r of rows) { const row = document.createElement("tr"); for (const x of r) { const td = document.createElement("td"); td.textContent = x; row.appendChild(td); } t.appendChild(row); }
    return t;
  };
  const h = (t) => { const e = document.createElement("h3"); e.textContent = t; return e; };
  for (const [title, head, rows] of D.summary.tables) { s.appendChild(h(title)); s.appendChild(table(head, rows)); }
  fill("copylist", D.copies.length ? D.copies.map((c, k) => li(c[XC.item], () => openCopy(k))) : [li(say("no-copies"))]);
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
  const first = D.comps[D.entry][CC.instrs][0];
  if (first !== undefined) reveal(first, false);  // start at the entry's first parameter
  goStep(m ? (m[1] === "end" ? LAST : +m[1]) : 0);
  if (c && D.copies[+c[1] - 1]) openCopy(+c[1] - 1);
})();
