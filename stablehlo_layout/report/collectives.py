"""Which collective, over which mesh axis, is behind a copy; and the sharding a value is stated to have.

A partitioned program's copies often sit next to a collective: XLA:CPU wants
an all-gather's or reduce-scatter's dimension most major (XLA §10), and its
neighbours read row-major.  A report names the collective and the mesh axis
its devices span (``model.mesh``), from the collective's replica groups or
source-target pairs and the program's mesh (``sdy.mesh``; an XLA dump keeps
none, so there the axis is told by its size and device stride).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stablehlo_layout.model.constraints import BUFFER, OPERAND, Origin
from stablehlo_layout.model.graph import Graph
from stablehlo_layout.model.mesh import groups_text, pairs_text, permute_axis, unnamed_axis

# Collectives by the name after the dialect prefix, spelled as XLA's HLO does.
COLLECTIVES = {"all_gather": "all-gather", "reduce_scatter": "reduce-scatter", "all_reduce": "all-reduce",
               "all_to_all": "all-to-all", "collective_permute": "collective-permute",
               "collective_broadcast": "collective-broadcast", "ragged_all_to_all": "ragged-all-to-all"}


@dataclass(frozen=True)
class Collective:
    """A collective a copy's chains pass through."""

    side: str  # "consumer": in a chain of the layout the consumer wants; "producer": the producer's
    op: str  # XLA's name: "all-gather"
    instruction: str  # where it is: its location (an HLO instruction name for XLA's module), or its op
    iid: int
    dimension: int | None  # the gathered / scattered / split dimension
    mesh_axes: tuple[str, ...] | None  # the mesh's axis names, where a mesh is known and matches
    mesh: str | None  # the mesh that names them: "@mesh (data=2 x model=4)"
    axis: str  # the axis in words
    devices: str  # replica groups or source-target pairs, as XLA prints them
    channel: int | None

    def words(self) -> str:
        """``all-gather at all_gather.3 over mesh axis 'model' of @mesh (data=2 x model=4), dimension 1 (...)``."""
        dim = f", dimension {self.dimension}" if self.dimension is not None else ""
        kind = "source-target pairs" if self.op == "collective-permute" else "replica groups"
        return f"{self.op} at {self.instruction} over {self.axis}{dim} ({kind} {self.devices})"

    def to_json(self) -> dict[str, Any]:
        return {"side": self.side, "op": self.op, "instruction": self.instruction, "dimension": self.dimension,
                "mesh_axes": list(self.mesh_axes) if self.mesh_axes is not None else None, "mesh": self.mesh,
                "axis": self.axis, "devices": self.devices, "channel_id": self.channel}


def _short(op: str) -> str:
    return op.split(".", 1)[-1]


def _named(g: Graph, find: Any) -> tuple[tuple[str, ...], str] | None:
    """The axes of the first mesh of the program ``find(mesh)`` names, and that mesh in words."""
    for name, mesh in g.meshes.items():
        axes = find(mesh)
        if axes:
            return axes, f"@{name} ({mesh.text()})"
    return None


def _axis_words(axes: tuple[str, ...]) -> str:
    quoted = ", ".join(repr(a) for a in axes)
    return f"mesh axis {quoted}" if len(axes) == 1 else f"mesh axes {quoted}"


def describe(g: Graph, iid: int, side: str) -> Collective | None:
    """The collective instruction ``iid`` as a report names it; None when it is no collective."""
    ins = g.instrs[iid]
    op = COLLECTIVES.get(_short(ins.op))
    if op is None:
        return None
    attrs = ins.attrs
    where = ins.loc or ins.op
    groups = attrs.get("replica_groups")
    pairs = attrs.get("source_target_pairs")
    named: tuple[tuple[str, ...], str] | None = None
    axes: tuple[str, ...] | None
    mesh: str | None
    if pairs:
        devices = pairs_text(pairs)
        named = _named(g, lambda m: m.axes_of_pairs(pairs))
        fallback = permute_axis(pairs)
    elif groups:
        devices = groups_text(groups)
        named = _named(g, lambda m: m.axes_of_groups(groups))
        fallback = unnamed_axis(groups)
    else:  # no groups: every device takes part
        devices, fallback = "{}", "every device"
    if named is not None:
        axes, mesh = named
        axis = f"{_axis_words(axes)} of {mesh}"
    else:
        axes = mesh = None
        if fallback is None:
            axis = "devices that make no axis of an evenly numbered mesh"
        elif fallback == "1 device":
            axis = "one device per group (nothing is exchanged)"
        else:
            axis = fallback if not (pairs or groups) else f"a mesh axis of {fallback}"
    return Collective(side, op, where, iid, attrs.get("dim"), axes, mesh, axis, devices, attrs.get("channel_id"))


def _instructions(g: Graph, node: Origin) -> Iterable[int]:
    """The instructions one fact is about: its subject's, and the one it was derived through."""
    if node.kind == BUFFER:
        yield g.values[node.target[0]].producer
    elif node.kind == OPERAND:
        yield node.target[0]
    if node.instr is not None:
        yield node.instr


def behind(g: Graph, chains: Iterable[tuple[str, Origin | None]]) -> list[Collective]:
    """Every collective the chains pass through, once each per side, in the order met.

    ``chains``: (side, the first fact of a chain), each walked back to its source.
    """
    out: list[Collective] = []
    seen: set[tuple[str, int]] = set()
    for side, node in chains:
        while node is not None:
            for iid in _instructions(g, node):
                if (side, iid) in seen or _short(g.instrs[iid].op) not in COLLECTIVES:
                    continue
                seen.add((side, iid))
                found = describe(g, iid, side)
                if found is not None:
                    out.append(found)
            node = node.parent
    return out


def value_sharding(g: Graph, vid: int) -> str | None:
    """The sharding the input states for a value: an entry parameter's, or its producer's own (``@Sharding``)."""
    if vid in g.shardings:
        return g.shardings[vid]
    if not g.partitioned:
        return None
    ins = g.instrs[g.values[vid].producer]
    return ins.attrs.get("sharding") if ins.op != "parameter" else None


def use_sharding(g: Graph, iid: int, operand: int) -> str | None:
    """The sharding the input states for what a use reads: an entry result's."""
    ins = g.instrs[iid]
    if ins.op != "root" or not g.comps[ins.comp].is_entry or operand >= len(g.result_shardings):
        return None
    return g.result_shardings[operand]
