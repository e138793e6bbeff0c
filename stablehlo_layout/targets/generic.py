"""The generic target: XLA's base LayoutAssignment, no backend demands."""

from __future__ import annotations

from stablehlo_layout.targets.base import Target


class GenericTarget(Target):
    uniform_rounds = True

    def __init__(self, name: str = "generic") -> None:
        self.name = name
