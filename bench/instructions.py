"""Count the machine instructions the command executes, phase by phase (callgrind).

    python bench/instructions.py [--layers 64] [--input FILE] [--code DIR] [--no-command] [--explain]

Wall time on a shared 2-core machine varies by 20-30% between runs of the
same code, which hides the few-percent steps most speed-ups are made of.
Valgrind's callgrind counts instructions instead: the same code, input and
environment give the same count whatever else the machine is doing (hash
randomisation is pinned).  Use it to compare two versions of the code
(``--code`` points at another checkout); use ``bench/run.py`` for the
seconds and the ratios against XLA.

Six processes run the same script under callgrind, stopping after start-up
(the interpreter and the command's imports), parse, import, propagate,
rewrite and print; the differences are the phases' counts, and the first
child's count is start-up's.  A seventh runs the whole console command
(``stablehlo-layout assign --target xla-cpu FILE``, stdout to /dev/null) as a
cross-check of the sum (it also verifies its output and enables MLIR's
threads, so it counts a little more); with ``--explain`` an eighth runs
``stablehlo-layout explain --target xla-cpu FILE`` (with its fixes), whose
count against the command's is issue 16's explain/assign ratio without the
noise of wall time.  The phases are ``bench/phases.py``'s,
taken from the measured checkout.  The default input is the XLA dump
``bench/run.py`` cached for ``--layers``.  Takes about two minutes at L=64
on 2 cores (callgrind runs ~50x slower than native).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
STEPS = ("startup", "parse", "import", "propagate", "rewrite", "print")
PASS = ("import", "propagate", "rewrite")

# Every child starts so: the checkout CODE (sys.argv[CODE_ARG]) is what runs.
_CODE_FIRST = """
import os, site, sys
# The editable install's import hook would send stablehlo_layout to its own
# checkout whatever sys.path says: drop it, so that --code is what runs.  The
# compiled core is the installed one (built from this venv's checkout's cpp/).
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable_skbc_")]
sys.path[:0] = [sys.argv[CODE_ARG], os.path.join(sys.argv[CODE_ARG], "bench")]
import stablehlo_layout
stablehlo_layout.__path__.extend(
    d for d in (os.path.join(p, "stablehlo_layout") for p in site.getsitepackages()) if os.path.isdir(d))
"""

# Run in each child: start up, load, then the command's phases up to STOP, then leave at once.
_CHILD = _CODE_FIRST.replace("CODE_ARG", "3") + """
import phases
phases.start()
path, stop = sys.argv[1], sys.argv[2]
order = ("parse", "import", "propagate", "rewrite", "print")
if stop != "startup":
    with open(path, "rb") as f:
        s = phases.parse(f.read(), path, single_threaded=True)
    with phases.quiet_gc():
        for step in ("import", "propagate", "rewrite"):
            if order.index(step) <= order.index(stop):
                phases.STEPS[step](s)
    if stop == "print":
        phases.print_(s)
        with open(os.devnull, "wb") as out:
            out.write(s.text)
os._exit(0)
"""

# The whole console command, as its script runs it (``cli.run``): argv is CODE, then the command's.
_COMMAND = _CODE_FIRST.replace("CODE_ARG", "1") + """
try:
    from stablehlo_layout.frontends.cli import run
except ModuleNotFoundError:  # a checkout from before the package's stage folders
    from stablehlo_layout.cli import run
sys.argv = ["stablehlo-layout", *sys.argv[2:]]
run()
"""

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def count(path: str, stop: str, code: str) -> int:
    """Instructions executed by one child stopping after ``stop`` (``command``: the whole console command)."""
    # No spinning worker threads (OpenBLAS, loaded with numpy by the bindings).
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
    # Fixed addresses too: MLIR objects hash by address, and dict probing
    # follows the hashes.
    no_aslr = ["setarch", os.uname().machine, "--addr-no-randomize"] if shutil.which("setarch") else []
    if stop in ("command", "explain"):
        verb = "assign" if stop == "command" else "explain"
        child = [sys.executable, "-c", _COMMAND, code, verb, "--target", "xla-cpu", path]
    else:
        child = [sys.executable, "-c", _CHILD, path, stop, code]
    proc = subprocess.run(
        [*no_aslr, "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *child],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    m = _COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or m is None:
        sys.stderr.write(proc.stderr[-3000:])
        raise SystemExit(f"instructions: the run stopping after {stop} failed (exit {proc.returncode})")
    return int(m.group(1))


def default_input(layers: int) -> str:
    sys.path.insert(0, BENCH)
    from run import cache_dir  # the same cache bench/run.py fills

    path = os.path.join(cache_dir(layers), "xla_before_layout-assignment.mlirbc")
    if not os.path.exists(path):
        raise SystemExit(f"instructions: {path} is missing; build it with "
                         f"`python bench/run.py --layers {layers} --quick` first")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=64, help="which cached XLA dump to use (default 64)")
    p.add_argument("--input", help="any module the pass accepts, instead of the cached dump")
    p.add_argument("--code", default=ROOT, help="the checkout whose stablehlo_layout/ (and bench/phases.py) is measured")
    p.add_argument("--no-command", action="store_true", help="skip the whole-command cross-check child")
    p.add_argument("--explain", action="store_true",
                   help="also count the whole `stablehlo-layout explain --target xla-cpu` command (with its fixes)")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions: valgrind is not installed (Debian: apt-get install valgrind)")
    path = os.path.abspath(args.input) if args.input else default_input(args.layers)
    code = os.path.abspath(args.code)
    if not os.path.isdir(os.path.join(code, "stablehlo_layout")):
        raise SystemExit(f"instructions: {code} holds no stablehlo_layout/")
    if not os.path.isfile(os.path.join(code, "bench", "phases.py")):
        raise SystemExit(f"instructions: {code} has no bench/phases.py (the phases this script runs)")
    # Byte-compile first, or whichever child starts first pays for it.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(code, "stablehlo_layout")], check=True)
    children = STEPS + (() if args.no_command else ("command",)) + (("explain",) if args.explain else ())
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        totals = dict(zip(children, pool.map(lambda s: count(path, s, code), children)))
    phases = {"startup": totals["startup"]}
    phases.update({b: totals[b] - totals[a] for a, b in zip(STEPS, STEPS[1:])})
    print(f"input: {path}")
    print(f"code:  {code}")
    for name, n in phases.items():
        print(f"{name:<10} {n / 1e6:10.1f} M instructions")
    print(f"{'pass':<10} {sum(phases[p] for p in PASS) / 1e6:10.1f} M instructions (import + propagate + rewrite)")
    print(f"{'all':<10} {totals['print'] / 1e6:10.1f} M instructions (start-up to print)")
    if "command" in totals:
        print(f"{'command':<10} {totals['command'] / 1e6:10.1f} M instructions "
              "(the whole `stablehlo-layout assign --target xla-cpu` process: verification and MLIR threads too)")
    if "explain" in totals:
        print(f"{'explain':<10} {totals['explain'] / 1e6:10.1f} M instructions "
              "(the whole `stablehlo-layout explain --target xla-cpu` process, with its fixes)"
              + (f": {totals['explain'] / totals['command']:.2f}x the command" if "command" in totals else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
