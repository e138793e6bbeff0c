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

A ``DemandPlan`` is the same demands for a whole computation as a table: the
catch-all for every instruction that has no step of its own, in the order
of XLA's instruction list, and a few codes (a kernel reading row-major, a
column-major operand, a dimension made most major) for the rest.  Iterated,
it is the ``Demand`` objects it stands for; the engine applies it in one call
to the compiled core instead (``cpp/engine/demands.h``), which is what keeps
XLA:CPU's backend demands off the per-instruction Python path.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Iterator, Literal, Mapping

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.model.layout import Layout

if TYPE_CHECKING:
    from stablehlo_layout.targets.view import TargetView

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
    def on_results(instr: int, layouts: tuple[Layout | None, ...] | list[Layout | None], origin: Origin | RawOrigin,
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


# What a plan step asks of its instruction; the numbers are the core's
# (cpp/engine/demands.h StepCode).  0 there is the catch-all, which needs no step.
NO_DEMAND = 1  # nothing (the instruction is also spared the catch-all)
ROW_MAJOR_KERNEL = 2  # row-major result leaves (on_results), then row-major on every array operand
ASCENDING_OPERAND = 3  # operand ``arg`` in ascending minor-to-major: a column-major matrix
MOST_MAJOR_DIM = 4  # the first result row-major but for dimension ``arg``, made most major
STEP_CODES = (NO_DEMAND, ROW_MAJOR_KERNEL, ASCENDING_OPERAND, MOST_MAJOR_DIM)


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One instruction's own demands in a ``DemandPlan``: a code, its argument, and why.

    The demands of one step share one ``Origin(rule, instruction, None, note)``.
    """

    code: int
    arg: int = 0
    rule: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class DemandPlan:
    """A computation's demands in XLA's instruction-list order, as one table.

    The order is the computation's block order with ``late`` (instructions an
    XLA pass made, which its list holds last) moved to the end, in the order
    given.  An instruction with a step in ``steps`` gets the step's demands;
    any other one gets the catch-all: a free-operands demand, row-major, on
    every array operand of rank >= 1 that it does not forward (implicit
    captures last), unless it is a parameter or a root or its operands are one
    HLO tuple.  The catch-all's origin is the raw ``(catch_all_rule, instr,
    None, note)``, ``late_note`` for the late ones.  ``before`` is applied
    first, one demand at a time (it may read the store).  Every demand is
    mandatory, depth-first, at the round's priority.

    The plan reads the program through ``view`` only when it is iterated (a
    target that passes its parent's demands on, or the user-target guard);
    the Demands are made on the first iteration and kept, so that every round
    hands over the same Origin objects, as a list of Demands made once would.
    """

    view: "TargetView"
    comp: int
    late: tuple[int, ...]
    steps: Mapping[int, PlanStep]
    catch_all_rule: str
    catch_all_note: str
    late_note: str
    before: Iterable[Demand] = ()
    # Shared with the plans ``after`` makes: the same demands whatever comes before.
    _expanded: list[Demand] = field(default_factory=list, repr=False)

    def after(self, before: Iterable[Demand]) -> "DemandPlan":
        """The same plan with ``before`` applied first."""
        return replace(self, before=before)

    def __iter__(self) -> Iterator[Demand]:
        yield from self.before
        if not self._expanded:
            self._expanded.extend(self._demands())
        yield from self._expanded

    def _demands(self) -> Iterator[Demand]:
        view, late = self.view, self.late
        g = view.graph
        values, instrs = g.values, g.instrs
        marked = set(late)
        order = [i for i in g.comps[self.comp].instrs if i not in marked] + list(late) if late else \
            g.comps[self.comp].instrs
        row_major = L.default_layout
        for iid in order:
            ins = instrs[iid]
            step = self.steps.get(iid)
            if step is None:
                if ins.op == "parameter" or ins.op == "root" or view.rule(iid).tuple_operand:
                    continue
                first = len(ins.results) if view.forwards(iid) else 0
                ranks = [v.rank if v.is_array else 0 for v in view.operand_values(iid)]
                slots = tuple((n, row_major(ranks[n])) for n in range(first, len(ranks)) if ranks[n])
                if slots:
                    note = self.late_note if iid in marked else self.catch_all_note
                    yield Demand.on_free_operands(iid, slots, (self.catch_all_rule, iid, None, note))
                continue
            if step.code == NO_DEMAND:
                continue
            why = Origin(step.rule, iid, None, step.note)
            if step.code == ROW_MAJOR_KERNEL:
                yield Demand.on_results(iid, [row_major(values[r].rank) if values[r].is_array else None
                                              for r in view.leaves(iid)], why)
                for n, v in enumerate(ins.operands):
                    if values[v].is_array:
                        yield Demand.on_operand(iid, n, row_major(values[v].rank), why)
            elif step.code == ASCENDING_OPERAND:
                yield Demand.on_operand(iid, step.arg, L.intern(range(values[ins.operands[step.arg]].rank)), why)
            elif step.code == MOST_MAJOR_DIM:
                r = values[ins.results[0]]
                if r.is_array:
                    yield Demand.on_results(iid, [L.intern([d for d in row_major(r.rank) if d != step.arg]
                                                           + [step.arg])], why)
            else:
                raise ValueError(f"a plan step with no such code: {step.code!r}")
