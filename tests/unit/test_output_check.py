"""A rewritten module that does not verify never leaves the tool: neither from
``assign_module`` (it verifies) nor from the command (its printer verifies)."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxlib.mlir import ir

from stablehlo_layout.frontends import api as assignment, cli
from stablehlo_layout.ir import mlir
from stablehlo_layout.model.errors import PassError
from tests.conftest import load_text

TEXT = """
func.func public @main(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.negate %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
"""


def _broken_rewrite(real):
    """The real rewrite, then a bug of ours: a ``func.return`` in the middle of @main."""

    def rewrite(module, a, h, **options):
        copies = real(module, a, h, **options)
        op = module.operation if isinstance(module, ir.Module) else module
        main = op.regions[0].blocks[0].operations[0]
        block = main.regions[0].blocks[0]
        with op.context, ir.Location.unknown():
            ir.Operation.create("func.return", ip=ir.InsertionPoint(block.operations[0]))
        return copies

    return rewrite


@pytest.mark.parametrize("temporary_folder", [True, False])
def test_printed_generic_tells_a_failed_verification(ctx: ir.Context, monkeypatch, tmp_path: Path,
                                                      temporary_folder: bool) -> None:
    if not temporary_folder:  # the printer final_text_bytes falls back to verifies too
        import tempfile

        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    def generic(module, debuginfo: bool = False) -> bool:
        """What printed_generic says of the printed file (as the command asks) and of its bytes."""
        with mlir.final_text(module, debuginfo) as printed:
            of_file = mlir.printed_generic(printed)
        assert of_file == mlir.printed_generic(mlir.final_text_bytes(module, debuginfo))
        return of_file

    module = load_text(TEXT, ctx=ctx)
    assert not generic(module)
    assert not generic(module, debuginfo=True)  # '#loc' aliases first
    main = module.body.operations[0]
    with ctx, ir.Location.unknown():
        ir.Operation.create("func.return", ip=ir.InsertionPoint(main.regions[0].blocks[0].operations[0]))
    assert generic(module)
    assert generic(module, debuginfo=True)


def test_assign_module_refuses_a_module_it_broke(monkeypatch) -> None:
    monkeypatch.setattr(assignment, "rewrite", _broken_rewrite(assignment.rewrite))
    with pytest.raises(PassError, match="internal error: the rewritten module does not verify "
                                        r"\('func.return' op must be the last operation"):
        assignment.assign_module(load_text(TEXT), "xla-cpu")


@pytest.mark.parametrize("debuginfo", [[], ["--mlir-print-debuginfo"]])
def test_the_command_refuses_a_module_it_broke(monkeypatch, tmp_path: Path, capsys, debuginfo) -> None:
    src = tmp_path / "in.mlir"
    src.write_text(TEXT)
    out = tmp_path / "out.mlir"
    assert cli.main(["assign", "--target", "xla-cpu", *debuginfo, str(src), "-o", str(out)]) == 0
    assert out.exists()
    out.unlink()
    monkeypatch.setattr(assignment, "rewrite", _broken_rewrite(assignment.rewrite))
    assert cli.main(["assign", "--target", "xla-cpu", *debuginfo, str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "internal error: the rewritten module does not verify" in err[0], err
    assert not out.exists()
