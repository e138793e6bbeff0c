"""Count the machine instructions our pass executes, phase by phase (callgrind).

    python bench/instructions.py [--layers 64] [--input FILE] [--code DIR]

Wall time on a shared 2-core machine varies by 20-30% between runs of the
same code, which hides the few-percent steps most speed-ups are made of.
Valgrind's callgrind counts instructions instead: the same code, input and
environment give the same count whatever else the machine is doing (hash
randomisation is pinned).  Use it to compare two versions of the code
(``--code`` points at another checkout); use ``bench/run.py`` for the
seconds and the ratios against XLA.

Four processes run the same script under callgrind, stopping after parse,
import, propagate and rewrite; the differences are the phases' counts.
The default input is the XLA dump ``bench/run.py`` cached for ``--layers``.
Takes about a minute at L=64 (callgrind runs ~50x slower than native).
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
STEPS = ("parse", "import", "propagate", "rewrite")

# Run in each child: load, then the pass's phases up to STOP, then leave at once.
_CHILD = """
import os, site, sys
# The editable install's import hook would send stablehlo_layout to its own
# checkout whatever sys.path says: drop it, so that --code is what runs.  The
# compiled core is the installed one (built from this venv's checkout's cpp/).
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable_skbc_")]
sys.path.insert(0, sys.argv[3])
import stablehlo_layout
stablehlo_layout.__path__.extend(
    d for d in (os.path.join(p, "stablehlo_layout") for p in site.getsitepackages()) if os.path.isdir(d))
from stablehlo_layout import mlir
from stablehlo_layout.assignment import quiet_gc
from stablehlo_layout.importer import import_module
from stablehlo_layout.propagation import assign_layouts
from stablehlo_layout.rewrite import rewrite
from stablehlo_layout.targets import XlaCpuTarget
path, stop = sys.argv[1], sys.argv[2]
ctx = mlir.make_context()
ctx.enable_multithreading(False)  # threads make the counts vary
with open(path, "rb") as f:
    module = mlir.load(f.read(), path, ctx)
with quiet_gc():
    if stop != "parse":
        graph, handles = import_module(module, inline_calls=True)
    if stop in ("propagate", "rewrite"):
        assignment = assign_layouts(graph, XlaCpuTarget())
    if stop == "rewrite":
        rewrite(module, assignment, handles)
os._exit(0)
"""

_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def count(path: str, stop: str, code: str) -> int:
    """Instructions executed by one child stopping after ``stop``."""
    # No spinning worker threads (OpenBLAS, loaded with numpy by the bindings).
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
    # Fixed addresses too: MLIR objects hash by address, and dict probing
    # follows the hashes.
    no_aslr = ["setarch", os.uname().machine, "--addr-no-randomize"] if shutil.which("setarch") else []
    proc = subprocess.run(
        [*no_aslr, "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         sys.executable, "-c", _CHILD, path, stop, code],
        capture_output=True, text=True, env=env)
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
    p.add_argument("--code", default=ROOT, help="the checkout whose stablehlo_layout/ is measured")
    args = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions: valgrind is not installed (Debian: apt-get install valgrind)")
    path = os.path.abspath(args.input) if args.input else default_input(args.layers)
    code = os.path.abspath(args.code)
    if not os.path.isdir(os.path.join(code, "stablehlo_layout")):
        raise SystemExit(f"instructions: {code} holds no stablehlo_layout/")
    # Byte-compile first, or whichever child starts first pays for it.
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(code, "stablehlo_layout")], check=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        totals = dict(zip(STEPS, pool.map(lambda s: count(path, s, code), STEPS)))
    phases = {b: totals[b] - totals[a] for a, b in zip(STEPS, STEPS[1:])}
    print(f"input: {path}")
    print(f"code:  {code}")
    for name, n in phases.items():
        print(f"{name:<10} {n / 1e6:10.1f} M instructions")
    print(f"{'pass':<10} {sum(phases.values()) / 1e6:10.1f} M instructions (import + propagate + rewrite)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
