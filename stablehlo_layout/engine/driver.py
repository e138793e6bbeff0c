"""The engine's run: the state made, the rooms made around it, the rounds run, the answer read.

XLA's LayoutAssignment::Run in one place: ``state.EngineState`` holds what
the rooms share and the setters into the core; ``interfaces.Interfaces``
what each computation recorded; ``computation.ComputationSteps`` what
one computation's steps keep between rounds; ``rounds.run_rounds`` the
rounds over the module; ``result.assignment_of`` the answer, and
``aliasing.in_place_copies`` the copies that follow from it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING

from stablehlo_layout.engine.aliasing import in_place_copies
from stablehlo_layout.engine.computation import ComputationSteps
from stablehlo_layout.engine.interfaces import Interfaces
from stablehlo_layout.engine.result import Assignment, assignment_of
from stablehlo_layout.engine.rounds import run_rounds
from stablehlo_layout.engine.state import EngineState
from stablehlo_layout.model.graph import Graph

if TYPE_CHECKING:
    from stablehlo_layout.targets.base import Target


def assign_layouts(graph: Graph, target: "Target", entry_mode: str = "default",
                   trace: bool = False, exact: bool = False, provenance: bool = True) -> Assignment:
    """Run the engine; ``exact`` (implied by ``trace``) runs every round and computation in full.

    ``provenance`` False (not with ``exact``): the answer is the same, but the
    constraints the core derived name an "unrecorded" origin, so explain has
    nothing to follow; for callers that never ask why (the command's assign).

    The answer also lists XLA's copies of operands custom calls overwrite in
    place (``aliasing.py``): they follow from the layouts, not the worklist.
    """
    answer = run(EngineState(graph, target, entry_mode, trace, exact, provenance))
    answer.copies.extend(in_place_copies(answer))
    return answer


def run(state: EngineState) -> Assignment:
    """The rounds over the module (``rounds.py``), then the answer (``result.py``)."""
    interfaces = Interfaces()
    steps = ComputationSteps(state.specials, interfaces)
    rounds, computed = run_rounds(state, interfaces, steps)
    answer = assignment_of(state, interfaces, rounds, computed)
    if state.target_view is not None:
        state.target_view._end_run()
    return answer


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """Hold the cyclic collector off while the pass runs.

    The pass allocates hundreds of thousands of small acyclic objects; every
    full collection rescans all of them, which made large modules quadratic
    (about a third of the time at 47k ops).  Reference counting still frees
    everything; the collector resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
