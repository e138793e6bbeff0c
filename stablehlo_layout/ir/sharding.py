"""A partitioned program's meshes, value shardings and collective device groups, read from MLIR.

What a report needs to say which mesh axis a collective runs over and how a
value is sharded.  JAX's lowering (Shardy) writes ``sdy.mesh`` ops and
``sdy.sharding`` on the entry's arguments; GSPMD-style modules and XLA dumps
carry ``mhlo.sharding`` strings (an HLO dump's ``sharding={...}`` becomes one
on import).  Collectives carry ``replica_groups`` (an HLO dump's iota form
``[2,4]<=[8]`` arrives expanded) or ``source_target_pairs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jaxlib.mlir import ir

from stablehlo_layout.model.graph import Graph
from stablehlo_layout.model.mesh import Groups, Mesh

# The attributes a collective's device groups are read from, by op (the name after the dialect prefix).
GROUPS_ATTRIBUTE = {"all_gather": "replica_groups", "reduce_scatter": "replica_groups",
                    "all_reduce": "replica_groups", "all_to_all": "replica_groups",
                    "collective_permute": "source_target_pairs", "collective_broadcast": "replica_groups"}

_MESH_AXIS = re.compile(r'"([^"]+)"\s*=\s*(\d+)')
_DEVICE_IDS = re.compile(r"device_ids\s*=\s*\[([\d,\s]*)\]")
_SDY = re.compile(r"#sdy\.sharding<@([\w.$-]+)\s*,\s*\[(.*?)\]\s*(?:,\s*(replicated=.*))?>$", re.S)
_DIM = re.compile(r"\{([^{}]*)\}")


def _groups(attr: ir.Attribute) -> Groups:
    dense = ir.DenseIntElementsAttr(attr)
    t = ir.RankedTensorType(dense.type)
    flat = [int(x) for x in dense]  # type: ignore[attr-defined]
    if t.rank != 2 or not flat:
        return ()
    width = t.shape[1]
    # -1 pads groups of unequal size.
    return tuple(tuple(x for x in flat[i:i + width] if x >= 0) for i in range(0, len(flat), width))


_MESH_AXES = re.compile(r"#stablehlo\.replica_group_mesh_axes<mesh = @([\w.$-]+), axes = \[(.*)\]>$", re.S)
_AXIS_REF = re.compile(r'#stablehlo\.axis_ref<name = "([^"]+)"(.*?)>')


def _module_of(op: ir.Operation) -> ir.Operation | None:
    while op.name != "builtin.module":
        parent = op.parent
        if parent is None:
            return None
        op = parent.operation if hasattr(parent, "operation") else parent
    return op


def _mesh_axes_groups(op: ir.Operation, text: str) -> Groups:
    """XLA's replica groups written as mesh axes (``mesh['axis_0'=4,...] {'axis_0'}`` in a dump):
    the device groups, each in the order its devices vary over the axes."""
    m = _MESH_AXES.match(text)
    module = _module_of(op) if m is not None else None
    if m is None or module is None:
        return ()
    mesh = read_meshes(module).get(m.group(1))
    refs = _AXIS_REF.findall(m.group(2))
    names = [n for n, _ in mesh.axes] if mesh is not None else []
    if mesh is None or not refs or any(rest.strip() or n not in names for n, rest in refs):
        return ()  # sub-axes, or a mesh not in the module: left unnamed
    return mesh.ordered_groups([names.index(n) for n, _ in refs])


def collective_facts(op: ir.Operation, short: str) -> dict[str, Any]:
    """``replica_groups`` or ``source_target_pairs`` and the channel, for a report to name the mesh axis."""
    attrs = op.attributes
    key = GROUPS_ATTRIBUTE.get(short)
    out: dict[str, Any] = {}
    if key is not None and key in attrs:
        try:
            groups = _groups(attrs[key])
        except ValueError:
            groups = _mesh_axes_groups(op, str(attrs[key]))
        if groups:
            out[key] = groups
    if "channel_handle" in attrs:
        m = re.search(r"handle = (\d+)", str(attrs["channel_handle"]))
        if m and int(m.group(1)) > 0:
            out["channel_id"] = int(m.group(1))
    return out


def read_mesh(op: ir.Operation) -> tuple[str, Mesh] | None:
    """An ``sdy.mesh`` op's name and mesh."""
    attrs = op.attributes
    if "sym_name" not in attrs or "mesh" not in attrs:
        return None
    text = str(attrs["mesh"])
    axes = tuple((name, int(size)) for name, size in _MESH_AXIS.findall(text))
    ids = _DEVICE_IDS.search(text)
    device_ids = tuple(int(x) for x in ids.group(1).split(",") if x.strip()) if ids else None
    if not axes:
        return None
    return ir.StringAttr(attrs["sym_name"]).value, Mesh(axes, device_ids)


def read_meshes(module: ir.Module | ir.Operation) -> dict[str, Mesh]:
    """Every ``sdy.mesh`` at the top of ``module``, by name."""
    op = module.operation if isinstance(module, ir.Module) else module
    out: dict[str, Mesh] = {}
    for child in op.regions[0].blocks[0].operations:
        if child.operation.name == "sdy.mesh":
            found = read_mesh(child.operation)
            if found is not None:
                out[found[0]] = found[1]
    return out


def splits(text: str) -> bool:
    """Whether a sharding (as ``sharding_text`` spells it) puts a value on several devices in pieces."""
    if text.startswith("P("):
        return any(part.strip() != "None" for part in text[2:text.index(")")].split(","))
    return "devices=" in text


def sharding_text(attr: ir.Attribute) -> str:
    """A sharding as a reader knows it: ``P('data', None) on @mesh`` for Shardy's, the HLO string for GSPMD's."""
    if isinstance(attr, ir.StringAttr):
        return attr.value
    return _sdy_text(str(attr))


def _sdy_text(text: str) -> str:
    m = _SDY.match(text)
    if m is None:
        return text
    mesh, dims, replicated = m.groups()
    parts = []
    for d in _DIM.findall(dims):
        names = [x.strip().strip('"') for x in d.split(",") if x.strip()]
        if any(not re.fullmatch(r"[\w.-]+", n) for n in names):
            return text  # open dims, sub-axes: said as Shardy says them
        parts.append("None" if not names else repr(names[0]) if len(names) == 1 else
                     "(" + ", ".join(map(repr, names)) + ")")
    return f"P({', '.join(parts)}) on @{mesh}" + (f", {replicated}" if replicated else "")


def sharding_of(attrs: Any) -> str | None:
    """The sharding an attribute dictionary (an op's, an argument's) states, if any; an op's first result's."""
    if "sdy.sharding" in attrs:
        text = str(attrs["sdy.sharding"])
        per_value = re.match(r"#sdy\.sharding_per_value<\[(<.*?>)(?:, <|\]>$)", text, re.S)
        return _sdy_text("#sdy.sharding" + per_value.group(1)) if per_value else _sdy_text(text)
    if "mhlo.sharding" in attrs:
        return sharding_text(attrs["mhlo.sharding"])
    return None


@dataclass(frozen=True)
class ProgramSharding:
    """What a partitioned program states before XLA partitions it: its meshes by name and the
    sharding of each entry argument and result (None: unstated)."""
    meshes: dict[str, Mesh]
    arguments: list[str | None]
    results: list[str | None]


def program_sharding(module: ir.Module, entry: ir.Operation) -> ProgramSharding:
    """``module``'s, whose entry function is ``entry`` (``ir.entry_modes.entry_function``)."""
    arguments, results = entry_shardings(entry)
    return ProgramSharding(read_meshes(module), arguments, results)


def adopt_program_sharding(g: Graph, program: ProgramSharding) -> None:
    """Name ``g``'s meshes and entry shardings as the program states them where XLA's partitioned
    module (``--as-compiled``) lost them: it keeps the devices' numbers but not the mesh's axis
    names (where it keeps a mesh, its axes are XLA's ``axis_0``, ``axis_1``...), and jax 0.11's
    XLA and later drop the entry parameters' ``sharding=`` as well.  The program's own come first."""
    g.meshes = {**program.meshes, **{k: m for k, m in g.meshes.items() if k not in program.meshes}}
    if not g.partitioned or g.entry is None:
        return
    comp = g.comps[g.entry]
    if len(comp.params) == len(program.arguments):
        for iid, text in zip(comp.params, program.arguments):
            vid = g.instrs[iid].results[0]
            if text is not None and vid not in g.shardings:
                g.shardings[vid] = text
    if not any(s is not None for s in g.result_shardings) and g.instrs[comp.root].operand_count == len(program.results):
        g.result_shardings = list(program.results)


def entry_shardings(f: ir.Operation) -> tuple[list[str | None], list[str | None]]:
    """The sharding the entry function ``f`` states for each argument and result (None: unstated)."""
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    out: list[list[str | None]] = []
    for key, count in (("arg_attrs", len(ftype.inputs)), ("res_attrs", len(ftype.results))):
        found: list[str | None] = [None] * count
        if key in f.attributes:
            for i, d in enumerate(ir.ArrayAttr(f.attributes[key])):
                if i < count:
                    found[i] = sharding_of(ir.DictAttr(d))
        out.append(found)
    return out[0], out[1]
