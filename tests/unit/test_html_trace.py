"""The interactive trace page: deterministic, self-contained, and right on screen.

The browser tests drive a real headless Chromium through its DevTools
protocol over ``--remote-debugging-pipe`` (standard library only: no
WebSocket client, no driver download).  They need a Chromium binary
(Debian: ``apt-get install -y chromium``) and skip with the reason when
there is none.  They are the ``browser`` tier (``pytest -m browser``).
"""

from __future__ import annotations

import json
import re

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import analyze
from stablehlo_layout.report.explain import TRACE_WORDS, explain, render_trace
from stablehlo_layout.report.html import SCHEMA, _row, deque_states, plan_calls, render_trace_html, write_trace_html
from stablehlo_layout.engine import state as P
from stablehlo_layout.engine.result import copy_groups
from tests.conftest import analyze_text
from tests.support import ROOT
from tests.support.browser import Browser

SEED = "examples/pinned_transpose.mlir"


def _analyze(rel: str, target: str = "generic", text: str | None = None):
    if text is None:
        return analyze(mlir.read_input(str(ROOT / rel), mlir.make_context()), target, "default", trace=True)
    return analyze_text(text, target, name=rel, trace=True)


def _page(rel: str, target: str = "generic", fixes: bool = True) -> tuple[str, object, object]:
    g, a, _ = _analyze(rel, target)
    e = explain(a, fixes=fixes)
    return render_trace_html(g, a, e, f"trace of {rel}"), a, e


# --- without a browser -------------------------------------------------------------


def test_same_input_same_bytes():
    first, _, _ = _page(SEED)
    second, _, _ = _page(SEED)  # a fresh context, fresh objects
    assert first == second
    g, a, _ = _analyze("tests/lit/call.mlir")
    assert render_trace_html(g, a, None, "t") == render_trace_html(g, a, None, "t")


def test_page_is_self_contained(tmp_path):
    for rel in (SEED, "tests/lit/call.mlir", "tests/lit/reduce.mlir"):
        g, a, _ = _analyze(rel)
        out = tmp_path / "page.html"
        write_trace_html(g, a, explain(a, fixes=False), str(out), "t")
        text = out.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>")
        for banned in ("http://", "https://", "src=", "<link", "@import", "//cdn", "fonts.googleapis"):
            assert banned not in text, (rel, banned)
        assert re.findall(r"url\(([^)]*)\)", text) and all(
            u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", text))
        assert text.count("<script") == 2  # the data and the code, both inline


def test_page_carries_the_trace_compactly():
    html, a, _ = _page(SEED)
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1))
    schema = data["schema"]
    assert schema == {k: list(v) for k, v in SCHEMA.items()}  # the page reads field names from here
    assert len(data["calls"]) >= 2  # one worklist run per round here
    assert len(data["events"]) == len(a.trace)
    assert all(len(e) == len(schema["event"]) for e in data["events"])
    copy = dict(zip(schema["copy"], data["copies"][0]))
    assert len(data["copies"]) == 1 and copy["bytes"] == 256
    assert copy["title"] == "copy #1: f32[16,4] {1,0} \u2192 {0,1}"
    assert len(data["facts"]) % len(schema["fact"]) == 0
    # Sentences come from explain's templates, not from the page's code.
    assert data["words"] == TRACE_WORDS
    page_js = (ROOT / "stablehlo_layout" / "report" / "trace_page" / "page.js").read_text()
    for words in ("\"pop ", "current priority", " waiting)", "derived (not", "entry function", "moved per",
                  "drawn at its first call", "nothing popped"):
        assert words not in page_js, words


def test_data_records_follow_the_schema():
    with pytest.raises(ValueError, match="do not match the schema"):
        _row("result", value=1, layout=2)
    assert _row("result", pinned=1, value=1, layout=2) == [1, 2, 1]


def _real_deques(rel: str, target: str, monkeypatch) -> tuple[list, list]:
    real: list[list[tuple]] = []
    orig = P.EngineState.take_events

    def take_events(self):
        # The core's own worklist after each pop (it records them when watched;
        # every worklist run, the default loop's too, ends here).
        real.extend(self.core.take_deques())
        orig(self)

    def watched(cls):
        def init(self, *args, **kwargs):
            cls(self, *args, **kwargs)
            self.core.watch = True
        return init

    monkeypatch.setattr(P.EngineState, "__init__", watched(P.EngineState.__init__))
    monkeypatch.setattr(P.EngineState, "take_events", take_events)
    _, a, _ = _analyze(rel, target)
    monkeypatch.undo()
    mine = [[(f.kind, f.target) for f in state] for state in deque_states(a.trace)]
    return mine, real


@pytest.mark.parametrize("rel,target", [
    (SEED, "generic"), ("tests/lit/call.mlir", "generic"), ("tests/lit/reduce.mlir", "generic"),
    ("tests/lit/sort_gather_scatter.mlir", "generic"), ("tests/lit/custom_call.mlir", "generic"),
    ("tests/lit/dot_conv.mlir", "xla-gpu"), ("tests/lit/xla_cpu.mlir", "xla-cpu"),
])
def test_deque_replay_matches_the_engine(rel, target, monkeypatch):
    mine, real = _real_deques(rel, target, monkeypatch)
    assert len(mine) == len(real) > 0
    assert mine == real


def test_each_round_is_one_worklist_run_seeded_by_the_entry():
    _, a, _ = _analyze(SEED)
    plans = plan_calls(a.trace)
    assert [p.start for p in plans] == [0, 8]
    # Seeds: the entry result (popped first) and the pinned parameter (popped last).
    assert [s.rule for p in plans for s in p.seeds] == [
        "entry-result", "entry-parameter", "entry-result", "entry-parameter"]


# --- in a real browser ---------------------------------------------------------------


def _node_text(b: Browser, op: str) -> str:
    """The text of the drawn node whose tooltip starts with ``op``."""
    return b.js(f"(() => {{ const n = [...document.querySelectorAll('#world .n')].find("
                f"g => g.querySelector('title').textContent.startsWith({json.dumps(op)}));"
                " return n ? [...n.querySelectorAll('text')].map(t => t.textContent).join(' | ') : null; })()")


def _node_classes(b: Browser, op: str) -> str:
    return b.js(f"(() => {{ const n = [...document.querySelectorAll('#world .n')].find("
                f"g => g.querySelector('title').textContent.startsWith({json.dumps(op)}));"
                " return n ? n.getAttribute('class') : null; })()")


@pytest.mark.browser
def test_seed_page_in_a_browser(browser, tmp_path):
    b = browser
    g, a, _ = _analyze(SEED)
    e = explain(a)
    out = tmp_path / "seed.html"
    write_trace_html(g, a, e, str(out), "seed")
    trace_lines = [ln.strip() for ln in render_trace(a).splitlines()]
    pops = [ln for ln in trace_lines if ln.startswith("pop ")]
    b.open(out.as_uri())
    assert b.js("document.title") == "seed"
    # The page's own rendering of the whole trace is render_trace's, line for line.
    assert b.js("traceText()") == render_trace(a)
    state = b.js("traceState()")
    assert state["step"] == 0 and state["pops"] == len(a.trace) == 16 and state["last"] == 17
    assert b.text("#pop") == "(none)"

    # Right arrow: pop 1, the entry result constraint.
    b.key("ArrowRight", 39)
    assert b.text("#pop") == pops[0] == "pop 1: results of @main = {1,0}  [result; entry-result; mandatory, dfs, priority 3]"
    assert b.text("#where") == "round 0, current priority 0: @main"
    badges = b.texts("#badges .badge")
    assert {"result", "priority 3", "mandatory", "dfs (front)", "rule: entry-result"} <= set(badges)
    assert b.texts("#derived li") == [
        f"+ result of stablehlo.negate at {ROOT / SEED}:8:8 = {{1,0}}  [buffer; consumer-demand; derived, priority 0]"]
    assert "POPPED" in _node_text(b, "root") and "popped" in _node_classes(b, "root")
    param = _node_text(b, "parameter")
    assert "[PINNED]" in param and "f32[16,4] {1,0}" in param and "pinned" in _node_classes(b, "parameter")
    negate = _node_text(b, "stablehlo.negate")
    assert "\u0394 f32[4,16] {1,0}" in negate and "DERIVED" in negate and "CHANGED" in negate
    assert "f32[4,16] {?}" in _node_text(b, "stablehlo.transpose")  # nothing set yet
    changed = b.texts("#changed li")
    assert f"\u0394 result of stablehlo.negate at {ROOT / SEED}:8:8: unset \u2192 {{1,0}}" in changed
    assert b.text("#dsize") == "(2 waiting)"

    # Next button to pop 6: the transpose wants {0,1} from the pinned parameter.
    for _ in range(5):
        b.click("#b-next")
    assert b.js("traceState().step") == 6
    assert b.text("#pop") == pops[5] == (
        f"pop 6: operand 0 of stablehlo.transpose at {ROOT / SEED}:7:8 = {{0,1}}  "
        "[operand; transpose-bitcast; derived, dfs, priority 0]")
    assert {"operand", "priority 0", "derived (not mandatory)", "dfs (front)", "rule: transpose-bitcast"} <= set(
        b.texts("#badges .badge"))
    assert "the layout that makes the transpose a bitcast" in b.text("#origin")
    assert f"\u2190 result of stablehlo.transpose at {ROOT / SEED}:7:8 = {{1,0}}" in b.text("#origin")
    assert "\u2260 wants {0,1}" in b.texts("#world .wl")
    assert b.js("document.querySelectorAll('#world path.e.want.hot').length") == 1
    assert "POPPED" in _node_text(b, "stablehlo.transpose")
    assert "f32[16,4] {1,0}" in _node_text(b, "parameter")
    # The deque as the engine had it: the transpose's own result, then the parameter seed.
    front = b.texts("#dfront li")
    assert front[0].startswith(f"result of stablehlo.transpose at {ROOT / SEED}:7:8 = {{1,0}}  [buffer; transpose-bitcast")
    assert front[1].startswith("parameter 0 of @main = {1,0}  [buffer; entry-parameter; mandatory")
    sizes = [len(s) for s in deque_states(a.trace)]
    assert b.text("#dsize") == f"({sizes[5]} waiting)"

    # Left arrow goes back; the slider jumps.
    b.key("ArrowLeft", 37)
    assert b.text("#pop") == pops[4]
    b.js("(() => { const s = document.getElementById('slider'); s.value = 9;"
         " s.dispatchEvent(new Event('input')); })()")
    b.settle()
    assert b.text("#where") == "round 1, current priority 1: @main"
    assert b.text("#pop") == pops[8]
    assert "f32[4,16] {?}" in _node_text(b, "stablehlo.transpose")  # a new round starts afresh
    for step in range(1, 17):  # every step: the popped line and the deque size
        b.js(f"goStep({step})")
        assert b.text("#pop") == pops[step - 1]
        assert b.text("#dsize") == f"({sizes[step - 1]} waiting)"

    # End: the layouts assigned and the one copy on its edge; clicking it explains it.
    b.key("End", 35)
    assert b.js("traceState().step") == 17
    assert "end state" in b.text("#stepno")
    copies = b.texts("#world .copy")
    assert copies == ["copy #1 \u00b7 256 B {1,0}\u2192{0,1}"]
    assert b.js("document.querySelectorAll('#world path.e.cp').length") == 1
    assert "f32[4,16] {1,0}" in _node_text(b, "stablehlo.transpose")
    assert b.js("document.getElementById('explainbox').hidden") is True
    b.click("#world .copy")
    assert b.js("document.getElementById('explainbox').hidden") is False
    assert b.text("#explain") == e.copies[0].explain()
    assert b.text("#explain").startswith("copy #1: f32[16,4] {1,0} -> {0,1}")
    summary = b.text("#summary")
    assert "1 copy, 256 B" in summary and "entry result layout (entry-result)" in summary
    assert "pinned" in summary and "-1 copy, -256 B" in summary
    b.key("Home", 36)
    assert b.text("#pop") == "(none)"


@pytest.mark.browser
@pytest.mark.parametrize("rel,target", [
    ("tests/lit/call.mlir", "generic"), ("tests/lit/reduce.mlir", "generic"),
    ("tests/lit/sort_gather_scatter.mlir", "generic"), ("tests/lit/xla_gpu_collectives.mlir", "xla-gpu"),
])
def test_page_trace_text_matches_render_trace(browser, tmp_path, rel, target):
    g, a, _ = _analyze(rel, target)
    out = tmp_path / "page.html"
    write_trace_html(g, a, explain(a, fixes=False), str(out), rel)
    browser.open(out.as_uri())
    assert browser.js("traceText()") == render_trace(a)
    browser.js("goStep(traceState().last)")
    browser.settle()
    groups = copy_groups(a)
    listed = browser.texts("#copylist li")
    assert listed == ["no copies"] if not groups else len(listed) == len(groups)
    assert len(browser.texts("#world .copy")) <= len(groups)


def _big_module(n: int) -> str:
    """A chain of ``n`` elementwise/transpose ops over two parameters, plus some reductions."""
    lines = ["func.func public @main(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>) -> tensor<8x16xf32> {"]
    lines.append("  %z = stablehlo.constant dense<0.0> : tensor<f32>")
    prev = "%a"
    for k in range(n):
        if k % 50 == 49:
            lines.append(f"  %t{k} = stablehlo.transpose %b, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>")
            lines.append(f"  %v{k} = stablehlo.add {prev}, %t{k} : tensor<8x16xf32>")
        elif k % 100 == 10:
            lines.append(f"  %r{k} = stablehlo.reduce({prev} init: %z) applies stablehlo.add across dimensions = [1]"
                         " : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>")
            lines.append(f"  %v{k} = stablehlo.broadcast_in_dim %r{k}, dims = [0] : (tensor<8xf32>) -> tensor<8x16xf32>")
        else:
            lines.append(f"  %v{k} = stablehlo.{'negate' if k % 2 else 'exponential'} {prev} : tensor<8x16xf32>")
        prev = f"%v{k}"
    lines.append(f"  return {prev} : tensor<8x16xf32>")
    lines.append("}")
    return "\n".join(lines) + "\n"


@pytest.mark.browser
def test_large_module_draws_only_what_is_in_view(browser, tmp_path):
    g, a, _ = _analyze("big.mlir", text=_big_module(2500))
    assert len(g.instrs) > 2500
    out = tmp_path / "big.html"
    write_trace_html(g, a, explain(a, fixes=False), str(out), "big")
    size = out.stat().st_size
    assert size < 400 * (len(g.instrs) + len(a.trace))  # proportional, not per-step HTML
    browser.open(out.as_uri())
    state = browser.js("traceState()")
    assert state["nodes"] > 2500 and 0 < state["drawn"] < 200
    assert state["groups"] >= 20 and state["expanded"] == 0  # regions start collapsed in a big module
    browser.js(f"goStep({len(a.trace) // 2})")
    browser.settle()
    state = browser.js("traceState()")
    assert 0 < state["drawn"] < 200
    assert browser.text("#pop").startswith(f"pop {len(a.trace) // 2}: ")
    browser.key("End", 35)
    assert browser.js("traceState().step") == len(a.trace) + 1


@pytest.mark.parametrize("rel", ["tests/lit/Inputs/jax/cholesky.mlir", "tests/lit/Inputs/jax/solve.mlir"])
def test_every_seed_is_popped_once_where_the_replay_says(rel):
    _, a, _ = _analyze(rel, "xla-cpu")
    for p in plan_calls(a.trace):
        assert len(p.seed_pops) == len(p.seeds) > 0
        # The seed's constraint is the one that pop took: same kind and target.
        assert [(s.kind, s.target) for s in p.seeds] == [
            (a.trace[i].constraint.kind, a.trace[i].constraint.target) for i in p.seed_pops]


# A copy of a dynamically shaped value moves an unknown number of bytes.
DYNAMIC = """func.func public @main(%x: tensor<?x4xf32>, %y: tensor<8x4xf32>) -> (tensor<4x?xf32>, tensor<4x8xf32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %u = stablehlo.transpose %y, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  return %t, %u : tensor<4x?xf32>, tensor<4x8xf32>
}
"""


def test_page_of_a_dynamic_shape_copy_says_its_size_is_unknown():
    g, a, _ = _analyze("dyn.mlir", text=DYNAMIC)
    html = render_trace_html(g, a, explain(a, fixes=False), "dyn")  # used to raise TypeError
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1))
    sizes = [c[data["schema"]["copy"].index("bytes")] for c in data["copies"]]
    assert sorted(sizes, key=str) == [128, None]
    assert data["totalBytes"] == 128
    assert "128 B plus 1 copy of unknown size (dynamic shape) moved per execution" in data["summary"]["text"]
