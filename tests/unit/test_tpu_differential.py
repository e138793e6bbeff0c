"""The XLA:TPU differential harness (tests/differential/tpu_run.py) on the committed TPU dumps.

The fast tier needs no libtpu: it runs the comparison over every
``tests/unit/xla_tpu_dumps/<generation>/<program>/{before,after}.txt`` and
checks that the harness counts what is there (no tool errors, every named
value compared, the full-layout and copy counts consistent), plus two programs
counted by hand.  It asserts no agreement level: that is what
``python -m tests.differential.tpu_run`` measures.  The ``oracle`` test
compiles one generated program with XLA:TPU (libtpu, deviceless) through the
harness's worker process, end to end.
"""

from __future__ import annotations

import os

import pytest

from tests.support.hlo_dumps import jaxlib_reads
from tests.differential.compare import compare_dumps
from tests.differential.oracle import ArrayShape, instruction_names, leaves, parse_hlo, parse_shape
from tests.support import ROOT

DUMPS = os.path.join(ROOT, "tests", "unit", "xla_tpu_dumps")
GENERATIONS = ("v4", "v5e", "v5p", "v6e", "tpu7x")


def _target() -> str:
    """xla-tpu where the package has it, else generic (the counts checked here hold for any target)."""
    import inspect

    from stablehlo_layout.frontends.api import assign_module
    from stablehlo_layout.targets import TARGET_NAMES

    return "xla-tpu" if "xla-tpu" in TARGET_NAMES and "tpu" in inspect.signature(assign_module).parameters \
        else "generic"


def _compare(generation: str, program: str) -> dict:
    d = os.path.join(DUMPS, generation, program)
    return compare_dumps(os.path.join(d, "before.txt"), os.path.join(d, "after.txt"), target=_target(),
                         tpu=generation, unique_keys=True)


def _readable(folder: str) -> bool:
    return jaxlib_reads(os.path.join(folder, "before.txt"))


def _named_arrays(folder: str) -> int:
    """XLA's arrays of the AFTER module named in the BEFORE one (tuple leaves included)."""
    with open(os.path.join(folder, "before.txt")) as f:
        names = instruction_names(f.read())
    with open(os.path.join(folder, "after.txt")) as f:
        after = parse_hlo(f.read())
    return sum(1 for n in names if n in after.instrs and after.instrs[n].opcode not in ("tuple", "get-tuple-element")
               for _, s in leaves(after.instrs[n].shape) if isinstance(s, ArrayShape))


def test_parse_shape_keeps_tpu_fields():
    s, _ = parse_shape("bf16[4,300]{0,1:T(8,128)(2,1)}")
    assert (s.layout, s.tiling, s.full_layout) == ((0, 1), "T(8,128)(2,1)", "{0,1:T(8,128)(2,1)}")
    s, _ = parse_shape("f32[]{:T(128)}")
    assert (s.layout, s.full_layout, str(s)) == ((), "{:T(128)}", "f32[]{:T(128)}")
    s, _ = parse_shape("f32[8,4]{1,0}")  # CPU / GPU: as before
    assert (s.tiling, str(s)) == (None, "f32[8,4]{1,0}")
    assert s == ArrayShape("f32", (8, 4), (1, 0), "T(8,128)")  # the fields stay out of equality


def test_padded_bytes():
    from tests.differential.tpu_compare import padded_bytes

    assert padded_bytes("f32", (4, 8, 16, 32), "{3,0,1,2:T(4,128)}") == 128 * 4 * 8 * 16 * 4
    assert padded_bytes("bf16", (3, 5), "{1,0:T(4,128)(2,1)}") == 4 * 128 * 2
    assert padded_bytes("f32", (), "{:T(128)}") == 128 * 4
    assert padded_bytes("f32", (7,), "{0:T(256)}") == 256 * 4
    assert padded_bytes("f32", (3, 5), "{1,0}") == 60


def test_transposes_counted_by_hand():
    """v5e/transposes: five transposes of entry parameters, two of which XLA moves, four copies."""
    r = _compare("v5e", "transposes")
    assert r["status"] == "ok", r
    # a.1 broadcast mul.0 transpose.2 b.1 transpose.6 c.1 transpose.7 d.1 transpose.8 e.1 transpose.9,
    # and the scalar constant.1 {:T(128)}.
    assert (r["values"], r["full_values"]) == (12, 13)
    assert r["full_by_rank"]["0"][0] == 1 and r["full_by_rank"]["2+"][0] == 12
    # mul.0 {1,0} -> {0,1} and transpose.9 {0,1,2,3} -> {0,3,2,1}; broadcast and transpose.8 keep BEFORE's {0,1}.
    assert r["moved"] == 2
    # copies of a.1, b.1, c.1, e.1 into the transposes' operand layouts, once each.
    assert (r["xla_copies"], r["xla_copies_full"]) == (4, 4)
    assert sorted((c["src"], c["dst"]) for c in r["xla_copy_full_info"]) == [
        ("a.1", "{0,1:T(8,128)}"), ("b.1", "{2,0,1:T(8,128)}"), ("c.1", "{3,1,2,0:T(8,128)(2,1)}"),
        ("e.1", "{3,0,1,2:T(4,128)}")]
    assert r["xla_copy_bytes"] == 256 * 384 * 4 + 8 * 128 * 256 * 4 + 2 * 16 * 8 * 128 * 2 + 4 * 8 * 16 * 32 * 4
    # e.1's copy pads its minor dim 32 to 128 lanes; the others fill their tiles.
    assert r["xla_copy_padded_bytes"] == r["xla_copy_bytes"] + (128 - 32) * 4 * 8 * 16 * 4


def test_matmul_f32_counted_by_hand():
    """v5e/matmul_f32: a @ b, all row-major with (8,128) tiles, no copy: any TPU target agrees on all of it."""
    r = _compare("v5e", "matmul_f32")
    assert r["status"] == "ok", r
    assert (r["values"], r["full_values"], r["moved"], r["xla_copies_full"]) == (3, 3, 0, 0)
    assert r["agree"] == 3
    if r["full_layout"] and _target() == "xla-tpu":
        assert r["full_agree"] == 3 and not r["tile_diffs"]
        assert r["our_copies_full"] == 0


@pytest.mark.parametrize("generation", GENERATIONS)
def test_every_committed_dump_compares(generation):
    from tests.differential.tpu_report import format_report

    folder = os.path.join(DUMPS, generation)
    programs = sorted(p for p in os.listdir(folder) if os.path.isfile(os.path.join(folder, p, "after.txt")))
    assert len(programs) >= 20
    programs = [p for p in programs if _readable(os.path.join(folder, p))]
    assert len(programs) >= 20
    results = []
    for p in programs:
        r = {"id": p, "seed": 0, "index": 0, "dir": os.path.join(folder, p), **_compare(generation, p)}
        assert r["status"] == "ok", f"{generation}/{p}: {r.get('where')}: {r.get('error')}"
        # Every named rank>=2 array of XLA's is compared, once.
        assert r["values"] == r["xla_covered"] == r["xla_named"] > 0, p
        assert r["full_layout"], "the target prints no layout text"
        # Every named array, ranks 0 and 1 too, at most once; never fewer than the rank>=2 ones.
        assert r["values"] <= r["full_values"] <= _named_arrays(r["dir"]), p
        assert sum(n for n, _ in r["full_by_rank"].values()) == r["full_values"]
        assert 0 <= r["full_agree"] <= r["full_values"] and 0 <= r["agree"] <= r["values"]
        assert r["moved_agree"] <= r["moved"] <= r["values"]
        assert r["xla_copies_full_matched"] <= r["xla_copies_full"] <= r["xla_copies"]
        assert r["xla_copy_padded_bytes"] >= r["xla_copy_bytes"]
        assert r["our_copy_padded_bytes"] >= r["our_copy_bytes"]
        assert all(c["dst"].startswith("{") and "T(" in c["dst"] for c in r["xla_copy_full_info"]), p
        for d in r["tile_diffs"]:
            assert d["ours"] != d["xla"] and d["xla"].startswith("{"), d
        results.append(r)
    text = format_report(results, f"{generation}, committed dumps", show=3)
    assert f"programs {len(programs)}  compared {len(programs)}" in text
    assert "tool errors 0" in text and "n/a" not in text.split("non-trivial")[0]


@pytest.mark.oracle
def test_one_program_through_libtpu(tmp_path):
    """One generated program compiled by XLA:TPU deviceless in a worker process, then compared."""
    from tests.differential.tpu_oracle import oracle_available
    from tests.differential.tpu_run import run_tasks

    ok, why = oracle_available()
    if not ok:
        pytest.skip(why)
    task = {"seed": 0, "index": 0, "cache": str(tmp_path), "tpu": "v5e", "refresh": False, "target": _target()}
    (r,) = run_tasks([task], jobs=1, timeout=300)
    assert r["status"] == "ok", r
    assert not r["cached"] and r["values"] > 0 and r["full_values"] >= r["values"]
    assert os.path.isfile(os.path.join(r["dir"], "after.txt"))
    (again,) = run_tasks([task], jobs=1, timeout=300)  # now from the cache
    assert again["cached"] and again["values"] == r["values"] and again["full_agree"] == r["full_agree"]


_ABORTING_CHILD = """
import os, sys
sys.path[:0] = [sys.argv[2], os.path.join(sys.argv[2], "tests", "unit", "xla_tpu_dumps")]
import make
from tests.differential.tpu_oracle import run_tpu_oracle
from tests.differential.tpu_run import STDERR, program_folder, stderr_to
d = program_folder(sys.argv[1], "v5p", 0, 9999)
os.makedirs(d, exist_ok=True)
with stderr_to(os.path.join(d, STDERR)):
    run_tpu_oracle(make.programs()["tiles_default"](), "v5p", d)
"""


@pytest.mark.oracle
def test_a_libtpu_abort_after_layout_assignment_is_recovered(tmp_path):
    """libtpu 0.0.50 aborts tiles_default on v5p after layout assignment (make.py's note): the harness
    keeps the dumps the dead process wrote, with the abort's message, and compares them."""
    import subprocess
    import sys

    from tests.differential.tpu_oracle import oracle_available
    from tests.differential.tpu_run import process

    ok, why = oracle_available()
    if not ok:
        pytest.skip(why)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    child = subprocess.run([sys.executable, "-c", _ABORTING_CHILD, str(tmp_path), str(ROOT)], env=env,
                           capture_output=True, text=True, timeout=300)
    if child.returncode == 0:
        pytest.skip("this libtpu compiles tiles_default for v5p without aborting")
    r = process(0, 9999, str(tmp_path), "v5p", target=_target(), retry=True)
    assert r["status"] == "ok" and r["recovered"], r
    assert "Check failed" in r["jax_error"] and r["values"] > 0
