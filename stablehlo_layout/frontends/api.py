"""One call from an MLIR module to a laid-out module: import, propagate, rewrite."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jaxlib.mlir import ir

from stablehlo_layout.model.errors import PassError
from stablehlo_layout.model.graph import Graph

if TYPE_CHECKING:
    from stablehlo_layout.report.explain import CopyReport, Explanation
from stablehlo_layout.ir.importer import import_module
from stablehlo_layout.engine.driver import assign_layouts, quiet_gc
from stablehlo_layout.engine.result import Assignment
from stablehlo_layout.ir.rewrite import InsertedCopy, rewrite
from stablehlo_layout.targets import Target, get_target


@dataclass
class LayoutResult:
    """What a run produced: the engine's answer and the copies written into the module."""

    module: ir.Module | ir.Operation
    graph: Graph
    assignment: Assignment
    copies: list[InsertedCopy]
    target: str
    entry_layouts: str
    warnings: list[str] = field(default_factory=list)
    _explanation: "Explanation | None" = field(default=None, repr=False)
    # False: run without provenance (``assign_module``), nothing to explain.
    provenance: bool = True

    def explain(self, fixes: bool = True, max_reruns: int = 16) -> "Explanation":
        """Why each copy is there (built once, on first use): ``result.explain().render()``."""
        if not self.provenance:
            raise ValueError("this result was made with provenance=False: run assign_module again to explain it")
        if self._explanation is None:
            from stablehlo_layout.report.explain import explain

            self._explanation = explain(self.assignment, fixes=fixes, max_reruns=max_reruns)
        return self._explanation

    def report(self, copy: InsertedCopy) -> "CopyReport":
        """The explanation of one inserted copy: ``result.report(result.copies[0]).explain()``."""
        edges = {(e.consumer, e.operand) for e in copy.edges}
        for r in self.explain().copies:
            if edges <= set(r.edges) and r.dst == copy.dst:
                return r
        raise KeyError(f"no report for {copy.name}")


def resolve_target(target: str | Target, gpu: str | None = None,
                   tpu: str | None = None) -> tuple[Target, str | None]:
    if isinstance(target, Target):
        if gpu is not None or tpu is not None:
            raise PassError(f"{'gpu' if gpu is not None else 'tpu'}= goes with a target name "
                            "(target='xla-gpu' or 'xla-tpu'); a target object already has its device")
        return target, None
    return get_target(target, gpu, tpu)


def _import(module: ir.Module | ir.Operation, target: str | Target, gpu: str | None = None,
            tpu: str | None = None):
    tgt, warning = resolve_target(target, gpu, tpu)
    graph, handles = import_module(module, inline_calls=tgt.inline_calls,
                                   given_layouts=getattr(tgt, "reads_given_layouts", False))
    warnings = [warning] if warning else []
    for op, count in sorted(graph.unknown_ops.items()):
        warnings.append(f"note: {count} {op} op(s) unknown to the rules: "
                        "their operands and results are pinned to the default layout")
    return tgt, graph, handles, warnings


def analyze(module: ir.Module | ir.Operation, target: str | Target = "generic",
            entry_layouts: str = "default", trace: bool = False,
            exact: bool = False, gpu: str | None = None, *,
            consume: bool = False, tpu: str | None = None) -> tuple[Graph, Assignment, list[str]]:
    """Import and propagate without touching the module (inlining works on a copy).

    ``exact`` runs XLA's every round even when one provably repeats the
    last, so that explanations carry XLA's round and priority numbers.
    ``consume``: the caller drops the module afterwards, so the import may
    inline into the module itself instead of a copy (the copy cost a tenth
    of the import's time, and its memory).
    """
    from stablehlo_layout.ir.mlir import discard

    op = module.operation if isinstance(module, ir.Module) else module
    with quiet_gc():
        clone = op if consume else op.clone()
        tgt, graph, _, warnings = _import(clone, target, gpu, tpu)
        if not consume:
            discard(clone, graph.region_depth)
        assignment = assign_layouts(graph, tgt, entry_layouts, trace, exact)
        return graph, assignment, warnings + assignment.notes


def assign_module(module: ir.Module | ir.Operation, target: str | Target = "generic",
                  entry_layouts: str = "default", trace: bool = False,
                  exact: bool = False, gpu: str | None = None, *, check: bool = True,
                  names: bool = True, provenance: bool = True, tpu: str | None = None) -> LayoutResult:
    """Assign layouts to ``module`` in place and return what was decided.

    ``gpu`` names the device of ``target="xla-gpu"`` (a shipped GPU name or a
    GpuTargetConfigProto text file; h100 when omitted), ``tpu`` the generation
    of ``target="xla-tpu"`` (v4, v5e, v5p, v6e, tpu7x; v5e when omitted).

    The layouts and copies do not depend on ``exact``; only the round and
    priority numbers ``result.explain()`` shows do (see ``analyze``).

    The rewritten module is verified (``check_output``) unless ``check`` is
    False: then the caller must verify it before handing it on, as the
    command does through its printer (``mlir.final_text``).

    With ``names`` False the copies carry no names (``InsertedCopy.name`` is
    empty, each copy has its consumer's location): for a caller that prints
    the module without locations, as the command does without
    ``--mlir-print-debuginfo`` (``rewrite.rewrite``).

    With ``provenance`` False the engine keeps no record of why each constraint
    holds (``driver.assign_layouts``): the same layouts and copies in less
    memory, for a caller that never calls ``result.explain()`` (the command).
    """
    with quiet_gc():
        tgt, graph, handles, warnings = _import(module, target, gpu, tpu)
        assignment = assign_layouts(graph, tgt, entry_layouts, trace, exact, provenance)
        copies = rewrite(module, assignment, handles, names=names)
    if check:
        check_output(module)
    result = LayoutResult(module, graph, assignment, copies, tgt.name, entry_layouts,
                          warnings + assignment.notes, provenance=provenance or exact or trace)
    for c in copies:
        c.owner = result
    return result


def check_output(module: ir.Module | ir.Operation) -> None:
    """Never hand back a module that does not verify: that would be a bug of ours."""
    op = module.operation if isinstance(module, ir.Module) else module
    try:
        op.verify()
    except ir.MLIRError as e:
        first = e.error_diagnostics[0] if getattr(e, "error_diagnostics", None) else None
        what = f"{first.message} at {first.location}" if first is not None else str(e).splitlines()[0]
        raise PassError("internal error: the rewritten module does not verify "
                        f"({what}); please report this with the input") from None
