"""What ``stablehlo-layout assign`` keeps alive while it prints: not the assignment.

The printer's buffers come on top of whatever is still alive, and the
assignment's tables (~200 B per instruction) are dead by then; the graph is
left for the process's exit, which never tears it down.  The command runs
without the cyclic collector (``cli.run``), so the assignment must go by
reference counting alone: the check holds the collector off as the command does.
"""

from __future__ import annotations

import gc
from pathlib import Path

from stablehlo_layout import cli, mlir
from stablehlo_layout.propagation import Assignment

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pinned_transpose.mlir"


def _alive(cls: type) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def test_assign_frees_the_assignment_before_printing(monkeypatch, tmp_path: Path) -> None:
    real = mlir.final_text_bytes
    seen: list[int] = []

    def printer(module, debuginfo: bool = False) -> bytes:
        seen.append(_alive(Assignment))
        return real(module, debuginfo)

    monkeypatch.setattr(mlir, "final_text_bytes", printer)
    out = tmp_path / "out.mlir"
    gc.collect()
    before = _alive(Assignment)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        assert cli.main(["assign", "--target", "xla-cpu", str(EXAMPLE), "-o", str(out)]) == 0
    finally:
        if was_enabled:
            gc.enable()
    assert "mhlo.copy" in out.read_text()  # the copies were made and printed
    assert seen == [before]
