"""Private functions inlined at their calls, as XLA's CallInliner does before it lays anything out.

JAX wraps ``jax.nn.relu`` and other ``custom_jvp`` functions in private
functions: a transpose cannot be moved past a ``func.call``, so the moves of
``conv_order`` need the callee's body in place.  XLA inlines these calls
itself before layout assignment, so inlining changes nothing XLA sees.
"""

from __future__ import annotations

from jaxlib.mlir import ir


def _functions(module: ir.Module) -> dict[str, ir.Operation]:
    return {ir.StringAttr(op.attributes["sym_name"]).value: op.operation
            for op in module.body.operations if op.operation.name == "func.func"}


def _calls(op: ir.Operation, out: list[ir.Operation]) -> list[ir.Operation]:
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                if child.operation.name == "func.call":
                    out.append(child.operation)
                _calls(child.operation, out)
    return out


def _remap(op: ir.Operation, mapping: dict[ir.Value, ir.Value]) -> None:
    """Point ``op`` and the ops nested in it at the caller's values instead of the callee's."""
    for i, operand in enumerate(op.operands):
        new = mapping.get(operand)
        if new is not None:
            op.operands[i] = new
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                _remap(child.operation, mapping)


def inline_calls(module: ir.Module, depth: int = 32) -> int:
    """Inline every call of a single-block private function, in place; returns how many.

    Functions left without a caller are erased; ``depth`` bounds nested calls.
    """
    done = 0
    for _ in range(depth):
        functions = _functions(module)
        calls = [c for f in functions.values() for c in _calls(f, [])]
        inlined = 0
        for call in calls:
            callee = functions.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
            if callee is None or len(callee.regions[0].blocks) != 1:
                continue
            visibility = callee.attributes["sym_visibility"] if "sym_visibility" in callee.attributes else None
            if visibility is None or ir.StringAttr(visibility).value != "private":
                continue
            body = callee.regions[0].blocks[0]
            mapping = dict(zip(body.arguments, call.operands))
            with ir.InsertionPoint(call):
                for op in body.operations:
                    if op.operation.name == "func.return":
                        for old, new in zip(call.results, op.operands):
                            old.replace_all_uses_with(mapping.get(new, new))
                        continue
                    clone = op.operation.clone(ip=ir.InsertionPoint(call))
                    _remap(clone, mapping)
                    mapping.update(zip(op.operation.results, clone.results))
            call.erase()
            inlined += 1
        done += inlined
        if not inlined:
            break
    functions = _functions(module)
    called = {ir.FlatSymbolRefAttr(c.attributes["callee"]).value for f in functions.values() for c in _calls(f, [])}
    for name, f in functions.items():
        if name not in called and "sym_visibility" in f.attributes and \
                ir.StringAttr(f.attributes["sym_visibility"]).value == "private":
            f.erase()
    return done
