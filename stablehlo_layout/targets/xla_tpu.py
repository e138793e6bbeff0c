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
* ``TopK`` cannot change layout: its operand and both results share one;
* a convolution (``tpu_conv``) writes, and reads where its operand is not
  already so laid out, its spatial dims most major and its batch/feature
  (kernel: input/output feature) pair minor in the order that pads least;
* a dot writes its batch dims major and its free dims minor in the order that
  pads least, a tie broken by the reduces or batched dots downstream
  (``_downstream``); a batched dot reads each operand likewise; a dot whose
  lhs has several free dims has its own rule (``_flattened_dot``);
* a reduce writes its operand's layout, the reduced dims taken out, and
  never another: its users' layout comes by a copy after it;
* a reshape stays a bitcast: the value it reads is copied, right after the
  nearest transpose, to the layout that makes it one, unless it already is
  one in the tiles; a value whose layout is already fixed upstream is
  followed where that pads no more, else both sides row-major where no
  layout makes it a bitcast (``_reshape``, ``_reshape_operand``);
* inside a gather / scatter fusion formed before the pass, what nothing
  constrains is row-major (``_in_fusion``);
* a reshape writes, and any value nothing constrains takes, the layout that
  pads least (``unconstrained_layout``);
* everything else follows XLA's base pass: transposes become bitcasts, the
  layouts of custom calls with ``operand_layout_constraints`` are honoured.

The generations tested (v4, v5e, v5p, v6e, tpu7x) make the same decisions
for the same module; their earlier passes differ, which a dump already
shows.  ``generation`` is kept so that output and reports say which chip was
meant, and so that a rule that does differ has a place to go.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Iterator

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.model.errors import OptionError
from stablehlo_layout.model.rules import OpRule, rule_for
from stablehlo_layout.targets import tpu_conv, tpu_tiles
from stablehlo_layout.targets.base import Target
from stablehlo_layout.targets.demands import Demand

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Graph, Instruction, Value
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
# The ops whose layouts XLA:TPU decides itself (``backend_demands``).
_DEMANDING = frozenset({"reshape", "convolution", "dot", "dot_general"})
_DOTS = frozenset({"dot", "dot_general"})
# What a tied dot's result is followed through besides layout-keeping ops
# (``_downstream``), and the dots where it stops.
_FOLLOWED = frozenset({"transpose", "reshape"}) | _DOTS


def check_generation(generation: str) -> str:
    """``generation`` (any case: V5E is v5e) when it is one we model; otherwise one OptionError line."""
    if generation.lower() not in GENERATIONS:
        raise OptionError(f"--tpu {generation}: unknown TPU generation (expected one of: "
                          f"{', '.join(GENERATIONS)}; default {DEFAULT_GENERATION})")
    return generation.lower()


class XlaTpuTarget(Target):
    """XLA:TPU for one generation (``--tpu``, default v5e)."""

    name = "xla-tpu"
    inline_calls = True
    uniform_rounds = True
    # TopK's and reduce's rules (``rule``).
    refined_ops = frozenset({"stablehlo.custom_call", "stablehlo.reduce", "mhlo.reduce"})

    def __init__(self, generation: str | None = None) -> None:
        self.generation = check_generation(generation or DEFAULT_GENERATION)
        self.device = self.generation

    def tiling(self, element: str, dims: "Dims", layout: L.Layout, entry: bool = False) -> str:
        """XLA:TPU's tiles (``tpu_tiles.tiles``); none for a type no dump has shown."""
        t = tpu_tiles.tiles(element, tuple(dims), tuple(layout), entry)
        return tpu_tiles.tiles_text(t) if t is not None else ""

    def padded_bytes(self, element: str, dims: "Dims", layout: L.Layout) -> int | None:
        return tpu_tiles.padded_bytes(element, tuple(dims), tuple(layout))  # type: ignore[arg-type]

    def unconstrained_layout(self, g: "Graph", v: "Value") -> L.Layout:
        """A buffer nothing constrained takes the layout that pads least under
        its tiles, as an open entry array does: a free (``auto``) bf16[8,1]
        parameter and the scalar broadcasts beside it come out ``{0,1}`` (on
        the TPU differential's generated programs 70% of the non-trivial
        layouts agree with this rule, 61% without it)."""
        if _in_fusion(g, v):
            return L.default_layout(v.rank)
        lay = tpu_tiles.least_padded(v.element, tuple(v.dims))
        return L.default_layout(v.rank) if lay is None else L.intern(lay)

    def default_entry_layout(self, v: "Value") -> L.Layout:
        lay = tpu_tiles.default_entry_layout(v.element, tuple(v.dims))  # type: ignore[arg-type]
        return L.default_layout(v.rank) if lay is None else L.intern(lay)

    def rule(self, g: "Graph", ins: "Instruction") -> OpRule:
        r = rule_for(ins.op)
        # A reduce writes its operand's layout with the reduced dims taken out
        # when nothing else holds its result (*/reduce_follows_operand; all 194
        # rank >= 2 reduces of the v5e differential's seed 0 do).
        if r.hlo == "reduce" and len(ins.operands) == 2:
            return replace(r, output_from_operand=_reduce_output, siblings=False, forward_mandatory=True)
        # TopK reads its operand in the layout it writes both results in
        # (*/topk_paths, */sort_topk_f32).  Which side XLA:TPU keeps when the
        # operand is computed, not a parameter, is not reproduced (TPU-OBSERVED §5).
        if r.hlo == "custom_call" and ins.attrs.get("target") == _TOPK:
            return replace(r, can_change=False)
        return r

    def backend_demands(self, view: "TargetView", comp: int) -> Iterator[Demand]:
        # Root first: XLA's worklist runs the last-added constraint first, so
        # the instruction nearest the parameters decides where two conflict
        # (*/attention_bf16: the scores' layout runs through the softmax and
        # the P.V dot's operand is copied).  The same instructions every round.
        mine = view.cache("tpu-demanding").get(comp)
        if mine is None:
            mine = view.cache("tpu-demanding")[comp] = _demanding(view, comp)
        decided = view.cache("tpu-reshape-demands")
        dots = view.cache("tpu-dot-demands")
        # What ``_forward_layout`` remembers holds for one computation's demands, asked in this order.
        view.cache("tpu-walks").clear()
        for iid, kind in mine:
            if kind == _RESHAPE:
                # What is fixed upstream when it is asked is the same every
                # round (the demands are uniform): decided once, asked every round.
                made = decided.get(iid)
                if made is None:
                    made = decided[iid] = tuple(self._reshape(view, iid))
            elif kind == _CONV:
                made = tuple(self._convolution(view, iid))
            else:
                # A dot's demands read the graph alone: made once, asked every round.
                made = dots.get(iid)
                if made is None:
                    made = dots[iid] = tuple(self._dot(view, iid))
            yield from made

    def _reshape(self, view: "TargetView", iid: int) -> Iterator[Demand]:
        """A reshape stays a bitcast of the value it reads.  Its result is
        written in the layout that pads least, and the value copied to the
        layout that makes the reshape of it a bitcast, except where that
        value's layout is already fixed upstream by now (``_forward_layout``):
        then, where it is computed from there and a result layout makes the
        reshape of it a bitcast that pads no more, the result takes that one
        (no copy); where none does, result and value are row-major."""
        g = view.graph
        ins = g.instrs[iid]
        out = g.values[ins.results[0]]
        if not out.is_array or out.rank < 2:
            return
        why = ("target:tpu-reshape-result", iid, None,
               "XLA:TPU writes a reshape's result in the layout that pads least under its tiles")
        least = self.unconstrained_layout(g, out)
        made = (Demand.on_results(iid, [least], why),) + _reshape_operand(g, iid, least)
        if len(made) == 1:
            yield from made
            return
        result, operand = made
        why_result, why_operand = result.origin, operand.origin
        assert why_result is not None and why_operand is not None
        src = g.values[ins.operands[0]]
        up = _forward_layout(view, src.id)
        if up is None:
            yield from made
            return
        held, transposed = up
        fwd = L.align_layouts(src.dims, held, out.dims)  # type: ignore[arg-type]  # derivable: an operand demand exists
        lay = result.layouts[0]
        assert lay is not None
        followed = False
        if fwd is None:
            # No layout of the result makes the reshape of this one a bitcast:
            # both sides row-major, the copy before (*/reshape_keeps_minor:
            # f32[12,6,10] {0,1,2} is copied to {2,1,0} for [12,60] {1,0};
            # */reshape_copies_operand: [16,8,32] {2,0,1} for [128,32] {1,0},
            # though {0,1} pads less).
            lay = L.default_layout(out.rank)
            result = Demand.on_results(iid, (lay,), why_result)
            operand = Demand.on_operand(iid, 0, L.default_layout(src.rank), why_operand)
        elif fwd != lay and view.buffer_constraint(src.buffer) is None \
                and tpu_conv.pads(out.element, out.dims, fwd) <= tpu_conv.pads(out.element, out.dims, lay):
            # Computed from what is fixed (not an entry parameter read directly,
            # which is copied to the least-padded result's bitcast instead):
            # the result follows (*/reshape_bitcast: (x * 2).reshape(2, 8, 8)
            # of a column-major f32[16,8] x is [2,8,8] {1,0,2}, copied to the
            # entry result after; */reshape_keeps_minor: s32 likewise).  Not
            # where it would pad more (*/reshape_copies_operand: s8[2,64,32]).
            lay = L.intern(fwd)
            result = Demand.on_results(iid, (lay,), why_result)
            followed = True
        yield result
        # The result followed it, or it is already a bitcast of the result in
        # the tiles too (a size-1 dim placed elsewhere): read as it comes.
        if followed or _moves_nothing(src.element, tuple(src.dims), held, tuple(out.dims), lay):  # type: ignore[arg-type]
            yield Demand.on_operand(iid, 0, held, why_operand)
            return
        # The copy goes after the nearest transpose upstream, which stays a
        # bitcast of what it reads (*/reshape_copies_operand: the transposes
        # of tanh(a) are copied, not a); through elementwise ops alone it
        # goes as far up as the demand reaches.
        if transposed is not None and view.buffer_constraint(g.values[transposed].buffer) is None:
            fixed = _forward_layout(view, transposed)
            if fixed is not None:
                _forget_below(view, transposed)
                yield Demand.on_buffer(g.values[transposed].buffer, fixed[0], why_operand)
        yield operand

    def _dot(self, view: "TargetView", iid: int) -> Iterator[Demand]:
        """A dot writes its result with the batch dims most major and its two
        free dims minor, in the order that pads least (the higher-numbered
        minor on a tie); a batched dot reads each operand likewise: batch dims
        major, its free and contracting dims minor in the order that pads least."""
        g = view.graph
        ins = g.instrs[iid]
        a = ins.attrs
        out = g.values[ins.results[0]]
        if not out.is_array:
            return
        nb = len(a["lhs_batch"])
        # Whether the result has the lhs free dim minor, where the two orders tie.
        swapped = False
        if out.rank - nb == 2:
            r = out.rank
            batch = tuple(range(nb - 1, -1, -1))
            last, other = (r - 1, r - 2) + batch, (r - 2, r - 1) + batch
            lay = tpu_conv.conv_layout(out.element, out.dims, (r - 1, r - 2), tuple(range(nb)))
            if tpu_conv.pads(out.element, out.dims, last) == tpu_conv.pads(out.element, out.dims, other):
                reduces, dots = _downstream(view, out.id, r - 1, r - 2)
                if dots:
                    # Only batched dots read this result: XLA:TPU leaves this dot's
                    # result and operands to propagation (*/dot_chain_ties; a
                    # dot without batch dims downstream does not count, s0/180).
                    return
                swapped = reduces > 0
                lay = other if swapped else last
            why = ("target:tpu-dot-output", iid, None,
                   "XLA:TPU writes a dot's result with the batch dims most major and the two free dims "
                   "minor, in the order that pads least under the (8,128) tiles; on a tie, the free dim "
                   "that more of the reduces downstream reduce is the major one (else the last dim minor)")
            yield Demand.on_results(iid, [L.intern(lay)], why)
        if not nb:
            yield from self._flattened_dot(g, iid)
            return  # otherwise a dot without batch dims reads its operands in whatever layout they come
        for n, batch, contracting in ((0, a["lhs_batch"], a["lhs_contracting"]),
                                      (1, a["rhs_batch"], a["rhs_contracting"])):
            v = g.values[ins.operands[n]]
            rest = [d for d in range(v.rank) if d not in batch]
            if not v.is_array or len(rest) != 2 or len(contracting) != 1:
                continue
            # On a tie one operand is read contracting dim minor, the other
            # last dim minor: the lhs the former unless the result is swapped
            # (*/batched_dot_ties).
            if (n == 0) != swapped:
                c = contracting[0]
                pair = (c, rest[0] if rest[1] == c else rest[1])
            else:
                pair = (rest[1], rest[0])
            lay = tpu_conv.conv_layout(v.element, v.dims, pair, tuple(sorted(batch)))
            why = ("target:tpu-batched-dot-operand", iid, None,
                   "XLA:TPU reads a batched dot's operand with the batch dims most major and the free and "
                   "contracting dims minor, in the order that pads least under the (8,128) tiles (on a "
                   "tie the lhs contracting dim minor and the rhs last dim, the other way round when the "
                   "result has its lhs free dim minor)")
            yield Demand.on_operand(iid, n, L.intern(lay), why)

    def _flattened_dot(self, g: "Graph", iid: int) -> Iterator[Demand]:
        """A dot without batch dims whose lhs has two or more free dims
        (``[b, t, d] x [d, h]``, ``*/dense_dots``): the lhs is read in the
        order that pads least among those whose two minor dims hold its
        contracting dim (the other dims row-major above), the rhs in the
        order of its two dims that pads least; the result has the rhs free
        dim minor and the lhs free dims above it in the lhs's order."""
        ins = g.instrs[iid]
        a = ins.attrs
        lhs, rhs = (g.values[v] for v in ins.operands[:2])
        out = g.values[ins.results[0]]
        if not (lhs.is_array and rhs.is_array and out.is_array) or rhs.rank != 2 or lhs.rank < 3 \
                or len(a["lhs_contracting"]) != 1 or len(a["rhs_contracting"]) != 1 or out.rank != lhs.rank:
            return
        c = a["lhs_contracting"][0]
        lhs_lay = tpu_tiles.least_padded(lhs.element, tuple(lhs.dims), minor_pair_has=c)
        rhs_lay = tpu_tiles.least_padded(rhs.element, tuple(rhs.dims))
        if lhs_lay is None or rhs_lay is None:
            return
        free = [d for d in range(lhs.rank) if d != c]
        # The rhs free dim minor; above it the lhs free dims in the lhs's order, unless
        # another order with the rhs free dim minor pads less.
        follow = (out.rank - 1,) + tuple(free.index(d) for d in lhs_lay if d != c)
        least = tpu_tiles.least_padded(out.element, tuple(out.dims), minor_pair_has=out.rank - 1)
        out_lay = follow if least is None or tpu_conv.pads(out.element, out.dims, follow) <= tpu_conv.pads(
            out.element, out.dims, least) else least
        why = ("target:tpu-flattened-dot", iid, None,
               "XLA:TPU reads the lhs of a dot without batch dims whose lhs has several free dims in the "
               "order that pads least with the contracting dim among the two minor ones, the rhs in the "
               "order that pads least, and writes the rhs free dim minor, the lhs free dims above it as the "
               "lhs has them")
        yield Demand.on_results(iid, [L.intern(out_lay)], why)
        yield Demand.on_operand(iid, 0, L.intern(lhs_lay), why)
        yield Demand.on_operand(iid, 1, L.intern(rhs_lay), why)

    def _convolution(self, view: "TargetView", iid: int) -> Iterator[Demand]:
        """Spatial dims most major (dimension 0 first), the batch/feature (kernel:
        input/output feature) pair minor in the order that pads least
        (``tpu_conv``); an operand already in a layout of that shape is read as
        it comes."""
        g = view.graph
        ins = g.instrs[iid]
        inp, ker = (g.values[v] for v in ins.operands[:2])
        out = g.values[ins.results[0]]
        if not (inp.is_array and ker.is_array and out.is_array):
            return
        (ipair, isp), (kpair, ksp), (opair, osp) = tpu_conv.roles(ins.attrs["conv"], (inp.rank, ker.rank, out.rank))
        lay = tpu_conv.conv_layout(out.element, out.dims, opair, osp)
        why = Origin("target:tpu-conv-output", iid, None,
                     "XLA:TPU writes a convolution's result with the spatial dims most major and batch and "
                     "feature minor, in the order that pads least under the (8,128) tiles (feature minor on a tie)")
        yield Demand.on_results(iid, [L.intern(lay)], why)
        for n, v, pair, sp, what in ((0, inp, ipair, isp, "input (batch and feature minor)"),
                                     (1, ker, kpair, ksp, "kernel (input and output feature minor)")):
            held = _held_layout(view, v.id)
            if held is not None and tpu_conv.fits(held, pair, sp):
                why = Origin("target:tpu-conv-operand-as-is", iid, None,
                             f"XLA:TPU reads a convolution {what} as it comes when its spatial dims are already "
                             "most major in order and the pair minor, in either order")
                yield Demand.on_operand(iid, n, held, why)
                continue
            lay = tpu_conv.conv_layout(v.element, v.dims, pair, sp)
            why = Origin("target:tpu-conv-operand", iid, None,
                         f"XLA:TPU reads a convolution {what} with the spatial dims most major, the pair in "
                         "the order that pads least under the (8,128) tiles")
            yield Demand.on_operand(iid, n, L.intern(lay), why, priority=view.priority - 1)


_RESHAPE, _CONV, _DOT = 0, 1, 2


def _demanding(view: "TargetView", comp: int) -> list[tuple[int, int]]:
    """The instructions of ``comp`` whose layouts XLA:TPU decides itself,
    root first, with their kind: reshapes to an array of rank >= 2,
    convolutions, dots (the others ask for nothing)."""
    g = view.graph
    order = view.post_order(comp)
    mine: list[tuple[int, int]] = []
    for iid, hlo in zip(order, view.hlos_of(order)):
        if hlo not in _DEMANDING:
            continue
        ins = g.instrs[iid]
        if hlo == "reshape":
            out = g.values[ins.results[0]]
            if out.is_array and out.rank >= 2:
                mine.append((iid, _RESHAPE))
        elif hlo == "convolution":
            if "conv" in ins.attrs:
                mine.append((iid, _CONV))
        elif "lhs_batch" in ins.attrs:
            mine.append((iid, _DOT))
    return mine[::-1]


def _downstream(view: "TargetView", vid: int, minor: int, second: int) -> tuple[int, bool]:
    """What ``vid`` (a tied dot's result) reaches through ops that keep their
    operand's layout, reshapes and transposes: (the reduces that reduce dim
    ``minor`` but not ``second``, less those that reduce ``second`` but not
    ``minor``; whether every use it reaches is a batched dot's operand).

    XLA:TPU makes the more often reduced dim of the two the major one, so
    that a reduction runs across rows, not lanes (*/dot_reduce_ties: a
    softmax's max and sum over the last dim give attention scores
    ``{2,3,1,0}``; a result summed over its last dim is written ``{0,1}``
    even where the entry result is ``{1,0}`` and a copy follows).  Without a
    reduce, where only batched dots read it, they decide (``XlaTpuTarget._dot``)."""
    g = view.graph
    values, instrs, rule_of = g.values, g.instrs, view.rule
    votes = dots = others = 0
    seen: set[int] = {vid}
    work: list[tuple[int, dict[int, int]]] = [(vid, {minor: minor, second: second})]
    while work:
        v, where = work.pop()
        value = values[v]
        for user, n in value.uses:
            rule = rule_of(user)
            hlo = rule.hlo
            if hlo == "reduce":
                others += 1
                ins = instrs[user]
                if n * 2 >= ins.operand_count or user in seen:
                    continue
                seen.add(user)
                reduced = ins.attrs["dims"]
                hit = [d for d, at in where.items() if at in reduced]
                if len(hit) == 1:
                    votes += 1 if hit[0] == minor else -1
                continue
            keeps = not rule.can_change and not rule.tuple_operand and not rule.forwards
            if not keeps and hlo not in _FOLLOWED:
                others += 1
                continue
            ins = instrs[user]
            if hlo in _DOTS:
                if ins.attrs.get("lhs_batch"):
                    dots += 1
                else:
                    others += 1
                continue
            results = ins.results
            if len(results) != 1 or hlo in ("root", "parameter"):
                others += 1
                continue
            res = values[results[0]]
            if res.id in seen:
                continue
            if not res.is_array:
                others += 1
                continue
            if hlo == "transpose":
                back = {p: i for i, p in enumerate(ins.attrs["perm"])}
                nxt = {d: back[at] for d, at in where.items()}
            elif hlo == "reshape":
                moved = _surviving_dims(tuple(value.dims), tuple(res.dims))
                nxt = {d: moved[at] for d, at in where.items() if at in moved}
            elif keeps and res.dims == value.dims:
                nxt = where
            else:
                others += 1
                continue
            if nxt:
                seen.add(res.id)
                work.append((res.id, nxt))
            else:
                others += 1
    return votes, dots > 0 and not others


@functools.lru_cache(maxsize=4096)
def _surviving_dims(src: tuple[int, ...], dst: tuple[int, ...]) -> dict[int, int]:
    """The dims of size > 1 a reshape from ``src`` to ``dst`` keeps whole: src dim -> dst dim."""
    before_src = [1]
    for d in src:
        before_src.append(before_src[-1] * d)
    at: dict[tuple[int, int], int] = {}
    before = 1
    for j, d in enumerate(dst):
        at[(before, d)] = j
        before *= d
    return {i: at[(before_src[i], d)] for i, d in enumerate(src) if d > 1 and (before_src[i], d) in at}


def _reduce_output(g: "Graph", ins: "Instruction", n: int, operand: L.Layout, r: int) -> L.Layout | None:
    """A reduce's result in its (array) operand's layout, the reduced dims deleted."""
    src, out = g.values[ins.operands[n]], g.values[ins.results[r]]
    if not (src.is_array and out.is_array) or src.rank != len(operand) or src.rank - out.rank != len(ins.attrs["dims"]):
        return None
    return L.reduce_output_layout(operand, ins.attrs["dims"])


def _reshape_operand(g: "Graph", iid: int, lay: L.Layout) -> tuple[Demand, ...]:
    """XLA:TPU keeps a reshape a bitcast: the value it reads is copied to the
    layout that makes the reshape of it to ``lay`` one (XLA's AlignLayouts),
    and the copy goes between the reshape and that value's producer, not
    further up: a transpose's result (*/reshape_copies_operand: a
    ``{2,0,1}`` f32[16,8,32] transpose copied to ``{2,1,0}`` before it is
    reshaped to [128,32]), a custom call's fixed result
    (``InvertDiagBlocksLowerTriangular``'s f32[1,2,2] ``{1,2,0}``,
    */reshape_of_custom_call).  In the v5e differential's seed 0, 826 of the
    860 reshapes that can be bitcasts are."""
    ins = g.instrs[iid]
    src, out = g.values[ins.operands[0]], g.values[ins.results[0]]
    if not src.is_array or not L.reshape_derivable(src.dims, out.dims):
        return ()
    back = L.align_layouts(out.dims, lay, src.dims)  # type: ignore[arg-type]
    if back is None:
        return ()
    why = ("target:tpu-reshape-operand", iid, None,
           "XLA:TPU keeps a reshape a bitcast: the value it reads is copied to the layout that makes it one")
    return (Demand.on_operand(iid, 0, L.intern(back), why),)


def _moves_nothing(element: str, src: tuple[int, ...], src_lay: L.Layout, dst: tuple[int, ...],
                   dst_lay: L.Layout) -> bool:
    """Whether XLA:TPU reshapes ``src`` laid out ``src_lay`` to ``dst`` laid out
    ``dst_lay`` without a copy: both row-major, or a bitcast of the elements
    whose two minor (tiled) dims and tiles are the same on both sides.
    bf16[2,4,1,16] ``{3,1,2,0}`` to [2,4,16] ``{2,1,0}`` (T(4,128) both) is
    not copied (*/reshape_bitcast); f32[1,6,16] ``{2,0,1}`` (T(1,128)) to
    [6,16] ``{1,0}`` (T(8,128)) is, before the layer norm that reads it (the
    TPU differential's models/haiku_attention_one_head_train)."""
    if src_lay == L.default_layout(len(src)) and dst_lay == L.default_layout(len(dst)):
        return True
    if len(src) < 2 or len(dst) < 2 or not L.reshape_is_bitcast(src, src_lay, dst, dst_lay):
        return False
    if (src[src_lay[0]], src[src_lay[1]]) != (dst[dst_lay[0]], dst[dst_lay[1]]):
        return False
    return tpu_tiles.tiles(element, src, tuple(src_lay)) == tpu_tiles.tiles(element, dst, tuple(dst_lay))


def _forward_layout(view: "TargetView", vid: int, depth: int = 8) -> tuple[L.Layout, int | None] | None:
    """The layout ``vid`` takes from what is already fixed upstream: its
    buffer's constraint, else its producer's operand's through ops that keep
    their operand's layout and through transposes (bitcasts, whose result's
    layout follows), the first fixed one depth first, at most ``depth`` ops
    up; with the value the transpose nearest ``vid`` on the way writes (None
    if none).  None when nothing upstream is fixed yet.

    Nearly every walk finds nothing, so how far up nothing was found is
    remembered for one computation's demands.  That stays true while the
    target asks: it asks root first, so the results its later demands fix
    are never upstream of a value it has walked from; only the transposes it
    pins may be (``_forget_below`` forgets what a pin changes)."""
    return _walk(view, vid, depth, view.cache("tpu-walks"), view.cache("tpu-upstream"))


def _forget_below(view: "TargetView", vid: int, depth: int = 8) -> None:
    """``vid`` is about to be pinned: forget that nothing was found above
    the values within ``depth`` ops below it that ``_walk`` reads it from."""
    unfixed, upstream = view.cache("tpu-walks"), view.cache("tpu-upstream")
    g = view.graph
    todo = [(vid, depth)]
    while todo:
        v, d = todo.pop()
        unfixed.pop(v, None)
        if d == 0:
            continue
        for user, _ in g.values[v].uses:
            results = g.instrs[user].results
            if len(results) != 1:
                continue
            r = results[0]
            up = upstream.get(r)
            if up is None:
                up = upstream[r] = _upstream(view, r)
            if v in up[2]:
                todo.append((r, d - 1))


def _walk(view: "TargetView", vid: int, depth: int, unfixed: dict, upstream: dict) -> \
        tuple[L.Layout, int | None] | None:
    if unfixed.get(vid, -1) >= depth:
        return None
    got = upstream.get(vid)
    if got is None:
        got = upstream[vid] = _upstream(view, vid)
    buffer, perm, above = got
    lay = view.buffer_layout(buffer)
    if lay is not None:
        return lay, None
    if depth > 0:
        for o in above:
            up = _walk(view, o, depth - 1, unfixed, upstream)
            if up is not None:
                if perm is None:
                    return up
                return L.intern(L.transpose_output_layout(perm, up[0])), vid
    unfixed[vid] = depth
    return None


def _upstream(view: "TargetView", vid: int) -> tuple[int, tuple[int, ...] | None, tuple[int, ...]]:
    """What ``_forward_layout`` reads at ``vid``, the graph's alone: its
    buffer, the permutation of the transpose that writes it (None if none),
    and the values above it that its layout follows."""
    g = view.graph
    v = g.values[vid]
    ins = g.instrs[v.producer]
    perm: tuple[int, ...] | None = None
    above: tuple[int, ...] = ()
    if ins.op not in ("parameter", "root") and len(ins.results) == 1:
        rule = view.rule(ins.id)
        if rule.hlo == "transpose":
            perm, above = tuple(ins.attrs["perm"]), (ins.operands[0],)
        elif not (rule.can_change or rule.tuple_operand or rule.forwards):
            dims = v.dims
            values = g.values
            above = tuple(o for o in ins.operands if (ov := values[o]).is_array and ov.dims == dims)
    return v.buffer, perm, above


def _in_fusion(g: "Graph", v: "Value") -> bool:
    """Whether ``v`` is computed inside a fusion the BEFORE module already has
    (XLA:TPU's ``gather_custom_fusion`` / ``scatter_custom_fusion``): the pass
    leaves what nothing constrains there row-major (``*/embedding_grad_f32``;
    of the 1000 instructions in such fusions in the v5e differential's seed 0,
    all but those that follow a fusion parameter are row-major)."""
    comp = g.comps[g.instrs[v.producer].comp]
    while comp.caller is not None:
        caller = g.instrs[comp.caller]
        if caller.op == "mhlo.fusion":
            return True
        comp = g.comps[caller.comp]
    return False


def _held_layout(view: "TargetView", vid: int, depth: int = 8) -> L.Layout | None:
    """The layout ``vid`` is already held to (its buffer's constraint), looking
    up through ops that keep their operands' layout (elementwise ops); None
    when nothing holds it yet."""
    g = view.graph
    v = g.values[vid]
    held = view.buffer_constraint(v.buffer)
    if held is not None:
        return held.layout
    ins = g.instrs[v.producer]
    if depth == 0 or ins.op in ("parameter", "root") or view.rule(ins.id).can_change:
        return None
    for o in ins.operands:
        ov = g.values[o]
        if ov.is_array and ov.rank == v.rank:
            lay = _held_layout(view, o, depth - 1)
            if lay is not None:
                return lay
    return None


def _last_dim_major(rank: int) -> L.Layout:
    """The last dim most major, the others row-major below it: ``{0,1}`` in rank 2."""
    return L.intern(tuple(range(rank - 2, -1, -1)) + (rank - 1,))
