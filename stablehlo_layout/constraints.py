"""The three constraint kinds, their provenance, and XLA's overwrite rules.

Priorities follow XLA: a fallback computation layout sits at -2, the pass's
own demands start at 0 and rise by one per round, and a layout the caller
gave for the entry computation enters at 3.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from .layout import Layout

DEFAULT_PRIORITY = -2
BEGINNING_PRIORITY = 0
GIVEN_PRIORITY = 3
NUMBER_OF_ROUNDS = 2
# A buffer's layout may be changed by non-mandatory requests at most twice;
# that stops two equally-strong demands from flipping it forever.
MAX_LAYOUT_CHANGES = 2


@dataclass(slots=True)
class Origin:
    """Why a constraint exists: the rule that made it and what it came from.

    ``rule`` is a short machine name ("entry-parameter", "transpose-bitcast",
    "default-layout", "target:cpu-dot-row-major", ...); ``instr`` the
    instruction whose rule fired; ``parent`` the constraint being propagated
    when this one was derived (None for a source).
    """

    rule: str
    instr: int | None = None
    parent: "Constraint | None" = None
    note: str = ""


@dataclass(slots=True, eq=False)
class Constraint:
    layout: Layout
    mandatory: bool
    dfs: bool
    priority: int
    origin: Origin
    round: int
    # The last frozen copy handed out as a parent; dropped when this changes.
    _snapshot: "Constraint | None" = field(default=None, repr=False, compare=False)

    kind = "constraint"

    def frozen(self) -> "Constraint":
        """This constraint as it is now, for provenance.

        Buffer constraints change in place; an origin that pointed at the live
        object could end up pointing at its own descendant.  Parents are
        therefore snapshots, shared until the constraint next changes.
        """
        if self._snapshot is None:
            snap = copy.copy(self)
            snap._snapshot = snap
            self._snapshot = snap
        return self._snapshot


@dataclass(slots=True, eq=False)
class BufferConstraint(Constraint):
    """Where a value is produced: the layout of the buffer ``buffer``."""

    buffer: int = -1
    # Layouts this buffer held before, oldest first (XLA's history vector).
    history: list[Layout] = field(default_factory=list)

    kind = "buffer"

    def update(self, layout: Layout, mandatory: bool, dfs: bool, priority: int,
               origin: Origin, round_: int, buffer_is_array: bool = True) -> bool:
        """Apply XLA's BufferLayoutConstraint::UpdateLayout; True when changed."""
        if layout == self.layout:
            changed = False
            if mandatory and not self.mandatory:
                self.mandatory = changed = True
            if dfs and not self.dfs:
                self.dfs = changed = True
            if priority > self.priority:
                self.priority = priority
                changed = True
            if changed:
                self.origin = origin
                self.round = round_
                self._snapshot = None
            return changed
        if not mandatory:
            if len(self.history) >= MAX_LAYOUT_CHANGES:
                return False
            if not buffer_is_array:
                return False
            if priority <= self.priority:
                return False
        self.history.append(self.layout)
        self.layout = layout
        self.mandatory = mandatory
        self.dfs = dfs
        self.priority = priority
        self.origin = origin
        self.round = round_
        self._snapshot = None
        return True


@dataclass(slots=True, eq=False)
class OperandConstraint(Constraint):
    """What a consumer reads: operand ``operand`` of instruction ``instr``."""

    instr: int = -1
    operand: int = -1

    kind = "operand"


@dataclass(slots=True, eq=False)
class ResultConstraint(Constraint):
    """A computation's result layouts, pushed to the root's producers."""

    comp: int = -1
    layouts: tuple[Layout | None, ...] = ()

    kind = "result"


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
