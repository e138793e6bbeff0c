"""XLA:TPU's layout rules, as its dumps show them.

XLA:TPU's pass lives in libtpu and is closed source.  Every rule here was
read off the modules it receives and returns (``Layout_assignment`` dumps of
libtpu compiling deviceless for each generation: tests/unit/xla_tpu_dumps/,
docs/TPU-OBSERVED.md) and is named in docs/XLA.md's TPU part with the dumps
that show it:

* every array carries tiles chosen by element width, shape and
  minor_to_major alone (``tpu_tiles.py``); the copies below change
  minor_to_major, and the tiles follow;
* the runtime fixes an entry array the program leaves open to the order that
  pads least under those tiles (``tpu_tiles.default_entry_layout``);
* ``TopK`` reads and writes its sorted dim major;
* everything else follows XLA's base pass: transposes become bitcasts, the
  layouts of custom calls with ``operand_layout_constraints`` are honoured.

The generations tested (v4, v5e, v5p, v6e, tpu7x) make the same decisions
for the same module; their earlier passes differ, which a dump already
shows.  ``generation`` is kept so that output and reports say which chip was
meant, and so that a rule that does differ has a place to go.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.model.errors import OptionError
from stablehlo_layout.targets import tpu_tiles
from stablehlo_layout.targets.base import Target
from stablehlo_layout.targets.demands import Demand

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Value
    from stablehlo_layout.model.layout import Dims
    from stablehlo_layout.targets.view import TargetView

# The generations and, for each, how libtpu's dumps name the chip
# (``target_arguments.txt``: ``version`` and, on v5e, ``variant: "lite"``).
GENERATIONS: dict[str, tuple[str, str]] = {
    "v4": ("TPU_VERSION_PUFFERFISH", ""),
    "v5e": ("TPU_VERSION_VIPERFISH", "lite"),
    "v5p": ("TPU_VERSION_VIPERFISH", ""),
    "v6e": ("TPU_VERSION_GHOSTLITE", ""),
    "tpu7x": ("TPU_VERSION_6acc60406", ""),
}
DEFAULT_GENERATION = "v5e"

_TOPK = "TopK"


def check_generation(generation: str) -> str:
    """``generation`` when it is one we model; otherwise one OptionError line."""
    if generation not in GENERATIONS:
        raise OptionError(f"--tpu {generation}: unknown TPU generation (expected one of: "
                          f"{', '.join(GENERATIONS)}; default {DEFAULT_GENERATION})")
    return generation


class XlaTpuTarget(Target):
    """XLA:TPU for one generation (``--tpu``, default v5e)."""

    name = "xla-tpu"
    inline_calls = True
    uniform_rounds = True

    def __init__(self, generation: str | None = None) -> None:
        self.generation = check_generation(generation or DEFAULT_GENERATION)
        self.device = self.generation

    @property
    def label(self) -> str:
        return f"XLA:TPU {self.generation}"

    def tiling(self, element: str, dims: "Dims", layout: L.Layout, entry: bool = False) -> str:
        """XLA:TPU's tiles (``tpu_tiles.tiles``); none for a type no dump has shown."""
        t = tpu_tiles.tiles(element, tuple(dims), tuple(layout), entry)
        return tpu_tiles.tiles_text(t) if t is not None else ""

    def padded_bytes(self, element: str, dims: "Dims", layout: L.Layout) -> int | None:
        return tpu_tiles.padded_bytes(element, tuple(dims), tuple(layout))  # type: ignore[arg-type]

    def default_entry_layout(self, v: "Value") -> L.Layout:
        lay = tpu_tiles.default_entry_layout(v.element, tuple(v.dims))
        return L.default_layout(v.rank) if lay is None else L.intern(lay)

    def backend_demands(self, view: "TargetView", comp: int) -> Iterator[Demand]:
        g = view.graph
        for iid in view.instructions_of(("custom_call",)):
            ins = g.instrs[iid]
            if ins.comp == comp and ins.attrs.get("target") == _TOPK:
                yield from self._top_k(view, iid)

    def _top_k(self, view: "TargetView", iid: int) -> Iterator[Demand]:
        """TopK sorts along its last dim, which it wants most major, in and out
        (``v5e/sort_topk_f32``: the operand copied from ``{1,0}`` to ``{0,1}``)."""
        g = view.graph
        why = Origin("target:tpu-topk-sorted-dim-major", iid, None,
                     "XLA:TPU's TopK reads and writes the sorted (last) dimension most major")
        ops = view.operand_values(iid)
        if not ops or not ops[0].is_array or ops[0].rank < 2:
            return
        lay = _last_dim_major(ops[0].rank)
        yield Demand.on_operand(iid, 0, lay, why, True, True)
        leaves = view.leaves(iid)
        lays = tuple(_last_dim_major(g.values[r].rank) if g.values[r].is_array and g.values[r].rank >= 2 else None
                     for r in leaves)
        yield Demand.on_results(iid, lays, why, True)


def _last_dim_major(rank: int) -> L.Layout:
    """The last dim most major, the others row-major below it: ``{0,1}`` in rank 2."""
    return L.intern(tuple(range(rank - 2, -1, -1)) + (rank - 1,))
