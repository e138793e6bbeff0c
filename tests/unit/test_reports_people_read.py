"""Reports as people read them: analyze()'s repr in a terminal, the JSON's names for a dump's
parameters, and what an in-place linalg copy really reads.

Every input is real: ``examples/models.py``'s Cholesky solve (LAPACK potrf
and trsm, custom calls that overwrite an operand in place) analyzed from
Python, and the same function's XLA:CPU dump (``--xla_dump_to``, metadata
and parameter names as XLA writes them) read by the command.
"""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.command import QUIET, environment, run_command

jax = pytest.importorskip("jax")

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.models import EXAMPLES, specs_to_args  # noqa: E402
from stablehlo_layout.frontends.jax import analyze  # noqa: E402

_DUMP = """
import sys
import jax
sys.path.insert(0, sys.argv[2])
from examples.models import cholesky_solve
a = jax.ShapeDtypeStruct((32, 32), "float32")
b = jax.ShapeDtypeStruct((32, 4), "float32")
flags = {"xla_dump_to": sys.argv[1], "xla_dump_hlo_pass_re": "layout-assignment"}
jax.jit(cholesky_solve).lower(a, b).compile(compiler_options=flags)
"""


@pytest.fixture(scope="module")
def cholesky():
    fn, specs = EXAMPLES["cholesky_solve"]
    return analyze(fn, *specs_to_args(specs), verify=True)


@pytest.fixture(scope="module")
def cholesky_dump(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cholesky-dump")
    subprocess.run([sys.executable, "-c", _DUMP, str(folder), str(ROOT)], check=True, env=environment(QUIET),
                   capture_output=True)
    found = glob.glob(str(folder / "*cholesky_solve*before_layout-assignment.txt"))
    assert len(found) == 1, sorted(p.name for p in folder.iterdir())
    return Path(found[0])


def test_repr_fits_a_terminal_and_starts_with_the_summary(cholesky):
    lines = repr(cholesky).splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    n = len(cholesky.copies)
    assert lines[0].startswith(f"cholesky_solve: {n} copies, ") and "moved per execution" in lines[0]
    assert lines[1] == "  entry layouts: 3 of 3 as XLA:CPU compiled them (copies not compared)"
    table = lines.index(next(line for line in lines if line.startswith("entry ")))
    summary = lines[:table]
    # Every reason is counted in the summary, before any table, with its bytes.
    for reason in {c.reason for c in cholesky.copies}:
        assert any(f"({reason}): " in line for line in summary), (reason, summary)
    # One block per copy, after the entry table, each with its producer, consumers and fix.
    heads = [i for i, line in enumerate(lines) if line.startswith("copy #")]
    assert len(heads) == n and heads[0] > table
    for i in heads:
        assert lines[i + 1].startswith("  from: ")


def test_an_in_place_copy_names_the_relayout_copy_it_reads(cholesky):
    relayout_of = {edge: c for c in cholesky.copies if c.kind == "relayout" for edge in c.edges}
    reading_a_copy = [c for c in cholesky.copies if c.kind == "in-place" and c.edges[0] in relayout_of]
    assert reading_a_copy, "the Cholesky solve's trsm reads b after its column-major relayout"
    for c in reading_a_copy:
        first = relayout_of[c.edges[0]]
        # XLA's in-place copy copies the relayout's fresh buffer, not the parameter.
        assert c.producer["copy"] == first.index and c.producer["op"] == "copy"
        assert c.producer["value"] == f"result of copy #{first.index} (the relayout of {first.producer['value']})"
        assert c.producer["copy_of"] == first.producer
        assert f"producer: result of copy #{first.index}" in c.explain()
        assert f"  from: result of copy #{first.index}" in repr(cholesky)
    # An in-place copy of a value nothing relaid names the value itself.
    for c in cholesky.copies:
        if c.kind == "in-place" and c not in reading_a_copy:
            assert "copy" not in c.producer and not c.producer["value"].startswith("result of copy")


def _entry_parameter_names(dump: Path) -> list[str]:
    """The ENTRY computation's parameters, by number, as the dump names them."""
    text = dump.read_text()
    entry = text[text.index("\nENTRY "):]
    entry = entry[: entry.index("\n}")]
    found = dict((int(n), name) for name, n in re.findall(r"^\s*%?([\w.\-]+) = \S+ parameter\((\d+)\)", entry, re.M))
    return [found[i] for i in range(len(found))]


def test_a_dumps_json_names_entry_parameters_by_their_hlo_names(cholesky_dump: Path):
    names = _entry_parameter_names(cholesky_dump)
    assert len(names) == 2
    p = run_command("explain", "--json", "--no-fixes", str(cholesky_dump))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [q.get("name") for q in doc["summary"]["parameters"]] == names
    params = [c["producer"] for c in doc["copies"] if c["producer"]["op"] == "parameter"]
    params += [c["producer"]["copy_of"] for c in doc["copies"] if "copy_of" in c["producer"]]
    assert params, "b reaches the trsm through a relayout copy"
    for producer in params:
        assert producer["name"] in names, producer
    # The in-place copy of trsm's operand reads the relayout copy, in the dump as from Python.
    in_place = [c for c in doc["copies"] if c["kind"] == "in-place" and "copy" in c["producer"]]
    assert in_place
    for c in in_place:
        first = doc["copies"][c["producer"]["copy"] - 1]
        assert first["kind"] == "relayout"
        assert {(x["name"]) for x in first["consumers"]} >= {x["name"] for x in c["consumers"]}


def test_json_of_stablehlo_keeps_the_graphs_names(tmp_path: Path):
    # Not a dump: no HLO names to give, the parameter stays main.argN and the summary has no name.
    p = run_command("explain", "--json", "--no-fixes", "--target", "xla-cpu", "examples.models:cholesky_solve",
                    "--arg", "f32[32,32]", "--arg", "f32[32,4]", cwd=ROOT)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert all("name" not in q for q in doc["summary"]["parameters"])
