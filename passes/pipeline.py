"""Build a PassManager from pipeline text that mixes our passes with upstream ones."""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.passmanager import PassManager

from stablehlo_layout.model.errors import PassError

from .assignment import LayoutAssignmentPass

PASSES: dict[str, type] = {LayoutAssignmentPass.NAME: LayoutAssignmentPass}


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _options(cls: type, text: str) -> dict[str, Any]:
    fields = {f.name.replace("_", "-"): f.name for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            raise PassError(f"{cls.NAME}: unknown option {key!r} (options: {', '.join(fields)})")  # type: ignore[attr-defined]
        out[fields[key]] = value
    return out


def parse_pipeline(text: str) -> list[object | str]:
    """Pipeline elements in order: our pass objects, or upstream pipeline text."""
    elements: list[object | str] = []
    for part in _split_top_level(text):
        name, _, rest = part.partition("{")
        name = name.strip()
        if name in PASSES:
            cls = PASSES[name]
            elements.append(cls(**_options(cls, rest.rstrip("}").strip())))
        else:
            elements.append(part)
    return elements


def build_pipeline(text: str, context: ir.Context | None = None) -> PassManager:
    """A module-level PassManager running ``text``, e.g. ``"stablehlo-layout-assignment,canonicalize"``."""
    ctx = context or ir.Context.current
    with ctx:
        pm = PassManager("builtin.module")
        for element in parse_pipeline(text):
            if isinstance(element, str):
                try:
                    pm.add(element)
                except ValueError as e:
                    raise PassError(f"cannot parse pipeline element {element!r}: {e}") from None
            else:
                element.add_to(pm)  # type: ignore[attr-defined]
    return pm
