"""Targets as an extension point: by name, by file, by entry point; clear errors otherwise."""

from __future__ import annotations

import os
import textwrap

import pytest

from stablehlo_layout.model.errors import PassError
from stablehlo_layout.targets import ENTRY_POINT_GROUP, GenericTarget, Target, XlaCpuTarget, get_target
from tests.conftest import assign_text
from tests.support import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "targets", "column_major_dots.py")
DOT = """
func.func public @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""


def copies_with(target) -> list:
    return assign_text(DOT, target).copies


def test_builtin_names():
    assert isinstance(get_target("generic")[0], GenericTarget)
    assert isinstance(get_target("xla-cpu")[0], XlaCpuTarget)
    assert get_target("xla-gpu")[0].name == "xla-gpu"


def test_file_target_adds_its_constraints():
    target, warning = get_target(f"{EXAMPLE}:ColumnMajorDots")
    assert warning is None and isinstance(target, Target) and target.name == "column-major-dots"
    copies = copies_with(target)
    assert sorted(c.dst for c in copies) == [(0, 1), (0, 1)]
    assert copies_with("generic") == []


def test_entry_point_target(tmp_path, monkeypatch):
    pkg = tmp_path / "my_backend.py"
    pkg.write_text(textwrap.dedent("""
        from stablehlo_layout.targets import GenericTarget

        class Mine(GenericTarget):
            def __init__(self):
                super().__init__("mine")
    """))
    dist = tmp_path / "my_backend-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-backend\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nmine = my_backend:Mine\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    target, _ = get_target("mine")
    assert target.name == "mine"
    assert copies_with(target) == []


@pytest.mark.parametrize("spec,message", [
    ("nope", "unknown target 'nope'"),
    ("missing.py:X", "no such file"),
    (f"{EXAMPLE}:Nope", "has no class 'Nope'"),
    (f"{EXAMPLE}:Origin", "is not a subclass"),
])
def test_bad_targets_are_one_clear_error(spec, message):
    with pytest.raises(PassError, match=message):
        get_target(spec)


def test_the_example_target_demands_real_layouts_through_the_new_api():
    """The user-target example (docs/cli.md, examples/targets/) makes its demands through the
    view: both dot operands are read column-major, by the example's own rule."""
    target, _ = get_target(f"{EXAMPLE}:ColumnMajorDots")
    a = assign_text(DOT, target).assignment
    dot = next(ins.id for ins in a.graph.instrs if ins.op == "stablehlo.dot_general")
    for n in (0, 1):
        c = a.operand_constraints[(dot, n)]
        assert c.layout == (0, 1) and c.mandatory
        assert c.origin.rule == "target:column-major-dots"
    # The pinned row-major parameters keep their layout; each dot operand is one copy.
    assert [a.layouts[a.graph.instrs[p].results[0]] for p in a.graph.comps[a.graph.entry].params] == [(1, 0), (1, 0)]
    assert sorted((c.consumer, c.operand, c.dst) for c in a.copies) == [(dot, 0, (0, 1)), (dot, 1, (0, 1))]


def test_the_cli_reference_shows_the_example_target_as_it_is():
    readme = open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8").read()
    block = readme.split("  class ColumnMajorDots(Target):", 1)[1].split("  ```", 1)[0]
    shown = textwrap.dedent("  class ColumnMajorDots(Target):" + block).strip()
    assert shown in open(EXAMPLE, encoding="utf-8").read()


def test_a_user_target_extending_xla_cpu_passes_its_demands_on(tmp_path):
    """A user target that adds to XLA:CPU's demands (``yield from super()...``) goes through
    the user guard with XLA:CPU's own demands in it, and lays out as xla-cpu plus its own."""
    path = tmp_path / "more_cpu.py"
    path.write_text(textwrap.dedent("""
        from stablehlo_layout.model.constraints import Origin
        from stablehlo_layout.targets.demands import Demand
        from stablehlo_layout.targets import XlaCpuTarget

        class Same(XlaCpuTarget):
            def backend_demands(self, view, comp):
                yield from super().backend_demands(view, comp)

        class ColumnMajorResult(XlaCpuTarget):
            def backend_demands(self, view, comp):
                yield from super().backend_demands(view, comp)
                for iid in view.graph.comps[comp].instrs:
                    if view.rule(iid).hlo == "dot_general":
                        yield Demand.on_results(iid, [(0, 1)], Origin("target:col-result", iid))
    """))
    cpu = assign_text(DOT, "xla-cpu").assignment
    same = assign_text(DOT, get_target(f"{path}:Same")[0]).assignment
    assert same.layouts == cpu.layouts and [(c.value, c.dst) for c in same.copies] == \
        [(c.value, c.dst) for c in cpu.copies]
    col = assign_text(DOT, get_target(f"{path}:ColumnMajorResult")[0]).assignment
    dot = next(ins for ins in col.graph.instrs if ins.op == "stablehlo.dot_general")
    assert col.layouts[dot.results[0]] == (0, 1)
    assert col.buffer_constraints[dot.results[0]].origin.rule == "target:col-result"
    # The later mandatory demand at the same priority replaced XLA:CPU's row-major result
    # (XLA's overwrite rule); the row-major operand demands still hold, and the pinned
    # row-major result of @main is a copy of the dot's.
    assert col.operand_constraints[(dot.id, 0)].layout == (1, 0)
    assert [(c.value, c.dst) for c in col.copies] == [(dot.results[0], (1, 0))]
