"""Differential test against XLA:TPU's layout assignment, one report per TPU generation.

    python -m tests.differential.tpu_run --count 300 --seed 0 --tpu v5e,v6e [--jobs 1]
        [--corpus all|generated|models] [--start 0] [--only 3,7] [--cache DIR] [--refresh]
        [--target xla-tpu] [--timeout 300] [--json OUT] [--report OUT.txt] [--show 12]

Generates programs (``gpu_programs.generate``: the CPU generator's steps plus
whole models) and builds the model-library programs (``models.py``: flax linen /
nnx, haiku, equinox, optax), compiles each deviceless with XLA:TPU for every
``--tpu`` generation (``tpu_oracle.py``; libtpu, no TPU), keeping the
layout-assignment dumps under
``bench/cache/tpu-differential/<oracle key>-<programs key>/<generation>/s<seed>/<index>/``
(the oracle key changes with libtpu / jax and the oracle's version, the programs
key with the generator's source or the model libraries), runs our target with
that generation on the raw BEFORE dump and compares it with XLA's AFTER dump
(``compare.py``, ``tpu_compare.py``).

libtpu aborts some compiles deviceless in a pass after layout assignment.  Every
program therefore compiles in a worker process (``run.run_parallel``, even with
``--jobs 1``); a worker that died is retried once, in a fresh worker, which
keeps the dumps the dead one wrote (``tpu_oracle.recover_tpu_oracle``) and
compares them.

Per generation the report gives: named rank>=2 values whose minor_to_major
agrees; every named array (rank 0 and 1 too) whose full layout, tiles
included, agrees; the non-trivial ones (XLA's layout is neither row-major nor
what the BEFORE module had); XLA's copies matched by (source, full layout),
counting XLA's one-copy-per-use duplicates once; copy bytes, logical and padded
to the tiles; errors; the kinds of difference; and the first differences with
both sides shown.  Exit status 0 whatever the agreement (it is a measuring
tool); 2 when the oracle cannot be loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from typing import Any

from tests.support import ROOT

from .tpu_oracle import TPU_GENERATIONS, generation_label, oracle_available, topology_name

HERE = os.path.dirname(os.path.abspath(__file__))  # this harness's folder: its program sources
DEFAULT_CACHE = os.path.join(ROOT, "bench", "cache", "tpu-differential")
DEFAULT_TPUS = ",".join(TPU_GENERATIONS)
DIED = "worker died (crash in XLA or our pass)"  # run.run_parallel's reason for a dead worker
STDERR = "stderr.txt"  # the compile's stderr, kept beside its dumps: libtpu's abort message


def programs_key() -> str:
    """Changes whenever the generated programs change (the oracle key covers libtpu and jax)."""
    h = hashlib.sha1()
    for name in ("programs.py", "gpu_programs.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:10]


def program_folder(cache: str, tpu: str, seed: int, index: int, model: str | None = None) -> str:
    """Where one program's dumps for ``tpu`` are cached (``tpu_oracle.program_dir``)."""
    from .tpu_oracle import program_dir

    if model is not None:
        from .models import corpus_hash

        return program_dir(cache, tpu, model, f"models-{corpus_hash()}")
    return program_dir(cache, tpu, os.path.join(f"s{seed}", f"{index:04d}"), programs_key())


@contextlib.contextmanager
def stderr_to(path: str) -> Iterator[None]:
    """Send file descriptor 2 to ``path`` meanwhile: libtpu's abort message lands there, not in the void."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "w") as f:
            os.dup2(f.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def abort_message(folder: str) -> str:
    """libtpu's ``Check failed`` line (else the last line) from a dead compile's stderr."""
    try:
        with open(os.path.join(folder, STDERR), errors="replace") as f:
            text = f.read()
    except OSError:
        return "no stderr kept"
    checks = re.findall(r"(Check failed: .*)", text)
    lines = text.strip().splitlines()
    return (checks[0] if checks else lines[-1] if lines else "no message")[:300]


def _meta_status(folder: str) -> str:
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            return str(json.load(f).get("status", ""))
    except (OSError, ValueError):
        return ""


def recovered(folder: str, retry: bool) -> str | None:
    """Keep the dumps of a compile whose process died in ``folder``; None when there was none.

    Returns "" when they are kept (meta.json is ok now), else why not.  On a
    retry the failure is final (meta.json records the skip); otherwise a
    stale compile (a harness stopped mid-run) compiles again.
    """
    from .tpu_oracle import recover_tpu_oracle

    if _meta_status(folder) != "compiling":
        return None
    why = abort_message(folder)
    res = recover_tpu_oracle(folder, why)
    if res is not None and res.status == "ok":
        return ""
    if not retry:
        os.remove(os.path.join(folder, "meta.json"))
    return f"the compiling process died before layout assignment was dumped: {why[:160]}"


def process(seed: int, index: int, cache: str, tpu: str, refresh: bool = False,
            model: str | None = None, target: str = "xla-tpu", retry: bool = False) -> dict[str, Any]:
    """Oracle (cached) + comparison for one program (generated, or ``model`` of models.py) on one generation.

    ``retry``: a worker died on this program; keep what its compile dumped.
    Never raises: failures come back as a result with their status.
    """
    from .compare import compare_dumps
    from .run import compare_one
    from .tpu_oracle import run_tpu_oracle

    ident = f"models/{model}" if model is not None else f"s{seed}/{index}"
    base: dict[str, Any] = {"seed": seed, "index": index, "tpu": generation_label(tpu), "id": ident}
    if model is not None:
        base["model"] = model
    try:
        folder = program_folder(cache, tpu, seed, index, model)
        why = recovered(folder, retry) if retry or not refresh else None
    except Exception as e:
        return {**base, "status": "harness-error", "error": f"{type(e).__name__}: {e}"[:300]}
    if why and retry:
        return {**base, "status": "skipped", "reason": why}
    if why == "":
        base["recovered"] = True
        refresh = False

    def build() -> Any:
        if model is not None:
            from .models import build

            return build(model)
        from .gpu_programs import generate

        return generate(seed, index)

    def compile_(program: Any, d: str) -> Any:
        os.makedirs(d, exist_ok=True)
        with stderr_to(os.path.join(d, STDERR)):
            return run_tpu_oracle(program, tpu, d)

    return compare_one(base, lambda: folder, refresh, build, compile_,
                       lambda res: compare_dumps(res.before, res.after, target=target, tpu=tpu.split(":")[0],
                                                 unique_keys=True))


def run_tasks(tasks: list[dict[str, Any]], jobs: int, timeout: float) -> list[dict[str, Any]]:
    """``run.run_parallel`` in worker processes; the programs whose worker died run once more, keeping its dumps."""
    from .run import run_parallel

    results = run_parallel(tasks, jobs, timeout, isolate=True)
    again = [k for k, r in enumerate(results) if r["status"] == "skipped" and r.get("reason") == DIED]
    if again:
        retried = run_parallel([{**tasks[k], "retry": True, "refresh": False} for k in again], jobs, timeout,
                               progress=False, isolate=True)
        for k, r in zip(again, retried):
            if r["status"] == "skipped" and r.get("reason") == DIED:
                r["reason"] = "worker died again on the kept dumps (a crash in our pass?)"
            results[k] = r
    return results


def main(argv: list[str] | None = None) -> int:
    from .run import corpus_arguments, output_arguments

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_arguments(ap)
    ap.add_argument("--tpu", default=DEFAULT_TPUS,
                    help=f"comma-separated generations ({DEFAULT_TPUS}) or topologies such as v5e:1x1")
    ap.add_argument("--target", default="xla-tpu", help="our target compared with XLA:TPU (xla-tpu)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (each holds its own libtpu)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per program")
    output_arguments(ap, DEFAULT_CACHE)
    a = ap.parse_args(argv)
    ok, why = oracle_available()
    if not ok:
        print(f"tpu_run: {why}", file=sys.stderr)
        return 2
    tpus = [t for t in a.tpu.split(",") if t]
    for t in tpus:
        try:
            topology_name(t)
        except KeyError as e:
            print(f"tpu_run: {e.args[0]}", file=sys.stderr)
            return 2
    from .run import corpora_of, write_results
    from .tpu_report import format_report

    corpora, why = corpora_of(a)
    if why:
        print(f"tpu_run: {why}", file=sys.stderr)
        return 2

    reports, everything = [], {}
    for t in tpus:
        for corpus, items in corpora:
            tasks = [{**it, "cache": a.cache, "tpu": t, "refresh": a.refresh, "target": a.target} for it in items]
            t0 = time.monotonic()
            results = run_tasks(tasks, a.jobs, a.timeout)
            label = f"{generation_label(t)} ({topology_name(t)}), {corpus} corpus, our target {a.target}"
            reports.append(format_report(results, label, a.show, time.monotonic() - t0))
            everything[f"{generation_label(t)}/{corpus}"] = results
    text = "\n\n".join(reports)
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(f"$ python -m tests.differential.tpu_run {' '.join(argv if argv is not None else sys.argv[1:])}\n")
            f.write(text + "\n")
    write_results(everything, a.json or os.path.join(a.cache, f"last_run_s{a.seed}.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
