"""What the XLA:TPU comparison adds to ``compare.compare_dumps``: full layouts, tiles included.

XLA:TPU's layouts carry tiles (``{1,0:T(8,128)}``, ``{:T(128)}`` for a scalar,
``{0:T(1024)}``), and rank 0 and 1 arrays have them too, so agreeing on the
minor_to_major of rank >= 2 values is not the whole answer.  ``tpu_fields``
compares, over every named array value (the keys ``compare.OurSide`` gives,
each XLA value counted once):

* the full layout text: ours is ``target.layout_text(element, dims, layout)``,
  or the minor_to_major with the target's ``tiling`` fields (``layout_text_of``;
  a CPU / GPU target prints no tiles, so it disagrees wherever XLA:TPU tiles);
* the non-trivial values of rank >= 2: XLA's AFTER layout is neither row-major
  nor the layout the value had in the BEFORE module, i.e. layout assignment
  moved it (a BEFORE layout that is not row-major is JAX's or a pin, which any
  target keeps);
* copies by (source, full layout): a copy that changes only the tiles is a
  copy too; XLA's one-copy-per-use duplicates of a copy we match count once
  (where we copy once for all uses), those of a copy we miss each count;
* copy bytes padded to the tiles (what the copy moves in HBM), beside the
  logical bytes ``compare`` counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .oracle import ELEMENT_BYTES, ArrayShape, HloModule, shape_at


def padded_bytes(element: str, dims: tuple[int, ...], full_layout: str) -> int:
    """Bytes an array takes padded to whole tiles of its first tile (its logical bytes without tiles).

    Counted here from the layout text, not by the package's own rule, so that
    XLA's side is measured independently of what our target believes.
    """
    from .tpu_tiles_check import parse_layout

    n = 1
    for d in dims:
        n *= d
    per = ELEMENT_BYTES.get(element, 4)
    if full_layout in ("-", ""):
        return n * per
    lay = parse_layout(full_layout)
    if not lay.tiles or len(lay.minor_to_major) != len(dims):
        return n * per
    first = lay.tiles[0]
    if not dims:
        return first[0] * per
    n = 1
    for k, d in enumerate(lay.minor_to_major):  # minor first; the tile's last entry covers the most minor dim
        size = dims[d]
        if k < len(first) and first[len(first) - 1 - k] > 0:
            step = first[len(first) - 1 - k]
            size = -(-size // step) * step
        n *= size
    return n * per


def layout_text_of(target: Any) -> Callable[[str, tuple[int, ...], tuple[int, ...] | None], str] | None:
    """Our full layout text for (element, dims, minor_to_major); None where the target prints none.

    A target's ``layout_text`` gives the whole text; else its ``tiling`` hook
    (the fields after the colon: ``T(8,128)(2,1)``, "" for CPU / GPU targets)
    is put after the minor_to_major as XLA prints it.
    """
    text = getattr(target, "layout_text", None)
    if text is not None:
        return lambda e, d, lay: "-" if lay is None else str(text(e, d, lay))
    tiling = getattr(target, "tiling", None)
    if tiling is None:
        return None

    def from_tiling(element: str, dims: tuple[int, ...], lay: tuple[int, ...] | None) -> str:
        if lay is None:
            return "-"
        fields = tiling(element, dims, lay)
        return "{" + ",".join(map(str, lay)) + (f":{fields}" if fields else "") + "}"

    return from_tiling


def _array_at(hlo: HloModule, name: str, idx: tuple[int, ...]) -> ArrayShape | None:
    ins = hlo.instrs.get(name)
    if ins is None:
        return None
    s = shape_at(ins.shape, idx)
    while isinstance(s, list) and len(s) == 1:
        s = s[0]
    return s if isinstance(s, ArrayShape) else None


def _row_major(layout: tuple[int, ...]) -> bool:
    return list(layout) == sorted(layout, reverse=True)


def tpu_fields(r: Any, ours: Any, xla: Any, after: HloModule, before: HloModule, before_names: set[str],
               unique_keys: bool) -> dict[str, Any]:
    """The TPU fields of one comparison (``compare.compare_dumps`` merges them into its result).

    ``r`` is our LayoutResult, ``ours`` / ``xla`` the ``compare.OurSide`` /
    ``compare.XlaSide`` of it and of XLA's AFTER module.
    """
    from .compare import _line, canonical, key_text

    g = r.graph
    text = layout_text_of(r.assignment.target)
    out: dict[str, Any] = {"full_layout": text is not None}

    def ours_text(element: str, dims: tuple[int, ...], layout: tuple[int, ...] | None) -> str:
        if text is None:
            return "-"
        return text(element, tuple(dims), tuple(layout) if layout is not None else None)

    full = full_agree = moved = moved_agree = 0
    by_rank: dict[str, list[int]] = {}  # "0" / "1" / "2+" -> [values, agreeing]
    diffs: list[dict[str, Any]] = []
    full_texts: dict[str, list[str]] = {}  # key -> [ours, XLA's] full layout, where the minor_to_major differs
    counted: set[Any] = set()
    for vid, key in ours.keys.items():
        v = g.values[vid]
        if not v.is_array:
            continue
        name, idx = key
        if name not in before_names:
            continue
        xs = _array_at(after, name, idx)
        if xs is None or xs.dims != tuple(v.dims) or xs.layout is None:
            continue
        ck = canonical(key, after)
        if unique_keys and ck in counted:
            continue
        counted.add(ck)
        mine = r.assignment.layouts[vid]
        mine = tuple(mine) if mine is not None else None
        if v.rank >= 2:
            bs = _array_at(before, name, idx)
            if not _row_major(xs.layout) and (bs is None or bs.layout != xs.layout):
                moved += 1
                moved_agree += mine == xs.layout
        if text is None:
            continue
        theirs, mine_text = xs.full_layout, ours_text(v.element, v.dims, mine)
        rank = "2+" if v.rank >= 2 else str(v.rank)
        tally = by_rank.setdefault(rank, [0, 0])
        full += 1
        tally[0] += 1
        if mine_text == theirs:
            full_agree += 1
            tally[1] += 1
        elif mine != xs.layout and v.rank >= 2:
            full_texts[key_text(key)] = [mine_text, theirs]  # for compare's "layout" difference, shown whole
        else:
            # The minor_to_major agrees (or there is no other one): only the fields differ.
            # A rank >= 2 minor_to_major difference is compare's "layout" difference already.
            ins = g.instrs[v.producer]
            op = after.instrs[name].opcode + ("" if g.comps[ins.comp].is_entry else f" (in {g.comps[ins.comp].kind})")
            diffs.append({"kind": "tiles", "name": key_text(key), "op": op, "rank": v.rank,
                          "element": v.element, "ours": mine_text, "xla": theirs, "line": _line(after, name)})
    out.update(full_values=full, full_agree=full_agree, full_by_rank=by_rank,
               moved=moved, moved_agree=moved_agree, tile_diffs=diffs, full_texts=full_texts)
    out.update(_copies(r, ours, xla, after, ours_text))
    return out


def _copies(r: Any, ours: Any, xla: Any, after: HloModule, ours_text: Any) -> dict[str, Any]:
    """XLA's copies and ours by (source, full layout), and their padded bytes."""
    from .compare import _copy_reason, _line, canonical, key_text

    g = r.graph
    xla_info: list[dict[str, Any]] = []
    for c in xla.added_copies:
        ci = after.instrs[c]
        if not isinstance(ci.shape, ArrayShape):
            continue
        src = xla.source(ci.operands[0])
        src_shape = _array_at(after, src[0], src[1])
        xla_info.append({
            "copy": c, "src": key_text(canonical(xla.through_branches(src), after)),
            "src_layout": src_shape.full_layout if src_shape is not None else "-", "dst": ci.shape.full_layout,
            "bytes": ci.shape.bytes, "padded": padded_bytes(ci.shape.element, ci.shape.dims, ci.shape.full_layout),
            "why": _copy_reason(after, c), "line": _line(after, c)})
    ours_info: dict[tuple[str, str], dict[str, Any]] = {}
    our_padded = 0
    for cp in r.copies:
        v = g.values[cp.value]
        if g.instrs[v.producer].comp not in ours.live:
            continue
        dst = ours_text(v.element, v.dims, tuple(cp.dst))
        our_padded += padded_bytes(v.element, tuple(v.dims), dst)
        key = ours.keys.get(cp.value, (f"<{g.instrs[v.producer].op}>", ()))
        held = key_text(canonical(ours.keys.get(ours.through_branches(cp.value), key), after))
        ours_info.setdefault((held, dst), {"src": held, "dst": dst,
                                           "src_layout": ours_text(v.element, v.dims, tuple(cp.src))})
    xla_keys: dict[tuple[str, str], int] = {}  # (source, full layout) -> XLA's copy instructions
    for c in xla_info:
        k = (c["src"], c["dst"])
        c["matched"] = k in ours_info
        xla_keys[k] = xla_keys.get(k, 0) + 1
    for k, c in ours_info.items():
        c["in_xla"] = k in xla_keys
    return {
        # XLA's copies, where the duplicates of one we match (XLA copies once per use, we once for
        # all) count once; each copy of a value we do not copy so counts.
        "xla_copies_full": sum(1 if k in ours_info else n for k, n in xla_keys.items()),
        "xla_copies_full_matched": sum(1 for k in xla_keys if k in ours_info),
        "our_copies_full": len(ours_info),
        "our_copies_full_unmatched": sum(1 for c in ours_info.values() if not c["in_xla"]),
        "xla_copy_padded_bytes": sum(c["padded"] for c in xla_info), "our_copy_padded_bytes": our_padded,
        "xla_copy_full_info": xla_info, "our_copy_full_info": sorted(ours_info.values(), key=lambda c: c["src"]),
    }
