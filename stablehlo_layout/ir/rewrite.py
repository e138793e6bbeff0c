"""Write an assignment back into the MLIR module (DESIGN §4).

Every op with ranked-tensor results gets ``xla_shape`` (and ``result_layout``
when it has one result); every disagreeing edge gets an ``mhlo.copy`` shared
by all consumers that need the same layout of the same value; every operand a
custom call overwrites in place gets XLA's same-layout copy of its own; the
entry function and module carry the entry layouts.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from dataclasses import dataclass, field

from jaxlib.mlir import ir

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.ir import capi
from stablehlo_layout.ir.locations import location_object
from stablehlo_layout.model.graph import ARRAY, Graph, Instruction, Tiling, Value, packed_array, shape_text
from stablehlo_layout.ir.importer import (
    CHOSEN_MARK,
    COPY_MARK,
    COPY_NAME_PREFIX,
    IN_PLACE_MARK,
    IN_PLACE_NAME_PREFIX,
    Handles,
)
from stablehlo_layout.ir.mlir import nested_ops
from stablehlo_layout.engine.result import Assignment, CopyEdge, CopyGroup, copy_groups
from stablehlo_layout.targets.base import tiling_of


@dataclass
class InsertedCopy:
    """One ``mhlo.copy`` the rewrite created, and the edges it serves."""

    value: int
    src: L.Layout
    dst: L.Layout
    edges: list[CopyEdge]
    name: str
    # XLA's copy of an operand a custom call overwrites in place (aliasing.py):
    # it keeps the layout (src == dst); every other copy changes it.
    in_place: bool = False
    # Set by assign_module: where to find this copy's explanation.
    owner: object = field(default=None, repr=False, compare=False)

    def explain(self) -> str:
        """Why this copy is there, as ``stablehlo-layout explain`` prints it."""
        if self.owner is None:
            raise ValueError("this copy was not made by assign_module; run explain() on its Assignment")
        return self.owner.report(self).explain()  # type: ignore[attr-defined]


class _Attrs:
    """Attribute objects cached by content: a large module reuses a few dozen."""

    def __init__(self, tiling: Tiling | None = None) -> None:
        # The target's layout fields after minor_to_major (XLA:TPU's tiles);
        # None where it prints none, so CPU and GPU shapes stay as they were.
        self.tiling = tiling
        self.dense: dict[L.Layout, ir.Attribute] = {}
        self.strings: dict[str, ir.Attribute] = {}
        # (element, dims, layout) -> the ``xla_shape`` and ``result_layout`` of
        # an array of that shape: a large module has a few hundred, shared by
        # every op and copy of that shape.
        self.shapes: dict[tuple, tuple[ir.Attribute, ir.Attribute]] = {}
        self.copies: dict[tuple, dict[str, ir.Attribute]] = {}

    def array(self, v: Value, lay: L.Layout | None) -> tuple[ir.Attribute, ir.Attribute]:
        """The ``xla_shape`` and ``result_layout`` attributes of array value ``v`` laid out as ``lay``."""
        key = (v.element, v.dims, lay)
        pair = self.shapes.get(key)
        if pair is None:
            pair = self.shapes[key] = (self.string(shape_text(v, lay, tiling=self.tiling)), self.layout(lay or ()))
        return pair

    def layout(self, lay: L.Layout) -> ir.Attribute:
        a = self.dense.get(lay)
        if a is None:
            body = "[" + ", ".join(map(str, lay)) + "]" if lay else ""
            a = ir.Attribute.parse(f"dense<{body}> : tensor<{len(lay)}xindex>")
            self.dense[lay] = a
        return a

    def copy_attributes(self, v: Value, lay: L.Layout) -> dict[str, ir.Attribute]:
        """The attributes of a relayout copy of array value ``v`` to ``lay``: one dict per shape and layout."""
        key = (v.element, v.dims, lay)
        attrs = self.copies.get(key)
        if attrs is None:
            shape, layout = self.array(v, lay)
            attrs = self.copies[key] = {"xla_shape": shape, "result_layout": layout, COPY_MARK: self.unit()}
        return attrs

    def unit(self) -> ir.Attribute:
        a = self.strings.get("")
        if a is None:
            a = self.strings[""] = ir.UnitAttr.get()
        return a

    def string(self, s: str) -> ir.Attribute:
        a = self.strings.get(s)
        if a is None:
            a = self.strings[s] = ir.StringAttr.get(s)
        return a


def rewrite(module: ir.Module | ir.Operation, a: Assignment, h: Handles, *, names: bool = True) -> list[InsertedCopy]:
    """Write ``a`` into ``module``; return the copies made.

    ``names``: each copy is named after the edge it serves, as its location
    and in ``InsertedCopy.name``.  Without them (for a caller that prints
    the module without locations and reads no copy's name) a copy takes its
    consumer's location: the printed text is the same, and the names, which
    format two locations per copy (~40 us each for a ``jax.export`` call
    stack), are never made.
    """
    g = a.graph
    cache = _Attrs(tiling_of(a.target))
    op = module.operation if isinstance(module, ir.Module) else module
    with op.context:
        _annotate_ops(g, a, h, cache)
        _annotate_inlined_calls(g, a, h, cache)
        copies = _insert_copies(g, a, h, cache, names)
        _write_entry(op, g, a, h, cache)
        erased = _fold_identical_clones(op, h, a)
    # A clone folded into an identical one took its copies with it.
    scope_of = g.columns.scope
    return [c for c in copies if scope_of[c.edges[0].consumer] not in erased]


def _annotate_ops(g: Graph, a: Assignment, h: Handles, cache: _Attrs) -> None:
    values, layouts, ops, c = g.values, a.layouts, h.ops, g.columns
    # Reducer and comparator bodies work on scalars and have no layout to
    # choose; annotating them would also stop the printer from using their
    # compact form, which it does by dropping attributes.
    skip = array("B", [comp.kind == "apply" for comp in g.comps])
    # The ops with one array result take one of a few hundred (xla_shape,
    # result_layout) pairs, by element, shape and layout: the core lists them
    # with their pair rows (``cpp/bindings/bind_rewrite_rows.cpp``), and where the import
    # read the ops' C API pointers it writes them in one more call (two
    # attributes each, as the bindings would set them, ~1.5 us per op
    # through the bindings).  The ops' objects are then made only for the
    # few other ops (LazyOps).
    ptrs = h.op_ptrs
    present = ptrs if ptrs is not None else array("q", [op is not None for op in ops])  # per instruction, an op
    iids, op_ptrs, rows, firsts, others = capi.annotation_rows(
        present, c.res_start, c.res_items, c.kind, c.shape, c.comp, c.op, skip, c.op_code.get("root", -1),
        c.element, layouts)
    pairs = [cache.array(values[v], layouts[v]) for v in firsts]
    if ptrs is not None:
        if pairs:
            pointer = capi.pointer
            capi.set_attribute_pairs(packed_array("q", op_ptrs), packed_array("i", rows), "xla_shape", "result_layout",
                                     [pointer(p[0]) for p in pairs], [pointer(p[1]) for p in pairs])
    else:
        for iid, k in zip(packed_array("i", iids), packed_array("i", rows)):
            attrs = ops[iid].attributes  # type: ignore[union-attr]  # an op of its own: annotation_rows' rows
            attrs["xla_shape"], attrs["result_layout"] = pairs[k]
    start, items = c.res_start, c.res_items
    for iid in others:
        vals = [values[r] for r in items[start[iid]:start[iid + 1]]]
        if not any(v.kind == ARRAY or v.elements for v in vals):
            continue
        texts = [shape_text(v, layouts[v.id], g, layouts, cache.tiling) for v in vals]
        ops[iid].attributes["xla_shape"] = cache.string(texts[0] if len(texts) == 1 else  # type: ignore[union-attr]
                                                       "(" + ", ".join(texts) + ")")


def _insert_copies(g: Graph, a: Assignment, h: Handles, cache: _Attrs, names: bool) -> list[InsertedCopy]:
    # Outer computations first: a copy made for a capture becomes the value
    # that nested regions see, and their own copies start from it.
    # (capture parameter, function) -> the MLIR value that now stands for it there.
    current: dict[tuple[int, str], ir.Value] = {}
    starts: _BlockStarts = {}
    made: list[InsertedCopy] = []
    # Where the import read the ops' pointers, the copies that need only
    # their operand, their place and their consumers' operands go to the core
    # in batches (_CopyBatch); the others are made here, in between, in order.
    batch = _CopyBatch(g, h, cache, names, starts) if h.op_ptrs is not None else None
    for group in copy_groups(a):
        vid, dst, scope, edges = group.value, group.dst, group.scope, group.edges
        if batch is not None:
            if not group.in_place and batch.add(group, current):
                made.append(InsertedCopy(vid, edges[0].src, dst, edges, batch.last_name))
                continue
            batch.flush()
        v = g.values[vid]
        if group.in_place:
            made.append(_insert_in_place_copy(g, h, cache, group.edges[0], names))
            continue
        source, defined_by = _visible(g, h, current, v, scope)
        consumer_op = h.ops[edges[0].consumer]
        child = consumer_op.location if consumer_op is not None else ir.Location.unknown()
        if names:
            _name_quickly(g.instrs[v.producer])
            _name_quickly(g.instrs[edges[0].consumer])
            name = f"{COPY_NAME_PREFIX}{g.value_name(vid)} -> {g.use_name(edges[0].consumer, edges[0].operand)})"
            loc: ir.Location = ir.Location.name(name, childLoc=child)
        else:
            name, loc = "", child
        inside = edges[0].inside
        if inside is not None:
            where = _block_start(h.regions[inside].blocks[0], starts)
        elif defined_by is not None:  # known already: asking the value for its owner makes an OpView (~0.5 us)
            where = ir.InsertionPoint.after(defined_by)
        else:
            where = _right_after(source, starts)
        cp = ir.Operation.create("mhlo.copy", results=[source.type], operands=[source],
                                 attributes=cache.copy_attributes(v, dst), loc=loc, ip=where)
        new = cp.result
        for e in edges:
            _redirect(g, h, e, source, new, current)
        made.append(InsertedCopy(vid, edges[0].src, dst, edges, name))
    if batch is not None:
        batch.flush()
    return made


class _CopyBatch:
    """Copies made by the core (``cpp/mlir/rewrite_ops.cpp``), a run of them per call.

    A copy qualifies when what the bindings path would do for it is plain:
    its value is an op's result or a block argument the import read (no
    capture parameter, tuple element or inlined call's view, no copy made
    for it earlier in an enclosing region), it goes right after that op or
    at the block's start, and every consumer reads it as a real operand (not
    a region's capture).  The core then creates the copy, inserts it where
    ``InsertionPoint`` would, and sets each consumer's operand, as
    ``_insert_copies`` does through the bindings (~12 us a copy there).  A
    batch is flushed before any other copy is made, so every copy goes in
    in ``copy_groups``' order either way.
    """

    def __init__(self, g: Graph, h: Handles, cache: _Attrs, names: bool, starts: "_BlockStarts") -> None:
        self.g, self.h, self.cache, self.names, self.starts = g, h, cache, names, starts
        self.last_name = ""
        # Attribute triples (xla_shape, result_layout, mark) by (element, dims, layout): their table rows.
        self.rows: dict[tuple, int] = {}
        self.table: list[int] = []
        self._clear()

    def _clear(self) -> None:
        self.source_ops, self.source_indices, self.source_values = array("q"), array("i"), array("q")
        self.kinds, self.anchors, self.consumers = array("b"), array("q"), array("q")
        self.attribute_rows, self.edge_start = array("i"), array("i", [0])
        self.edge_ops, self.edge_operands = array("q"), array("i")
        self.location_names: list[str] = []

    def add(self, group: CopyGroup, current: dict[tuple[int, str], ir.Value]) -> bool:
        """Take ``group`` into the batch if it qualifies (see the class); False leaves it to the caller."""
        g, h, c = self.g, self.h, self.g.columns
        vid, scope, edges = group.value, group.scope, group.edges
        if edges[0].inside is not None or (vid, scope) in current or h.views.get((vid, scope)):
            return False
        ptrs, start = h.op_ptrs, c.op_start
        consumers = []
        for e in edges:
            op = ptrs[e.consumer]  # type: ignore[index]
            if not op or e.operand >= start[e.consumer + 1] - start[e.consumer]:
                return False
            consumers.append(op)
        site = h.read_from(g, vid)
        if site is None:
            return False
        iid, index, argument = site
        if argument:
            block = h.block_of(g, iid)
            value = capi.pointer(block.arguments[index])
            begin = _block_begin(block, self.starts)
            kind, anchor, source_op = ((1, capi.pointer(begin), 0) if begin is not None
                                       else (2, capi.pointer(block), 0))
        else:
            if not ptrs[iid]:  # type: ignore[index]
                return False
            kind, anchor, source_op, value = 0, ptrs[iid], ptrs[iid], 0  # type: ignore[index]
        self.source_ops.append(source_op)
        self.source_indices.append(index if source_op else 0)
        self.source_values.append(value)
        self.kinds.append(kind)
        self.anchors.append(anchor)
        self.consumers.append(consumers[0])
        self.attribute_rows.append(self._row(vid, group.dst))
        self.edge_ops.extend(consumers)
        self.edge_operands.extend(e.operand for e in edges)
        self.edge_start.append(len(self.edge_ops))
        if self.names:
            _name_quickly(g.instrs[iid])
            _name_quickly(g.instrs[edges[0].consumer])
            self.last_name = f"{COPY_NAME_PREFIX}{g.value_name(vid)} -> {g.use_name(edges[0].consumer, edges[0].operand)})"
            self.location_names.append(self.last_name)
        return True

    def _row(self, vid: int, dst: L.Layout) -> int:
        v = self.g.values[vid]
        key = (v.element, v.dims, dst)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = len(self.rows)
            attrs = self.cache.copy_attributes(v, dst)  # kept alive by the cache
            self.table.extend(capi.pointer(attrs[k]) for k in _COPY_ATTRIBUTES)
        return row

    def flush(self) -> None:
        """Make the copies taken so far."""
        if not self.source_ops:
            return
        capi.insert_copies("mhlo.copy", self.source_ops, self.source_indices, self.source_values,
                           self.kinds, self.anchors, self.consumers, self.attribute_rows, list(_COPY_ATTRIBUTES),
                           self.table, self.location_names if self.names else None, self.edge_start,
                           self.edge_ops, self.edge_operands)
        self._clear()


# A relayout copy's attributes, in the order the bindings path sets them (_Attrs.copy_attributes).
_COPY_ATTRIBUTES = ("xla_shape", "result_layout", COPY_MARK)


_NAME_LOC, _UNKNOWN_LOC = getattr(ir, "NameLoc", None), getattr(ir, "UnknownLoc", None)


def _name_quickly(ins: Instruction) -> None:
    """Give ``ins.loc`` its text now where its location is a bare name (an HLO instruction's).

    Each copy is named after its producer and consumer (``g.value_name``,
    ``g.use_name``), and formatting a location prints it through the bindings
    (``ir.locations.location_text``: ~2.2 us, two per copy).  A name over an unknown
    location prints as ``loc("NAME")``, which ``location_text`` reads back as
    NAME itself when printing escapes nothing in it; read that way (~0.5 us)
    it is the same text, cached where ``Instruction.loc`` caches it.  Any
    other location is left to ``location_text``.
    """
    w = ins.where
    if w.__class__ is int:  # a location the import read by pointer: as the bindings' NameLoc, if it is one
        try:
            w = _NAME_LOC(location_object(w))  # type: ignore[misc]  # None: raises TypeError
        except (TypeError, ValueError):
            return
    if w.__class__ is _NAME_LOC and w.child_loc.__class__ is _UNKNOWN_LOC:
        name = w.name_str
        # MLIR's printer escapes quotes, backslashes and every byte outside printable ASCII.
        if name.isascii() and name.isprintable() and '"' not in name and "\\" not in name:
            ins.where = name


def _insert_in_place_copy(g: Graph, h: Handles, cache: _Attrs, e: CopyEdge, names: bool) -> InsertedCopy:
    """XLA's copy in front of an operand the custom call overwrites (aliasing.py).

    It reads what the call reads now (the value, or the relayout copy made
    for this use just before) and sits right before the call, so only the
    call sees the buffer it clobbers.
    """
    v = g.values[e.value]
    consumer_op = h.ops[e.consumer]
    assert consumer_op is not None
    source = consumer_op.operands[e.operand]
    if names:
        name = f"{IN_PLACE_NAME_PREFIX}{g.value_name(e.value)} -> {g.use_name(e.consumer, e.operand)})"
        loc: ir.Location = ir.Location.name(name, childLoc=consumer_op.location)
    else:
        name, loc = "", consumer_op.location
    with ir.InsertionPoint(consumer_op):
        attrs = {
            "xla_shape": cache.string(shape_text(v, e.dst, tiling=cache.tiling)),
            "result_layout": cache.layout(e.dst),
            COPY_MARK: cache.unit(),
            IN_PLACE_MARK: cache.unit(),
        }
        cp = ir.Operation.create("mhlo.copy", results=[source.type], operands=[source],
                                 attributes=attrs, loc=loc)
    consumer_op.operands[e.operand] = cp.results[0]
    return InsertedCopy(e.value, e.src, e.dst, [e], name, in_place=True)


# The op each block started with before any copy went in: copies placed at a
# block's start go in front of it, so they keep the order they were made in.
_BlockStarts = dict


def _block_begin(block: ir.Block, starts: _BlockStarts) -> ir.Operation | None:
    """The op ``block`` started with before any copy went in (None: it had none)."""
    if block not in starts:
        starts[block] = block.operations[0] if len(block.operations) else None
    return starts[block]


def _block_start(block: ir.Block, starts: _BlockStarts) -> ir.InsertionPoint:
    first = _block_begin(block, starts)
    return ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(block)


def _right_after(value: ir.Value, starts: _BlockStarts) -> ir.InsertionPoint:
    """Where a copy of ``value`` dominates every use: after its definition."""
    if isinstance(value, ir.BlockArgument):
        return _block_start(value.owner, starts)
    return ir.InsertionPoint.after(value.owner)  # type: ignore[arg-type]  # an op result's owner is its op


def _visible(g: Graph, h: Handles, current: dict[tuple[int, str], ir.Value], v: Value,
             scope: str) -> tuple[ir.Value, ir.Operation | None]:
    """The MLIR value that stands for graph value ``v`` inside function ``scope``, and the op
    whose result it is where that op is at hand (None: a block argument, or not known here)."""
    while True:  # a loop, not recursion: captures chain through every enclosing region
        if (v.id, scope) in current:
            return current[(v.id, scope)], None
        views = h.views.get((v.id, scope))
        if views:
            return views[0], None
        handle = h.value(g, v.id)
        producer = g.instrs[v.producer]
        if handle is not None:
            return handle, (None if producer.op == "parameter" else h.ops[producer.id])
        # A capture parameter: the outer value, as seen from the enclosing level.
        v = g.values[producer.attrs["capture"]]


def _redirect(g: Graph, h: Handles, e: CopyEdge, old: ir.Value, new: ir.Value,
              current: dict[tuple[int, str], ir.Value]) -> None:
    ins = g.instrs[e.consumer]
    op = h.ops[e.consumer]
    assert op is not None
    n_real = ins.operand_count
    if e.operand < n_real:
        op.operands[e.operand] = new
        return
    # An implicit capture: every use inside that region now reads the copy.
    comp, number = ins.attrs["capture_params"][e.operand - n_real]
    param_value = g.instrs[g.comps[comp].params[number]].results[0]
    current[(param_value, ins.scope)] = new
    # The region may read the value through any MLIR value that shows it here
    # (a call that returned it twice has two results for it).
    olds = [old] + [x for x in h.views.get((e.value, ins.scope), ()) if x != old]
    for iid, n in _reads_inside(g, param_value):
        user = h.ops[iid]
        if user is not None and any(user.operands[n] == x for x in olds):
            user.operands[n] = new
    if not h.inlined:
        return
    # A call inlined into the graph is no instruction of its own, yet its MLIR
    # op reads the value: find such calls among the value's MLIR uses.
    region = h.regions[comp]
    copy_op = new.owner
    for source in olds:
        for use in list(source.uses):
            owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if owner.name == "func.call" and owner != copy_op and _inside(owner, region):  # type: ignore[arg-type]
                owner.operands[use.operand_number] = new


def _inside(owner: ir.Operation, region: ir.Region) -> bool:
    o = owner
    while True:
        block = o.block
        if block is None:
            return False
        if block.region == region:
            return True
        parent = o.parent
        if parent is None or parent.name == "builtin.module":
            return False
        o = parent.operation if hasattr(parent, "operation") else parent


def _reads_inside(g: Graph, param_value: int) -> list[tuple[int, int]]:
    """(instruction, operand) pairs that read a capture parameter in its region or any
    region nested in it (those read the outer MLIR value too, through their own
    capture parameters).  The graph knows them; asking MLIR which uses of the
    value lie inside the region would walk up the nesting once per use."""
    out: list[tuple[int, int]] = []
    pending = [param_value]
    while pending:
        for iid, n in g.values[pending.pop()].uses:
            ins = g.instrs[iid]
            if n < ins.operand_count:
                out.append((iid, n))
            else:
                comp, number = ins.attrs["capture_params"][n - ins.operand_count]
                pending.append(g.instrs[g.comps[comp].params[number]].results[0])
    return out


def _annotate_inlined_calls(g: Graph, a: Assignment, h: Handles, cache: _Attrs) -> None:
    """An inlined call's results are its callee's results: give them the same attributes."""
    for op, results in h.call_results:
        vals = [g.values[r] for r in results]
        if not any(v.kind == ARRAY for v in vals):
            continue
        texts = [shape_text(v, a.layouts[v.id], tiling=cache.tiling) for v in vals]
        op.attributes["xla_shape"] = cache.string(texts[0] if len(texts) == 1 else "(" + ", ".join(texts) + ")")
        if len(vals) == 1:
            op.attributes["result_layout"] = cache.layout(a.layouts[vals[0].id] or ())


def _fold_identical_clones(module: ir.Operation, h: Handles, a: Assignment) -> set[str]:
    """Keep one function per distinct layout signature; return the clones folded away.

    Every call site got its own clone so each could take its own layouts.
    Clones whose bodies and parameter layouts came out identical are folded
    back together: the original name stays with the first signature, the
    others are named ``<f>.layout<k>`` so the reader sees that the layouts
    differ.  The parameters' layouts are written nowhere in a body, and two
    clones that copy differently laid out parameters to one layout print alike.
    """
    if not h.inlined:
        return set()
    body = module.regions[0].blocks[0]
    funcs = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in body.operations
             if f.operation.name == "func.func"}
    calls = {name: list(h.calls[name]) if name in h.calls else [op for op in nested_ops(f.operation)
                                                                  if op.name == "func.call"]
             for name, f in funcs.items()}
    depth = _call_depths(funcs, calls)
    families: dict[str, list[str]] = defaultdict(list)
    for name in funcs:
        root = name.split(".site")[0]
        if name == root or name in h.inlined:
            families[root].append(name)
    erased: set[str] = set()
    # One pass over the call-site views for every family that could fold.
    params = _parameter_layouts(funcs, {n for ms in families.values() if len(ms) > 1 for n in ms}, h, a)
    # Callees before callers: a caller's text then already names folded callees.
    for root in sorted(families, key=lambda r: -max(depth.get(n, 0) for n in families[r])):
        members = sorted(families[root], key=lambda n: n != root)
        if len(members) < 2:
            continue
        reps: list[tuple[tuple[str, tuple], str]] = []  # ((body text, parameter layouts), representative)
        owner: dict[str, str] = {}
        for name in members:
            text = (_body_text(funcs[name]), params.get(name, ()))
            rep = next((r for t, r in reps if t == text), None)
            if rep is None:
                reps.append((text, name))
                rep = name
            owner[name] = rep
        new_name = {rep: (root if i == 0 else f"{root}.layout{i}") for i, (_, rep) in enumerate(reps)}
        for name in members:
            if owner[name] != name:
                funcs.pop(name).operation.erase()
                calls.pop(name)
                erased.add(name)
        for rep, nn in new_name.items():
            if rep != nn:
                funcs[rep].attributes["sym_name"] = ir.StringAttr.get(nn)
        for ops in calls.values():
            for op in ops:
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee in owner:
                    op.attributes["callee"] = ir.FlatSymbolRefAttr.get(new_name[owner[callee]])
    return erased


def _parameter_layouts(funcs: dict[str, ir.Operation], names: set[str], h: Handles,
                       a: Assignment) -> dict[str, tuple]:
    """Each inlined clone's parameter layouts: its arguments show the call site's operands (``views``)."""
    out: dict[str, list] = {}
    for (vid, scope), shown in h.views.items():
        if scope not in names:
            continue
        block = funcs[scope].regions[0].blocks[0]
        lays = out.setdefault(scope, [None] * len(block.arguments))
        for value in shown:
            if isinstance(value, ir.BlockArgument) and value.owner == block:
                lays[value.arg_number] = a.layouts[vid]
    return {name: tuple(lays) for name, lays in out.items()}


def _body_text(f: ir.Operation) -> str:
    # The module was verified when it was read; re-verifying per print costs 100x.
    text: str = f.operation.get_asm(  # type: ignore[assignment]  # jaxlib types get_asm as object
        enable_debug_info=False, assume_verified=True, use_local_scope=True)
    return text[text.index("("):]


def _call_depths(funcs: dict[str, ir.Operation], calls: dict[str, list]) -> dict[str, int]:
    """How many calls deep each function sits below the functions nobody calls."""
    callees = {name: [ir.FlatSymbolRefAttr(op.attributes["callee"]).value for op in ops]
               for name, ops in calls.items()}
    called = {c for cs in callees.values() for c in cs}
    depth: dict[str, int] = {}
    frontier = [n for n in funcs if n not in called]
    level = 0
    while frontier:
        nxt: list[str] = []
        for n in frontier:
            if depth.get(n, -1) >= level:
                continue
            depth[n] = level
            nxt.extend(c for c in callees.get(n, ()) if c in funcs)
        frontier = nxt
        level += 1
        if level > len(funcs) + 1:
            break
    return depth


def _write_entry(module: ir.Operation, g: Graph, a: Assignment, h: Handles, cache: _Attrs) -> None:
    assert g.entry is not None
    f = h.funcs[g.entry]
    comp = g.comps[g.entry]
    params = [g.values[g.instrs[p].results[0]] for p in comp.params]
    results = [g.values[v] for v in g.instrs[comp.root].operands]
    f.attributes["arg_attrs"] = _with_layout_modes(f, "arg_attrs", params, a.entry_params, a.given_params, cache)
    f.attributes["res_attrs"] = _with_layout_modes(f, "res_attrs", results, a.entry_results, a.given_results, cache)
    mod = module.attributes
    mod["mhlo.xla_entry_computation_parameter_layouts"] = ir.ArrayAttr.get(
        [cache.layout(lay if v.kind == ARRAY and lay is not None else ()) for v, lay in zip(params, a.entry_params)])
    res = [cache.layout(lay if v.kind == ARRAY and lay is not None else ()) for v, lay in zip(results, a.entry_results)]
    mod["mhlo.xla_entry_computation_result_layout"] = ir.ArrayAttr.get(
        res if len(res) == 1 else [ir.ArrayAttr.get(res)])


def _kept_tiling(given: ir.Attribute | None, lay: L.Layout, key: str, i: int) -> ir.Attribute | None:
    """A given ``mhlo.layout_mode`` with tiling (``"{1,0:T(8,128)}"``), kept as written.

    The pass compares layouts by minor_to_major only, as XLA's does, so a tiled
    pin stays what it was; writing back the bare minor_to_major would drop the
    tiling silently.  A tiled layout the pass would have to change is refused.
    """
    if given is None or not isinstance(given, ir.StringAttr) or ":" not in given.value:
        return None
    try:
        minor_to_major = L.parse_layout(given.value)
    except ValueError:
        return None
    if minor_to_major != lay:
        what = "parameter" if key == "arg_attrs" else "result"
        raise PassError(f'{what} {i}: the tiled mhlo.layout_mode = "{given.value}" would become '
                        f"{L.format_layout(lay)}; tiling cannot be carried to another layout")
    return given


def _with_layout_modes(f: ir.Operation, key: str, values: list[Value], layouts: list[L.Layout | None],
                       given: list[L.Layout | None], cache: _Attrs) -> ir.Attribute:
    existing = list(ir.ArrayAttr(f.attributes[key])) if key in f.attributes else []
    out = []
    # An entry with thousands of parameters has a few distinct ones: (its
    # attributes as read, its layout, chosen or not) -> its attributes now.
    made: dict[tuple, ir.Attribute] = {}
    for i, v in enumerate(values):
        lay = layouts[i] if i < len(layouts) else None
        lay = lay if v.kind == ARRAY else None
        chosen = i < len(given) and given[i] is None
        memo = (existing[i] if i < len(existing) else None, lay, chosen)
        done = made.get(memo)
        if done is None:
            done = made[memo] = _layout_mode_entry(memo[0], lay, chosen, key, i, cache)
        out.append(done)
    return ir.ArrayAttr.get(out)


def _layout_mode_entry(existing: ir.Attribute | None, lay: L.Layout | None, chosen: bool, key: str, i: int,
                       cache: _Attrs) -> ir.Attribute:
    """One parameter's or result's attributes with the layout this run gave it (``lay``: None for none)."""
    entries: dict[str, ir.Attribute] = {}
    if existing is not None:
        d = ir.DictAttr(existing)
        for k in range(len(d)):
            named = d[k]
            entries[named.name] = named.attr
    entries.pop(CHOSEN_MARK, None)  # an earlier run's mark: this run decides afresh
    if lay is not None:
        entries["mhlo.layout_mode"] = _kept_tiling(entries.get("mhlo.layout_mode"), lay, key, i) \
            or cache.string(L.format_layout(lay))
        if chosen:
            entries[CHOSEN_MARK] = cache.unit()
    return ir.DictAttr.get(entries)
