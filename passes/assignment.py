"""``stablehlo-layout-assignment`` as a Python pass for jaxlib's PassManager."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import ClassVar

from jaxlib.mlir import ir

from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.options import check_entry_mode
from stablehlo_layout.targets import get_target


@dataclass(frozen=True)
class LayoutAssignmentPass:
    """Assign an explicit layout to every value and insert the copies XLA would."""

    target: str = "generic"
    entry_layouts: str = "default"
    gpu: str | None = None  # the device of target=xla-gpu: a shipped GPU name or a config file
    tpu: str | None = None  # the generation of target=xla-tpu: v4, v5e, v5p, v6e, tpu7x

    NAME: ClassVar[str] = "stablehlo-layout-assignment"

    def __post_init__(self) -> None:
        get_target(self.target, self.gpu, self.tpu)  # an unknown target, GPU or TPU fails when the pipeline is built
        check_entry_mode(self.entry_layouts)

    def __call__(self, op: ir.Operation, pass_: object) -> None:
        # Handles from an earlier run are dead here: the importer walks afresh.
        try:
            result = assign_module(op, self.target, self.entry_layouts, gpu=self.gpu, tpu=self.tpu)
        except PassError as e:
            op.emit_error(str(e)) if hasattr(op, "emit_error") else print(str(e), file=sys.stderr)
            pass_.signal_pass_failure()  # type: ignore[attr-defined]
            return
        for note in result.warnings:
            print(note, file=sys.stderr)

    def add_to(self, pm: object) -> None:
        pm.add(self, name=self.NAME, argument=self.NAME)  # type: ignore[attr-defined]
