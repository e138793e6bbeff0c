"""Seconds of the pass's phases for two checkouts, run in turns (an A/B in wall time).

    python bench/alternate.py --code OTHER_CHECKOUT [--layers 256] [--input FILE] [--runs 3] [--repeat 3]

On this shared machine the same code's wall time moves by 20-50% from one
minute to the next, so two versions measured minutes apart say little.
This runs the import, propagate and rewrite phases (``bench/phases.py``, as
the command runs them, the collector held off) in fresh processes, one
checkout then the other, ``--runs`` times, each process taking the best of
``--repeat`` rounds per phase on a freshly parsed module; both use this
venv's installed core.  It prints one line per process, so the spread of
each side shows beside the difference.  ``bench/instructions.py`` counts
instructions instead, which repeat exactly but miss what costs cache
misses rather than instructions.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

from instructions import _CODE_FIRST, default_input  # noqa: E402  (the same checkout switch)

_CHILD = _CODE_FIRST.replace("CODE_ARG", "1") + """
import time
import phases
phases.start()
path, repeat = sys.argv[2], int(sys.argv[3])
with open(path, "rb") as f:
    data = f.read()
best = {}
for _ in range(repeat):
    s = phases.parse(data, path)
    with phases.quiet_gc():
        for step in phases.PASS_PHASES:
            t = time.perf_counter()
            phases.STEPS[step](s)
            best[step] = min(best.get(step, float("inf")), (time.perf_counter() - t) * 1000)
    del s
print(" ".join(f"{step}={best[step]:.0f}" for step in phases.PASS_PHASES), f"pass={sum(best.values()):.0f}")
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", required=True, help="the other checkout, measured in turns with this one")
    p.add_argument("--layers", type=int, default=256, help="which cached XLA dump to use (default 256)")
    p.add_argument("--input", help="any module the pass accepts, instead of the cached dump")
    p.add_argument("--runs", type=int, default=3, help="processes per checkout (default 3)")
    p.add_argument("--repeat", type=int, default=3, help="rounds per process, best kept per phase (default 3)")
    args = p.parse_args(argv)
    path = args.input or default_input(args.layers)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    print(f"input: {path}")
    for run in range(args.runs):
        for label, code in (("this", ROOT), ("other", os.path.abspath(args.code))):
            proc = subprocess.run([sys.executable, "-c", _CHILD, code, path, str(args.repeat)],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr[-3000:])
                raise SystemExit(f"alternate: the {label} checkout's run failed (exit {proc.returncode})")
            print(f"run {run + 1} {label:5} {proc.stdout.strip()}  ({code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
