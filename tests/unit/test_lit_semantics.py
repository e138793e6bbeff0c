"""Every lit test input still computes the same thing after layout assignment.

The lit files under tests/lit check *which* layouts and copies the pass writes.
This test checks that what it writes is harmless: for each ``.mlir`` lit input
it runs the assignment in-process (with the entry-layout mode of the file's
first RUN line), requires the rewritten module to verify, and compares the
original and the rewritten module on XLA:CPU bit for bit (DESIGN §9,
``tests.support.equivalence``).  One test case per lit file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jaxlib.mlir import ir

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from tests.support.equivalence import assert_bit_identical
from tests.support import ROOT

LIT_DIR = ROOT / "tests" / "lit"
# Inputs/ holds deliberately bad inputs for other tests; Output/ is lit's scratch space.
_NOT_TESTS = {"Inputs", "Output"}

LIT_FILES = sorted(
    p for p in LIT_DIR.rglob("*.mlir") if not _NOT_TESTS & set(p.relative_to(LIT_DIR).parts[:-1])
)

_RUN = re.compile(r"^\s*//\s*RUN:\s*(.*?)\s*$")

# Ops whose results XLA:CPU cannot produce, or that talk to the outside world,
# so two executions cannot be compared.
_SIDE_EFFECTS = {
    "stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv",
    "stablehlo.rng", "mhlo.infeed", "mhlo.outfeed", "mhlo.send", "mhlo.recv",
}
_COLLECTIVES = {
    "stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.all_to_all",
    "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast",
}
# Custom-call targets XLA:CPU knows how to compile.
_CPU_CUSTOM_CALLS = {"LayoutConstraint"}


def run_lines(text: str) -> list[str]:
    """The RUN commands of a lit file (continuation lines are not used here)."""
    return [m.group(1) for line in text.splitlines() if (m := _RUN.match(line))]


def entry_mode(first_run: str) -> str:
    """--entry-layouts of the first RUN line: "free" or the default "default"."""
    m = re.search(r"--entry-layouts(?:=|\s+)(\S+)", first_run)
    return "free" if m and m.group(1) == "free" else "default"


def _main(module: ir.Module) -> ir.Operation | None:
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op.operation
    return None


def _types(op: ir.Operation):
    yield from (r.type for r in op.results)
    for region in op.regions:
        for block in region.blocks:
            yield from (a.type for a in block.arguments)


def why_not_executable(module: ir.Module) -> str | None:
    """A reason to skip the execution check, or None."""
    if _main(module) is None:
        return "the module has no @main to execute"
    reasons: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        for t in _types(op):
            if isinstance(t, ir.RankedTensorType) and not t.has_static_shape:
                reasons.append(f"dynamic shape {t} in {name}")
        if name in _SIDE_EFFECTS:
            reasons.append(f"side-effecting op {name}")
        elif name in _COLLECTIVES:
            reasons.append(f"collective {name} needs several devices")
        elif name in ("stablehlo.custom_call", "mhlo.custom_call"):
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            if target not in _CPU_CUSTOM_CALLS:
                reasons.append(f"custom_call @{target} has no XLA:CPU implementation")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return reasons[0] if reasons else None


def load_executable(path: Path) -> tuple[ir.Module, str]:
    """``path`` loaded and printed before the pass; the test is skipped when it cannot run on CPU."""
    module = mlir.read_input(str(path), mlir.make_context())
    reason = why_not_executable(module)
    if reason is not None:
        pytest.skip(reason)
    return module, mlir.print_module(module)


@pytest.mark.parametrize("path", LIT_FILES, ids=[str(p.relative_to(LIT_DIR)) for p in LIT_FILES])
def test_lit_input_computes_the_same(path: Path) -> None:
    runs = run_lines(path.read_text())
    if not runs:
        pytest.skip("no RUN line: not a lit test")
    if any(run.startswith("not ") for run in runs):
        pytest.skip("the tool is expected to reject this input")

    module, original = load_executable(path)
    assign_module(module, "generic", entry_mode(runs[0]))

    assert module.operation.verify(), "the rewritten module does not verify"
    rewritten = mlir.print_module(module)
    # The rewrite must actually be visible in what we execute.
    assert "xla_shape" in rewritten
    assert_bit_identical(original, rewritten)


def test_lit_files_are_found() -> None:
    names = {p.name for p in LIT_FILES}
    assert {"elementwise.mlir", "transpose.mlir", "call.mlir"} <= names
    assert not any("Inputs" in p.parts for p in LIT_FILES)


@pytest.mark.parametrize(
    ("run", "mode"),
    [
        ("stablehlo-layout assign %s | FileCheck %s", "default"),
        ("stablehlo-layout assign --entry-layouts free %s | FileCheck %s", "free"),
        ("stablehlo-layout assign --entry-layouts=free %s", "free"),
        ("stablehlo-layout assign --entry-layouts default %s", "default"),
    ],
)
def test_entry_mode_from_run_line(run: str, mode: str) -> None:
    assert entry_mode(run) == mode
