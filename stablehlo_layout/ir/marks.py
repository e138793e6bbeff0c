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
as the unit attribute ``stablehlo_layout.xla_pass_created``.  The metadata is
read with ``sources``' reader, the one that also gives reports their source lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from jaxlib.mlir import ir

from stablehlo_layout.ir.metadata import instruction_name, metadata_field

PASS_CREATED = "stablehlo_layout.xla_pass_created"
# XLA's instruction list itself (``hlo_proto``): the module's instruction names in list order.
LIST_ORDER = "stablehlo_layout.xla_list_order"
# Made by a pass that runs before those that make the reshapes and converts above.
PASS_CREATED_EARLY = "stablehlo_layout.xla_pass_created_early"

# JAX primitives whose lowering is a stablehlo.reshape.
_RESHAPE_PRIMITIVES = {"reshape", "squeeze", "expand_dims"}
# Collectives XLA:CPU expands into reshapes and transposes of their own.
_EXPANDED_COLLECTIVES = {"all_to_all"}

# One instruction definition up to the parenthesis that opens its operands
# (a tuple shape may hold blanks), matched on a line that may define one.
_DEFINITION = re.compile(r"[ \t]*(?:ROOT[ \t]+)?%?([\w.\-]+)[ \t]*=[ \t]*(?:\([^\n]*?\)|[^\s(]+)[ \t]+([\w\-]+)\(")
_NAME_TOKEN = re.compile(r"%?([A-Za-z_][\w.\-]*)")
_SHAPE_TEXT = re.compile(r"\[[^\]]*\]|\{[^}]*\}")
_NAME_LOC = re.compile(r'^loc\("([^"]+)"')
# XLA's gather and scatter canonicalizers rebuild the gather or scatter itself
# along with the reshapes of its operands and result, so such a reshape's
# place relative to it is unknown.
_REBUILT_WITH_THEIR_RESHAPES = ("gather", "scatter")
# Instructions the HLO converter itself makes without metadata.
_NEVER_WITH_METADATA = ("get-tuple-element", "parameter", "tuple")


class _Line:
    """One definition line: its opcode and where its operand list starts."""

    __slots__ = ("text", "opcode", "operands_at")

    def __init__(self, text: str) -> None:
        m = _DEFINITION.match(text)
        self.text = text
        self.opcode = m.group(2) if m else ""
        self.operands_at = m.end() if m else len(text)

    def operand_names(self) -> list[str]:
        text, depth, end = self.text, 1, self.operands_at
        while end < len(text):
            ch = text[end]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        inside = _SHAPE_TEXT.sub("", text[self.operands_at:end])  # long-form operands' shapes
        return [m.group(1) for m in _NAME_TOKEN.finditer(inside)]

    def op_name(self) -> str | None:
        return metadata_field(self.text, "op_name", self.operands_at)


def _ops(module: ir.Module) -> Iterator[ir.Operation]:
    """Every op nested in ``module``, in pre-order, on an explicit stack: a module nests as deep as its loops."""
    stack = [_children(module.operation)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        if len(op.regions):
            stack.append(_children(op))


def _children(op: ir.Operation) -> Iterator[ir.Operation]:
    return (child.operation for region in op.regions for block in region for child in block)


def _hlo_name(op: ir.Operation | ir.OpView) -> str | None:
    """The HLO instruction an op was converted from, by its name location."""
    m = _NAME_LOC.match(str(op.location))
    return m.group(1) if m is not None else None


def pass_created_reshapes(text: str) -> set[str]:
    """Names of the reshapes in HLO ``text`` that an XLA pass made after their consumers.

    The signature of a pass that replaced one instruction by a new op and a
    reshape of it: the reshape carries the replaced instruction's ``op_name``,
    a primitive (``jit(f)/.../add``) that does not lower to a reshape, and
    the new operand carries the same or none (a tuple element or parameter
    never carries any, so that says nothing).  A reshape of a parameter (its ``op_name`` is the argument's,
    ``args[2]``) was made for some new consumer, and one next to a gather or
    scatter came with a rebuilt gather or scatter: neither says which of the
    two XLA lists first, so both keep the input order.  A reshape of a
    gather's result is GatherSimplifier's and counts unless one of its
    consumers was made by a pass as well.  A reshape without metadata that
    feeds a convolution counts too.
    """
    # Dumps run to 100k instructions: plain string tests per line, and a
    # line is parsed only where a reshape needs it.
    lines = text.split("\n")
    where: dict[str, int] = {}
    reshapes: list[tuple[str, _Line]] = []
    rebuilt: list[_Line] = []
    convolutions: list[_Line] = []
    for k, line in enumerate(lines):
        name = instruction_name(line)
        if name is None:
            continue
        where[name] = k
        if " reshape(" in line or " gather(" in line or " scatter(" in line or " convolution(" in line:
            parsed = _Line(line)
            if parsed.opcode == "reshape":
                reshapes.append((name, parsed))
            elif parsed.opcode in _REBUILT_WITH_THEIR_RESHAPES:
                rebuilt.append(parsed)
            elif parsed.opcode == "convolution":
                convolutions.append(parsed)
    has_metadata = "op_name=" in text
    into_convolutions: set[str] | None = None
    candidates: dict[str, str] = {}
    for name, parsed in reshapes:
        operands = parsed.operand_names()
        if not operands:
            continue
        operand = operands[0]
        origin = _Line(lines[where[operand]]) if operand in where else None
        op_name = parsed.op_name()
        if op_name is None:
            # A pass that gave the reshape no metadata, in a dump that has
            # some.  Only the ones feeding a convolution are known to come
            # after their consumer (the models corpus: conv nets with one
            # channel); elsewhere such reshapes keep the input order.
            if not has_metadata or origin is None or origin.opcode in _NEVER_WITH_METADATA:
                continue
            if into_convolutions is None:
                into_convolutions = {n for c in convolutions for n in c.operand_names()}
            if name in into_convolutions or origin.op_name() is None:
                # Or made together with an operand that has none either:
                # a pass derived both (ReshapeMover sinking a reshape below
                # the converts a bf16 pass put after a dot), the reshape last.
                candidates[name] = operand
            continue
        if "/" not in op_name or op_name.rsplit("/", 1)[-1] in _RESHAPE_PRIMITIVES:
            continue
        if op_name.rsplit("/", 1)[-1] in _EXPANDED_COLLECTIVES:
            # XLA:CPU's expansion of a tiled all-to-all (reshape, transpose,
            # reshape around slices, a tuple all-to-all and a concatenate)
            # is one block of new instructions, each carrying the
            # all_to_all's op_name: XLA lays its reshapes out row-major.
            continue
        if origin is not None:
            theirs = origin.op_name()
            if theirs is not None and theirs != op_name:
                continue  # the operand is older (its own op_name) or made from something else
            if theirs is None and origin.opcode in _NEVER_WITH_METADATA:
                continue  # no metadata says nothing of these
        candidates[name] = operand
    if not candidates:
        return set()
    next_to_rebuilt = {name for parsed in rebuilt for name in parsed.operand_names()}
    candidates = {name: operand for name, operand in candidates.items() if name not in next_to_rebuilt}
    # A gather's result: GatherSimplifier's reshape.  It goes first unless a
    # pass made a consumer too (named after its opcode, not after the
    # primitive its op_name names).
    of_gathers = {name for name, operand in candidates.items()
                  if operand in where and _Line(lines[where[operand]]).opcode in _REBUILT_WITH_THEIR_RESHAPES}
    users = _users(lines, of_gathers) if of_gathers else {}
    return {name for name in candidates
            if not any(_made_by_a_pass(lines[where[u]], u) for u in users.get(name, ()))}


def pass_created_converts(text: str) -> set[str]:
    """Names of the converts in HLO ``text`` that an XLA pass made: those without metadata in a dump with some.

    JAX's own converts (``convert_element_type``) carry an ``op_name``; the
    ones a pass adds carry none: XLA:CPU's float normalization, which runs
    a bf16 op in f32 between a convert in and a convert out.  A new
    instruction joins the end of its computation's instruction list, so
    they come after every instruction JAX lowered (XLA:CPU's catch-all
    demands then pop before those of the instructions around them).
    """
    if "op_name=" not in text or " convert(" not in text:
        return set()
    out = set()
    for line in text.split("\n"):
        if " convert(" not in line or "op_name=" in line:
            continue
        name = instruction_name(line)
        if name is not None and _Line(line).opcode == "convert":
            out.add(name)
    return out


_PROMOTED = re.compile(r"to_apply=%?[\w.\-]+_promoted\b")


def promoted_collectives(text: str) -> set[str]:
    """Names of the all-reduces and reduce-scatters XLA's AllReducePromotion rebuilt in a wider type.

    ``CloneAllReduce`` (``xla/service/all_reduce_promotion.cc``) clones the
    collective and its reduction, naming the clone's computation
    ``<name>_promoted``; the clone joins the end of the instruction list, as
    the converts around it do.
    """
    if "_promoted" not in text:
        return set()
    out = set()
    for line in text.split("\n"):
        if "_promoted" in line and _PROMOTED.search(line):
            name = instruction_name(line)
            if name is not None and _Line(line).opcode in ("all-reduce", "reduce-scatter", "all-reduce-start"):
                out.add(name)
    return out


# Opcodes never planned late: no operand (nothing the catch-all asks of them),
# or read only through the tuple machinery, or a reshape (its own rules above).
_NOT_LATE = ("parameter", "constant", "iota", "get-tuple-element", "tuple", "reshape", "convert", "")


def pass_created_others(text: str) -> set[str]:
    """Names of the other instructions in HLO ``text`` a pass made: named after their opcode, not their op_name.

    JAX's converter names an instruction after the primitive its ``op_name``
    ends with (``sub.26``, a broadcast lowered for ``sub``); a pass names
    what it makes after its opcode and gives it the metadata of the one it
    replaces (AlgebraicSimplifier's ``multiply.3`` for a ``div`` by a
    constant, ``rsqrt.1`` for ``1 / sqrt``).  Such an instruction joins the
    end of the instruction list (``hlo_metadata``).  Converts and reshapes
    have their own rules above.
    """
    if "op_name=" not in text:
        return set()
    out = set()
    for line in text.split("\n"):
        if "op_name=" not in line:
            continue
        name = instruction_name(line)
        if name is None:
            continue
        parsed = _Line(line)
        if parsed.opcode in _NOT_LATE:
            continue
        op_name = parsed.op_name()
        if op_name is None or "/" not in op_name:
            continue
        if _made_by_a_pass(line, name) and re.sub(r"\.\d+$", "", name) == parsed.opcode:
            out.add(name)
    return out


def _users(lines: list[str], of: set[str]) -> dict[str, list[str]]:
    """The instructions that read each of ``of``."""
    mentions = re.compile("|".join(re.escape(n) for n in sorted(of, key=len, reverse=True)))
    out: dict[str, list[str]] = {}
    for line in lines:
        name = instruction_name(line)
        if name is None or name in of or mentions.search(line) is None:
            continue
        for operand in _Line(line).operand_names():
            if operand in of:
                out.setdefault(operand, []).append(name)
    return out


def _made_by_a_pass(line: str, name: str) -> bool:
    """JAX's converter names an instruction after its op_name's primitive; passes after the opcode."""
    op_name = _Line(line).op_name()
    if op_name is None:
        return True
    primitive = re.sub(r"[^\w.\-]", "_", op_name.rsplit("/", 1)[-1])
    return re.sub(r"\.\d+$", "", name) != primitive


def mark_pass_created(module: ir.Module, text: str) -> None:
    """Put ``stablehlo_layout.xla_pass_created`` on the reshapes an XLA pass made.

    Converted ops are located by their HLO instruction name (a NameLoc).
    """
    names = pass_created_reshapes(text) | pass_created_converts(text)
    promoted = promoted_collectives(text)
    others = pass_created_others(text)
    if not names and not others and not promoted:
        return
    with module.context:
        for op in _ops(module):
            name = _hlo_name(op)
            if name is None:
                continue
            if (op.name in ("stablehlo.reshape", "stablehlo.convert") and name in names) or name in promoted:
                op.attributes[PASS_CREATED] = ir.UnitAttr.get()
            elif op.name != "stablehlo.reshape" and name in others:
                op.attributes[PASS_CREATED_EARLY] = ir.UnitAttr.get()
        if others or promoted or len(names) > len(names - pass_created_converts(text)):
            # The importer reads these marks and takes them off again: only a
            # pass-made reshape keeps its mark in the output, as before.
            module.operation.attributes[PASS_CREATED] = ir.UnitAttr.get()


def mark_list_order(module: ir.Module, names: list[str]) -> None:
    """Record XLA's instruction list (``hlo_proto.list_order``) on ``module`` for the importer.

    Where it is known, it replaces the guesses of ``mark_pass_created``: the
    importer takes the attribute off again, so it never reaches the output.
    """
    if not names:
        return
    with module.context:
        module.operation.attributes[LIST_ORDER] = ir.StringAttr.get(" ".join(names))


# -- the order of an instruction's users after XLA's call inliner --------------------------
#
# XLA keeps each instruction's users in a list and removes one by moving the
# last user into its slot.  JAX lowers every nested ``jax.jit`` (jnp.linalg's
# functions, jax.nn's, a user's own) to a call, and XLA's CallInliner clones
# the callee into the caller in its post order, the clones joining the end of
# each call operand's user list, then removes the call: the operand's last
# user, the last clone that reads it, takes the call's slot.  A value read by
# several instructions of one inlined call is thus offered to the last of
# them first: that one moves ahead of the others, which go to the end of the
# list.  The dump prints the clones in their own order where the call was.
# Layout assignment hands a buffer's layout to its users in list order, and a
# tie between two of them goes the way of that order.
#
# The clones keep the callee's metadata: their op_name is the caller's scope
# with the call's ``jit(name)`` after it (``jit(f)/jit(cholesky)/add`` in
# ``jit(f)``), which says which users came in with one call.

# On an op: the order XLA offers its result to its readers, as indices into
# the readers in the module's order.  On the module: some op carries one.
USER_ORDER = "stablehlo_layout.xla_user_order"
USER_ORDERS = "stablehlo_layout.xla_user_orders"
_NESTED_JIT = re.compile(r'op_name="[^"]*jit\([^"]*/[^"]*jit\(')


def _scope(op_name: str) -> tuple[str, ...]:
    """The calls an op_name names, outermost first: its segments up to the last one that is a jit."""
    segments = op_name.split("/")[:-1]
    last = max((k for k, s in enumerate(segments) if "jit(" in s), default=-1)
    return tuple(segments[:last + 1])


def inlined_user_orders(text: str) -> dict[str, list[str]]:
    """XLA's order of the users of each instruction whose users one inlined call reordered.

    Only instructions (not parameters: where their call sat among their users
    the dump does not show) read by two or more instructions of one call
    that XLA inlined into their own scope; the users as the dump lists them
    otherwise.  Keys and values are HLO instruction names.
    """
    if _NESTED_JIT.search(text) is None:
        return {}
    # Dumps run to 100k instructions: plain string tests per line; only the
    # readers a nested jit made, and then the lines that name what they
    # read, are parsed.
    lines = text.split("\n")
    where: dict[str, int] = {}
    nested: list[str] = []
    for k, line in enumerate(lines):
        name = instruction_name(line)
        if name is None:
            continue
        where[name] = k
        if line.count("jit(") > 1:
            nested.append(name)
    scopes: dict[str, tuple[str, ...] | None] = {}

    def scope_of(name: str) -> tuple[str, ...] | None:
        """None where the op_name names no jit (a parameter's, a pass's without metadata): its place is unknown."""
        if name not in scopes:
            parsed = _Line(lines[where[name]])
            op_name = parsed.op_name()
            scope = None if op_name is None or parsed.opcode == "parameter" else _scope(op_name)
            scopes[name] = scope or None
        return scopes[name]

    # Per candidate (the instruction read) and call: the readers that came in with it.
    calls: dict[str, dict[tuple[str, ...], list[str]]] = {}
    for reader in nested:
        theirs = scope_of(reader)
        if theirs is None or len(theirs) < 2:
            continue
        for operand in dict.fromkeys(_Line(lines[where[reader]]).operand_names()):
            mine = scope_of(operand) if operand in where else None
            if mine is not None and len(theirs) > len(mine) and theirs[:len(mine)] == mine:
                calls.setdefault(operand, {}).setdefault(theirs[:len(mine) + 1], []).append(reader)
    candidates = {x for x, by_call in calls.items() if any(len(r) > 1 for r in by_call.values())}
    if not candidates:
        return {}
    readers: dict[str, list[str]] = {x: [] for x in candidates}
    mentions = re.compile("|".join(re.escape(n) for n in sorted(candidates, key=len, reverse=True)))
    for line in lines:
        if mentions.search(line) is None:
            continue
        name = instruction_name(line)
        if name is None:
            continue
        for operand in dict.fromkeys(_Line(line).operand_names()):
            if operand in readers:
                readers[operand].append(name)
    out: dict[str, list[str]] = {}
    for x, found in readers.items():
        order = list(found)
        for clones in calls[x].values():
            if len(clones) < 2:
                continue
            slot = order.index(clones[0])
            rest = [r for r in order if r not in clones]
            order = rest[:slot] + [clones[-1]] + rest[slot:] + clones[:-1]
        out[x] = order
    return out


def mark_user_orders(module: ir.Module, text: str) -> None:
    """Put the user orders XLA's call inliner left (``inlined_user_orders``) on the ops they are of.

    Each as ``stablehlo_layout.xla_user_order``: XLA's order of the op's
    readers as indices into its readers in the module's order (a rerun on
    our output, which keeps the ops' order but not their names, reads the
    same).  An op whose readers are not all instructions of its own
    computation in the dump keeps the module's order.
    """
    orders = inlined_user_orders(text)
    if not orders:
        return
    named: dict[str, list[ir.Operation]] = {}
    readers: dict[str, list[str]] = {}

    with module.context:
        for op in _ops(module):
            name = _hlo_name(op)
            if name is not None and name in orders:
                named.setdefault(name, []).append(op)
            for operand in op.operands:
                if not isinstance(operand.owner, ir.Block):
                    of = _hlo_name(operand.owner)
                    if of is not None and of in orders and name is not None:
                        seen = readers.setdefault(of, [])
                        if name not in seen:
                            seen.append(name)
        marked = False
        for name, xla in orders.items():
            ops, ours = named.get(name, []), readers.get(name, [])
            if len(ops) != 1 or len(ops[0].results) != 1 or sorted(ours) != sorted(xla):
                continue
            ops[0].attributes[USER_ORDER] = ir.DenseI64ArrayAttr.get([ours.index(u) for u in xla])
            marked = True
        if marked:
            module.operation.attributes[USER_ORDERS] = ir.UnitAttr.get()


# -- the order XLA visits a computation's loops in ---------------------------------------
#
# XLA 0.12's XLA:GPU ties each while's initial values, body and condition
# parameters, body results and its own results to one layout in a step that
# visits the loops in the order of their computations in the module, not in
# the caller's instruction order (docs/VERSIONS.md item 5).  After XLA's
# earlier passes cloned and sank loops (``region_….sunk.clone``), the
# module can list a later loop's computations before an earlier loop's;
# the dump prints them in that order.  Where that order differs from the
# caller's instruction order, each of the caller's loops carries its place.

# On a while op: its place among its computation's loops in the module's order of their computations.
LOOP_RANK = "stablehlo_layout.xla_loop_rank"
_COMPUTATION_HEADER = re.compile(r"^(?:ENTRY[ \t]+)?%?([\w.\-]+)[ \t]*\(", re.M)
_WHILE_CALLEES = re.compile(r"\bwhile\(.*?\bcondition=%?([\w.\-]+), body=%?([\w.\-]+)")


def loop_ranks(text: str) -> dict[str, int]:
    """Per while whose computation's loops the module orders differently from the instruction order: its place.

    Keys are HLO instruction names; a loop's place is that of the first of
    its condition and body among the module's computations.
    """
    headers = list(_COMPUTATION_HEADER.finditer(text))
    position = {m.group(1): k for k, m in enumerate(headers)}
    out: dict[str, int] = {}
    for k, header in enumerate(headers):
        end = headers[k + 1].start() if k + 1 < len(headers) else len(text)
        loops: list[tuple[int, str]] = []
        for line in text[header.end():end].split("\n"):
            m = _WHILE_CALLEES.search(line)
            if m is None:
                continue
            name = instruction_name(line)
            callees = [position[c] for c in m.groups() if c in position]
            if name is not None and callees:
                loops.append((min(callees), name))
        if len(loops) > 1 and sorted(loops) != loops:
            out.update((name, rank) for rank, (_, name) in enumerate(sorted(loops)))
    return out


def mark_loop_ranks(module: ir.Module, text: str) -> None:
    """Put each loop's place in XLA's visiting order (``loop_ranks``) on its while op as ``LOOP_RANK``."""
    ranks = loop_ranks(text)
    if not ranks:
        return
    with module.context:
        for op in _ops(module):
            if op.name == "stablehlo.while":
                rank = ranks.get(_hlo_name(op))  # type: ignore[arg-type]
                if rank is not None:
                    op.attributes[LOOP_RANK] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rank)
