"""The compiled core's own C++ unit tests (tests/cpp), and its Python face.

The test binary is built from the same sources as the extension module, with
the CMake and C++ compiler that ``pip install`` needs anyway.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from stablehlo_layout import _core
from stablehlo_layout.ir.importer import import_module
from stablehlo_layout.engine.state import EngineState
from stablehlo_layout.targets import GenericTarget
from tests.conftest import load_text
from tests.support import ROOT


@pytest.mark.slow  # CMake configures and builds the core's C++ tests from scratch
def test_the_core_unit_tests_pass(tmp_path: Path):
    cmake = shutil.which("cmake")
    assert cmake is not None, "cmake is needed to build the package; it is not on PATH"
    build = tmp_path / "build"
    configure = subprocess.run([cmake, "-S", str(ROOT), "-B", str(build), "-DSL_CORE_TESTS=ON",
                                "-DCMAKE_BUILD_TYPE=Debug"], capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    made = subprocess.run([cmake, "--build", str(build), "--target", "core_tests", "-j", "2"],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stdout + made.stderr
    run = subprocess.run([str(build / "core_tests")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "all checks passed" in run.stdout


MODULE = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %t = stablehlo.transpose %b, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %s = stablehlo.add %a, %t : tensor<4x8xf32>
  %d = stablehlo.dot_general %s, %b, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  return %d : tensor<4x4xf32>
}
"""


def test_the_engine_takes_its_orders_from_the_core():
    g, _ = import_module(load_text(MODULE, "test.mlir"))
    e = EngineState(g, GenericTarget())
    assert isinstance(e.index, _core.Index)
    entry = g.entry
    order = e.post_order(entry)
    names = [g.instrs[i].op for i in order]
    # Operands first, left to right: %a's and %b's parameters, then the ops, the root last.
    assert names == ["parameter", "parameter", "stablehlo.transpose", "stablehlo.add",
                     "stablehlo.dot_general", "root"]
    assert e.comp_order == [entry]
    # Every value an instruction defines is its own shape index here (no tuples).
    assert list(e.leaves) == [list(ins.results) for ins in g.instrs]


def test_the_cores_align_layouts_is_the_python_one():
    # The core derives across reshapes itself for targets that keep the base
    # rule; layout.align_layouts stays for the targets that refine it.  Both
    # must agree on every layout of every shape pair tried here.
    from itertools import permutations

    from stablehlo_layout.model import layout as L

    shapes = [(2, 3, 4), (6, 4), (24,), (4, 6), (2, 12), (1, 24), (24, 1), (2, 1, 12), (3, 8), (4, 3, 2),
              (1, 2, 3, 4), (2, 3, 1, 4), (0, 4), (4, 0), (8, 3), (2, 2, 6)]
    checked = 0
    for src in shapes:
        for dst in shapes:
            if src == dst or (0 in src) != (0 in dst):
                continue
            for lay in permutations(range(len(src))):
                assert _core.align_layouts(list(src), list(lay), list(dst)) == L.align_layouts(src, lay, dst), \
                    (src, lay, dst)
                checked += 1
    assert checked > 1000
