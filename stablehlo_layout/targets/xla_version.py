"""What the installed XLA decides differently from the others: every version-keyed rule, in one place.

The tool answers for the XLA of the installed jaxlib (the one the user
compiles with).  Where XLA's layout assignment changed between the tested
versions, the rule that reproduces the newer behaviour lives here, keyed by
the jaxlib version, and the XLA:CPU / XLA:GPU targets call it; docs/VERSIONS.md
gives the evidence for each.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Iterator

from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import Demand

if TYPE_CHECKING:
    from stablehlo_layout.targets.view import TargetView

# XLA 0.12 (jaxlib 0.12.0) lets a loop's demand on its initial values reach their producers first.
LOOP_DEMANDS_FIRST_SINCE = (0, 12)

# XLA 0.12's XLA:GPU lets the caller lay out loop state the body left unconstrained.
LOOP_STATE_FROM_CALLER_SINCE = (0, 12)

_WHILE = frozenset({"while"})
# XLA:GPU's row-reduction heuristic (IsUnnestedReductionFasterThanElemental) also takes reduced sizes
# that divide the warp size in the XLA of XLA:GPU's layout_assignment_test.cc at 0970ea329a0e (the
# replayed file); neither tested jaxlib has it (0.10.2 and 0.12.0.1 need >= 32 reduced elements, their
# dumps reduce_16_f32 / reduce_32_f32).  The first jaxlib with it is not known: the key is the first
# version after both tested ones, an upper bound no dump has checked (docs/VERSIONS.md item 6).
ROW_REDUCTION_WARP_DIVISORS_SINCE = (0, 13)
WARP_SIZE = 32
# XLA 0.12's XLA:GPU lets the caller lay out a conditional's interface the branches left unconstrained.
BRANCH_INTERFACE_FROM_CALLER_SINCE = (0, 12)

_LOOP_NOTE = ("XLA 0.12+ hands a loop's layout to the producers of its initial values before the backend's"
              " demands: a reshape there takes the loop's layout and stops being a bitcast")


@functools.cache
def installed_xla() -> tuple[int, ...]:
    """The installed jaxlib's version (its XLA), as numbers: (0, 12, 0, 1)."""
    # jaxlib's own version string, the one its distribution is built with:
    # importing importlib.metadata to read it cost ~9 ms of the command's start-up.
    from jaxlib import __version__ as text
    return tuple(int(m) for m in re.findall(r"\d+", text.split("+")[0].split("rc")[0].split(".dev")[0]))


def loop_demands_first(xla: tuple[int, ...] | None = None) -> bool:
    """Whether ``xla`` (default: the installed one) propagates a while's operand demands before the backend's."""
    return (installed_xla() if xla is None else xla) >= LOOP_DEMANDS_FIRST_SINCE


def loop_state_from_caller(xla: tuple[int, ...] | None = None) -> bool:
    """Whether ``xla``'s XLA:GPU lets the caller lay out loop state that nothing in the loop constrains.

    Observed on jaxlib 0.12.0.1's XLA:GPU and not on 0.10.2
    (tests/unit/test_xla_gpu_loop_versions.py, docs/VERSIONS.md item 5): a
    carried value whose body parameter, body result and condition parameter
    all still lack a layout when the body's buffers take their defaults takes
    the layout the caller gives the loop (a demand on the loop's result, else
    the initial value's layout, which the result then carries), and the body
    is laid out again around it; a slot the caller leaves unconstrained too
    is laid out by the body in the next round
    (tests/unit/test_xla_gpu_loop_state_versions.py).  A body that constrains
    the value (an FFT inside it) keeps deciding, as before.
    """
    return (installed_xla() if xla is None else xla) >= LOOP_STATE_FROM_CALLER_SINCE


def branch_interface_from_caller(xla: tuple[int, ...] | None = None) -> bool:
    """Whether ``xla``'s XLA:GPU lets the caller lay out a conditional's results and captures its branches left free.

    Observed on jaxlib 0.12.0.1's XLA:GPU and not on 0.10.2
    (tests/unit/test_xla_gpu_branch_versions.py, docs/VERSIONS.md item 5):
    a branch parameter, or a result that every branch's root left, still
    without a layout when the branches take their defaults is laid out by
    the caller in the first round (the captured value's layout, a demand on
    the conditional's result), and the branches are laid out again around it.
    """
    return (installed_xla() if xla is None else xla) >= BRANCH_INTERFACE_FROM_CALLER_SINCE


def row_reduction_pays(reduced: int, xla: tuple[int, ...] | None = None) -> bool:
    """Whether ``xla``'s XLA:GPU lays a reduction over ``reduced`` elements out as a row reduction.

    XLA:GPU's PropagateReductionLayoutToOperand asks IsUnnestedReductionFasterThanElemental about a
    row reduction of ``reduced`` elements: jaxlib 0.10.2's and 0.12.0.1's answer yes from a warp's
    worth (32) of elements; the newer XLA of the replayed GPU test (ReduceOperandLayoutDivisorOfWarpSize)
    also for a size that divides the warp size, several reductions sharing a warp.
    """
    if reduced >= WARP_SIZE:
        return True
    newer = (installed_xla() if xla is None else xla) >= ROW_REDUCTION_WARP_DIVISORS_SINCE
    return newer and reduced > 0 and WARP_SIZE % reduced == 0


def propagate_loop_demands(view: "TargetView", comp: int) -> Iterator[Demand]:
    """XLA 0.12+: each while's demand on its initial values goes to their producers now, before the backend rules.

    Observed on jaxlib 0.12.0.1's XLA:CPU and not on 0.10.2 or 0.11.2 (the
    before dumps of 0.11.2 and 0.12 are the same): a value that enters a
    ``while`` and whose producer only derives its layout non-mandatorily (a
    reshape, from its row-major operand) gets the loop's layout, as the first
    loop in instruction order wants it; the reshape's operand keeps its own
    layout and other consumers get copies.  Producers whose layout comes
    mandatorily from their operands (a transpose, a slice, elementwise ops)
    override it as before, so the copy stays in front of the loop there.
    The demand is the one XLA's PropagateUseConstraintToDefs makes: not
    mandatory, depth-first, at the loop's priority, refused by a buffer that
    already holds a layout at that priority.
    """
    g = view.graph
    whiles = view.cache("xla-0.12-whiles")  # per computation, its whiles in block order (once per run)
    found = whiles.get(comp)
    if found is None:
        every = whiles.get(None)
        if every is None:
            every = whiles[None] = frozenset(view.instructions_of(_WHILE))
        found = whiles[comp] = tuple(filter(every.__contains__, g.comps[comp].instrs)) if every else ()
    for iid in found:
        for n, vid in enumerate(g.instrs[iid].operands):
            c = view.operand_constraint(iid, n)
            v = g.values[vid]
            if c is None or not v.is_array or v.rank <= 1:
                continue
            buf = v.buffer
            cur = view.buffer_constraint(buf)
            if cur is not None and c.priority <= cur.priority and (cur.dfs or cur.layout != c.layout):
                continue
            producer = g.values[buf].producer
            yield Demand.on_buffer(buf, c.layout, Origin("target:xla-0.12-loop-demand-first", producer, c.origin
                                                         if isinstance(c.origin, Origin) else None, _LOOP_NOTE),
                                   mandatory=False, priority=c.priority)
