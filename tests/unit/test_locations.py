"""Every entry point names where an op is: the file, ``<stdin>``, or honestly "the parsed text".

MLIR names a buffer it parses from a string ``-``; no report may show that as
a file (``-:7:8``), and bytecode, which has no lines, may not claim its own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
from jaxlib.mlir import ir

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import analyze, assign_module
from stablehlo_layout.report.explain import explain, render_trace

from tests.support import ROOT
from tests.support.command import run_command

SEED = ROOT / "examples" / "pinned_transpose.mlir"  # its transpose sits at 7:8
SCHEMA = json.loads((ROOT / "docs" / "explain.schema.json").read_text())
# A position in the anonymous buffer, as MLIR or a naive formatter would print it.
DASH = re.compile(r'(?<![\w./<>-])"?-"?:\d+:\d+')
PARSED = "line 7:8 of the parsed text"

RECURSIVE = """func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _every_report(tmp_path: Path, source: str, data: bytes) -> dict[str, str]:
    """explain (text, JSON), trace, the trace page and assign's IR with locations, from one input."""
    stdin = source == "-"
    kw = {"stdin": data} if stdin else {}
    page = tmp_path / "page.html"
    runs = {
        "explain": ["explain", source], "json": ["explain", "--json", source], "trace": ["trace", source],
        "html": ["trace", "--html", str(page), source], "assign": ["assign", "--mlir-print-debuginfo", source],
    }
    out: dict[str, str] = {}
    for name, args in runs.items():
        run = run_command(*args, text=False, **kw)
        assert run.returncode == 0, (name, run.stderr)
        # The page holds its data as JSON in a script, "<" and ">" escaped.
        out[name] = (page.read_text().replace("\\u003c", "<").replace("\\u003e", ">") if name == "html"
                     else run.stdout.decode())
    jsonschema.validate(json.loads(out["json"]), SCHEMA)
    return out


def test_stdin_text_names_stdin_everywhere(tmp_path: Path) -> None:
    for name, shown in _every_report(tmp_path, "-", SEED.read_bytes()).items():
        want = '"<stdin>":7:8' if name == "assign" else "<stdin>:7:8"
        assert want in shown, name
        assert not DASH.search(shown), (name, DASH.search(shown))


def test_file_with_a_byte_order_mark_is_named_by_its_path(tmp_path: Path) -> None:
    # MLIR's lexer cannot read a BOM, so such text goes through the anonymous buffer.
    src = tmp_path / "bom.mlir"
    src.write_bytes(b"\xef\xbb\xbf" + SEED.read_bytes())
    for name, shown in _every_report(tmp_path, str(src), src.read_bytes()).items():
        want = f'"{src}":7:8' if name == "assign" else f"{src}:7:8"
        assert want in shown, name
        assert not DASH.search(shown), (name, DASH.search(shown))


def test_module_parsed_from_a_string_says_so_in_the_python_api() -> None:
    ctx = mlir.make_context()
    result = assign_module(ir.Module.parse(SEED.read_text(), context=ctx), "generic")
    text = result.explain().copies[0].explain()
    assert f"operand 0 of stablehlo.transpose at {PARSED}" in text
    assert not DASH.search(text)
    _, a, _ = analyze(ir.Module.parse(SEED.read_text(), context=ctx), "generic", "default", exact=True, trace=True)
    report = explain(a)
    doc = report.to_json()
    jsonschema.validate(doc, SCHEMA)
    assert doc["copies"][0]["consumers"][0]["location"] == PARSED
    for shown in (report.render(), json.dumps(doc), render_trace(a)):
        assert PARSED in shown and not DASH.search(shown)


def test_bytecode_written_from_a_string_claims_no_line_of_its_own(tmp_path: Path) -> None:
    blob = tmp_path / "seed.mlirbc"
    blob.write_bytes(mlir.to_bytecode(mlir.load(SEED.read_text(), "x", mlir.make_context())))
    for source, data in ((str(blob), b""), ("-", blob.read_bytes())):
        for name, shown in _every_report(tmp_path, source, data).items():
            if name == "assign":
                continue  # the IR keeps the locations the bytecode carries, as MLIR prints them
            assert PARSED in shown, (source, name)
            assert f"{blob}:" not in shown and "<stdin>:" not in shown, (source, name)
            assert not DASH.search(shown), (source, name, DASH.search(shown))


def test_pass_errors_name_the_input_only_where_it_has_lines(tmp_path: Path) -> None:
    src = tmp_path / "rec.mlir"
    src.write_text(RECURSIVE)
    blob = tmp_path / "rec.mlirbc"
    blob.write_bytes(mlir.to_bytecode(mlir.load(RECURSIVE, "x", mlir.make_context())))
    runs = {
        f"{src}:6:8: error: @f calls itself": run_command("assign", "--target", "xla-cpu", str(src), text=False),
        "<stdin>:6:8: error: @f calls itself":
            run_command("assign", "--target", "xla-cpu", "-", stdin=src.read_bytes(), text=False),
        f"{blob}: error: at line 6:8 of the parsed text: @f calls itself":
            run_command("assign", "--target", "xla-cpu", str(blob), text=False),
        "<stdin>: error: at line 6:8 of the parsed text: @f calls itself":
            run_command("assign", "--target", "xla-cpu", "-", stdin=blob.read_bytes(), text=False),
    }
    for want, run in runs.items():
        assert run.returncode == 1
        assert run.stderr.decode().startswith(want), run.stderr
        assert len(run.stderr.decode().splitlines()) == 1


def test_whole_locations_of_bytecode_written_from_a_string_name_no_file(tmp_path: Path) -> None:
    blob = tmp_path / "seed.mlirbc"
    blob.write_bytes(mlir.to_bytecode(mlir.load(SEED.read_text(), "x", mlir.make_context())))
    for command in ("explain", "trace"):
        run = run_command(command, "--mlir-print-debuginfo", str(blob), text=False)
        assert run.returncode == 0, run.stderr
        shown = run.stdout.decode()
        assert PARSED in shown and '"-"' not in shown and not DASH.search(shown), command
