"""Names and tables the package keeps in one place, and keeps still.

Target names, entry-layout modes and the per-op rule table each have one
home that every entry point (command, pass, API) reads; none of them changes
while the package runs.
"""

from __future__ import annotations

import pytest

from stablehlo_layout.passes import LayoutAssignmentPass
from stablehlo_layout.model import rules
from stablehlo_layout.frontends.cli import _parser
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.options import ENTRY_MODES, check_entry_mode
from stablehlo_layout.targets import TARGET_NAMES, get_target

from tests.conftest import assign_text

TRANSPOSE = """
func.func public @main(%x: tensor<16x4xf32>) -> tensor<4x16xf32> {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<16x4xf32>) -> tensor<4x16xf32>
  return %t : tensor<4x16xf32>
}
"""


def test_every_builtin_target_name_resolves_to_a_target_of_that_name():
    assert TARGET_NAMES == ("generic", "xla-cpu", "xla-gpu", "xla-tpu")
    for name in TARGET_NAMES:
        target, warning = get_target(name)
        assert target.name == name and warning is None


def test_the_command_offers_the_same_targets_and_modes():
    sub = _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for command in ("assign", "explain", "trace"):
        actions = {a.dest: a for a in sub[command]._actions}
        assert all(name in actions["target"].help for name in TARGET_NAMES)
        assert tuple(actions["entry_layouts"].choices) == ENTRY_MODES


def test_a_bad_entry_mode_reads_the_same_from_the_api_and_the_pass():
    expected = "unknown entry layout mode 'loose' (expected default or free)"
    with pytest.raises(PassError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        check_entry_mode("loose")
    with pytest.raises(PassError) as api:
        assign_text(TRANSPOSE, entry_layouts="loose")
    with pytest.raises(PassError) as pipeline:
        LayoutAssignmentPass(entry_layouts="loose")
    assert str(api.value) == str(pipeline.value) == expected
    for mode in ENTRY_MODES:
        assert check_entry_mode(mode) == mode
        assert assign_text(TRANSPOSE, entry_layouts=mode).assignment.entry_mode == mode


def test_the_rule_table_is_fixed_at_import():
    size = len(rules.RULES)
    chlo = rules.rule_for("chlo.bessel_i1e")
    unknown = rules.rule_for("acme.frobnicate")
    assert len(rules.RULES) == size  # looking a name up adds nothing
    assert not chlo.can_change and chlo.known and chlo.hlo == "bessel_i1e"
    assert unknown.can_change and not unknown.known
    assert rules.rule_for("chlo.top_k").hlo == "topk" and rules.rule_for("chlo.ragged_dot").can_change
    with pytest.raises(TypeError):
        rules.RULES["acme.frobnicate"] = unknown  # type: ignore[index]
