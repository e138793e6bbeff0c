"""XLA's copies in the entry of a compiled module, and the changes that would spare or shrink them.

Read from the module XLA's layout assignment returns (HLO text): a copy of
an entry parameter through transposes names the parameter layout in which
the copy would read in the order it writes; a copy feeding the entry's
result names the layout the result is computed in before XLA copies it to
its pin; a copy of a whole array that a slice then reads names the slice
that could run in the array's own layout, the copy moving after it.  ``fix``
tries those (``fix/candidates.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.layout import Layout

# ``  %name = shape opcode(operands), attrs`` in HLO text; ROOT marks the computation's result.
_INSTR = re.compile(r"^\s*(ROOT )?%?([\w.\-]+) = .*? ([a-z][\w\-]*)\(([^)]*)\)")
# An instruction's (array) shape in HLO text, its dims and its layout: ``f32[8,3]{0,1}``.
_SHAPE = re.compile(r"^[a-z][a-z0-9]*\[([^\]]*)\](?:\{([^}]*)\})?")


@dataclass(frozen=True)
class _Instr:
    opcode: str
    operands: tuple[str, ...]
    root: bool
    text: str


def _entry_instructions(after: str) -> dict[str, _Instr]:
    """The ENTRY computation's instructions of an HLO module's text, by name."""
    out: dict[str, _Instr] = {}
    inside = False
    for line in after.splitlines():
        if line.startswith("ENTRY "):
            inside = True
            continue
        if inside and line.startswith("}"):
            break
        if not inside:
            continue
        m = _INSTR.match(line)
        if m is None:
            continue
        root, name, opcode, operands = m.groups()
        names = tuple(x.strip().lstrip("%").split(" ")[-1].lstrip("%") for x in operands.split(",") if x.strip())
        out[name] = _Instr(opcode, names, bool(root), line)
    return out


@dataclass(frozen=True)
class Wishes:
    """Entry layouts that would spare XLA's copies at the entry, read off the copies themselves.

    ``params[i]``: layouts of parameter ``i`` in which a copy of it (through
    transposes) reads already in the order it writes; ``results[k]``: the
    layout result ``k`` is computed in before XLA copies it to its pin.
    """

    params: dict[int, list[Layout]]
    results: dict[int, list[Layout]]


def _shape(text: str) -> re.Match[str] | None:
    """The shape an HLO instruction line ``text`` gives its result."""
    return _SHAPE.search(text.split(" = ", 1)[1]) if " = " in text else None


def _shape_layout(text: str) -> Layout | None:
    m = _shape(text)
    if m is None or m.group(2) is None:
        return None
    body = m.group(2).split(":", 1)[0]
    return tuple(int(x) for x in body.split(",") if x.strip())


def entry_wishes(after: str) -> Wishes:
    """The entry layouts XLA's copies at the entry of ``after`` (an after-layout-assignment module) point to."""
    instrs = _entry_instructions(after)
    root = next((n for n, i in instrs.items() if i.root), None)
    params: dict[int, list[Layout]] = {}
    results: dict[int, list[Layout]] = {}

    def wish(table: dict[int, list[Layout]], i: int, layout: Layout | None) -> None:
        if layout is not None and layout not in table.setdefault(i, []):
            table[i].append(layout)

    for name, ins in instrs.items():
        if ins.opcode != "copy" or not ins.operands:
            continue
        layout = _shape_layout(ins.text)
        source = ins.operands[0]
        for _ in range(64):
            here = instrs.get(source)
            if here is None or layout is None:
                break
            if here.opcode == "transpose":
                m = re.search(r"dimensions=\{([\d,]*)\}", here.text)
                if m is None:
                    layout = None
                    break
                perm = [int(x) for x in m.group(1).split(",") if x]
                layout = L.transpose_operand_layout(perm, layout)
            elif here.opcode not in ("copy", "get-tuple-element"):
                break
            source = here.operands[0] if here.operands else ""
        here = instrs.get(source)
        if here is not None and here.opcode == "parameter":
            m = re.search(r"parameter\((\d+)\)", here.text)
            if m:
                wish(params, int(m.group(1)), layout)
        if root is not None and (name == root or name in instrs[root].operands):
            if name == root:
                positions = [0] if instrs[root].opcode != "tuple" else []
            else:
                positions = [k for k, o in enumerate(instrs[root].operands) if o == name] \
                    if instrs[root].opcode == "tuple" else []
            source_ins = instrs.get(ins.operands[0])
            for k in positions:
                wish(results, k, _shape_layout(source_ins.text) if source_ins is not None else None)
    return Wishes(params, results)


# Ops that keep their operand's dims and layout between a copy and the slice it feeds.
_PASS_THROUGH = frozenset({"convert", "negate", "abs", "exponential", "log", "tanh", "logistic", "sqrt", "rsqrt",
                           "add", "subtract", "multiply", "divide", "maximum", "minimum", "select", "compare"})


def _dims(text: str) -> tuple[int, ...] | None:
    m = _shape(text)
    if m is None or any(not x.strip().isdigit() for x in m.group(1).split(",") if x.strip()):
        return None
    return tuple(int(x) for x in m.group(1).split(",") if x.strip())


@dataclass(frozen=True)
class SliceWish:
    """A copy XLA makes of a whole array that a slice then reads a part of: the slice could run
    in ``layout``, the layout the array already has, and the copy move after it."""

    operand: tuple[int, ...]  # the array's dims (what XLA copies)
    result: tuple[int, ...]  # the slice's dims (what a copy after it would move)
    layout: Layout  # the array's layout before XLA's copy


def slice_wishes(after: str) -> list[SliceWish]:
    """The copies in the entry of ``after`` (an after-layout-assignment module) that feed a slice
    or dynamic-slice, directly or through ops of the same dims, with the slice smaller than the copy."""
    instrs = _entry_instructions(after)
    users: dict[str, list[str]] = {}
    for name, ins in instrs.items():
        for o in ins.operands:
            users.setdefault(o, []).append(name)
    out: list[SliceWish] = []
    for name, ins in instrs.items():
        source = instrs.get(ins.operands[0]) if ins.operands else None
        if ins.opcode != "copy" or source is None:
            continue
        layout, dims = _shape_layout(source.text), _dims(ins.text)
        if layout is None or dims is None:
            continue
        seen, frontier = {name}, [name]
        for _ in range(4):  # a few ops deep: the slice is usually the copy's own reader
            step = []
            for v in frontier:
                for u in users.get(v, []):
                    if u in seen:
                        continue
                    seen.add(u)
                    user = instrs[u]
                    if user.opcode in ("slice", "dynamic-slice") and user.operands[0] == v:
                        result = _dims(user.text)
                        if result is not None and prod(result) < prod(dims):
                            wish = SliceWish(dims, result, layout)
                            if wish not in out:
                                out.append(wish)
                    elif user.opcode in _PASS_THROUGH and _dims(user.text) == dims:
                        step.append(u)
            frontier = step
    return out
