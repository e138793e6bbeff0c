"""XLA dumps as users point the tool at them: folders, globs, leftover functions, pinned entries."""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.command import QUIET, environment, run_command

ENV = environment(QUIET)

_FORI = """
import jax, jax.numpy as jnp
def f(x, w):
    def body(i, c):
        return jnp.sin(c @ w.T).T
    return jax.lax.fori_loop(0, 3, body, x)
x = jnp.ones((8, 8), jnp.float32)
jax.jit(f).lower(x, x).compile()
"""


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    """A real XLA:CPU dump of a jax.lax.fori_loop program, before and after layout assignment."""
    folder = tmp_path_factory.mktemp("dump")
    env = {**ENV, "XLA_FLAGS": f"--xla_dump_to={folder} --xla_dump_hlo_pass_re=layout-assignment"}
    subprocess.run([sys.executable, "-c", _FORI], check=True, env=env, capture_output=True)
    return folder


def _before(dump: Path, module: str) -> Path:
    (path,) = glob.glob(str(dump / f"*.{module}.*before_layout-assignment.txt"))
    return Path(path)


def _xla_copies(dump: Path, module: str) -> int:
    (after,) = glob.glob(str(dump / f"*.{module}.*after_layout-assignment*.txt"))
    return len(re.findall(r"= \S+ copy\(", Path(after).read_text()))


def test_fori_loop_dump_counts_what_xla_copies_and_leaves_leftover_functions_alone(dump: Path) -> None:
    before = _before(dump, "jit_f")
    report = json.loads(run_command("explain", "--target", "xla-cpu", "--json", str(before)).stdout)
    assert report["summary"]["copies"] == _xla_copies(dump, "jit_f")
    out = run_command("assign", "--target", "xla-cpu", str(before)).stdout
    # The converter's leftover copies of the loop's body and condition: not laid
    # out, left exactly as the converter wrote them.
    from stablehlo_layout.ir import mlir

    converted = mlir.print_module(mlir.read_input(str(before), mlir.make_context()))
    leftover = re.compile(r"(  func\.func private @region_.*?\n  \}\n)", re.S)
    assert leftover.findall(out) and leftover.findall(out) == leftover.findall(converted)


UNCALLED = """func.func private @leftover(%x: tensor<16x4xf32>) -> tensor<4x16xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %d = stablehlo.dot_general %t, %t, contracting_dims = [1] x [1] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x4xf32>
  %n = stablehlo.negate %t : tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}
func.func private @used(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %n = stablehlo.negate %x : tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}
func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = func.call @used(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
"""


@pytest.mark.parametrize("target", ["generic", "xla-cpu"])
def test_uncalled_private_function_is_not_laid_out_or_counted(tmp_path: Path, target: str) -> None:
    src = tmp_path / "m.mlir"
    src.write_text(UNCALLED)
    report = json.loads(run_command("explain", "--target", target, "--json", str(src)).stdout)
    assert report["summary"]["copies"] == 0
    out = run_command("assign", "--target", target, str(src)).stdout
    leftover = out.split("@leftover")[1].split("\n  }")[0]
    assert "xla_shape" not in leftover and "mhlo.copy" not in leftover
    assert "xla_shape" in out.split("@main")[1]


def test_dump_folder_glob_and_files_give_one_report_per_module(dump: Path, tmp_path: Path) -> None:
    befores = sorted(glob.glob(str(dump / "*.before_layout-assignment.txt")))
    assert len(befores) >= 2
    by_folder = run_command("explain", "--target", "xla-cpu", str(dump))
    by_files = run_command("explain", "--target", "xla-cpu", *befores)
    by_glob = run_command("explain", "--target", "xla-cpu", str(dump / "*.before_layout-assignment.txt"))
    for out in (by_folder, by_files, by_glob):
        assert out.returncode == 0, out.stderr
        heads = re.findall(r"^== module (\S+): ", out.stdout, re.M)
        assert len(heads) == len(befores) and "jit_f" in heads
        assert out.stdout.count("\nsummary: ") + out.stdout.startswith("summary: ") == len(befores)
    assert by_folder.stdout == by_files.stdout == by_glob.stdout
    docs = json.loads(run_command("explain", "--target", "xla-cpu", "--json", str(dump)).stdout)
    assert [d["module"] for d in docs] == re.findall(r"^== module (\S+): ", by_folder.stdout, re.M)
    assert all(d["schema"] == "stablehlo-layout.explain/1" for d in docs)
    assigned = run_command("assign", "--target", "xla-cpu", str(dump)).stdout
    assert assigned.count("\n// -----\n") == len(befores) - 1 and assigned.count("// module ") == len(befores)
    trace = run_command("trace", "--target", "xla-cpu", str(dump))
    assert trace.returncode == 0 and trace.stdout.count("== module ") == len(befores)
    page = tmp_path / "t.html"
    assert run_command("trace", "--target", "xla-cpu", "--html", str(page), str(dump)).returncode == 0
    assert (tmp_path / "t.jit_f.html").read_text().startswith("<!DOCTYPE html>")
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = run_command("explain", str(empty))
    assert bad.returncode == 1 and "is a directory without XLA dumps" in bad.stderr and "Traceback" not in bad.stderr



def test_the_bundled_dump_folder_is_a_dump_folder(tmp_path: Path) -> None:
    # examples/xla_dump/ holds its pair renamed to the bare suffix; pointing the
    # tool at the folder said "is a directory without XLA dumps".  Files that
    # are no dumps (make.py, a README) are left out, as is the after dump.
    folder = ROOT / "examples" / "xla_dump"
    out = run_command("explain", "--target", "xla-cpu", str(folder))
    assert out.returncode == 0, out.stderr
    same = run_command("explain", "--target", "xla-cpu", str(folder / "before_layout-assignment.txt"))
    assert out.stdout == same.stdout and "summary: 2 copies" in out.stdout

TUPLE_ENTRY = """HloModule tup, entry_computation_layout={((f32[16,4]{1,0}, f32[4,16]{1,0}))->(f32[4,16]{1,0}, f32[16,4]{1,0})}

ENTRY %main.3 (p: (f32[16,4], f32[4,16])) -> (f32[4,16], f32[16,4]) {
  %p = (f32[16,4]{1,0}, f32[4,16]{1,0}) parameter(0)
  %x = f32[16,4]{1,0} get-tuple-element(%p), index=0
  %y = f32[4,16]{1,0} get-tuple-element(%p), index=1
  %t = f32[4,16]{1,0} transpose(%x), dimensions={1,0}
  %a = f32[4,16]{1,0} add(%t, %y)
  %n = f32[16,4]{1,0} negate(%x)
  ROOT %r = (f32[4,16]{1,0}, f32[16,4]{1,0}) tuple(%a, %n)
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)


def test_all_default_entry_layouts_of_a_dump_stay_pinned_under_free(tmp_path: Path, dump: Path) -> None:
    src = tmp_path / "tup.hlo"
    src.write_text(TUPLE_ENTRY)
    pinned = json.loads(run_command("explain", "--json", "--target", "xla-cpu", str(src)).stdout)
    free = json.loads(run_command("explain", "--json", "--target", "xla-cpu", "--entry-layouts", "free",
                            str(src)).stdout)
    assert free["summary"]["copies"] == pinned["summary"]["copies"] == 1
    assert [p["pinned"] for p in free["summary"]["parameters"]] == [True, True]
    grad = _before(dump, "jit_f")  # every entry layout is the default there
    a = json.loads(run_command("explain", "--json", "--target", "xla-cpu", str(grad)).stdout)
    b = json.loads(run_command("explain", "--json", "--target", "xla-cpu", "--entry-layouts", "free", str(grad)).stdout)
    assert a["summary"]["copies"] == b["summary"]["copies"]
    assert all(p["pinned"] for p in b["summary"]["parameters"])
