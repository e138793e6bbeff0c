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

Values and instructions are rows of flat columns (``Columns``), not an
object each: ``graph.values[v]`` and ``graph.instrs[i]`` hand out a small
view (``Value``, ``Instruction``) over row ``v`` / ``i``, made when asked.
An object per value and per instruction, with their operand and result
lists, was most of the import's memory (~110 MB for a 150k-op module);
the columns hold the same in ~25 bytes a row.  The importer appends to
the columns as plain lists and ``Columns.freeze`` packs them into arrays
once the walk is over; readers that visit every row read the columns.

Nothing here holds an MLIR handle (the importer and rewriter keep those),
except locations, which are immutable and formatted only when read: an
op's ``where`` is its location, or, where the import read the C API, the
location's pointer (an int; the context that owns it is ``Graph.context``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Iterator

from stablehlo_layout.model.layout import ArrayShape, Dims, Layout
from stablehlo_layout.model.mesh import Mesh

# A backend's layout fields for (element, dims, minor_to_major): ``Target.tiling``.
Tiling = Callable[[str, Dims, Layout], str]

# Value kinds, by their number in the columns.  Only arrays carry layouts.
KINDS = ARRAY, TOKEN, TUPLE, OTHER = "array", "token", "tuple", "other"
KIND_CODE = {kind: code for code, kind in enumerate(KINDS)}
# The attributes the engine's set-up hands the core (index.build_engine): a
# permutation, broadcast dimensions, a dimension, a custom call's aliases, and
# a custom call's target (the engine marks such calls layout-constrained);
# and what the driver pins or keeps on the worklist (computation.py's
# per_computation): an infeed's layouts, a channel, a custom call's operand
# layouts; and the mark on the reshapes an XLA pass made (xla-cpu's late ones).
CORE_ATTRIBUTES = frozenset({"perm", "dims", "dim", "aliases", "target", "infeed_layouts", "channel",
                             "operand_layouts", "xla_pass_created"})
# The instruction kinds the core tells apart (cpp/engine/facts.h, InstrKind); every op is 0.
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


class Value:
    """A view of one value's row of the graph's columns.

    A value is an op result or block argument; result ``i`` of a multi-result
    op is XLA's shape index ``{i}``.  Views are made when asked for and hold
    nothing but the row number: two views of one value read and write the
    same row.  ``kind`` is ARRAY / TOKEN / TUPLE / OTHER; ``element`` the XLA
    element spelling of an array, the type's text otherwise; ``dims`` ()
    for scalars and non-arrays; ``producer`` its instruction; ``index`` its
    result or parameter number; ``buffer`` the value whose buffer it points
    to (itself unless it forwards or takes apart another); ``elements`` a
    tuple's element values in shape-index order (None otherwise)."""

    __slots__ = ("_c", "id")

    def __init__(self, columns: "Columns", vid: int) -> None:
        self._c, self.id = columns, vid

    def __repr__(self) -> str:
        return (f"Value(id={self.id}, kind={self.kind!r}, element={self.element!r}, dims={self.dims!r}, "
                f"producer={self.producer}, index={self.index}, buffer={self.buffer})")

    @property
    def kind(self) -> str:
        return KINDS[self._c.kind[self.id]]

    @property
    def element(self) -> str:
        return self._c.element[self.id]

    @property
    def dims(self) -> Dims:
        return self._c.shape_dims[self._c.shape[self.id]]

    @property
    def rank(self) -> int:
        return len(self._c.shape_dims[self._c.shape[self.id]])

    @property
    def is_array(self) -> bool:
        return self._c.kind[self.id] == 0

    @property
    def producer(self) -> int:
        return self._c.producer[self.id]

    @property
    def index(self) -> int:
        return self._c.index[self.id]

    @property
    def buffer(self) -> int:
        return self._c.buffer_of.get(self.id, self.id)

    @property
    def elements(self) -> list[int] | None:
        return self._c.elements.get(self.id)

    @elements.setter
    def elements(self, elements: list[int] | None) -> None:
        if elements is None:
            self._c.elements.pop(self.id, None)
        else:
            self._c.elements[self.id] = elements

    @property
    def uses(self) -> list[tuple[int, int]]:
        """(instruction, operand number) pairs that read this value: each reader's
        own operands before its implicit captures, in instruction order (XLA's
        where the importer reordered them).  Listed from the core's rows the
        first time a reader asks, and kept: few values are asked."""
        c = self._c
        u = c.uses.get(self.id)
        if u is None:
            u = c.uses[self.id] = c.use_rows.row(self.id)
        return u

    @uses.setter
    def uses(self, uses: list[tuple[int, int]]) -> None:
        self._c.uses[self.id] = uses

    def retype(self, kind: str, element: str, dims: Dims) -> None:
        c = self._c
        c.kind[self.id] = KIND_CODE[kind]
        c.element[self.id] = element
        c.shape[self.id] = c.code_of_shape(dims) if kind == ARRAY else 0


class _Rows:
    """A sequence of views over the columns' rows (``Graph.values``, ``Graph.instrs``)."""

    __slots__ = ("_c",)
    _view: type

    def __init__(self, columns: "Columns") -> None:
        self._c = columns

    def __len__(self) -> int:
        raise NotImplementedError

    def _other(self, i: Any) -> Any:
        """A row asked for by a negative index; anything else is refused."""
        n = len(self)
        if i.__class__ is int and -n <= i < 0:
            return self._view(self._c, i + n)
        raise IndexError(f"no row {i!r} of {n}")

    def __iter__(self) -> Iterator[Any]:
        view, c = self._view, self._c
        return (view(c, i) for i in range(len(self)))

    def __reversed__(self) -> Iterator[Any]:
        view, c = self._view, self._c
        return (view(c, i) for i in reversed(range(len(self))))


class ValueRows(_Rows):
    __slots__ = ()
    _view = Value

    def __len__(self) -> int:
        return len(self._c.producer)

    # Each class its own: a call to __len__ cost more than the view itself.
    def __getitem__(self, i: int) -> Value:
        c = self._c
        return Value(c, i) if i.__class__ is int and 0 <= i < len(c.producer) else self._other(i)


class SharedAttrs(dict):
    """Attributes that many instructions hold as one dict: ops of one name and
    attribute, parameters of one number, terminators of one name, ops with
    none.  Nothing writes them once the import is over; writing raises, so a
    writer must give its instruction a dict of its own first (``own_attrs``)
    instead of changing every instruction that shares it."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise TypeError("these attributes are shared by many instructions; write to own_attrs(ins)")

    __setitem__ = __delitem__ = setdefault = update = pop = popitem = clear = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        # Copies and pickles are built through the constructor, not by setting items one by one.
        return (SharedAttrs, (dict(self),))


def own_attrs(ins: "Instruction") -> dict[str, Any]:
    """``ins.attrs``, made the instruction's own dict if it shared one, to write to."""
    if ins.attrs.__class__ is SharedAttrs:
        ins.attrs = dict(ins.attrs)
    return ins.attrs


class Instruction:
    """A view of one instruction's row of the graph's columns.

    ``op`` is the MLIR op name, or "parameter" / "root"; ``comp`` its
    computation; ``attrs`` the facts the rules read (a SharedAttrs where
    many instructions hold the same); ``where`` its human location text, or
    a location (object or C API pointer) formatted on first read (``loc``);
    ``callees`` the computations it calls and ``captures`` the outer values
    its regions read beyond its own operands (most ops have neither: ());
    ``scope`` the function whose MLIR body holds it."""

    __slots__ = ("_c", "id")

    def __init__(self, columns: "Columns", iid: int) -> None:
        self._c, self.id = columns, iid

    def __repr__(self) -> str:
        return f"Instruction(id={self.id}, op={self.op!r}, comp={self.comp}, operands={self.operands}, " \
               f"results={self.results})"

    @property
    def op(self) -> str:
        return self._c.op_names[self._c.op[self.id]]

    @property
    def comp(self) -> int:
        return self._c.comp[self.id]

    @property
    def operands(self) -> list[int]:
        c = self._c
        counts = c.operand_count
        if counts is not None:  # still walking: the rows' starts are not summed yet
            first = sum(counts[:self.id])
            return c.op_items[first:first + counts[self.id]]  # type: ignore[return-value]
        s = c.op_start
        return c.op_items[s[self.id]:s[self.id + 1]].tolist()  # type: ignore[union-attr]

    @property
    def operand_count(self) -> int:
        """``len(operands)``, without listing them (a root may have thousands)."""
        c = self._c
        counts = c.operand_count
        if counts is not None:
            return counts[self.id]
        return c.op_start[self.id + 1] - c.op_start[self.id]

    @property
    def results(self) -> list[int]:
        c = self._c
        if c.result_lists is not None:
            r = c.result_lists[self.id]
            return [r] if r.__class__ is int else list(r)  # type: ignore[arg-type]
        s = c.res_start
        return c.res_items[s[self.id]:s[self.id + 1]].tolist()

    @results.setter
    def results(self, results: list[int]) -> None:
        c = self._c
        if c.result_lists is None:
            raise TypeError("an instruction's results are fixed once the import is over")
        c.result_lists[self.id] = results[0] if len(results) == 1 else results

    @property
    def attrs(self) -> dict[str, Any]:
        return self._c.attrs[self.id]

    @attrs.setter
    def attrs(self, attrs: dict[str, Any]) -> None:
        self._c.attrs[self.id] = attrs

    @property
    def where(self) -> Any:
        c = self._c
        w = c.where_other.get(self.id, _POINTER)
        return c.where[self.id] if w is _POINTER else w

    @where.setter
    def where(self, where: Any) -> None:
        self._c.where_other[self.id] = where

    @property
    def callees(self) -> list[int] | tuple[int, ...]:
        return self._c.callees.get(self.id, ())

    @callees.setter
    def callees(self, callees: list[int]) -> None:
        self._c.callees[self.id] = callees

    @property
    def captures(self) -> list[int] | tuple[int, ...]:
        return self._c.captures.get(self.id, ())

    @captures.setter
    def captures(self, captures: list[int]) -> None:
        self._c.captures[self.id] = captures

    @property
    def scope(self) -> str:
        return self._c.scope[self.id]

    @scope.setter
    def scope(self, scope: str) -> None:
        self._c.scope[self.id] = scope

    @property
    def loc(self) -> str:
        """Human location: a NameLoc's name or file:line:col."""
        w = self.where
        if w.__class__ is not str:
            w = self._c.location_text(w)
            self.where = w
        return w


# ``Instruction.where`` of a row whose location is in ``Columns.where`` (no other given).
_POINTER = object()


class InstrRows(_Rows):
    __slots__ = ()
    _view = Instruction

    def __len__(self) -> int:
        return len(self._c.comp)

    def __getitem__(self, i: int) -> Instruction:
        c = self._c
        return Instruction(c, i) if i.__class__ is int and 0 <= i < len(c.comp) else self._other(i)


@dataclass(slots=True)
class Computation:
    id: int
    name: str
    kind: str  # "func", "body", "cond", "branch", "apply"
    params: list[int]  # parameter instruction ids, in order
    root: int  # root pseudo-instruction id; its operands are the results
    # Every instruction id, in block order (params first), as an array('i'):
    # 4 bytes an instruction, and the core's import walk extends it by bytes.
    instrs: "array[int]"
    caller: int | None = None  # the calling instruction, for regions
    callers: list[int] = field(default_factory=list)  # func.call sites
    is_entry: bool = False


@dataclass(slots=True)
class Columns:
    """The graph's values and instructions as flat columns, one row per id:
    what ``Value`` and ``Instruction`` views read, and what ``index.py``
    hands the compiled core (``cpp/engine/index.h``'s ``Walk`` says what each holds).

    The importer appends to them as it makes each value and instruction.
    Plain lists while it walks: a list's ``append`` is the cheapest call in
    the walk (an array's costs ~4 times more).  ``freeze`` then packs the
    integer columns into arrays, 4 bytes a row where a list held a pointer
    and an int object; the per-instruction operand and result lists become
    ``start`` / ``items`` rows.  Rows filled out of id order (a tuple's
    elements, an op's callees and captures) are (owner, item) pairs in the
    order met, for the core, beside a dict by owner for the views.
    """

    # Per value.  ``shape``: its row of the shape table (0: not an array);
    # ``kind``: its number in KINDS.  A value is its own buffer unless
    # (value, buffer) pairs say otherwise, the last pair for a value counting
    # (``buffer_of`` holds the same by value).
    # ``producer`` is an array('i') from the start: the core's import walk
    # extends it by bytes (an instruction id per value as a list item cost an
    # int object each).
    producer: array = field(default_factory=lambda: array("i"))
    shape: "list[int] | array" = field(default_factory=list)
    kind: "list[int] | array" = field(default_factory=list)
    index: "list[int] | array" = field(default_factory=list)
    element: list[str] = field(default_factory=list)
    element_owner: list[int] = field(default_factory=list)
    element_item: list[int] = field(default_factory=list)
    elements: dict[int, list[int]] = field(default_factory=dict)
    buffer_value: list[int] = field(default_factory=list)
    buffer_item: list[int] = field(default_factory=list)
    buffer_of: dict[int, int] = field(default_factory=dict)
    # Every value's uses as the core lists them, and the values' lists once read.
    use_rows: UseRows = field(default_factory=UseRows)
    uses: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    # Per instruction.  ``op``: its name's number in ``op_names``.  While
    # the walk runs, the operands are one flat list (``op_items``) beside
    # each instruction's count, and the results a vid per instruction (one
    # result, most ops) or a list; ``freeze`` makes both start / items rows.
    # ``where``: its location's C API pointer, or 0 with the location
    # (object or text) in ``where_other``.
    comp: "list[int] | array" = field(default_factory=list)
    op: "list[int] | array" = field(default_factory=list)
    operand_count: list[int] | None = field(default_factory=list)
    result_lists: "list[int | list[int] | tuple[()]] | None" = field(default_factory=list)
    op_start: array = field(default_factory=lambda: array("i", [0]))
    op_items: "list[int] | array" = field(default_factory=list)
    res_start: array = field(default_factory=lambda: array("i", [0]))
    res_items: array = field(default_factory=lambda: array("i"))
    attrs: list[dict[str, Any]] = field(default_factory=list)
    where: array = field(default_factory=lambda: array("Q"))
    where_other: dict[int, Any] = field(default_factory=dict)
    # How a location that is not text yet reads (``Instruction.loc``): the
    # importer gives MLIR's (``ir.locations.location_text``), formatted lazily.
    location_text: Callable[[Any], str] = str
    scope: list[str] = field(default_factory=list)
    callee_owner: list[int] = field(default_factory=list)
    callee_item: list[int] = field(default_factory=list)
    callees: dict[int, list[int]] = field(default_factory=dict)
    capture_owner: list[int] = field(default_factory=list)
    capture_item: list[int] = field(default_factory=list)
    captures: dict[int, list[int]] = field(default_factory=dict)
    # The ops with an attribute the engine's set-up reads (CORE_ATTRIBUTES).
    attributed: list[int] = field(default_factory=list)
    # Values whose uses the importer put in another order than the walk met them.
    reordered: list[int] = field(default_factory=list)
    # The shape table: per distinct array shape its extents (-1: dynamic),
    # and its dims as the views hand them out (row 0: not an array, ()).
    shape_code: dict[Dims, int] = field(default_factory=dict)
    shape_is_array: list[int] = field(default_factory=lambda: [0])
    shape_start: list[int] = field(default_factory=lambda: [0, 0])
    shape_items: list[int] = field(default_factory=list)
    shape_dims: list[Dims] = field(default_factory=lambda: [()])
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
            self.shape_dims.append(dims)
        return code

    def code_of_op(self, name: str) -> int:
        code = self.op_code.get(name)
        if code is None:
            code = self.op_code[name] = len(self.op_names)
            self.op_names.append(name)
        return code

    def freeze(self, int32_bytes: Callable[[list], bytes], start_bytes: Callable[[list], bytes],
               row_bytes: Callable[[list], tuple[bytes, bytes]]) -> None:
        """Pack the walk's lists into arrays once every row is made; the rows
        are read-only afterwards, but for the few facts the views may set
        (attributes, locations, uses).  The packers are the core's (one pass
        in C++ over each list, ``ir.capi.column_packers``): the graph itself
        knows nothing of the core."""
        counts, results = self.operand_count, self.result_lists
        assert counts is not None and results is not None, "the columns are frozen already"
        for name in ("shape", "index", "comp", "op", "op_items"):
            setattr(self, name, packed_array("i", int32_bytes(getattr(self, name))))
        self.kind = array("b", self.kind)
        self.op_start = packed_array("i", start_bytes(counts))
        # A row of results is a vid (one result) or a list (several, or none).
        start, items = row_bytes(results)
        self.res_start, self.res_items = packed_array("i", start), packed_array("i", items)
        self.operand_count = self.result_lists = None


def packed_array(code: str, packed: bytes) -> array:
    """An array of type ``code`` holding the core's packed bytes (``_core.int32_bytes`` and kin)."""
    column = array(code)
    column.frombytes(packed)
    return column


@dataclass(slots=True)
class Graph:
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
    # A partitioned program's meshes by name (``sdy.mesh``), and the sharding of
    # each entry parameter (by value id) and entry result the input states, as
    # reports spell them; an op's own (``@Sharding``) is its ``sharding`` attribute.
    # All three stay empty in a program on one device: JAX and XLA state a
    # replicated sharding and an empty mesh there too, which says nothing.
    meshes: dict[str, Mesh] = field(default_factory=dict)
    shardings: dict[int, str] = field(default_factory=dict)
    result_shardings: list[str | None] = field(default_factory=list)
    partitioned: bool = False  # a mesh of several devices, or a sharding that splits a value
    region_depth: int = 0  # how deep regions nest (1: a function body with no region ops)
    # XLA's instruction list of a computation where the input says and it is not the block
    # order (an XLA dump's HloProto, ``ir.hlo_proto``): XLA:CPU adds its demands in this order.
    list_order: dict[int, tuple[int, ...]] = field(default_factory=dict)
    columns: Columns = field(default_factory=Columns)
    # The MLIR context whose locations the instructions name by pointer (``Instruction.where``).
    context: Any = None
    # Views of the columns' rows, by id.
    values: ValueRows = field(init=False, repr=False, compare=False)
    instrs: InstrRows = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.values, self.instrs = ValueRows(self.columns), InstrRows(self.columns)

    @property
    def use_rows(self) -> UseRows:
        return self.columns.use_rows

    def add_value(self, kind: str, element: str, dims: Dims, producer: int, index: int, shape: int = 0) -> Value:
        """A new value; ``shape``: its row of the columns' shape table (0 for non-arrays;
        an array's is looked up from ``dims`` where not given).  A non-array's dims are ()."""
        c = self.columns
        if kind == ARRAY and not shape:
            shape = c.code_of_shape(dims)
        vid = len(c.producer)
        c.producer.append(producer)
        c.shape.append(shape)
        c.kind.append(KIND_CODE[kind])
        c.index.append(index)
        c.element.append(element)
        return Value(c, vid)

    def share_buffer(self, v: Value, buffer: int) -> None:
        """``v`` points at ``buffer`` (a forwarded or tuple-built value)."""
        c = self.columns
        c.buffer_of[v.id] = buffer
        c.buffer_value.append(v.id)
        c.buffer_item.append(buffer)

    def add_instr(self, op: str, comp: int, operands: list[int], attrs: dict[str, Any], loc: Any,
                  scope: str = "") -> Instruction:
        """A new instruction, its results still to be listed (``Instruction.results``)."""
        c = self.columns
        iid = len(c.comp)
        c.comp.append(comp)
        c.op.append(c.code_of_op(op))
        c.operand_count.append(len(operands))  # type: ignore[union-attr]
        c.op_items.extend(operands)
        c.result_lists.append(())  # type: ignore[union-attr]
        c.attrs.append(attrs)
        c.scope.append(scope)
        if loc.__class__ is int and loc:
            c.where.append(loc)
        else:
            c.where.append(0)
            c.where_other[iid] = loc
        return Instruction(c, iid)

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
               layouts: list[Layout | None] | None = None, tiling: Tiling | None = None) -> str:
    """A value's XLA shape text, ``f32[16,4]`` or with a layout ``f32[16,4]{0,1}``.

    A tuple spells its elements when ``g`` and their ``layouts`` are given.
    ``tiling`` (a target's ``tiling`` hook) adds the fields the backend
    prints after minor_to_major: ``bf16[8,256]{1,0:T(8,128)(2,1)}``.
    The one place shapes of graph values are written out.
    """
    if v.kind == ARRAY:
        fields = tiling(v.element, v.dims, lay) if tiling is not None and lay is not None else ""
        return str(ArrayShape(v.element, v.dims, lay, fields))
    if v.kind == TOKEN:
        return "token[]"
    if v.elements is not None and g is not None and layouts is not None:
        return "(" + ", ".join(shape_text(g.values[e], layouts[e], g, layouts, tiling) for e in v.elements) + ")"
    return "()"
