"""A fixed slice of the XLA differential test (tests/differential) in the normal suite.

Twelve generated programs are compiled by XLA:CPU (dumps cached under
bench/cache/differential/, so reruns only run our pass) and our ``xla-cpu``
assignment is compared with XLA's after-layout-assignment dump.  The floors
below are the levels measured when the slice was added: they guard against
regressions and should be raised as the target improves.  The slice is the
``oracle`` tier (``pytest -m oracle``); the fast tier compiles and compares its
first three programs, held to the same floors.  The full run is
``python -m tests.differential.run --count 300 --seed 0 --jobs 2``.
"""

from __future__ import annotations

import pytest

from tests.differential.compare import GENERIC_WARNING
from tests.differential.run import DEFAULT_CACHE, format_report, run_parallel, summarize

SLICE_SEED = 0
SLICE = range(12)
FAST_SLICE = range(3)  # the fast tier's programs

# Measured with the xla-cpu target: every named rank>=2 value and all 12
# programs agree, copies inside a conditional's branches included (s0/0:
# XLA's copy of the branch parameter pairs with ours of the caller's value
# there, compare.py's OurSide.in_branch; it was 11/12 before that).
MIN_VALUE_AGREEMENT = 0.985
MIN_AGREEING_PROGRAMS = 12
MAX_TOOL_ERRORS = 0
MAX_PROGRAMS_WITH_MORE_COPIES = 0  # programs where we insert more copies (or bytes) than XLA


def _run(indices: range) -> list:
    tasks = [{"seed": SLICE_SEED, "index": i, "cache": DEFAULT_CACHE} for i in indices]
    return run_parallel(tasks, jobs=1, timeout=0, progress=False)


@pytest.fixture(scope="module")
def results():
    return _run(SLICE)


@pytest.mark.oracle
def test_slice_runs(results):
    s = summarize(results)
    assert not s["harness_errors"], s["harness_errors"][0].get("traceback")
    assert s["compared"] + sum(s["tool_errors"].values()) == len(results), s["skipped"]


@pytest.mark.oracle
def test_slice_agrees_with_xla(results):
    s = summarize(results)
    report = format_report(results, show=10)
    if s["generic"]:
        pytest.xfail(f"the xla-cpu target warns that it is {GENERIC_WARNING}; "
                     f"agreement is not expected yet\n{report}")
    assert sum(s["tool_errors"].values()) <= MAX_TOOL_ERRORS, report
    assert s["values"] and s["agree"] / s["values"] >= MIN_VALUE_AGREEMENT, report
    assert s["agreeing_programs"] >= MIN_AGREEING_PROGRAMS, report
    assert len(s["more_copies"]) <= MAX_PROGRAMS_WITH_MORE_COPIES, report
    assert len(s["more_bytes"]) <= MAX_PROGRAMS_WITH_MORE_COPIES, report


def test_first_programs_of_the_slice_agree_with_xla():
    """The fast tier's piece of the slice: its first programs, every one compared and agreeing."""
    results = _run(FAST_SLICE)
    s = summarize(results)
    report = format_report(results, show=10)
    assert not s["harness_errors"], s["harness_errors"][0].get("traceback")
    assert s["compared"] + sum(s["tool_errors"].values()) == len(results), s["skipped"]
    if s["generic"]:
        pytest.xfail(f"the xla-cpu target warns that it is {GENERIC_WARNING}; "
                     f"agreement is not expected yet\n{report}")
    assert sum(s["tool_errors"].values()) <= MAX_TOOL_ERRORS, report
    assert s["values"] and s["agree"] / s["values"] >= MIN_VALUE_AGREEMENT, report
    assert s["agreeing_programs"] == len(FAST_SLICE), report
    assert len(s["more_copies"]) <= MAX_PROGRAMS_WITH_MORE_COPIES, report
    assert len(s["more_bytes"]) <= MAX_PROGRAMS_WITH_MORE_COPIES, report
