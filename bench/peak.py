"""Run the console command (or bench/baseline.py) and record its own peak RSS.

    python bench/peak.py OUT.json assign --target xla-cpu FILE     # as `stablehlo-layout assign ...`
    python bench/peak.py OUT.json --baseline FILE                  # as `python bench/baseline.py FILE`

Why not the parent's ``wait4`` ``ru_maxrss``: Linux carries the RSS high-water
mark of the memory a child replaced at ``exec`` into its ``ru_maxrss``, and a
child spawned by the benchmark starts as a copy of (or, with vfork, inside)
the benchmark's own large address space -- every child then reports at least
the parent's size.  ``VmHWM`` of ``/proc/self/status`` belongs to the address
space ``exec`` made, so it is read here, in the process that ran the
command, right before it leaves.  The command runs as its console script runs
it (``cli.run``, which ends in ``os._exit``); the wrapper only intercepts that
``os._exit`` to write ``{"vmhwm_kb": N, "exit": CODE}`` first.
"""

from __future__ import annotations

import json
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))


def vmhwm_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise SystemExit("peak: /proc/self/status has no VmHWM (Linux only)")


def main() -> None:
    out, args = sys.argv[1], sys.argv[2:]
    leave = os._exit

    def report_and_leave(code: int) -> None:
        with open(out, "w") as f:
            json.dump({"vmhwm_kb": vmhwm_kb(), "exit": code}, f)
        leave(code)

    os._exit = report_and_leave  # both cli.run and baseline.py leave through os._exit
    if args[:1] == ["--baseline"]:
        sys.path.insert(0, BENCH)
        import baseline

        code = baseline.main(args[1:])
        sys.stdout.flush()
        os._exit(code)
    from stablehlo_layout.frontends.cli import run

    sys.argv = ["stablehlo-layout", *args]
    run()


if __name__ == "__main__":
    main()
