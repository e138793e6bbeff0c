"""MLIR locations as reports name them, read lazily.

An instruction's location stays a C API pointer or the bindings' object
until something reads it (an error, a report): formatting every op's
location up front costs more than the rest of the import.  The graph is
told how to read one (``Columns.location_text``), not what MLIR is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from jaxlib.mlir import ir

from stablehlo_layout.ir import capi

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Graph

_LOCATION = re.compile(r'loc\("((?:[^"\\]|\\.)*)"(?::(\d+):(\d+))?')
_FILE_POSITION = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
# A position in MLIR's anonymous parse buffer, in a location's printed form.
_ANONYMOUS = re.compile(r'(?<![\w\\])"-":(\d+):(\d+)')


def location_text(loc: Any) -> str:
    """A short human form of an MLIR location (or its printed ``loc(...)`` text).

    A file position reads ``file:line:col``; a name (an HLO instruction) reads
    as the name; a name over a source position (what ``jax.export`` writes:
    the op's name over the call site of the user's code) reads
    ``name (file:line:col)``, the innermost frame being the user's line.  A
    position in MLIR's anonymous parse buffer (``"-"``: text the user parsed
    from a string, or bytecode written from such a module) reads ``line 7:8
    of the parsed text``; the loader names stdin's buffer ``<stdin>``.
    Formatting is lazy (``Instruction.loc``): doing it for every op up front
    costs more than the rest of the import, and only errors and reports read it.
    """
    text = str(location_object(loc))
    m = _LOCATION.match(text)
    if not m:
        return text[4:-1] if text.startswith("loc(") else text
    name, line, col = m.groups()
    if line:
        return _position(name, line, col)
    inner = _FILE_POSITION.search(text, m.end())
    return f"{name} ({_position(*inner.groups())})" if inner else name


def location_object(where: Any) -> Any:
    """A location as the bindings' object: ``where`` itself, or the location an
    int names (a C API pointer, ``location_at``)."""
    return location_at(where) if where.__class__ is int else where


def _position(file: str, line: str, col: str) -> str:
    # MLIR names a buffer parsed from a string "-": it is no file, so say what it is.
    return f"line {line}:{col} of the parsed text" if file == "-" else f"{file}:{line}:{col}"


def show_full_locations(graph: "Graph") -> None:
    """Make reports name each op by its whole MLIR location (``--mlir-print-debuginfo``).

    The short form keeps a name, or a name and the innermost file position;
    the whole one keeps every call-site frame and fused part, as the printed
    IR would.  An op whose short form was already needed (an error, say)
    keeps it: the location itself is not kept once formatted.
    """
    for ins in graph.instrs:
        w = ins.where
        if w is not None and w.__class__ is not str:
            text = str(location_object(w))
            text = text[4:-1] if text.startswith("loc(") and text.endswith(")") else text
            ins.where = _ANONYMOUS.sub(lambda m: _position("-", m.group(1), m.group(2)), text)


_location_capsule: list[str] = []


def location_at(pointer: int) -> ir.Location:
    """The location a C API pointer names (an ``OpRow``'s location, kept as
    ``Instruction.where`` until read).  A location is an attribute its context
    owns, valid while the context lives: the graph keeps it (``Graph.context``)."""
    if not _location_capsule:
        with ir.Context() as ctx:
            _location_capsule.append(capi.capsule_name(ir.Location.unknown(ctx)))
    return ir.Location._CAPICreate(capi.capsule(pointer, _location_capsule[0]))
