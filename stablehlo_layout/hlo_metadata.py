"""What an XLA text dump's metadata says that the HLO -> StableHLO conversion drops.

XLA's layout assignment visits a computation's instructions in the order of
its instruction list, and that list is not the order a dump prints (dumps
print a post order).  An instruction that an earlier XLA pass made — the
reshape DotDecomposer puts after a canonicalized dot, the one
AlgebraicSimplifier puts after an elementwise op it moved a reshape through —
is appended to the end of the list, after the instructions it serves.  XLA:CPU
adds its row-major operand demands in list order and its worklist takes the
last one added first, so such a reshape is propagated before its consumers:
when it merely inserts or deletes size-1 dims, its bitcast layout (size-1
dims most major) wins over the row-major layout its consumers ask for, and
XLA copies between the two.

The dump still shows which reshapes a pass made: XLA gives new instructions
the metadata of the one they replace, so such a reshape and its operand
share an ``op_name`` that names another JAX primitive (``.../dot_general``,
``.../add``) instead of one that lowers to a reshape.  ``mark_pass_created`` records that on the converted op
as the unit attribute ``stablehlo_layout.xla_pass_created``.
"""

from __future__ import annotations

import re

from jaxlib.mlir import ir

PASS_CREATED = "stablehlo_layout.xla_pass_created"

# JAX primitives whose lowering is a stablehlo.reshape.
_RESHAPE_PRIMITIVES = {"reshape", "squeeze", "expand_dims"}

_DEFINITION = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?([\w.\-]+)[ \t]*=[ \t]*\S+[ \t]+([\w\-]+)\(([^\n]*)$", re.M)
_NAME_TOKEN = re.compile(r"%?([A-Za-z_][\w.\-]*)")
_OP_NAME = re.compile(r'metadata=\{[^\n]*?\bop_name="((?:[^"\\\n]|\\.)*)"')
_NAME_LOC = re.compile(r'^loc\("([^"]+)"')
# XLA's gather and scatter canonicalizers rebuild the gather or scatter itself
# along with the reshapes of its operands and result, so such a reshape's
# place relative to it is unknown.
_REBUILT_WITH_THEIR_RESHAPES = {"gather", "scatter"}


def _operand_names(rest: str) -> list[str]:
    """The operand names in the text after ``opcode(``, up to its closing parenthesis."""
    depth, end = 1, len(rest)
    for k, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                end = k
                break
    inside = re.sub(r"\[[^\]]*\]|\{[^}]*\}", "", rest[:end])  # shapes of long-form operands
    return [m.group(1) for m in _NAME_TOKEN.finditer(inside)]


def pass_created_reshapes(text: str) -> set[str]:
    """Names of the reshapes in HLO ``text`` that an XLA pass made after their consumers.

    The signature of a pass that replaced one instruction by a new op and a
    reshape of it: the reshape carries the replaced instruction's ``op_name``,
    a primitive (``jit(f)/.../add``) that does not lower to a reshape, and
    the new operand carries the same or none.
    A reshape of a parameter (its ``op_name`` is the argument's,
    ``args[2]``) was made for some new consumer, and one next to a gather or
    scatter came with a rebuilt gather or scatter: neither says which of the
    two XLA lists first, so both keep the input order.
    """
    opcodes: dict[str, str] = {}
    op_names: dict[str, str] = {}
    operands: dict[str, list[str]] = {}
    for m in _DEFINITION.finditer(text):
        name, opcode, rest = m.groups()
        opcodes[name] = opcode
        operands[name] = _operand_names(rest)
        meta = _OP_NAME.search(rest)
        if meta is not None:
            op_names[name] = meta.group(1)
    users: dict[str, list[str]] = {}
    for name, ops in operands.items():
        for o in ops:
            users.setdefault(o, []).append(name)
    names: set[str] = set()
    for name, opcode in opcodes.items():
        if opcode != "reshape" or not operands[name]:
            continue
        operand = operands[name][0]
        op_name = op_names.get(name)
        if op_name is None or "/" not in op_name or op_name.rsplit("/", 1)[-1] in _RESHAPE_PRIMITIVES:
            continue
        if operand in op_names and op_names[operand] != op_name:
            continue  # the operand is older (its own op_name) or made from something else
        neighbours = [operand] + users.get(name, [])
        if any(opcodes.get(n) in _REBUILT_WITH_THEIR_RESHAPES for n in neighbours):
            continue
        names.add(name)
    return names


def mark_pass_created(module: ir.Module, text: str) -> None:
    """Put ``stablehlo_layout.xla_pass_created`` on the reshapes an XLA pass made.

    Converted ops are located by their HLO instruction name (a NameLoc).
    """
    names = pass_created_reshapes(text)
    if not names:
        return

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region:
                for child in block:
                    inner = child.operation
                    if inner.name == "stablehlo.reshape":
                        m = _NAME_LOC.match(str(inner.location))
                        if m is not None and m.group(1) in names:
                            inner.attributes[PASS_CREATED] = ir.UnitAttr.get()
                    walk(inner)

    with module.context:
        walk(module.operation)
