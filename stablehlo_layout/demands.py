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
    """One layout a target asks for.  Build it with the ``on_*`` constructors.

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

    @classmethod
    def on_operand(cls, instr: int, operand: int, layout: Layout, origin: Origin | RawOrigin,
                   mandatory: bool = True, dfs: bool = True, priority: int | None = None) -> "Demand":
        """XLA's SetOperandLayout: operand ``operand`` of ``instr`` is read in ``layout``."""
        return cls(OPERAND, instr, operand, layout, (), (), mandatory, dfs, priority, origin)

    @classmethod
    def on_buffer(cls, buffer: int, layout: Layout, origin: Origin | RawOrigin, mandatory: bool = True,
                  dfs: bool = True, priority: int | None = None) -> "Demand":
        """XLA's SetBufferLayout: the buffer (a value that is its own buffer) is written in ``layout``."""
        return cls(BUFFER, buffer, -1, layout, (), (), mandatory, dfs, priority, origin)

    @classmethod
    def on_results(cls, instr: int, layouts: tuple[Layout | None, ...] | list[Layout | None], origin: Origin,
                   mandatory: bool = True, priority: int | None = None) -> "Demand":
        """XLA's SetInstructionLayout (always depth-first): the result leaves of
        ``instr`` take ``layouts``; an op that cannot change layout takes its
        same-rank operands along, as XLA's does."""
        return cls(RESULTS, instr, -1, None, tuple(layouts), (), mandatory, True, priority, origin)

    @classmethod
    def on_free_operands(cls, instr: int, slots: tuple[tuple[int, Layout], ...], origin: Origin | RawOrigin,
                         priority: int | None = None) -> "Demand":
        """Mandatory depth-first layouts for those of ``slots`` that nothing constrained yet
        when the demand is applied (XLA:CPU's catch-all).  Each slot must be an array
        operand of rank >= 1 that the instruction does not forward."""
        return cls(FREE_OPERANDS, instr, -1, None, (), tuple(slots), True, True, priority, origin)
