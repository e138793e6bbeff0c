"""Device meshes and the collectives over them: which mesh axis a collective's devices span.

A partitioned program names its devices by number.  A collective lists them
as replica groups (all-gather, reduce-scatter, all-reduce, all-to-all) or as
source-target pairs (collective-permute); the mesh (``sdy.mesh``, or the
``jax.sharding.Mesh`` a function was sharded over) lays the numbers out as an
array with named axes.  The axis behind a collective is the set of axes along
which the devices of one group differ, with every other axis held fixed.

Where no mesh is known (an XLA dump keeps no axis names) an axis is told by
its size and the stride between the device numbers along it, which is what
an iota mesh's axis is: the minor axis of a 2x4 mesh is ``4 devices, stride
1``, the major one ``2 devices, stride 4``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

Groups = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Mesh:
    """Named axes over device numbers, major to minor, as ``sdy.mesh`` and ``jax.sharding.Mesh`` have them."""

    axes: tuple[tuple[str, int], ...]  # (name, size), major to minor
    device_ids: tuple[int, ...] | None = None  # row-major over the axes; None: 0, 1, 2, ... (iota)

    @property
    def size(self) -> int:
        n = 1
        for _, s in self.axes:
            n *= s
        return n

    def ids(self) -> tuple[int, ...]:
        return self.device_ids if self.device_ids is not None else tuple(range(self.size))

    def text(self) -> str:
        """``data=2 x model=4``."""
        return " x ".join(f"{name}={size}" for name, size in self.axes)

    def _coords(self) -> dict[int, tuple[int, ...]]:
        sizes = [s for _, s in self.axes]
        return dict(zip(self.ids(), itertools.product(*(range(s) for s in sizes))))

    def groups_of(self, axes: Sequence[int]) -> frozenset[frozenset[int]]:
        """The device groups that vary over the axes ``axes`` (indexes) and hold the others fixed."""
        out: dict[tuple[int, ...], set[int]] = {}
        for device, coord in self._coords().items():
            key = tuple(c for k, c in enumerate(coord) if k not in axes)
            out.setdefault(key, set()).add(device)
        return frozenset(frozenset(g) for g in out.values())

    def ordered_groups(self, axes: Sequence[int]) -> Groups:
        """``groups_of`` in order: groups by their first device, each device in row-major order."""
        out: dict[tuple[int, ...], list[int]] = {}
        for device, coord in self._coords().items():
            out.setdefault(tuple(c for k, c in enumerate(coord) if k not in axes), []).append(device)
        return tuple(sorted(tuple(g) for g in out.values()))

    def axes_of_groups(self, groups: Groups) -> tuple[str, ...] | None:
        """The mesh axes whose devices make exactly ``groups``; None when no set of axes does."""
        wanted = frozenset(frozenset(g) for g in groups)
        if sum(len(g) for g in groups) != self.size:
            return None
        for k in range(1, len(self.axes) + 1):
            for subset in itertools.combinations(range(len(self.axes)), k):
                if self.groups_of(subset) == wanted:
                    return tuple(self.axes[i][0] for i in subset)
        return None

    def axes_of_pairs(self, pairs: Sequence[tuple[int, int]]) -> tuple[str, ...] | None:
        """The mesh axes along which a collective-permute's sources and targets differ."""
        coords = self._coords()
        moved: set[int] = set()
        for a, b in pairs:
            if a not in coords or b not in coords:
                return None
            moved.update(k for k, (x, y) in enumerate(zip(coords[a], coords[b])) if x != y)
        return tuple(self.axes[k][0] for k in sorted(moved)) or None


def _stride(group: Sequence[int]) -> int | None:
    """The common difference of a group's sorted device numbers, if they are evenly spaced."""
    ordered = sorted(group)
    if len(ordered) < 2:
        return None
    step = ordered[1] - ordered[0]
    return step if all(b - a == step for a, b in zip(ordered, ordered[1:])) else None


def unnamed_axis(groups: Groups) -> str | None:
    """``4 devices, stride 1``: the axis of an iota mesh the groups span, where no names are known."""
    if not groups:
        return None
    sizes = {len(g) for g in groups}
    if sizes == {1}:
        return "1 device"
    strides = {_stride(g) for g in groups}
    if len(strides) != 1 or len(sizes) != 1 or None in strides:
        return None
    return f"{sizes.pop()} devices, stride {strides.pop()}"


def groups_text(groups: Groups, limit: int = 4) -> str:
    """``{{0,1,2,3},{4,5,6,7}}``, the first ``limit`` groups of many and a count of the rest."""
    shown = ",".join("{" + ",".join(map(str, g)) + "}" for g in groups[:limit])
    more = f",... {len(groups) - limit} more" if len(groups) > limit else ""
    return "{" + shown + more + "}"


def pairs_text(pairs: Sequence[tuple[int, int]], limit: int = 4) -> str:
    """``{{0,1},{1,2},...}`` as XLA prints source_target_pairs."""
    return groups_text(tuple(tuple(p) for p in pairs), limit)


def permute_axis(pairs: Sequence[tuple[int, int]]) -> str | None:
    """Where no mesh is known: the axis a permute's rings run along (``4 devices, stride 1``).

    The devices a permute connects fall into rings (``ppermute`` over one
    axis connects each row of the mesh along it); when every ring is the
    same size and evenly spaced, that is an axis of an iota mesh.
    """
    parent: dict[int, int] = {}

    def root(d: int) -> int:
        while parent.setdefault(d, d) != d:
            d = parent[d]
        return d

    for a, b in pairs:
        parent[root(a)] = root(b)
    rings: dict[int, list[int]] = {}
    for d in list(parent):
        rings.setdefault(root(d), []).append(d)
    return unnamed_axis(tuple(tuple(sorted(r)) for r in rings.values()))
