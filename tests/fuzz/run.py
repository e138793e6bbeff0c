"""Run the layout-pass fuzzer over many seeded programs.

    python -m tests.fuzz.run --count 5000 --seed 0 [--jobs 2] [--execute-every 2]
                             [--targets generic,xla-cpu] [--timeout 120] [-v]

Program ``i`` is ``generator.generate(seed + i)``; every property of
``properties.check_program`` is checked for each target.  The CPU execution
property (compile original and rewritten with XLA:CPU, compare bit for bit) is
the expensive one, so it runs for every ``--execute-every``-th program only
(default 2: every other program); the original is compiled once per program and
rewritten texts that differ only in annotations XLA ignores once, with
XLA:CPU's backend optimisation level 0 (``XLA_FLAGS``, unless already set).

Failures are printed as they happen, with the seed to reproduce them
(``python -m tests.fuzz.generator SEED`` prints the program,
``python -m tests.fuzz.minimize SEED --prop P --target T`` shrinks it).  The
last lines are a tally of failures by property and target and, last of all,
exactly ``N passed, M failed``.

Worker processes take seeds from a shared queue; a program that hangs past
``--timeout`` seconds or kills its worker (e.g. a crash inside XLA) is counted
as failed and a new worker takes over.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import queue
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Both modules of a comparison are compiled alike, so the fastest XLA:CPU
# backend settings lose nothing and save ~25% of the compile time.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


def check_seed(seed: int, targets: tuple[str, ...], execute: bool, timeout: int) -> dict:
    from .generator import generate
    from .properties import Cache, Failure, check_program

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    t0 = time.time()
    try:
        prog = generate(seed)
        fails = check_program(prog, targets, execute=execute, cache=Cache())
    except _Timeout:
        fails = [Failure("timeout", "-", f"no answer within {timeout} s")]
    except Exception as e:  # noqa: BLE001 - a harness error is a failure too
        fails = [Failure("harness", "-", f"{type(e).__name__}: {e}")]
    finally:
        signal.alarm(0)
    return {"seed": seed, "fails": [(f.prop, f.target, f.message) for f in fails],
            "executed": execute, "secs": time.time() - t0}


def _worker(tasks: mp.Queue, targets, every: int, base: int, timeout: int, out: mp.Queue) -> None:
    while True:
        s = tasks.get()
        if s is None:
            break
        out.put(("start", (os.getpid(), s)))
        out.put(("done", check_seed(s, targets, every > 0 and (s - base) % every == 0, timeout)))
    out.put(("exit", os.getpid()))


def run(count: int, seed: int, jobs: int, targets: tuple[str, ...], every: int, timeout: int,
        verbose: bool = False, stream=sys.stdout) -> tuple[int, int, list[dict]]:
    seeds = list(range(seed, seed + count))
    every = max(0, every)
    ctx = mp.get_context("fork")
    tasks: mp.Queue = ctx.Queue()
    out: mp.Queue = ctx.Queue()
    for s in seeds:
        tasks.put(s)
    procs: dict[int, mp.Process] = {}
    current: dict[int, int] = {}  # worker pid -> seed it is working on

    def spawn() -> None:
        p = ctx.Process(target=_worker, args=(tasks, targets, every, seed, timeout, out), daemon=True)
        p.start()
        procs[p.pid] = p

    for _ in range(min(jobs, len(seeds))):
        spawn()
    results: list[dict] = []
    done: set[int] = set()
    passed = failed = 0
    t0 = time.time()
    last_check = time.time()
    tally: collections.Counter = collections.Counter()

    def record(r: dict) -> None:
        nonlocal passed, failed
        if r["seed"] in done:
            return
        done.add(r["seed"])
        results.append(r)
        if r["fails"]:
            failed += 1
            for key in {(prop, target) for prop, target, _ in r["fails"]}:
                tally[key] += 1
            print(f"FAIL seed {r['seed']}:", file=stream)
            for prop, target, msg in r["fails"][:6]:
                print(f"  [{target}] {prop}: {msg}", file=stream)
            if len(r["fails"]) > 6:
                print(f"  ... {len(r['fails']) - 6} more", file=stream)
        else:
            passed += 1
        if verbose and len(done) % 100 == 0:
            print(f"-- {len(done)}/{len(seeds)} programs, {time.time() - t0:.0f} s", file=stream)
        stream.flush()

    while len(done) < len(seeds):
        try:
            kind, payload = out.get(timeout=1)
        except queue.Empty:
            kind, payload = None, None
        if kind == "start":
            current[payload[0]] = payload[1]
        elif kind == "done":
            record(payload)
        if time.time() - last_check >= 1 or kind is None:
            last_check = time.time()
            # a worker that died (e.g. a crash inside XLA) failed on its current seed
            for pid, p in list(procs.items()):
                if p.is_alive() or p.exitcode == 0:
                    continue
                del procs[pid]
                s = current.pop(pid, None)
                if s is not None and s not in done:
                    record({"seed": s, "fails": [("crash", "-", f"worker died (exit code {p.exitcode})")],
                            "executed": False, "secs": 0.0})
                if len(done) < len(seeds):
                    spawn()
    for _ in procs:
        tasks.put(None)
    for p in procs.values():
        p.join(timeout=5)
    executed = sum(1 for r in results if r["executed"])
    print(f"-- {len(seeds)} programs (seeds {seed}..{seed + count - 1}), targets {', '.join(targets)}, "
          f"{jobs} job(s), {time.time() - t0:.0f} s", file=stream)
    how = ("never" if every == 0 else "all programs" if every == 1
           else "every other program" if every == 2 else f"every {every}th program")
    print(f"-- CPU execution property checked on {executed} programs ({how}, to keep the run fast); "
          f"per program the original is compiled once and rewritten texts that differ only in "
          f"what XLA ignores once", file=stream)
    if tally:
        print("-- failing programs by property and target:", file=stream)
        for (prop, target), n in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"--   {n:5d}  {prop} [{target}]", file=stream)
    print(f"{passed} passed, {failed} failed", file=stream)
    return passed, failed, results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--targets", default="generic,xla-cpu")
    ap.add_argument("--execute-every", type=int, default=2,
                    help="check CPU execution for every K-th program (1 = all, 0 = never)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per program")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    every = a.execute_every
    targets = tuple(t for t in a.targets.split(",") if t)
    _, failed, _ = run(a.count, a.seed, max(1, a.jobs), targets, every, a.timeout, a.verbose)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
