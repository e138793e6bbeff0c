"""The golden comparison (tests/golden/golden.py): a slice on every run, and the tool's own logic.

The full comparison -- every command, target and entry mode over the whole
corpus, 9,180 runs, 1-4 minutes -- is ``python tests/golden/golden.py
--check`` (under each venv), and the ``golden`` tier's test here
(``pytest -m golden``; ./run-tests runs it on both pairs); the fast tier runs
the fixed slice of it (``--slice``: six inputs of different kinds x 30 runs
each) against the checked-in manifest, checks that the manifest covers the
whole corpus for both tested (Python, jax) pairs, and that a difference is
reported with a diff of the actual bytes.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pytest

from tests.golden import golden
from tests.support import ROOT

# The pairs ./run-tests runs (README): both must be recorded.
TESTED_PAIRS = ("python3.11-jax0.10.2", "python3.12-jax0.12.0.1")


def _slice_args() -> argparse.Namespace:
    return argparse.Namespace(slice=True, fuzz=golden.DEFAULT_FUZZ, only=None)


def test_slice_matches_manifest() -> None:
    paths, runs = golden.select(_slice_args())
    assert sorted(paths) == sorted(golden.SLICE_INPUTS)
    assert len(runs) == len(paths) * len(golden.TARGETS) * len(golden.MODES) * len(golden.COMMANDS)
    outcomes = golden.run_all(runs, None, progress=False)
    manifest = golden.load_manifest()
    report = golden.compare(runs, outcomes, manifest, golden.pair(), None, shown=10)
    assert not report, "".join(report) + "(full check: python tests/golden/golden.py --check --out DIR)"
    # The slice covers failures as well as outputs.
    assert {o.rc for o in outcomes.values()} == {"0", "1"}
    assert all(o.out for o in outcomes.values() if o.rc == "0")


@pytest.mark.golden
def test_the_whole_corpus_matches_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``python tests/golden/golden.py --check`` checks: every run over the corpus, this pair's records."""
    monkeypatch.chdir(ROOT)  # inputs are named relative to the repository root
    paths, runs = golden.select(argparse.Namespace(slice=False, fuzz=golden.DEFAULT_FUZZ, only=None))
    outcomes = golden.run_all(runs, None, progress=False)
    manifest = golden.load_manifest()
    changed = [p for p in paths if manifest["inputs"].get(p) not in (None, golden._sha((ROOT / p).read_bytes()))]
    report = golden.compare(runs, outcomes, manifest, golden.pair(), None, shown=10)
    assert not changed, f"inputs changed since the manifest was written: {changed[:5]}"
    assert not report, "".join(report) + "(diffs: python tests/golden/golden.py --check --ref DIR; see its docstring)"


def test_manifest_covers_the_corpus_for_both_pairs() -> None:
    manifest = golden.load_manifest()
    assert manifest["schema"] == golden.SCHEMA
    assert set(TESTED_PAIRS) <= set(manifest["pairs"])
    paths = golden.corpus(golden.DEFAULT_FUZZ)
    stale = [p for p in paths if manifest["inputs"].get(p) != golden._sha((ROOT / p).read_bytes())]
    assert not stale, (f"inputs new or changed since the manifest was written: {stale[:5]}; "
                       "run python tests/golden/golden.py --update under .venv and .venv-jax012")
    assert set(manifest["inputs"]) == set(paths)
    keys = {r.key for r in golden.runs_for(paths)}
    assert set(manifest["entries"]) == keys
    for key, entry in manifest["entries"].items():
        if "by_pair" in entry:
            assert set(entry["by_pair"]) == set(manifest["pairs"]), key
    # Every lit input and every example is in the corpus.
    for pattern in ("tests/lit/*.mlir", "tests/lit/Inputs/*.mlir", "examples/*.mlir",
                    "tests/unit/xla_gpu_dumps/*/*.before.txt", "tests/unit/xla_scenarios/*.hlo"):
        for p in ROOT.glob(pattern):
            assert str(p.relative_to(ROOT)) in manifest["inputs"], p


def test_gpu_dumps_run_for_their_gpu() -> None:
    assert golden.Run("tests/unit/xla_gpu_dumps/a100/dots_f32.before.txt", "xla-gpu", "free", "explain").gpu() == "a100"
    assert golden.Run("examples/xla_gpu_dump/a100.before_layout-assignment.txt", "xla-gpu", "default",
                      "assign").gpu() == "a100"
    assert golden.Run("tests/unit/xla_gpu_dumps/a100/dots_f32.before.txt", "xla-cpu", "free", "explain").gpu() is None
    argv = golden.Run("tests/unit/xla_gpu_dumps/v100/fp8_dot.before.txt", "xla-gpu", "free", "trace-html").argv("o.html")
    assert argv == ["trace", "--target", "xla-gpu", "--entry-layouts", "free", "--gpu", "v100", "--html", "o.html",
                    "tests/unit/xla_gpu_dumps/v100/fp8_dot.before.txt"]


def test_a_changed_output_is_reported_with_a_diff(tmp_path: Path) -> None:
    run = golden.Run("examples/pinned_transpose.mlir", "generic", "default", "assign")
    now = golden.run_all([run], None, progress=False)[run.key]
    assert now.rc == "0" and b"mhlo.copy" in now.out
    # The reference tree holds what an older version printed: one line differs.
    old = replace(now, out=now.out.replace(b"mhlo.copy", b"stablehlo.copy", 1))
    golden._keep(tmp_path, run, old)
    manifest = {"entries": {run.key: old.record()}}
    report = "".join(golden.compare([run], {run.key: now}, manifest, "p", tmp_path, shown=5))
    assert f"DIFF {run.key}: out differ" in report
    assert "-    %0 = stablehlo.copy" in report and "+    %0 = mhlo.copy" in report
    assert "1 of 1 runs differ" in report


def test_update_keeps_the_other_pairs_records(tmp_path: Path) -> None:
    a, b = {"rc": "0", "out": "1", "err": "e"}, {"rc": "0", "out": "2", "err": "e"}
    first = golden.merged({"pairs": [], "inputs": {}, "entries": {}}, "A", {"k": a, "j": a}, {"x": "s"})
    assert first["entries"] == {"k": a, "j": a} and first["pairs"] == ["A"]
    second = golden.merged(first, "B", {"k": a, "j": b}, {"x": "s"})
    assert second["pairs"] == ["A", "B"]
    assert second["entries"]["k"] == a  # same under both pairs: one record
    assert second["entries"]["j"] == {"by_pair": {"A": a, "B": b}}
    assert golden.expected(second, "j", "B") == b and golden.expected(second, "j", "A") == a
    # A later update of A that now agrees with B folds the entry back into one record.
    third = golden.merged(second, "A", {"k": a, "j": b}, {"x": "s"})
    assert third["entries"]["j"] == b
    third["schema"] = golden.SCHEMA
    golden.write_manifest(third, tmp_path / "m.json")
    assert golden.load_manifest(tmp_path / "m.json") == third
    assert len((tmp_path / "m.json").read_text().splitlines()) == 8 + 1 + 2  # one line per input and per entry
