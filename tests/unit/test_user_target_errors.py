"""A user target whose own hook fails: one line naming the target and the hook, exit 1.

The failure is the target's code, not the input's, so the line says which
target file and which hook; ``--debug`` or ``STABLEHLO_LAYOUT_DEBUG=1`` adds
the traceback.  SystemExit from a hook is a failure too: a target does not get
to end the command with its own exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pinned_transpose.mlir"

TARGETS = '''\
import sys
from stablehlo_layout.targets import Target, XlaCpuTarget


class Raises(Target):
    def add_backend_constraints(self, engine, comp):
        raise ValueError("no dots today")


class Exits(Target):
    def rule(self, g, ins):
        sys.exit(3)


class DerivedFromCpu(XlaCpuTarget):
    def operand_from_output(self, g, ins, n, output, rule):
        raise KeyError("operand")
'''


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stablehlo_layout.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})}, cwd=ROOT)


@pytest.fixture
def targets(tmp_path: Path) -> Path:
    path = tmp_path / "my_targets.py"
    path.write_text(TARGETS)
    return path


@pytest.mark.parametrize("command", ["assign", "explain", "trace"])
@pytest.mark.parametrize("cls, hook, error", [
    ("Raises", "add_backend_constraints", "ValueError: no dots today"),
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
        assert f'File "{targets}", line 7, in add_backend_constraints' in out.stderr
        assert out.stderr.rstrip().splitlines()[-1].endswith("hook add_backend_constraints raised ValueError: "
                                                            "no dots today")


def test_built_in_targets_are_not_wrapped() -> None:
    from stablehlo_layout.targets import XlaCpuTarget, get_target

    target, _ = get_target("xla-cpu")
    assert target.rule.__func__ is XlaCpuTarget.rule  # no guard on our own hooks' hot path
