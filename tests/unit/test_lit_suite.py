"""The lit suite (tests/lit) as one test, so that a bare ``pytest`` runs it too.

lit runs every ``.mlir`` and ``.test`` file under tests/lit with this
interpreter's ``lit``, ``filecheck`` and ``stablehlo-layout`` (lit.cfg.py
finds them next to it) and writes its per-test results as xunit XML; a
failure names every failing test and shows lit's own output for it.
./run-tests runs lit itself, for its per-test report, and leaves this test
out (``-m "not lit"``), so that no lit test is run or counted twice.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.command import QUIET, environment

pytestmark = pytest.mark.lit


def _failures(xunit: Path) -> dict[str, str]:
    """Each failing (or erroring) test's name, with what lit says about it."""
    failed: dict[str, str] = {}
    for case in ET.parse(xunit).getroot().iter("testcase"):
        for kind in ("failure", "error"):
            for bad in case.iter(kind):
                failed[case.get("name", "?")] = (bad.text or bad.get("message") or "").strip()
    return failed


def test_the_lit_suite_passes(tmp_path: Path) -> None:
    lit = Path(sys.executable).parent / "lit"
    if not lit.is_file():
        pytest.fail(f"no lit next to {sys.executable}: pip install -e '.[test]'")
    xunit = tmp_path / "lit.xml"
    out = subprocess.run([str(lit), "-sv", str(ROOT / "tests" / "lit"), "--xunit-xml-output", str(xunit)],
                         cwd=ROOT, capture_output=True, text=True, env=environment(QUIET))
    assert xunit.is_file(), f"lit wrote no results (exit {out.returncode}):\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
    failed = _failures(xunit)
    shown = "\n\n".join(f"--- {name}\n{text[-1500:]}" for name, text in sorted(failed.items()))
    assert not failed, f"{len(failed)} lit test(s) failed: {', '.join(sorted(failed))}\n\n{shown}"
    assert out.returncode == 0, f"lit exited {out.returncode}:\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
    assert sum(1 for _ in ET.parse(xunit).getroot().iter("testcase")) > 0, "lit found no tests"
