"""Entry layouts as a fix: which pinned parameters and results XLA's copies touch, and freeing them.

A pinned entry layout (the row-major default, or a layout the program
states) is a promise to the caller; when the program wants the array in
another order, XLA copies next to the entry.  Leaving the value free
(``mhlo.layout_mode = "auto"``, JAX's ``Layout.AUTO``) lets XLA choose the
layout the program wants, and the caller hands the array over in that
layout instead.  Which entries to try is read off XLA's own copies: a copy
whose operand is an entry parameter (through ops that only relabel it:
bitcasts, transposes and reshapes XLA made free) or whose result is an
entry result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jaxlib.mlir import ir

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.layout import Layout

# ``  %name = shape opcode(operands), attrs`` in HLO text; ROOT marks the computation's result.
_INSTR = re.compile(r"^\s*(ROOT )?%?([\w.\-]+) = .*? ([a-z][\w\-]*)\(([^)]*)\)")
# The layout of an instruction's (array) shape in HLO text: ``f32[8,3]{0,1}``.
_LAYOUT = re.compile(r"^[a-z][a-z0-9]*\[[^\]]*\]\{([^}]*)\}")


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


def _shape_layout(text: str) -> Layout | None:
    m = _LAYOUT.search(text.split(" = ", 1)[1]) if " = " in text else None
    if m is None:
        return None
    body = m.group(1).split(":", 1)[0]
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


def _entry_function(module: ir.Module) -> ir.Operation:
    from stablehlo_layout.xla.pipeline import _entry_function as entry

    return entry(module)


def entry_modes(module: ir.Module) -> tuple[list[str | None], list[str | None]]:
    """Each entry parameter's and result's ``mhlo.layout_mode`` as the program states it (None: unstated)."""
    f = _entry_function(module)
    out: list[list[str | None]] = []
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    for key, count in (("arg_attrs", len(ftype.inputs)), ("res_attrs", len(ftype.results))):
        modes: list[str | None] = [None] * count
        if key in f.attributes:
            for i, d in enumerate(ir.ArrayAttr(f.attributes[key])):
                d = ir.DictAttr(d)
                if "mhlo.layout_mode" in d:
                    modes[i] = ir.StringAttr(d["mhlo.layout_mode"]).value
        out.append(modes)
    return out[0], out[1]


def set_modes(module: ir.Module, params: dict[int, str], results: dict[int, str]) -> None:
    """State ``mhlo.layout_mode`` on the given entry parameters and results, in place.

    ``module`` states its entry layouts on the entry function already
    (``pipeline.with_entry_layout_modes``): no module attribute pins them besides.
    """
    f = _entry_function(module)
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    with module.context:
        for key, count, changes in (("arg_attrs", len(ftype.inputs), params),
                                    ("res_attrs", len(ftype.results), results)):
            if not changes:
                continue
            existing = list(ir.ArrayAttr(f.attributes[key])) if key in f.attributes else []
            entries = []
            for i in range(count):
                d = ir.DictAttr(existing[i]) if i < len(existing) else ir.DictAttr.get({})
                attrs = {d[k].name: d[k].attr for k in range(len(d))}
                if i in changes:
                    attrs["mhlo.layout_mode"] = ir.StringAttr.get(changes[i])
                entries.append(ir.DictAttr.get(attrs))
            f.attributes[key] = ir.ArrayAttr.get(entries)


def parameter_location(module: ir.Module, i: int) -> str:
    """Where entry parameter ``i`` shows in the user's source: its own location when that names a
    file, else that of the first op reading it (JAX names arguments, not their lines)."""
    f = _entry_function(module)
    arg = f.regions[0].blocks[0].arguments[i]
    own = str(arg.location)
    if '":' in own:
        return own
    for use in arg.uses:
        text = str(use.owner.location)
        if '":' in text:
            return text
    return own


_NAME = re.compile(r'^loc\("((?:[^"\\]|\\.)*)"\)$')


def entry_names(module: ir.Module) -> tuple[list[str], list[str]]:
    """The user's names of the entry parameters and results where the program keeps them
    (JAX: each argument's location, ``jax.result_info``); empty strings elsewhere."""
    f = _entry_function(module)
    params = []
    for arg in f.regions[0].blocks[0].arguments:
        m = _NAME.match(str(arg.location))
        params.append(m.group(1) if m else "")
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    results = [""] * len(ftype.results)
    if "res_attrs" in f.attributes:
        for k, d in enumerate(ir.ArrayAttr(f.attributes["res_attrs"])):
            d = ir.DictAttr(d)
            if "jax.result_info" in d:
                results[k] = ir.StringAttr(d["jax.result_info"]).value
    return params, results
