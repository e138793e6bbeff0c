"""What the test files share: a fresh MLIR context, and text -> module -> assignment.

Every test that starts from MLIR text goes through ``load_text`` (one fresh
context unless it passes its own), then ``assign_text`` for the pass as users
call it (``assign_module``) or ``analyze_text`` for the engine's answer with
provenance (``analyze``).  Test files import these helpers from here; the
``ctx`` fixture gives a test its own context.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# Every compile in the suite is for a described target, never for a device of
# this machine: jax starts as the command starts it (compile.prepare_environment),
# whichever test happens to start it first in this process.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")

from jaxlib.mlir import ir  # noqa: E402

from stablehlo_layout.ir import mlir  # noqa: E402
from stablehlo_layout.frontends.api import LayoutResult, analyze, assign_module  # noqa: E402
from tests.support.browser import browser  # noqa: E402,F401  (the headless-Chromium fixture of the page tests)


def load_text(text: str | bytes, name: str = "t.mlir", ctx: ir.Context | None = None) -> ir.Module:
    """Parse and verify MLIR text (or bytecode) as the command does, in a fresh context by default."""
    data = text.encode() if isinstance(text, str) else text
    return mlir.load(data, name, ctx if ctx is not None else mlir.make_context())


def assign_text(text: str | bytes, target: Any = "generic", entry_layouts: str = "default", *,
                name: str = "t.mlir", ctx: ir.Context | None = None, **options: Any) -> LayoutResult:
    """``assign_module`` on a module parsed from ``text``: the rewritten module, layouts and copies."""
    return assign_module(load_text(text, name, ctx), target, entry_layouts, **options)


def analyze_text(text: str | bytes, target: Any = "generic", entry_layouts: str = "default", *,
                 name: str = "t.mlir", ctx: ir.Context | None = None, **options: Any):
    """``analyze`` on a module parsed from ``text``: (graph, assignment, notes); the module is left as read."""
    return analyze(load_text(text, name, ctx), target, entry_layouts, **options)


@pytest.fixture
def ctx() -> ir.Context:
    """A context of the test's own: nothing parsed by another test is visible in it."""
    return mlir.make_context()
