"""The trace page of a real model, in a browser: readable at its end state, named as the text names it,
and its what-if answers are explain's.

The model is a small convnet's training step (NCHW convolutions, a dense
head, the gradient of both), compiled by XLA:CPU with ``--xla_dump_to``;
its ``before_layout-assignment`` dump, metadata and parameter names as XLA
writes them, goes through the command as a user runs it:
``stablehlo-layout trace --html``.  Chromium shows the page at its end
state; the screenshot is written beside the test's files (its path is in
the test's output and its ``user_properties``), so a reviewer can look.
These are the ``browser`` tier: without Chromium they skip, saying so.
"""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stablehlo_layout.report.explain import TRACE_WORDS, quantity
from tests.support.browser import Browser
from tests.support.command import QUIET, environment, run_command
from tests.unit.test_dump_target import _PROGRAM as CONVNET_STEP

pytestmark = pytest.mark.browser

# The convnet step test_dump_target dumps: NCHW convolution, a dense head, its gradient.
_STEP = CONVNET_STEP


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("convnet-step")
    subprocess.run([sys.executable, "-c", _STEP, str(folder)], check=True, env=environment(QUIET),
                   capture_output=True)
    found = glob.glob(str(folder / "*jit_loss*before_layout-assignment.txt"))
    assert len(found) == 1
    return Path(found[0])


def _page(dump: Path, out: Path) -> Path:
    p = run_command("trace", "--html", str(out), str(dump))
    assert p.returncode == 0, p.stderr
    return out


def _explain_blocks(dump: Path) -> dict[int, str]:
    """explain's text per copy, as the command prints it."""
    p = run_command("explain", str(dump))
    assert p.returncode == 0, p.stderr
    body = p.stdout.split("\nsummary: ", 1)[0]
    blocks = re.split(r"\n(?=copy #\d+: )", body.strip())
    return {int(re.match(r"copy #(\d+):", b).group(1)): b.strip() for b in blocks}  # type: ignore[union-attr]


def _hlo_names(dump: Path) -> set[str]:
    return set(re.findall(r"^\s*(?:ROOT\s+)?%?([\w.\-]+) = ", dump.read_text(), re.M))


_RECTS = """(sel => [...document.querySelectorAll(sel)].map(e => { const r = e.getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom, e.textContent]; }))"""


def _overlap(a: list, b: list) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def test_a_real_models_page_is_readable_at_its_end_state(browser: Browser, dump: Path, tmp_path: Path,
                                                         record_property) -> None:
    b = browser
    b.open(_page(dump, tmp_path / "step.html").as_uri())
    b.key("End", 35)
    shot = b.screenshot(tmp_path / "end-state.png")
    record_property("screenshot", str(shot))
    print(f"screenshot of the end state: {shot}")
    assert shot.stat().st_size > 10_000
    copies = b.js(_RECTS + "('#world .copy rect')")
    nodes = b.js(_RECTS + "('#world .n rect')")
    assert copies, "the first screen of a model with copies shows some"
    # No copy label hides another, or a node (its name and layout) under it.
    for i, c in enumerate(copies):
        for other in copies[i + 1:]:
            assert not _overlap(c, other), (c, other)
        for n in nodes:
            assert not _overlap(c, n), (c, n)
    # Fit the whole graph: every copy is drawn, still apart.
    b.click("#z-fit")
    fitted = b.js(_RECTS + "('#world .copy')")
    assert len(fitted) == len(b.js("D.copies")) == len(_explain_blocks(dump))
    for i, c in enumerate(fitted):
        for other in fitted[i + 1:]:
            assert not _overlap(c, other), (c[4], other[4])
    b.screenshot(tmp_path / "end-state-fit.png")


def test_nodes_carry_the_hlo_names_the_text_uses(browser: Browser, dump: Path, tmp_path: Path) -> None:
    b = browser
    b.open(_page(dump, tmp_path / "step.html").as_uri())
    b.key("End", 35)
    b.click("#z-fit")
    labels = b.js("[...document.querySelectorAll('#world .n')].map(n => n.querySelector('text').textContent)")
    names = _hlo_names(dump)
    params = [x for x in labels if x.startswith("parameter ")]
    assert params and all(re.fullmatch(r"parameter \d+: ([\w.\-]+)(  \[PINNED\])?", x) for x in params), params
    for x in labels:
        name = x.split(": ", 1)[1].split()[0] if x.startswith("parameter ") else x.split(" ", 1)[0]
        assert name in names or x.startswith("return"), x
    # Each copy's text names its producer and consumer by instruction: both are nodes on the page.
    for text in _explain_blocks(dump).values():
        for role in ("producer", "consumer"):
            m = re.search(rf"^  {role}: .* at ([\w.\-]+)", text, re.M)
            if m:
                assert any(x.split(" ", 1)[0] == m.group(1) for x in labels), (m.group(1), labels)


def test_the_what_if_answers_are_explains(browser: Browser, dump: Path, tmp_path: Path) -> None:
    b = browser
    b.open(_page(dump, tmp_path / "step.html").as_uri())
    b.key("End", 35)
    blocks = _explain_blocks(dump)
    for k, text in blocks.items():
        b.js(f"showCopy({k - 1})")
        # The click-through is explain's own report, its fix found by the same reruns.
        assert b.text("#explain") == text
        assert "\n  fix: " in text
    p = run_command("explain", "--json", str(dump))
    costs = json.loads(p.stdout)["summary"]["parameters"]
    rows = b.js("[...document.querySelectorAll('#summary table')][1].innerText")
    for cost in costs:
        n, nbytes = cost["copies_delta_if_free"], cost["bytes_delta_if_free"]
        want = "\u2014" if n is None else TRACE_WORDS["if-free"].format(
            copies=quantity(n, "copy", "copies"), sign="+" if nbytes >= 0 else "", bytes=nbytes)
        row = rows.splitlines()[cost["index"] + 1].split("\t")
        assert row[-1] == want, (row, cost)


def test_a_pinned_parameters_fix_shows_on_the_page(browser: Browser, tmp_path: Path) -> None:
    """The dump in examples/ pins x column-major: leaving it free removes a copy, as explain says."""
    from tests.support import ROOT

    dump = ROOT / "examples" / "xla_dump" / "before_layout-assignment.txt"
    out = tmp_path / "pinned.html"
    p = run_command("trace", "--target", "xla-cpu", "--html", str(out), str(dump))
    assert p.returncode == 0, p.stderr
    browser.open(out.as_uri())
    rows = browser.js("[...document.querySelectorAll('#summary table')][1].innerText").splitlines()
    assert rows[1].split("\t")[-1] == "-1 copy, -48 B"
    assert rows[1].split("\t")[0] == "0"
    labels = browser.js("[...document.querySelectorAll('#world .n')].map(n => n.querySelector('text').textContent)")
    assert "parameter 0: x.1  [PINNED]" in labels
