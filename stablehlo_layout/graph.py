"""The constraint graph: plain Python data keyed by integer ids.

The graph mirrors what XLA's pass sees in HLO:

* an ``Instruction`` per op, plus one ``parameter`` instruction per block
  argument (a computation's parameters) and, per computation, a ``root``
  pseudo-instruction standing for the terminator (XLA's root tuple);
* a ``Value`` per op result / block argument.  Result ``i`` of a multi-result
  op is XLA's shape index ``{i}``;
* a *buffer* per value that an instruction defines.  Values that merely
  forward another value (``optimization_barrier`` results, implicit captures)
  point at the defining value's buffer, like XLA's points-to analysis;
* a ``Computation`` per function body or region, with its caller.

Nothing here holds an MLIR handle (the importer and rewriter keep those),
except locations, which are immutable and formatted only when read: an
op's ``where`` is its location, or, where the import read the C API, the
location's pointer (an int; the context that owns it is ``Graph.context``).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import accumulate, chain
from operator import attrgetter
import re
from typing import Any

from .layout import ArrayShape, Dims, Layout

# Value kinds.  Only arrays carry layouts.
ARRAY, TOKEN, TUPLE, OTHER = "array", "token", "tuple", "other"
# The attributes the engine's set-up hands the core (index.build_engine): a
# permutation, broadcast dimensions, a dimension, a custom call's aliases, and
# a custom call's target (the engine marks such calls layout-constrained);
# and what the driver pins or keeps on the worklist (propagation.py's
# _per_computation): an infeed's layouts, a channel, a custom call's operand
# layouts; and the mark on the reshapes an XLA pass made (xla-cpu's late ones).
CORE_ATTRIBUTES = frozenset({"perm", "dims", "dim", "aliases", "target", "infeed_layouts", "channel",
                             "operand_layouts", "xla_pass_created"})
# The instruction kinds the core tells apart (cpp/facts.h, InstrKind); every op is 0.
INSTR_KIND = {"root": 1, "parameter": 2}


class UseRows:
    """Every value's uses, as the core lists them (``_core.use_rows``): three flat
    int32 columns, row ``v`` being ``user[start[v]:start[v + 1]]`` beside
    ``operand[...]``.  ``Value.uses`` makes a value's list from its row the first
    time a reader asks: few readers ask, and a list of tuples per value was the
    largest part of the import's memory."""

    __slots__ = ("start", "user", "operand")

    def __init__(self) -> None:
        self.start: array | None = None
        self.user, self.operand = array("i"), array("i")

    def fill(self, start: bytes, user: bytes, operand: bytes) -> None:
        self.start = array("i")
        for col, raw in ((self.start, start), (self.user, user), (self.operand, operand)):
            col.frombytes(raw)

    def row(self, vid: int) -> list[tuple[int, int]]:
        if self.start is None:
            raise RuntimeError(f"value {vid}'s uses were read before the import listed them")
        s, e = self.start[vid], self.start[vid + 1]
        return list(zip(self.user[s:e], self.operand[s:e]))


@dataclass(slots=True)
class Value:
    id: int
    kind: str
    element: str  # XLA element spelling for arrays, type text otherwise
    dims: Dims  # () for scalars and non-arrays
    producer: int  # instruction id
    index: int  # result number, or parameter number
    buffer: int  # id of the value whose buffer this value points to
    # The uses (``uses``): a list once read or set, until then the graph's UseRows.
    _uses: "list[tuple[int, int]] | UseRows" = field(default_factory=list, repr=False, compare=False)
    # For a tuple value: its element values, in shape-index order.
    elements: list[int] | None = None
    # Kept as fields, not properties: the engine reads them millions of times.
    rank: int = 0
    is_array: bool = False

    @property
    def uses(self) -> list[tuple[int, int]]:
        """(instruction, operand number) pairs that read this value: each reader's
        own operands before its implicit captures, in instruction order (XLA's
        where the importer reordered them)."""
        u = self._uses
        if u.__class__ is not list:
            u = self._uses = u.row(self.id)  # type: ignore[union-attr]
        return u  # type: ignore[return-value]

    @uses.setter
    def uses(self, uses: list[tuple[int, int]]) -> None:
        self._uses = uses

    def retype(self, kind: str, element: str, dims: Dims) -> None:
        self.kind, self.element, self.dims = kind, element, dims
        self.rank, self.is_array = len(dims), kind == ARRAY


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
    int names (a C API pointer, ``importer.location_at``)."""
    if where.__class__ is int:
        from .importer import location_at

        return location_at(where)
    return where


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


class SharedAttrs(dict):
    """Attributes that many instructions hold as one dict: ops of one name and
    attribute, parameters of one number, terminators of one name, ops with
    none.  Nothing writes them once the import is over; writing raises, so a
    writer must give its instruction a dict of its own first (``own_attrs``)
    instead of changing every instruction that shares it."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("these attributes are shared by many instructions; write to own_attrs(ins)")

    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = __ior__ = _refuse  # type: ignore

    def __reduce__(self) -> tuple:
        # Copies and pickles are built through the constructor, not by setting items one by one.
        return (SharedAttrs, (dict(self),))


def own_attrs(ins: "Instruction") -> dict[str, Any]:
    """``ins.attrs``, made the instruction's own dict if it shared one, to write to."""
    if ins.attrs.__class__ is SharedAttrs:
        ins.attrs = dict(ins.attrs)
    return ins.attrs


@dataclass(slots=True)
class Instruction:
    id: int
    op: str  # MLIR op name, or "parameter" / "root"
    comp: int
    operands: list[int]
    results: list[int]
    attrs: dict[str, Any]  # a SharedAttrs where many instructions hold the same facts
    where: Any  # human location text, or a location (object or pointer) formatted on first read
    # Computations this op calls, and operands beyond the op's own (outer
    # values a region reads implicitly).  Most ops have neither: they share
    # one empty tuple, and the importer gives an op a list when it needs one.
    callees: list[int] | tuple[()] = ()
    captures: list[int] | tuple[()] = ()
    scope: str = ""  # the function whose MLIR body holds this op

    @property
    def loc(self) -> str:
        """Human location: a NameLoc's name or file:line:col."""
        w = self.where
        if w.__class__ is not str:
            w = self.where = location_text(w)
        return w


@dataclass(slots=True)
class Computation:
    id: int
    name: str
    kind: str  # "func", "body", "cond", "branch", "apply"
    params: list[int]  # parameter instruction ids, in order
    root: int  # root pseudo-instruction id; its operands are the results
    instrs: list[int]  # every instruction id, in block order (params first)
    caller: int | None = None  # the calling instruction, for regions
    callers: list[int] = field(default_factory=list)  # func.call sites
    is_entry: bool = False


@dataclass(slots=True)
class Columns:
    """The compiled core's view of the graph, as flat integer columns (``index.py``
    hands them over, ``cpp/index.h``'s ``Walk`` says what each holds).

    The importer appends to them as it makes each value and instruction, so
    that the engine's set-up copies a few buffers instead of walking every
    Python object again.  Rows filled out of id order (a tuple's elements, an
    op's callees and captures) are (owner, item) pairs in the order met.
    Plain lists, not arrays: a list's ``append`` is the cheapest call in the
    walk (an array's costs ~15 times more), which makes them once per op, and
    each entry is an int object the graph holds anyway (an id, a code).  The
    operand rows are the exception, listed once the walk is over.
    """

    # Per value.  ``shape``: its row of the shape table (0: not an array).
    # A value is its own buffer unless (value, buffer) pairs say otherwise,
    # the last pair for a value counting.
    producer: list[int] = field(default_factory=list)
    shape: list[int] = field(default_factory=list)
    element_owner: list[int] = field(default_factory=list)
    element_item: list[int] = field(default_factory=list)
    buffer_value: list[int] = field(default_factory=list)
    buffer_item: list[int] = field(default_factory=list)
    # Per instruction.  ``op``: its name's number in ``op_names``.  The operand
    # rows are int32 arrays (``list_operands``).
    comp: list[int] = field(default_factory=list)
    op: list[int] = field(default_factory=list)
    op_start: array = field(default_factory=lambda: array("i", [0]))
    op_items: array = field(default_factory=lambda: array("i"))
    callee_owner: list[int] = field(default_factory=list)
    callee_item: list[int] = field(default_factory=list)
    capture_owner: list[int] = field(default_factory=list)
    capture_item: list[int] = field(default_factory=list)
    # The ops with an attribute the engine's set-up reads (CORE_ATTRIBUTES).
    attributed: list[int] = field(default_factory=list)
    # Values whose uses the importer put in another order than the walk met them.
    reordered: list[int] = field(default_factory=list)
    # The shape table: per distinct array shape its extents (-1: dynamic).
    shape_code: dict[Dims, int] = field(default_factory=dict)
    shape_is_array: list[int] = field(default_factory=lambda: [0])
    shape_start: list[int] = field(default_factory=lambda: [0, 0])
    shape_items: list[int] = field(default_factory=list)
    op_names: list[str] = field(default_factory=list)
    op_code: dict[str, int] = field(default_factory=dict)

    def code_of_shape(self, dims: Dims) -> int:
        """The shape table's row for an array of ``dims``, made on first sight."""
        code = self.shape_code.get(dims)
        if code is None:
            code = self.shape_code[dims] = len(self.shape_is_array)
            self.shape_is_array.append(1)
            self.shape_items.extend(-1 if d is None else d for d in dims)
            self.shape_start.append(len(self.shape_items))
        return code

    def list_operands(self, instrs: list["Instruction"]) -> None:
        """The operand rows, read off every instruction's operands once the walk
        made them all: a pass in C over the lists, where appending to the rows
        in the walk cost two calls per op, and an int object per row end."""
        operands = list(map(attrgetter("operands"), instrs))
        self.op_start = array("i", [0])
        self.op_start.extend(accumulate(map(len, operands)))
        self.op_items = array("i", chain.from_iterable(operands))

    def code_of_op(self, name: str) -> int:
        code = self.op_code.get(name)
        if code is None:
            code = self.op_code[name] = len(self.op_names)
            self.op_names.append(name)
        return code


@dataclass(slots=True)
class Graph:
    values: list[Value] = field(default_factory=list)
    instrs: list[Instruction] = field(default_factory=list)
    comps: list[Computation] = field(default_factory=list)
    entry: int | None = None
    func_by_name: dict[str, int] = field(default_factory=dict)
    # Entry signature: per parameter / result, the pinned layout, "auto" (free),
    # or None (not stated in the input; the entry mode decides).
    entry_param_modes: list[Layout | str | None] = field(default_factory=list)
    entry_result_modes: list[Layout | str | None] = field(default_factory=list)
    # (parameter number, result number) pairs that alias (donation).
    entry_aliases: list[tuple[int, int]] = field(default_factory=list)
    unknown_ops: dict[str, int] = field(default_factory=dict)
    spmd: bool = False  # partitioned SPMD module: channels carry no layout agreement
    region_depth: int = 0  # how deep regions nest (1: a function body with no region ops)
    columns: Columns = field(default_factory=Columns)
    use_rows: UseRows = field(default_factory=UseRows)  # every value's uses (Value.uses)
    # The MLIR context whose locations the instructions name by pointer (``Instruction.where``).
    context: Any = None

    def add_value(self, kind: str, element: str, dims: Dims, producer: int, index: int, shape: int = 0) -> Value:
        """A new value; ``shape``: its row of the columns' shape table."""
        vid = len(self.values)
        v = Value(vid, kind, element, dims, producer, index, vid, self.use_rows, None, len(dims), kind == ARRAY)
        self.values.append(v)
        c = self.columns
        c.producer.append(producer)
        c.shape.append(shape)
        return v

    def share_buffer(self, v: Value, buffer: int) -> None:
        """``v`` points at ``buffer`` (a forwarded or tuple-built value), in the columns too."""
        v.buffer = buffer
        self.columns.buffer_value.append(v.id)
        self.columns.buffer_item.append(buffer)

    def add_instr(self, op: str, comp: int, operands: list[int], attrs: dict[str, Any], loc: Any) -> Instruction:
        iid = len(self.instrs)
        ins = Instruction(iid, op, comp, operands, [], attrs, loc)
        self.instrs.append(ins)
        c = self.columns
        c.comp.append(comp)
        c.op.append(c.code_of_op(op))
        return ins

    def leaves(self, vid: int) -> list[int]:
        """The array/token leaves of a value: itself, or a tuple's elements flattened."""
        if self.values[vid].elements is None:
            return [vid]
        out: list[int] = []
        pending = [vid]  # depth-first, left to right, without recursion
        while pending:
            v = pending.pop()
            elements = self.values[v].elements
            if elements is None:
                out.append(v)
            else:
                pending.extend(reversed(elements))
        return out

    def value_name(self, vid: int) -> str:
        """A short name for a value: the parameter, or the producing op's location."""
        v = self.values[vid]
        ins = self.instrs[v.producer]
        if ins.op == "parameter":
            return f"{self.comps[ins.comp].name}.arg{ins.attrs['number']}"
        base = ins.loc or ins.op
        return base if len(ins.results) == 1 else f"{base}#{v.index}"

    def use_name(self, iid: int, operand: int) -> str:
        """A short name for a use: ``<consumer>#<operand>`` or ``<function>.result<i>``."""
        ins = self.instrs[iid]
        if ins.op == "root":
            return f"{self.comps[ins.comp].name}.result{operand}"
        return f"{ins.loc or ins.op}#{operand}"


def shape_text(v: Value, lay: Layout | None = None, g: Graph | None = None,
               layouts: list[Layout | None] | None = None) -> str:
    """A value's XLA shape text, ``f32[16,4]`` or with a layout ``f32[16,4]{0,1}``.

    A tuple spells its elements when ``g`` and their ``layouts`` are given.
    The one place shapes of graph values are written out.
    """
    if v.kind == ARRAY:
        return str(ArrayShape(v.element, v.dims, lay))  # type: ignore[arg-type]
    if v.kind == TOKEN:
        return "token[]"
    if v.elements is not None and g is not None and layouts is not None:
        return "(" + ", ".join(shape_text(g.values[e], layouts[e], g, layouts) for e in v.elements) + ")"
    return "()"
