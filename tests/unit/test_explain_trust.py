"""explain: the what-if reruns never fail where assign works; every consumer's chain;
unknown bytes for dynamic shapes; locations that name the right file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import analyze
from stablehlo_layout.report.explain import explain

from tests.support import ROOT
from tests.support.command import QUIET, environment, run_command

SCHEMA = json.loads((ROOT / "docs" / "explain.schema.json").read_text())

# Issue 15's repro: two results pinned to layouts of another rank than the
# transpose that feeds them; the fixer used to pin a result to the transpose's layout.
REPRO = """HloModule repro, entry_computation_layout={(f32[4,4,6,5]{3,2,1,0})->(f32[6,2,5,4,4]{3,4,2,1,0}, f32[6,2,5,4,4]{0,1,2,3,4})}

ENTRY %main (p: f32[4,4,6,5]) -> (f32[6,2,5,4,4], f32[6,2,5,4,4]) {
  %p = f32[4,4,6,5]{3,2,1,0} parameter(0)
  %t = f32[6,5,4,4]{3,2,1,0} transpose(%p), dimensions={2,3,1,0}
  %b = f32[6,2,5,4,4]{4,3,2,1,0} broadcast(%t), dimensions={0,2,3,4}
  %m = f32[6,5,4,4]{3,2,1,0} multiply(%t, %t)
  %b1 = f32[6,2,5,4,4]{4,3,2,1,0} broadcast(%m), dimensions={0,2,3,4}
  ROOT %r = (f32[6,2,5,4,4]{4,3,2,1,0}, f32[6,2,5,4,4]{4,3,2,1,0}) tuple(%b, %b1)
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)

# One pinned parameter read by two transposes with pinned results: both want
# {0,1}, one copy serves both, each for its own reason.
TWO_CONSUMERS = """func.func public @main(%x: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<6x4xf32>) {
  %a = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %n = stablehlo.negate %a : tensor<6x4xf32>
  %b = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %e = stablehlo.exponential %b : tensor<6x4xf32>
  return %n, %e : tensor<6x4xf32>, tensor<6x4xf32>
}
"""

DYNAMIC = """func.func public @main(%x: tensor<?x4xf32>) -> tensor<4x?xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<?x4xf32>) -> tensor<4x?xf32>
  return %t : tensor<4x?xf32>
}
"""


def test_issue_repro_explains_with_fixes(tmp_path: Path) -> None:
    src = tmp_path / "repro.hlo"
    src.write_text(REPRO)
    with_fixes = run_command("explain", "--target", "xla-cpu", "--entry-layouts", "free", "--json", str(src))
    assert with_fixes.returncode == 0, with_fixes.stderr
    without = run_command("explain", "--target", "xla-cpu", "--entry-layouts", "free", "--json", "--no-fixes", str(src))
    a, b = json.loads(with_fixes.stdout), json.loads(without.stdout)
    jsonschema.validate(a, SCHEMA)
    assert a["summary"]["copies"] == b["summary"]["copies"] == 3
    # Every fix it offers was checked by a rerun and removes its copy.
    assert all(c["fix"] is None or c["fix"]["removes_copy"] for c in a["copies"])
    assert any(c["fix"] is not None for c in a["copies"])


@pytest.mark.parametrize("target", ["generic", "xla-cpu", "xla-gpu"])
@pytest.mark.parametrize("entry", ["default", "free"])
def test_explain_with_fixes_never_fails_where_assign_succeeds(target: str, entry: str) -> None:
    inputs = sorted((ROOT / "tests" / "lit" / "Inputs").glob("*.mlir")) + [ROOT / "examples" / "pinned_transpose.mlir"]
    for path in inputs:
        ctx = mlir.make_context()
        try:
            module = mlir.read_input(str(path), ctx)
            _, a, _ = analyze(module, target, entry, exact=True)
        except Exception:
            continue  # inputs that are bad on purpose: assign refuses them too
        report = explain(a, fixes=True, max_reruns=64)
        assert all(c.fix is None or c.fix.removes for c in report.copies), path


def test_every_consumer_gets_its_own_chain(tmp_path: Path) -> None:
    src = tmp_path / "two.mlir"
    src.write_text(TWO_CONSUMERS)
    out = run_command("explain", "--json", str(src))
    doc = json.loads(out.stdout)
    jsonschema.validate(doc, SCHEMA)
    (copy,) = doc["copies"]
    assert len(copy["consumers"]) == 2
    chains = [c["chain"] for c in copy["consumers"]]
    assert chains[0] == copy["consumer_chain"]
    assert chains[0] != chains[1]
    assert {"stablehlo.negate", "stablehlo.exponential"} == {
        link["subject"].split(" at ")[0].split()[-1] for ch in chains for link in ch
        if link["subject"].startswith("result of") and "transpose" not in link["subject"]}
    text = run_command("explain", str(src)).stdout
    assert "consumer 1 wants {0,1} because:" in text and "consumer 2 wants {0,1} because:" in text


def test_dynamic_shape_copy_costs_unknown_bytes(tmp_path: Path) -> None:
    src = tmp_path / "dyn.mlir"
    src.write_text(DYNAMIC)
    doc = json.loads(run_command("explain", "--json", str(src)).stdout)
    jsonschema.validate(doc, SCHEMA)
    (copy,) = doc["copies"]
    assert copy["cost"]["bytes_per_copy"] is None and copy["cost"]["bytes_per_execution"] is None
    assert doc["summary"]["copies_of_unknown_size"] == 1 and doc["summary"]["bytes"] == 0
    text = run_command("explain", str(src)).stdout
    assert "cost: unknown bytes (dynamic shape) per execution" in text
    assert "0 B" not in text.split("summary:")[0]
    assert "plus 1 copy of dynamically shaped values (unknown bytes)" in text


def test_locations_name_the_input_file_in_text_json_and_python(tmp_path: Path) -> None:
    src = tmp_path / "seed.mlir"
    src.write_text((ROOT / "examples" / "pinned_transpose.mlir").read_text())
    text = run_command("explain", str(src)).stdout
    doc = json.loads(run_command("explain", "--json", str(src)).stdout)
    trace = run_command("trace", str(src)).stdout
    ctx = mlir.make_context()
    _, a, _ = analyze(mlir.read_input(str(src), ctx), "generic", "default", exact=True)
    api = explain(a).copies[0]
    for shown in (text, json.dumps(doc), trace, api.explain(), api.consumers[0]["location"]):
        assert f"{src}:7:8" in shown
        assert "-:7:8" not in shown.replace(f"{src}:7:8", "")
    stdin = run_command("explain", "--json", "-", stdin=src.read_text())
    assert '"<stdin>:7:8"' in stdin.stdout and '"-:7:8"' not in stdin.stdout


def test_bytecode_input_claims_no_lines_of_its_own(tmp_path: Path) -> None:
    ctx = mlir.make_context()
    module = mlir.load((ROOT / "examples" / "pinned_transpose.mlir").read_bytes(), "x", ctx)
    blob = tmp_path / "seed.mlirbc"
    blob.write_bytes(mlir.to_bytecode(module))
    text = run_command("explain", str(blob)).stdout
    assert "copy #1" in text
    assert f"{blob}:" not in text  # bytecode has no lines: its positions are never shown as the file's


def test_jax_export_shows_the_users_source_line(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(
        "import jax, jax.numpy as jnp\n"
        "from jax import export\n"
        "def f(x):\n"
        "    return jnp.sin(x.T)\n"
        "e = export.export(jax.jit(f))(jax.ShapeDtypeStruct((4, 6), jnp.float32))\n"
        f"open({str(tmp_path / 'f.jexp')!r}, 'wb').write(e.serialize())\n")
    subprocess.run([sys.executable, str(program)], check=True, env=environment(QUIET), capture_output=True)
    text = run_command("explain", str(tmp_path / "f.jexp")).stdout
    assert f"transpose at jit(f)/transpose ({program}:4:" in text


def _fan_out(n: int) -> str:
    """One pinned parameter read by ``n`` transposes whose results are summed in a chain of adds."""
    lines = ["func.func public @main(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {"]
    lines += [f"  %t{i} = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>"
              for i in range(n)]
    acc = "%t0"
    for i in range(1, n):
        lines.append(f"  %a{i} = stablehlo.add {acc}, %t{i} : tensor<8x4xf32>")
        acc = f"%a{i}"
    return "\n".join([*lines, f"  return {acc} : tensor<8x4xf32>", "}", ""])


def test_consumer_chains_through_one_long_path_are_not_repeated(tmp_path: Path) -> None:
    # Each transpose's demand runs through the rest of the add chain: printed in
    # full for every consumer, the report grew with n squared (n = 3000: 1.7 GB of
    # text, and --json was killed for memory).
    n = 200
    src = tmp_path / "fan.mlir"
    src.write_text(_fan_out(n))
    doc = json.loads(run_command("explain", "--json", str(src)).stdout)
    jsonschema.validate(doc, SCHEMA)
    (copy,) = doc["copies"]
    consumers = copy["consumers"]
    assert len(consumers) == n
    assert sum(len(c["chain"]) for c in consumers) < 10 * n
    assert consumers[0]["chain"] == copy["consumer_chain"] and "chain_continues" not in consumers[0]
    for k, c in enumerate(consumers[1:], 1):
        join = c["chain_continues"]
        assert join["consumer"] < k and join["link"] < len(consumers[join["consumer"]]["chain"])
    # Followed through its joins, every consumer's chain ends at the entry result.
    k, start, links = n - 1, 0, []
    while True:
        links += consumers[k]["chain"][start:]
        if "chain_continues" not in consumers[k]:
            break
        k, start = consumers[k]["chain_continues"]["consumer"], consumers[k]["chain_continues"]["link"]
    assert len(links) == 2 + 2 * (n - 1) + 1
    assert links[0]["subject"].startswith("operand 0 of stablehlo.transpose") and links[-1]["rule"] == "entry-result"
    text = run_command("explain", "--no-fixes", str(src)).stdout
    assert len(text.splitlines()) < 10 * n
    assert "<- then as consumer 1's chain from its link 4: result of stablehlo.add" in text
