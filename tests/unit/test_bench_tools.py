"""bench/'s measuring tools, on small inputs: they run and report what they say (never how fast).

The benchmark itself (bench/run.py, minutes) is not run here; what it is
built from is: the parse + walk + print floor (bench/baseline.py), the
peak-RSS wrapper (bench/peak.py), the whole-commands table, the A/B in
turns (bench/alternate.py), and the phase
script bench/instructions.py runs under callgrind (run natively here, so a
change of the engine's entry points that bench/phases.py does not follow
fails in the suite, not in the next benchmark run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT

BENCH = ROOT / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import instructions  # noqa: E402
import run as bench_run  # noqa: E402

DUMP = "examples/xla_dump/before_layout-assignment.txt"
ENV = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")


def _python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, env=ENV)


def test_baseline_prints_the_module_as_read() -> None:
    from stablehlo_layout.ir import mlir

    proc = _python("bench/baseline.py", DUMP)
    assert proc.returncode == 0, proc.stderr
    want = mlir.final_text_bytes(mlir.read_input(str(ROOT / DUMP), mlir.make_context()))
    assert proc.stdout == want
    assert b"mhlo.copy" not in proc.stdout  # nothing assigned: the floor, not the pass


def test_baseline_bad_input_is_one_line() -> None:
    proc = _python("bench/baseline.py", "tests/lit/Inputs/syntax_error.mlir")
    assert proc.returncode == 1
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "syntax_error.mlir" in lines[0] and "error" in lines[0]


def test_walk_visits_every_op() -> None:
    import baseline
    from stablehlo_layout.ir import mlir

    module = mlir.load(b"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                       b"  %y = stablehlo.negate %x : tensor<2xf32>\n  return %y : tensor<2xf32>\n}\n",
                       "t.mlir", mlir.make_context())
    assert baseline.walk(module.operation) == 4  # module, func, negate, return


def test_peak_reports_the_commands_own_peak_and_exit(tmp_path: Path) -> None:
    report = tmp_path / "peak.json"
    proc = _python("bench/peak.py", str(report), "assign", "--target", "xla-cpu", DUMP)
    assert proc.returncode == 0, proc.stderr
    assert b"mhlo.copy" in proc.stdout  # the command ran and printed
    got = json.loads(report.read_text())
    assert got["exit"] == 0 and got["vmhwm_kb"] > 0
    proc = _python("bench/peak.py", str(report), "assign", "tests/lit/Inputs/empty.mlir")
    assert proc.returncode == 1 and json.loads(report.read_text())["exit"] == 1
    assert b"empty input" in proc.stderr


def test_whole_commands_table() -> None:
    ours = bench_run.Ours({p: 1.0 for p in bench_run.PHASES}, 100, 3)
    c = bench_run.Commands(assign_ms=100.0, assign_rss_mb=300.0, baseline_ms=40.0, baseline_rss_mb=150.0,
                           explain_ms=150.0)
    row = bench_run.Row(256, "xla-dump", 43020, 200.0, 180.0, ours, c.assign_ms, (0.0, 0.0, 0.0), c)
    text = "\n".join(bench_run.render_commands([row], 3))
    assert "RSS ratio" in text and "explain/assign" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("| 256"))
    cells = [x.strip() for x in line.strip("|").split("|")]
    assert cells[6] == "2.00 MISS" and cells[8] == "1.50 ok" and cells[9] == "60"
    assert bench_run.render_commands([bench_run.Row(64, "xla-dump", 1, 1.0, 1.0, ours, None)], 1) == []


def test_instruction_phases_run_natively() -> None:
    """The callgrind children's script, without callgrind: every stop runs to its end and leaves cleanly."""
    for stop in ("startup", "print"):
        proc = _python("-c", instructions._CHILD, str(ROOT / DUMP), stop, str(ROOT))
        assert proc.returncode == 0, (stop, proc.stderr[-2000:])
    assert instructions.STEPS[0] == "startup" and instructions.STEPS[-1] == "print"


def test_instruction_command_child_runs_the_checkout_it_is_given(tmp_path) -> None:
    """The whole-command child runs ``--code``'s stablehlo_layout, not the editable install's."""
    code = tmp_path / "other"
    (code / "stablehlo_layout").mkdir(parents=True)
    (code / "stablehlo_layout" / "__init__.py").write_text("")
    (code / "stablehlo_layout" / "cli.py").write_text(
        "import sys\ndef run():\n    print('other checkout', sys.argv[1:])\n")
    proc = _python("-c", instructions._COMMAND, str(code), "assign", "x.mlir")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == b"other checkout ['assign', 'x.mlir']"
    proc = _python("-c", instructions._COMMAND, str(ROOT), "assign", "--target", "xla-cpu", str(ROOT / DUMP))
    assert proc.returncode == 0 and proc.stdout.startswith(b"module"), proc.stderr[-2000:]


def test_instruction_counts_with_explain_print_its_ratio_to_the_command(monkeypatch, capsys) -> None:
    """``--explain`` counts one more child, the whole explain command, and sets it against assign's."""
    asked: list[str] = []
    counts = {"startup": 100, "parse": 150, "import": 250, "propagate": 400, "rewrite": 450, "print": 500,
              "command": 600_000_000, "explain": 900_000_000}

    def fake_count(path: str, stop: str, code: str) -> int:
        asked.append(stop)
        return counts[stop]

    monkeypatch.setattr(instructions, "count", fake_count)
    monkeypatch.setattr(instructions.shutil, "which", lambda name: "/usr/bin/" + name)
    assert instructions.main(["--input", str(ROOT / DUMP), "--explain"]) == 0
    assert sorted(asked) == sorted(counts)
    out = capsys.readouterr().out
    assert "explain         900.0 M instructions" in out and ": 1.50x the command" in out
    asked.clear()
    assert instructions.main(["--input", str(ROOT / DUMP)]) == 0
    assert "explain" not in asked


def test_alternate_runs_both_checkouts_in_turns() -> None:
    """bench/alternate.py: one line per process, this checkout then the other, each with every pass phase."""
    proc = _python("bench/alternate.py", "--code", str(ROOT), "--input", str(ROOT / DUMP), "--runs", "2",
                   "--repeat", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == f"input: {ROOT / DUMP}"
    runs = [line.split()[:3] for line in lines[1:]]
    assert runs == [["run", "1", "this"], ["run", "1", "other"], ["run", "2", "this"], ["run", "2", "other"]]
    for line in lines[1:]:
        phases = dict(word.split("=") for word in line.split() if "=" in word)
        assert list(phases) == ["import", "propagate", "rewrite", "pass"] and all(v.isdigit() for v in phases.values())


def test_alternate_names_a_checkout_that_fails(tmp_path) -> None:
    code = tmp_path / "broken"
    (code / "stablehlo_layout").mkdir(parents=True)
    (code / "stablehlo_layout" / "__init__.py").write_text("raise ImportError('broken checkout')\n")
    proc = _python("bench/alternate.py", "--code", str(code), "--input", str(ROOT / DUMP), "--runs", "1",
                   "--repeat", "1")
    assert proc.returncode != 0
    assert b"the other checkout's run failed" in proc.stderr
