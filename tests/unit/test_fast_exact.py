"""The engine's shortcuts decide nothing.

A default run stops after round 0 when round 1 provably repeats it, lays out
scalar/vector computations without the worklist, and keeps no provenance; an
exact run (what explain and trace use) does none of that.  On every lit input
and every target and entry mode the two print byte-identical modules.  The
fuzzer checks the same property on generated programs (``exact``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.model.errors import InputError, PassError
from stablehlo_layout.model.options import ENTRY_MODES
from stablehlo_layout.targets import TARGET_NAMES
from tests.conftest import assign_text
from tests.support import ROOT

LIT = ROOT / "tests" / "lit"
INPUTS = sorted(p for p in list(LIT.glob("*.mlir")) + list(LIT.glob("Inputs/**/*.mlir")))


def _run(data: bytes, name: str, target: str, mode: str, exact: bool) -> tuple[str, int, int]:
    r = assign_text(data, target, mode, name=name, exact=exact)
    return mlir.print_module(r.module, debuginfo=True), r.assignment.rounds, r.assignment.rounds_computed


@pytest.mark.parametrize("path", INPUTS, ids=[str(p.relative_to(LIT)) for p in INPUTS])
def test_fast_and_exact_runs_print_the_same_module(path: Path):
    data = path.read_bytes()
    for target in TARGET_NAMES:
        for mode in ENTRY_MODES:
            try:
                fast, rounds, computed = _run(data, path.name, target, mode, exact=False)
            except (InputError, PassError):
                continue  # a bad-input test file: its error is tested elsewhere
            exact, exact_rounds, exact_computed = _run(data, path.name, target, mode, exact=True)
            assert fast == exact, f"{target} {mode}"
            assert rounds == exact_rounds == exact_computed and computed <= rounds


def test_the_shortcut_is_taken_on_a_plain_module():
    text = (LIT / "transpose.mlir").read_bytes()
    _, rounds, computed = _run(text, "transpose.mlir", "xla-cpu", "default", exact=False)
    assert (rounds, computed) == (2, 1)


# Inputs with regions whose arrays all have rank 0 or 1 (reducers, comparators, scalar loops):
# a fast run lays them out in runs, in one call to the core each, and records their interfaces.
REGION_INPUTS = [p for p in INPUTS if any(op in p.read_text(errors="replace")
                                          for op in ("stablehlo.reduce", "stablehlo.sort", "stablehlo.while"))]


def _interfaces(a) -> dict[int, tuple]:
    return {c: (tuple(cl.params), tuple(cl.results), cl.params_set, cl.result_set)
            for c, cl in a.comp_layouts.items()}


@pytest.mark.parametrize("path", REGION_INPUTS, ids=[str(p.relative_to(LIT)) for p in REGION_INPUTS])
def test_fast_runs_record_the_interfaces_an_exact_run_records(path: Path):
    data = path.read_bytes()
    for target in TARGET_NAMES:
        try:
            fast = assign_text(data, target, name=path.name).assignment
        except (InputError, PassError):
            continue
        exact = assign_text(data, target, name=path.name, exact=True).assignment
        assert _interfaces(fast) == _interfaces(exact), target


def test_a_run_of_trivial_computations_is_one_call_to_the_core(monkeypatch):
    from stablehlo_layout import _core

    calls: list[list[int]] = []
    real = _core.lay_out_one_layout_run

    def counted(core, comps):
        calls.append(list(comps))
        return real(core, comps)

    monkeypatch.setattr(_core, "lay_out_one_layout_run", counted)
    text = """
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<f32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %a = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
  %b = stablehlo.reduce(%x init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
  %c = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %a, %b, %c : tensor<4xf32>, tensor<8xf32>, tensor<f32>
}
"""  # noqa: E501 (IR text, one op per line, as the tool reads it)
    a = assign_text(text, "xla-cpu").assignment
    reducers = [c.id for c in a.graph.comps if not c.is_entry]
    assert len(reducers) == 3
    # One call per round computed, all three reducers in it, each with its interface recorded.
    assert calls == [reducers] * a.rounds_computed
    assert all(a.comp_layouts[c].result_set and a.comp_layouts[c].results == [()] for c in reducers)
    exact = assign_text(text, "xla-cpu", exact=True).assignment
    assert calls == [reducers] * a.rounds_computed  # an exact run takes every computation through the worklist
    assert _interfaces(exact) == _interfaces(a)
