"""One walk over an MLIR module builds the constraint graph.

This is the only module besides ``mlir.py`` and ``rewrite.py`` that reads MLIR.
It keeps the MLIR handles it saw in ``Handles`` so the rewriter can find them
again without a second lookup; the engine never sees them.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from itertools import compress, count
from collections.abc import Callable, Generator, Iterator
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _stablehlo as stablehlo  # attribute helpers only

from stablehlo_layout.ir import capi
from stablehlo_layout.ir.locations import location_text
from stablehlo_layout.ir.mlir import nested_ops
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import (
    ARRAY,
    CORE_ATTRIBUTES,
    OTHER,
    TOKEN,
    TUPLE,
    Columns,
    Computation,
    Graph,
    Instruction,
    SharedAttrs,
    own_attrs,
    shape_text,
)
from stablehlo_layout.ir.marks import LIST_ORDER, LOOP_RANK, PASS_CREATED, PASS_CREATED_EARLY, USER_ORDER, USER_ORDERS
from stablehlo_layout.ir.sharding import (
    GROUPS_ATTRIBUTE,
    collective_facts,
    read_meshes,
    sharding_of,
    sharding_text,
    splits,
)
from stablehlo_layout.model.rules import rule_for

# The HLO instruction an op was converted from (its NameLoc), as ``marks`` reads it.
_NAME_LOC = re.compile(r'^loc\("([^"]+)"')

# Region kinds by parent op: which computation each region of the op is.
_REGION_KINDS = {
    "stablehlo.while": ("cond", "body"),
    "mhlo.while": ("cond", "body"),
    "stablehlo.case": None,  # every region is a branch
    "stablehlo.if": None,
    "mhlo.case": None,
    "mhlo.if": None,
}


def _operation_at(pointer: int, capsule: str) -> ir.Operation:
    """The bindings' object of the op at C API ``pointer``; ``capsule``: the
    name the bindings give an op's capsule (``_core.capsule_name``)."""
    return ir.Operation._CAPICreate(capi.capsule(pointer, capsule))  # type: ignore[return-value]


class LazyOps:
    """``Handles.ops`` where the walk read the ops' pointers: op ``iid``'s bindings
    object is made when first asked for (``_CAPICreate``) and kept.  The walk
    lets go of the objects it made: one per op cost ~190 bytes (35 MB at
    L=1024) and the rewrite asks for the few that get a copy."""

    __slots__ = ("ptrs", "made", "capsule")

    def __init__(self, ptrs: array, capsule: str) -> None:
        self.ptrs, self.capsule = ptrs, capsule
        self.made: dict[int, ir.Operation] = {}

    def __len__(self) -> int:
        return len(self.ptrs)

    def __getitem__(self, iid: int) -> ir.Operation | None:
        op = self.made.get(iid)
        if op is None:
            pointer = self.ptrs[iid]
            if not pointer:
                return None
            op = self.made[iid] = _operation_at(pointer, self.capsule)
        return op

    def __iter__(self) -> Iterator[ir.Operation | None]:
        return map(self.__getitem__, range(len(self.ptrs)))


@dataclass
class Handles:
    """MLIR objects by graph id, valid only until the module is next mutated by a PassManager."""

    # By instruction id, the op (None for a parameter); a LazyOps where the
    # walk read blocks through the C API.
    ops: "list[ir.Operation | None] | LazyOps" = field(default_factory=list)
    funcs: dict[int, ir.Operation] = field(default_factory=dict)  # computation id -> func.func
    terminators: dict[int, ir.Operation] = field(default_factory=dict)  # computation id -> terminator
    regions: dict[int, ir.Region] = field(default_factory=dict)  # computation id -> region
    # (value id, function name) -> the MLIR values that show it in that
    # function, for values that cross an inlined call boundary: more than one
    # when a call passes or returns the same value twice.
    views: dict[tuple[int, str], list[ir.Value]] = field(default_factory=dict)
    call_results: list[tuple[ir.Operation, list[int]]] = field(default_factory=list)
    inlined: set[str] = field(default_factory=set)
    # Function name -> its func.call ops, for the functions the call-graph
    # steps walked (clones included), so that the rewrite need not walk again.
    calls: dict[str, list[ir.Operation]] = field(default_factory=dict)
    # By instruction id, the op's C API pointer (0: no op), where the walk read
    # blocks through the C API (``OpWalk``); the rewrite writes the layouts
    # of every op through them in one call.  None after a bindings-only walk.
    op_ptrs: "array | None" = None

    def value(self, g: Graph, vid: int) -> ir.Value | None:
        """The MLIR value that graph value ``vid`` was read from, or None (a tuple's
        element, or a parameter standing for a captured outer value).

        Found from its producer, not kept per value: only the few values that
        get a copy are ever looked up.
        """
        site = self.read_from(g, vid)
        if site is None:
            return None
        iid, index, argument = site
        if argument:
            return self.block_of(g, iid).arguments[index]
        op = self.ops[iid]
        return None if op is None else op.results[index]

    @staticmethod
    def read_from(g: Graph, vid: int) -> tuple[int, int, bool] | None:
        """Where graph value ``vid`` was read: (its producer, the result's or
        argument's number, whether it is a block argument), or None where no
        MLIR value stands for it alone (a tuple's element, a parameter standing
        for a captured outer value)."""
        c = g.columns  # its rows, not views: a large module asks for thousands
        iid, index = c.producer[vid], c.index[vid]
        if c.op_names[c.op[iid]] == "parameter":  # one result; ``index``: the parameter's number
            if c.res_items[c.res_start[iid]] != vid or "capture" in c.attrs[iid]:
                return None
            return iid, index, True
        if c.res_items[c.res_start[iid] + index] != vid:
            return None  # an element of a tuple result
        return iid, index, False

    def block_of(self, g: Graph, iid: int) -> ir.Block:
        """The block whose arguments parameter ``iid``'s computation reads."""
        return self.regions[g.columns.comp[iid]].blocks[0]



# Ops whose attributes the rules read (by the name after the dialect prefix);
# every other op contributes no attributes and is not asked.
_EXTRACTED = {
    "transpose", "broadcast_in_dim", "dynamic_broadcast_in_dim", "broadcast", "reduce", "concatenate",
    "custom_call", "dot_general", "dot", "convolution", "constant", "compare", "infeed", "all_gather",
    "all_reduce", "reduce_scatter", "all_to_all", "reshape", "convert", "while",
    # Only reports read these: the mesh axis a collective spans, a value's stated sharding.
    "collective_permute", "collective_broadcast", "sharding_constraint",
}


# Ops whose extracted facts come from one attribute alone (its value, or
# that it is absent), by that attribute's name: MLIR uniques attributes, so
# each distinct one is read once per import.
_ONE_ATTRIBUTE = {
    "transpose": "permutation", "broadcast_in_dim": "broadcast_dimensions", "reduce": "dimensions",
    "dot_general": "dot_dimension_numbers", "concatenate": "dimension", "reshape": PASS_CREATED,
    "convert": PASS_CREATED,
}


def _facts_of(name: str) -> tuple[Any, bool, str, str | None]:
    """What the walk needs to know of an op name: its rule, whether the rules
    read its attributes, whether it builds or reads a tuple, and the one
    attribute its facts come from (if they come from one)."""
    short = name.split(".", 1)[-1]
    tuple_kind = "get" if name.endswith(".get_tuple_element") else "make" if name.endswith(".tuple") else ""
    return rule_for(name), name == "func.call" or short in _EXTRACTED, tuple_kind, _ONE_ATTRIBUTE.get(short)


def _never_has_regions(op: ir.Operation) -> bool:
    """Whether no op of this one's name can hold a region: its registered
    definition says exactly none (``_ODS_REGIONS``, the generated bindings'
    (count, fixed) pair).  An unregistered op has no such class and says
    nothing, so each of its ops is asked; asking every op cost two bindings
    calls per op."""
    cls = type(op.opview)
    return cls is not ir.OpView and getattr(cls, "_ODS_REGIONS", None) == (0, True)


# jaxlib's stub gives DenseIntElementsAttr no __iter__ (the object iterates): its loops carry an ignore.
def _int_list(attr: ir.Attribute) -> list[int]:
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(attr)
    if isinstance(attr, ir.DenseIntElementsAttr):
        return [int(x) for x in attr]  # type: ignore[attr-defined]
    if isinstance(attr, ir.ArrayAttr):
        return [ir.IntegerAttr(a).value for a in attr]
    raise PassError(f"expected an integer list attribute, got {attr}")


def _dense_layouts(attr: ir.Attribute) -> list[L.Layout | None]:
    """``operand_layouts``-style ArrayAttr: one minor_to_major per entry."""
    out: list[L.Layout | None] = []
    for a in ir.ArrayAttr(attr):
        out.append(L.intern(int(x) for x in ir.DenseIntElementsAttr(a)))  # type: ignore[attr-defined]
    return out


def conv_dims_from_labels(labels: str, op: ir.Operation | None = None) -> dict[str, Any]:
    """Convolution dimension numbers from HLO's ``dim_labels`` (e.g. ``bf01_oi01->bf01``).

    Each side names its dimensions in order: ``b``/``f`` batch and feature
    (``o``/``i`` output and input feature on the kernel), digits the spatial
    dimensions by number.
    """
    m = re.fullmatch(r"([bf0-9]+)_([oi0-9]+)->([bf0-9]+)", labels)

    def fail() -> PassError:
        return PassError(f"dim_labels {labels!r} is not lhs_rhs->out over b, f, o, i and spatial digits",
                         location_text(op.location) if op is not None else None)

    if m is None:
        raise fail()
    sides = []
    for text, letters in zip(m.groups(), ("bf", "oi", "bf")):
        spatial = sorted((c, i) for i, c in enumerate(text) if c.isdigit())
        if (sorted(c for c in text if not c.isdigit()) != sorted(letters)
                or [c for c, _ in spatial] != [str(k) for k in range(len(spatial))]):
            raise fail()
        sides.append((text.index(letters[0]), text.index(letters[1]), tuple(i for _, i in spatial)))
    (ib, if_, isp), (ko, ki, ksp), (ob, of, osp) = sides
    if not len(isp) == len(ksp) == len(osp):
        raise fail()
    return {"input_batch": ib, "input_feature": if_, "input_spatial": isp,
            "kernel_output_feature": ko, "kernel_input_feature": ki, "kernel_spatial": ksp,
            "output_batch": ob, "output_feature": of, "output_spatial": osp}


# The layout an HLO dump writes on an entry parameter instruction, when it is
# not the default (mlir.py keeps it as this argument attribute).
HLO_PARAMETER_LAYOUT = "stablehlo_layout.hlo_layout"


def _given_layout(op: ir.Operation) -> L.Layout | None:
    """The single-result layout the input already writes on ``op``, if any."""
    attrs = op.attributes
    if "result_layout" not in attrs:
        return None
    attr = attrs["result_layout"]
    if not isinstance(attr, ir.DenseIntElementsAttr):
        return None
    return L.intern(int(x) for x in attr)  # type: ignore[attr-defined]


def _extract(op: ir.Operation, name: str) -> dict[str, Any]:
    """The attributes the rules and targets read, as plain Python data."""
    attrs = op.attributes
    short = name.split(".", 1)[1]
    out: dict[str, Any] = {}
    if short == "transpose":
        out["perm"] = tuple(_int_list(attrs["permutation"]))
    elif short in ("broadcast_in_dim", "dynamic_broadcast_in_dim"):
        out["dims"] = tuple(_int_list(attrs["broadcast_dimensions"]))
    elif short == "broadcast":
        sizes = _int_list(attrs["broadcast_sizes"])
        rank = ir.RankedTensorType(op.results[0].type).rank
        out["dims"] = tuple(range(len(sizes), rank))
    elif short == "reduce":
        out["dims"] = tuple(_int_list(attrs["dimensions"]))
    elif short == "concatenate":
        out["dim"] = ir.IntegerAttr(attrs["dimension"]).value
    elif short == "custom_call":
        out["target"] = ir.StringAttr(attrs["call_target_name"]).value
        if "stablehlo_layout.dim_labels" in attrs:
            # A cuDNN convolution read from an XLA:GPU dump (see mlir.CONV_ATTRIBUTES).
            labels = ir.StringAttr(attrs["stablehlo_layout.dim_labels"]).value
            out["conv"] = conv_dims_from_labels(labels, op)

        if "operand_layouts" in attrs and "result_layouts" in attrs:
            out["operand_layouts"] = _dense_layouts(attrs["operand_layouts"])
            out["result_layouts"] = _dense_layouts(attrs["result_layouts"])
        if "output_operand_aliases" in attrs:
            aliases = []
            for a in ir.ArrayAttr(attrs["output_operand_aliases"]):
                text = str(a)
                outs = re.search(r"output_tuple_indices = \[([\d, ]*)\]", text)
                opnd = re.search(r"operand_index = (\d+)", text)
                opti = re.search(r"operand_tuple_indices = \[([\d, ]*)\]", text)
                out_idx = [int(x) for x in outs.group(1).split(",") if x.strip()] if outs else []
                op_tuple = [int(x) for x in opti.group(1).split(",") if x.strip()] if opti else []
                if opnd and not op_tuple:
                    aliases.append((out_idx[0] if out_idx else 0, int(opnd.group(1))))
            out["aliases"] = aliases
    elif name == "func.call":
        out["callee"] = ir.FlatSymbolRefAttr(attrs["callee"]).value
    elif short == "dot_general":
        dn = stablehlo.DotDimensionNumbers(attrs["dot_dimension_numbers"])
        out["lhs_batch"] = tuple(dn.lhs_batching_dimensions)
        out["rhs_batch"] = tuple(dn.rhs_batching_dimensions)
        out["lhs_contracting"] = tuple(dn.lhs_contracting_dimensions)
        out["rhs_contracting"] = tuple(dn.rhs_contracting_dimensions)
    elif short == "dot":
        lhs_rank = ir.RankedTensorType(op.operands[0].type).rank
        out["lhs_batch"] = out["rhs_batch"] = ()
        out["lhs_contracting"] = (lhs_rank - 1,)
        out["rhs_contracting"] = (0,)
    elif short == "convolution":
        cd = stablehlo.ConvDimensionNumbers(attrs["dimension_numbers"])
        out["conv"] = {
            "input_batch": cd.input_batch_dimension,
            "input_feature": cd.input_feature_dimension,
            "input_spatial": tuple(cd.input_spatial_dimensions),
            "kernel_input_feature": cd.kernel_input_feature_dimension,
            "kernel_output_feature": cd.kernel_output_feature_dimension,
            "kernel_spatial": tuple(cd.kernel_spatial_dimensions),
            "output_batch": cd.output_batch_dimension,
            "output_feature": cd.output_feature_dimension,
            "output_spatial": tuple(cd.output_spatial_dimensions),
        }
        # Left as a convolution by XLA:GPU's rewriter (see mlir.KEPT_CONVOLUTION).
        out["not_cudnn"] = "stablehlo_layout.not_a_cudnn_call" in attrs
        out["window_reversal"] = (
            any(bool(x) for x in ir.DenseBoolArrayAttr(attrs["window_reversal"]))
            if "window_reversal" in attrs else False
        )
    elif short == "constant":
        # Scalar integer constants: explain reads loop bounds from them.
        t = op.results[0].type
        if isinstance(t, ir.RankedTensorType) and t.rank == 0 and isinstance(t.element_type, ir.IntegerType):
            try:
                out["scalar"] = int(ir.DenseIntElementsAttr(attrs["value"])[0])
            except (ValueError, TypeError, IndexError):
                pass
    elif short == "compare":
        m = re.search(r"comparison_direction\s*<?\s*(\w+)", str(attrs["comparison_direction"]))
        if m:
            out["direction"] = m.group(1)
    elif short == "infeed" and "layout" in attrs:
        layouts: list[L.Layout | None] = []
        for entry in ir.ArrayAttr(attrs["layout"]):
            layouts.append(L.intern(ir.IntegerAttr(x).value for x in ir.ArrayAttr(entry)))
        out["infeed_layouts"] = layouts
    elif short == "all_gather":
        out["dim"] = ir.IntegerAttr(attrs["all_gather_dim"]).value
    elif short == "all_reduce" and "channel_handle" in attrs:
        m = re.search(r"handle = (\d+)", str(attrs["channel_handle"]))
        if m and int(m.group(1)) > 0:
            out["channel"] = int(m.group(1))
    elif short == "reduce_scatter":
        out["dim"] = ir.IntegerAttr(attrs["scatter_dimension"]).value
    elif short in ("reshape", "convert"):
        if PASS_CREATED in attrs:
            out["xla_pass_created"] = True
    elif short == "while" and LOOP_RANK in attrs:
        try:
            out["xla_loop_rank"] = ir.IntegerAttr(attrs[LOOP_RANK]).value
        except ValueError:
            raise PassError(f"{LOOP_RANK} must be an integer, not {attrs[LOOP_RANK]}",
                            location_text(op.location)) from None
    elif short == "all_to_all":
        if "split_dimension" in attrs:
            out["dim"] = ir.IntegerAttr(attrs["split_dimension"]).value
    elif short == "sharding_constraint" and "sharding" in attrs:
        out["sharding"] = sharding_text(attrs["sharding"])
    if short in GROUPS_ATTRIBUTE:
        out.update(collective_facts(op, short))
    elif short == "custom_call" and (sharding := sharding_of(attrs)) is not None:
        out["sharding"] = sharding
    return out


# Whether the core found the C API and it reads blocks as the bindings do:
# asked once per process (a fact of the installed jaxlib, not of any input).
_capi_state: list[bool] = []


# One op as the walk reads it: (handle, name, operand keys, result keys,
# result type keys, location, whether it is the block's last op).  Read
# through the C API (``_core.OpWalk.next_op``) the handle, the keys and the
# location are C API pointers; read through the bindings the handle is the
# op, the keys are its values and their types, and the location is None
# (the op's own, read from it).
OpRow = tuple[Any, str, tuple, tuple, tuple, "int | None", bool]


def _bindings_arguments(block: ir.Block) -> tuple[tuple, tuple]:
    """A block's arguments and their types, by the bindings' objects (``_core.block_arguments``)."""
    arguments = tuple(block.arguments)
    return arguments, tuple(a.type for a in arguments)


def _bindings_ops(block: ir.Block) -> Iterator[OpRow]:
    """A block's ops as ``OpWalk.next_op`` hands them over, by the bindings' objects."""
    ops = [op.operation for op in block.operations]
    last = len(ops) - 1
    for k, op in enumerate(ops):
        results = tuple(op.results)
        yield op, op.name, tuple(op.operands), results, tuple(r.type for r in results), None, k == last


def _handed_ops(walk: Any, block: ir.Block, cid: int, comp_instrs: "array[int]", scope: str) -> Iterator[OpRow]:
    """The ops of a block that ``walk`` (an ``OpWalk``) hands to the Python
    walk; it writes the rest itself as it goes (``cpp/bindings/bind_import_walk.cpp``)."""
    next_op, capsule, after = walk.next_op, block._CAPIPtr, 0
    while (op := next_op(capsule, after, cid, comp_instrs, scope)) is not None:
        yield op
        after = op[0]


def capi_unusable_reason() -> str:
    """Why the import walk reads values through the bindings, or '' when it
    reads them through the C API: the core could not find the C API in
    jaxlib's library, or a block read both ways did not agree."""
    why = capi.unusable_reason()
    if why:
        return why
    # The identities must be the bindings' own: one small module read both
    # ways, the core told of no op it may write, so it hands over each.
    with ir.Context() as ctx, ir.Location.unknown(ctx):
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(
            '"func.func"() ({\n^bb0(%a: tensor<2xf32>, %b: i32):\n'
            '  %0:2 = "probe.pair"(%a, %b) : (tensor<2xf32>, i32) -> (tensor<2xf32>, i1)\n'
            '  %1 = "probe.use"(%0#1, %0#0, %a) : (i1, tensor<2xf32>, tensor<2xf32>) -> f32\n'
            '  "func.return"(%1) : (f32) -> ()\n'
            '}) {function_type = (tensor<2xf32>, i32) -> f32, sym_name = "probe"} : () -> ()')
        block = module.body.operations[0].regions[0].blocks[0]
        walk = capi.op_walk(Columns(), capi.value_ids(), [], {}, array("q"), {})
        got = (capi.block_arguments(block), list(_handed_ops(walk, block, 0, array("i"), "")))
        ptr = capi.pointer

        def ptrs(objects: tuple) -> tuple[int, ...]:
            return tuple(map(ptr, objects))

        want = (tuple(map(ptrs, _bindings_arguments(block))),
                [(ptr(op), name, ptrs(operands), ptrs(results), ptrs(types), ptr(op.location), last)
                 for op, name, operands, results, types, _, last in _bindings_ops(block)])
        if got != want:
            return "the C API's reading of a probe block differs from the bindings'"
    return ""


def _capi_usable() -> bool:
    if not _capi_state:
        _capi_state.append(not capi_unusable_reason())
    return _capi_state[0]


class _Importer:
    def __init__(self, module: ir.Module | ir.Operation, inline_calls: bool, optimistic: bool = False,
                 given_layouts: bool = False, by_identity: bool | None = None) -> None:
        self.module = module.operation if isinstance(module, ir.Module) else module
        self.inline = inline_calls
        self.given_layouts = given_layouts
        self.optimistic = optimistic
        self.g = Graph()
        self.g.columns.location_text = location_text
        self.h = Handles()
        # What each op name means to the walk (``_facts_of``), worked out once per name.
        self.op_facts: dict[str, tuple[Any, bool, str, str | None, str, int, bool, bool, bool]] = {}
        # How the walk reads a block's values: by the C API's identities where
        # the core found it, else through the bindings' objects.  Either way a
        # value is known by its key, and a type by its key.
        self.by_identity = _capi_usable() if by_identity is None else by_identity
        # The name of an op's capsule (``_CAPICreate``), for the ops the walk makes objects of.
        self.op_capsule = capi.capsule_name(self.module)
        # Value id by key: by the C API's pointer in the core's table, else by the bindings' object.
        self.vid: Any = capi.value_ids() if self.by_identity else {}
        self.value_comp: list[int] = []
        # element, dims, rank, row of the columns' shape table
        self.tensor_types: dict[ir.Type, tuple[str, L.Dims, int, int]] = {}
        # The same, by a type's key (the C API's identity; the type itself in the bindings' walk).
        self.type_index: dict[Any, tuple[str, L.Dims, int, int]] = {} if self.by_identity else self.tensor_types
        # Through the C API the core writes the rows of the ops that need no
        # Python (``cpp/bindings/bind_import_walk.cpp``) and hands the walk the others.
        self.op_walk: Any = None
        if self.by_identity:
            self.h.op_ptrs = array("q")
            self.g.context = self.module.context  # the locations' owner (locations.location_at)
            self.op_walk = capi.op_walk(self.g.columns, self.vid, self.value_comp, self.type_index,
                                        self.h.op_ptrs, _NO_ATTRS)
        self.comp_parent: dict[int, int | None] = {}
        self.func_of: list[str] = []  # by computation id: the function whose body holds it
        self.depth: list[int] = []  # by computation id: 1 for a function body, +1 per region
        # Per computation: captured outer value id -> local parameter value id.
        self.captured: dict[int, dict[int, int]] = {}
        self.funcs: dict[str, ir.Operation] = {}
        self.scope = ""  # the function (instance) whose body is being walked
        self.inlining: list[str] = []  # the functions whose calls are being inlined
        self.stale_copies: list[ir.Operation] = []
        self.extracted: dict[tuple[str, ir.Attribute | None], SharedAttrs] = {}
        # A parameter's attributes by its number, a root's by its terminator's name.
        self.shared: dict[Any, SharedAttrs] = {}

    # -- values --------------------------------------------------------------
    def _new_value(self, v: ir.Value | None, t: ir.Type, producer: int, index: int, comp: int) -> int:
        g = self.g
        known = self.tensor_types.get(t) if t is not None else None
        if known is None and isinstance(t, ir.RankedTensorType):
            # Types are uniqued by MLIR: decode each distinct one once.
            dims = tuple(None if t.is_dynamic_dim(i) else d for i, d in enumerate(t.shape))
            known = self.tensor_types[t] = (L.xla_element_type(str(t.element_type)), dims, len(dims),
                                            g.columns.code_of_shape(dims))
        if known is not None:
            val = g.add_value(ARRAY, known[0], known[1], producer, index, known[3])
        elif isinstance(t, ir.TupleType):
            val = g.add_value(TUPLE, str(t), (), producer, index)
            # Each element is its own buffer (an XLA shape index), defined by the producer.
            elements = [self._new_value(None, t.get_type(i), producer, index, comp) for i in range(t.num_types)]
            val.elements = elements
            g.columns.element_owner.extend([val.id] * len(elements))
            g.columns.element_item.extend(elements)
        elif "token" in str(t):
            val = g.add_value(TOKEN, "token", (), producer, index)
        else:
            val = g.add_value(OTHER, str(t), (), producer, index)
        if v is not None:
            self.vid[v] = val.id
        self.value_comp.append(comp)
        return val.id

    def _new_keyed_value(self, key: Any, type_key: Any, type_of: Callable[[], ir.Type], producer: int,
                         index: int, comp: int) -> int:
        """``_new_value`` for a value and type known by their keys (an ``OpRow``):
        the type object is asked for only when its key is new."""
        known = self.type_index.get(type_key)
        if known is not None:
            vid = self.g.add_value(ARRAY, known[0], known[1], producer, index, known[3]).id
            self.vid[key] = vid
            self.value_comp.append(comp)
            return vid
        t = type_of()
        vid = self._new_value(key, t, producer, index, comp)
        info = self.tensor_types.get(t)
        if info is not None:
            self.type_index[type_key] = info
        return vid

    def _instr(self, op: str, comp: int, operands: list[int], attrs: dict[str, Any], loc: Any,
               handle: ir.Operation | None, pointer: int = 0) -> Instruction:
        """A parameter (no ``handle``) or a root (its terminator, by ``pointer`` too)."""
        ins = self.g.add_instr(op, comp, operands, attrs, loc, self.scope)
        if self.h.op_ptrs is not None:
            self.h.op_ptrs.append(pointer)
        else:
            self.h.ops.append(handle)  # type: ignore[union-attr]
        return ins

    def _alias(self, dst: int, src: int) -> None:
        pairs = [(dst, src)]
        while pairs:
            d, s = (self.g.values[i] for i in pairs.pop())
            self.g.share_buffer(d, s.buffer)
            if d.elements is not None and s.elements is not None:
                pairs.extend(zip(d.elements, s.elements))

    def _capture(self, vid: int, comp: int) -> int:
        """Make an outer value visible in ``comp`` as a parameter, as XLA's export does.

        Every region between the value's computation and ``comp`` gets its own
        parameter, outermost first; regions nest arbitrarily deep, so the
        levels are found by a loop, not by recursion.
        """
        missing: list[int] = []  # computations still without the value, innermost first
        c = comp
        while True:
            local = self.captured.setdefault(c, {})
            if vid in local:
                outer = local[vid]
                break
            missing.append(c)
            parent = self.comp_parent[c]
            assert parent is not None
            if self.value_comp[vid] == parent:
                outer = vid
                break
            c = parent
        for c in reversed(missing):
            outer = self._capture_one(vid, outer, c)
        return outer

    def _capture_one(self, vid: int, outer: int, comp: int) -> int:
        """The parameter of ``comp`` that shows ``outer`` (its parent's view of ``vid``)."""
        c = self.g.comps[comp]
        caller = self.g.instrs[c.caller]  # type: ignore[index]
        self.g.columns.captures.setdefault(caller.id, []).append(outer)
        self.g.columns.capture_owner.append(caller.id)
        self.g.columns.capture_item.append(outer)
        own_attrs(caller).setdefault("capture_params", []).append((comp, len(c.params)))
        ov = self.g.values[outer]
        p = self._instr("parameter", comp, [], {"number": len(c.params), "capture": outer}, caller.loc, None)
        p.scope = caller.scope
        pv = self._new_value(None, _NO_TYPE, p.id, len(c.params), comp)
        self.g.values[pv].retype(ov.kind, ov.element, ov.dims)
        p.results = [pv]
        c.params.append(p.id)
        c.instrs.insert(len(c.params) - 1, p.id)
        self.captured[comp][vid] = pv
        return pv

    def _shared_attrs(self, key: str, value: Any) -> SharedAttrs:
        """``{key: value}``, one dict for every instruction that has it."""
        attrs = self.shared.get((key, value))
        if attrs is None:
            attrs = self.shared[(key, value)] = SharedAttrs({key: value})
        return attrs

    # -- structure -----------------------------------------------------------
    def run(self) -> tuple[Graph, Handles]:
        body = self.module.regions[0].blocks[0]
        funcs = [op for op in body.operations if op.operation.name == "func.func"]
        if not funcs:
            raise PassError("the module has no func.func to assign layouts to")
        entry_name = _entry_name(funcs)
        # Private functions nothing reachable calls are not part of the program:
        # XLA's HLO->StableHLO conversion leaves a loop's body and condition
        # behind as functions although the while holds them inline.  XLA lays
        # out only what the entry reaches; so does the pass, and leaves them as written.
        if len(funcs) < 2:
            unreached: set[str] = set()
        elif self.optimistic:
            # The optimistic walk gives up at the first call it meets, so when
            # it finishes, the entry called nothing and no private function
            # other than the entry was reachable: the same set the search
            # below finds, without its walk over every reachable op.
            unreached = {n for f in funcs if (n := ir.StringAttr(f.attributes["sym_name"]).value) != entry_name
                         and _is_private(f)}
        else:
            unreached = _unreached_private(funcs, entry_name, self.h.calls)
        if unreached:
            funcs = [f for f in funcs if ir.StringAttr(f.attributes["sym_name"]).value not in unreached]
        inlined: set[str] = set()
        # Most modules call nothing, so the walk first assumes that and stops
        # at the first call it meets; only then are calls flattened (one more
        # walk over every function) and the import starts again.
        if self.inline and not self.optimistic:
            with self.module.context:
                inlined = _flatten_calls(funcs, entry_name, self.h.calls)
            funcs = [op for op in body.operations if op.operation.name == "func.func"
                     and ir.StringAttr(op.attributes["sym_name"]).value not in unreached]
        self.funcs = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs}
        self.h.inlined = inlined
        for name, f in self.funcs.items():
            if name in inlined:
                continue
            cid = self._new_comp(name, "func", None, None)
            self.g.func_by_name[name] = cid
            self.h.funcs[cid] = f
        self.g.entry = self.g.func_by_name[entry_name]
        self.g.comps[self.g.entry].is_entry = True
        for name, cid in list(self.g.func_by_name.items()):
            f = self.funcs[name]
            if len(f.regions[0].blocks) == 0:
                continue  # a declaration: nothing to lay out
            self.scope = name
            _drive(self._walk_region(f.regions[0], cid))
        self._link_calls()
        self._read_entry_signature()
        # Every value's uses, listed once the walk is over (the core's order: own
        # operands before captures, in instruction order), then XLA's orders.
        cols = self.g.columns
        cols.freeze(*capi.column_packers())
        if self.h.op_ptrs is not None:
            self.h.ops = LazyOps(self.h.op_ptrs, self.op_capsule)
        self.g.use_rows.fill(*capi.use_rows(len(self.g.values), cols.op_start, cols.op_items,  # type: ignore[arg-type]
                                            array("i", cols.capture_owner), array("i", cols.capture_item)))
        self._order_users()
        self._mark_late()
        self._read_list_order()
        # The walk read through the copies an earlier run inserted; the rewrite
        # puts back whichever are still needed (XLA's pass does the same on a
        # re-run), so running the pass on its own output changes nothing.
        for op in self.stale_copies:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
        return self.g, self.h

    def _read_list_order(self) -> None:
        """XLA's instruction list per computation, where the input carried it (``marks.mark_list_order``).

        An instruction XLA does not list (one the conversion added) follows
        the listed one before it in block order.
        """
        attrs = self.module.operation.attributes
        if LIST_ORDER not in attrs:
            return
        names = ir.StringAttr(attrs[LIST_ORDER]).value.split()
        del attrs[LIST_ORDER]
        position = {name: k for k, name in enumerate(names)}
        listed: dict[int, int] = {}
        for iid, op in enumerate(self.h.ops):
            if op is None:
                continue
            m = _NAME_LOC.match(str(op.location))
            if m is not None and m.group(1) in position:
                listed[iid] = position[m.group(1)]
        for cid, comp in enumerate(self.g.comps):
            if not comp.instrs:
                continue
            keys: dict[int, tuple[int, int]] = {}
            last = -1
            for k, iid in enumerate(comp.instrs):
                last = listed.get(iid, last)
                keys[iid] = (last, k)
            order = tuple(sorted(comp.instrs, key=keys.__getitem__))
            if order != tuple(comp.instrs):
                self.g.list_order[cid] = order

    def _mark_late(self) -> None:
        """Flag the ops other than reshapes and converts that an XLA pass made (``marks.pass_created_others``)."""
        if PASS_CREATED not in self.module.operation.attributes:
            return
        cols = self.g.columns
        listed = set(cols.attributed)
        for iid, op in enumerate(self.h.ops):
            if op is None:
                continue
            given = op.attributes
            if PASS_CREATED_EARLY in given:
                # Made by a pass that runs before those of the reshapes and converts.
                mark: Any = "early"
                del given[PASS_CREATED_EARLY]
            elif PASS_CREATED in given and op.name != "stablehlo.reshape":
                mark = True
                del given[PASS_CREATED]
            else:
                continue
            if "xla_pass_created" not in cols.attrs[iid]:
                cols.attrs[iid] = {**cols.attrs[iid], "xla_pass_created": mark}
            if iid not in listed:
                cols.attributed.append(iid)
        cols.attributed.sort()
        del self.module.operation.attributes[PASS_CREATED]

    def _order_users(self) -> None:
        """Offer a value to its readers in XLA's order where XLA's call inliner changed it (``hlo_metadata``)."""
        if USER_ORDERS not in self.module.attributes:
            return
        g = self.g
        for iid, op in enumerate(self.h.ops):
            if op is None or USER_ORDER not in op.attributes:
                continue
            ins = g.instrs[iid]
            attr = op.attributes[USER_ORDER]
            try:
                order = list(ir.DenseI64ArrayAttr(attr))
            except ValueError:
                order = None
            if order is None or len(ins.results) != 1:
                raise PassError(f"{USER_ORDER} must be an array<i64: ...> on an op with one result, "
                                f"not {attr}", ins.loc)
            v = g.values[ins.results[0]]
            readers = list(dict.fromkeys(user for user, _ in v.uses))
            if sorted(order) != list(range(len(readers))):
                continue  # an edit changed the op's readers since the dump: the module's order stands
            rank = {readers[k]: position for position, k in enumerate(order)}
            v.uses.sort(key=lambda use: rank[use[0]])
            g.columns.reordered.append(v.id)

    def _new_comp(self, name: str, kind: str, caller: int | None, parent: int | None) -> int:
        cid = len(self.g.comps)
        self.g.comps.append(Computation(cid, name, kind, [], -1, array("i"), caller))
        self.comp_parent[cid] = parent
        self.func_of.append(name if parent is None else self.func_of[parent])
        self.depth.append(1 if parent is None else self.depth[parent] + 1)
        self.g.region_depth = max(self.g.region_depth, self.depth[-1])
        return cid

    # The walk nests as deep as the module's regions and inlined calls do.  Its
    # steps are generators that yield the walk of a nested region or callee
    # and receive its result; ``_drive`` runs them on an explicit stack, so
    # depth costs memory, not Python's recursion limit.
    def _walk_region(self, region: ir.Region, cid: int) -> Walk:
        g = self.g
        comp = g.comps[cid]
        self.h.regions[cid] = region
        block = region.blocks[0]
        keys, type_keys = (capi.block_arguments(block) if self.by_identity
                           else _bindings_arguments(block))
        arguments = block.arguments
        for n, (arg, type_key) in enumerate(zip(keys, type_keys)):
            p = self._instr("parameter", cid, [], self._shared_attrs("number", n), comp.name, None)
            # At its size, not room for four.
            p.results = [self._new_keyed_value(arg, type_key, lambda: arguments[n].type, p.id, n, cid)]  # noqa: B023
            comp.params.append(p.id)
            comp.instrs.append(p.id)
        results = yield self._walk_ops(block, cid)
        if results is not None:
            terminator, root_operands, where, pointer = results
            self.h.terminators[cid] = terminator
            root = self._instr("root", cid, root_operands, self._shared_attrs("op", terminator.name), where,
                               terminator, pointer)
        else:
            root = self._instr("root", cid, [], self._shared_attrs("op", "none"), comp.name, None)
        comp.root = root.id
        comp.instrs.append(root.id)

    def _walk_ops(self, block: ir.Block, cid: int) -> Walk:
        """Import a block's ops into computation ``cid``; return its terminator's operands."""
        g = self.g
        comp = g.comps[cid]
        vid, value_comp = self.vid, self.value_comp
        # The common cases of _instr and _new_value are written out below: they
        # run once per op and per result.
        comp_instrs = comp.instrs
        hops, scope, capture = self.h.ops, self.scope, self._capture
        op_facts = self.op_facts
        cols = g.columns
        col_producer, col_shape, col_kind, col_index, col_element = (
            cols.producer, cols.shape, cols.kind, cols.index, cols.element)
        col_comp, col_op, col_count, col_items, col_results, col_attrs, col_where, col_scope = (
            cols.comp, cols.op, cols.operand_count, cols.op_items, cols.result_lists, cols.attrs, cols.where,
            cols.scope)
        assert col_count is not None and col_results is not None
        # An op's bindings object is made only where the walk reads more than
        # its name, operands and results (attributes, regions, a new type).
        # Through the C API the core writes the ops that need none of that
        # (``OpWalk``), and each object made here goes when the walk moves on,
        # so a large block's are never all alive at once.
        walk = self.op_walk
        hptrs = self.h.op_ptrs
        type_index = self.type_index
        capsule = self.op_capsule
        ops = _bindings_ops(block) if walk is None else _handed_ops(walk, block, cid, comp_instrs, scope)
        for handle, name, operand_keys, result_keys, type_keys, where, last in ops:
            op, pointer = (None, handle) if walk is not None else (handle, 0)
            if name == "mhlo.copy":
                if op is None:
                    op = _operation_at(pointer, capsule)
                if COPY_MARK in op.attributes:
                    # Its value stands for its operand; a branch captures that where
                    # the copy is first read, as before the copy went in (a copy sits
                    # at its branch's start, and capture order decides ties).
                    vid[result_keys[0]] = vid[operand_keys[0]]
                    self.stale_copies.append(op)
                    continue
            # Sliced to its size: a list that grew by appends keeps room for four.
            operands = [i if value_comp[i] == cid else capture(i, cid)
                        for i in map(vid.__getitem__, operand_keys)][:]
            if last and _is_terminator(name):
                if op is None:
                    op = _operation_at(pointer, capsule)
                if where is None:
                    return op, operands, op.location, 0
                return op, operands, where, pointer
            if name == "func.call" and self.inline:
                if self.optimistic:
                    raise _CallsToFlatten()
                if op is None:
                    op = _operation_at(pointer, capsule)
                yield self._inline_call(op, cid, operands, result_keys)
                continue
            facts = op_facts.get(name)
            if facts is None:
                if op is None:
                    op = _operation_at(pointer, capsule)
                rule, needs, tuple_kind, keyed_by = _facts_of(name)
                no_regions = _never_has_regions(op)
                # Most ops (elementwise ones) are plain: a known rule, no attributes
                # the rules read, no regions, no tuple, nothing forwarded.  The
                # core writes those, and those whose facts come from one
                # attribute, once it knows them (a copy is read here: its mark).
                written = (rule.known and no_regions and not tuple_kind and not rule.forwards
                           and not self.given_layouts and name != "mhlo.copy")
                plain = written and not needs and keyed_by is None
                facts = op_facts[name] = (rule, needs, tuple_kind, keyed_by, name, cols.code_of_op(name), no_regions,
                                          plain, written and keyed_by is not None)
                if walk is not None and plain:
                    walk.plain(pointer, facts[5])
                elif walk is not None and facts[8]:
                    walk.keyed(pointer, facts[5], keyed_by)
            # Every instruction of one op name holds the same string, not a copy per op.
            rule, needs, tuple_kind, keyed_by, name, code, no_regions, plain, core_keyed = facts
            if plain:
                attrs: dict[str, Any] = _NO_ATTRS
            else:
                if op is None and (needs or keyed_by is not None or not no_regions or tuple_kind == "get"
                                   or self.given_layouts):
                    op = _operation_at(pointer, capsule)
                if not rule.known:
                    g.unknown_ops[name] = g.unknown_ops.get(name, 0) + 1
                if keyed_by is not None:
                    assert op is not None
                    given = op.attributes
                    key = (name, given[keyed_by] if keyed_by in given else None)
                    extracted = self.extracted.get(key)
                    if extracted is None:
                        extracted = self.extracted[key] = SharedAttrs(_extract(op, name)) or _NO_ATTRS
                        if core_keyed and walk is not None:
                            walk.facts(pointer, extracted, not CORE_ATTRIBUTES.isdisjoint(extracted))
                    # Ops of one name and attribute share its facts (a region op
                    # whose regions capture values gets its own dict, own_attrs).
                    attrs = extracted
                else:
                    attrs = _extract(op, name) if needs else _NO_ATTRS  # type: ignore[arg-type]
                    if not attrs:
                        attrs = _NO_ATTRS
                if self.given_layouts and op is not None and len(op.results) == 1:
                    given = _given_layout(op)
                    if given is not None:
                        attrs = {**attrs, "given_layout": given}
            # Graph.add_instr, written out: this runs once per op.
            iid = len(col_comp)
            col_comp.append(cid)
            col_op.append(code)
            col_count.append(len(operands))
            col_items.extend(operands)
            # Its results are listed once its regions are walked (their values come first).
            col_results.append(())
            col_attrs.append(attrs)
            col_scope.append(scope)
            if where is None:
                assert op is not None  # the bindings' walk: every op is there
                col_where.append(0)
                cols.where_other[iid] = op.location
            else:
                col_where.append(where)
            if hptrs is not None:
                hptrs.append(pointer)
            else:
                hops.append(op)  # type: ignore[union-attr]
            comp_instrs.append(iid)
            if attrs and not CORE_ATTRIBUTES.isdisjoint(attrs):
                cols.attributed.append(iid)
            if not no_regions and op is not None and len(op.regions):
                kinds = _REGION_KINDS.get(name, ())
                for k, region in enumerate(op.regions):
                    if len(region.blocks) == 0:
                        continue
                    kind = ("branch" if kinds is None else kinds[k]) if kinds != () else "apply"
                    # Named after the function and the op's id alone (unique), not the
                    # whole nesting path, which grows with depth: 10,000 nested loops
                    # would spend gigabytes on names.
                    child = self._new_comp(f"{self.func_of[cid]}.{name.split('.')[-1]}{iid}.{kind}{k}",
                                           kind, iid, cid)
                    cols.callees.setdefault(iid, []).append(child)
                    cols.callee_owner.append(iid)
                    cols.callee_item.append(child)
                    yield self._walk_region(region, child)
            # The results list is made at its size (one appended to keeps room
            # for four): most ops have one result, of a type already decoded.
            if len(result_keys) == 1:
                res = result_keys[0]
                known = type_index.get(type_keys[0])
                if known is not None:  # Graph.add_value for a known tensor type, written out
                    n = len(col_producer)
                    col_producer.append(iid)
                    col_shape.append(known[3])
                    col_kind.append(0)  # ARRAY
                    col_index.append(0)
                    col_element.append(known[0])
                    vid[res] = n
                    value_comp.append(cid)
                    results = [n]
                else:
                    results = [self._new_keyed_value(
                        res, type_keys[0], lambda: self._op_of(op, pointer).results[0].type,  # noqa: B023
                        iid, 0, cid)]
                col_results[iid] = results[0]  # one result: its vid, not a list
            else:
                results = [self._new_keyed_value(res, type_keys[r], lambda: self._op_of(op, pointer).results[r].type,  # noqa: B023
                                                      iid, r, cid)
                           for r, res in enumerate(result_keys)]
                col_results[iid] = results
            if plain:
                continue
            # Tuples and get_tuple_element define no array buffers of their
            # own: their elements point at the buffers they were built from.
            if tuple_kind == "get":
                assert op is not None
                tup = g.values[operands[0]]
                if tup.elements is not None:
                    self._alias(results[0], tup.elements[ir.IntegerAttr(op.attributes["index"]).value])
            elif tuple_kind == "make":
                for element, operand in zip(g.values[results[0]].elements or (), operands):
                    self._alias(element, operand)
            if rule.forwards:
                for r, v in enumerate(results):
                    if r < len(operands):
                        g.share_buffer(g.values[v], cols.buffer_of.get(operands[r], operands[r]))
        return None

    def _op_of(self, op: ir.Operation | None, pointer: int) -> ir.Operation:
        """``op``, or the op at C API ``pointer`` where the walk made no object for it."""
        return op if op is not None else _operation_at(pointer, self.op_capsule)

    def _inline_call(self, op: ir.Operation, cid: int, operands: list[int], result_keys: tuple) -> Walk:
        """Import a callee's body in place of the call, as XLA's CallInliner does.

        The callee was cloned for this call site (``_flatten_calls``), so each
        of its ops belongs to exactly one instruction.  Its arguments are the
        call's operands, its returned values the call's results; ``views``
        remembers which MLIR value shows a graph value in the other scope.
        """
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        f = self.funcs.get(callee)
        if f is None or len(f.regions[0].blocks) == 0:
            raise PassError(f"call to @{callee}, which has no body to inline", location_text(op.location))
        if callee == self.scope or callee in self.inlining:
            raise PassError(f"@{callee} calls itself; recursive calls cannot be inlined",
                            location_text(op.location))
        self.inlining.append(self.scope)
        block = f.regions[0].blocks[0]
        keys = capi.block_arguments(block)[0] if self.by_identity else block.arguments
        caller_scope = self.scope
        self.scope = callee
        for key, arg, vid in zip(keys, block.arguments, operands):
            self.vid[key] = vid
            self.h.views.setdefault((vid, callee), []).append(arg)
        found = yield self._walk_ops(block, cid)
        self.scope = caller_scope
        results = found[1] if found is not None else []
        for key, res, vid in zip(result_keys, op.results, results):
            self.vid[key] = vid
            self.h.views.setdefault((vid, caller_scope), []).append(res)
        self.h.call_results.append((op.operation, results))
        self.inlining.pop()

    def _link_calls(self) -> None:
        cols = self.g.columns
        code = cols.op_code.get("func.call")
        if code is None:
            return
        for iid in list(compress(count(), map(code.__eq__, cols.op))):
            ins = self.g.instrs[iid]
            callee = self.g.func_by_name.get(ins.attrs["callee"])
            if callee is None:
                raise PassError(f"call to unknown function @{ins.attrs['callee']}", ins.loc)
            ins.callees = [callee]
            cols.callee_owner.append(iid)
            cols.callee_item.append(callee)
            self.g.comps[callee].callers.append(iid)

    def _read_entry_signature(self) -> None:
        g = self.g
        assert g.entry is not None
        f = self.h.funcs[g.entry]
        comp = g.comps[g.entry]
        where = location_text(f.location)
        params = [g.values[g.instrs[p].results[0]] for p in comp.params]
        results = [g.values[v] for v in g.instrs[comp.root].operands]
        module_params = _module_layouts(self.module, "mhlo.xla_entry_computation_parameter_layouts")
        module_result = _module_layouts(self.module, "mhlo.xla_entry_computation_result_layout")
        if module_result is not None and len(module_result) == 1 and isinstance(module_result[0], list):
            module_result = module_result[0]  # a tuple result is one nested array
        arg_attrs = _attr_dicts(f, "arg_attrs", len(params))
        res_attrs = _attr_dicts(f, "res_attrs", len(results))
        parsed: dict[str, L.Layout] = {}  # thousands of parameters spell a few layouts
        g.entry_param_modes = [
            _mode(_requested(a), module_params, i, v, where, f"parameter {i}", parsed)
            for i, (a, v) in enumerate(zip(arg_attrs, params))
        ]
        g.entry_result_modes = [
            _mode(_requested(a), module_result, i, v, where, f"result {i}", parsed)
            for i, (a, v) in enumerate(zip(res_attrs, results))
        ]
        if self.given_layouts:
            for p, a in zip(comp.params, arg_attrs):
                text = a.get(HLO_PARAMETER_LAYOUT)
                if text is not None:
                    own_attrs(self.g.instrs[p])["given_layout"] = L.intern(int(x) for x in text.split(",") if x)
        for i, a in enumerate(arg_attrs):
            alias = a.get("tf.aliasing_output")
            if alias is not None:
                g.entry_aliases.append((i, int(alias)))
        g.entry_aliases.extend(_module_aliases(self.module, len(results)))
        attrs = self.module.attributes
        if "mhlo.num_partitions" in attrs:
            g.spmd = ir.IntegerAttr(attrs["mhlo.num_partitions"]).value > 1
        meshes = read_meshes(self.module)
        stated = [a["sharding"] for a in (*arg_attrs, *res_attrs) if "sharding" in a]
        g.partitioned = g.spmd or any(m.size > 1 for m in meshes.values()) or any(map(splits, stated))
        if g.partitioned:
            g.meshes = meshes
            for value, a in zip(params, arg_attrs):
                if "sharding" in a:
                    g.shardings[value.id] = a["sharding"]
            if any("sharding" in a for a in res_attrs):
                g.result_shardings = [a.get("sharding") for a in res_attrs]


def _entry_name(funcs: list[ir.Operation]) -> str:
    names = [ir.StringAttr(f.attributes["sym_name"]).value for f in funcs]
    if "main" in names:
        return "main"
    public = [
        n for f, n in zip(funcs, names)
        if "sym_visibility" not in f.attributes
        or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
    ]
    if len(public) == 1:
        return public[0]
    raise PassError(
        "cannot tell the entry function: no @main and "
        f"{len(public)} public functions ({', '.join(public) or 'none'})"
    )


COPY_NAME_PREFIX = "layout_copy("
# XLA's copy of an operand a custom call overwrites in place (aliasing.py):
# its location says so, and it carries IN_PLACE_MARK next to COPY_MARK.
IN_PLACE_NAME_PREFIX = "in_place_copy("
IN_PLACE_MARK = "stablehlo_layout.in_place"
# A unit attribute on every copy this pass inserts: it survives printing
# without locations, so a later run can recognise its own copies.
COPY_MARK = "stablehlo_layout.inserted"
# A unit attribute next to an entry ``mhlo.layout_mode`` the pass chose where the
# input left the layout open ("auto", or nothing with free entry layouts).  A
# later run treats that layout as open again, as XLA's pass restores the entry
# layout it was given before a re-run.  Read as a pin, it would start propagation
# from the other end, where ties between equally good layouts (size-1 dimensions,
# which demand reaches an operand first) can fall the other way.
CHOSEN_MARK = "stablehlo_layout.chosen"


def _calls_of(name: str, f: ir.Operation, calls: dict[str, list[ir.Operation]]) -> list[ir.Operation]:
    """The ``func.call`` ops in function ``f`` (named ``name``), in pre-order; each
    function is walked for them once, however many of the steps ask."""
    found = calls.get(name)
    if found is None:
        found = calls[name] = [op for op in nested_ops(f.operation) if op.name == "func.call"]
    return found


def _unreached_private(funcs: list[ir.Operation], entry: str, calls: dict[str, list[ir.Operation]]) -> set[str]:
    """Names of the private functions that no call reachable from ``entry`` names."""
    by_name = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs}
    reached = {entry}
    pending = [entry]
    while pending:
        name = pending.pop()
        f = by_name.get(name)
        if f is None:
            continue
        for op in _calls_of(name, f, calls):
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee not in reached:
                reached.add(callee)
                pending.append(callee)
    return {name for name, f in by_name.items() if name not in reached and _is_private(f)}


def _is_private(f: ir.Operation) -> bool:
    attrs = f.attributes
    return "sym_visibility" in attrs and ir.StringAttr(attrs["sym_visibility"]).value == "private"


def _flatten_calls(funcs: list[ir.Operation], entry: str, calls: dict[str, list[ir.Operation]]) -> set[str]:
    """Give every call site its own copy of the callee (XLA's FlattenCallGraph).

    Returns the names of the functions that are now called exactly once and
    will be imported inline.  Clones are named ``<callee>.site<k>``; the
    rewrite later folds clones that ended up identical.  ``calls`` gets every
    function's call ops, the clones' too.
    """
    by_name = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in funcs}
    called: set[str] = set()
    counter: dict[str, int] = {}

    def visit(start: str) -> None:
        # Depth-first over call sites, as a recursion would go, on an explicit
        # stack: call chains may be any depth.  ``path`` is the chain of
        # (cloned) functions from ``start`` to the one being scanned.
        path = [start]
        on_path = {start}
        stack = [iter(_calls_of(start, by_name[start], calls))]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                on_path.discard(path.pop())
                continue
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            base = by_name.get(callee)
            if base is None or len(base.regions[0].blocks) == 0:
                continue
            if callee in on_path:
                raise PassError(f"@{callee} calls itself; recursive calls cannot be inlined",
                                location_text(op.location))
            target = callee
            if callee in called or callee == entry:
                root = callee.split(".site")[0]
                counter[root] = counter.get(root, 0) + 1
                target = f"{root}.site{counter[root]}"
                while target in by_name:
                    counter[root] += 1
                    target = f"{root}.site{counter[root]}"
                clone = base.operation.clone(ip=ir.InsertionPoint.after(base.operation))
                clone.attributes["sym_name"] = ir.StringAttr.get(target)
                clone.attributes["sym_visibility"] = ir.StringAttr.get("private")
                by_name[target] = clone
                if not _calls_of(callee, base, calls):
                    calls[target] = []  # a clone of a function that calls nothing calls nothing
                op.attributes["callee"] = ir.FlatSymbolRefAttr.get(target)
            called.add(target)
            path.append(target)
            on_path.add(target)
            stack.append(iter(_calls_of(target, by_name[target], calls)))

    # Start from the functions nobody calls: a callee reached first as a root
    # would be laid out twice.
    referenced = {ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                  for name, f in by_name.items() for op in _calls_of(name, f, calls)}
    roots = [entry] + [n for n in list(by_name) if n != entry and n not in referenced]
    for name in roots:
        if name not in called and len(by_name[name].regions[0].blocks):
            visit(name)
    return called


_NO_TYPE: Any = None
# The attributes of every op the rules read none of.
_NO_ATTRS = SharedAttrs()


def _is_terminator(name: str) -> bool:
    return name in ("func.return", "stablehlo.return", "mhlo.return")


def _attr_dicts(f: ir.Operation, key: str, n: int) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [{} for _ in range(n)]
    if key not in f.attributes:
        return out
    for i, d in enumerate(ir.ArrayAttr(f.attributes[key])):
        if i >= n:
            break
        d = ir.DictAttr(d)
        for name in ("mhlo.layout_mode", "tf.aliasing_output"):
            if name in d:
                a = d[name]
                out[i][name] = ir.StringAttr(a).value if isinstance(a, ir.StringAttr) else str(ir.IntegerAttr(a).value)
        if CHOSEN_MARK in d:
            out[i][CHOSEN_MARK] = ""
        sharding = sharding_of(d)
        if sharding is not None:
            out[i]["sharding"] = sharding
        if HLO_PARAMETER_LAYOUT in d:
            out[i][HLO_PARAMETER_LAYOUT] = ",".join(str(int(x)) for x in ir.DenseIntElementsAttr(d[HLO_PARAMETER_LAYOUT]))  # type: ignore[attr-defined]
    return out


def _requested(attrs: dict[str, str]) -> str | None:
    """The ``mhlo.layout_mode`` an entry leaf asks for; one this pass chose is still open."""
    if CHOSEN_MARK in attrs:
        return "auto"
    return attrs.get("mhlo.layout_mode")


def _module_aliases(module: ir.Operation, n_results: int) -> list[tuple[int, int]]:
    """(parameter, result) pairs from XLA's ``mhlo.input_output_alias`` module attribute."""
    attrs = module.attributes
    if "mhlo.input_output_alias" not in attrs:
        return []
    out = []
    for entry in ir.ArrayAttr(attrs["mhlo.input_output_alias"]):
        d = ir.DictAttr(entry)
        alias = ir.DictAttr(d["alias"])
        if len(_int_list(alias["parameter_index"])):
            continue  # an element of a tuple parameter: entry parameters are flat here
        output = _int_list(d["output_index"])
        result = output[0] if output else 0
        if len(output) <= 1 and result < n_results:
            out.append((ir.IntegerAttr(alias["parameter_number"]).value, result))
    return out


def _module_layouts(module: ir.Operation, key: str) -> list[Any] | None:
    attrs = module.attributes
    if key not in attrs:
        return None

    def conv(a: ir.Attribute) -> Any:
        if isinstance(a, ir.ArrayAttr):
            return [conv(x) for x in a]
        return L.intern(int(x) for x in ir.DenseIntElementsAttr(a))  # type: ignore[attr-defined]

    return [conv(a) for a in ir.ArrayAttr(attrs[key])]


def _mode(text: str | None, module_layouts: list[Any] | None, i: int, v: Any, where: str,
          what: str, parsed: dict[str, L.Layout]) -> L.Layout | str | None:
    """An entry parameter/result: a pinned layout, "auto", or None (unstated)."""
    if text is None:
        if module_layouts is not None and i < len(module_layouts) and not isinstance(module_layouts[i], list):
            lay = module_layouts[i]
            if v.is_array and len(lay) == v.rank and L.is_permutation(lay, v.rank):
                return lay
        return None
    if text == "auto":
        return "auto"
    if text == "default":
        return L.default_layout(v.rank) if v.is_array else None
    try:
        lay = parsed.get(text)
        if lay is None:
            lay = parsed[text] = L.parse_layout(text)
    except ValueError as e:
        raise PassError(f'{what}: mhlo.layout_mode = "{text}" is not a layout: {e}', where) from None
    if not v.is_array:
        return None
    if not L.is_permutation(lay, v.rank):
        raise PassError(
            f'{what}: mhlo.layout_mode = "{text}" is not a permutation of the {v.rank} dimensions of '
            f"{shape_text(v)}",
            where,
        )
    return lay


Walk = Generator["Walk", Any, Any]


def _drive(walk: Walk) -> Any:
    """Run a walk and every nested walk it yields, innermost first; return its result."""
    stack = [walk]
    sent: Any = None
    while stack:
        try:
            inner = stack[-1].send(sent)
        except StopIteration as done:
            stack.pop()
            sent = done.value
            continue
        stack.append(inner)
        sent = None
    return sent


class _CallsToFlatten(Exception):
    """The optimistic walk met a call: flatten the call graph and walk again."""


def import_module(module: ir.Module | ir.Operation, inline_calls: bool = False,
                  given_layouts: bool = False, by_identity: bool | None = None) -> tuple[Graph, Handles]:
    """Build the constraint graph; with ``inline_calls`` calls are imported inline (XLA:CPU/GPU).

    With ``given_layouts`` an op's ``result_layout`` (the layout an HLO dump
    gave the instruction before the pass) is kept as ``attrs["given_layout"]``.
    """
    if inline_calls:
        try:
            # Nothing is written to the module before the walk ends, so a walk
            # abandoned at a call leaves it as it was.
            return _Importer(module, inline_calls, optimistic=True, given_layouts=given_layouts,
                             by_identity=by_identity).run()
        except _CallsToFlatten:
            pass
    return _Importer(module, inline_calls, given_layouts=given_layouts, by_identity=by_identity).run()
