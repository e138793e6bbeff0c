"""Compare our layout assignment with XLA's on one ``before_layout-assignment`` dump.

``compare_dumps(before, after)`` runs our pass (``xla-cpu`` target, ``default``
entry mode) on the BEFORE dump and compares it with XLA's AFTER dump:

* layouts: every value of ours whose location is an HLO instruction name of
  the BEFORE dump is matched with that instruction in the AFTER dump.  Keys
  are XLA-style ``(instruction name, shape index)``: result ``i`` of a
  multi-result op is tuple element ``{i}``; a get_tuple_element adds its
  index; a region parameter ``n`` is element ``{n}`` of the called
  computation's tuple parameter; entry parameters go by parameter number.
* copies: XLA's copies are the ``copy`` instructions whose names are not in
  the BEFORE dump.  Each becomes edges ``(producer, consumer, layout)``,
  walking through XLA's tuple/get-tuple-element wrappers (so a copy feeding a
  while's init tuple has the while as consumer and a copy under a root tuple
  has ``ROOT``, or ``ROOT@<caller>`` in a called computation).  Ours are the
  edges of ``LayoutResult.copies``; one we make inside a conditional's
  branch is keyed as XLA's copy there is, by the branch parameter element it
  copies and each instruction that reads it in the branch.  The two edge
  multisets are compared.

The result is a plain dict (JSON-friendly) so that worker processes can
return it and ``run.py`` can aggregate it.
"""

from __future__ import annotations

import re
import time
import traceback
from collections import Counter
from typing import Any

from stablehlo_layout.engine.aliasing import live_computations

from .oracle import ELEMENT_BYTES, ArrayShape, HloModule, format_layout, instruction_names, leaves, parse_hlo, shape_at

Key = tuple[str, tuple[int, ...]]

GENERIC_WARNING = "running the generic rules"


def canonical(key: Key, hlo: HloModule) -> Key:
    """Drop the levels of one-element tuples: ``(c, {0})`` of a 1-tuple conditional is ``(c, {})``."""
    name, idx = key
    ins = hlo.instrs.get(name)
    if ins is None:
        return key
    shape = ins.shape
    out: list[int] = []
    for i in idx:
        if not isinstance(shape, list) or i >= len(shape):
            return key
        if len(shape) != 1:
            out.append(i)
        shape = shape[i]
    return name, tuple(out)


def key_text(key: Key) -> str:
    name, idx = key
    return name + ("{" + ",".join(map(str, idx)) + "}" if idx else "")


def physically_equal(a: tuple[int, ...] | None, b: tuple[int, ...] | None, dims: tuple[int, ...]) -> bool:
    """Two layouts that order the same bytes the same way: they differ only where a dim has size 1."""
    if a is None or b is None:
        return a == b
    return [d for d in a if dims[d] != 1] == [d for d in b if dims[d] != 1]


def layout_class(layout: tuple[int, ...] | None) -> str:
    if layout is None:
        return "none"
    return "default" if list(layout) == sorted(layout, reverse=True) else "non-default"


# -- entry layouts ---------------------------------------------------------------

def entry_flags(hlo: HloModule) -> list[str]:
    flags = []
    params = hlo.entry_params
    res = hlo.entry_result
    res_leaves = [s for _, s in leaves(res)] if res is not None else []
    if any(isinstance(s, ArrayShape) and s.layout is None for s in params):
        flags.append("auto-params")
    unset = [isinstance(s, ArrayShape) and s.layout is None for s in res_leaves]
    if any(unset):
        flags.append("auto-results")
        if not all(unset) and len(res_leaves) > 1:
            # XLA treats the whole result layout as unset when one element is.
            flags.append("partial-auto-results")
    return flags


# -- our side --------------------------------------------------------------------

class OurSide:
    """Keys, layouts and copy edges of our LayoutResult, XLA-style."""

    def __init__(self, r: Any, xla: HloModule) -> None:
        self.r = r
        self.g = r.graph
        self.xla = xla
        self.live = live_computations(self.g)
        self.keys: dict[int, Key] = {}
        self._param_keys: dict[int, Key | None] = {}
        self._assign_keys()

    def xla_comp_of(self, cid: int) -> str | None:
        """The XLA computation our computation ``cid`` stands for."""
        g, xla = self.g, self.xla
        c = g.comps[cid]
        if c.is_entry:
            return xla.entry
        if c.caller is None:
            return c.name if c.name in xla.comps else None
        caller = g.instrs[c.caller]
        xi = xla.instrs.get(caller.loc)
        if xi is None:
            return None
        m = re.search(r"(\d+)$", c.name)
        k = int(m.group(1)) if m else 0
        attr = {"body": "body", "cond": "condition"}.get(c.kind)
        if attr:
            names = xi.called.get(attr, [])
            return names[0] if names else None
        if c.kind == "branch":
            if "branch_computations" in xi.called:
                names = xi.called["branch_computations"]
                return names[k] if k < len(names) else None
            attr = "true_computation" if k == 0 else "false_computation"
            names = xi.called.get(attr, [])
            return names[0] if names else None
        names = xi.called.get("to_apply") or xi.called.get("calls") or []
        return names[k] if k < len(names) else (names[0] if names else None)

    def _param_key(self, iid: int) -> Key | None:
        if iid in self._param_keys:
            return self._param_keys[iid]
        g, xla = self.g, self.xla
        ins = g.instrs[iid]
        c = g.comps[ins.comp]
        n = ins.attrs.get("number", c.params.index(iid))
        key: Key | None = None
        xc = self.xla_comp_of(c.id)
        if xc is not None and xc in xla.comps:
            xparams = xla.comps[xc].params
            if c.is_entry or len(xparams) == len(c.params):
                if n in xparams:
                    key = (xparams[n], ())
            elif len(xparams) == 1:
                pname = xparams[0]
                pl = leaves(xla.instrs[pname].shape)
                if len(pl) == len(c.params):
                    key = (pname, pl[n][0])
        self._param_keys[iid] = key
        return key

    def _assign_keys(self) -> None:
        g = self.g
        gte_ops = ("stablehlo.get_tuple_element", "mhlo.get_tuple_element")
        for cid in sorted(self.live):
            for iid in g.comps[cid].instrs:
                ins = g.instrs[iid]
                if ins.op == "root":
                    continue
                if ins.op == "parameter":
                    key = self._param_key(iid)
                    if key is not None:
                        for vid in ins.results:
                            self._set(vid, key)
                    continue
                if ins.op in gte_ops and ins.operands:
                    base = self.keys.get(ins.operands[0])
                    idx = self._gte_index(ins, base)
                    if base is not None and idx is not None:
                        self._set(ins.results[0], (base[0], base[1] + (idx,)))
                    continue
                multi = len(ins.results) > 1
                for i, vid in enumerate(ins.results):
                    self._set(vid, (ins.loc, (i,) if multi else ()))

    def _set(self, vid: int, key: Key) -> None:
        if vid in self.keys:
            return
        self.keys[vid] = key
        elements = getattr(self.g.values[vid], "elements", None)
        if elements:
            for k, e in enumerate(elements):
                self._set(e, (key[0], key[1] + (k,)))

    def _gte_index(self, ins: Any, base: Key | None) -> int | None:
        for name in ("index", "tuple_index"):
            if name in ins.attrs:
                return int(ins.attrs[name])
        if base is None:
            return None
        # The index is not in the graph: find it by shape among XLA's tuple elements.
        xi = self.xla.instrs.get(base[0])
        if xi is None:
            return None
        tup = shape_at(xi.shape, base[1])
        if not isinstance(tup, list):
            return None
        v = self.g.values[ins.results[0]]
        hits = [k for k, s in enumerate(tup) if isinstance(s, ArrayShape) and s.dims == tuple(v.dims)
                and s.element == v.element]
        if len(hits) == 1 or base[1]:
            return hits[0] if len(hits) == 1 else None
        # Several elements of that shape (an SVD's U and V): the converter makes one
        # get_tuple_element per XLA one, in XLA's order, so the k-th of ours is XLA's k-th.
        ours = [i for i in self.g.comps[ins.comp].instrs if self.g.instrs[i].op == ins.op
                and self.g.instrs[i].operands[:1] == ins.operands[:1]]
        theirs = [x.gte_index for x in self.xla.instrs.values()
                  if x.opcode == "get-tuple-element" and x.operands[:1] == [base[0]]]
        if len(ours) == len(theirs) and theirs[ours.index(ins.id)] in hits:
            return theirs[ours.index(ins.id)]
        return None

    def root_label(self, cid: int) -> str:
        g = self.g
        c = g.comps[cid]
        if c.is_entry:
            return "ROOT"
        if c.caller is not None:
            return "ROOT@" + g.instrs[c.caller].loc
        return "ROOT@" + c.name

    def consumer_label(self, iid: int) -> str:
        ins = self.g.instrs[iid]
        if ins.op == "root":
            return self.root_label(ins.comp)
        return ins.loc

    def through_branches(self, vid: int) -> int:
        """A branch parameter stands for the caller's value it captures (outermost first)."""
        g = self.g
        while True:
            ins = g.instrs[g.values[vid].producer]
            if ins.op != "parameter" or g.comps[ins.comp].kind != "branch" or "capture" not in ins.attrs:
                return vid
            vid = ins.attrs["capture"]

    def in_branch(self, e: Any) -> list[tuple[Key, str]] | None:
        """A copy made inside a branch as XLA's edges: of the branch parameter, to each of its readers there.

        The branch reads the caller's value through its parameter (in HLO one
        element of the branch's tuple parameter), and XLA's copy of that
        element feeds the branch's own instructions: key it so.
        """
        g = self.g
        ins = g.instrs[e.consumer]
        k = e.operand - len(ins.operands)
        captures = ins.attrs.get("capture_params", ())
        if e.inside is None or not 0 <= k < len(captures):
            return None
        comp, number = captures[k]
        param = g.values[g.instrs[g.comps[comp].params[number]].results[0]]
        key = self.keys.get(param.id)
        if key is None:
            return None
        return [(key, self.consumer_label(user)) for user, _ in param.uses]


# -- XLA side ----------------------------------------------------------------------

class XlaSide:
    def __init__(self, hlo: HloModule, before_names: set[str]) -> None:
        self.hlo = hlo
        self.before = before_names
        self.added_copies = [n for n, i in hlo.instrs.items()
                             if i.opcode == "copy" and n not in before_names]
        self._added = set(self.added_copies)

    def root_label(self, comp: str) -> str:
        c = self.hlo.comps[comp]
        if c.is_entry:
            return "ROOT"
        for instr, _attr, _k in c.callers:
            if self.hlo.instrs[instr].opcode == "call":
                return "ROOT@" + comp
            return "ROOT@" + instr
        return "ROOT@" + comp

    def source(self, name: str, idx: tuple[int, ...] = ()) -> Key:
        ins = self.hlo.instrs[name]
        if name in self._added and ins.opcode == "copy":
            return self.source(ins.operands[0], idx)
        if ins.opcode == "get-tuple-element" and ins.gte_index is not None:
            return self.source(ins.operands[0], (ins.gte_index,) + idx)
        if ins.opcode == "tuple" and idx:
            return self.source(ins.operands[idx[0]], idx[1:])
        return name, idx

    def through_branches(self, key: Key) -> Key:
        """A conditional branch's parameter element stands for the conditional's operand.

        StableHLO's branches read the caller's values directly, so the copy we
        make inside a branch is of the caller's value; XLA's is of the branch
        parameter.  Both are the same data: key XLA's by the operand it holds.
        """
        name, idx = key
        ins = self.hlo.instrs.get(name)
        if ins is None or ins.opcode != "parameter":
            return key
        comp = self.hlo.comps[ins.comp]
        conds = [(i, a, k) for i, a, k in comp.callers if self.hlo.instrs[i].opcode == "conditional"]
        if len(comp.callers) != 1 or len(conds) != 1:
            return key
        cond, attr, k = conds[0]
        operand = {"true_computation": 1, "false_computation": 2}.get(attr, k + 1)
        operands = self.hlo.instrs[cond].operands
        if operand >= len(operands):
            return key
        return self.through_branches(self.source(operands[operand], idx))

    def consumers(self, name: str, skip_added_copies: bool = True) -> list[str]:
        ins = self.hlo.instrs[name]
        out: list[str] = []
        if ins.is_root:
            out.append(self.root_label(ins.comp))
        for u in ins.users:
            U = self.hlo.instrs[u]
            if skip_added_copies and u in self._added and U.opcode == "copy":
                continue  # a chain: the last copy carries the edge
            if U.opcode == "tuple":
                positions = [k for k, o in enumerate(U.operands) if o == name]
                out.extend(self._through_tuple(u, positions))
            else:
                out.append(u)
        return out

    def _through_tuple(self, tup: str, positions: list[int]) -> list[str]:
        T = self.hlo.instrs[tup]
        out: list[str] = []
        for _p in positions:
            if T.is_root:
                out.append(self.root_label(T.comp))
            for w in T.users:
                W = self.hlo.instrs[w]
                if W.opcode == "get-tuple-element":
                    if W.gte_index == _p:
                        out.extend(self.consumers(w, skip_added_copies=False))
                elif W.opcode == "tuple":
                    out.extend(self._through_tuple(w, [k for k, o in enumerate(W.operands) if o == tup]))
                else:
                    out.append(w)
        return out


# -- the comparison -------------------------------------------------------------------

def _line(hlo: HloModule, name: str, limit: int = 200) -> str:
    ins = hlo.instrs.get(name)
    if ins is None:
        return ""
    text = ins.line
    return text if len(text) <= limit else text[:limit - 3] + "..."


_ALIASING = re.compile(r"output_to_operand_aliasing=\{(.*?)\}(?:, |$)")


def _copy_reason(hlo: HloModule, name: str) -> str:
    """Why XLA made copy ``name``: an in-place custom-call operand (aliasing.py), or a relayout."""
    ins = hlo.instrs[name]
    for u in ins.users:
        user = hlo.instrs[u]
        m = _ALIASING.search(user.line) if user.opcode == "custom-call" else None
        if m is None:
            continue
        aliased = {int(x) for x in re.findall(r"\(\s*(\d+)\s*,", m.group(1))}
        if any(user.operands[k] == name for k in aliased if k < len(user.operands)):
            target = re.search(r'custom_call_target="([^"]+)"', user.line)
            return f"in-place operand of @{target.group(1) if target else '?'} (its output overwrites it)"
    src = hlo.instrs.get(ins.operands[0]) if ins.operands else None
    if src is not None and isinstance(src.shape, ArrayShape) and isinstance(ins.shape, ArrayShape) \
            and src.shape.layout == ins.shape.layout:
        return "same layout, not for an in-place operand"
    return "relayout"


def _assign(module: Any, target: str, gpu: str | None, tpu: str | None = None) -> Any:
    """Our pass on ``module``; ``gpu`` picks the xla-gpu target's device model, ``tpu`` the
    xla-tpu target's generation (other targets take neither)."""
    from stablehlo_layout.frontends.api import assign_module

    if tpu is not None and target == "xla-tpu":
        return assign_module(module, target, "default", tpu=tpu)
    if gpu is None:
        return assign_module(module, target, "default")
    return assign_module(module, target, "default", gpu=gpu)


def compare_dumps(before_path: str, after_path: str, target: str = "xla-cpu",
                  gpu: str | None = None, unique_keys: bool = False, tpu: str | None = None) -> dict[str, Any]:
    """Run our pass on ``before_path`` and compare with XLA's ``after_path``.

    ``unique_keys`` counts each XLA value once where two of ours stand for it
    (a tuple-result custom call's element and the get-tuple-element reading
    it); the XLA:CPU report keeps its historical count without it.
    ``tpu`` (a generation) adds the XLA:TPU fields of ``tpu_compare.tpu_fields``
    (full layouts with tiles); it reaches our pass only with ``target="xla-tpu"``.
    """
    with open(before_path) as f:
        before_text = f.read()
    with open(after_path) as f:
        after_text = f.read()
    before_names = instruction_names(before_text)
    after = parse_hlo(after_text)
    before = parse_hlo(before_text)
    out: dict[str, Any] = {"status": "ok", "flags": entry_flags(before), "warnings": []}

    from stablehlo_layout.ir import mlir

    start = time.perf_counter()
    try:
        ctx = mlir.make_context()
        m = mlir.read_input(before_path, ctx)
        r = _assign(m, target, gpu, tpu)
    except Exception as e:  # the tool failed: a finding, not a harness error
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{fr.filename.split('/')[-1]}:{fr.lineno}" for fr in reversed(tb)
                      if "stablehlo_layout" in fr.filename), "")
        out.update(status="tool-error", error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}",
                   where=where)
        return out
    out["tool_seconds"] = round(time.perf_counter() - start, 3)
    out["warnings"] = list(r.warnings)
    out["generic"] = any(GENERIC_WARNING in w for w in r.warnings)

    ours = OurSide(r, after)
    xla = XlaSide(after, before_names)
    g = r.graph

    # (a) layouts of named values.
    n_values = n_agree = n_trivial = n_unmatched = 0
    n_nontrivial = n_nontrivial_agree = 0  # values whose XLA layout is not row-major
    diffs: list[dict[str, Any]] = []
    xla_keys_seen: set[Key] = set()
    counted: set[Key] = set()
    for vid, key in ours.keys.items():
        v = g.values[vid]
        if not v.is_array:
            continue
        name, idx = key
        if name not in before_names or name not in after.instrs:
            n_unmatched += 1
            continue
        xs = shape_at(after.instrs[name].shape, idx)
        while isinstance(xs, list) and len(xs) == 1:
            xs = xs[0]
        if not isinstance(xs, ArrayShape) or xs.dims != tuple(v.dims):
            n_unmatched += 1
            continue
        mine = r.assignment.layouts[vid]
        mine = tuple(mine) if mine is not None else None
        if v.rank < 2:
            n_trivial += 1
            continue
        if unique_keys and canonical(key, after) in counted:
            continue
        counted.add(canonical(key, after))
        xla_keys_seen.add(key)
        n_values += 1
        nontrivial = layout_class(xs.layout) == "non-default"
        n_nontrivial += nontrivial
        if mine == xs.layout:
            n_agree += 1
            n_nontrivial_agree += nontrivial
            continue
        ins = g.instrs[v.producer]
        comp = g.comps[ins.comp]
        op = after.instrs[name].opcode + ("" if comp.is_entry else f" (in {comp.kind})")
        diffs.append({
            "kind": "layout", "name": key_text(key), "op": op,
            "our_op": ins.op, "ours": format_layout(mine), "xla": format_layout(xs.layout),
            "pattern": f"ours {layout_class(mine)} vs xla {layout_class(xs.layout)}",
            "equivalent": physically_equal(mine, xs.layout, xs.dims),
            "entry": g.comps[ins.comp].is_entry, "line": _line(after, name),
        })
    # Coverage: XLA's named rank>=2 arrays we could not match at all.
    xla_named = 0
    for name in before_names:
        xi = after.instrs.get(name)
        if xi is None or xi.opcode in ("tuple", "get-tuple-element"):
            continue
        for _idx, s in leaves(xi.shape):
            if isinstance(s, ArrayShape) and s.rank >= 2:
                xla_named += 1

    # (b) copies.
    xla_edges: Counter = Counter()
    xla_copy_info = []
    xla_copy_keys: list[tuple[str, str]] = []  # (source value, target layout) per XLA copy
    xla_bytes = 0
    for c in xla.added_copies:
        ci = after.instrs[c]
        nbytes = ci.shape.bytes if isinstance(ci.shape, ArrayShape) else 0
        xla_bytes += nbytes
        src = xla.source(ci.operands[0])
        lay = ci.shape.layout if isinstance(ci.shape, ArrayShape) else None
        xla_copy_keys.append((key_text(canonical(xla.through_branches(src), after)), format_layout(lay)))
        for cons in xla.consumers(c):
            e = (key_text(canonical(src, after)), cons, format_layout(lay))
            xla_edges[e] += 1
        src_shape = shape_at(after.instrs[src[0]].shape, src[1]) if src[0] in after.instrs else None
        xla_copy_info.append({"copy": c, "src": key_text(src), "bytes": nbytes, "why": _copy_reason(after, c),
                              "src_layout": format_layout(src_shape.layout) if isinstance(src_shape, ArrayShape) else "-",
                              "dst": format_layout(lay), "line": _line(after, c)})
    our_edges: Counter = Counter()
    our_copies = 0
    our_bytes = 0
    our_dead = 0
    our_src_layout: dict[str, str] = {}
    our_copy_keys: set[tuple[str, str]] = set()
    # An in-place copy reading our relayout copy for the same use is a chain,
    # as XLA's are: the relayout copy already carries the edge.
    relayout_uses = {(e.consumer, e.operand) for cp in r.copies if not cp.in_place for e in cp.edges}
    for cp in r.copies:
        v = g.values[cp.value]
        if g.instrs[v.producer].comp not in ours.live:
            our_dead += 1
            continue
        our_copies += 1
        n = 1
        for d in v.dims:
            n *= d
        our_bytes += n * ELEMENT_BYTES.get(v.element, 4)
        key = ours.keys.get(cp.value, (f"<{g.instrs[v.producer].op}>", ()))
        our_src_layout[key_text(canonical(key, after))] = format_layout(tuple(cp.src))
        # Keyed as XLA's are (XlaSide.through_branches): a copy of a branch
        # parameter is a copy of the caller's value it holds, the same data.
        held = ours.keys.get(ours.through_branches(cp.value), key)
        our_src_layout.setdefault(key_text(canonical(held, after)), format_layout(tuple(cp.src)))
        our_copy_keys.add((key_text(canonical(held, after)), format_layout(tuple(cp.dst))))
        for e in cp.edges:
            if cp.in_place and (e.consumer, e.operand) in relayout_uses:
                continue
            inside = ours.in_branch(e)
            for src, cons in inside if inside is not None else [(key, ours.consumer_label(e.consumer))]:
                our_edges[(key_text(canonical(src, after)), cons, format_layout(tuple(cp.dst)))] += 1
    xla_only = xla_edges - our_edges
    ours_only = our_edges - xla_edges

    def opcode(label: str) -> str:
        base = label.split("{")[0]
        if base.startswith("ROOT"):
            return "ROOT"
        i = after.instrs.get(base)
        return i.opcode if i else "?"

    def xla_layout(label: str) -> str:
        base, _, rest = label.partition("{")
        i = after.instrs.get(base)
        if i is None:
            return "-"
        idx = tuple(int(x) for x in rest.rstrip("}").split(",") if x) if rest else ()
        sh = shape_at(i.shape, idx)
        while isinstance(sh, list) and len(sh) == 1:
            sh = sh[0]
        return format_layout(sh.layout) if isinstance(sh, ArrayShape) else "-"

    for side, edges in (("xla-only copy", xla_only), ("ours-only copy", ours_only)):
        for (src, cons, lay), k in edges.items():
            src_lay = xla_layout(src) if side == "xla-only copy" else our_src_layout.get(src, "-")
            for _ in range(k):
                diffs.append({
                    "kind": side, "name": f"{src} -> {cons}", "op": f"{opcode(src)} -> {opcode(cons)}",
                    "layout": lay, "src_layout": src_lay, "line": _line(after, src.split("{")[0]),
                    "consumer_line": _line(after, cons) if not cons.startswith("ROOT") else cons,
                })
    # (c) copies by (source value, target layout): XLA's one-copy-per-use counts once per use.
    xla_key_set = set(xla_copy_keys)
    for info, k in zip(xla_copy_info, xla_copy_keys):
        info["matched"] = k in our_copy_keys
    our_copy_list = [{"src": k[0], "dst": k[1], "src_layout": our_src_layout.get(k[0], "-"),
                      "in_xla": k in xla_key_set} for k in sorted(our_copy_keys)]
    out.update(
        nontrivial=n_nontrivial, nontrivial_agree=n_nontrivial_agree,
        xla_copies_matched=sum(1 for k in xla_copy_keys if k in our_copy_keys),
        our_copies_unmatched=sum(1 for c in our_copy_list if not c["in_xla"]),
        our_copy_info=our_copy_list,
        values=n_values, agree=n_agree, trivial=n_trivial, unmatched=n_unmatched,
        xla_named=xla_named, xla_covered=len({canonical(k, after) for k in xla_keys_seen}),
        xla_copies=len(xla.added_copies), xla_copy_bytes=xla_bytes,
        our_copies=our_copies, our_copy_bytes=our_bytes, our_dead_copies=our_dead,
        xla_edges=sum(xla_edges.values()), our_edges=sum(our_edges.values()),
        edges_matched=sum((xla_edges & our_edges).values()),
        xla_copy_info=xla_copy_info, diffs=diffs,
    )
    out["agrees"] = n_agree == n_values and not xla_only and not ours_only
    if tpu is not None:
        from .tpu_compare import tpu_fields

        out.update(tpu_fields(r, ours, xla, after, before, before_names, unique_keys))
    return out
