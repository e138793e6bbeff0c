"""--mlir-print-debuginfo on explain and trace: each op named by its whole location.

assign prints locations in the IR with it; explain and trace take the same
option and name each op by every frame of its call stack instead of the
short form (a name and the innermost file position).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stablehlo_layout.frontends import cli

MODULE = '''\
func.func public @main(%x: tensor<16x4xf32> {mhlo.layout_mode = "{1,0}"}) -> tensor<4x16xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32> loc(#t)
  %y = stablehlo.negate %t : tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
#inner = loc("model.py":12:8)
#outer = loc("train.py":40:4)
#t = loc("jit(f)/transpose"(callsite(#inner at #outer)))
'''


@pytest.mark.parametrize("command", ["explain", "trace"])
def test_reports_name_ops_by_the_whole_location(tmp_path: Path, capsys, command: str) -> None:
    src = tmp_path / "m.mlir"
    src.write_text(MODULE)
    assert cli.main([command, str(src)]) == 0
    short = capsys.readouterr().out
    assert "stablehlo.transpose at jit(f)/transpose (model.py:12:8)" in short
    assert "train.py" not in short
    assert cli.main([command, "--mlir-print-debuginfo", str(src)]) == 0
    full = capsys.readouterr().out
    assert ('stablehlo.transpose at "jit(f)/transpose"(callsite("model.py":12:8 at "train.py":40:4))' in full)
    # Only the names changed: the same copies and pops, line for line.
    assert len(full.splitlines()) == len(short.splitlines())
