"""XLA's same-layout copies of operands a custom call overwrites in place (aliasing.py)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from stablehlo_layout.ir import mlir
from stablehlo_layout.engine.aliasing import aliased_operands
from stablehlo_layout.ir.importer import IN_PLACE_MARK
from tests.conftest import analyze_text, assign_text
from tests.support.equivalence import assert_bit_identical
from tests.support import ROOT


ALIAS = "#stablehlo.output_operand_alias<output_tuple_indices = [{out}], operand_index = {n}, operand_tuple_indices = []>"


def potrf(operand: str, aliases: str = ALIAS.format(out=0, n=0), layouts: bool = True) -> str:
    lay = ("operand_layouts = [dense<[0, 1]> : tensor<2xindex>], "
           "result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], ") if layouts else ""
    return (f"stablehlo.custom_call @lapack_spotrf_ffi({operand}) {{backend_config = \"\", "
            f"mhlo.backend_config = {{uplo = 76 : ui8}}, mhlo.frontend_attributes = {{num_batch_dims = \"0\"}}, "
            f"{lay}output_operand_aliases = [{aliases}]}} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>)")


def module(body: str) -> str:
    return ("func.func public @main(%a: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<i32>) {\n"
            f"{body}\n  return %l#0, %l#1 : tensor<4x4xf32>, tensor<i32>\n}}\n")


SPD = """  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = stablehlo.add %a, %t : tensor<4x4xf32>"""

ON_SUM = module(SPD + "\n  %l:2 = " + potrf("%s"))
ON_PARAMETER = module("  %l:2 = " + potrf("%a"))


def in_place(r):
    return [c for c in r.copies if c.in_place]


def test_an_aliased_operand_gets_a_same_layout_copy_right_before_the_call():
    r = assign_text(ON_SUM, "generic")
    [c] = in_place(r)
    assert c.src == c.dst == (0, 1)
    text = str(r.module)
    call = next(op for op in r.module.body.operations[0].regions[0].blocks[0].operations
                if op.operation.name == "stablehlo.custom_call")
    cp = call.operands[0].owner
    assert cp.name == "mhlo.copy" and IN_PLACE_MARK in cp.attributes
    assert "in_place_copy(" in str(cp.location)
    # The copy reads the sum, which keeps the call's layout: nothing changes but the buffer.
    assert 'xla_shape = "f32[4,4]{0,1}"' in str(cp) and str(cp.operands[0].owner).startswith("%")
    assert text.count(IN_PLACE_MARK) == 1


def test_the_copy_follows_a_relayout_copy_of_the_same_use():
    # a is pinned row-major: XLA copies it to {0,1} for potrf, then copies that copy.
    r = assign_text(ON_PARAMETER, "xla-cpu")
    relayouts = [c for c in r.copies if not c.in_place]
    [ip] = in_place(r)
    assert [(c.src, c.dst) for c in relayouts if c.edges[0].consumer == ip.edges[0].consumer] == [((1, 0), (0, 1))]
    call = next(op for op in r.module.body.operations[0].regions[0].blocks[0].operations
                if op.operation.name == "stablehlo.custom_call")
    cp = call.operands[0].owner
    assert IN_PLACE_MARK in cp.attributes
    first = cp.operands[0].owner
    assert first.name == "mhlo.copy" and IN_PLACE_MARK not in first.attributes


def test_one_copy_per_operand_however_many_outputs_alias_it():
    two = ALIAS.format(out=0, n=0) + ", " + ALIAS.format(out=1, n=0)
    lay = "dense<[0, 1]> : tensor<2xindex>"
    text = ("func.func public @main(%a: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {\n" + SPD + "\n"
            f"  %l:2 = stablehlo.custom_call @twice(%s) {{operand_layouts = [{lay}], result_layouts = [{lay}, {lay}], "
            f"output_operand_aliases = [{two}]}} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)\n"
            "  return %l#0, %l#1 : tensor<4x4xf32>, tensor<4x4xf32>\n}\n")
    r = assign_text(text, "generic")
    [c] = in_place(r)
    assert c.edges[0].aliased_output == 0


def test_no_copy_without_layout_constraints_or_aliases():
    assert in_place(assign_text(module(SPD + "\n  %l:2 = " + potrf("%s", layouts=False)), "generic")) == []
    no_alias = potrf("%s").replace("output_operand_aliases = [" + ALIAS.format(out=0, n=0) + "]", "")
    no_alias = no_alias.replace(", }", "}")
    assert in_place(assign_text(module(SPD + "\n  %l:2 = " + no_alias), "generic")) == []


def test_an_operand_that_already_is_a_copy_read_only_by_the_call_is_not_copied_again():
    own = SPD + "\n  %c = mhlo.copy %s : tensor<4x4xf32>\n  %l:2 = " + potrf("%c")
    g, a, _ = analyze_text(module(own), "generic")
    call = next(i for i in g.instrs if i.attrs.get("target") == "lapack_spotrf_ffi")
    assert aliased_operands(g, call.id) == []
    assert [e for e in a.copies if e.aliased_output is not None] == []
    # Read by another op too, XLA copies it again.
    shared = (SPD + "\n  %c = mhlo.copy %s : tensor<4x4xf32>\n  %n = stablehlo.negate %c : tensor<4x4xf32>\n"
              "  %l:2 = " + potrf("%c"))
    g, a, _ = analyze_text(module(shared), "generic")
    call = next(i for i in g.instrs if i.attrs.get("target") == "lapack_spotrf_ffi")
    assert aliased_operands(g, call.id) == [(0, 0)]


@pytest.mark.parametrize("target", ["generic", "xla-cpu", "xla-gpu"])
def test_a_rerun_on_the_output_is_a_fixed_point(target):
    first = assign_text(ON_PARAMETER, target)
    text = str(first.module)
    second = assign_text(text, target)
    assert str(second.module) == text
    assert len(second.copies) == len(first.copies)


def test_explain_says_why_and_what_would_remove_it():
    r = assign_text(ON_PARAMETER, "xla-cpu")
    e = r.explain()
    [rep] = [c for c in e.copies if c.kind == "in-place"]
    assert rep.src == rep.dst and rep.aliased_output == 0 and rep.fix is None
    assert rep.reason == "custom-call-in-place"
    text = rep.explain()
    assert "{0,1} -> {0,1} (same layout: an in-place operand, not a relayout)" in text
    assert "overwrites" in text and "output_operand_aliases" in text
    # It reads the relayout copy made for the same use: later passes can drop it.
    assert "relayout copy made for this same use" in rep.fix_note
    # Counted in the totals, and the JSON says what kind of copy it is.
    doc = e.to_json()
    assert doc["summary"]["copies"] == len(r.copies)
    kinds = sorted(c["kind"] for c in doc["copies"])
    assert kinds.count("in-place") == 1 and kinds.count("relayout") == len(r.copies) - 1
    schema = json.loads((ROOT / "docs" / "explain.schema.json").read_text())
    jsonschema.validate(doc, schema)
    # A parameter read by the call only, without a relayout: donating it is the way out.
    free = assign_text(ON_PARAMETER.replace("%a: tensor<4x4xf32>", '%a: tensor<4x4xf32> {mhlo.layout_mode = "{0,1}"}'),
                       "xla-cpu")
    [rep] = [c for c in free.explain().copies if c.kind == "in-place"]
    assert "donate_argnums=0" in rep.fix_note


def test_a_relayout_fix_is_not_blocked_by_the_in_place_copy_of_the_same_use():
    r = assign_text(ON_PARAMETER, "xla-cpu")
    relayout = next(c for c in r.explain().copies if c.kind == "relayout" and c.src == (1, 0) and c.dst == (0, 1))
    assert relayout.fix is not None and relayout.fix.removes and relayout.fix.change == "auto-parameter"


def test_the_rewritten_module_computes_the_same_bits():
    # Real LAPACK potrf on CPU, original against rewritten (with its in-place copies).
    src = (ROOT / "tests" / "lit" / "Inputs" / "jax" / "cholesky.mlir").read_text()
    for target in ("xla-cpu", "generic"):
        r = assign_text(src, target)
        assert in_place(r), target
        assert_bit_identical(src, str(r.module))
    r = assign_text(ON_SUM, "xla-cpu")
    assert_bit_identical(ON_SUM, str(r.module))


def test_xla_cpu_dump_copies_are_all_ours():
    """jnp.linalg on XLA:CPU: every copy of XLA's after dump, the four same-layout ones included."""
    from tests.differential.compare import compare_dumps

    pair = ROOT / "tests" / "unit" / "xla_dumps" / "linalg_cpu"
    r = compare_dumps(str(pair / "before.txt"), str(pair / "after.txt"), "xla-cpu")
    assert r["agree"] == r["values"] > 0
    assert [d for d in r["diffs"] if d["kind"] != "layout"] == []
    assert r["xla_copies_matched"] == r["xla_copies"]
    assert sum(1 for c in r["xla_copy_info"] if c["src_layout"] == c["dst"]) >= 2


def test_the_dump_reads_with_its_in_place_copies_marked():
    pair = ROOT / "tests" / "unit" / "xla_dumps" / "linalg_cpu"
    from stablehlo_layout.frontends.api import assign_module

    r = assign_module(mlir.read_input(str(pair / "before.txt"), mlir.make_context()), "xla-cpu")
    assert sorted(r.graph.instrs[c.edges[0].consumer].attrs["target"] for c in in_place(r)) == [
        "lapack_sgeqrf_ffi", "lapack_spotrf_ffi", "lapack_strsm_ffi", "lapack_strsm_ffi"]


def test_the_differential_report_says_why_xla_made_each_copy():
    from tests.differential.compare import compare_dumps

    pair = ROOT / "tests" / "unit" / "xla_dumps" / "linalg_cpu"
    r = compare_dumps(str(pair / "before.txt"), str(pair / "after.txt"), "xla-cpu")
    whys = [c["why"] for c in r["xla_copy_info"]]
    in_place_whys = sorted(w for w in whys if w.startswith("in-place operand"))
    assert in_place_whys == [
        "in-place operand of @lapack_sgeqrf_ffi (its output overwrites it)",
        "in-place operand of @lapack_spotrf_ffi (its output overwrites it)",
        "in-place operand of @lapack_strsm_ffi (its output overwrites it)",
        "in-place operand of @lapack_strsm_ffi (its output overwrites it)",
    ]
    assert all(w == "relayout" for w in whys if not w.startswith("in-place"))


def test_an_in_place_copy_of_unknown_size_in_a_loop_costs_unknown_per_iteration() -> None:
    """In-place and relayout copies share one cost line: a dynamic shape's bytes are unknown, trips or not."""
    from types import SimpleNamespace

    from stablehlo_layout.report.explain import _cost_line

    r = SimpleNamespace(in_loop=True, bytes=None, total_bytes=None, loop_trips=[4], moves_data=True)
    line = _cost_line(r)
    assert line.startswith("  cost: ") and line.endswith(" per iteration"), line
    assert "trip count" not in line
