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
# The operand, with or without ``%`` and a shape before it (long-form dumps).
_OPERAND = re.compile(r"(?:[^%,()\s]+\s+)?%?([\w.\-]+)")
_OP_NAME = re.compile(r'metadata=\{[^\n]*?\bop_name="((?:[^"\\\n]|\\.)*)"')
_NAME_LOC = re.compile(r'^loc\("([^"]+)"')


def pass_created_reshapes(text: str) -> set[str]:
    """Names of the reshapes in HLO ``text`` that an XLA pass made together with their operand.

    The signature of a pass that replaced one instruction by a new op and a
    reshape of it: both carry the replaced instruction's ``op_name``, and it
    names a primitive (``jit(f)/.../add``) that does not lower to a reshape.
    A reshape made on its own, or of a parameter (its ``op_name`` is the
    argument's, ``args[2]``), often comes with a new consumer as well, so it
    says nothing about the order.
    """
    op_names: dict[str, str] = {}
    reshapes: list[tuple[str, str]] = []
    for m in _DEFINITION.finditer(text):
        name, opcode, rest = m.groups()
        meta = _OP_NAME.search(rest)
        if meta is not None:
            op_names[name] = meta.group(1)
        if opcode == "reshape":
            operand = _OPERAND.match(rest)
            if operand is not None:
                reshapes.append((name, operand.group(1)))
    names: set[str] = set()
    for name, operand in reshapes:
        op_name = op_names.get(name)
        # A bare name (``args[2]``) is a parameter's: the reshape rebuilt an
        # argument for some new consumer, not a replaced operation.
        if op_name is None or "/" not in op_name or op_name.rsplit("/", 1)[-1] in _RESHAPE_PRIMITIVES:
            continue
        if op_names.get(operand) == op_name:
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
