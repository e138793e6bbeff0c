"""Where each HLO instruction came from in the user's program, read from XLA's metadata.

XLA keeps, per instruction, ``metadata={op_name="jit(f)/dot_general"
stack_frame_id=3}`` (or, from older producers, ``source_file=`` and
``source_line=``), and per module the call stacks those ids point into: the
``FileNames``, ``FunctionNames``, ``FileLocations`` and ``StackFrames``
sections of the HLO text.  The loader drops metadata so that ops are named by
their HLO instruction names; this module reads it back, keyed by those names,
so a report can put the user's op and source line next to each name.

This is the one reader of per-instruction metadata in dump text:
``instruction_name`` and ``metadata_field`` serve ``hlo_metadata`` (which
reshapes a pass made) as well.  Plain text in, plain data out: nothing here
touches MLIR or jax.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Frame", "Source", "closing_bracket", "entry_parameter_key", "instruction_name", "metadata_field",
           "read_sources"]


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    column: int | None = None
    function: str | None = None

    def text(self) -> str:
        return f"{_short_path(self.file)}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "function": self.function}


@dataclass(frozen=True)
class Source:
    """One instruction's origin: the JAX op name and the user's call stack, innermost frame first."""

    op_name: str
    stack: tuple[Frame, ...] = field(default=())
    # The HLO instruction's own name, kept for the entry's parameters: the
    # graph knows them by number, and a dump's reader knows them by this name.
    name: str = ""

    @property
    def known(self) -> bool:
        """Whether the metadata says anything about the user's program (an op name or a line)."""
        return bool(self.op_name or self.stack)

    @property
    def frame(self) -> Frame | None:
        return self.stack[0] if self.stack else None

    def text(self) -> str:
        """``jit(f)/dot_general at model.py:12``, or just the op name when no line is known."""
        where = self.frame
        if where is None:
            return self.op_name
        if not self.op_name:
            return where.text()
        return f"{self.op_name} at {where.text()}"

    def to_json(self) -> dict[str, Any]:
        f = self.frame
        return {"text": self.text(), "op_name": self.op_name, "file": f.file if f else None,
                "line": f.line if f else None, "function": f.function if f else None,
                "stack": [x.to_json() for x in self.stack]}


def _short_path(path: str) -> str:
    """A path under the working directory, relative to it (as a user types it); others as XLA has them."""
    if not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel


_SECTION = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)\s*$")
_NAMED_ENTRY = re.compile(r'^(\d+)\s+"((?:[^"\\]|\\.)*)"\s*$')
_BRACED_ENTRY = re.compile(r"^(\d+)\s+\{([^}]*)\}\s*$")
_KEY_VALUE = re.compile(r"(\w+)=(-?\d+)")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s")
_STRING = r'"((?:[^"\\]|\\.)*)"'
_PARAMETER = re.compile(r"\sparameter\((\d+)\)")


def entry_parameter_key(number: int) -> str:
    """The key of the entry computation's parameter ``number`` (its name means nothing to the pass)."""
    return f"@entry.parameter{number}"


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def instruction_name(line: str) -> str | None:
    """The name an HLO text line defines (``%add.3 = f32[2] add(...)``, ``ROOT x = ...``); None for other lines."""
    m = _INSTRUCTION.match(line)
    return m.group(1) if m else None


# The inside of ``metadata={...}``: quoted strings kept whole, braces nested
# one level (XLA prints none deeper; deeper text is left to the scan below).
_METADATA_BODY = re.compile(r'(?:[^{}"]|"(?:[^"\\]|\\.)*"|\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\})*')


def _metadata(line: str, start: int = 0) -> str | None:
    """The text inside ``metadata={...}`` on an instruction line (quotes respected), searched from ``start``."""
    start = line.find("metadata={", start)
    while start >= 0:
        # Skip a "metadata={" that sits inside a quoted attribute value.
        before = line[:start].replace('\\"', "")
        if before.count('"') % 2 == 0:
            break
        start = line.find("metadata={", start + 1)
    if start < 0:
        return None
    i = start + len("metadata={")
    # Dumps run to 100k instructions: one regex match where it can, the
    # character scan only for what it cannot (a deeper nesting, an open brace).
    m = _METADATA_BODY.match(line, i)
    if m is not None and m.end() < len(line) and line[m.end()] == "}":
        return line[i:m.end()]
    end = closing_bracket(line, i - 1, "{", "}")
    return None if end is None else line[i:end]


def closing_bracket(text: str, pos: int, open_: str = "(", close: str = ")") -> int | None:
    """Index of the bracket that closes the one at ``pos``, quoted strings skipped; None if none does."""
    depth, p, in_string = 0, pos, False
    while p < len(text):
        c = text[p]
        if in_string:
            if c == "\\":
                p += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return p
        p += 1
    return None


def _field(meta: str, name: str) -> str | None:
    m = re.search(rf"(?<![\w]){name}={_STRING}", meta)
    if m:
        return _unescape(m.group(1))
    m = re.search(rf"(?<![\w]){name}=(-?\d+)", meta)
    return m.group(1) if m else None


def metadata_field(line: str, name: str, start: int = 0) -> str | None:
    """Field ``name`` (``op_name``, ``source_line``, ...) of an instruction line's metadata, unescaped; None if absent.

    ``start``: where on the line to look for the metadata (after the operands, say).
    """
    meta = _metadata(line, start)
    return None if meta is None else _field(meta, name)


class _Stacks:
    """The module's stack-frame tables, as XLA prints them.

    A frame's printed ``parent_frame_id`` is one more than its parent's id
    (XLA's converter reads it that way: ``1`` means "no parent").
    """

    def __init__(self) -> None:
        self.files: dict[int, str] = {}
        self.functions: dict[int, str] = {}
        self.locations: dict[int, dict[str, int]] = {}
        self.frames: dict[int, tuple[int, int]] = {}  # id -> (file location id, parent id)

    def add(self, section: str, line: str) -> None:
        if section in ("FileNames", "FunctionNames"):
            m = _NAMED_ENTRY.match(line)
            if m:
                (self.files if section == "FileNames" else self.functions)[int(m.group(1))] = _unescape(m.group(2))
            return
        m = _BRACED_ENTRY.match(line)
        if not m:
            return
        values = {k: int(v) for k, v in _KEY_VALUE.findall(m.group(2))}
        if section == "FileLocations":
            self.locations[int(m.group(1))] = values
        else:
            self.frames[int(m.group(1))] = (values.get("file_location_id", 0), values.get("parent_frame_id", 0) - 1)

    def stack(self, frame_id: int) -> tuple[Frame, ...]:
        out: list[Frame] = []
        seen: set[int] = set()
        while frame_id > 0 and frame_id in self.frames and frame_id not in seen:
            seen.add(frame_id)
            location_id, parent = self.frames[frame_id]
            loc = self.locations.get(location_id)
            if loc is not None and loc.get("file_name_id") in self.files:
                out.append(Frame(self.files[loc["file_name_id"]], loc.get("line", 0), loc.get("column"),
                                 self.functions.get(loc.get("function_name_id", 0))))
            frame_id = parent
        return tuple(out)


def read_sources(hlo_text: str, buffer_name: str | None = None) -> dict[str, Source]:
    """HLO instruction name -> where it came from, for every instruction with metadata.

    A module parsed from MLIR text has locations in the parse buffer, which
    MLIR names ``-``; ``buffer_name`` (the input file) replaces that name.
    """
    stacks = _Stacks()
    pending: list[tuple[str, str]] = []  # (instruction name, metadata text)
    parameter_names: dict[str, str] = {}  # the parameter's key and its own name -> its HLO name
    section: str | None = None
    in_entry = False
    for line in hlo_text.split("\n"):
        if line.startswith("ENTRY "):
            in_entry = True
        elif line.startswith("}"):
            in_entry = False
        m = _SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        if section is not None:
            if not line.strip():
                continue
            if line[:1].isdigit():
                stacks.add(section, line)
                continue
            section = None
        number = _PARAMETER.search(line) if in_entry else None
        if "metadata={" not in line and number is None:
            continue
        name = instruction_name(line)
        if name is None:
            continue
        meta = _metadata(line) if "metadata={" in line else None
        if meta is not None:
            pending.append((name, meta))
        if number is not None:  # named even without metadata: a report names the parameter as the dump does
            pending.append((entry_parameter_key(int(number.group(1))), meta or ""))
            parameter_names[entry_parameter_key(int(number.group(1)))] = parameter_names[name] = name
    out: dict[str, Source] = {}
    for name, meta in pending:
        op_name = _field(meta, "op_name") or ""
        frame_id = _field(meta, "stack_frame_id")
        stack = stacks.stack(int(frame_id)) if frame_id else ()
        if not stack:
            file, line_no = _field(meta, "source_file"), _field(meta, "source_line")
            if file:
                column = _field(meta, "source_column")
                stack = (Frame(file, int(line_no) if line_no else 0, int(column) if column else None),)
        if buffer_name is not None:
            stack = tuple(Frame(buffer_name, f.line, f.column, f.function) if f.file == "-" else f for f in stack)
        hlo_name = parameter_names.get(name, "")
        if op_name or stack or hlo_name:
            out[name] = Source(op_name, stack, hlo_name)
    return out


def name_by_instruction(graph: Any) -> None:
    """Make each op of XLA's own module (``--as-compiled``) read as its HLO instruction name.

    Its location is the name over the user's call site; the user's line is
    shown from the sources table beside the name, so printing the call site
    in the location too would say it twice.
    """
    for ins in graph.instrs:
        ins.where = ins.loc.split(" (", 1)[0]
