"""The JAX front door: run the layout pass on a JAX function and check it against XLA.

    from jax.experimental.layout import Layout
    from stablehlo_layout.frontends.jax import analyze

    a = analyze(f, x, w, in_layouts=[Layout((1, 0)), Layout.AUTO], verify=True)
    a            # a table: entry layouts (XLA and JAX order), every copy, why, fix
    a.copies     # explain.CopyReport objects; a.copies[0].explain() is the full story
    a.verified   # True when XLA:CPU chose the same entry layouts
    a.verification.compared  # what was held against which compiler

With ``target="xla-gpu", gpu="a100", verify=True`` the function is compiled
deviceless by XLA:GPU for that GPU and both the entry layouts and the copies
(ours and the ones XLA's layout assignment added, one to one by shape and
layouts) are compared.

Two orders are in play.  XLA's ``minor_to_major`` lists the fastest-varying
dimension first; JAX's ``Layout(major_to_minor)`` is the same list reversed.
For a 2-D array, XLA ``{0,1}`` == ``Layout((1, 0))`` == column-major.

How layouts reach the module: ``jax.jit(fn, in_shardings=Format(...),
out_shardings=Format(...))`` records them and lowering writes them as
``mhlo.layout_mode`` on ``@main``'s arguments and results: ``"auto"`` for
``Layout.AUTO``, ``"{0,1}"`` for a concrete layout, nothing for ``None`` or for
a layout equal to the default (jax drops those, which means the same thing).
``jax.export`` keeps these attributes in 0.10.2 (checked: the exported module
text carries the same ``mhlo.layout_mode`` strings as ``.lower().as_text()``),
so this module exports rather than lowers: the serialized export is also what
the CLI reads.

jax is imported lazily: ``import stablehlo_layout`` must not pay for it, and
only users who have a JAX function to analyze import this module.
"""

from __future__ import annotations

import html
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stablehlo_layout.frontends.calls import Call, make_call, short
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.errors import InputError

__all__ = [
    "JaxAnalysis",
    "EntryLayout",
    "analyze",
    "module_from_reference",
    "load_reference",
    "is_reference",
    "read_input_or_reference",
    "shape_dtype_struct",
]

Layout = tuple[int, ...]


# --------------------------------------------------------------------------
# Shape strings <-> dtypes


def _dtype_name(xla: str) -> str | None:
    """numpy/ml_dtypes name for an XLA element type, e.g. s32 -> int32, f8e4m3fn -> float8_e4m3fn."""
    if xla == "pred":
        return "bool"
    if xla == "bf16":
        return "bfloat16"
    m = re.fullmatch(r"([suf])(\d+)", xla)
    if m:
        return {"s": "int", "u": "uint", "f": "float"}[m.group(1)] + m.group(2)
    m = re.fullmatch(r"c(64|128)", xla)
    if m:
        return "complex" + m.group(1)
    m = re.fullmatch(r"f([48])(e\w+)", xla)
    if m:
        return f"float{m.group(1)}_{m.group(2)}"
    return None


def _xla_element(dtype: Any) -> str:
    import numpy as np

    name = np.dtype(dtype).name
    if name == "bool":
        return "pred"
    if name == "bfloat16":
        return "bf16"
    m = re.fullmatch(r"(u?int|float|complex)(\d+)(?:_(\w+))?", name)
    if not m:
        return name
    kind, bits, rest = m.groups()
    prefix = {"int": "s", "uint": "u", "float": "f", "complex": "c"}[kind]
    return f"{prefix}{bits}{rest or ''}"


def _shape_text(shape: Sequence[int], dtype: Any) -> str:
    return str(L.ArrayShape(_xla_element(dtype), tuple(shape)))


_ARG_SPEC = re.compile(r"\s*([a-z][a-z0-9]*)\[([^\]]*)\]\s*(\{[^}]*\})?\s*")


@dataclass(frozen=True)
class _ArgSpec:
    shape: tuple[int, ...]
    dtype: Any
    layout: Layout | None  # XLA minor_to_major, None = default


def _parse_arg_spec(spec: str) -> _ArgSpec:
    """Parse ``f32[8,128]`` or ``f32[8,128]{0,1}``; ValueError with one clear reason."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    m = _ARG_SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(f"{spec!r} is not an XLA array shape such as 'f32[8,128]' or 'f32[8,128]{{0,1}}'")
    element, dims_text, layout_text = m.groups()
    name = _dtype_name(element)
    dtype = getattr(jnp, name, None) if name else None
    if dtype is None:
        raise ValueError(f"{spec!r}: unknown element type {element!r} (expected e.g. f32, bf16, s32, pred)")
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8 and dtype.kind in "iuf" and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]
        raise ValueError(f"{spec!r}: {element} needs 64-bit mode (set JAX_ENABLE_X64=1)")
    if dtype.kind == "c" and dtype.itemsize == 16 and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]
        raise ValueError(f"{spec!r}: {element} needs 64-bit mode (set JAX_ENABLE_X64=1)")
    dims: list[int] = []
    for d in (x.strip() for x in dims_text.split(",")) if dims_text.strip() else ():
        if not d.isdigit():
            what = "dynamic dimensions are not supported" if "?" in d else f"dimension {d!r} is not a non-negative integer"
            raise ValueError(f"{spec!r}: {what}")
        dims.append(int(d))
    layout: Layout | None = None
    if layout_text is not None:
        if ":" in layout_text:
            raise ValueError(f"{spec!r}: tiled layouts are not supported")
        try:
            layout = L.parse_layout(layout_text)
        except ValueError as e:
            raise ValueError(f"{spec!r}: {e}") from None
        if len(layout) != len(dims):
            raise ValueError(f"{spec!r}: layout {layout_text} has {len(layout)} entries but the shape "
                             f"has rank {len(dims)}")
        if not L.is_permutation(layout, len(dims)):
            raise ValueError(f"{spec!r}: layout {layout_text} is not a permutation of "
                             f"0..{len(dims) - 1}")
    return _ArgSpec(tuple(dims), dtype, layout)


def shape_dtype_struct(spec: str):
    """A ``jax.ShapeDtypeStruct`` for an XLA shape string (its layout, if any, is ignored)."""
    import jax

    s = _parse_arg_spec(spec)
    return jax.ShapeDtypeStruct(s.shape, s.dtype)


# --------------------------------------------------------------------------
# Layout requests


def _device():
    import jax

    return jax.devices()[0]


def _request(value: Any, aval: Any, what: str) -> tuple[Any, str]:
    """(the Format or None to give jit, the request as text: default / auto / {..})."""
    from jax.experimental.layout import Format
    from jax.experimental.layout import Layout as JaxLayout
    from jax.sharding import SingleDeviceSharding

    if isinstance(value, str) and value in ("default", "auto"):
        value = None if value == "default" else JaxLayout.AUTO
    if value is None:
        return None, "default"
    if isinstance(value, Format):
        lay, sharding = value.layout, value.sharding
    elif value is JaxLayout.AUTO or isinstance(value, JaxLayout):
        lay, sharding = value, None
    else:
        raise TypeError(f"{what}: expected a jax Layout, Format, Layout.AUTO or None, got {value!r}")
    if lay is None:
        return (value if sharding is not None else None), "default"
    if lay is JaxLayout.AUTO:
        return Format(lay, sharding), "auto"
    m2m = tuple(lay.major_to_minor)  # type: ignore[union-attr]  # not AUTO
    rank = len(aval.shape)
    if not L.is_permutation(m2m, rank):
        raise ValueError(f"{what}: Layout(major_to_minor={m2m}) is not a permutation of "
                         f"0..{rank - 1} for shape {_shape_text(aval.shape, aval.dtype)}")
    # A concrete Layout needs a concrete sharding: the argument's mesh sharding, else the one device.
    if sharding is None:
        sharding = _mesh_sharding(aval) or SingleDeviceSharding(_device())
    fmt = Format(lay, sharding)
    return fmt, L.format_layout(L.from_major_to_minor(m2m))


def _flat_requests(spec: Any, avals: list[Any], what: str) -> tuple[list[Any], list[str]]:
    from jax.experimental.layout import Format
    from jax.experimental.layout import Layout as JaxLayout

    single = spec is None or isinstance(spec, (str, Format, JaxLayout)) or spec is JaxLayout.AUTO
    if single:
        values = [spec] * len(avals)
    else:
        values = list(spec)
        if len(values) != len(avals):
            raise ValueError(f"{what}: got {len(values)} layouts for {len(avals)} flat "
                             f"{'arguments' if what == 'in_layouts' else 'outputs'}")
    pairs = [_request(v, a, f"{what}[{i}]") for i, (v, a) in enumerate(zip(values, avals))]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _mesh_sharding(x: Any) -> Any:
    """The sharding of a value over a mesh (``NamedSharding``), kept; any other (one device) is not a request."""
    from jax.sharding import NamedSharding

    sharding = getattr(x, "sharding", None)
    return sharding if isinstance(sharding, NamedSharding) and sharding.mesh.size > 1 else None


def _as_struct(x: Any):
    """Shape, dtype and a mesh sharding: a concrete array's own format is not a layout request."""
    import jax
    import numpy as np

    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return jax.ShapeDtypeStruct(tuple(x.shape), x.dtype, sharding=_mesh_sharding(x))
    arr = np.asarray(x)
    return jax.ShapeDtypeStruct(arr.shape, jax.dtypes.canonicalize_dtype(arr.dtype))


# --------------------------------------------------------------------------
# The analysis


@dataclass
class EntryLayout:
    """One entry parameter or result: what was asked for, what we chose, what XLA chose."""

    kind: str  # "parameter" | "result"
    index: int
    shape: str  # XLA shape string without layout, e.g. f32[8,128]
    requested: str  # "default" | "auto" | "{0,1}"
    minor_to_major: Layout | None
    xla: Layout | None = None  # XLA's choice (minor_to_major) when verified
    sharding: str | None = None  # a partitioned program's, as XLA's module states it

    @property
    def major_to_minor(self) -> Layout | None:
        return None if self.minor_to_major is None else L.to_major_to_minor(self.minor_to_major)

    @property
    def agrees(self) -> bool | None:
        return None if self.xla is None else self.xla == self.minor_to_major


@dataclass
class Verification:
    """What ``verify=True`` compared, against which compiler, and what differed.

    On XLA:CPU the entry layouts are compared.  With ``target="xla-gpu"`` the
    function is compiled deviceless by XLA:GPU for the analysis' GPU, and both
    the entry layouts and the copies are compared: XLA's added copies and ours,
    one to one by (shape, from layout, to layout).
    """

    oracle: str  # e.g. "XLA:CPU" or "XLA:GPU a100 (sm_8.0, cuDNN 8.9.4), compiled deviceless"
    entry_compared: int  # entry parameters and results compared
    entry_mismatches: list[str] = field(default_factory=list)
    copies_compared: bool = False
    xla_copies: list[Any] = field(default_factory=list)  # xla_gpu_compile.XlaCopy
    copies_matched: int = 0  # pairs (ours, XLA's) with the same shape and layouts
    copy_mismatches: list[str] = field(default_factory=list)
    late_error: str = ""  # an XLA pass after layout assignment failed deviceless

    @property
    def agrees(self) -> bool:
        return not self.entry_mismatches and not self.copy_mismatches

    @property
    def compared(self) -> str:
        """One line: what was held against what."""
        text = f"{self.entry_compared} entry layouts"
        if self.copies_compared:
            text += (f" and copies one to one by (shape, from, to): XLA {len(self.xla_copies)}, "
                     f"matched {self.copies_matched}")
        return f"{text}, against {self.oracle}"


@dataclass
class JaxAnalysis:
    """The pass run on one JAX function: rewritten module, entry layouts, explained copies."""

    name: str
    module: Any  # ir.Module, rewritten in place by the pass
    result: Any  # assignment.LayoutResult
    explanation: Any  # explain.Explanation
    params: list[EntryLayout]
    results: list[EntryLayout]
    exported: Any  # jax.export.Exported of the function, before the pass
    target: str
    entry_layouts: str
    warnings: list[str] = field(default_factory=list)
    verified: bool | None = None  # None: not checked (verify=False)
    xla_entry_params: list[Layout | None] | None = None
    xla_entry_results: list[Layout | None] | None = None
    mismatches: list[str] = field(default_factory=list)
    # What verify=True compared, one sentence each; empty when nothing was.
    # Only entry layouts are compared: XLA's compiled executable does not say
    # which copies its layout pass made, so copies are never claimed to agree.
    compared: list[str] = field(default_factory=list)
    context: Any = None  # the MLIR context the module lives in (kept alive with it)
    verification: Verification | None = None  # what verify=True compared (None: not checked)
    target_object: Any = None  # the Target the pass ran with: ``fixes`` compiles for it
    _fixes: Any = field(default=None, repr=False)

    @property
    def fixes(self) -> Any:
        """What ``stablehlo-layout fix`` finds for this function: the changes the target's XLA
        confirms remove its copies (``.fixes``, each with its source line and XLA's numbers),
        XLA's copies ``.before`` and ``.after``, the fixed program ``.fixed_text``;
        ``print()`` it for the report.  Compiled on first read (one XLA compile per candidate)."""
        if self._fixes is None:
            from stablehlo_layout.fix.search import fix_module
            from stablehlo_layout.ir import mlir

            path = f"<jax.export of {self.name}>"
            module = mlir.load(bytes(self.exported.mlir_module_serialized), path, mlir.make_context())
            self._fixes = fix_module(module, path, self.target_object, self.entry_layouts)
        return self._fixes

    # -- the numbers -------------------------------------------------------

    @property
    def text(self) -> str:
        from stablehlo_layout.ir import mlir

        return mlir.print_module(self.module)

    @property
    def assignment(self):
        return self.result.assignment

    @property
    def copies(self) -> list[Any]:
        return list(self.explanation.copies)

    @property
    def entry_params(self) -> list[Layout | None]:
        """Chosen parameter layouts, XLA minor_to_major."""
        return [p.minor_to_major for p in self.params]

    @property
    def entry_results(self) -> list[Layout | None]:
        """Chosen result layouts, XLA minor_to_major."""
        return [r.minor_to_major for r in self.results]

    @property
    def in_major_to_minor(self) -> list[Layout | None]:
        """Chosen parameter layouts in JAX order (``Layout(major_to_minor)``)."""
        return [p.major_to_minor for p in self.params]

    @property
    def out_major_to_minor(self) -> list[Layout | None]:
        """Chosen result layouts in JAX order."""
        return [r.major_to_minor for r in self.results]

    def jax_in_layouts(self) -> list[Any]:
        """The chosen parameter layouts as jax ``Layout`` objects, ready for ``Format``."""
        from jax.experimental.layout import Layout as JaxLayout

        return [None if m is None else JaxLayout(m) for m in self.in_major_to_minor]

    def jax_out_layouts(self) -> list[Any]:
        from jax.experimental.layout import Layout as JaxLayout

        return [None if m is None else JaxLayout(m) for m in self.out_major_to_minor]

    # -- rendering -------------------------------------------------------

    def _entry_rows(self) -> tuple[list[str], list[list[str]]]:
        head = ["entry", "shape", "requested", "chosen (XLA m2m)", "JAX major_to_minor"]
        if self.verified is not None:
            oracle = self.verification.oracle.split()[0] if self.verification is not None else "XLA:CPU"
            head.append(f"{oracle} chose")
        # A partitioned program: the shapes are the whole arrays', each device holds its shard.
        sharded = any(e.sharding for e in [*self.params, *self.results])
        if sharded:
            head.append("sharding")
        rows = []
        for e in [*self.params, *self.results]:
            row = [f"{'param' if e.kind == 'parameter' else 'result'} {e.index}", e.shape, e.requested,
                   _fmt(e.minor_to_major), str(e.major_to_minor) if e.major_to_minor is not None else "-"]
            if self.verified is not None:
                row.append(_fmt(e.xla) + ("" if e.agrees in (None, True) else "  MISMATCH"))
            if sharded:  # one mesh, named in the explanation: the spec alone
                row.append(e.sharding.split(" on @", 1)[0] if e.sharding else "-")
            rows.append(row)
        return head, rows

    def _copy_rows(self) -> tuple[list[str], list[list[str]]]:
        from stablehlo_layout.report.explain import rule_text

        head = ["copy", "shape", "from -> to", "bytes", "producer -> consumer", "reason", "fix"]
        rows = []
        for c in self.copies:
            consumers = ", ".join(x["use"] + _source_text(x) for x in c.consumers)
            if c.fix is not None:
                fix = c.fix.description
            else:
                fix = c.fix_note or "-"
            rows.append([f"#{c.index}", c.shape, f"{_fmt(c.src)} -> {_fmt(c.dst)}",
                         "unknown" if c.bytes is None else str(c.bytes),
                         f"{c.producer['value']}{_source_text(c.producer)} -> {consumers}",
                         f"{rule_text(c.reason)} ({c.reason})", fix])
        return head, rows

    @property
    def _gpu_verified(self) -> bool:
        return self.verification is not None and self.verification.copies_compared

    def _headline(self) -> str:
        """The first line: what it costs, for which target; the verdict follows on its own line."""
        from stablehlo_layout.report.explain import fmt_bytes

        n = len(self.copies)
        total = sum(c.bytes for c in self.copies if c.bytes is not None)
        return (f"{self.name}: {n} cop{'y' if n == 1 else 'ies'}, {fmt_bytes(total)} moved per execution "
                f"(target {self.target}, entry layouts {self.entry_layouts})")

    def _verdict(self) -> str | None:
        """What verify=True found, in one sentence; None when nothing was compared."""
        if self._gpu_verified:
            assert self.verification is not None
            verdict = "verified" if self.verified else f"{len(self.mismatches)} difference(s) from XLA"
            return f"{verdict}: {self.verification.compared}"
        if self.verified is not None:
            n = len(self.params) + len(self.results)
            agree = n - len([m for m in self.mismatches if not m.startswith("XLA reports")])
            return ((f"entry layouts: {agree} of {n} as {self._compiler} compiled them" if self.verified
                     else f"{len(self.mismatches)} entry layout(s) differ from {self._compiler}")
                    + " (copies not compared)")
        return None

    def _summary(self) -> list[str]:
        """Headline, verdict, copies by reason, mismatches: what a reader needs before any table."""
        from stablehlo_layout.report.explain import fmt_bytes, rule_text

        out = [self._headline()]
        verdict = self._verdict()
        if verdict:
            out.append(f"  {verdict}")
        by_reason: dict[str, list[Any]] = {}
        for c in self.copies:
            by_reason.setdefault(c.reason, []).append(c)
        for reason, copies in sorted(by_reason.items(), key=lambda kv: -sum(c.bytes or 0 for c in kv[1])):
            moved = fmt_bytes(sum(c.bytes or 0 for c in copies))
            out.append(f"  {len(copies)} x {rule_text(reason)} ({reason}): {moved}")
        out += [f"  mismatch: {m}" for m in self.mismatches]
        return out

    @property
    def _compiler(self) -> str:
        text = self.compared[0] if self.compared else ""
        return text.split(" compiled by ", 1)[1].split(" ", 1)[0] if " compiled by " in text else "XLA"

    def __repr__(self) -> str:
        """Summary first, then the entry layouts and one short block per copy; no line over 100 columns."""
        out = [*self._summary(), ""]
        out += _text_table(*self._entry_rows())
        if self.copies:
            out.append("")
            for c in self.copies:
                out += self._copy_block(c)
        else:
            out += ["", "no copies"]
        if self.compared or self.warnings:
            out.append("")
        out += [f"compared: {c}" for c in self.compared]
        out += list(self.warnings)
        return "\n".join(line for text in out for line in _wrap(text))

    def _copy_block(self, c: Any) -> list[str]:
        from stablehlo_layout.report.explain import fmt_bytes

        # The reason's words are in the summary above, once per reason: here its key only.
        size = "unknown size" if c.bytes is None else fmt_bytes(c.bytes)
        lines = [f"copy #{c.index} {c.shape} {_fmt(c.src)} -> {_fmt(c.dst)}, {size}, reason {c.reason}",
                 f"  from: {c.producer['value']}{_source_text(c.producer)}"]
        lines += [f"  to:   {x['use']}{_source_text(x)}" for x in c.consumers]
        fix = c.fix.description if c.fix is not None else (c.fix_note or "none found")
        lines.append(f"  fix:  {fix}")
        return lines

    def _repr_html_(self) -> str:
        e = html.escape
        first, *rest = self._summary()
        parts = [f"<div class='stablehlo-layout'><p><b>{e(first)}</b></p>"]
        parts += [f"<p>{e(line.strip())}</p>" for line in rest]
        for head, rows in (self._entry_rows(), self._copy_rows()):
            if not rows:
                continue
            parts.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>")
            for row in rows:
                parts.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>")
            parts.append("</tbody></table>")
        if not self.copies:
            parts.append("<p>no copies</p>")
        for c in self.compared:
            parts.append(f"<p>compared: {e(c)}</p>")
        parts.append("</div>")
        return "".join(parts)


def _source_text(entry: dict[str, Any]) -> str:
    """`` (jit(f)/dot at model.py:12)`` for a producer or consumer whose source is known (as compiled)."""
    return f" ({entry['source']['text']})" if "source" in entry else ""


def _fmt(layout: Layout | None) -> str:
    return "-" if layout is None else L.format_layout(layout)


# A terminal's width as notebooks and REPLs assume it: repr() cannot ask the terminal.
_REPR_COLUMNS = 100


def _wrap(text: str) -> list[str]:
    """One line of the repr as lines of at most _REPR_COLUMNS, continued under its own indent + 4."""
    import textwrap

    if len(text) <= _REPR_COLUMNS:
        return [text]
    indent = " " * (len(text) - len(text.lstrip()) + 4)
    return textwrap.wrap(text, _REPR_COLUMNS, subsequent_indent=indent, break_on_hyphens=False) or [text]


def _text_table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [line(head), line(["-" * w for w in widths]), *map(line, rows)]


def _jitted(fn: Callable, in_formats, out_formats):
    import jax

    # keep_unused: an unused argument would otherwise vanish from @main and the
    # entry layouts would no longer line up with the flat arguments.
    return jax.jit(fn, in_shardings=in_formats, out_shardings=out_formats, keep_unused=True)


# How much of the arguments an error line quotes: enough to recognize them.
_DESCRIBE_LIMIT = 160


def describe(args: Sequence[Any], kwargs: Mapping[str, Any] | None = None) -> str:
    """``(f32[8,128], {'b': f32[16]}, training=True)``: a call's arguments as an error line quotes them."""
    import jax

    def tree(x: Any) -> str:
        if isinstance(x, dict):
            return "{" + ", ".join(f"{k!r}: {tree(v)}" for k, v in x.items()) + "}"
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            inner = ", ".join(tree(v) for v in x)
            return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return _shape_text(x.shape, x.dtype)
        if jax.tree_util.all_leaves([x]):
            return short(repr(x), 24)
        return type(x).__name__ + "(...)"

    parts = [tree(a) for a in args] + [f"{k}={tree(v)}" for k, v in (kwargs or {}).items()]
    return "(" + short(", ".join(parts), _DESCRIBE_LIMIT) + ")"


def _first_line(e: BaseException) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return f"{type(e).__name__}: {lines[0].strip()}" if lines else type(e).__name__


def _shape_of_call(call: Call, fn: Callable, structs: Sequence[Any]) -> Any:
    """The outputs' shapes: tracing once, where a call that does not fit fails with one line."""
    import jax

    try:
        return jax.eval_shape(fn, *structs)
    except Exception as e:  # jax's own reason (shapes, dtypes), without its traceback
        raise InputError(call.name, f"calling it with {describe(call.args, call.kwargs)} fails: "
                                    f"{_first_line(e)}") from None


def _trees(call: Call, fn: Callable, args: Sequence[Any], in_layouts: Any, out_layouts: Any):
    """Flat avals and layout requests, and the same requests as pytrees for jit."""
    import jax

    structs = [jax.tree.map(_as_struct, a) for a in args]
    flat_in, in_tree = jax.tree.flatten(tuple(structs))
    out_shape = _shape_of_call(call, fn, structs)
    flat_out, out_tree = jax.tree.flatten(out_shape)
    in_f, in_req = _flat_requests(in_layouts, flat_in, "in_layouts")
    out_f, out_req = _flat_requests(out_layouts, flat_out, "out_layouts")
    in_formats = jax.tree.unflatten(in_tree, in_f)
    out_formats = jax.tree.unflatten(out_tree, out_f)
    return structs, flat_in, flat_out, in_formats, out_formats, in_req, out_req


def _export(fn: Callable, structs, in_formats, out_formats, platforms: Sequence[str] | None = None):
    import jax

    return jax.export.export(_jitted(fn, in_formats, out_formats), platforms=platforms)(*structs)


def analyze(fn: Callable, *args: Any, in_layouts: Any = None, out_layouts: Any = None,
            target: str = "xla-cpu", entry_layouts: str = "default", verify: bool = False,
            fixes: bool = True, gpu: str | None = None, as_compiled: bool = True,
            tpu: str | None = None, kwargs: Mapping[str, Any] | None = None,
            static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = ()) -> JaxAnalysis:
    """Export ``fn`` at ``args``, run the layout pass on it, and explain every copy.

    ``args`` are arrays or ``jax.ShapeDtypeStruct``s (pytrees of them are fine);
    ``kwargs`` the keyword arguments of the call, ``fn(*args, **kwargs)``.
    ``static_argnums`` / ``static_argnames`` mark arguments static as
    ``jax.jit`` does (any Python value, closed over, not a parameter).  A
    call that does not fit ``fn`` (arity, a name, a shape, a non-array where
    an array is traced) raises ``InputError``, one line naming ``fn``.
    ``in_layouts`` / ``out_layouts``: one value for every flat argument / output,
    or a sequence with one per flat argument / output; each a jax ``Layout``,
    ``Format``, ``Layout.AUTO`` or ``None`` (the row-major default).  The flat
    arguments are the dynamic positional arguments' leaves in order, then
    the dynamic keyword arguments' leaves, by name.
    ``verify=True`` also compiles ``fn`` on the local backend with the same
    layouts and records whether XLA chose the entry layouts we did; with
    ``target="xla-gpu"`` it compiles deviceless with XLA:GPU for ``gpu``
    (needs the ``gpu-oracle`` extra) and compares the entry layouts and the
    copies one to one.  ``result.verification`` says what was compared.
    ``gpu`` names the device of ``target="xla-gpu"`` (``"a100"``, ``"h100"``,
    ... or a GpuTargetConfigProto text file; h100 when omitted), ``tpu`` the
    generation of ``target="xla-tpu"`` (``"v4"``, ``"v5e"``, ``"v5p"``,
    ``"v6e"``, ``"tpu7x"``; v5e when omitted).  With ``target="xla-tpu"``,
    ``verify=True`` compiles deviceless with XLA:TPU (the ``xla-tpu`` extra)
    and compares entry layouts and copies as for XLA:GPU.
    ``as_compiled`` (the default) lays out the module XLA itself is about to
    lay out: ``fn`` is compiled by XLA for the target (XLA:CPU, or XLA:GPU
    deviceless for the ``gpu``) up to layout assignment, and every copy names
    the user's op and source line from XLA's metadata.  ``False`` lays out the
    exported StableHLO as it is.
    A sharded function (``jax.jit`` with ``NamedSharding`` in/out shardings,
    ``shard_map``; arguments as ``jax.ShapeDtypeStruct(..., sharding=...)``
    over a ``Mesh`` or an ``AbstractMesh``) is compiled for a mesh of N
    compile-only devices: XLA:CPU's N host devices (in a child process when
    this one has fewer), XLA:GPU's deviceless ``1x1xN`` topology, N chips
    of XLA:TPU.  The module
    laid out is XLA's partitioned per-device one; explanations name the
    collective and the mesh axis behind each copy, and ``verify=True``
    compares entry layouts and copies with XLA's own layout assignment.
    """
    from stablehlo_layout.ir import mlir
    from stablehlo_layout.frontends.api import assign_module, resolve_target
    from stablehlo_layout.report.explain import explain

    call = make_call(fn, args, kwargs, static_argnums=static_argnums, static_argnames=static_argnames)
    user_fn = fn
    fn, args = call.traced()  # from here on: a function of positional array pytrees
    structs, flat_in, flat_out, in_formats, out_formats, in_req, out_req = _trees(
        call, fn, args, in_layouts, out_layouts)
    tgt, _ = resolve_target(target, gpu, tpu)
    from stablehlo_layout.xla.pipeline import backend_of, lowering_platforms

    backend = backend_of(tgt)
    platform = lowering_platforms(backend) if as_compiled or backend == "xla-tpu" else None
    exported = _export(fn, structs, in_formats, out_formats, platforms=platform)
    name = getattr(user_fn, "__name__", None) or repr(user_fn)
    ctx = mlir.make_context()
    module = mlir.load(bytes(exported.mlir_module_serialized), f"<jax.export of {name}>", ctx)
    sources = compiled = None
    from stablehlo_layout.ir.entry_modes import entry_function
    from stablehlo_layout.ir.sharding import adopt_program_sharding, program_sharding
    from stablehlo_layout.xla.partitioned import partitions

    stated = program_sharding(module, entry_function(module))

    # A partitioned program is held against XLA's own per-device module: no executable of this
    # process runs on its mesh, and the layouts of that module are what verify compares.
    by_dump = backend == "xla-tpu" or partitions(module) > 1
    if as_compiled or (verify and by_dump):
        from stablehlo_layout.xla.pipeline import compile_module, gpu_options

        compiled = compile_module(module, f"<jax.export of {name}>", backend, entry_layouts, **gpu_options(tgt))
    if as_compiled:
        from stablehlo_layout.ir.metadata import read_sources

        assert compiled is not None
        module = mlir.load(compiled.before, f"<XLA's module for {name}>", ctx, hlo_sources=True,
                           hlo_proto=compiled.before_proto)
        # The HLO header cannot show a scalar left open; the requests can (XLA §8.5).
        mlir.open_scalar_entries(module, [r == "auto" for r in in_req], [r == "auto" for r in out_req])
        sources = read_sources(compiled.before)
    result = assign_module(module, tgt, entry_layouts)
    if as_compiled:
        adopt_program_sharding(result.assignment.graph, stated)
    if sources is not None:
        from stablehlo_layout.ir.metadata import name_by_instruction

        name_by_instruction(result.assignment.graph)
    if as_compiled and compiled is not None and compiled.note:
        result.warnings.append(compiled.note)
    explanation = explain(result.assignment, fixes=fixes, sources=sources)
    a = result.assignment
    params = [EntryLayout("parameter", i, _shape_text(v.shape, v.dtype), req, _entry(a.entry_params, i))
              for i, (v, req) in enumerate(zip(flat_in, in_req))]
    results = [EntryLayout("result", i, _shape_text(v.shape, v.dtype), req, _entry(a.entry_results, i))
               for i, (v, req) in enumerate(zip(flat_out, out_req))]
    # As the function states them (PartitionSpecs), not as XLA's partitioned module spells them.
    for entries, texts in zip((params, results), (stated.arguments, stated.results)):
        for e, text in zip(entries, texts):
            e.sharding = text
    warnings = list(result.warnings)
    if len(a.entry_params) != len(flat_in) or len(a.entry_results) != len(flat_out):
        warnings.append(f"note: @main has {len(a.entry_params)} parameters and {len(a.entry_results)} results "
                        f"for {len(flat_in)} flat arguments and {len(flat_out)} flat outputs")
    out = JaxAnalysis(name, module, result, explanation, params, results, exported, result.target,
                      entry_layouts, warnings, context=ctx, target_object=tgt)
    on_gpu, device = _gpu_of(target, gpu)
    if verify and by_dump:
        assert compiled is not None
        _verify_by_dump(out, compiled)
    elif verify and on_gpu:
        _verify_gpu(out, fn, structs, in_formats, out_formats, device)
    elif verify:
        _verify(out, fn, structs, in_formats, out_formats)
    return out


def _entry(layouts: Sequence[Layout | None], i: int) -> Layout | None:
    lay = layouts[i] if i < len(layouts) else None
    return tuple(lay) if lay is not None else None


def _xla_layouts(formats: Any) -> list[Layout | None]:
    import jax
    from jax.experimental.layout import Format

    flat = jax.tree.leaves(formats, is_leaf=lambda x: x is None or isinstance(x, Format))
    out: list[Layout | None] = []
    for f in flat:
        lay = getattr(f, "layout", None)
        m2m = getattr(lay, "major_to_minor", None)
        out.append(None if m2m is None else L.from_major_to_minor(m2m))
    return out


def _verify(a: JaxAnalysis, fn: Callable, structs, in_formats, out_formats) -> None:
    """Compile with XLA (same layouts) and compare its entry layouts with ours."""
    import jax

    compiled = _jitted(fn, in_formats, out_formats).lower(*structs).compile()
    in_f, _kwargs = compiled.input_formats
    a.xla_entry_params = _xla_layouts(in_f)
    a.xla_entry_results = _xla_layouts(compiled.output_formats)
    platform = jax.devices()[0].platform
    compiler = f"XLA:{platform.upper()}"
    a.compared = [
        f"{len(a.params)} entry parameter and {len(a.results)} entry result layouts, ours against "
        f"those of the executable compiled by {compiler} with the same requested layouts",
        "not compared: copies and the layouts of values inside the program (the executable does "
        "not record them; compare with XLA's after_layout-assignment dump for that)",
    ]
    if not a.target.endswith(platform):
        a.compared.append(f"note: our target is {a.target}, the compile ran on {platform}")
    a.mismatches = _entry_mismatches(a, compiler)
    a.verified = not a.mismatches
    a.verification = Verification(f"XLA:{platform.upper()}", len(a.params) + len(a.results), list(a.mismatches))


def _entry_mismatches(a: JaxAnalysis, compiler: str) -> list[str]:
    """Ours against the compiler's entry layouts (``a.xla_entry_*``), noting XLA's on each entry."""
    out: list[str] = []
    for entries, xla in ((a.params, a.xla_entry_params), (a.results, a.xla_entry_results)):
        assert xla is not None
        if len(entries) != len(xla):
            out.append(f"XLA reports {len(xla)} entry {entries[0].kind if entries else 'value'}s, "
                       f"we have {len(entries)}")
        for e, x in zip(entries, xla):
            e.xla = x
            if x != e.minor_to_major:
                out.append(f"{e.kind} {e.index} {e.shape} ({e.requested}): ours {_fmt(e.minor_to_major)}, "
                           f"{compiler} {_fmt(x)}")
    return out


def _gpu_of(target: Any, gpu: str | None) -> tuple[bool, Any]:
    """Whether the analysis is XLA:GPU's, and for which GPU (a name, a file, a GpuModel; None: the default)."""
    from stablehlo_layout.targets.xla_gpu import XlaGpuTarget

    if isinstance(target, XlaGpuTarget):
        return True, target.gpu
    return target == "xla-gpu", gpu


def _verify_gpu(a: JaxAnalysis, fn: Callable, structs, in_formats, out_formats, gpu: Any) -> None:
    """Compile deviceless with XLA:GPU for ``gpu``; compare entry layouts and copies one to one."""
    from stablehlo_layout.xla.gpu_deviceless import compile_deviceless

    xla = compile_deviceless(lambda i, o: _jitted(fn, i, o), structs, in_formats, out_formats, gpu)
    v = Verification(f"XLA:GPU {xla.gpu}, compiled deviceless", len(a.params) + len(a.results),
                     copies_compared=True, xla_copies=list(xla.copies), late_error=xla.late_error)
    a.xla_entry_params, a.xla_entry_results = xla.entry_params, xla.entry_results
    v.entry_mismatches.extend(_entry_mismatches(a, "XLA:GPU"))
    _match_copies(a, v, list(xla.copies), "XLA:GPU")


def _verify_by_dump(a: JaxAnalysis, compiled: Any) -> None:
    """Hold our answer against XLA's after-layout-assignment module of the same compile
    (libtpu's, or any backend's for a partitioned program)."""
    from stablehlo_layout.xla.gpu_deviceless import added_copies, entry_layouts

    if compiled.after is None:
        raise InputError(a.name, f"{compiled.backend} dumped no module after its layout assignment to compare with")
    # XLA copies once per use; one copy of ours serves every use of a value.
    copies = list({(x.operand, x.dst): x for x in added_copies(compiled.before, compiled.after)}.values())
    label = compiled.backend
    how = "compiled for its mesh" if label.startswith("XLA:CPU") else "compiled deviceless"
    v = Verification(f"{label}, {how}", len(a.params) + len(a.results), copies_compared=True,
                     xla_copies=copies, late_error=compiled.note or "")
    a.xla_entry_params, a.xla_entry_results = entry_layouts(compiled.after)
    v.entry_mismatches.extend(_entry_mismatches(a, label))
    _match_copies(a, v, copies, label)


def _match_copies(a: JaxAnalysis, v: Verification, xla_copies: list[Any], label: str) -> None:
    """Copies one to one: each of ours takes an unclaimed XLA copy of the same shape and layouts."""
    unclaimed = list(xla_copies)
    for c in a.copies:
        hit = next((x for x in unclaimed if x.shape == c.shape and x.src == tuple(c.src)
                    and x.dst == tuple(c.dst)), None)
        if hit is None:
            v.copy_mismatches.append(f"copy #{c.index} {c.shape} {_fmt(c.src)} -> {_fmt(c.dst)} "
                                     f"({c.producer['value']}): {label} makes no such copy")
        else:
            unclaimed.remove(hit)
            v.copies_matched += 1
    for x in unclaimed:
        v.copy_mismatches.append(f"{label} copy {x.name} {x.shape} {_fmt(x.src)} -> {_fmt(x.dst)} "
                                 f"(of {x.operand}): we make no such copy")
    a.verification = v
    a.compared = [f"{v.compared}: ours against {label}'s after-layout-assignment module"]
    a.mismatches = v.entry_mismatches + v.copy_mismatches
    a.verified = v.agrees


# --------------------------------------------------------------------------
# module:function references (the CLI's way in)

_REFERENCE = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def is_reference(text: str) -> bool:
    """Whether a CLI INPUT is ``package.module:function`` rather than a file."""
    return bool(_REFERENCE.fullmatch(text)) and not os.path.exists(text)


def _resolve(ref: str) -> Callable:
    if ":" not in ref:
        raise InputError(ref, "expected MODULE:FUNCTION, e.g. examples.models:mlp")
    mod_name, _, attr = ref.partition(":")
    if not mod_name or not attr:
        raise InputError(ref, "expected MODULE:FUNCTION, e.g. examples.models:mlp")
    if mod_name.endswith(".py"):
        dotted = os.path.splitext(os.path.normpath(mod_name))[0].replace(os.sep, ".")
        raise InputError(ref, f"names a file; name the module instead: {dotted}:{attr}")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # so `examples.models` resolves from the repo root
    try:
        module = importlib.import_module(mod_name)
    except ModuleNotFoundError as e:
        if e.name is not None and (mod_name == e.name or mod_name.startswith(e.name + ".")):
            raise InputError(ref, f"cannot import module {mod_name!r}") from None
        raise InputError(ref, f"cannot import module {mod_name!r}: {e}") from None
    except Exception as e:  # the module itself failed while importing
        raise InputError(ref, f"cannot import module {mod_name!r}: {type(e).__name__}: {e}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(ref, f"module {mod_name!r} has no function {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InputError(ref, f"{attr!r} in module {mod_name!r} is not a function")
    return obj


def _check_arity(ref: str, fn: Callable, n: int) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # cannot tell
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    required_kw = [p for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    name = ref.partition(":")[2]
    if required_kw:
        raise InputError(ref, f"{name} has required keyword-only argument(s) "
                              f"{', '.join(p.name for p in required_kw)}; --arg gives positional ones only")
    if n < len(required) or (not varargs and n > len(positional)):
        if varargs:
            want = f"at least {len(required)}"
        elif len(required) == len(positional):
            want = str(len(positional))
        else:
            want = f"{len(required)} to {len(positional)}"
        names = ", ".join(p.name for p in positional) + (", *args" if varargs else "")
        raise InputError(ref, f"{name}({names}) takes {want} argument(s), got {n} --arg spec(s)")


@dataclass(frozen=True)
class ReferenceCall:
    """How the command calls ``MODULE:FUNCTION``: ``--arg`` shapes, or ``--args-from`` and static arguments."""

    arg_specs: tuple[str, ...] = ()
    args_from: str | None = None  # MODULE:CALLABLE returning (args, kwargs)
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()


def _args_from(ref: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Call ``MODULE:CALLABLE`` with no arguments; it returns ``(args, kwargs)``, the example call."""
    maker = _resolve(ref)
    try:
        made = maker()
    except Exception as e:  # the user's code: its reason, one line
        raise InputError(ref, f"--args-from: calling it failed: {_first_line(e)}") from None
    expected = ("must return (args, kwargs): a tuple or list of positional arguments and a dict of keyword "
                "arguments")
    if not (isinstance(made, tuple) and len(made) == 2):
        raise InputError(ref, f"--args-from {expected}, got a {type(made).__name__}")
    args, kwargs = made
    if not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
        raise InputError(ref, f"--args-from {expected}, got ({type(args).__name__}, {type(kwargs).__name__})")
    if not all(isinstance(k, str) for k in kwargs):
        raise InputError(ref, "--args-from: the keyword arguments' names must be strings")
    return tuple(args), kwargs


def _exported_reference(ref: str, how: ReferenceCall, platforms: Sequence[str] | None = None):
    from jax.experimental.layout import Format
    from jax.experimental.layout import Layout as JaxLayout
    from jax.sharding import SingleDeviceSharding

    fn = _resolve(ref)
    if how.args_from is not None:
        if how.arg_specs:
            raise InputError(ref, "give either --arg shapes or --args-from, not both")
        return _exported_call(ref, fn, how, platforms)
    if how.static_argnums or how.static_argnames:
        raise InputError(ref, "--static-argnums and --static-argnames need --args-from: an --arg is always an array")
    specs = []
    for i, text in enumerate(how.arg_specs, 1):
        try:
            specs.append(_parse_arg_spec(text))
        except ValueError as e:
            raise InputError(ref, f"--arg {i}: {e}") from None
    _check_arity(ref, fn, len(specs))
    import jax

    structs = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]
    in_formats = tuple(
        None if s.layout is None
        else Format(JaxLayout(major_to_minor=L.to_major_to_minor(s.layout)), SingleDeviceSharding(_device()))
        for s in specs)
    try:
        return _export(fn, structs, in_formats, None, platforms)
    except Exception as e:
        raise InputError(ref, f"cannot export with the given --arg shapes: {_first_line(e)}") from None


def _exported_call(ref: str, fn: Callable, how: ReferenceCall, platforms: Sequence[str] | None):
    """``fn`` exported at the call ``--args-from`` makes, its static arguments closed over."""
    import jax

    assert how.args_from is not None
    args, kwargs = _args_from(how.args_from)
    call = make_call(fn, args, kwargs, static_argnums=how.static_argnums, static_argnames=how.static_argnames,
                     name=ref)
    traced, dynamic = call.traced()
    structs = [jax.tree.map(_as_struct, a) for a in dynamic]
    _shape_of_call(call, traced, structs)  # a call that does not fit: one line, before jax.export's traceback
    try:
        return _export(traced, structs, None, None, platforms)
    except Exception as e:
        raise InputError(ref, f"cannot export {describe(call.args, call.kwargs)}: {_first_line(e)}") from None


def _how(arg_specs: "Sequence[str] | ReferenceCall | None") -> ReferenceCall:
    return arg_specs if isinstance(arg_specs, ReferenceCall) else ReferenceCall(tuple(arg_specs or ()))


def module_from_reference(ref: str, arg_specs: "Sequence[str] | ReferenceCall",
                          platforms: Sequence[str] | None = None) -> bytes:
    """Serialized ``jax.export`` artifact of ``module:function`` at the given argument shapes.

    ``arg_specs`` are XLA shape strings, one per positional argument; a layout
    (``f32[8,128]{0,1}``, minor_to_major) pins that argument, none means the
    default.  Or a ``ReferenceCall``: the call ``--args-from`` makes, with its
    static arguments.  The bytes load with ``mlir.load``.  Raises ``InputError(ref, reason)``.
    ``platforms`` lowers for other platforms than this machine's (``["cuda"]``
    for a deviceless XLA:GPU compile).
    """
    return bytes(_exported_reference(ref, _how(arg_specs), platforms).serialize())


def load_reference(ref: str, arg_specs: "Sequence[str] | ReferenceCall", ctx: Any,
                   platforms: Sequence[str] | None = None):
    """``module_from_reference`` loaded into ``ctx``: what the CLI calls for a reference INPUT."""
    from stablehlo_layout.ir import mlir

    return mlir.load(module_from_reference(ref, arg_specs, platforms), ref, ctx)


def read_input_or_reference(input: str, arg_specs: "Sequence[str] | ReferenceCall | None", ctx: Any,
                            platforms: Sequence[str] | None = None):
    """What the CLI reads: a file (or ``-``) as before, or ``MODULE:FUNCTION`` called as ``arg_specs`` says.

    jax is imported only for a reference.  ``--arg`` (or ``--args-from``) with a file input is an error.
    """
    from stablehlo_layout.ir import mlir

    how = _how(arg_specs)
    if is_reference(input):
        return load_reference(input, how, ctx, platforms)
    if how != ReferenceCall():
        given = "--arg" if how.arg_specs else "--args-from" if how.args_from else "--static-argnums/--static-argnames"
        raise InputError(input, f"{given} is only for MODULE:FUNCTION inputs such as examples.models:mlp")
    return mlir.read_input(input, ctx)
