"""What a target may read while it makes its demands: a read-only view of the program.

A target's ``backend_demands(view, comp)`` gets one ``TargetView`` per
engine run; it reads the program and the engine's facts about it here and
answers with ``Demand`` objects (``demands.py``).  Nothing in the view can
change the engine: it has no setters, its attributes cannot be set, it hands
out tuples and snapshots, and the constraint tables it reads are held as
read-only mappings.  (The ``Graph`` and its values are the program itself,
which every hook already receives; a target reads them, never writes them.)

What each part is for:

* ``graph``, ``rule``, ``instructions_of``, ``hlos_of``, ``leaves``, ``operand_values``,
  ``forwards``, ``post_order``: the program as the engine sees it: the
  per-op rule the target itself refined, the instructions of given HLO ops and
  the HLO op of each of a batch of instructions, XLA's result leaves (tuples flattened), every
  operand value (implicit captures last), whether an op forwards its operand
  buffers, and XLA's post-order (XLA:GPU walks it backwards, users first).
* ``given_params``: the entry layouts the input pinned (None: left open);
  XLA:GPU's ChainEndsWithAutoLayout asks whether a dot's operand comes from
  an entry parameter whose layout nobody gave.
* ``priority``: the priority of the round being run.
* ``operand_constraint`` / ``buffer_constraint``: the constraint store, as
  it stands when the target asks (demands the target made earlier in the
  same call included, since the engine applies each demand before it asks
  for the next).  XLA:GPU's SetDotLayout reads the operand layout a user of
  the dot already has (``constraints->OperandLayout(user, i)``); XLA 0.12's
  loop step reads a while's operand constraint and the buffer constraint of
  its producer (PropagateUseConstraintToDefs).
* ``cache``: per-run scratch space for the target's own derived facts
  (XLA:CPU keeps its per-computation plan here, the same every round).  The
  engine never reads it and empties it when the run ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress, count
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Sequence

from stablehlo_layout.model.layout import Layout

if TYPE_CHECKING:
    from _typeshed import SupportsGetItem, SupportsKeysAndGetItem

    from stablehlo_layout.model.constraints import BufferConstraint, OperandConstraint, Origin
    from stablehlo_layout.model.graph import Graph, Value
    from stablehlo_layout.model.rules import OpRule


@dataclass(frozen=True, slots=True)
class HeldLayout:
    """A constraint as it stands: its layout, strength and provenance (a snapshot)."""

    layout: Layout
    mandatory: bool
    dfs: bool
    priority: int
    # The constraint's Origin (or the raw tuple of a run nobody explains): a
    # target that derives a demand from it names it as the demand's parent.
    origin: "Origin | tuple"


_EMPTY: Mapping = MappingProxyType({})


class TargetView:
    """The program and the engine's facts about it, read-only (see the module docstring)."""

    __slots__ = ("_graph", "_rules", "_distinct", "_rule_of", "_leaves", "_op_values", "_post_order",
                 "_given_params", "_priority", "_buffers", "_operands", "_cache")
    _graph: Graph
    _rules: tuple[OpRule, ...]
    _distinct: tuple[OpRule, ...]
    _rule_of: Sequence[int]
    _leaves: Sequence[Sequence[int]]
    _op_values: SupportsGetItem[int, Sequence[Value]]
    _post_order: Callable[[int], Sequence[int]]
    _given_params: tuple[Layout | None, ...]
    _priority: int
    _buffers: Mapping[int, BufferConstraint]
    _operands: Mapping[tuple[int, int], OperandConstraint]
    _cache: dict[str, dict[Any, Any]]

    def __init__(self, graph: "Graph", rules: Sequence["OpRule"], leaves: Sequence[Sequence[int]],
                 op_values: SupportsGetItem[int, Sequence["Value"]],
                 post_order: Callable[[int], Sequence[int]], given_params: Sequence[Layout | None],
                 distinct: Sequence["OpRule"] | None = None, rule_of: Sequence[int] | None = None) -> None:
        """``distinct`` and ``rule_of``: the few distinct rules and each instruction's
        number among them (``rules[i] is distinct[rule_of[i]]``), where the engine has them."""
        put = object.__setattr__
        put(self, "_graph", graph)
        put(self, "_rules", tuple(rules))
        if distinct is None or rule_of is None:
            distinct, rule_of = self._rules, range(len(self._rules))
        put(self, "_distinct", tuple(distinct))
        put(self, "_rule_of", rule_of)
        # Kept as given (the engine's is a read-only view of the graph's rows,
        # a tuple of them would be a list per instruction); handed out as tuples.
        put(self, "_leaves", leaves)
        # The engine builds operand rows when first asked (most instructions
        # never are); the view hands out copies of them, never the rows.
        put(self, "_op_values", op_values)
        put(self, "_post_order", post_order)
        put(self, "_given_params", tuple(given_params))
        put(self, "_priority", 0)
        put(self, "_buffers", _EMPTY)
        put(self, "_operands", _EMPTY)
        put(self, "_cache", {})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a TargetView is read-only (cannot set {name!r}); a target returns Demands instead")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a TargetView is read-only (cannot delete {name!r})")

    def _at(self, priority: int, buffers: SupportsKeysAndGetItem[int, "BufferConstraint"],
            operands: SupportsKeysAndGetItem[tuple[int, int], "OperandConstraint"]) -> None:
        """The engine's one way in: the round's priority and constraint tables, before each call."""
        put = object.__setattr__
        put(self, "_priority", priority)
        put(self, "_buffers", MappingProxyType(buffers))
        put(self, "_operands", MappingProxyType(operands))

    def _end_run(self) -> None:
        """The engine's way out: the run is over, the target's scratch goes.

        What a target keeps there (XLA:CPU's plans) points back at this view,
        and through it at the graph and the constraint tables: a cycle only
        the collector, which the pass holds off, would free.  Emptied here,
        the view and all it reads go when the engine's state does.
        """
        self._cache.clear()

    # -- the program --------------------------------------------------------------
    @property
    def graph(self) -> "Graph":
        return self._graph

    def rule(self, iid: int) -> "OpRule":
        """The op's rule as the target refined it (``Target.rule``)."""
        return self._rules[iid]

    def instructions_of(self, hlos: Collection[str]) -> tuple[int, ...]:
        """Every instruction whose rule's ``hlo`` is one of ``hlos``, in id order.

        One scan in C over the instructions' rule numbers, the question asked
        once per distinct rule: a target that singles out a few kinds of op
        need not visit the others.
        """
        wanted = [r.hlo in hlos for r in self._distinct]
        return tuple(compress(count(), map(wanted.__getitem__, self._rule_of)))

    def hlos_of(self, instrs: Sequence[int]) -> tuple[str, ...]:
        """The ``hlo`` of each instruction's rule, in the order given (one C loop, no call per instruction)."""
        hlo = [r.hlo for r in self._distinct]
        return tuple(map(hlo.__getitem__, map(self._rule_of.__getitem__, instrs)))

    def leaves(self, iid: int) -> tuple[int, ...]:
        """The result values of ``iid`` as XLA's shape indices, tuples flattened."""
        return tuple(self._leaves[iid])

    def operand_values(self, iid: int) -> tuple["Value", ...]:
        """Every operand value of ``iid``, implicit captures last."""
        return tuple(self._op_values[iid])

    def forwards(self, iid: int) -> bool:
        """Whether ``iid`` forwards its first operands' buffers as its results (nothing to choose there)."""
        return self._rules[iid].forwards

    def post_order(self, comp: int) -> tuple[int, ...]:
        """The instructions of ``comp`` in XLA's post-order: operands first, left to right."""
        return tuple(self._post_order(comp))

    @property
    def given_params(self) -> tuple[Layout | None, ...]:
        """The entry parameters' layouts as the input gave them; None where it left one open."""
        return self._given_params

    @property
    def priority(self) -> int:
        """The priority of the round being run (a demand with ``priority=None`` gets it)."""
        return self._priority

    # -- the constraint store, as it stands -----------------------------------------
    def operand_constraint(self, iid: int, n: int) -> HeldLayout | None:
        """The layout operand ``n`` of ``iid`` is constrained to now, if any."""
        c = self._operands.get((iid, n))
        return None if c is None else HeldLayout(c.layout, c.mandatory, c.dfs, c.priority, c.origin)

    def buffer_constraint(self, buffer: int) -> HeldLayout | None:
        """The layout the buffer ``buffer`` (a value id) is constrained to now, if any."""
        c = self._buffers.get(buffer)
        return None if c is None else HeldLayout(c.layout, c.mandatory, c.dfs, c.priority, c.origin)

    def buffer_layout(self, buffer: int) -> Layout | None:
        """Just the layout of ``buffer_constraint``: for a target that reads many buffers."""
        c = self._buffers.get(buffer)
        return None if c is None else c.layout

    # -- the target's own per-run facts ------------------------------------------------
    def cache(self, name: str) -> dict[Any, Any]:
        """A dict the target may fill with facts it derived, kept for this run only."""
        return self._cache.setdefault(name, {})
