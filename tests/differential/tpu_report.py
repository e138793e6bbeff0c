"""The XLA:TPU differential report: one block per generation and corpus (``tpu_run.py``).

Built from the per-program results of ``compare.compare_dumps(..., tpu=...)``
(the ``tpu_compare.tpu_fields`` included).  It reads like ``gpu_run``'s report,
with the full layout (tiles) beside the minor_to_major, non-trivial meaning
"XLA moved it" (neither row-major nor the BEFORE layout), and copies keyed by
full layout.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .gpu_run import _annotate_opcodes, _pct
from .gpu_run import difference_kinds as gpu_difference_kinds


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in results if r["status"] == "ok"]
    total = lambda key: sum(r.get(key, 0) for r in ok)  # noqa: E731
    by_rank: dict[str, list[int]] = {}
    for r in ok:
        for rank, (n, a) in r.get("full_by_rank", {}).items():
            t = by_rank.setdefault(rank, [0, 0])
            t[0] += n
            t[1] += a
    return {
        "programs": len(results),
        "compared": len(ok),
        "skipped": Counter(r.get("reason", "")[:120] for r in results if r["status"] == "skipped"),
        "tool_errors": [r for r in results if r["status"] == "tool-error"],
        "harness_errors": [r for r in results if r["status"] == "harness-error"],
        "late_xla_errors": Counter(r["jax_error"][:100] for r in ok if r.get("jax_error")),
        "full_layout": all(r.get("full_layout") for r in ok),
        "values": total("values"), "agree": total("agree"),
        "full_values": total("full_values"), "full_agree": total("full_agree"), "by_rank": by_rank,
        "moved": total("moved"), "moved_agree": total("moved_agree"),
        "xla_copies": total("xla_copies"), "xla_copies_full": total("xla_copies_full"),
        "xla_copies_full_matched": total("xla_copies_full_matched"),
        "our_copies": total("our_copies_full"), "our_copies_unmatched": total("our_copies_full_unmatched"),
        "xla_bytes": total("xla_copy_bytes"), "our_bytes": total("our_copy_bytes"),
        "xla_padded": total("xla_copy_padded_bytes"), "our_padded": total("our_copy_padded_bytes"),
        "agreeing_programs": sum(1 for r in ok if agrees(r)),
        "more_copies": [r["id"] for r in ok if r.get("our_copies_full", 0) > r.get("xla_copies_full", 0)],
        "more_bytes": [r["id"] for r in ok if r.get("our_copy_padded_bytes", 0) > r.get("xla_copy_padded_bytes", 0)],
        "equivalent": sum(1 for r in ok for d in r["diffs"] if d["kind"] == "layout" and d.get("equivalent")),
    }


def agrees(r: dict[str, Any]) -> bool:
    """Every layout, tiles included, and every copy by (source, full layout) agree."""
    return (r.get("agree") == r.get("values") and r.get("full_agree") == r.get("full_values")
            and r.get("xla_copies_full_matched") == r.get("xla_copies_full")
            and not r.get("our_copies_full_unmatched"))


def _fields(layout: str) -> str:
    """``T(8,128)(2,1)`` of ``{1,0:T(8,128)(2,1)}``: what a tiles difference is about, dims aside."""
    return layout.strip("{}").partition(":")[2] or "none"


def _tile_kind(d: dict[str, Any]) -> str:
    return f"tiles of rank-{d['rank']} {d['element']} {d['op']}: ours {_fields(d['ours'])} | XLA {_fields(d['xla'])}"


def difference_kinds(results: list[dict[str, Any]]) -> Counter:
    """The GPU report's kinds, with the tiles' and the copies matched by full layout."""
    return gpu_difference_kinds(results, ("xla_copy_full_info", "our_copy_full_info"),
                                lambda r: [_tile_kind(d) for d in r.get("tile_diffs", [])])


def _differences(r: dict[str, Any]) -> list[str]:
    """One program's differences, both sides shown (ours | XLA)."""
    lines: list[str] = []
    full = r.get("full_texts", {})
    for d in r["diffs"]:
        if d["kind"] == "layout":
            ours, xla = full.get(d["name"], (d["ours"], d["xla"]))
            lines.append(f"    {d['name']} ({d['op']}): ours {ours} | XLA {xla}")
            lines.append(f"      XLA: {d['line']}")
    for d in r.get("tile_diffs", []):
        lines.append(f"    {d['name']} ({d['op']}, tiles): ours {d['ours']} | XLA {d['xla']}")
        lines.append(f"      XLA: {d['line']}")
    for c in r.get("xla_copy_full_info", []):
        if not c["matched"]:
            lines.append(f"    XLA copy of {c['src']} {c['src_layout']} -> {c['dst']} ({c['bytes']} B, "
                         f"{c['padded']} B padded): ours none")
            lines.append(f"      XLA: {c['line']}")
    for c in r.get("our_copy_full_info", []):
        if not c["in_xla"]:
            lines.append(f"    our copy of {c['src']} {c['src_layout']} -> {c['dst']}: XLA none")
    return lines


def format_report(results: list[dict[str, Any]], label: str, show: int = 12, elapsed: float | None = None) -> str:
    s = summarize(results)
    _annotate_full_opcodes(results)
    from .run import status_lines

    L = status_lines(s, f"XLA:TPU {label}", elapsed)
    L.append(f"named rank>=2 values, minor_to_major agreeing: {s['agree']}/{s['values']} = "
             f"{_pct(s['agree'], s['values'])}  (of the others, {s['equivalent']} differ only in size-1 dims)")
    if s["full_layout"]:
        ranks = ", ".join(f"rank {k}: {a}/{n}" for k, (n, a) in sorted(s["by_rank"].items()))
        L.append(f"named arrays, full layout (tiles) agreeing:    {s['full_agree']}/{s['full_values']} = "
                 f"{_pct(s['full_agree'], s['full_values'])}  ({ranks})")
    else:
        L.append("named arrays, full layout (tiles) agreeing:    n/a (our target has no layout_text)")
    L.append(f"non-trivial (XLA neither row-major nor BEFORE): {s['moved_agree']}/{s['moved']} = "
             f"{_pct(s['moved_agree'], s['moved'])}")
    L.append(f"XLA copies matched by (source, full layout): {s['xla_copies_full_matched']}/{s['xla_copies_full']} = "
             f"{_pct(s['xla_copies_full_matched'], s['xla_copies_full'])}  (XLA's copy instructions "
             f"{s['xla_copies']}; a copy per use of one we match counts once);  ours {s['our_copies']}, "
             f"of which XLA does not make {s['our_copies_unmatched']}")
    L.append(f"copy bytes: ours {s['our_bytes']} ({s['our_padded']} padded to tiles)  "
             f"XLA {s['xla_bytes']} ({s['xla_padded']} padded to tiles)")
    for what, key in (("copies", "more_copies"), ("padded copy bytes", "more_bytes")):
        ids = s[key]
        L.append(f"programs where ours has MORE {what} than XLA: {len(ids)}" + (f": {', '.join(ids[:8])}" if ids else ""))
    L.append(f"programs agreeing fully (layouts with tiles, copies): {s['agreeing_programs']}/{s['compared']}")
    kinds = difference_kinds(results)
    if kinds:
        L.append("")
        L.append("difference kinds (count):")
        for k, n in kinds.most_common(show):
            L.append(f"  {n:5d}  {k}")
        if len(kinds) > show:
            L.append(f"  ... {len(kinds) - show} more kinds ({sum(kinds.values())} differences in all)")
    L.append("")
    L.append(f"first {show} programs with differences (ours | XLA):")
    n = 0
    for r in results:
        if r["status"] != "ok" or n >= show:
            continue
        lines = _differences(r)
        if not lines:
            continue
        n += 1
        info = r.get("program", {})
        prog = ("; ".join(info.get("steps", [])) or info.get("description", ""))[:150]
        L.append(f"  [{r['id']}] {prog}")
        L.extend(lines[:12])
        if len(lines) > 12:
            L.append(f"    ... {len(lines) - 12} more lines; dumps in {r.get('dir', '?')}")
    return "\n".join(L)


def _annotate_full_opcodes(results: list[dict[str, Any]]) -> None:
    """gpu_run's opcode notes, for the full-layout copies and tile differences too."""
    for r in results:
        if r["status"] != "ok":
            continue
        # gpu_run's annotation reads the names of xla_copy_info / our_copy_info / layout diffs.
        extra = {"xla_copy_info": r.get("xla_copy_info", []) + r.get("xla_copy_full_info", []),
                 "our_copy_info": r.get("our_copy_info", []) + r.get("our_copy_full_info", []),
                 "diffs": r["diffs"] + [{**d, "kind": "layout"} for d in r.get("tile_diffs", [])]}
        view = {**r, **extra}
        view.pop("_opcodes", None)
        _annotate_opcodes([view])
        if "_opcodes" in view:
            r["_opcodes"] = view["_opcodes"]
