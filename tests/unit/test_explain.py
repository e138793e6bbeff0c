"""explain: complete chains, right byte counts, fixes that really remove the copy, JSON schema."""

from __future__ import annotations

import json
import os
import re

import jsonschema
import pytest
from jaxlib.mlir import ir

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import analyze
from stablehlo_layout.report.explain import SCHEMA, explain, render_trace
from tests.conftest import analyze_text, assign_text, load_text
from tests.support import ROOT

SCHEMA_DOC = json.load(open(os.path.join(ROOT, "docs", "explain.schema.json")))

# Rules a chain may start from: every demand comes from one of these.
SOURCES = {
    "entry-parameter", "entry-result", "computation-parameter", "computation-result",
    "default-layout", "custom-call-layout", "call-interface", "while-interface",
    "branch-interface", "branch-result-agreement", "region-interface", "infeed-layout",
    "send-operand", "outfeed-layout", "channel-layout", "unknown-op-default",
}

LOOP = """
func.func public @main(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, tensor<8x8xf32>
  cond {
    %n = stablehlo.constant dense<5> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %s = stablehlo.sine %t : tensor<8x8xf32>
    stablehlo.return %j, %s : tensor<i32>, tensor<8x8xf32>
  }
  return %r#1 : tensor<8x8xf32>
}
"""

TWO_CONSUMERS = """
func.func public @main(%x: tensor<4x6xf32>, %k: tensor<6x4xf32> {mhlo.layout_mode = "{0,1}"})
    -> (tensor<6x4xf32>, tensor<4x6xf32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %a = stablehlo.add %t, %k : tensor<6x4xf32>
  %n = stablehlo.negate %x : tensor<4x6xf32>
  return %a, %n : tensor<6x4xf32>, tensor<4x6xf32>
}
"""


def cases() -> dict[str, tuple[str, str]]:
    with open(os.path.join(ROOT, "examples", "pinned_transpose.mlir")) as f:
        seed = f.read()
    out = {"seed": (seed, "generic"), "loop": (LOOP, "xla-cpu"), "two_consumers": (TWO_CONSUMERS, "generic")}
    lapack = os.path.join(ROOT, "tests", "lit", "Inputs", "jax", "cholesky.mlir")
    if os.path.exists(lapack):
        with open(lapack) as f:
            out["lapack"] = (f.read(), "xla-cpu")
    return out


def run_explain(text: str, target: str):
    _, a, _ = analyze_text(text, target)
    return explain(a)


@pytest.mark.parametrize("name", sorted(cases()))
def test_json_matches_the_schema(name):
    text, target = cases()[name]
    doc = run_explain(text, target).to_json()
    assert doc["schema"] == SCHEMA
    jsonschema.validate(doc, SCHEMA_DOC)
    assert doc["summary"]["copies"] == len(doc["copies"]) > 0


@pytest.mark.parametrize("name", sorted(cases()))
def test_every_chain_ends_at_a_source(name):
    text, target = cases()[name]
    for report in run_explain(text, target).copies:
        assert report.consumer_chain and report.producer_chain
        for link in (report.consumer_chain[-1], report.producer_chain[-1]):
            assert link.rule in SOURCES or link.rule.startswith("target:"), link
        assert report.verdict
        assert report.explain().startswith(f"copy #{report.index}:")


def test_bytes_and_loop_trip_count():
    (report,) = run_explain(LOOP, "xla-cpu").copies
    assert report.bytes == 8 * 8 * 4
    assert report.loop_trips == [5]
    assert report.total_bytes == 5 * 256
    assert "x 5 iterations" in report.explain()


def _apply(text: str, change: str, index: int, mode: str) -> str:
    """Write a fix into the module the way a user would: an mhlo.layout_mode attribute."""
    module = load_text(text)
    ctx = module.context
    main = next(f for f in module.body.operations if ir.StringAttr(f.attributes["sym_name"]).value == "main")
    key = "arg_attrs" if change.endswith("parameter") else "res_attrs"
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    count = len(ftype.inputs) if key == "arg_attrs" else len(ftype.results)
    with ctx:
        old = list(ir.ArrayAttr(main.attributes[key])) if key in main.attributes else [ir.DictAttr.get({})] * count
        new = []
        for i, d in enumerate(old):
            d = ir.DictAttr(d)
            entries = {d[k].name: d[k].attr for k in range(len(d))}
            if i == index:
                entries["mhlo.layout_mode"] = ir.StringAttr.get(mode)
            new.append(ir.DictAttr.get(entries))
        main.attributes[key] = ir.ArrayAttr.get(new)
    return mlir.print_module(module)


@pytest.mark.parametrize("name", sorted(cases()))
def test_each_fix_really_removes_its_copy(name):
    text, target = cases()[name]
    report = run_explain(text, target)
    fixed = [r for r in report.copies if r.fix is not None]
    if name in ("seed", "two_consumers"):
        assert fixed, "the seed scenarios have an entry-layout fix"
    for r in fixed:
        mode = re.search(r'mhlo.layout_mode = "([^"]+)"', r.fix.description).group(1)
        changed = _apply(text, r.fix.change, r.fix.index, mode)
        result = assign_text(changed, target)
        edges = {(c["op"], c["location"], c["operand"]) for c in r.consumers}
        g = result.graph
        remaining = {(g.instrs[e.consumer].op, g.instrs[e.consumer].loc, e.operand)
                     for c in result.copies for e in c.edges}
        assert not (edges & remaining), f"{r.fix.description} left the copy in place"
        assert len(result.copies) - len(report.copies) == r.fix.copies_delta


def test_seed_fix_says_what_the_parameter_takes():
    text, target = cases()["seed"]
    (r,) = run_explain(text, target).copies
    assert r.fix.change == "auto-parameter" and r.fix.index == 0
    assert r.fix.new_layout == (0, 1)
    assert r.fix.copies_delta == -1 and r.fix.bytes_delta == -256


def test_trace_is_deterministic_and_complete():
    text, target = cases()["seed"]
    outs = []
    for _ in range(2):
        _, a, _ = analyze_text(text, target, trace=True)
        outs.append(render_trace(a))
    assert outs[0] == outs[1]
    assert outs[0].count("pop ") == len(a.trace)
    assert "round 0" in outs[0] and "round 1" in outs[0]


def test_python_api_copies_explain_themselves():
    text, target = cases()["seed"]
    result = assign_text(text, target)
    (copy,) = result.copies
    assert copy.explain().startswith("copy #1: f32[16,4] {1,0} -> {0,1}")
    assert "fix: leave parameter 0 unpinned" in copy.explain()
    assert result.explain().copies[0].dst == copy.dst


def test_analyze_consuming_the_module_explains_the_same():
    # The command drops its module after the analysis, so it lets the import
    # inline into the module itself; the explanation must not change, and
    # without ``consume`` the caller's module stays as it was read.
    text = open(os.path.join(ROOT, "tests", "lit", "call_inline_cpu.mlir")).read()
    kept_module = load_text(text)
    before = str(kept_module)
    _, kept, _ = analyze(kept_module, "xla-cpu", exact=True)
    assert str(kept_module) == before
    consumed = load_text(text)
    _, used, _ = analyze(consumed, "xla-cpu", exact=True, consume=True)
    assert str(consumed) != before  # the calls were inlined into it
    report = explain(used)
    assert report.copies
    assert report.render() == explain(kept).render()


def test_reports_hold_the_cyclic_collector_off(monkeypatch):
    # Every report survives, so with the collector on it rescanned the whole
    # graph again and again (two thirds of the reports' time on a 43k-op
    # module): building, rendering and the JSON form run with it off.
    import gc

    from stablehlo_layout.report import explain as ex

    _, a, _ = analyze_text(LOOP, "xla-cpu", exact=True)
    seen: dict[str, list[bool]] = {}

    def spy(name: str):
        real = getattr(ex, name)

        def call(*args, **kwargs):
            seen.setdefault(name, []).append(gc.isenabled())
            return real(*args, **kwargs)
        monkeypatch.setattr(ex, name, call)

    names = {"link_of", "verdict", "render_copy", "render_summary", "value_bytes", "rule_text"}
    for name in names:
        spy(name)
    assert gc.isenabled()
    report = explain(a)
    report.render()
    del seen["rule_text"]  # the JSON form's own calls next
    report.to_json()
    assert set(seen) == names
    assert not any(any(v) for v in seen.values()), seen
    assert gc.isenabled()
