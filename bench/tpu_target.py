"""What the xla-tpu target costs beside xla-cpu, on the same module in the same run.

    python bench/tpu_target.py [--input DUMP] [--rounds 5]

XLA:TPU's rules (tiles, the order that pads least, convolution and dot
layouts) must cost no more per instruction than XLA:CPU's.  This lays out
one module (by default the 256-layer transformer gradient's XLA:CPU dump
that ``bench/run.py`` caches) with each target in turns, ``--rounds`` times,
in this process with the collector held off as the command does, and keeps
each phase's best: propagate (the target's demands and the worklist) and
rewrite (on TPU every ``xla_shape`` carries its tiles).  It prints the
microseconds per instruction of each and the TPU/CPU ratio; the turns share
the machine's noise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import phases  # noqa: E402
from instructions import default_input  # noqa: E402

TARGETS = ("xla-cpu", "xla-tpu")


def one_round(data: bytes, path: str, target: str) -> tuple[float, float, int]:
    s = phases.parse(data, path)
    with phases.quiet_gc():
        phases.import_(s)
        t0 = time.perf_counter()
        phases.propagate(s, target)
        t1 = time.perf_counter()
        phases.rewrite(s)
        t2 = time.perf_counter()
    return t1 - t0, t2 - t1, len(s.graph.instrs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", default=None, help="an HLO dump or StableHLO module (default: the cached L=256 dump)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--layers", type=int, default=256, help="the cached dump of bench/run.py to use (default: 256)")
    a = p.parse_args(argv)
    path = a.input or default_input(a.layers)
    with open(path, "rb") as f:
        data = f.read()
    phases.start()
    best: dict[str, list[float]] = {t: [float("inf"), float("inf")] for t in TARGETS}
    n = 0
    for _ in range(a.rounds):
        for t in TARGETS:
            prop, rew, n = one_round(data, path, t)
            best[t] = [min(best[t][0], prop), min(best[t][1], rew)]
    print(f"{os.path.relpath(path)}: {n} instructions, best of {a.rounds} rounds per target")
    for k, phase in enumerate(("propagate", "rewrite")):
        cpu, tpu = best["xla-cpu"][k], best["xla-tpu"][k]
        print(f"  {phase:9s}  xla-cpu {1e6 * cpu / n:6.2f} us/instr  xla-tpu {1e6 * tpu / n:6.2f} us/instr  "
              f"tpu/cpu {tpu / cpu:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
