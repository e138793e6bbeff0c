"""Per-op layout knowledge, keyed by op name.

Each rule answers the questions XLA's pass asks of an opcode: may the op hold
one layout on its result and another on an operand (``can_change``)?  Given
the output layout, which operand layout makes the op cheapest (usually a
bitcast), and the other way round?  Which end of the worklist do derived
constraints go to?  The engine asks only these questions and never looks at
op names itself.

StableHLO spells several HLO opcodes differently; the table maps each
StableHLO, MHLO and CHLO op onto the HLO opcode whose behaviour it shares.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable

from stablehlo_layout.model import layout as L

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Graph, Instruction

# (graph, instruction, operand number, output layout) -> operand layout
OperandFromOutput = Callable[["Graph", "Instruction", int, L.Layout], "L.Layout | None"]
# (graph, instruction, operand number, operand layout, result number) -> output layout
OutputFromOperand = Callable[["Graph", "Instruction", int, L.Layout, int], "L.Layout | None"]


@dataclass(frozen=True, slots=True)
class OpRule:
    hlo: str  # the HLO opcode whose behaviour this op shares
    can_change: bool
    dfs: bool = False  # XLA's InstructionShouldPropagateDepthFirst
    operand_from_output: OperandFromOutput | None = None
    output_from_operand: OutputFromOperand | None = None
    # XLA's OperandLayoutAlwaysPropagateForward / OutputLayoutAlwaysPropagate-
    # ToOperands / OperandLayoutAlwaysPropagateToSiblings; None = "not can_change".
    forward_mandatory: bool | None = None
    backward_mandatory: bool | None = None
    siblings: bool | None = None
    # The operands are the elements of one HLO tuple operand (while,
    # optimization-barrier): identity and sibling rules do not apply to them.
    tuple_operand: bool = False
    broadcast: bool = False
    # Result i is operand i's buffer (points-to aliasing).
    forwards: bool = False
    # Known to the table; unknown ops get a conservative rule instead.
    known: bool = True

    @property
    def always_forward(self) -> bool:
        return (not self.can_change) if self.forward_mandatory is None else self.forward_mandatory

    @property
    def always_backward(self) -> bool:
        return (not self.can_change) if self.backward_mandatory is None else self.backward_mandatory

    @property
    def to_siblings(self) -> bool:
        return (not self.can_change) if self.siblings is None else self.siblings


# --- derivations -----------------------------------------------------------


def _transpose_back(g: "Graph", ins: "Instruction", n: int, out: L.Layout) -> L.Layout:
    return L.transpose_operand_layout(ins.attrs["perm"], out)


def _transpose_fwd(g: "Graph", ins: "Instruction", n: int, operand: L.Layout, r: int) -> L.Layout:
    return L.transpose_output_layout(ins.attrs["perm"], operand)


def _reshape_back(g: "Graph", ins: "Instruction", n: int, out: L.Layout) -> L.Layout | None:
    if n != 0:
        return None
    src = g.values[ins.operands[0]].dims
    dst = g.values[ins.results[0]].dims
    if not L.reshape_derivable(src, dst):
        return None
    return L.align_layouts(dst, out, src)  # type: ignore[arg-type]  # derivable: no dynamic extent


def _reshape_fwd(g: "Graph", ins: "Instruction", n: int, operand: L.Layout, r: int) -> L.Layout | None:
    if n != 0:
        return None
    src = g.values[ins.operands[0]].dims
    dst = g.values[ins.results[r]].dims
    if not L.reshape_derivable(src, dst):
        return None
    return L.align_layouts(src, operand, dst)  # type: ignore[arg-type]  # derivable: no dynamic extent


def broadcast_operand(g: "Graph", ins: "Instruction", n: int, out: L.Layout) -> L.Layout | None:
    if n != 0:
        return None
    return L.broadcast_operand_layout(out, ins.attrs["dims"])


def reduce_operand(g: "Graph", ins: "Instruction", n: int, out: L.Layout) -> L.Layout:
    """GPU's reduce heuristic: reduced dims most minor (only used when a target enables it)."""
    rank = g.values[ins.operands[n]].rank
    return L.reduce_operand_layout(out, ins.attrs["dims"], rank)


# --- the table -------------------------------------------------------------

_SAME = OpRule("elementwise", can_change=False)
_FREE = OpRule("opaque", can_change=True)

_ELEMENTWISE = """
abs add and atan2 cbrt ceil clamp compare complex convert cosine count_leading_zeros
divide exponential exponential_minus_one floor imag is_finite log log_plus_one logistic
maximum minimum multiply negate not or popcnt power real reduce_precision remainder
round_nearest_afz round_nearest_even rsqrt select shift_left shift_right_arithmetic
shift_right_logical sign sine sqrt subtract tan tanh xor uniform_quantize uniform_dequantize
map
""".split()

# Ops XLA lists as unable to change layout that are not elementwise arithmetic.
_CANNOT_CHANGE = """
concatenate dynamic_slice real_dynamic_slice dynamic_update_slice fft pad dynamic_pad
reduce_window reverse select_and_scatter slice sort triangular_solve cholesky
set_dimension_size all_gather all_to_all collective_broadcast collective_permute
all_reduce reduce_scatter cross-replica-sum bitcast_convert
""".split()

# Ops that may change layout and derive nothing in the base pass: backends
# decide them (dot, convolution) or they create fresh values.
_CAN_CHANGE = """
batch_norm_grad batch_norm_inference batch_norm_training constant convolution
dynamic_conv dot dot_general einsum unary_einsum iota dynamic_iota partition_id
replica_id rng rng_bit_generator infeed outfeed send recv after_all create_token
tuple get_tuple_element get_dimension_size custom_call case if composite
async_start async_done torch_index_select
""".split()

RULES: dict[str, OpRule] = {}


def _register(ops: list[str], rule: OpRule, dialects: tuple[str, ...] = ("stablehlo",)) -> None:
    for op in ops:
        for d in dialects:
            RULES[f"{d}.{op}"] = replace(rule, hlo=op if rule.hlo in ("elementwise", "opaque") else rule.hlo)


_register(_ELEMENTWISE, _SAME, ("stablehlo", "mhlo"))
_register(_CANNOT_CHANGE, _SAME, ("stablehlo", "mhlo"))
_register(_CAN_CHANGE, _FREE, ("stablehlo", "mhlo"))

_register(["transpose"], OpRule(
    "transpose", can_change=True, dfs=True,
    operand_from_output=_transpose_back, output_from_operand=_transpose_fwd,
    forward_mandatory=True,
), ("stablehlo", "mhlo"))
_register(["reshape", "dynamic_reshape"], OpRule(
    "reshape", can_change=True,
    operand_from_output=_reshape_back, output_from_operand=_reshape_fwd,
    backward_mandatory=False,
), ("stablehlo", "mhlo"))
_register(["broadcast_in_dim", "dynamic_broadcast_in_dim", "broadcast"], OpRule(
    "broadcast", can_change=True, broadcast=True, operand_from_output=broadcast_operand,
), ("stablehlo", "mhlo"))
_register(["reduce"], OpRule(
    "reduce", can_change=True, forward_mandatory=True, siblings=True,
), ("stablehlo", "mhlo"))
_register(["gather", "dynamic_gather"], OpRule("gather", can_change=True, dfs=True), ("stablehlo", "mhlo"))
_register(["scatter"], OpRule("scatter", can_change=False, dfs=True), ("stablehlo", "mhlo"))
_register(["while"], OpRule("while", can_change=False, tuple_operand=True), ("stablehlo", "mhlo"))
_register(["optimization_barrier"], OpRule(
    "optimization-barrier", can_change=False, tuple_operand=True, forwards=True,
), ("stablehlo", "mhlo"))
_register(["scan"], OpRule("scan", can_change=False), ("mhlo",))
RULES["mhlo.copy"] = OpRule("copy", can_change=True)
RULES["mhlo.bitcast"] = OpRule("bitcast", can_change=True)
RULES["func.call"] = OpRule("call", can_change=True)

# CHLO: elementwise unless known otherwise.  Explicit-broadcast forms accept
# lower-rank operands, which the identity rule leaves alone.
for _short, _hlo in {"constant": "constant", "constant_like": "constant", "ragged_dot": "ragged-dot"}.items():
    RULES[f"chlo.{_short}"] = OpRule(_hlo, can_change=True)
for _short, _hlo in {"top_k": "topk", "scan": "scan"}.items():
    RULES[f"chlo.{_short}"] = OpRule(_hlo, can_change=False)
# The table is complete here: nothing adds to it at run time.
RULES = MappingProxyType(RULES)  # type: ignore[assignment]


def rule_for(op: str) -> OpRule:
    """The rule of an op by name; a name the table lacks gets a rule made for it
    (a fresh value each time: the table itself never changes)."""
    rule = RULES.get(op)
    if rule is not None:
        return rule
    if op.startswith("chlo."):
        return OpRule(op[5:], can_change=False)
    # Unknown: it may change layout, and its operands and results are
    # pinned to the default layout (see engine), never guessed.
    return OpRule(op, can_change=True, known=False)
