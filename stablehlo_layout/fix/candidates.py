"""What ``fix`` tries: changes to the program, each a rewrite that keeps what it computes.

Proposals come from XLA's own copies (which pinned entries they sit at) and
from the program (convolutions written in an order the backend does not run
natively).  A proposal is only a guess: ``search`` compiles each with the
target's XLA and keeps what XLA confirms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from jaxlib.mlir import ir

from stablehlo_layout.ir import conv_order, dot_order, entry_modes, layout_constraint
from stablehlo_layout.ir.inline import inline_calls
from stablehlo_layout.ir.transposes import sink_transposes
from stablehlo_layout.model import layout as L
from stablehlo_layout.xla import entry_copies

# Entry values tried one by one up to this many; past it, together (each try is one XLA compile).
ONE_BY_ONE = 8

_POSITION = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


@dataclass(frozen=True)
class Where:
    """Where a change is made, in the user's terms: a source file and line, and the op or value."""

    file: str
    line: int | None
    op: str

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "op": self.op}

    def text(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(frozen=True)
class Candidate:
    """One change to try: ``apply`` makes it on a module (in place) and says whether anything changed."""

    kind: str  # "entry-layout" | "convolution-order" | "dot-operand-order" | "layout-constraint"
    what: str  # the change, as the user would make it
    where: Where
    apply: Callable[[ir.Module], bool]
    # An entry-layout change: the modes it states, (parameters, results) by position.
    entry: tuple[dict[int, str], dict[int, str]] | None = None


def where_of(location: str, path: str, op: str) -> Where:
    """The user's file and line in a printed MLIR location: its first named file position,
    else the position in the input itself (a module parsed from ``path``)."""
    positions = _POSITION.findall(location)
    for file, line, _ in positions:
        if file not in ("-", ""):
            return Where(file, int(line), op)
    if positions:
        return Where(path, int(positions[0][1]), op)
    return Where(path, None, op)


def _mode(layout: L.Layout) -> str:
    return L.format_layout(layout)


def entry_change(params: dict[int, str], results: dict[int, str]) -> Callable[[ir.Module], bool]:
    """Stating these ``mhlo.layout_mode``s, as a change to apply."""
    def apply(module: ir.Module) -> bool:
        before = entry_modes.entry_modes(module)
        entry_modes.set_modes(module, params, results)
        return entry_modes.entry_modes(module) != before
    return apply


def _named(what: str, i: int, names: list[str]) -> str:
    return f"{what} {i} ({names[i]})" if i < len(names) and names[i] else f"{what} {i}"


def _describe(params: dict[int, str], results: dict[int, str], modes: tuple[list[str | None], list[str | None]],
              names: tuple[list[str], list[str]]) -> str:
    parts = []
    for kind, changes, now, called in (("parameter", params, modes[0], names[0]),
                                       ("result", results, modes[1], names[1])):
        for i, mode in sorted(changes.items()):
            what = _named(kind, i, called)
            was = f"now {now[i]}" if now[i] else "now the default layout"
            if mode == "auto":
                parts.append(f"leave {what} free (Layout.AUTO, mhlo.layout_mode = \"auto\"; {was})")
            else:
                parts.append(f"pin {what} to {mode} (mhlo.layout_mode = \"{mode}\"; {was})")
    return "; ".join(parts)


def entry_candidates(program: ir.Module, after: str, path: str) -> list[Candidate]:
    """Entry layouts to free or pin, from XLA's copies at the entry of ``after``."""
    wishes = entry_copies.entry_wishes(after)
    modes = entry_modes.entry_modes(program)
    changes: list[tuple[dict[int, str], dict[int, str]]] = []
    for side, table, now in ((0, wishes.params, modes[0]), (1, wishes.results, modes[1])):
        for i, layouts in sorted(table.items()):
            if i >= len(now) or now[i] == "auto":
                continue
            for mode in ["auto", *(_mode(x) for x in layouts)]:
                if mode != now[i]:
                    changes.append(({i: mode}, {}) if side == 0 else ({}, {i: mode}))
    if len(changes) > ONE_BY_ONE:
        # Too many to compile one by one: each kind of change for every entry at once.
        freed = ({i: "auto" for c in changes for i in c[0]}, {i: "auto" for c in changes for i in c[1]})
        pinned = ({i: m for c in changes for i, m in c[0].items() if m != "auto"},
                  {i: m for c in changes for i, m in c[1].items() if m != "auto"})
        changes = [c for c in (freed, pinned) if c[0] or c[1]]
    names = entry_modes.entry_names(program)
    return [Candidate("entry-layout", _describe(p, r, modes, names), _entry_where(program, p, r, path, names),
                      entry_change(p, r), (p, r)) for p, r in changes]


def _entry_where(program: ir.Module, params: dict[int, str], results: dict[int, str], path: str,
                 names: tuple[list[str], list[str]]) -> Where:
    said = [_named("parameter", i, names[0]) for i in sorted(params)] + \
        [_named("result", i, names[1]) for i in sorted(results)]
    if params:
        return where_of(entry_modes.parameter_location(program, min(params)), path, ", ".join(said))
    return Where(path, None, ", ".join(said))


def follow_up(candidate: Candidate, program: ir.Module, after: str, path: str) -> Candidate | None:
    """An entry change that left XLA copying at pinned results: the same change with those results pinned too.

    A parameter pinned to the order its readers want makes values computed
    from it (an updated weight) come out in that order, and XLA copies them
    back to the result's pin; the pair of pins spares both copies.
    """
    if candidate.kind != "entry-layout" or candidate.entry is None:
        return None
    params, results = candidate.entry
    modes = entry_modes.entry_modes(program)
    extra = {k: _mode(layouts[0]) for k, layouts in entry_copies.entry_wishes(after).results.items()
             if k not in results and k < len(modes[1]) and modes[1][k] != "auto"}
    if not extra:
        return None
    both = {**results, **extra}
    return Candidate("entry-layout", _describe(params, both, modes, entry_modes.entry_names(program)), candidate.where,
                     entry_change(params, both), (params, both))


def _list(xs: list[int]) -> str:
    return ", ".join(map(str, xs))


_SPELLING = {"channels-last": "('NHWC', 'HWIO', 'NHWC')", "channels-first": "('NCHW', 'OIHW', 'NCHW')"}


def _conv_candidates(program: ir.Module, path: str) -> list[Candidate]:
    sites = conv_order.convolutions(program)
    out = []
    for order in conv_order.ORDERS:
        others = [s for s in sites if s.order != order]
        if not others:
            continue
        first = where_of(others[0].location, path, "stablehlo.convolution")
        places = sorted({(w.file, w.line or 0) for w in (where_of(s.location, path, "") for s in others)})
        lines = [f"{file}:{line}" if line else file for file, line in places]
        shown = ", ".join(lines[:4]) + (f" and {len(lines) - 4} more" if len(lines) > 4 else "")

        def apply(module: ir.Module, order: str = order) -> bool:
            inline_calls(module)
            changed = conv_order.rewrite_convolutions(module, order)
            sink_transposes(module)
            return changed > 0

        out.append(Candidate("convolution-order",
                             f"write the convolutions at {shown} {order} "
                             f"(dimension_numbers={_SPELLING[order]}), their transposes moved to where "
                             "the order really changes", first, apply))
    return out


def _dot_candidates(program: ir.Module, path: str) -> list[Candidate]:
    # Dots are counted with private calls inlined, as every change is applied (a convolution
    # rewrite inlines them too): the same index names the same dot whichever comes first.
    inlined = ir.Module.parse(str(program.operation.get_asm(enable_debug_info=True)), program.context)
    inline_calls(inlined)
    sites = dot_order.dots(inlined)
    groups = [[s] for s in sites] if len(sites) <= ONE_BY_ONE else [sites]
    out = []
    for group in groups:
        first = where_of(group[0].location, path, "stablehlo.dot_general")
        only = {s.index for s in group}
        said = first.text() if len(group) == 1 else f"{first.text()} and {len(group) - 1} more"

        def apply(module: ir.Module, only: set[int] = only) -> bool:
            inline_calls(module)
            changed = dot_order.swap_operands(module, only)
            sink_transposes(module)
            return changed > 0

        if len(group) == 1:
            shapes = "x".join(map(str, group[0].swapped)), "x".join(map(str, group[0].shape))
            what = (f"write the dot at {said} with its operands the other way round (einsum 'ij,jk->ik' as "
                    f"'jk,ij->ki'): it computes the {shapes[0]} the program reads instead of a {shapes[1]} "
                    "that the program transposes")
        else:
            what = (f"write the dots at {said} with their operands the other way round (einsum 'ij,jk->ik' as "
                    "'jk,ij->ki'): each computes the order the program reads instead of one it transposes")
        out.append(Candidate("dot-operand-order", what, first, apply))
    return out


def _dims_text(dims: tuple[int, ...]) -> str:
    return "x".join(map(str, dims))


def _constraint_candidates(program: ir.Module, after: str, path: str) -> list[Candidate]:
    # XLA's copies name an array's dims, the slice's dims and the array's layout; the program's
    # slices of those dims are where the constraint goes (several alike: each is tried).
    wishes = entry_copies.slice_wishes(after)
    if not wishes:
        return []
    sites = layout_constraint.slices(program)
    found: list[tuple[layout_constraint.SliceSite, L.Layout]] = []
    for w in wishes:
        found += [(s, w.layout) for s in sites if s.operand == w.operand and s.result == w.result]
    groups = [[f] for f in found] if len(found) <= ONE_BY_ONE else [found]
    out = []
    for group in groups:
        wanted = {s.index: layout for s, layout in group}
        site, layout = group[0]
        first = where_of(site.location, path, site.op)
        m2m = L.format_layout(layout)
        major_to_minor = tuple(reversed(layout))

        def apply(module: ir.Module, wanted: dict[int, L.Layout] = wanted) -> bool:
            return layout_constraint.constrain_slices(module, wanted) > 0

        if len(group) == 1:
            what = (f"constrain the slice at {first.text()} to the layout its {_dims_text(site.operand)} operand "
                    f"already has, {m2m} (jax: with_layout_constraint(y, Layout(major_to_minor={major_to_minor}))): "
                    f"it slices in place and the copy moves after it, to the {_dims_text(site.result)} slice")
        else:
            what = (f"constrain the slices at {first.text()} and {len(group) - 1} more to the layouts their "
                    "operands already have (jax: with_layout_constraint): each slices in place and its copy "
                    "moves after it, to the slice")
        out.append(Candidate("layout-constraint", what, first, apply))
    return out


def propose(program: ir.Module, after: str, path: str) -> list[Candidate]:
    """The changes worth one XLA compile each, for ``program`` whose XLA layout is ``after``."""
    return [*entry_candidates(program, after, path), *_conv_candidates(program, path),
            *_dot_candidates(program, path), *_constraint_candidates(program, after, path)]
