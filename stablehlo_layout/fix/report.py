"""What ``fix`` found, and its report as people read it: XLA's copies before and after, each change
at its source line, and the JSON document (``docs/fix.schema.json``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from stablehlo_layout.fix.candidates import Candidate
from stablehlo_layout.fix.measure import Measured
from stablehlo_layout.report.explain import fmt_bytes

SCHEMA = "stablehlo-layout.fix/1"


@dataclass
class Tried:
    """A candidate and what XLA made of it, alone against the program as given."""

    candidate: Candidate
    measured: Measured | None  # None: the change did not apply, or XLA refused it
    error: str = ""
    kept: bool = False  # part of the written program

    def removed(self, base: Measured) -> tuple[int, int]:
        assert self.measured is not None
        return base.copies - self.measured.copies, base.bytes - self.measured.bytes


@dataclass
class FixResult:
    """What fix found for one program: XLA's copies as given and as fixed, every change tried."""

    target: str  # the XLA compiled with, e.g. "XLA:CPU"
    before: Measured
    after: Measured
    fixed_text: str  # the written program
    tried: list[Tried] = field(default_factory=list)
    path: str = ""  # the input, as reports name it

    @property
    def fixes(self) -> list[Tried]:
        return [t for t in self.tried if t.kept]

    def __str__(self) -> str:
        return render_fix(self, self.path, None)

    def to_json(self) -> dict[str, object]:
        def entry(t: Tried) -> dict[str, object]:
            out: dict[str, object] = {"kind": t.candidate.kind, "what": t.candidate.what,
                                      "where": t.candidate.where.to_json(), "verified_by": self.target}
            if t.measured is not None:
                copies, nbytes = t.removed(self.before)
                out.update(copies_removed=copies, bytes_removed=nbytes)
            else:
                out.update(copies_removed=None, bytes_removed=None, error=t.error)
            return out

        return {"schema": SCHEMA, "target": self.target,
                "xla": {"before": self.before.to_json(), "after": self.after.to_json()},
                "fixes": [entry(t) for t in self.fixes],
                "rejected": [entry(t) for t in self.tried if not t.kept]}



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
    n = t.measured.copies
    return f"{head}: {r.target} makes {n} cop{'y' if n == 1 else 'ies'}, {_delta(-removed_copies, -removed_bytes)}"


def _totals(r: FixResult) -> str:
    b, a = r.before, r.after
    return (f"XLA's copies: {b.copies} ({fmt_bytes(b.bytes)}) as given, {a.copies} ({fmt_bytes(a.bytes)}) fixed: "
            f"{_delta(a.copies - b.copies, a.bytes - b.bytes)}, counted in {r.target}'s own layout assignment")


def verified_section(r: FixResult) -> str:
    """What ``explain --verify-fixes`` adds below its summary: the changes to the program that XLA
    confirms, each at its source line with XLA's own numbers (``fix``'s search, not a rerun of ours)."""
    out = [f"changes {r.target} confirms (each compiled alone against the program as given; "
           "`stablehlo-layout fix -o FIXED` writes the program with them):", "  " + _totals(r)]
    if not r.before.copies:
        out.append(f"  nothing to change: {r.target} makes no copy in this program")
    elif not r.fixes:
        out.append(f"  {r.target} confirms no change: " + ("none was found to try" if not r.tried else
                   f"{len(r.tried)} tried, none removes copy bytes"))
    out += [f"  {n}. {_line(t, r)}" for n, t in enumerate(r.fixes, 1)]
    return "\n".join(out) + "\n"


def verified_table(r: FixResult) -> tuple[str, list[str], list[list[str]]]:
    """The same changes as the trace page's summary shows them: a titled table, one row per change."""
    b, a = r.before, r.after
    title = (f"Changes {r.target} confirms: {b.copies} cop{'y' if b.copies == 1 else 'ies'} "
             f"({fmt_bytes(b.bytes)}) as given, {a.copies} ({fmt_bytes(a.bytes)}) with them all")
    rows = []
    for n, t in enumerate(r.fixes, 1):
        assert t.measured is not None  # a kept change was measured
        copies, nbytes = t.removed(b)
        rows.append([str(n), t.candidate.where.text(), t.candidate.what, str(t.measured.copies), _delta(-copies, -nbytes)])
    return title, ["#", "where", "change", f"{r.target}'s copies", "removed"], rows


def render_fix(r: FixResult, path: str, written: str | None) -> str:
    b, a = r.before, r.after
    out = [f"fix {path}: {r.target}", _totals(r)]
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
