"""The engine's one seam to the compiled core: the graph handed over, and the calls into it.

The core (``cpp/``, module ``stablehlo_layout._core``) keeps the program as
struct-of-arrays keyed by our integer ids.  The importer fills those arrays
(``graph.Columns``) while it makes each value and instruction; this is the
one place that hands them to the core, with what only the target's rules
decide (whiles, rule bits, derivations).  Small rows (a computation's
parameters) travel as a ``start`` array and an ``items`` array: row ``i`` is
``items[start[i]:start[i + 1]]``.

The rest of the engine reaches the core through this module alone: the
program (``build_index``), the store and propagators (``build_engine``, whose
object the state drives), and the per-computation calls below.  Each looks
its core function up when called, so that a test can stand another in.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import attrgetter
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from stablehlo_layout import _core
from stablehlo_layout.model.graph import INSTR_KIND, Graph, packed_array
from stablehlo_layout.model.rules import (
    OpRule,
    _reshape_back,
    _reshape_fwd,
    _transpose_back,
    _transpose_fwd,
    broadcast_operand,
)

if TYPE_CHECKING:
    from stablehlo_layout.targets.base import Target


def _rows(rows: list[Sequence[int]]) -> tuple[array, array]:
    # map / chain / accumulate keep the per-row work in C.
    return array("i", [0, *accumulate(map(len, rows))]), array("i", chain.from_iterable(rows))


def _ids(items: Iterable[int]) -> array:
    return array("i", items)


def _field(name: str, items: Sequence[object]) -> list:
    return list(map(attrgetter(name), items))


@dataclass(slots=True)
class RuleTable:
    """Each instruction's op rule, as the few distinct rules and each
    instruction's number among them: what the core reads of a rule is worked
    out once per distinct rule, and the core looks it up per instruction."""

    distinct: list[OpRule]
    of: Sequence[int]  # per instruction

    @classmethod
    def of_rules(cls, rules: Sequence[OpRule]) -> "RuleTable":
        """For rules a target refined per instruction (most are still shared objects)."""
        number: dict[int, int] = {}
        distinct: list[OpRule] = []
        for r in rules:
            if id(r) not in number:
                number[id(r)] = len(distinct)
                distinct.append(r)
        return cls(distinct, list(map(number.__getitem__, map(id, rules))))

    def per_instruction(self, fact: Callable[[OpRule], object]) -> list:
        by_rule = [fact(r) for r in self.distinct]
        return list(map(by_rule.__getitem__, self.of))


def build_index(g: Graph, rules: RuleTable) -> _core.Index:
    """The core's view of ``g``; ``rules`` (per instruction, the target's) say which ops are whiles."""
    assert g.entry is not None
    c, comps = g.columns, g.comps
    reorder_start, reorder_users, reorder_operands = array("i", [0]), array("i"), array("i")
    for v in c.reordered:
        uses = g.values[v].uses
        reorder_users.extend(u for u, _ in uses)
        reorder_operands.extend(n for _, n in uses)
        reorder_start.append(len(reorder_users))
    kind_of_op = [INSTR_KIND.get(name, 0) for name in c.op_names]
    return _core.Index(
        _ids(c.producer), _ids(c.element_owner), _ids(c.element_item), _ids(c.comp),
        array("B", map(kind_of_op.__getitem__, c.op)),
        array("B", [r.hlo == "while" for r in rules.distinct]), _ids(rules.of),
        _ids(c.op_start), _ids(c.op_items), _ids(c.callee_owner), _ids(c.callee_item),
        _ids(c.capture_owner), _ids(c.capture_item),
        _ids(_field("root", comps)),
        array("B", [kind == "func" for kind in _field("kind", comps)]),
        *_rows(_field("params", comps)),
        _ids(c.reordered), reorder_start, reorder_users, reorder_operands,
        g.entry,
    )


# The core's codes (cpp/engine/facts.h): the HLO opcodes its propagators single out,
# the op rule's answers as bits, and the kinds of instructions and computations.
_HLO = {"while": 1, "reduce": 2, "all_reduce": 3, "concatenate": 4, "dynamic_update_slice": 5,
        "reshape": 6, "dynamic_slice": 7, "bitcast_convert": 8}
_COMP_KIND = {"func": 0, "body": 1, "cond": 2, "branch": 3, "apply": 4}
_BACK_NONE, _BACK_TRANSPOSE, _BACK_BROADCAST, _BACK_ASK_RULE, _BACK_ASK_TARGET, _BACK_RESHAPE = range(6)
_FWD_NONE, _FWD_TRANSPOSE, _FWD_ASK_TARGET, _FWD_RESHAPE = range(4)


def _bits(rule: OpRule) -> int:
    return (rule.can_change | rule.tuple_operand << 1 | rule.broadcast << 2 | rule.forwards << 3
            | rule.always_forward << 4 | rule.always_backward << 5 | rule.to_siblings << 6 | rule.dfs << 7)


def _derivations(rule: OpRule, target: "Target") -> tuple[int, int]:
    """How the core derives across an op of this rule: natively where the rule is
    a built-in one and the target keeps the base derivations, else by asking Python."""
    from stablehlo_layout.targets.base import Target

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


def build_engine(g: Graph, index: _core.Index, rules: RuleTable, target: "Target", active: Sequence[int],
                 exact: bool, tracing: bool, derive_operand: Callable, derive_output: Callable,
                 rule_operand: Callable, provenance: bool = True) -> _core.Engine:
    """The core's engine over ``index``, with what its propagators read of ``g`` and the rules.

    The three callables are the target's derivations the core cannot make
    itself (see ``_derivations``).  Without ``provenance`` the core's own
    records are not kept (``cpp/engine/provenance.h``): constraints it derived
    read back with an "unrecorded" origin."""
    c, comps = g.columns, g.comps
    hlo, bits, back, fwd, attr_of = array("B"), array("H"), array("B"), array("B"), []
    for rule in rules.distinct:
        h, b = _HLO.get(rule.hlo, 0), _bits(rule)
        bk, fw = _derivations(rule, target)
        hlo.append(h)
        bits.append(b)
        back.append(bk)
        fwd.append(fw)
        # The attribute the core reads for it: a permutation, broadcast dims, a concatenate's dim.
        attr_of.append("perm" if bk == _BACK_TRANSPOSE or fw == _FWD_TRANSPOSE else "dims" if bk == _BACK_BROADCAST
                       else "dim" if h == _HLO["concatenate"] else None)
    # The sparse facts, read from the few instructions with such attributes (the importer lists them).
    dim_owner, dim_item, perm_owner, perm_item = array("i"), array("i"), array("i"), array("i")
    constrained, alias_owner, alias_item = array("i"), array("i"), array("i")
    rule_of = rules.of
    for k in c.attributed:
        a = c.attrs[k]
        name = attr_of[rule_of[k]]
        if name == "dim":
            dim_owner.append(k)
            dim_item.append(a["dim"])
        elif name is not None:
            row = a[name]
            perm_owner.extend([k] * len(row))
            perm_item.extend(row)
        if a.get("layout_constrained"):
            constrained.append(k)
        aliases = a.get("aliases")
        if aliases:
            flat = list(chain.from_iterable(aliases))
            alias_owner.extend([k] * len(flat))
            alias_item.extend(flat)
    return _core.Engine(
        index,
        _ids(c.shape), array("B", c.shape_is_array), _ids(c.shape_start), array("q", c.shape_items),
        _ids(c.buffer_value), _ids(c.buffer_item),
        hlo, bits, back, fwd,
        array("B", active),
        constrained, dim_owner, dim_item, alias_owner, alias_item, perm_owner, perm_item,
        array("B", [_COMP_KIND[k] for k in _field("kind", comps)]),
        array("i", [-1 if x is None else x for x in _field("caller", comps)]),
        exact, tracing, provenance, derive_operand, derive_output, rule_operand,
    )


# A demand the core refused (a layout of the wrong rank, a non-array value):
# the state turns it into a PassError naming the value or operand.
DemandError = _core.DemandError
# The rule names the core's provenance records use, by number (``records.py``).
RULE_NAMES: tuple[str, ...] = tuple(_core.RULE_NAMES)


def number_buffers(index: _core.Index, order: list[int], skip: list[bool]) -> array:
    """XLA's buffer ids per value (``order``: the computations, ``skip``: per computation).

    An array('q'): a run keeps it until the defaults are planned, and as a list
    of ints it cost ~40 bytes a value (7 MB at 170k values) where this costs 8."""
    return packed_array("q", index.number_buffers(order, skip))


def default_buffers(core: _core.Engine, order_key: array, comps: list[int]) -> tuple[array, array]:
    """Per computation, its buffers in the default loop's order (as start / items rows, int32
    arrays: the computations' slices of them are kept for the whole run)."""
    start, items = _core.default_buffers(core, order_key, comps)
    return packed_array("i", start), packed_array("i", items)


def pin_parameters(core: _core.Engine, params: list[int], layouts: list[int], notes: list[int], rule: int,
                   priority: int) -> None:
    """Pin a computation's parameters to the interface's layouts (XLA's step 1), in one call."""
    _core.pin_parameters(core, params, layouts, notes, rule, priority)


def interface_of(core: _core.Engine, comp: int) -> tuple[list[int], list[int]]:
    """A computation's parameter and result layouts (layout ids) as the store holds them now."""
    return _core.interface_of(core, comp)


def layout_count(core: _core.Engine) -> int:
    """How many layouts the core has interned."""
    return _core.layout_count(core)


def lay_out_one_layout_run(core: _core.Engine,
                           comps: list[int]) -> tuple[tuple[list[int], list[int]], tuple[list[int], list[int]]]:
    """Lay out consecutive one-layout computations in one call; their interfaces come back."""
    return _core.lay_out_one_layout_run(core, comps)
