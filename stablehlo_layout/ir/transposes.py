"""Transposes moved through a program toward their users, and folded where two meet.

A rewrite that changes the dimension order of one op (a convolution in
another order, a dot with its operands swapped) keeps the program's meaning
by putting transposes around it; on their own those only move the data
movement into the program.  ``sink_transposes`` carries each transpose past
the ops that do not care about dimension order (elementwise ops, broadcasts
of scalars or vectors, reductions, windows, pads and slices) and folds two
that meet; whatever transposes are left sit where the program really changes
order (an entry parameter, a dot, a result), and XLA decides what they cost.
A moved transpose moves no arithmetic: the program computes what it did.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from jaxlib.mlir import ir

from stablehlo_layout.ir.mlir import nested_ops

# Ops that compute each element from the same element of every operand: a
# transpose of every operand is a transpose of the result.
ELEMENTWISE = frozenset(f"stablehlo.{n}" for n in (
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert", "cosine",
    "divide", "exponential", "exponential_minus_one", "floor", "imag", "is_finite", "log", "log_plus_one",
    "logistic", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt", "power", "real",
    "remainder", "round_nearest_afz", "round_nearest_even", "rsqrt", "select", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh",
    "xor"))


def dims_of(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


def permuted_type(value: ir.Value, perm: Sequence[int]) -> ir.Type:
    t = ir.RankedTensorType(value.type)
    shape = t.shape
    return ir.RankedTensorType.get([shape[p] for p in perm], t.element_type)


def make_transpose(value: ir.Value, perm: Sequence[int], location: ir.Location) -> ir.Value:
    """``stablehlo.transpose``: result dim j is operand dim perm[j]; at the current insertion point."""
    op = ir.Operation.create("stablehlo.transpose", results=[permuted_type(value, perm)], operands=[value],
                             attributes={"permutation": ir.DenseI64ArrayAttr.get(list(perm))}, loc=location)
    return op.results[0]


def inverted(perm: Sequence[int]) -> list[int]:
    out = [0] * len(perm)
    for j, p in enumerate(perm):
        out[p] = j
    return out


def is_static(value: ir.Value) -> bool:
    t = value.type
    return isinstance(t, ir.RankedTensorType) and t.has_static_shape


def ops_of(module: ir.Module) -> Iterator[ir.Operation]:
    """Every op of the module, nested ones included, in program order (a snapshot: safe to rewrite)."""
    return iter(nested_ops(module.operation))


def numbered(module: ir.Module, name: str) -> Iterator[tuple[int, ir.Operation]]:
    """The module's ops named ``name``, each with its position among them in program order
    (the index a rewrite's ``only`` names)."""
    return enumerate(op for op in ops_of(module) if op.name == name)


def attributes_of(op: ir.Operation) -> dict[str, ir.Attribute]:
    table = op.attributes
    return {table[i].name: table[i].attr for i in range(len(table))}


def is_identity(perm: Sequence[int]) -> bool:
    return list(perm) == list(range(len(perm)))


# --- moving transposes ----------------------------------------------------------------------


def _transpose_of(value: ir.Value) -> tuple[ir.Value, list[int]] | None:
    op = _producer(value)
    if op is not None and op.name == "stablehlo.transpose":
        return op.operands[0], list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    return None


def _producer(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation if hasattr(owner, "operation") else owner
    return op if isinstance(op, ir.Operation) else None


def _order_free(value: ir.Value, perm: list[int], depth: int = 3) -> ir.Value | None:
    """``value`` as it reads before a transpose by ``perm``, when that costs nothing: a splat
    constant, a broadcast (of a scalar, or of a vector along dims that stay in order), or an
    elementwise op of such values (a gradient scaled by a constant), made anew."""
    op = _producer(value)
    if op is None:
        return None
    if op.name in ELEMENTWISE and depth > 0 and len(op.results) == 1 and \
            all(is_static(v) and len(dims_of(v)) == len(perm) for v in op.operands):
        found = [_order_free(v, perm, depth - 1) for v in op.operands]
        sources = [v for v in found if v is not None]
        if len(sources) != len(found):
            return None
        with op.location:
            made = ir.Operation.create(op.name, results=[permuted_type(value, inverted(perm))], operands=sources,
                                       attributes=attributes_of(op))
        return made.results[0]
    inverse = inverted(perm)
    if op.name == "stablehlo.constant":
        attr = ir.DenseElementsAttr(op.attributes["value"])
        if not attr.is_splat:
            return None
        with op.location:
            made = ir.Operation.create("stablehlo.constant", results=[permuted_type(value, inverse)],
                                       attributes={"value": ir.DenseElementsAttr.get_splat(
                                           permuted_type(value, inverse), attr.get_splat_value())})
        return made.results[0]
    if op.name == "stablehlo.broadcast_in_dim":
        dims = list(ir.DenseI64ArrayAttr(op.attributes["broadcast_dimensions"]))
        new_dims = [perm[d] for d in dims]
        source = op.operands[0]
        with op.location:
            if new_dims != sorted(new_dims):
                # The broadcast reads its operand's dims in another order: the operand (smaller
                # than the result, often only size-1 dims apart) is transposed instead.
                order = sorted(range(len(new_dims)), key=lambda k: new_dims[k])
                source = make_transpose(source, order, op.location)
                new_dims = sorted(new_dims)
            made = ir.Operation.create("stablehlo.broadcast_in_dim", results=[permuted_type(value, inverse)],
                                       operands=[source],
                                       attributes={"broadcast_dimensions": ir.DenseI64ArrayAttr.get(new_dims)})
        return made.results[0]
    return None


def _before_transpose(values: list[ir.Value], perm: list[int]) -> list[ir.Value] | None:
    """Each value as it reads before a transpose by ``perm``: the transpose's own operand, or an
    order-free value made anew (at the current insertion point); None if one is neither."""
    sources: list[ir.Value] = []
    for v in values:
        t = _transpose_of(v)
        if t is not None and t[1] == perm:
            sources.append(t[0])
            continue
        free = _order_free(v, perm)
        if free is None:
            return None
        sources.append(free)
    return sources


def _sink_elementwise(op: ir.Operation) -> bool:
    """An elementwise op of transposed operands: computed before the transpose, transposed after."""
    operands = list(op.operands)
    perm = None
    for v in operands:
        t = _transpose_of(v)
        if t is not None:
            perm = t[1]
            break
    if perm is None or not all(is_static(v) for v in [*operands, *op.results]) or len(op.results) != 1:
        return False
    if any(len(dims_of(v)) != len(perm) for v in operands):
        return False  # a scalar operand of a clamp: the shapes do not all follow the permutation
    with ir.InsertionPoint(op), op.location:
        sources = _before_transpose(operands, perm)
        if sources is None:
            return False
        result = op.results[0]
        attributes = attributes_of(op)
        inner = ir.Operation.create(op.name, results=[permuted_type(result, inverted(perm))], operands=sources,
                                    attributes=attributes, loc=op.location)
        back = make_transpose(inner.results[0], perm, op.location)
    result.replace_all_uses_with(back)
    op.erase()
    return True


def _fold_transposes(op: ir.Operation) -> bool:
    """A transpose of a transpose is one transpose, or none."""
    t = _transpose_of(op.operands[0])
    if t is None:
        return False
    source, first = t
    second = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    combined = [first[j] for j in second]
    if is_identity(combined):
        op.results[0].replace_all_uses_with(source)
    else:
        with ir.InsertionPoint(op), op.location:
            op.results[0].replace_all_uses_with(make_transpose(source, combined, op.location))
    op.erase()
    return True


def _sink_reduce(op: ir.Operation) -> bool:
    """A reduction of a transposed operand reduces the operand's own dims, then orders what is left."""
    n = len(op.results)
    inputs, inits = list(op.operands[:n]), list(op.operands[n:])
    found = [_transpose_of(v) for v in inputs]
    if any(t is None for t in found) or len({tuple(t[1]) for t in found if t}) != 1:
        return False
    perm = found[0][1]  # type: ignore[index]
    if not all(is_static(v) for v in [*inputs, *op.results]):
        return False
    dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    new_dims = sorted(perm[d] for d in dims)
    kept = [j for j in range(len(perm)) if j not in dims]  # result dims, in the transposed order
    left = [i for i in range(len(perm)) if i not in new_dims]  # result dims of the new reduce
    order = [left.index(perm[j]) for j in kept]
    with ir.InsertionPoint(op), op.location:
        sources = [t[0] for t in found if t is not None]
        result_types = []
        for v, src in zip(op.results, sources):
            t = ir.RankedTensorType(v.type)
            shape = dims_of(src)
            result_types.append(ir.RankedTensorType.get([shape[i] for i in left], t.element_type))
        attributes = attributes_of(op)
        attributes["dimensions"] = ir.DenseI64ArrayAttr.get(new_dims)
        new = ir.Operation.create(op.name, results=result_types, operands=[*sources, *inits],
                                  attributes=attributes, regions=1, loc=op.location)
        for block in list(op.regions[0].blocks):
            block.append_to(new.regions[0])
        outs = [r if is_identity(order) else make_transpose(r, order, op.location) for r in new.results]
    for old, replacement in zip(op.results, outs):
        old.replace_all_uses_with(replacement)
    op.erase()
    return True


# Ops whose attributes say something per dimension of the operand, in its order:
# the attributes, and how many leading operands are arrays in that order.
_WINDOW = ("window_dimensions", "window_strides", "base_dilations", "window_dilations")
_PER_DIMENSION = {
    "stablehlo.reduce_window": _WINDOW,
    "stablehlo.select_and_scatter": _WINDOW,
    "stablehlo.pad": ("edge_padding_low", "edge_padding_high", "interior_padding"),
    "stablehlo.slice": ("start_indices", "limit_indices", "strides"),
}


def _window_attributes(op: ir.Operation, perm: list[int]) -> dict[str, ir.Attribute]:
    """``op``'s attributes for the same window over the operand before a transpose by ``perm``."""
    import numpy as np

    attributes = attributes_of(op)
    inverse = inverted(perm)
    n = len(perm)
    for name in _PER_DIMENSION[op.name]:
        if name in attributes:
            old = list(ir.DenseI64ArrayAttr(attributes[name]))
            attributes[name] = ir.DenseI64ArrayAttr.get([old[inverse[i]] for i in range(n)])
    if "padding" in attributes:
        flat = [int(x) for x in np.asarray(ir.DenseIntElementsAttr(attributes["padding"])).reshape(-1)]
        pairs = [flat[2 * j:2 * j + 2] for j in range(n)]
        padding = np.asarray([pairs[inverse[i]] for i in range(n)], dtype=np.int64)
        # A numpy array is a buffer; jaxlib's stub names collections.abc.Buffer, which 3.11 lacks.
        attributes["padding"] = ir.DenseIntElementsAttr.get(padding)  # type: ignore[call-overload]
    return attributes


def _sink_windowed(op: ir.Operation) -> bool:
    """An op with per-dimension attributes (a window, padding, a slice) of transposed operands:
    the same op in the operands' own order, the results transposed after."""
    arrays = {"stablehlo.reduce_window": len(op.results), "stablehlo.select_and_scatter": 2}.get(op.name, 1)
    windowed, scalars = list(op.operands[:arrays]), list(op.operands[arrays:])
    first = _transpose_of(windowed[0])
    if first is None or not all(is_static(v) for v in [*windowed, *op.results]):
        return False
    perm = first[1]
    with ir.InsertionPoint(op), op.location:
        sources = _before_transpose(windowed, perm)
        if sources is None:
            return False
        new = ir.Operation.create(op.name, results=[permuted_type(r, inverted(perm)) for r in op.results],
                                  operands=[*sources, *scalars], attributes=_window_attributes(op, perm),
                                  regions=len(op.regions), loc=op.location)
        for old_region, new_region in zip(op.regions, new.regions):
            for block in list(old_region.blocks):
                block.append_to(new_region)
        outs = [make_transpose(r, perm, op.location) for r in new.results]
    for old, replacement in zip(op.results, outs):
        old.replace_all_uses_with(replacement)
    op.erase()
    return True


def _erase_dead(module: ir.Module) -> None:
    """Transposes, constants and broadcasts nothing reads any more (left by the moves above)."""
    changed = True
    while changed:
        changed = False
        for op in ops_of(module):
            if (op.name in ELEMENTWISE or op.name in ("stablehlo.transpose", "stablehlo.constant",
                                                        "stablehlo.broadcast_in_dim", "stablehlo.convolution")) \
                    and all(not list(r.uses) for r in op.results):
                op.erase()
                changed = True


def sink_transposes(module: ir.Module, rounds: int = 64) -> int:
    """Move transposes toward their users past order-free ops and fold those that meet, in place.

    Returns how many ops were moved or folded; bounded by ``rounds`` passes
    over the module (each pass moves every transpose at least one op on).
    """
    done = 0
    for _ in range(rounds):
        moved = 0
        for op in ops_of(module):
            try:
                name = op.name
            except RuntimeError:  # erased earlier in this pass
                continue
            if name == "stablehlo.transpose":
                moved += _fold_transposes(op)
            elif name in ELEMENTWISE:
                moved += _sink_elementwise(op)
            elif name == "stablehlo.reduce":
                moved += _sink_reduce(op)
            elif name in _PER_DIMENSION:
                moved += _sink_windowed(op)
        _erase_dead(module)
        done += moved
        if not moved:
            break
    return done
