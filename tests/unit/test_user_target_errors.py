"""A user target whose own hook fails: one line naming the target and the hook, exit 1.

The failure is the target's code, not the input's, so the line says which
target file and which hook; ``--debug`` or ``STABLEHLO_LAYOUT_DEBUG=1`` adds
the traceback.  SystemExit from a hook is a failure too: a target does not get
to end the command with its own exit code.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.command import environment, run_command

EXAMPLE = ROOT / "examples" / "pinned_transpose.mlir"

TARGETS = '''\
import sys
from stablehlo_layout.targets import Target, XlaCpuTarget


class Raises(Target):
    def backend_demands(self, view, comp):
        raise ValueError("no dots today")


class RaisesLater(Target):
    def backend_demands(self, view, comp):
        yield from ()
        raise ValueError("a generator fails while the engine iterates it")


class Exits(Target):
    def rule(self, g, ins):
        sys.exit(3)


class DerivedFromCpu(XlaCpuTarget):
    def operand_from_output(self, g, ins, n, output, rule):
        raise KeyError("operand")
'''


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_command(*argv, env=environment({"JAX_PLATFORMS": "cpu", **(env or {})}), cwd=ROOT)


@pytest.fixture
def targets(tmp_path: Path) -> Path:
    path = tmp_path / "my_targets.py"
    path.write_text(TARGETS)
    return path


@pytest.mark.parametrize("command", ["assign", "explain", "trace"])
@pytest.mark.parametrize("cls, hook, error", [
    ("Raises", "backend_demands", "ValueError: no dots today"),
    ("RaisesLater", "backend_demands", "ValueError: a generator fails while the engine iterates it"),
    ("Exits", "rule", "SystemExit: 3"),
    ("DerivedFromCpu", "operand_from_output", "KeyError: 'operand'"),
])
def test_a_failing_hook_is_one_line_naming_target_and_hook(targets: Path, command: str, cls: str, hook: str,
                                                           error: str) -> None:
    out = _run(command, "--target", f"{targets}:{cls}", str(EXAMPLE))
    assert out.returncode == 1, out
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1, out.stderr
    assert str(targets) in out.stderr and f"hook {hook} raised {error}" in out.stderr
    assert "Traceback" not in out.stderr


def test_debug_flag_and_environment_show_the_traceback(targets: Path) -> None:
    for out in (_run("assign", "--debug", "--target", f"{targets}:Raises", str(EXAMPLE)),
                _run("assign", "--target", f"{targets}:Raises", str(EXAMPLE), env={"STABLEHLO_LAYOUT_DEBUG": "1"})):
        assert out.returncode == 1
        assert "Traceback (most recent call last)" in out.stderr
        assert f'File "{targets}", line 7, in backend_demands' in out.stderr
        assert out.stderr.rstrip().splitlines()[-1].endswith("hook backend_demands raised ValueError: "
                                                            "no dots today")


def test_built_in_targets_are_not_wrapped() -> None:
    from stablehlo_layout.targets import XlaCpuTarget, get_target

    target, _ = get_target("xla-cpu")
    assert target.rule.__func__ is XlaCpuTarget.rule  # no guard on our own hooks' hot path


# Demands a user target gets wrong; each run must fail in one line that names the target.
BAD_DEMANDS = '''\
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import Demand
from stablehlo_layout.targets import Target


def dots(view, comp):
    return [i for i in view.graph.comps[comp].instrs if view.rule(i).hlo == "dot_general"]


class NotADemand(Target):
    def backend_demands(self, view, comp):
        return [("operand", d, 0, (0, 1)) for d in dots(view, comp)]


class WrongRank(Target):
    def backend_demands(self, view, comp):
        return [Demand.on_operand(d, 0, (0, 1, 2), Origin("target:mine", d)) for d in dots(view, comp)]


class NotAPermutation(Target):
    def backend_demands(self, view, comp):
        return [Demand.on_operand(d, 1, (0, 0), Origin("target:mine", d)) for d in dots(view, comp)]


class NoSuchOperand(Target):
    def backend_demands(self, view, comp):
        return [Demand.on_operand(d, 5, (0, 1), Origin("target:mine", d)) for d in dots(view, comp)]


class NoOrigin(Target):
    def backend_demands(self, view, comp):
        return [Demand.on_operand(d, 0, (0, 1), None) for d in dots(view, comp)]


class ReturnsNone(Target):
    def backend_demands(self, view, comp):
        pass


class OldHook(Target):
    def add_backend_constraints(self, engine, comp):
        pass
'''
DOT = """
func.func public @main(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
"""


@pytest.mark.parametrize("cls, words", [
    ("NotADemand", "is not a stablehlo_layout.targets.demands.Demand"),
    ("WrongRank", "layout (0, 1, 2) for operand 0 of instruction 2 (stablehlo.dot_general) is not a permutation "
                  "of the 2 dimensions of f32[2,3]"),
    ("NotAPermutation", "layout (0, 0) for operand 1 of instruction 2 (stablehlo.dot_general) is not a "
                        "permutation of the 2 dimensions of f32[3,2]"),
    ("NoSuchOperand", "has no operand 5"),
    ("NoOrigin", "origin must be a stablehlo_layout.model.constraints.Origin"),
    ("ReturnsNone", "hook backend_demands raised TypeError: it returned None"),
    ("OldHook", "OldHook.add_backend_constraints(engine, comp) is no longer called; a target returns Demand "
                "objects from backend_demands(view, comp) instead"),
])
def test_a_bad_demand_is_one_line_naming_the_target(tmp_path: Path, cls: str, words: str) -> None:
    path = tmp_path / "bad_demands.py"
    path.write_text(BAD_DEMANDS)
    dot = tmp_path / "dot.mlir"
    dot.write_text(DOT)
    out = _run("assign", "--target", f"{path}:{cls}", str(dot))
    assert out.returncode == 1, out
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1, out.stderr
    assert f"target '{path}:{cls}'" in out.stderr and words in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
