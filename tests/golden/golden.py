"""Golden comparison: every command's output over the whole corpus, byte for byte.

Runs ``assign``, ``explain``, ``explain --json``, ``trace`` and ``trace --html``
on every input of the corpus (below) for the generic, xla-cpu and xla-gpu
targets and both ``--entry-layouts`` modes, in this process through
``stablehlo_layout.frontends.cli.main`` (the command's own code path, without a process
start per run), and records for each run the output bytes (the ``-o`` file or
the ``--html`` page), stderr (Python's and the C++ libraries', fd 2) and the
exit code.  ``tests/golden/manifest.json`` holds the sha256 of each.

    python tests/golden/golden.py --check              # compare with the manifest (exit 1 on a difference)
    python tests/golden/golden.py --update             # rewrite the manifest (run it under each venv)
    python tests/golden/golden.py --out DIR            # also keep every output under DIR
    python tests/golden/golden.py --check --ref DIR    # ... and diff each differing output against DIR

``--out`` and ``--ref`` go together: keep the outputs of the version you trust
(``--out ref``), change the code, then ``--check --ref ref`` prints unified
diffs of the first differing outputs.  ``--only REGEX`` keeps the runs whose key
matches, ``--slice`` the small fixed slice that ``tests/unit/test_golden.py``
runs, ``--fuzz N`` the number of generated programs (seeds 0..N-1).

The corpus: every lit input (``tests/lit/**`` files the command reads, bad
inputs included: their one-line errors are outputs too), ``examples/``
(StableHLO and XLA dumps), the differential dumps and scenarios under
``tests/unit/xla_*`` (before and after dumps: both are HLO modules the command
reads), and ``--fuzz`` programs of ``tests/fuzz/generator.py``, written to
``tests/golden/.fuzz/`` (git-ignored) so that their locations name a stable
relative path.  Inputs under a folder named for a GPU (``xla_gpu_dumps/a100``,
``examples/xla_gpu_dump/a100.*``) run ``--target xla-gpu`` with that
``--gpu``; the rest take the default GPU.

Determinism: inputs are named by paths relative to the repository root (the
tool runs there), outputs go to a temporary folder whose path is replaced by
``<OUT>`` in stderr, and the repository's absolute path by ``<REPO>``; an
absolute path into another checkout (a committed dump names where it was
made) becomes repository-relative in every output (``checkout_relative``).

The manifest is shared by the tested (Python, jax) pairs (``pairs``): an entry
that is the same under every recorded pair is one record; where the pairs
differ, the entry holds one record per pair (``by_pair``).  ``--update``
replaces the running pair's records and keeps the others', so run it under
``.venv`` and ``.venv-jax012``.  Where they differ, and why, is in
``tests/golden/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import hashlib
import io
import json
import os
import re
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "tests" / "golden" / "manifest.json"
FUZZ_DIR = Path("tests/golden/.fuzz")
SCHEMA = "stablehlo-layout.golden/1"

TARGETS = ("generic", "xla-cpu", "xla-gpu")
MODES = ("default", "free")
COMMANDS = ("assign", "explain", "explain-json", "trace", "trace-html")
GPUS = ("a100", "b200", "h100", "h200", "v100")
DEFAULT_FUZZ = 40

# Inputs the command reads, relative to the repository root.  Scripts that
# make inputs (make.py) and helpers (*.py) are not inputs; lit's own files neither.
_CORPUS_GLOBS = (
    "tests/lit/**/*.mlir",
    "tests/lit/Inputs/**/*.txt",
    "tests/lit/Inputs/**/*.bin",
    "examples/*.mlir",
    "examples/xla_dump/*.txt",
    "examples/xla_gpu_dump/*.txt",
    "tests/unit/xla_dumps/*.txt",
    "tests/unit/xla_gpu_dumps/**/*.txt",
    "tests/unit/xla_scenarios/*.hlo",
    "tests/unit/xla_scenarios/*.mlir",
    "tests/unit/xla_gpu_scenarios/*.hlo",
    "tests/unit/xla_gpu_scenarios/*.mlir",
)

# What every ./run-tests compares (tests/unit/test_golden.py): one input of each
# kind (StableHLO, an XLA:CPU dump, an XLA:GPU dump with its GPU, a control-flow
# program, a bad input, a fuzz program), every command, target and mode.
SLICE_INPUTS = (
    "examples/pinned_transpose.mlir",
    "examples/xla_dump/before_layout-assignment.txt",
    "tests/unit/xla_gpu_dumps/a100/conv_nchw_f32.before.txt",
    "tests/lit/Inputs/jax/cond.mlir",
    "tests/lit/Inputs/syntax_error.mlir",
    f"{FUZZ_DIR}/seed-0003.mlir",
)
SLICE_FUZZ = 4


@dataclass(frozen=True)
class Run:
    path: str
    target: str
    mode: str
    command: str

    @property
    def key(self) -> str:
        return f"{self.path}::{self.target}::{self.mode}::{self.command}"

    def gpu(self) -> str | None:
        """The GPU an input was dumped for, named by a path component or file name."""
        if self.target != "xla-gpu":
            return None
        for part in Path(self.path).parts[:-1] + (Path(self.path).name.split(".")[0],):
            if part in GPUS:
                return part
        return None

    def argv(self, out: str) -> list[str]:
        opts = ["--target", self.target, "--entry-layouts", self.mode]
        gpu = self.gpu()
        if gpu:
            opts += ["--gpu", gpu]
        if self.command == "trace-html":
            return ["trace", *opts, "--html", out, self.path]
        if self.command == "explain-json":
            return ["explain", *opts, "--json", "-o", out, self.path]
        return [self.command, *opts, "-o", out, self.path]


@dataclass(frozen=True)
class Outcome:
    rc: str
    out: bytes | None
    err: bytes

    def record(self) -> dict:
        """sha256 of the output and of stderr; null for no output file, and for an empty stderr (most runs)."""
        return {"rc": self.rc, "out": _sha(self.out) if self.out is not None else None,
                "err": _sha(self.err) if self.err else None}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_fuzz_inputs(count: int) -> list[str]:
    """Generate seeds 0..count-1 to FUZZ_DIR (rewritten only where the text changed)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.fuzz.generator import generate

    (REPO / FUZZ_DIR).mkdir(parents=True, exist_ok=True)
    paths = []
    for seed in range(count):
        rel = f"{FUZZ_DIR}/seed-{seed:04d}.mlir"
        text = generate(seed).text.encode()
        dst = REPO / rel
        if not dst.exists() or dst.read_bytes() != text:
            dst.write_bytes(text)
        paths.append(rel)
    return paths


def corpus(fuzz: int) -> list[str]:
    found: set[str] = set()
    for pattern in _CORPUS_GLOBS:
        found.update(str(p.relative_to(REPO)) for p in REPO.glob(pattern) if p.is_file())
    found = {p for p in found if "/Output/" not in p}
    return sorted(found) + write_fuzz_inputs(fuzz)


def runs_for(paths: Iterable[str]) -> list[Run]:
    return [Run(p, t, m, c) for p in paths for t in TARGETS for m in MODES for c in COMMANDS]


@contextlib.contextmanager
def _fd2_to(file) -> Iterable[None]:
    """C++ diagnostics (MLIR, XLA) write to fd 2, not to sys.stderr: catch those too."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def execute(run: Run, scratch: Path) -> Outcome:
    from stablehlo_layout.frontends.cli import main

    out = scratch / "output"
    if out.exists():
        out.unlink()
    err = io.StringIO()
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with tempfile.TemporaryFile(dir=scratch) as fd_err:
        with _fd2_to(fd_err), contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout):
            try:
                rc = str(main(run.argv(str(out))))
            except SystemExit as e:
                rc = f"exit {e.code}"
            except Exception as e:  # a traceback is a defect; record which, without paths
                rc = f"exception {type(e).__name__}"
                err.write(traceback.format_exception_only(e)[-1])
        fd_err.seek(0)
        native = fd_err.read()
    stdout.flush()
    printed = stdout.buffer.getvalue()  # everything goes to -o: anything here is recorded with stderr
    text = err.getvalue().encode() + native + (b"<stdout>\n" + printed if printed else b"")
    text = text.replace(str(scratch).encode(), b"<OUT>").replace(str(REPO).encode(), b"<REPO>")
    data = out.read_bytes() if out.exists() else None
    return Outcome(rc, None if data is None else checkout_relative(data), checkout_relative(text))


# An absolute path as a dump's metadata records it: the committed examples
# were dumped in some checkout of this repository, whose path is not this one's.
_ABSOLUTE = re.compile(rb"(?<![\w<>.])/[\w.\-]+(?:/[\w.\-]+)+")


def checkout_relative(data: bytes) -> bytes:
    """``data`` with every absolute path into another checkout of this repository made
    repository-relative: a committed dump names the file (``examples/xla_dump/make.py``)
    where it was made, so what the tool prints for it depends on where the checkout
    lies (relative inside it, absolute from outside); the manifest must not."""
    tracked = _tracked_files()

    def relative(m: re.Match[bytes]) -> bytes:
        parts = m.group(0).decode("utf-8", "replace").split("/")
        for k in range(1, len(parts) - 1):
            tail = "/".join(parts[k + 1:])
            if tail in tracked:
                return tail.encode()
        return m.group(0)

    return _ABSOLUTE.sub(relative, data)


@functools.cache
def _tracked_files() -> frozenset[str]:
    """The repository's own files (git's list): a venv or scratch file that happens to lie in
    one checkout and not another must not count."""
    import subprocess

    done = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return frozenset(done.stdout.splitlines())


def pair() -> str:
    """The running (Python, jax) pair, as the manifest names it."""
    import importlib.metadata as md

    return f"python{sys.version_info[0]}.{sys.version_info[1]}-jax{md.version('jax')}"


def load_manifest(path: Path = MANIFEST) -> dict:
    if not path.exists():
        return {"schema": SCHEMA, "pairs": [], "inputs": {}, "entries": {}}
    return json.loads(path.read_text())


def write_manifest(manifest: dict, path: Path = MANIFEST) -> None:
    """Sorted, one entry per line: a changed output is a one-line diff."""
    lines = ["{", f' "schema": {json.dumps(manifest["schema"])},', f' "pairs": {json.dumps(manifest["pairs"])},',
             ' "inputs": {']
    items = sorted(manifest["inputs"].items())
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}{',' if i < len(items) - 1 else ''}" for i, (k, v) in enumerate(items)]
    lines += [" },", ' "entries": {']
    items = sorted(manifest["entries"].items())
    lines += [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}{',' if i < len(items) - 1 else ''}"
              for i, (k, v) in enumerate(items)]
    lines += [" }", "}"]
    path.write_text("\n".join(lines) + "\n")


def expected(manifest: dict, key: str, name: str) -> dict | None:
    entry = manifest["entries"].get(key)
    if entry is None:
        return None
    if "by_pair" in entry:
        return entry["by_pair"].get(name)
    return entry


def merged(manifest: dict, name: str, records: dict[str, dict], inputs: dict[str, str]) -> dict:
    """The manifest with pair ``name``'s records replaced; the other pairs' kept."""
    others = [v for v in manifest.get("pairs", []) if v != name]
    entries: dict[str, dict] = {}
    for key in sorted(set(records) | set(manifest["entries"])):
        per: dict[str, dict] = {}
        for v in others:
            rec = expected(manifest, key, v)
            if rec is not None:
                per[v] = rec
        if key in records:
            per[name] = records[key]
        if not per:
            continue
        first = next(iter(per.values()))
        if len(per) == len(others) + 1 and all(r == first for r in per.values()):
            entries[key] = first
        else:
            entries[key] = {"by_pair": dict(sorted(per.items()))}
    ins = dict(manifest.get("inputs", {}))
    ins.update(inputs)
    return {"schema": SCHEMA, "pairs": sorted(set(others) | {name}), "inputs": dict(sorted(ins.items())),
            "entries": entries}


def _keep(outdir: Path, run: Run, o: Outcome) -> None:
    base = outdir / run.path / f"{run.target}.{run.mode}.{run.command}"
    base.parent.mkdir(parents=True, exist_ok=True)
    if o.out is not None:
        (base.parent / (base.name + ".out")).write_bytes(o.out)
    (base.parent / (base.name + ".err")).write_bytes(o.err)
    (base.parent / (base.name + ".rc")).write_text(o.rc + "\n")


def _diff(ref: Path, run: Run, o: Outcome, limit: int = 60) -> list[str]:
    lines: list[str] = []
    base = ref / run.path / f"{run.target}.{run.mode}.{run.command}"
    for suffix, data in ((".rc", (o.rc + "\n").encode()), (".err", o.err), (".out", o.out)):
        ref_file = base.parent / (base.name + suffix)
        old = ref_file.read_bytes() if ref_file.exists() else None
        if old == data:
            continue
        a = [] if old is None else old.decode("utf-8", "replace").splitlines(keepends=True)
        b = [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)
        d = list(difflib.unified_diff(a, b, f"ref/{run.key}{suffix}", f"now/{run.key}{suffix}", n=2))
        lines += d[:limit] + ([f"... ({len(d) - limit} more diff lines)\n"] if len(d) > limit else [])
    return lines


def select(args: argparse.Namespace) -> tuple[list[str], list[Run]]:
    if args.slice:
        paths = [p for p in corpus(SLICE_FUZZ) if p in SLICE_INPUTS]
    else:
        paths = corpus(args.fuzz)
    runs = runs_for(paths)
    if args.only:
        pattern = re.compile(args.only)
        runs = [r for r in runs if pattern.search(r.key)]
        wanted = {r.path for r in runs}
        paths = [p for p in paths if p in wanted]
    return paths, runs


def compare(runs: list[Run], outcomes: dict[str, Outcome], manifest: dict, name: str,
            ref: Path | None, shown: int) -> list[str]:
    """Report lines for every run whose record differs from the manifest."""
    report: list[str] = []
    bad = 0
    for run in runs:
        want = expected(manifest, run.key, name)
        got = outcomes[run.key].record()
        if want == got:
            continue
        bad += 1
        if bad > shown:
            continue
        if want is None:
            report.append(f"NEW {run.key}: not in the manifest for {name}\n")
        else:
            what = [f for f in ("rc", "out", "err") if want.get(f) != got[f]]
            rc = f" (rc {want.get('rc')} -> {got['rc']})" if "rc" in what else ""
            report.append(f"DIFF {run.key}: {', '.join(what)} differ{rc}\n")
        if ref is not None:
            report += _diff(ref, run, outcomes[run.key])
    if bad > shown:
        report.append(f"... and {bad - shown} more differing runs\n")
    if bad:
        report.append(f"{bad} of {len(runs)} runs differ from {MANIFEST.relative_to(REPO)} ({name})\n")
    return report


def run_all(runs: list[Run], outdir: Path | None, progress: bool) -> dict[str, Outcome]:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    outcomes: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        scratch = Path(tmp)
        last = None
        for i, run in enumerate(runs):
            if progress and run.path != last:
                print(f"[{i}/{len(runs)}] {run.path}", file=sys.stderr, flush=True)
                last = run.path
            o = execute(run, scratch)
            outcomes[run.key] = o
            if outdir is not None:
                _keep(outdir, run, o)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the manifest (the default)")
    mode.add_argument("--update", action="store_true", help="rewrite the running (Python, jax) pair's records")
    p.add_argument("--out", type=Path, help="keep every output, stderr and exit code under this folder")
    p.add_argument("--ref", type=Path, help="with --check: a folder written by --out to diff against")
    p.add_argument("--only", help="regex on run keys (PATH::TARGET::MODE::COMMAND)")
    p.add_argument("--slice", action="store_true", help="the small slice tests/unit/test_golden.py runs")
    p.add_argument("--fuzz", type=int, default=DEFAULT_FUZZ, help=f"generated programs (default {DEFAULT_FUZZ})")
    p.add_argument("--show", type=int, default=10, help="differing runs to print (default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    os.chdir(REPO)  # inputs are named relative to the repository root
    if args.update and (args.slice or args.only):
        p.error("--update rewrites the whole manifest: no --slice or --only")
    if args.update and args.fuzz != DEFAULT_FUZZ:
        p.error(f"--update records the {DEFAULT_FUZZ} fuzz programs the manifest promises")
    paths, runs = select(args)
    name = pair()
    inputs = {path: _sha((REPO / path).read_bytes()) for path in paths}
    outcomes = run_all(runs, args.out, not args.quiet)
    manifest = load_manifest()
    if args.update:
        records = {key: o.record() for key, o in outcomes.items()}
        new = merged(manifest, name, records, inputs)
        stale = set(new["entries"]) - set(records)  # inputs that left the corpus
        for key in stale:
            del new["entries"][key]
        new["inputs"] = {k: v for k, v in new["inputs"].items() if k in inputs}
        write_manifest(new)
        split = sum(1 for e in new["entries"].values() if "by_pair" in e)
        print(f"{MANIFEST.relative_to(REPO)}: {len(records)} runs recorded for {name} "
              f"({len(new['entries'])} entries, {split} differ between the pairs {', '.join(new['pairs'])})")
        return 0
    changed = [p for p in paths if manifest["inputs"].get(p) not in (None, inputs[p])]
    for path in changed:
        print(f"INPUT CHANGED {path}: its sha256 differs from the manifest's", file=sys.stdout)
    report = compare(runs, outcomes, manifest, name, args.ref, args.show)
    sys.stdout.writelines(report)
    if not report and not changed:
        print(f"golden: {len(runs)} runs over {len(paths)} inputs match {MANIFEST.relative_to(REPO)} ({name})")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
