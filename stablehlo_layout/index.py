"""The graph handed to the compiled core: one walk into its flat arrays.

The core (``cpp/``, module ``stablehlo_layout._core``) keeps the program as
struct-of-arrays keyed by our integer ids; this is the one place that fills
them from a ``Graph``.  Rows (a value's tuple elements, an instruction's
operands, ...) travel as a ``start`` list and an ``items`` list: row ``i`` is
``items[start[i]:start[i + 1]]``.
"""

from __future__ import annotations

from itertools import accumulate, chain, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Callable, Sequence

from . import _core
from .graph import Graph
from .rules import OpRule, _reshape_back, _reshape_fwd, _transpose_back, _transpose_fwd, broadcast_operand

if TYPE_CHECKING:
    from .targets.base import Target


def _rows(rows: list[Sequence[int]]) -> tuple[list[int], list[int]]:
    # map / chain / accumulate keep the per-row work in C: this runs over every op.
    return [0, *accumulate(map(len, rows))], list(chain.from_iterable(rows))


def _field(name: str, items: Sequence[object]) -> list:
    return list(map(attrgetter(name), items))


def build_index(g: Graph, rules: Sequence[OpRule]) -> _core.Index:
    """The core's view of ``g``; ``rules`` (per instruction, the target's) say which ops are whiles."""
    assert g.entry is not None
    values, instrs, comps = g.values, g.instrs, g.comps
    given = _field("elements", values)  # None for an array value, its leaves for a tuple
    elements = [() if e is None else e for e in given]
    return _core.Index(
        _field("producer", values),
        [e is not None for e in given],
        list(map(bool, _field("uses", values))),  # captures count: the importer records them as uses
        *_rows(elements),
        _field("comp", instrs),
        [op == "root" for op in _field("op", instrs)],
        [hlo == "while" for hlo in _field("hlo", rules)],
        *_rows(_field("operands", instrs)),
        *_rows(_field("results", instrs)),
        *_rows(_field("callees", instrs)),
        _field("root", comps),
        [kind == "func" for kind in _field("kind", comps)],
        *_rows(_field("instrs", comps)),
        g.entry,
    )


# The core's codes (cpp/facts.h): the HLO opcodes its propagators single out,
# the op rule's answers as bits, and the kinds of instructions and computations.
_HLO = {"while": 1, "reduce": 2, "all_reduce": 3, "concatenate": 4, "dynamic_update_slice": 5,
        "reshape": 6, "dynamic_slice": 7, "bitcast_convert": 8}
_KIND = {"root": 1, "parameter": 2}
_COMP_KIND = {"func": 0, "body": 1, "cond": 2, "branch": 3, "apply": 4}
_BACK_NONE, _BACK_TRANSPOSE, _BACK_BROADCAST, _BACK_ASK_RULE, _BACK_ASK_TARGET, _BACK_RESHAPE = range(6)
_FWD_NONE, _FWD_TRANSPOSE, _FWD_ASK_TARGET, _FWD_RESHAPE = range(4)


def _bits(rule: OpRule) -> int:
    return (rule.can_change | rule.tuple_operand << 1 | rule.broadcast << 2 | rule.forwards << 3
            | rule.always_forward << 4 | rule.always_backward << 5 | rule.to_siblings << 6 | rule.dfs << 7)


def _derivations(rule: OpRule, target: "Target") -> tuple[int, int]:
    """How the core derives across an op of this rule: natively where the rule is
    a built-in one and the target keeps the base derivations, else by asking Python."""
    from .targets.base import Target

    own_back = type(target).operand_from_output is not Target.operand_from_output
    own_fwd = type(target).output_from_operand is not Target.output_from_operand
    back_fn, fwd_fn = rule.operand_from_output, rule.output_from_operand
    if rule.broadcast:
        back = _BACK_BROADCAST if back_fn is broadcast_operand else _BACK_ASK_RULE
    elif own_back:
        back = _BACK_ASK_TARGET
    elif back_fn is None:
        back = _BACK_NONE
    elif back_fn is _transpose_back and rule.hlo == "transpose":
        back = _BACK_TRANSPOSE
    elif back_fn is _reshape_back and rule.hlo == "reshape":
        back = _BACK_RESHAPE
    else:
        back = _BACK_ASK_TARGET
    if own_fwd:
        fwd = _FWD_ASK_TARGET
    elif fwd_fn is None:
        fwd = _FWD_NONE
    elif fwd_fn is _transpose_fwd and rule.hlo == "transpose":
        fwd = _FWD_TRANSPOSE
    elif fwd_fn is _reshape_fwd and rule.hlo == "reshape":
        fwd = _FWD_RESHAPE
    else:
        fwd = _FWD_ASK_TARGET
    return back, fwd


def build_engine(g: Graph, index: _core.Index, rules: Sequence[OpRule], target: "Target", active: Sequence[bool],
                 exact: bool, tracing: bool, derive_operand: Callable, derive_output: Callable,
                 rule_operand: Callable) -> _core.Engine:
    """The core's engine over ``index``, with what its propagators read of ``g`` and the rules.

    The three callables are the target's derivations the core cannot make
    itself (see ``_derivations``)."""
    values, instrs, comps = g.values, g.instrs, g.comps
    dims = [d if None not in d else tuple(-1 if x is None else x for x in d) for d in _field("dims", values)]
    uses = _field("uses", values)
    flat_uses = list(chain.from_iterable(chain.from_iterable(uses)))
    # A target may refine rules per instruction, but most share a few objects:
    # the codes are made once per distinct rule, then looked up in C (map).
    ids = list(map(id, rules))
    hlo_of, bits_of, back_of, fwd_of, attr_of = {}, {}, {}, {}, {}
    for i, rule in dict(zip(ids, rules)).items():
        hlo_of[i], bits_of[i] = _HLO.get(rule.hlo, 0), _bits(rule)
        back_of[i], fwd_of[i] = _derivations(rule, target)
        # The attribute the core reads for it: a permutation, broadcast dims, a concatenate's dim.
        if back_of[i] == _BACK_TRANSPOSE or fwd_of[i] == _FWD_TRANSPOSE:
            attr_of[i] = "perm"
        elif back_of[i] == _BACK_BROADCAST:
            attr_of[i] = "dims"
        elif hlo_of[i] == _HLO["concatenate"]:
            attr_of[i] = "dim"
    hlo, bits, back, fwd = (list(map(m.__getitem__, ids)) for m in (hlo_of, bits_of, back_of, fwd_of))
    attrs = _field("attrs", instrs)
    n = len(instrs)
    perm: list[Sequence[int]] = [()] * n
    dim = [0] * n
    if attr_of:
        for k, name in enumerate(map(attr_of.get, ids)):
            if name == "dim":
                dim[k] = attrs[k]["dim"]
            elif name is not None:
                perm[k] = attrs[k][name]
    constrained = [False] * n
    aliases: list[Sequence[int]] = [()] * n
    for k, a in enumerate(attrs):
        if a and ("aliases" in a or "layout_constrained" in a):
            constrained[k] = bool(a.get("layout_constrained"))
            aliases[k] = list(chain.from_iterable(a.get("aliases", ())))
    return _core.Engine(
        index,
        _field("is_array", values),
        _field("rank", values),
        _field("buffer", values),
        *_rows(dims),
        [0, *accumulate(map(len, uses))],
        flat_uses[0::2],
        flat_uses[1::2],
        list(map(_KIND.get, _field("op", instrs), repeat(0))),
        hlo, bits, back, fwd,
        list(active),
        constrained,
        dim,
        *_rows(_field("captures", instrs)),
        *_rows(aliases),
        *_rows(perm),
        [_COMP_KIND[k] for k in _field("kind", comps)],
        [-1 if c is None else c for c in _field("caller", comps)],
        *_rows(_field("params", comps)),
        exact, tracing, derive_operand, derive_output, rule_operand,
    )
