"""The three constraint kinds and their provenance, as Python reads them.

Priorities follow XLA: a fallback computation layout sits at -2, the pass's
own demands start at 0 and rise by one per round, and a layout the caller
gave for the entry computation enters at 3.

Provenance: a constraint changes in place (as XLA's do), so what it *was*
when it caused something else is kept in an immutable ``Origin`` — the
rule that set it, what it set, and the ``Origin`` of the constraint it was
derived from.  Following ``parent`` links walks from any decision back to
its source, and the chain can never loop.  The core (cpp/engine/provenance.*) keeps
these as records; ``records.py`` builds the objects when they are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from stablehlo_layout.model.layout import Layout

DEFAULT_PRIORITY = -2
BEGINNING_PRIORITY = 0
GIVEN_PRIORITY = 3
NUMBER_OF_ROUNDS = 2
# XLA's overwrite rules (BufferLayoutConstraint::UpdateLayout, the operand
# first-writer rule, the two-change history limit) live in the core's store,
# cpp/engine/store.cpp: the classes here are what Python reads back from it.

BUFFER, OPERAND, RESULT = "buffer", "operand", "result"


@dataclass(slots=True)
class Origin:
    """Why a constraint holds what it holds.

    Made by the rule that fires (``rule``: "entry-parameter",
    "transpose-bitcast", "target:cpu-row-major-operand", ...; ``instr``: the
    instruction whose rule it is; ``parent``: the Origin of the constraint
    being propagated; ``note``: words for a reader).  When a constraint takes
    it, ``attached`` returns a copy that also records what was set — kind,
    target, layout, priority, flags, round and the layout it replaced.
    """

    rule: str
    instr: int | None = None
    parent: "Origin | None" = None
    note: str = ""
    kind: str = ""
    target: tuple[int, ...] = ()
    layout: tuple = ()
    priority: int = 0
    mandatory: bool = False
    dfs: bool = False
    round: int = 0
    was: Layout | None = None

    def attached(self, kind: str, target: tuple[int, ...], layout: tuple, priority: int,
                 mandatory: bool, dfs: bool, round_: int, was: Layout | None = None) -> "Origin":
        if not self.kind:
            # Fresh from its rule and not yet a fact: fill it in rather than copy.
            self.kind, self.target, self.layout, self.priority = kind, target, layout, priority
            self.mandatory, self.dfs, self.round, self.was = mandatory, dfs, round_, was
            return self
        return Origin(self.rule, self.instr, self.parent, self.note, kind, target, layout,
                      priority, mandatory, dfs, round_, was)

    def source(self) -> "Origin":
        node = self
        while node.parent is not None:
            node = node.parent
        return node


@dataclass(slots=True, eq=False)
class Constraint:
    layout: Layout
    mandatory: bool
    dfs: bool
    priority: int
    origin: Origin
    round: int

    kind = "constraint"


@dataclass(slots=True, eq=False)
class BufferConstraint(Constraint):
    """Where a value is produced: the layout of the buffer ``buffer``."""

    buffer: int = -1
    # Layouts this buffer held before, oldest first (XLA's history vector).
    # A tuple: most buffers never change, and they all share the empty one.
    history: tuple[Layout, ...] = ()

    kind = BUFFER


@dataclass(slots=True, eq=False)
class OperandConstraint(Constraint):
    """What a consumer reads: operand ``operand`` of instruction ``instr``."""

    instr: int = -1
    operand: int = -1

    kind = OPERAND


@dataclass(slots=True, eq=False)
class ResultConstraint(Constraint):
    """A computation's result layouts, pushed to the root's producers."""

    comp: int = -1
    layouts: tuple[Layout | None, ...] = ()

    kind = RESULT


def new_result(comp: int, layouts: tuple[Layout | None, ...], priority: int, origin: Origin,
               round_: int) -> ResultConstraint:
    fact = origin.attached(RESULT, (comp,), layouts, priority, True, True, round_)
    return ResultConstraint((), True, True, priority, fact, round_, comp=comp, layouts=layouts)


@dataclass(slots=True)
class ComputationLayout:
    """The recorded interface of a computation: parameter and result layouts.

    ``None`` marks an unset leaf (an ``auto`` entry parameter, or a
    non-array).  ``priority`` guards overwrites; the two flags say whether the
    parameters / the result are enforced in later rounds.
    """

    params: list[Layout | None]
    results: list[Layout | None]
    priority: int = DEFAULT_PRIORITY
    params_set: bool = False
    result_set: bool = False


@dataclass(slots=True)
class TraceEvent:
    """One worklist pop: the popped constraint as it was, and what its propagation set.

    ``seeds`` is set on the first pop of each worklist run (one ``propagate``
    call): the deque as the run began, front first.  Every later state of the
    deque follows from it and the derived lists (DFS to the front, BFS to the
    back), so a reader can replay the deque without guessing.
    """

    round: int
    comp: int
    constraint: Origin
    derived: list[Origin]
    seeds: list[Origin] | None = None
