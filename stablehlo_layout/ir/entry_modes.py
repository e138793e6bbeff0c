"""The entry function's stated layouts (``mhlo.layout_mode``) and the names JAX gives its values, read and written.

A pinned entry layout is a promise to the caller; ``fix`` tries leaving a
value free (``"auto"``, JAX's ``Layout.AUTO``) or pinning it to the layout
its readers want, and names each value as the user wrote it.
"""

from __future__ import annotations

import re

from jaxlib.mlir import ir

def entry_function(module: ir.Module) -> ir.Operation:
    """The module's entry ``func.func`` (``@main``, or the one public function)."""
    from stablehlo_layout.ir.importer import _entry_name

    funcs = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    name = _entry_name(funcs)
    return next(f for f in funcs if ir.StringAttr(f.attributes["sym_name"]).value == name)


def entry_modes(module: ir.Module) -> tuple[list[str | None], list[str | None]]:
    """Each entry parameter's and result's ``mhlo.layout_mode`` as the program states it (None: unstated)."""
    f = entry_function(module)
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
    f = entry_function(module)
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
    f = entry_function(module)
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
    f = entry_function(module)
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
