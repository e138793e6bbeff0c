"""Verify the proposed changes with XLA, keep what it confirms, combine them.

Each candidate is compiled on its own (in parallel: every compile parses
its program in a context of its own, and jaxlib releases the GIL while XLA
compiles), against the program as given; those that leave XLA fewer copy
bytes are combined, largest saving first, each kept only if XLA confirms
the combination is better again.  The program written out is compiled once
more from its printed text, and that compile's numbers are the ones
reported: anyone compiling the written program gets them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, cast

from jaxlib.mlir import ir

from stablehlo_layout.fix.candidates import Candidate, follow_up, propose
from stablehlo_layout.fix.measure import Measure, Measured
from stablehlo_layout.fix.report import FixResult, Tried
from stablehlo_layout.ir import mlir
from stablehlo_layout.xla.pipeline import quietly, with_entry_layout_modes

if TYPE_CHECKING:
    from stablehlo_layout.targets.base import Target

def _printed(module: ir.Module) -> str:
    return cast(str, module.operation.get_asm(enable_debug_info=True))  # jaxlib types get_asm as object


def _applied(text: str, changes: Sequence[Candidate], path: str) -> tuple[str, bool]:
    """``text`` with ``changes`` made, printed; and whether any of them changed anything."""
    ctx = mlir.make_context()
    module = mlir.load(text, path, ctx)
    changed = False
    for c in changes:
        changed = c.apply(module) or changed
    module.operation.verify()
    return _printed(module), changed


def _overlap(a: Candidate, b: Candidate) -> bool:
    """Whether two entry-layout changes state a layout for the same entry value."""
    if a.entry is None or b.entry is None:
        return a.kind == b.kind == "convolution-order"  # one order for all convolutions at a time
    return bool(a.entry[0].keys() & b.entry[0].keys() or a.entry[1].keys() & b.entry[1].keys())


def _verify(work: list[tuple[Candidate, str]], compile_text: Callable[[str], Measured], label: str,
            jobs: int | None, say: Callable[[str], None]) -> list[Tried]:
    """Each (candidate, program text) compiled with XLA, in parallel."""
    if not work:
        return []
    say(f"verifying {len(work)} candidate change(s) with {label}")

    def verify(item: tuple[Candidate, str]) -> Tried:
        c, text = item
        try:
            return Tried(c, compile_text(text))
        except Exception as e:  # XLA refusing one rewrite refutes that rewrite, not the run
            return Tried(c, None, f"{label} refused it: {e}")

    workers = max(1, min(len(work), jobs or os.cpu_count() or 1))

    def run_all() -> list[Tried]:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(verify, item) for item in work]
            for k, _ in enumerate(as_completed(futures), 1):
                say(f"verified {k} of {len(work)} candidate change(s) with {label}")
            return [f.result() for f in futures]

    done: list[Tried] = quietly(run_all)
    return done


def fix_module(module: ir.Module, path: str, target: Target, entry_layouts: str = "default",
               jobs: int | None = None, step: Callable[[str], None] | None = None) -> FixResult:
    """Find the changes to ``module`` that XLA confirms remove copy bytes; the program with them made.

    ``step(text)`` is told what is being compiled (a progress line).
    """
    say = step or (lambda _: None)
    measure = Measure(target, path)
    program = _printed(with_entry_layout_modes(module, entry_layouts))

    def compile_text(text: str) -> Measured:
        return measure(mlir.load(text, path, mlir.make_context()), quiet=False)

    def quiet_compile(text: str) -> Measured:
        result: Measured = quietly(lambda: compile_text(text))
        return result

    say("compiling the program as given")
    base = quiet_compile(program)
    label = measure.label
    tried: list[Tried] = []
    if base.copies:
        start = mlir.load(program, path, mlir.make_context())
        candidates = propose(start, base.after, path)
        texts: list[str | None] = []
        for c in candidates:
            try:
                text, changed = _applied(program, [c], path)
                texts.append(text if changed else None)
            except Exception as e:  # a rewrite that cannot be made here is no fix, and the run goes on
                tried.append(Tried(c, None, f"the change could not be made: {e}"))
                texts.append(None)
        work = [(c, t) for c, t in zip(candidates, texts) if t is not None]
        tried.extend(Tried(c, None, "nothing to change") for c, t in zip(candidates, texts)
                     if t is None and not any(x.candidate is c for x in tried))
        verified = _verify(work, compile_text, label, jobs, say)
        # Second round: entry pins that moved XLA's copy to a pinned result, with that result pinned too.
        again = []
        for t in verified:
            if t.measured is not None:
                follow = follow_up(t.candidate, start, t.measured.after, path)
                if follow is not None:
                    again.append((follow, _applied(program, [follow], path)[0]))
        tried.extend(verified)
        tried.extend(_verify(again, compile_text, label, jobs, say))
    # On a tie a rewrite of the program goes before an entry-layout change: a changed entry
    # layout reaches the caller, who then hands or receives the value in another layout.
    good = sorted((t for t in tried if t.measured is not None and t.measured.bytes < base.bytes),
                  key=lambda t: (t.measured.bytes, t.measured.copies,  # type: ignore[union-attr]
                                 t.candidate.kind == "entry-layout"))
    chosen: list[Tried] = []
    best_text, best = program, base
    for t in good:
        assert t.measured is not None
        if any(_overlap(t.candidate, c.candidate) for c in chosen):
            continue  # two ways to state the same entry layout: the better one came first
        if not chosen:
            text, _ = _applied(program, [t.candidate], path)
            chosen, best_text, best = [t], text, t.measured
            continue
        say(f"combining {len(chosen) + 1} changes")
        text, changed = _applied(program, [c.candidate for c in [*chosen, t]], path)
        if not changed:
            continue
        together = quiet_compile(text)
        if together.bytes < best.bytes:
            chosen, best_text, best = [*chosen, t], text, together
    for t in chosen:
        t.kept = True
    say("compiling the fixed program as written")
    after = quiet_compile(best_text) if chosen else base
    return FixResult(label, base, after, best_text, tried, path)
