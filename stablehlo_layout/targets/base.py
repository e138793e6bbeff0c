"""What a target can do: demand layouts and refine the per-op derivations.

A target never calls into the engine.  Its demands are data
(``demands.Demand``) made from a read-only view of the program
(``target_view.TargetView``); the engine applies them.  Its other hooks
answer questions about one instruction or value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.rules import OpRule, rule_for

if TYPE_CHECKING:
    from stablehlo_layout.targets.demands import Demand
    from stablehlo_layout.model.graph import Graph, Instruction, Tiling, Value
    from stablehlo_layout.model.layout import Dims
    from stablehlo_layout.targets.view import TargetView

# A derived layout and the name of the rule that derived it (for provenance).
Derived = tuple[L.Layout, str]


class Target:
    """The base target: XLA's pass with no backend hooks."""

    name = "generic"
    # XLA's CPU and GPU pipelines inline calls before layout assignment; the
    # base pass itself lays out called computations one per call site.
    inline_calls = False
    # The target's demands depend only on the graph and the current priority
    # (not on the round or on what earlier rounds chose), so the engine may
    # stop once a round provably repeats the one before.  Off by default: a
    # user target must vouch for it.
    uniform_rounds = False
    # The target reads the layouts the input already gives its instructions
    # (``attrs["given_layout"]``, from ``result_layout``), as XLA:GPU's dot
    # rules read an HLO instruction's existing layout.
    reads_given_layouts = False
    # XLA 0.12+'s XLA:GPU (targets/xla_version.py): a loop-carried value the
    # body left to the default layout takes its layout from the caller.
    loop_state_from_caller = False
    # XLA 0.12+'s XLA:GPU: a conditional's result or captured value its
    # branches left to the default layout takes its layout from the caller.
    branch_interface_from_caller = False

    # The device the target models where reports should name it (XLA:TPU's
    # generation); None where the target's name says it all.
    device: str | None = None

    # The op names whose rule ``rule`` may refine, where a target refines only
    # a few: the engine then asks about those instructions alone.  None: ask
    # about every instruction (a target that overrides ``rule`` and says no more).
    refined_ops: frozenset[str] | None = None

    def rule(self, g: "Graph", ins: "Instruction") -> OpRule:
        """The per-op rule for ``ins``; a backend may refine it (XLA's
        InstructionCanChangeLayoutInstance and friends)."""
        return rule_for(ins.op)

    def backend_demands(self, view: "TargetView", comp: int) -> Iterable["Demand"]:
        """The backend's demands on computation ``comp`` (XLA's AddBackendConstraints).

        Called once per computation per round, after the mandatory
        constraints and before the worklist runs.  The engine applies each
        demand before it asks for the next, so a generator that reads
        ``view.operand_constraint`` / ``buffer_constraint`` sees what its
        earlier demands set.
        """
        return ()

    def operand_from_output(self, g: "Graph", ins: "Instruction", n: int,
                            output: L.Layout, rule: OpRule) -> Derived | None:
        """XLA's ChooseOperandLayoutFromOutputLayout for ops that may change layout."""
        if rule.operand_from_output is None or rule.broadcast:
            return None
        if rule.hlo == "reduce" and not self.propagate_reduction_to_operand(g, ins):
            return None
        lay = rule.operand_from_output(g, ins, n, output)
        return (lay, f"{rule.hlo}-bitcast") if lay is not None else None

    def output_from_operand(self, g: "Graph", ins: "Instruction", n: int, operand: L.Layout,
                            result: int, rule: OpRule) -> Derived | None:
        """XLA's ChooseOutputLayoutFromOperandLayout for ops that may change layout."""
        if rule.output_from_operand is None:
            return None
        lay = rule.output_from_operand(g, ins, n, operand, result)
        return (lay, f"{rule.hlo}-bitcast") if lay is not None else None

    def propagate_reduction_to_operand(self, g: "Graph", ins: "Instruction") -> bool:
        return False

    def unconstrained_layout(self, g: "Graph", v: "Value") -> L.Layout:
        """The layout a buffer nobody constrained gets (XLA's GetUnconstrainedLayout)."""
        return L.default_layout(v.rank)

    def default_entry_layout(self, v: "Value") -> L.Layout:
        """The layout the runtime fixes for an entry array the program leaves open
        (PJRT's default layout for the device): row-major on CPU and GPU."""
        return L.default_layout(v.rank)

    def padded_bytes(self, element: str, dims: "Dims", layout: L.Layout) -> int | None:
        """Bytes an array of this shape takes in memory laid out as ``layout``,
        padding included, where the backend pads (XLA:TPU's tiles); None
        where it does not, and the logical size is the size."""
        return None

    def tiling(self, element: str, dims: "Dims", layout: L.Layout, entry: bool = False) -> str:
        """The layout fields XLA prints after the minor_to_major (``T(8,128)(2,1)``
        on TPU) for an array of this type, shape and layout; empty where the
        backend prints none.  ``entry``: the array is an entry parameter or
        result (XLA:TPU tiles some of those apart)."""
        return ""


def tiling_of(target: Target) -> "Tiling | None":
    """The target's ``tiling`` hook where it prints layout fields (XLA:TPU's
    tiles); None for a target that leaves the base hook, whose shapes are
    written as they always were."""
    return None if type(target).tiling is Target.tiling else target.tiling
