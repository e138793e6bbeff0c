"""Differential test of sharded programs: XLA:CPU, XLA:GPU or XLA:TPU on 8 devices.

    python -m tests.differential.sharded_run --backend cpu|gpu|tpu [--count 90] [--seed 0]
        [--start 0] [--only 1,2] [--jobs 1] [--cache DIR] [--refresh] [--timeout 600]
        [--json OUT] [--report OUT] [--show 12] [--save-slice DIR]

Generates the sharded programs of ``sharded_programs.py`` (data / tensor /
sequence parallel, FSDP, all-to-all attention, a ring matmul, scanned
layers; 1-D and 2-D meshes; ``jax.jit`` with ``NamedSharding`` and
``shard_map`` with explicit collectives), compiles them with XLA for 8
devices in a child process per batch (``sharded_oracle.py``: the devices
must exist before jax starts), keeps the per-device module's dumps under
``bench/cache/sharded/<hash>/<backend>/s<seed>/<index>/`` and compares our
pass on XLA's ``before_layout-assignment`` module with XLA's ``after`` one
(``compare.py``), as the single-device harnesses do.  ``--save-slice`` copies
the compared dumps into ``DIR/<backend>/<kind>-<index>/`` (the fast tier's
committed slice).  Exit status 0 whatever the agreement (a measuring tool);
2 when the backend's compiler is missing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from tests.support import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.path.join(ROOT, "bench", "cache", "sharded")
BACKEND_NAMES = {"cpu": "XLA:CPU", "gpu": "XLA:GPU h100", "tpu": "XLA:TPU v5e"}


def corpus_hash() -> str:
    """Changes whenever the programs or the way they are compiled change."""
    h = hashlib.sha1()
    for name in ("sharded_programs.py", "sharded_oracle.py"):
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    try:
        import importlib.metadata as md

        h.update(md.version("jaxlib").encode())
    except Exception:
        pass
    return h.hexdigest()[:10]


def backend_dir(cache: str, backend: str, seed: int) -> str:
    return os.path.join(cache, corpus_hash(), backend, f"s{seed}")


def compile_missing(backend: str, seed: int, indices: list[int], folder: str, jobs: int, timeout: float,
                    refresh: bool) -> str:
    """Compile every program of ``indices`` without cached dumps, in ``jobs`` children; "" or why none could."""
    from .sharded_oracle import child_env

    todo = [i for i in indices if refresh or not os.path.exists(os.path.join(folder, f"{i:04d}", "meta.json"))]
    if not todo:
        return ""
    batches = [todo[k::max(1, jobs)] for k in range(max(1, jobs))]
    procs = []
    for b in batches:
        if not b:
            continue
        cmd = [sys.executable, "-m", "tests.differential.sharded_oracle", "--backend", backend, "--seed", str(seed),
               "--indices", ",".join(map(str, b)), "--cache", folder]
        procs.append(subprocess.Popen(cmd, env={**child_env(backend), "PYTHONPATH": ROOT}, cwd=ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    why = ""
    for p in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            why = why or f"a compile child ran past {timeout:.0f} s"
            continue
        if p.returncode != 0:
            said = [ln for ln in err.splitlines() if ln.startswith("sharded_oracle:")] or err.strip().splitlines()
            why = why or f"a compile child failed ({p.returncode}): {said[-1][:300] if said else 'no message'}"
    return why


def compare_program(backend: str, seed: int, index: int, folder: str) -> dict[str, Any]:
    """One program's comparison (its dumps compiled already); never raises."""
    from .oracle import load_cached

    base: dict[str, Any] = {"seed": seed, "index": index, "id": f"s{seed}/{index}", "backend": backend}
    d = os.path.join(folder, f"{index:04d}")
    res = load_cached(d)
    if res is None:
        return {**base, "status": "skipped", "reason": "not compiled (the compile child died or timed out)"}
    base.update(program=res.program, jax_error=res.jax_error, oracle_seconds=res.seconds)
    if res.status != "ok":
        return {**base, "status": "skipped", "reason": res.reason}
    return {**base, **compare_backend(backend, res.before, res.after), "dir": d}


def compare_backend(backend: str, before: str, after: str) -> dict[str, Any]:
    """Our pass on ``before`` against XLA's ``after``, for ``backend``'s target."""
    import traceback

    from .compare import compare_dumps
    from .sharded_oracle import GPU, TPU_TOPOLOGY

    try:
        if backend == "cpu":
            return compare_dumps(before, after, target="xla-cpu")
        if backend == "gpu":
            return compare_dumps(before, after, target="xla-gpu", gpu=GPU, unique_keys=True)
        return compare_dumps(before, after, target="xla-tpu", tpu=TPU_TOPOLOGY.split(":")[0], unique_keys=True)
    except Exception as e:
        return {"status": "harness-error", "error": f"{type(e).__name__}: {e}"[:300],
                "traceback": traceback.format_exc()[-1500:]}


def same_bytes_lines(results: list[dict[str, Any]]) -> list[str]:
    """Of XLA's copies we do not match, those one of ours makes from the same value into the same bytes.

    Such a pair differs only in where a size-1 dimension sits in the
    target layout (``compare.physically_equal``): the same data movement.
    They stay unmatched in the figures above; this line says how many.
    """
    from .compare import physically_equal
    from .oracle import parse_hlo, shape_at

    n = same = 0
    for r in results:
        if r["status"] != "ok":
            continue
        missing = [c for c in r.get("xla_copy_info", []) if not c.get("matched", True)]
        if not missing:
            continue
        with open(os.path.join(r["dir"], "after.txt")) as f:
            after = parse_hlo(f.read())
        ours = [c for c in r.get("our_copy_info", []) if not c["in_xla"]]
        for c in missing:
            n += 1
            ins = after.instrs.get(c["src"].split("{")[0])
            shape = shape_at(ins.shape, ()) if ins is not None else None
            dims = getattr(shape, "dims", None)
            if dims is None:
                continue
            want = _layout(c["dst"])
            if any(o["src"] == c["src"] and physically_equal(_layout(o["dst"]), want, dims) for o in ours):
                same += 1
    if not n:
        return []
    return [f"of the {n} XLA copies we do not match, {same} are made by one of ours from the same value into "
            "the same bytes (the target layouts differ only in where a size-1 dimension sits)"]


def _layout(text: str) -> tuple[int, ...] | None:
    body = text.strip("{}").split(":")[0]
    return tuple(int(x) for x in body.split(",") if x.strip()) if text not in ("-", "") else None


def kind_lines(results: list[dict[str, Any]]) -> list[str]:
    """Agreement per program kind."""
    from collections import defaultdict

    by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0])
    for r in results:
        if r["status"] != "ok":
            continue
        t = by[r["program"].get("kind", "?")]
        t[0] += 1
        t[1] += r["values"]
        t[2] += r["agree"]
        t[3] += r["nontrivial"]
        t[4] += r["nontrivial_agree"]
        t[5] += r["xla_copies"]
        t[6] += r["xla_copies_matched"]
    out = ["per kind: programs  values agreeing  non-trivial agreeing  XLA copies matched"]
    for k, (n, v, a, nt, nta, xc, xm) in sorted(by.items()):
        out.append(f"  {k:22s} {n:3d}  {a:5d}/{v:<5d} {nta:5d}/{nt:<5d} {xm:4d}/{xc:<4d}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("cpu", "gpu", "tpu"), default="cpu")
    ap.add_argument("--count", type=int, default=90)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--only", help="comma-separated program indices")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    ap.add_argument("--refresh", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds for each compile child")
    ap.add_argument("--json")
    ap.add_argument("--report")
    ap.add_argument("--show", type=int, default=12)
    ap.add_argument("--save-slice", help="copy the compared dumps to DIR/<backend>/<kind>-<index>/")
    a = ap.parse_args(argv)
    indices = [int(x) for x in a.only.split(",")] if a.only else list(range(a.start, a.start + a.count))
    folder = backend_dir(a.cache, a.backend, a.seed)
    start = time.perf_counter()
    why = compile_missing(a.backend, a.seed, indices, folder, a.jobs, a.timeout, a.refresh)
    if why and not any(os.path.exists(os.path.join(folder, f"{i:04d}", "meta.json")) for i in indices):
        print(f"sharded_run: {BACKEND_NAMES[a.backend]}: {why}", file=sys.stderr)
        return 2
    results = [compare_program(a.backend, a.seed, i, folder) for i in indices]
    from .gpu_run import format_report

    text = format_report(results, BACKEND_NAMES[a.backend], a.show, time.perf_counter() - start,
                         title=f"sharded, {BACKEND_NAMES[a.backend]}, 8 devices, seed {a.seed}")
    text = text + "\n\n" + "\n".join(same_bytes_lines(results) + kind_lines(results))
    if why:
        text = f"note: {why}\n" + text
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text + "\n")
    if a.json:
        from .run import write_results

        write_results(results, a.json)
    if a.save_slice:
        for r in results:
            if r["status"] == "ok":
                dst = os.path.join(a.save_slice, a.backend, f"{r['program']['kind']}-{r['index']}")
                os.makedirs(dst, exist_ok=True)
                for name in ("before.txt", "after.txt", "meta.json"):
                    shutil.copyfile(os.path.join(r["dir"], name), os.path.join(dst, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
