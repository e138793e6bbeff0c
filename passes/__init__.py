"""The MLIR-pipeline face of stablehlo-layout (importable as ``stablehlo_layout.passes``).

Each transformation is a frozen dataclass whose fields are its options and
whose ``__call__(op, pass_)`` runs inside a jaxlib ``PassManager``::

    pm = PassManager("builtin.module")
    LayoutAssignmentPass(target="generic").add_to(pm)
    pm.add("canonicalize")

or, from text mixing our passes with upstream ones::

    build_pipeline("stablehlo-layout-assignment{target=generic},canonicalize").run(module.operation)
"""

from .assignment import LayoutAssignmentPass
from .pipeline import PASSES, build_pipeline, parse_pipeline

__all__ = ["LayoutAssignmentPass", "PASSES", "build_pipeline", "parse_pipeline"]
