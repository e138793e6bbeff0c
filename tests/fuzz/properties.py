"""Properties every run of the layout pass must have, checked on one program.

``check_program(program, targets, execute, cache)`` returns a list of ``Failure``s
(empty when the program passed).  Per target (generic and xla-cpu by default):

raises        the pass never raises;
verify        the printed output loads and verifies again;
contract      every op with ranked-tensor results carries ``xla_shape`` (and
              ``result_layout`` agreeing with it when it has one result); the
              entry function carries a permutation ``mhlo.layout_mode`` on every
              array parameter and result, and pinned entry layouts are kept;
determinism   two runs from the same text print byte-identical modules;
exact         a run in exact mode (every round, every computation through the
              worklist, provenance kept: what explain and trace use) prints the
              same module as the default fast run;
idempotence   running the pass on its own output adds no ``mhlo.copy`` and
              changes no layout attribute (it then sees the ``mhlo.layout_mode``
              pins it wrote itself, those it chose marked ``stablehlo_layout.chosen``:
              the intended fixed point);
useless-copy  every ``mhlo.copy`` joins values whose layouts differ (the copy's
              ``xla_shape`` against its operand's producer / entry parameter),
              but XLA's same-layout copy of an in-place custom-call operand;
missing-copy  every edge whose producer and consumer layouts must agree does:
              ops that cannot change layout (elementwise, slice, pad, concatenate,
              reverse, dynamic_(update_)slice, sort, scatter, while,
              @LayoutConstraint) have same-rank operands in the result's layout;
              while / case / if / call / @main interfaces agree across the
              boundary; LayoutConstraint results have their pinned layout;
report        ``r.copies`` lists exactly the copies in the output, each with
              ``src != dst`` unless it is an in-place operand copy;
commands      what ``explain`` (with its what-if fixes), ``trace`` and
              ``trace --html`` build never raises; explain reports exactly the
              copies assign made, its JSON matches docs/explain.schema.json, every
              fix it offers removes its copy, and the trace has one line per pop;
execute       original and rewritten compute bit-identical results on CPU
              (``tests.support.equivalence``), with the original's outputs and
              each distinct rewritten text compiled only once.

The layout of a value in the output is read from the output itself: op results
from ``xla_shape``, @main arguments from ``mhlo.layout_mode``, while region
arguments from the while's results, private function arguments from their call
sites (which must agree).
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from typing import Any

from jaxlib.mlir import ir

from stablehlo_layout.model import layout as L
from stablehlo_layout.ir import mlir
from stablehlo_layout.frontends.api import assign_module
from stablehlo_layout.ir.mlir import nested_ops

TARGETS = ("generic", "xla-cpu")

# Ops whose same-rank operands must have the result's layout (DESIGN §8).
_ELEMENTWISE = set("""
abs add and atan2 cbrt ceil clamp compare complex convert cosine count_leading_zeros divide
exponential exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum
multiply negate not or popcnt power real reduce_precision remainder round_nearest_afz
round_nearest_even rsqrt select shift_left shift_right_arithmetic shift_right_logical sign sine
sqrt subtract tan tanh xor
""".split())
_CANNOT_CHANGE = _ELEMENTWISE | {
    "concatenate", "slice", "pad", "reverse", "dynamic_slice", "dynamic_update_slice", "sort", "scatter",
}
CANNOT_CHANGE = {f"stablehlo.{n}" for n in _CANNOT_CHANGE}


@dataclass
class Failure:
    prop: str
    target: str
    message: str

    def __str__(self) -> str:
        return f"[{self.target}] {self.prop}: {self.message}"


@dataclass
class Cache:
    """Outputs by module text: each distinct module is compiled and run once."""

    outputs: dict[tuple[str, int], Any] = field(default_factory=dict)
    max_entries: int = 64

    def run(self, text: str, seed: int):
        from tests.support import equivalence as eq

        key = (_execution_key(text), seed)
        if key not in self.outputs:
            if len(self.outputs) >= self.max_entries:
                self.outputs.pop(next(iter(self.outputs)))
            try:
                self.outputs[key] = ("ok", eq.run(text, eq.make_inputs(text, seed)))
            except Exception as e:  # noqa: BLE001 - recorded and reported
                self.outputs[key] = ("error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return self.outputs[key]


_IGNORED_BY_XLA = re.compile(r'xla_shape = "[^"]*"|result_layout = dense<[^>]*> : tensor<\d+xindex>')
_ENTRY_ATTRS = re.compile(r"^module( @[\w.]+)? attributes \{mhlo\.xla_entry_computation_.*\} \{$", re.M)


_DEFAULT_MODE = re.compile(r' \{mhlo\.layout_mode = "(default|\{[0-9,]*\})"\}')


def _drop_default_mode(m: re.Match) -> str:
    mode = m.group(1)
    if mode == "default":
        return ""
    dims = [int(x) for x in mode[1:-1].split(",") if x]
    return "" if dims == sorted(dims, reverse=True) else m.group(0)


def _execution_key(text: str) -> str:
    """The text with what XLA ignores or takes as given removed: texts with the
    same key compile to the same executable.  Dropped: ``xla_shape`` and
    ``result_layout`` (DESIGN §10), the ``mhlo.xla_entry_computation_*`` module
    attributes (PJRT reads only ``mhlo.layout_mode``), and ``mhlo.layout_mode``
    pins that say the default layout (PJRT compiles an absent pin as the
    default layout, whatever the pass's ``--entry-layouts``)."""
    text = _ENTRY_ATTRS.sub(lambda m: f"module{m.group(1) or ''} {{", text, count=1)
    text = _DEFAULT_MODE.sub(_drop_default_mode, text)
    return _IGNORED_BY_XLA.sub("", text)


# --------------------------------------------------------------------------
# running the pass


_CTX: list = [None]


def context():
    """The MLIR context of the program being checked (``fresh_context`` starts a new one)."""
    if _CTX[0] is None:
        _CTX[0] = mlir.make_context()
    return _CTX[0]


def fresh_context() -> None:
    _CTX[0] = None


def run_pass(text: str, target: str, mode: str, exact: bool = False):
    m = mlir.load(text.encode(), "fuzz.mlir", context())
    r = assign_module(m, target, mode, exact=exact)
    return mlir.print_module(m), r


_CONTROL_FLOW = ("stablehlo.while", "stablehlo.case", "stablehlo.if")


def _str_attr(op, name: str) -> str | None:
    if name not in op.attributes:
        return None
    return ir.StringAttr(op.attributes[name]).value


def _arg_modes(func, key: str) -> list[str | None]:
    if key not in func.attributes:
        return []
    out = []
    for d in ir.ArrayAttr(func.attributes[key]):
        d = ir.DictAttr(d)
        out.append(ir.StringAttr(d["mhlo.layout_mode"]).value if "mhlo.layout_mode" in d else None)
    return out


def layout_signature(text: str) -> list[tuple]:
    """Every layout-carrying attribute of a module, in walk order."""
    m = mlir.load(text.encode(), "sig.mlir", context())
    sig: list[tuple] = []
    top = m.operation
    for key in ("mhlo.xla_entry_computation_parameter_layouts", "mhlo.xla_entry_computation_result_layout"):
        if key in top.attributes:
            sig.append((key, str(top.attributes[key])))
    for op in nested_ops(top):
        if op.name == "func.func":
            name = _str_attr(op, "sym_name")
            sig.append(("func", name, tuple(_arg_modes(op, "arg_attrs")), tuple(_arg_modes(op, "res_attrs"))))
            continue
        rl = str(op.attributes["result_layout"]) if "result_layout" in op.attributes else None
        sig.append((op.name, _str_attr(op, "xla_shape"), rl))
    return sig


def _count_copies(text: str) -> int:
    return text.count("mhlo.copy")


# --------------------------------------------------------------------------
# layouts read back from the output


def _array_leaves(shape: L.Shape) -> list[L.ArrayShape]:
    if isinstance(shape, L.ArrayShape):
        return [shape]
    out = []
    for e in shape.elements:
        out.extend(_array_leaves(e))
    return out


def _ranked(t) -> bool:
    return isinstance(t, ir.RankedTensorType)


class _Layouts:
    """Layouts of MLIR values in a laid-out module, and the checks on them."""

    def __init__(self, module: ir.Module, target: str, mode: str = "default") -> None:
        self.m = module
        self.target = target
        self.mode = mode
        self.of: dict[Any, L.Layout] = {}
        self.problems: list[Failure] = []

    def bad(self, prop: str, msg: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(Failure(prop, self.target, msg))

    def layout(self, v) -> L.Layout | None:
        if not _ranked(v.type):
            return None
        if len(v.type.shape) == 0:
            return ()
        return self.of.get(v)

    def read(self) -> None:
        top = self.m.operation
        funcs = {}
        for op in top.regions[0].blocks[0].operations:
            if op.operation.name == "func.func":
                funcs[_str_attr(op.operation, "sym_name")] = op.operation
        self.funcs = funcs
        self.live = _live_ops(top, funcs)
        # pass 1: op results from xla_shape
        for op in self.live:
            if op.name in ("func.func", "func.return", "stablehlo.return"):
                continue
            ranked = [r for r in op.results if _ranked(r.type)]
            if not ranked:
                continue
            xs = _str_attr(op, "xla_shape")
            where = f"{op.name} at {op.location}"
            if xs is None:
                # The contract exempts scalar bodies of reducers and comparators
                # (regions of ops other than while/case/if): they have no layout.
                parent = op.parent
                if not (parent is not None and parent.name not in _CONTROL_FLOW
                        and parent.name != "func.func"):
                    self.bad("contract", f"{where}: no xla_shape")
                continue
            try:
                leaves = _array_leaves(L.parse_shape(xs))
            except ValueError as e:
                self.bad("contract", f"{where}: bad xla_shape {xs!r}: {e}")
                continue
            if len(leaves) != len(ranked):
                self.bad("contract", f"{where}: xla_shape {xs!r} has {len(leaves)} arrays, op {len(ranked)}")
                continue
            for r, s in zip(ranked, leaves):
                if tuple(s.dims) != tuple(r.type.shape):
                    self.bad("contract", f"{where}: xla_shape {xs!r} dims differ from {r.type}")
                lay = s.layout if s.layout is not None else L.default_layout(len(s.dims))
                if not L.is_permutation(lay, len(s.dims)):
                    self.bad("contract", f"{where}: layout {lay} not a permutation")
                self.of[r] = tuple(lay)
            if len(op.results) == 1 and _ranked(op.results[0].type):
                if "result_layout" not in op.attributes:
                    self.bad("contract", f"{where}: single result without result_layout")
                else:
                    rl = tuple(int(x) for x in ir.DenseIntElementsAttr(op.attributes["result_layout"]))
                    if rl != self.of.get(op.results[0]):
                        self.bad("contract", f"{where}: result_layout {rl} != xla_shape {xs}")
        # @main arguments
        main = funcs.get("main") or next(
            (f for f in funcs.values() if _str_attr(f, "sym_visibility") in (None, "public")), None)
        self.main = main
        if main is not None:
            block = main.regions[0].blocks[0]
            modes = _arg_modes(main, "arg_attrs")
            for i, a in enumerate(block.arguments):
                if not _ranked(a.type):
                    continue
                mode, lay = self.declared(modes, i, f"@main arg {i}")
                if lay is None:
                    continue
                if not L.is_permutation(lay, a.type.rank):
                    self.bad("contract", f"@main arg {i}: layout_mode {mode!r} not a permutation")
                    continue
                self.of[a] = lay
        # while region arguments take the while's layouts
        for op in self.live:
            if op.name == "stablehlo.while":
                for region in op.regions:
                    for i, a in enumerate(region.blocks[0].arguments):
                        lay = self.layout(op.results[i])
                        if lay is not None:
                            self.of[a] = lay
        # private function arguments: from their call sites (which must agree)
        sites: dict[str, list] = {}
        for op in self.live:
            if op.name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                sites.setdefault(callee, []).append(op)
        self.sites = sites
        # callers may themselves be private functions: iterate to a fixed point
        for _ in range(len(sites) + 1):
            changed = False
            for name, ops in sites.items():
                f = funcs.get(name)
                if f is None or f is main:
                    continue
                for i, a in enumerate(f.regions[0].blocks[0].arguments):
                    lays = {self.layout(c.operands[i]) for c in ops} - {None}
                    if len(lays) == 1 and self.of.get(a) != next(iter(lays)):
                        self.of[a] = next(iter(lays))
                        changed = True
            if not changed:
                break
        for name, ops in sites.items():
            f = funcs.get(name)
            if f is None or f is main:
                continue
            for i, _a in enumerate(f.regions[0].blocks[0].arguments):
                lays = {self.layout(c.operands[i]) for c in ops} - {None}
                if len(lays) > 1:
                    shown = ", ".join(L.format_layout(x) if x is not None else "?" for x in lays)
                    self.bad("missing-copy", f"@{name} arg {i}: call sites pass different layouts {shown}")

    # -- checks ---------------------------------------------------------------
    def declared(self, modes: list[str | None], i: int, what: str) -> tuple[str | None, L.Layout | None]:
        """Entry leaf ``i``'s ``mhlo.layout_mode`` and its layout (None, reported, when it is not one)."""
        mode = modes[i] if i < len(modes) else None
        if mode is None or not mode.startswith("{"):
            self.bad("contract", f"{what}: layout_mode {mode!r} is not a layout")
            return mode, None
        return mode, L.parse_layout(mode)

    def same(self, prop: str, where: str, a, b, what: str) -> None:
        la, lb = self.layout(a), self.layout(b)
        if la is None or lb is None:
            return
        if la != lb:
            self.bad(prop, f"{where}: {what}: {L.format_layout(la)} vs {L.format_layout(lb)}")

    def check(self, original_pins: dict[str, list[str | None]]) -> None:
        for op in self.live:
            name = op.name
            where = f"{name} at {op.location}"
            if name == "mhlo.copy":
                src, dst = self.layout(op.operands[0]), self.layout(op.results[0])
                # XLA's copy of an operand a custom call overwrites keeps the layout on purpose.
                if src is not None and src == dst and "stablehlo_layout.in_place" not in op.attributes:
                    self.bad("useless-copy", f"{where}: copies {L.format_layout(src)} to itself")
                # (src is None: the argument of a private function nobody calls)
            elif name in CANNOT_CHANGE or (name == "stablehlo.custom_call"
                                           and _str_attr(op, "call_target_name") == "LayoutConstraint"):
                res = [r for r in op.results if _ranked(r.type)]
                if not res:
                    continue
                out = res[0]
                for r in res[1:]:
                    if r.type.rank == out.type.rank:
                        self.same("missing-copy", where, r, out, "results disagree")
                for i, o in enumerate(op.operands):
                    if _ranked(o.type) and o.type.rank == out.type.rank and out.type.rank > 0:
                        self.same("missing-copy", where, o, out, f"operand {i} vs result")
                if name == "stablehlo.custom_call":
                    want = [tuple(int(x) for x in ir.DenseIntElementsAttr(a))
                            for a in ir.ArrayAttr(op.attributes["result_layouts"])]
                    got = self.layout(out)
                    if got is not None and want and got != want[0]:
                        self.bad("missing-copy", f"{where}: result {got} != pinned {want[0]}")
            elif name == "stablehlo.while":
                body = op.regions[1].blocks[0]
                term = body.operations[len(body.operations) - 1]
                for i, r in enumerate(op.results):
                    self.same("missing-copy", where, op.operands[i], r, f"init {i} vs result")
                    self.same("missing-copy", where, term.operands[i], r, f"body result {i} vs result")
            elif name in ("stablehlo.case", "stablehlo.if"):
                for b, region in enumerate(op.regions):
                    block = region.blocks[0]
                    term = block.operations[len(block.operations) - 1]
                    for i, r in enumerate(op.results):
                        self.same("missing-copy", where, term.operands[i], r, f"branch {b} result {i}")
            elif name == "func.call":
                callee = self.funcs.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
                if callee is None:
                    continue
                block = callee.regions[0].blocks[0]
                term = block.operations[len(block.operations) - 1]
                for i, r in enumerate(op.results):
                    self.same("missing-copy", where, term.operands[i], r, f"callee result {i} vs call result")
        # @main results and pins
        main = self.main
        if main is None:
            return
        block = main.regions[0].blocks[0]
        term = block.operations[len(block.operations) - 1]
        modes = _arg_modes(main, "res_attrs")
        for i, v in enumerate(term.operands):
            if not _ranked(v.type):
                continue
            mode, lay = self.declared(modes, i, f"@main result {i}")
            if lay is None:
                continue
            got = self.layout(v)
            if got is not None and got != lay:
                self.bad("missing-copy", f"@main result {i}: returns {L.format_layout(got)}, declared {mode}")
        # A result pin binds only when every result layout is given: XLA ignores a
        # partially set result layout (XLA §8.1 "Root handling", lit
        # entry_partial_result.mlir).  Parameter pins always bind.
        res_pins = original_pins.get("result", [])
        res_pins = res_pins + [None] * (len(term.operands) - len(res_pins))
        results_set = all(p not in (None, "auto") or (p is None and self.mode == "default")
                          for p, v in zip(res_pins, term.operands) if _ranked(v.type))
        for kind, key, vals in (("arg", "arg_attrs", block.arguments), ("result", "res_attrs", term.operands)):
            now = _arg_modes(main, key)
            if kind == "result" and not results_set:
                continue
            for i, pin in enumerate(original_pins.get(kind, [])):
                if pin is None or pin == "auto" or i >= len(vals) or not _ranked(vals[i].type):
                    continue
                want = (L.format_layout(L.default_layout(vals[i].type.rank)) if pin == "default"
                        else L.format_layout(L.parse_layout(pin)))
                got = now[i] if i < len(now) else None
                if got != want:
                    self.bad("contract", f"@main {kind} {i}: pinned {pin!r}, output says {got!r}")


def _live_ops(top, funcs: dict) -> list:
    """Every op of the functions the entry reaches, functions included, in walk order.

    A private function nothing calls is not part of the program (the pass leaves
    it as written, as XLA drops it): no property reads it.
    """
    main = funcs.get("main") or next(
        (f for f in funcs.values() if _str_attr(f, "sym_visibility") in (None, "public")), None)
    reached = set()
    pending = [main] if main is not None else []
    while pending:
        f = pending.pop()
        name = _str_attr(f, "sym_name")
        if name in reached:
            continue
        reached.add(name)
        for op in nested_ops(f):
            if op.name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee in funcs:
                    pending.append(funcs[callee])
    out = []
    for name, f in funcs.items():
        if name in reached or _str_attr(f, "sym_visibility") not in ("private",):
            out.append(f)
            out.extend(nested_ops(f))
    return out


def _pins(text: str) -> dict[str, list[str | None]]:
    m = mlir.load(text.encode(), "pins.mlir", context())
    for op in m.body.operations:
        if op.operation.name == "func.func" and _str_attr(op.operation, "sym_name") == "main":
            return {"arg": _arg_modes(op.operation, "arg_attrs"), "result": _arg_modes(op.operation, "res_attrs")}
    return {}


def _short_exc(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    last = tb[-1] if tb else None
    where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno} in {last.name})" if last else ""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}{where}"


# --------------------------------------------------------------------------
# the property check


def check_target(text: str, mode: str, target: str, pins, seed: int, execute: bool,
                 cache: Cache | None) -> tuple[list[Failure], str | None]:
    fails: list[Failure] = []
    try:
        out, r = run_pass(text, target, mode)
    except Exception as e:  # noqa: BLE001
        return [Failure("raises", target, _short_exc(e))], None
    # verify
    try:
        m = mlir.load(out.encode(), "out.mlir", context())
    except Exception as e:  # noqa: BLE001
        return [Failure("verify", target, _short_exc(e))], out
    # layouts, contract, useless and missing copies
    try:
        lay = _Layouts(m, target, mode)
        lay.read()
        lay.check(pins)
        fails.extend(lay.problems)
    except Exception as e:  # noqa: BLE001
        fails.append(Failure("harness", target, _short_exc(e)))
    # the report agrees with the module
    n_new = _count_copies(out) - _count_copies(text)
    if n_new != len(r.copies):
        fails.append(Failure("report", target, f"{len(r.copies)} copies reported, {n_new} in the output"))
    for c in r.copies:
        if c.src == c.dst and not c.in_place:
            fails.append(Failure("report", target, f"copy {c.name}: src == dst {c.src}"))
    # determinism
    try:
        out2, _ = run_pass(text, target, mode)
        if out2 != out:
            fails.append(Failure("determinism", target, _first_diff(out, out2)))
    except Exception as e:  # noqa: BLE001
        fails.append(Failure("determinism", target, "second run raised " + _short_exc(e)))
    # the engine's shortcuts decide nothing
    try:
        out_exact, _ = run_pass(text, target, mode, exact=True)
        if out_exact != out:
            fails.append(Failure("exact", target, _first_diff(out, out_exact)))
    except Exception as e:  # noqa: BLE001
        fails.append(Failure("exact", target, "exact run raised " + _short_exc(e)))
    # idempotence
    try:
        # The pass drops the copies it inserted before and puts back those
        # still needed (as XLA's pass does on a re-run): compare the results.
        out3, r3 = run_pass(out, target, mode)
        if _count_copies(out3) != _count_copies(out):
            g3 = r3.graph
            # Copies next to a copy the first run inserted: the second run does not
            # keep that copy's layout (tracked as one bug, see test_fuzz_slice.py).
            at_copy = all(g3.instrs[g3.values[c.value].producer].op == "mhlo.copy"
                          or any(g3.instrs[e.consumer].op == "mhlo.copy" for e in c.edges)
                          for c in r3.copies)
            prop = "idempotence-at-copy" if r3.copies and at_copy else "idempotence"
            fails.append(Failure(prop, target,
                                 f"second pass inserted {len(r3.copies)} copies: "
                                 + "; ".join(f"{c.name} {L.format_layout(c.src)}->{L.format_layout(c.dst)}"
                                             for c in r3.copies[:3])))
        else:
            s1, s3 = layout_signature(out), layout_signature(out3)
            if s1 != s3:
                fails.append(Failure("idempotence-attrs", target,
                                     "layout attributes changed: " + _first_sig_diff(s1, s3)))
    except Exception as e:  # noqa: BLE001
        fails.append(Failure("idempotence", target, "pass on its own output raised " + _short_exc(e)))
    # Explain counts a copy per call site (XLA's flattened call graph); the
    # output may hold fewer ops, where identical clones of a callee folded.
    from stablehlo_layout.engine.result import copy_groups

    fails.extend(check_commands(text, target, mode, len(copy_groups(r.assignment))))
    # execution
    if execute and cache is not None:
        f = _bit_identical(text, out, seed, cache)
        if f:
            fails.append(Failure("execute", target, f))
    return fails, out


_SCHEMA: list = []


def _schema_validator():
    if not _SCHEMA:
        import json
        import os

        import jsonschema

        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        with open(os.path.join(root, "docs", "explain.schema.json")) as f:
            schema = json.load(f)
        _SCHEMA.append(jsonschema.Draft202012Validator(schema))
    return _SCHEMA[0]


def check_commands(text: str, target: str, mode: str, n_copies: int) -> list[Failure]:
    """explain (with fixes, JSON against the schema), trace and trace --html, as the commands build them."""
    import json

    from stablehlo_layout.frontends.api import analyze
    from stablehlo_layout.report.explain import explain, render_trace
    from stablehlo_layout.report.html import render_trace_html

    fails: list[Failure] = []
    stage = "explain"
    try:
        m = mlir.load(text.encode(), "fuzz.mlir", context())
        graph, a, _ = analyze(m, target, mode, trace=True, exact=True)
        report = explain(a, fixes=True)
        doc = json.loads(json.dumps(report.to_json()))
        errors = sorted(_schema_validator().iter_errors(doc), key=lambda e: list(e.path))
        if errors:
            fails.append(Failure("explain", target, f"JSON does not match the schema: {errors[0].message}"))
        if len(report.copies) != n_copies:
            fails.append(Failure("explain", target, f"{len(report.copies)} copies explained, assign decided {n_copies}"))
        for c in report.copies:
            if c.fix is not None and not c.fix.removes:
                fails.append(Failure("explain", target, f"copy #{c.index}: its fix does not remove it"))
            if len(c.chains()) != len(c.consumers):
                fails.append(Failure("explain", target, f"copy #{c.index}: not one chain per consumer"))
        report.render()
        stage = "trace"
        pops = render_trace(a).count("\n  pop ")
        if pops != len(a.trace or ()):
            fails.append(Failure("trace", target, f"{pops} pop lines for {len(a.trace or ())} pops"))
        stage = "html"
        page = render_trace_html(graph, a, explain(a, fixes=False), "fuzz")
        if not page.startswith("<!DOCTYPE html>"):
            fails.append(Failure("html", target, "the page does not start with a doctype"))
    except Exception as e:  # noqa: BLE001
        fails.append(Failure(stage, target, "raised " + _short_exc(e)))
    return fails


def _bit_identical(original: str, rewritten: str, seed: int, cache: Cache) -> str | None:
    """tests.support.equivalence.assert_bit_identical, with outputs cached by text."""
    import numpy as np

    from tests.support import equivalence as eq

    if eq.main_arg_types(original) != eq.main_arg_types(rewritten):
        return "@main argument types differ"
    status, expected = cache.run(original, seed)
    if status != "ok":
        return None  # the original itself does not run: reported once by check_program
    status, actual = cache.run(rewritten, seed)
    if status != "ok":
        return f"rewritten module does not run: {actual}"
    if len(expected) != len(actual):
        return f"output count differs: {len(expected)} vs {len(actual)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e.dtype != a.dtype or e.shape != a.shape:
            return f"output {i}: {e.dtype}{list(e.shape)} vs {a.dtype}{list(a.shape)}"
        differ = int(np.any(eq._bits(e) != eq._bits(a), axis=1).sum())
        if differ:
            return f"output {i} ({e.dtype}{list(e.shape)}): {differ} of {e.size} elements differ bitwise"
    return None


def _first_diff(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x.strip()[:160]!r} vs {y.strip()[:160]!r}"
    return f"length {len(la)} vs {len(lb)} lines"


def _first_sig_diff(a: list, b: list) -> str:
    for x, y in zip(a, b):
        if x != y:
            return f"{x} -> {y}"
    return f"{len(a)} vs {len(b)} entries"


def check_program(program, targets=TARGETS, execute: bool = True, cache: Cache | None = None) -> list[Failure]:
    """All properties of one ``generator.Program``; [] when it passed."""
    if execute and cache is None:
        cache = Cache()
    fresh_context()
    fails: list[Failure] = []
    pins = _pins(program.text)
    if execute:
        status, msg = cache.run(program.text, program.seed)
        if status != "ok":
            fails.append(Failure("generator", "-", f"original does not run on CPU: {msg}"))
            execute = False
    for t in targets:
        f, _ = check_target(program.text, program.entry_mode, t, pins, program.seed, execute, cache)
        fails.extend(f)
    return fails
