"""No recursion limits: 10,000 nested whiles, 10,000 nested cases, a 10,000-deep call chain.

Every command runs on each program (assign, explain with fixes, trace, trace
--html), in one process per program so the parse is the only fixed cost
paid again.  Each deep program must give the same report as its 3-deep
twin: depth changes nothing but depth.  (Before: ~495 nested whiles ended in
a RecursionError traceback, and MLIR's parser overflowed the main thread's
stack near 1,000.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, deep

# 10,000-deep programs through every command: minutes on two cores.
pytestmark = pytest.mark.slow

_SCRIPT = """
import json, sys
from stablehlo_layout.frontends import cli
src, target, folder = sys.argv[1:4]
codes = [
    cli.main(["assign", "--target", target, src, "-o", "/dev/null"]),
    # Two what-if reruns exercise the fixes; each costs a whole pass at this depth.
    cli.main(["explain", "--target", target, "--json", "--max-reruns", "2", src, "-o", folder + "/explain.json"]),
    cli.main(["trace", "--target", target, src, "-o", folder + "/trace.txt"]),
    cli.main(["trace", "--target", target, "--html", folder + "/trace.html", src]),
]
print(json.dumps(codes))
"""


def _run_all(tmp_path: Path, name: str, text: str, target: str) -> dict:
    folder = tmp_path / name
    folder.mkdir()
    src = folder / "in.mlir"
    src.write_text(text)
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(src), target, str(folder)], cwd=ROOT,
                         capture_output=True, text=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "RecursionError" not in out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, 0, 0, 0], out.stderr[-3000:]
    report = json.loads((folder / "explain.json").read_text())
    trace = (folder / "trace.txt").read_text()
    page = (folder / "trace.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and trace.count("pop ") > 0
    return report


def _shape(report: dict) -> tuple:
    s = report["summary"]
    return (s["copies"], s["bytes"], [(r["reason"], r["copies"]) for r in s["by_reason"]],
            [(c["from"]["minor_to_major"], c["to"]["minor_to_major"], c["fix"] and c["fix"]["change"])
             for c in report["copies"]])


@pytest.mark.parametrize("make, target", [(deep.nested_whiles, "xla-cpu"), (deep.nested_cases, "xla-cpu"),
                                          (deep.call_chain, "xla-cpu"), (deep.call_chain, "generic")],
                         ids=["whiles", "cases", "calls-inlined", "calls-generic"])
def test_ten_thousand_deep_runs_every_command_like_three_deep(tmp_path: Path, make, target: str) -> None:
    shallow = _run_all(tmp_path, "shallow", make(3), target)
    deep_report = _run_all(tmp_path, "deep", make(10_000), target)
    assert shallow["summary"]["copies"] > 0
    assert _shape(deep_report) == _shape(shallow)
