"""The README's quick start, as a newcomer runs it, and CI running exactly that.

Both scripts are run for real in a scratch folder whose `.venv` holds stub
tools that log how they were called, so the tests see what the scripts do
without installing anything.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from tests.support import ROOT


# A stand-in for .venv/bin/python and friends: logs its arguments; the import
# check fails until "pip install" has run (as after the README's command 1,
# which installs the package without the test extras).
_STUB = """#!/usr/bin/env bash
log="$(dirname "$0")/../../calls.log"
echo "$(basename "$0") $*" >> "$log"
if [ "${1:-}" = "-c" ] && [ ! -e "$(dirname "$0")/../extras-installed" ]; then exit 1; fi
if [ "${1:-}" = "-m" ] && [ "${2:-}" = "pip" ] && [ "${3:-}" = "install" ]; then
  touch "$(dirname "$0")/../extras-installed"
fi
# pytest and lit write one passing test where run-tests asks for their results.
report=
prev=
for a in "$@"; do
  case "$a" in --junitxml=*) report="${a#--junitxml=}";; esac
  [ "$prev" = "--xunit-xml-output" ] && report="$a"
  prev="$a"
done
if [ -n "$report" ]; then
  mkdir -p "$(dirname "$report")"
  echo '<testsuites><testsuite tests="1" failures="0" errors="0" skipped="0"/></testsuites>' > "$report"
fi
if [ "${1:-}" = "-" ]; then exec python3 "$@"; fi
exit 0
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _venv_without_test_extras(folder: Path) -> None:
    bindir = folder / ".venv" / "bin"
    bindir.mkdir(parents=True)
    for tool in ("python", "stablehlo-layout", "lit", "filecheck", "ruff", "lint-imports", "mypy"):
        _executable(bindir / tool, _STUB)
    # The second (Python 3.12, jax 0.12) pair's venv, complete: these tests are about .venv.
    other = folder / ".venv-jax012"
    (other / "bin").mkdir(parents=True)
    (other / "extras-installed").touch()
    for tool in ("python", "stablehlo-layout", "lit"):
        _executable(other / "bin" / tool, _STUB)


def test_run_tests_installs_the_test_extras_into_a_venv_made_by_quick_start_command_1(tmp_path: Path) -> None:
    shutil.copy(ROOT / "run-tests", tmp_path / "run-tests")
    _venv_without_test_extras(tmp_path)
    out = subprocess.run(["bash", str(tmp_path / "run-tests")], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    install = next(i for i, c in enumerate(calls) if c.startswith("python -m pip install") and "-e .[test]" in c)
    pytest_run = next(i for i, c in enumerate(calls) if c.startswith("python -m pytest"))
    assert install < pytest_run
    # The sources' bytecode is written once installed (where Python may not write it itself).
    compiled = [i for i, c in enumerate(calls) if c == "python -m compileall -q stablehlo_layout passes"]
    assert len(compiled) == 2 and install < compiled[0] < pytest_run
    # Every tier on both pairs, but not the lit wrapper: lit runs (and is counted) once, by itself.
    pytest_runs = [c for c in calls if c.startswith("python -m pytest")]
    assert len(pytest_runs) == 2 and all(" -m not lit " in c for c in pytest_runs), pytest_runs
    assert "tests: 4 passed, 0 failed" in out.stdout  # one pytest and one lit test per pair


def test_run_tests_does_not_reinstall_a_complete_venv(tmp_path: Path) -> None:
    shutil.copy(ROOT / "run-tests", tmp_path / "run-tests")
    _venv_without_test_extras(tmp_path)
    (tmp_path / ".venv" / "extras-installed").touch()
    out = subprocess.run(["bash", str(tmp_path / "run-tests")], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert not any("pip install" in c for c in (tmp_path / "calls.log").read_text().splitlines())


def _quick_start_commands(readme: str) -> list[str]:
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_readme_quick_start_is_venv_then_run_tests() -> None:
    commands = _quick_start_commands((ROOT / "README.md").read_text())
    assert len(commands) == 2
    assert commands[0].startswith("python3 -m venv .venv && .venv/bin/pip install -e .")
    # Bytecode written before the first run: the command need not compile its modules at every start.
    steps = commands[0].split(" && ")
    compiled = steps.index(".venv/bin/python -m compileall -q stablehlo_layout passes")
    assert 1 < compiled < next(i for i, s in enumerate(steps) if s.startswith(".venv/bin/stablehlo-layout "))
    assert commands[1] == "./run-tests"


def test_ci_runs_the_readme_commands_in_order_with_no_cleanup(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / ".venv").mkdir()  # left by command 1: CI must not remove it before command 2
    (tmp_path / "README.md").write_text(
        "# x\n\n## Quick start\n\n```sh\n# 1. first\necho one >> order.log && test -d .venv\n\n"
        "# 2. second\necho two >> order.log\n```\n\n## Later\n\n```sh\necho never >> order.log\n```\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    out = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], cwd=tmp_path, capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "order.log").read_text() == "one\ntwo\n"
    assert (tmp_path / ".venv").is_dir()


def test_ci_stops_at_the_first_failing_command(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "README.md").write_text("## Quick start\n\n```sh\nfalse\necho two >> order.log\n```\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    out = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], cwd=tmp_path, capture_output=True,
                         text=True, env=env)
    assert out.returncode != 0
    assert not (tmp_path / "order.log").exists()
