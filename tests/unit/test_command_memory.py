"""What ``stablehlo-layout assign`` keeps alive while it prints: not the assignment, not the text.

The printer's buffers come on top of whatever is still alive, and the
assignment's tables (~200 B per instruction) are dead by then; the graph is
left for the process's exit, which never tears it down.  The command runs
without the cyclic collector (``cli.run``), so the assignment must go by
reference counting alone: the check holds the collector off as the command does.
The printed text goes from the printer's file to the output in pieces: it is
never read whole.
"""

from __future__ import annotations

import contextlib
import gc
from pathlib import Path

import pytest

from stablehlo_layout.frontends import cli
from stablehlo_layout.ir import mlir
from stablehlo_layout.engine.result import Assignment

from tests.support import ROOT

EXAMPLE = ROOT / "examples" / "pinned_transpose.mlir"


def _alive(cls: type) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is cls)


def test_assign_frees_the_assignment_before_printing(monkeypatch, tmp_path: Path) -> None:
    real = mlir.final_text
    seen: list[int] = []

    @contextlib.contextmanager
    def printer(module, debuginfo: bool = False):
        seen.append(_alive(Assignment))
        with real(module, debuginfo) as printed:
            yield printed

    monkeypatch.setattr(mlir, "final_text", printer)
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


@pytest.mark.parametrize("to_file", [True, False])
def test_assign_copies_the_printed_text_out_in_pieces(monkeypatch, tmp_path: Path, capsysbinary, to_file) -> None:
    want = mlir.final_text_bytes(_assigned(EXAMPLE))

    def whole(self) -> bytes:
        raise AssertionError("the command read the printed module whole")

    monkeypatch.setattr(mlir.PrintedModule, "read", whole)
    monkeypatch.setattr(mlir.PrintedModule, "CHUNK", 7)  # many pieces, the last one short
    out = tmp_path / "out.mlir"
    assert cli.main(["assign", "--target", "xla-cpu", str(EXAMPLE), *(["-o", str(out)] if to_file else [])]) == 0
    got = out.read_bytes() if to_file else capsysbinary.readouterr().out
    assert len(want) > 100 and len(want) % 7 and got == want


def _assigned(path: Path):
    from stablehlo_layout.frontends.api import assign_module

    module = mlir.read_input(str(path), mlir.make_context())
    assign_module(module, "xla-cpu")
    return module
