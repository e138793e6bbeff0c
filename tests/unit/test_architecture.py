"""The package's architecture holds: its stages, its seams to the compiled core, no cycles.

``lint-imports`` (run by ./run-tests, contracts in pyproject.toml) checks the
layers and the cycles inside each stage.  This test reads every import of the
package from the source (in-function and TYPE_CHECKING imports included), so
it holds whatever import-linter can or cannot see: the compiled core is no
Python file, and a cycle may run across stages.  And the module map of
DESIGN §3 must list exactly the package's modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support import ROOT

PACKAGE = "stablehlo_layout"
# Top first; ``python -m stablehlo_layout`` (__main__) runs the command, above every stage.
STAGES = ("__main__", "passes", "frontends", "fix", "report", "xla", "ir", "engine", "targets", "model")
CORE = f"{PACKAGE}._core"
CORE_SEAMS = {f"{PACKAGE}.engine.core", f"{PACKAGE}.ir.capi"}


def package_files() -> dict[str, Path]:
    """Module name -> file, with passes/ under the name it is installed as (stablehlo_layout.passes)."""
    files = {}
    for base, prefix in ((ROOT / PACKAGE, PACKAGE), (ROOT / "passes", f"{PACKAGE}.passes")):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            files[".".join([prefix, *parts])] = path
    return files


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """Every module ``name`` imports, anywhere in the file, as absolute names
    (``from pkg import module`` imports the module, as import-linter reads it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            submodules = {f"{base}.{a.name}" for a in node.names} & modules
            out.update(submodules)
            if len(submodules) < len(node.names):
                out.add(base)
    return out


def import_graph() -> dict[str, set[str]]:
    files = package_files()
    known = set(files) | {CORE}
    return {name: {m for m in imports_of(name, path, known) if m in known and m != name}
            for name, path in files.items()}


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_only_the_two_seams_import_the_compiled_core():
    importers = {m for m, deps in import_graph().items() if CORE in deps}
    assert importers == CORE_SEAMS


def test_each_stage_imports_only_the_stages_below_it():
    rank = {s: i for i, s in enumerate(STAGES)}
    bad = []
    for module, deps in import_graph().items():
        here = stage_of(module)
        for dep in deps:
            there = stage_of(dep)
            if dep != CORE and (here is None or there is None):
                # Only the package's own __init__ stands outside the stages, and imports none of them.
                bad.append(f"{module} -> {dep} (outside the stages)")
            elif here and there and rank[there] < rank[here]:
                bad.append(f"{module} -> {dep}")
    assert not bad, "\n".join(sorted(bad))


def test_no_module_is_in_an_import_cycle():
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                cycles.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles


def test_passes_is_imported_by_its_one_name():
    """passes/ is installed as stablehlo_layout.passes; nothing imports it as a top-level ``passes``."""
    bad = []
    for path in sorted(ROOT.glob("**/*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0].startswith(".") or "Output" in rel.parts or rel.parts[0] == "build":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            bad += [f"{rel}:{node.lineno}" for n in names if n == "passes" or n.startswith("passes.")]
    assert not bad


def test_the_design_module_map_lists_the_package():
    """DESIGN §3's map names every module of the package, and nothing that is not there."""
    text = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- module map -->"): text.index("<!-- end of module map -->")]
    listed, folders = set(), []  # folders: (indent, name) of the folders the lines are in
    for line in block.splitlines():
        entry = re.match(r"^( +)([\w.]+\.py|[\w]+/)(?:\s|$)", line)
        if not entry:
            continue  # a description's continuation
        indent, name = len(entry.group(1)), entry.group(2)
        folders = [(i, f) for i, f in folders if i < indent]
        if name.endswith("/"):
            folders.append((indent, name))
        else:
            listed.add("".join(f for _, f in folders) + name)
    actual = {str(p.relative_to(ROOT)) for base in (PACKAGE, "passes") for p in (ROOT / base).rglob("*.py")}
    assert listed == actual, f"not in the map: {sorted(actual - listed)}; not in the package: {sorted(listed - actual)}"
