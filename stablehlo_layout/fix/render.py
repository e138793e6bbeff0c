"""``fix``'s report as people read it: XLA's copies before and after, each change at its source line."""

from __future__ import annotations

from stablehlo_layout.fix.search import FixResult, Tried
from stablehlo_layout.report.explain import fmt_bytes


def _delta(copies: int, nbytes: int) -> str:
    """A change in XLA's copies, with its sign: ``-2 copies, -1.5 KiB``."""
    def signed(n: int, text: str) -> str:
        return ("-" if n < 0 else "+" if n > 0 else "±") + text

    return (f"{signed(copies, str(abs(copies)))} cop{'y' if abs(copies) == 1 else 'ies'}, "
            f"{signed(nbytes, fmt_bytes(abs(nbytes)))}")


def _line(t: Tried, r: FixResult) -> str:
    where = t.candidate.where
    # The change names the entry value or the ops itself; the line says where it is written.
    head = f"at {where.text()}: {t.candidate.what}" if where.line is not None else t.candidate.what
    if t.measured is None:
        return f"{head}: {t.error}"
    removed_copies, removed_bytes = t.removed(r.before)
    return f"{head}: {r.target} makes {t.measured.copies} copies, {_delta(-removed_copies, -removed_bytes)}"


def render_fix(r: FixResult, path: str, written: str | None) -> str:
    b, a = r.before, r.after
    out = [f"fix {path}: {r.target}",
           f"XLA's copies: {b.copies} ({fmt_bytes(b.bytes)}) as given, {a.copies} ({fmt_bytes(a.bytes)}) fixed: "
           f"{_delta(a.copies - b.copies, a.bytes - b.bytes)}, counted in {r.target}'s own layout assignment"]
    if not b.copies:
        out.append("nothing to fix: XLA makes no copy in this program")
    if a.moving_no_data:
        out.append(f"{a.moving_no_data} of the {a.copies} move no data (their layouts differ only where size-1 "
                   "dims sit; XLA makes them bitcasts): free, and no fix is needed for them")
    fixes = r.fixes
    if fixes:
        out.append("")
        out.append(f"verified by {r.target} (each alone against the program as given):")
        out += [f"  {n}. {_line(t, r)}" for n, t in enumerate(fixes, 1)]
    rejected = [t for t in r.tried if not t.kept]
    if rejected:
        out.append("")
        out.append("tried, not kept:")
        out += [f"  - {_line(t, r)}" for t in rejected]
    if b.copies and not r.tried:
        out.append("no change to try: no copy sits at a pinned entry value and no convolution is "
                   "written in another order (see `stablehlo-layout explain` for why each copy is there)")
    elif b.copies and not fixes:
        out.append(f"{r.target} confirms none of these: the program is left as it is")
    out.append("")
    if written:
        out.append(f"wrote {written}: the same entry signature; compile it to see these numbers again")
    elif fixes:
        out.append("give -o FILE to write the fixed program")
    return "\n".join(out) + "\n"
