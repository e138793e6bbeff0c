"""The sharded differential's fast slice: XLA's per-device modules of sharded programs, committed.

``tests/unit/xla_sharded_dumps/<backend>/<kind>-<index>/`` holds XLA's
before / after layout-assignment dumps of seed 0's programs 0-8 (one per kind
of ``tests/differential/sharded_programs.py``) compiled for 8 devices by
XLA:CPU, deviceless XLA:GPU (h100) and deviceless XLA:TPU (v5e:2x4), plus
XLA:CPU's programs 12, 32 and 38 (the collective's spread, the all-to-all
expansion's reshapes, one head per device).  Written by
``python -m tests.differential.sharded_run --backend B --count 9 --save-slice tests/unit/xla_sharded_dumps``.
Reading them needs no jax backend; the floors are today's figures (docs/TESTING.md).
The ``oracle`` test compiles one program for 8 XLA:CPU devices in a child.
"""

from __future__ import annotations

import os

import pytest

from tests.differential import sharded_run

DUMPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla_sharded_dumps")

# backend -> (values agreeing, non-trivial agreeing, XLA copies matched) at least, over the slice.
FLOORS = {"cpu": (1.0, 1.0, 1.0), "gpu": (1.0, 1.0, 1.0), "tpu": (0.85, 0.45, 0.15)}


def _totals(backend: str) -> dict[str, int]:
    folder = os.path.join(DUMPS, backend)
    t = {"programs": 0, "values": 0, "agree": 0, "nontrivial": 0, "nontrivial_agree": 0,
         "xla_copies": 0, "xla_copies_matched": 0}
    for name in sorted(os.listdir(folder)):
        d = os.path.join(folder, name)
        r = sharded_run.compare_backend(backend, os.path.join(d, "before.txt"), os.path.join(d, "after.txt"))
        assert r["status"] == "ok", (name, r.get("error"), r.get("where"))
        t["programs"] += 1
        for k in list(t)[1:]:
            t[k] += r[k]
    return t


@pytest.mark.parametrize("backend", ["cpu", "gpu", "tpu"])
def test_committed_sharded_slice(backend):
    t = _totals(backend)
    assert t["programs"] >= 9
    values, nontrivial, copies = FLOORS[backend]
    assert t["agree"] >= values * t["values"], t
    assert t["nontrivial_agree"] >= nontrivial * t["nontrivial"], t
    assert t["xla_copies_matched"] >= copies * t["xla_copies"], t


def test_every_kind_is_in_the_slice():
    from tests.differential.sharded_programs import KINDS

    for backend in ("cpu", "gpu", "tpu"):
        kinds = {n.rsplit("-", 1)[0] for n in os.listdir(os.path.join(DUMPS, backend))}
        assert kinds == set(KINDS), backend


def test_the_modules_are_partitioned():
    """XLA partitioned them: the per-device module holds collectives, and shapes are per-device shards."""
    with open(os.path.join(DUMPS, "cpu", "fsdp-4", "before.txt")) as f:
        text = f.read()
    assert "all-gather(" in text and "reduce-scatter(" in text


@pytest.mark.oracle
def test_compiles_for_eight_cpu_devices(tmp_path):
    """One program compiled afresh for 8 XLA:CPU devices (the child sets XLA_FLAGS before jax starts)."""
    why = sharded_run.compile_missing("cpu", 0, [6], str(tmp_path), jobs=1, timeout=300, refresh=True)
    assert why == ""
    r = sharded_run.compare_program("cpu", 0, 6, str(tmp_path))
    assert r["status"] == "ok", r
    assert r["program"]["kind"] == "ring_matmul" and r["values"] > 0
