"""Backend targets: small objects that add constraints and may refine rules."""

from __future__ import annotations

from ..errors import PassError
from .base import Target
from .generic import GenericTarget
from .xla_cpu import XlaCpuTarget
from .xla_gpu import XlaGpuTarget

# Names the CLI and the pass accept.
TARGET_NAMES = ("generic", "xla-cpu", "xla-gpu")


def get_target(name: str) -> tuple[Target, str | None]:
    """The target for ``name`` and, when it is a stand-in, a warning to show."""
    if name == "generic":
        return GenericTarget(), None
    if name == "xla-cpu":
        return XlaCpuTarget(), None
    if name == "xla-gpu":
        return XlaGpuTarget(), None
    raise PassError(f"unknown target {name!r} (expected one of: {', '.join(TARGET_NAMES)})")


__all__ = ["Target", "GenericTarget", "XlaCpuTarget", "XlaGpuTarget", "get_target", "TARGET_NAMES"]
