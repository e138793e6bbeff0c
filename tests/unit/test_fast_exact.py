"""The engine's shortcuts decide nothing.

A default run stops after round 0 when round 1 provably repeats it, lays out
scalar/vector computations without the worklist, and keeps no provenance; an
exact run (what explain and trace use) does none of that.  On every lit input
and every target and entry mode the two print byte-identical modules.  The
fuzzer checks the same property on generated programs (``exact``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stablehlo_layout import mlir
from stablehlo_layout.errors import InputError, PassError
from stablehlo_layout.options import ENTRY_MODES
from stablehlo_layout.targets import TARGET_NAMES
from tests.conftest import assign_text

LIT = Path(__file__).resolve().parents[1] / "lit"
INPUTS = sorted(p for p in list(LIT.glob("*.mlir")) + list(LIT.glob("Inputs/**/*.mlir")))


def _run(data: bytes, name: str, target: str, mode: str, exact: bool) -> tuple[str, int, int]:
    r = assign_text(data, target, mode, name=name, exact=exact)
    return mlir.print_module(r.module, debuginfo=True), r.assignment.rounds, r.assignment.rounds_computed


@pytest.mark.parametrize("path", INPUTS, ids=[str(p.relative_to(LIT)) for p in INPUTS])
def test_fast_and_exact_runs_print_the_same_module(path: Path):
    data = path.read_bytes()
    for target in TARGET_NAMES:
        for mode in ENTRY_MODES:
            try:
                fast, rounds, computed = _run(data, path.name, target, mode, exact=False)
            except (InputError, PassError):
                continue  # a bad-input test file: its error is tested elsewhere
            exact, exact_rounds, exact_computed = _run(data, path.name, target, mode, exact=True)
            assert fast == exact, f"{target} {mode}"
            assert rounds == exact_rounds == exact_computed and computed <= rounds


def test_the_shortcut_is_taken_on_a_plain_module():
    text = (LIT / "transpose.mlir").read_bytes()
    _, rounds, computed = _run(text, "transpose.mlir", "xla-cpu", "default", exact=False)
    assert (rounds, computed) == (2, 1)
