"""Differential test against XLA:CPU's layout assignment.

    python -m tests.differential.run --count 300 --seed 0 [--jobs 2] [--start 0]
        [--cache DIR] [--refresh] [--timeout 120] [--json OUT]
        [--target xla-cpu] [--show 10]
    python -m tests.differential.run --corpus models [--only NAME,...] [...]

Generates programs (``programs.py``; with ``--corpus models``, the programs
built from flax, haiku, equinox and optax in ``models.py``), compiles each with XLA and keeps the
layout-assignment dumps (``oracle.py``, cached under
``bench/cache/differential/<generator hash>/s<seed>/<index>/`` so reruns only
re-run our pass), compares our pass with XLA (``compare.py``) and prints a
report.  Exit status 0 whatever the agreement (it is a measuring tool).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from tests.support import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))  # this harness's folder: its program sources
DEFAULT_CACHE = os.path.join(ROOT, "bench", "cache", "differential")


def generator_hash() -> str:
    """Changes whenever the generator or the way XLA is run changes (new programs, new dumps)."""
    from .oracle import ORACLE_VERSION

    h = hashlib.sha1()
    with open(os.path.join(HERE, "programs.py"), "rb") as f:
        h.update(f.read())
    h.update(str(ORACLE_VERSION).encode())
    try:
        import importlib.metadata as md

        h.update(md.version("jaxlib").encode())
    except Exception:
        pass
    return h.hexdigest()[:10]


def program_dir(cache: str, seed: int, index: int) -> str:
    return os.path.join(cache, generator_hash(), f"s{seed}", f"{index:04d}")


def model_dir(cache: str, name: str) -> str:
    from .models import corpus_hash
    from .oracle import ORACLE_VERSION

    return os.path.join(cache, f"models-{corpus_hash()}-o{ORACLE_VERSION}", name)


def process(seed: int, index: int, cache: str, target: str = "xla-cpu",
            refresh: bool = False, model: str | None = None) -> dict[str, Any]:
    """Oracle (cached) + comparison for one program (generated, or ``model`` of models.py); never raises."""
    from .compare import compare_dumps
    from .oracle import run_oracle

    if model is not None:
        base: dict[str, Any] = {"seed": seed, "index": index, "id": f"models/{model}", "model": model}
    else:
        base = {"seed": seed, "index": index, "id": f"s{seed}/{index}"}

    def build() -> Any:
        if model is not None:
            from .models import build

            return build(model)
        from .programs import generate

        return generate(seed, index)

    return compare_one(base, lambda: model_dir(cache, model) if model is not None else program_dir(cache, seed, index),
                       refresh, build, run_oracle, lambda res: compare_dumps(res.before, res.after, target=target))


def compare_one(base: dict[str, Any], folder: Callable[[], str], refresh: bool, build: Callable[[], Any],
                oracle: Callable[[Any, str], Any], compare: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """One program's result: XLA's dumps (cached in ``folder()``, else ``oracle(build(), folder)``) compared.

    ``base`` (the program's ids) leads the result.  Never raises: a failure
    of the harness itself comes back as a result with its status.
    """
    from .oracle import load_cached

    try:
        d = folder()
        res = None if refresh else load_cached(d)
        base["cached"] = res is not None
        if res is None:
            res = oracle(build(), d)
        base.update(program=res.program, jax_error=res.jax_error, oracle_seconds=res.seconds)
        if res.status != "ok":
            return {**base, "status": "skipped", "reason": res.reason}
        return {**base, **compare(res), "dir": d}
    except Exception as e:
        return {**base, "status": "harness-error",
                "error": f"{type(e).__name__}: {e}"[:300], "traceback": traceback.format_exc()[-1500:]}


def chosen_models(only: str | None) -> tuple[list[str], str]:
    """The model names to run (``--only``, else every one of models.py) and "" or why they cannot run."""
    from .models import MODELS, available

    missing = available()
    if missing:
        return [], missing
    names = only.split(",") if only else list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        return [], f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}"
    return names, ""


def chosen_indices(a: argparse.Namespace) -> list[int]:
    """The generated programs to run: ``--only``, else ``--count`` from ``--start``."""
    return [int(x) for x in a.only.split(",")] if a.only else list(range(a.start, a.start + a.count))


def corpus_arguments(ap: argparse.ArgumentParser) -> None:
    """The options that choose the programs, as the GPU and TPU harnesses take them."""
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--only", help="comma-separated program indices (model names with --corpus models) to run")
    ap.add_argument("--corpus", choices=("generated", "models", "all"), default="all",
                    help="generated: gpu_programs.py's seeded programs; models: the flax / haiku / equinox / "
                         "optax programs of models.py; all (default): both, reported apart")


def output_arguments(ap: argparse.ArgumentParser, cache: str) -> None:
    """The options for the dump cache and what is written, as the GPU and TPU harnesses take them."""
    ap.add_argument("--cache", default=cache)
    ap.add_argument("--refresh", action="store_true", help="recompile even when dumps are cached")
    ap.add_argument("--json", help="write every per-program result here")
    ap.add_argument("--report", help="also write the report text here")
    ap.add_argument("--show", type=int, default=12)


def corpora_of(a: argparse.Namespace) -> tuple[list[tuple[str, list[dict[str, Any]]]], str]:
    """The (corpus, tasks) pairs ``--corpus`` / ``--only`` / ``--count`` ask for, and why not where they
    name no program (the GPU and TPU harnesses: generated programs, the models of models.py, or both)."""
    corpora: list[tuple[str, list[dict[str, Any]]]] = []
    if a.corpus in ("generated", "all"):
        corpora.append(("generated", [{"seed": a.seed, "index": i} for i in chosen_indices(a)]))
    if a.corpus in ("models", "all"):
        names, why = chosen_models(a.only if a.corpus == "models" else None)
        if why:
            return [], why
        corpora.append(("models", [{"seed": 0, "index": k, "model": n} for k, n in enumerate(names)]))
    return corpora, ""


def status_lines(s: dict[str, Any], title: str, elapsed: float | None) -> list[str]:
    """A report's head: what ran, and every skip, error of ours, harness error and late XLA failure."""
    L = [f"== {title}: programs {s['programs']}  compared {s['compared']}  "
         f"skipped {sum(s['skipped'].values())}  tool errors {len(s['tool_errors'])}  "
         f"harness errors {len(s['harness_errors'])}" + (f"  ({elapsed:.0f} s)" if elapsed is not None else "")]
    for reason, n in s["skipped"].most_common(6):
        L.append(f"  skipped {n:4d}: {reason}")
    for r in s["tool_errors"][:5]:
        L.append(f"  tool error {r['id']} at {r.get('where', '?')}: {r.get('error', '')[:160]}")
    for r in s["harness_errors"][:3]:
        L.append(f"  harness error {r['id']}: {r['error'][:160]}")
    for err, n in s["late_xla_errors"].most_common(3):
        L.append(f"  compiled past layout assignment, then XLA failed (dumps compared) {n:4d}: {err}")
    return L


def write_results(results: Any, path: str) -> None:
    """Every per-program result as JSON at ``path``, and say where."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(f"\nper-program results: {path}")


def _task_id(t: dict[str, Any]) -> str:
    return f"models/{t['model']}" if t.get("model") else f"s{t['seed']}/{t['index']}"


# -- a small process pool with per-task timeouts ------------------------------------------

def _process_task(task: dict[str, Any]) -> dict[str, Any]:
    """One task of the pool: an XLA:CPU comparison, or an XLA:GPU / XLA:TPU one when it names a GPU / TPU."""
    if "tpu" in task:
        from tests.differential.tpu_run import process as tpu_process

        return tpu_process(**task)
    if "gpu" in task:
        from tests.differential.gpu_run import process as gpu_process

        return gpu_process(**task)
    from tests.differential.run import process as proc

    return proc(**task)


def _worker(conn: Any) -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(ROOT))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        conn.send(_process_task(task))


def run_parallel(tasks: list[dict[str, Any]], jobs: int, timeout: float,
                 progress: bool = True, isolate: bool = False) -> list[dict[str, Any]]:
    """Every task's result, in order, from ``jobs`` worker processes.

    With ``jobs`` 1 the tasks run in this process unless ``isolate`` asks for a
    worker (a compiler that may abort the process: XLA:TPU's).
    """
    if jobs <= 1 and not isolate:
        out = []
        for k, t in enumerate(tasks):
            out.append(_process_task(t))
            if progress:
                _progress(k + 1, len(tasks))
        return out
    ctx = mp.get_context("spawn")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    pending = list(enumerate(tasks))[::-1]
    results: dict[int, dict[str, Any]] = {}
    workers: list[dict[str, Any]] = []

    def start() -> dict[str, Any]:
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child,), daemon=True)
        p.start()
        child.close()
        return {"p": p, "conn": parent, "task": None, "since": 0.0}

    def assign(w: dict[str, Any]) -> None:
        if pending:
            k, t = pending.pop()
            w["task"], w["since"] = (k, t), time.monotonic()
            w["conn"].send(t)
        else:
            w["task"] = None

    for _ in range(min(max(jobs, 1), len(tasks))):
        w = start()
        workers.append(w)
        assign(w)
    while any(w["task"] is not None for w in workers):
        busy = {w["conn"]: w for w in workers if w["task"] is not None}
        for conn in wait(list(busy), timeout=1.0):
            w = busy[conn]
            k, t = w["task"]
            try:
                results[k] = conn.recv()
            except (EOFError, OSError):
                results[k] = {"seed": t["seed"], "index": t["index"], "id": _task_id(t),
                              "status": "skipped", "reason": "worker died (crash in XLA or our pass)"}
                w["p"].join(1)
                w.update(start())
            assign(w)
            if progress:
                _progress(len(results), len(tasks))
        now = time.monotonic()
        for w in workers:
            if w["task"] is not None and now - w["since"] > timeout:
                k, t = w["task"]
                w["p"].kill()  # a process this pool started
                w["p"].join(5)
                results[k] = {"seed": t["seed"], "index": t["index"], "id": _task_id(t),
                              "status": "skipped", "reason": f"timeout ({timeout:.0f} s)"}
                w.update(start())
                assign(w)
    for w in workers:
        try:
            w["conn"].send(None)
        except OSError:
            pass
        w["p"].join(5)
        if w["p"].is_alive():
            w["p"].kill()
    if progress and sys.stderr.isatty():
        sys.stderr.write("\n")
    return [results[k] for k in range(len(tasks))]


def _progress(done: int, total: int) -> None:
    if not sys.stderr.isatty():
        if done % 50 == 0 or done == total:
            sys.stderr.write(f"  {done}/{total} programs\n")
        return
    sys.stderr.write(f"\r  {done}/{total} programs")
    sys.stderr.flush()


# -- report ----------------------------------------------------------------------------------

def _cls(text: str) -> str:
    nums = [int(x) for x in text.strip("{}").split(",") if x.strip().isdigit()]
    if text in ("-", "?", ""):
        return "?"
    return "default" if nums == sorted(nums, reverse=True) else "non-default"


def group_key(d: dict[str, Any]) -> str:
    """Op kind and pattern, without the concrete layouts (those are in the examples)."""
    tag = ""
    if d["kind"] == "layout":
        return f"layout of {d['op']}: {d['pattern']}{tag}"
    src = d.get("src_layout", "?")
    pattern = "same layout (not a relayout)" if src == d["layout"] else f"{_cls(src)} -> {_cls(d['layout'])}"
    return f"{d['kind']} {d['op']}: {pattern}{tag}"


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in results if r["status"] == "ok"]
    s: dict[str, Any] = {
        "programs": len(results),
        "compared": len(ok),
        "skipped": Counter(r.get("reason", "") for r in results if r["status"] == "skipped"),
        "tool_errors": Counter(f"{r.get('where', '')}: {r.get('error', '')}" for r in results
                               if r["status"] == "tool-error"),
        "harness_errors": [r for r in results if r["status"] == "harness-error"],
        "jax_complained": sum(1 for r in ok if r.get("jax_error")),
        "generic": sum(1 for r in ok if r.get("generic")),
        "values": sum(r["values"] for r in ok),
        "agree": sum(r["agree"] for r in ok),
        "xla_named": sum(r["xla_named"] for r in ok),
        "xla_covered": sum(r.get("xla_covered", 0) for r in ok),
        "agreeing_programs": sum(1 for r in ok if r["agrees"]),
        "xla_copies": sum(r["xla_copies"] for r in ok),
        "our_copies": sum(r["our_copies"] for r in ok),
        "xla_bytes": sum(r["xla_copy_bytes"] for r in ok),
        "our_bytes": sum(r["our_copy_bytes"] for r in ok),
        "xla_edges": sum(r["xla_edges"] for r in ok),
        "our_edges": sum(r["our_edges"] for r in ok),
        "edges_matched": sum(r["edges_matched"] for r in ok),
        "more_copies": [r for r in ok if r["our_copies"] > r["xla_copies"]],
        "more_bytes": [r for r in ok if r["our_copy_bytes"] > r["xla_copy_bytes"]],
    }
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for r in ok:
        for d in r["diffs"]:
            groups[group_key(d)].append((r, d))
    for r in results:
        if r["status"] == "tool-error":
            groups[f"tool error at {r.get('where', '?')}: {r.get('error', '')[:90]}"].append((r, {}))
    s["groups"] = groups
    return s


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "n/a"



def unmatched_copies(results: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(program result, XLA copy) for every copy of XLA's that ours does not match, over the compared programs."""
    return [(r, c) for r in results if r["status"] == "ok"
            for c in r.get("xla_copy_info", []) if not c.get("matched", True)]


def unmatched_copy_lines(unmatched: list[tuple[dict[str, Any], dict[str, Any]]],
                         source: Any = None) -> list[str]:
    """The report's list of XLA copies we do not make, one line each.

    ``source(result, key)`` names the copied value (the GPU report adds its
    opcode); by default the key alone.
    """
    out = [f"every XLA copy we do not make ({len(unmatched)}; 'no relayout': the copy keeps the "
           "layout, one XLA could avoid):"]
    for r, c in unmatched:
        what = "no relayout" if c["src_layout"] == c["dst"] else f"relayout {c['src_layout']} -> {c['dst']}"
        src = source(r, c["src"]) if source else c["src"]
        out.append(f"  [{r['id']}] {what}, of {src} ({c.get('why', '?')}): {c['line'][:140]}")
    return out

def format_report(results: list[dict[str, Any]], show: int = 10, elapsed: float | None = None) -> str:
    s = summarize(results)
    L: list[str] = []
    L.append(f"programs: {s['programs']}  compared: {s['compared']}  "
             f"skipped: {sum(s['skipped'].values())}  tool errors: {sum(s['tool_errors'].values())}  "
             f"harness errors: {len(s['harness_errors'])}"
             + (f"  ({elapsed:.0f} s)" if elapsed is not None else ""))
    for reason, n in s["skipped"].most_common():
        L.append(f"  skipped {n:4d}: {reason}")
    for err, n in s["tool_errors"].most_common(5):
        L.append(f"  tool error {n:4d}: {err[:150]}")
    for r in s["harness_errors"][:3]:
        L.append(f"  harness error {r['id']}: {r['error'][:150]}")
    if s["jax_complained"]:
        L.append(f"  compiled, but JAX then refused the layouts XLA chose: {s['jax_complained']} "
                 "(dumps still compared)")
    if s["generic"]:
        L.append(f"  NOTE: {s['generic']} programs ran the generic rules (xla-cpu not implemented)")
    L.append(f"named rank>=2 values agreeing: {s['agree']}/{s['values']} = {_pct(s['agree'], s['values'])}"
             f"  (coverage: {s['xla_covered']}/{s['xla_named']} of XLA's named rank>=2 arrays)")
    L.append(f"programs agreeing fully: {s['agreeing_programs']}/{s['compared']} = "
             f"{_pct(s['agreeing_programs'], s['compared'])}")
    L.append(f"copies   ours {s['our_copies']:6d}  xla {s['xla_copies']:6d}   "
             f"(copy edges ours {s['our_edges']}, xla {s['xla_edges']}, matched {s['edges_matched']})")
    L.append(f"bytes    ours {s['our_bytes']:6d}  xla {s['xla_bytes']:6d}")
    unmatched = unmatched_copies(results)
    n_xla = sum(len(r.get("xla_copy_info", [])) for r in results if r["status"] == "ok")
    L.append(f"XLA copies matched by (source, layout): {n_xla - len(unmatched)}/{n_xla} = "
             f"{_pct(n_xla - len(unmatched), n_xla)}")
    for label, rs, field in (("copies", s["more_copies"], "copies"), ("bytes", s["more_bytes"], "copy_bytes")):
        ex = ", ".join(f"{r['id']} ({r['our_' + field]} vs {r['xla_' + field]})" for r in rs[:6])
        L.append(f"programs where ours has MORE {label} than XLA: {len(rs)}" + (f": {ex}" if rs else ""))
    L.append("")
    L.append(f"disagreement kinds (top {show}; count, programs, example):")
    groups = sorted(s["groups"].items(), key=lambda kv: -len(kv[1]))
    for key, items in groups[:show]:
        progs = len({r["id"] for r, _ in items})
        r0, d0 = items[0]
        ex = f"{r0['id']} {d0.get('name', '')}"
        if d0.get("kind") == "layout":
            ex += f" ours {d0['ours']} xla {d0['xla']}"
        elif d0:
            ex += f" {d0.get('src_layout', '?')}->{d0['layout']}"
        partial = sum(1 for r, _ in items if "partial-auto-results" in r.get("flags", []))
        note = f" [{partial} in programs with partly-AUTO results]" if partial else ""
        L.append(f"  {len(items):5d} {progs:4d}  {key}{note}   e.g. {ex}")
    if unmatched:
        L.append("")
        L.extend(unmatched_copy_lines(unmatched))
    L.append("")
    L.append(f"first {show} differences:")
    n = 0
    for r in results:
        if r["status"] != "ok":
            continue
        for d in r["diffs"]:
            if n >= show:
                break
            n += 1
            if d["kind"] == "layout":
                L.append(f"  [{r['id']}] {d['name']} ({d['op']}): ours {d['ours']}  xla {d['xla']}")
                L.append(f"      {d['line']}")
            else:
                L.append(f"  [{r['id']}] {d['kind']} {d['name']}: {d.get('src_layout', '?')} to {d['layout']}")
                L.append(f"      producer: {d['line']}")
                L.append(f"      consumer: {d['consumer_line']}")
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first program index")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per program")
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    ap.add_argument("--refresh", action="store_true", help="recompile even when dumps are cached")
    ap.add_argument("--target", default="xla-cpu")
    ap.add_argument("--json", help="write every per-program result here")
    ap.add_argument("--show", type=int, default=10)
    ap.add_argument("--only", help="comma-separated program indices (model names with --corpus models) to run")
    ap.add_argument("--corpus", choices=("generated", "models"), default="generated",
                    help="generated: the seeded generator (programs.py); models: programs built from "
                         "flax, haiku, equinox and optax (models.py; --count/--start/--seed do not apply)")
    a = ap.parse_args(argv)
    if a.corpus == "models":
        names, why = chosen_models(a.only)
        if why:
            print(f"error: {why}", file=sys.stderr)
            return 1
        tasks = [{"seed": 0, "index": k, "cache": a.cache, "target": a.target, "refresh": a.refresh,
                  "model": n} for k, n in enumerate(names)]
    else:
        tasks = [{"seed": a.seed, "index": i, "cache": a.cache, "target": a.target,
                  "refresh": a.refresh} for i in chosen_indices(a)]
    t0 = time.monotonic()
    results = run_parallel(tasks, a.jobs, a.timeout)
    elapsed = time.monotonic() - t0
    print(format_report(results, a.show, elapsed))
    last = "last_run_models.json" if a.corpus == "models" else f"last_run_s{a.seed}.json"
    write_results(results, a.json or os.path.join(a.cache, last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
