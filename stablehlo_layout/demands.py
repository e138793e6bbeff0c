"""What a target asks of the layout assignment: demands, as data.

A target's ``backend_demands(view, comp)`` returns (or yields) ``Demand``
objects; the engine applies each one, in the order given, through the same
overwrite rules as its own constraints (``Engine.apply_demands``).  A demand
says which slot it wants (an operand, a buffer, an instruction's results, or
a batch of an instruction's operands that nothing constrained yet), the
layout, how strong it is (mandatory, depth-first, priority) and why
(``origin``, which ``explain`` and ``trace`` show).

The four kinds are XLA's four ways a backend's AddBackendConstraints sets
layouts: SetOperandLayout, SetBufferLayout, SetInstructionLayout, and
XLA:CPU's "every operand nobody constrained yet is row-major" loop, which
reads the constraint store once per operand and is one demand here so that
a large module does not make one object per operand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .constraints import Origin
from .layout import Layout

DemandKind = Literal["operand", "buffer", "results", "free-operands"]
OPERAND: DemandKind = "operand"
BUFFER: DemandKind = "buffer"
RESULTS: DemandKind = "results"
FREE_OPERANDS: DemandKind = "free-operands"
KINDS: tuple[DemandKind, ...] = (OPERAND, BUFFER, RESULTS, FREE_OPERANDS)

# The raw form of an Origin the built-in targets may hand over instead of one:
# (rule, instr, parent, note).  The engine builds the Origin only when a
# constraint takes it, as it does for its own demands (constraints.as_origin).
RawOrigin = tuple[str, "int | None", "Origin | None", str]


@dataclass(frozen=True, slots=True)
class Demand:
    """One layout a target asks for.  Build it with the ``on_*`` constructors
    (the plain constructor makes the same object, more slowly).

    ``target`` is an instruction id for the ``operand``, ``results`` and
    ``free-operands`` kinds and a buffer's value id for ``buffer``.
    ``priority`` None means the priority of the round being run (what XLA's
    backends use); a number is kept as given (XLA 0.12's loop demand passes
    on the priority of the constraint it derives from).
    """

    kind: DemandKind
    target: int
    operand: int = -1  # operand number (kind "operand")
    layout: Layout | None = None  # kinds "operand" and "buffer"
    layouts: tuple[Layout | None, ...] = ()  # kind "results": one per result leaf, None leaves it
    slots: tuple[tuple[int, Layout], ...] = ()  # kind "free-operands": (operand number, layout)
    mandatory: bool = True
    dfs: bool = True
    priority: int | None = None
    origin: Origin | RawOrigin | None = None

    @staticmethod
    def on_operand(instr: int, operand: int, layout: Layout, origin: Origin | RawOrigin,
                   mandatory: bool = True, dfs: bool = True, priority: int | None = None) -> "Demand":
        """XLA's SetOperandLayout: operand ``operand`` of ``instr`` is read in ``layout``."""
        return _made(OPERAND, instr, operand, layout, (), (), mandatory, dfs, priority, origin)

    @staticmethod
    def on_buffer(buffer: int, layout: Layout, origin: Origin | RawOrigin, mandatory: bool = True,
                  dfs: bool = True, priority: int | None = None) -> "Demand":
        """XLA's SetBufferLayout: the buffer (a value that is its own buffer) is written in ``layout``."""
        return _made(BUFFER, buffer, -1, layout, (), (), mandatory, dfs, priority, origin)

    @staticmethod
    def on_results(instr: int, layouts: tuple[Layout | None, ...] | list[Layout | None], origin: Origin,
                   mandatory: bool = True, priority: int | None = None) -> "Demand":
        """XLA's SetInstructionLayout (always depth-first): the result leaves of
        ``instr`` take ``layouts``; an op that cannot change layout takes its
        same-rank operands along, as XLA's does."""
        return _made(RESULTS, instr, -1, None, tuple(layouts), (), mandatory, True, priority, origin)

    @staticmethod
    def on_free_operands(instr: int, slots: tuple[tuple[int, Layout], ...], origin: Origin | RawOrigin,
                         priority: int | None = None) -> "Demand":
        """Mandatory depth-first layouts for those of ``slots`` that nothing constrained yet
        when the demand is applied (XLA:CPU's catch-all).  Each slot must be an array
        operand of rank >= 1 that the instruction does not forward."""
        return _made(FREE_OPERANDS, instr, -1, None, (), tuple(slots), True, True, priority, origin)


# The constructors fill the slots through their descriptors: a frozen
# dataclass's own __init__ sets each field through object.__setattr__, which
# costs twice as much, and XLA:CPU makes one demand per instruction of a
# module (~30k at 46k instructions).  The field order is checked by
# tests/unit/test_target_view.py against dataclasses.fields(Demand).
_SETTERS = tuple(getattr(Demand, name).__set__ for name in (
    "kind", "target", "operand", "layout", "layouts", "slots", "mandatory", "dfs", "priority", "origin"))


def _made(kind: DemandKind, target: int, operand: int, layout: Layout | None, layouts: tuple[Layout | None, ...],
          slots: tuple[tuple[int, Layout], ...], mandatory: bool, dfs: bool, priority: int | None,
          origin: Origin | RawOrigin | None, _new=object.__new__, _set=_SETTERS) -> Demand:
    d = _new(Demand)
    _set[0](d, kind)
    _set[1](d, target)
    _set[2](d, operand)
    _set[3](d, layout)
    _set[4](d, layouts)
    _set[5](d, slots)
    _set[6](d, mandatory)
    _set[7](d, dfs)
    _set[8](d, priority)
    _set[9](d, origin)
    return d
