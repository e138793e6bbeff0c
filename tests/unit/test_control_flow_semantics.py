"""Control-flow inputs compute the same thing after layout assignment, on both targets.

The ``cf_*`` lit tests check *where* the pass puts layouts and copies around while
loops, conditionals, calls, layout-constrained custom calls and donated parameters.
This test checks that what it writes is harmless: every real JAX export in
``tests/lit/Inputs/jax/`` and every hand-written control-flow input that has a @main
is assigned in-process for ``generic`` and ``xla-cpu`` (default entry layouts), must
still verify, and must compute bit-identical results on XLA:CPU
(``tests.support.equivalence``).  LAPACK custom calls run for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxlib.mlir import ir

from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from tests.support.equivalence import assert_bit_identical
from tests.support import ROOT

LIT_DIR = ROOT / "tests" / "lit"
JAX_INPUTS = sorted((LIT_DIR / "Inputs" / "jax").glob("*.mlir"))
# Hand-written inputs: the cf_*.mlir lit files themselves, plus inputs kept under
# Inputs/ because the tool currently rewrites them into invalid IR.
HAND_WRITTEN = sorted(LIT_DIR.glob("cf_*.mlir")) + sorted((LIT_DIR / "Inputs").glob("cf_*.mlir"))
TARGETS = ("generic", "xla-cpu")

# Known tool bugs, with the lit test that documents each (XFAIL there too).
# (file name, target) -> reason for a known bug; target None means both targets.
KNOWN_BUGS: dict[tuple[str, str | None], str] = {}


def _known_bug(path: Path, target: str) -> str | None:
    return KNOWN_BUGS.get((path.name, target)) or KNOWN_BUGS.get((path.name, None))


def _has_main(module: ir.Module) -> bool:
    return any(
        op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main"
        for op in module.body.operations
    )


def _cases() -> list:
    cases = []
    for path in JAX_INPUTS + HAND_WRITTEN:
        for target in TARGETS:
            marks = []
            bug = _known_bug(path, target)
            if bug is not None:
                marks.append(pytest.mark.xfail(reason=bug, strict=True))
            cases.append(
                pytest.param(path, target, marks=marks, id=f"{path.relative_to(LIT_DIR)}-{target}")
            )
    return cases


def test_inputs_are_found() -> None:
    names = {p.name for p in JAX_INPUTS}
    assert {"fori_transpose.mlir", "cond.mlir", "switch.mlir", "scan.mlir", "cholesky.mlir"} <= names
    assert len(HAND_WRITTEN) >= 6


@pytest.mark.parametrize(("path", "target"), _cases())
def test_control_flow_input_computes_the_same(path: Path, target: str) -> None:
    ctx = mlir.make_context()
    module = mlir.read_input(str(path), ctx)
    if not _has_main(module):
        pytest.skip("no @main to execute")
    original = mlir.print_module(module)

    assign_module(module, target, "default")

    assert module.operation.verify(), "the rewritten module does not verify"
    text = mlir.print_module(module)
    assert "xla_shape" in text
    assert_bit_identical(original, text)
