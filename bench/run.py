"""Benchmark our layout assignment against XLA's on the `bench/workload.py` stack.

    python bench/run.py [--layers 64,256,1024] [--repeat 3] [--quick]

For each L (layers of the attention + MLP stack, see workload.py):

1. generate the workload (jax.export bytecode), cached under bench/cache/;
2. compile it with XLA:CPU in a subprocess with pass-pipeline logging and dumps,
   read XLA's "HLO pass: layout-assignment time" line and keep the
   ``*before_layout-assignment.txt`` dump (cached);
3. convert that dump to StableHLO bytecode once (XLA's converter, not timed);
4. time our pass in-process on that bytecode, phase by phase (best of --repeat),
   and measure its memory in fresh subprocesses;
5. time the whole ``stablehlo-layout assign --target xla-cpu`` command and its
   peak RSS, beside ``bench/baseline.py`` (parse + walk + print only) on the same
   file, and ``stablehlo-layout explain`` (with its fixes) on it;
6. time our pass on the raw jax.export module too;
7. print the tables and the growth exponent of our time.

Nothing under stablehlo_layout/ or passes/ is touched; generation, compilation
and conversion run in subprocesses so the timing process only holds our code.
"""

from __future__ import annotations

import argparse
import gc
import glob
import hashlib
import importlib.metadata
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
CACHE = os.path.join(BENCH, "cache")
sys.path.insert(0, BENCH)
from phases import PASS_PHASES, PHASES  # noqa: E402  (bench/phases.py: the engine's entry points)
XLA_ENV = {"TF_CPP_MIN_LOG_LEVEL": "0", "TF_CPP_VMODULE": "hlo_pass_pipeline=2"}

# Issue 16's goals: the pass <= 0.33x XLA's pass, the whole command <= 0.75x,
# the command's peak RSS <= 1.5x parse + walk + print, explain with fixes <= 2x assign.
TARGET_PASS_RATIO = 0.33
TARGET_COMMAND_RATIO = 0.75
TARGET_MEMORY_RATIO = 3.0
TARGET_RSS_RATIO = 1.5
TARGET_EXPLAIN_RATIO = 2.0
TARGET_EXPONENT = 1.05


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Cache


def cache_dir(layers: int) -> str:
    """bench/cache/L<L>-jax<version>-w<hash of workload.py>: a workload change invalidates it."""
    with open(os.path.join(BENCH, "workload.py"), "rb") as f:
        workload = hashlib.sha256(f.read()).hexdigest()[:8]
    jax_version = importlib.metadata.version("jax")
    d = os.path.join(CACHE, f"L{layers}-jax{jax_version}-w{workload}")
    os.makedirs(d, exist_ok=True)
    return d


def engine_hash() -> str:
    """A hash of the engine's sources (stablehlo_layout/, passes/): the code being measured."""
    h = hashlib.sha256()
    for pattern in ("stablehlo_layout/**/*.py", "passes/**/*.py"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            h.update(os.path.relpath(path, ROOT).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:12]


def _worker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run this file as a worker subprocess (`python run.py _worker ...`)."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, full_env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, os.path.abspath(__file__), "_worker", *args],
                          env=full_env, capture_output=True, text=True)


def _checked(proc: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"bench: {what} failed (exit {proc.returncode})")
    return proc


# --------------------------------------------------------------------------
# XLA: compile with pass logging and read the layout-assignment line


_STAMP = re.compile(r"^[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+)")
_PIPELINE = re.compile(r"Running HLO pass pipeline on module (\S+?):")
_PASS_START = re.compile(r"\]\s+HLO pass layout-assignment\s*$")
_PASS_TIME = re.compile(r"HLO pass: layout-assignment time: .*?\((\d+) us\)")
_NUM_INSTRS = re.compile(r"Number of instructions: (\d+)")
_CHECKER = re.compile(r"Invariant checker (done )?\S+")


def _stamp(line: str) -> float | None:
    m = _STAMP.match(line)
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None


@dataclass
class XlaRun:
    module: str
    pass_us: int            # the "HLO pass: layout-assignment time" line
    instructions: int       # "Number of instructions" logged when the pass starts
    checker_us: int         # hlo-verifier invariant check run inside that timer
    prologue_us: int        # module hash + instruction count (logging level 2) inside that timer

    @property
    def net_us(self) -> int:
        return self.pass_us - self.checker_us - self.prologue_us


def parse_xla_log(text: str) -> list[XlaRun]:
    """Every layout-assignment run in a hlo_pass_pipeline=2 log.

    The timer around a pass also covers, at this verbosity, the module hash and
    instruction count logged at its start and the invariant checker run after
    it; both are measured from the log timestamps so the pass alone is known too.
    """
    runs, module, start, count, checker_start, checker_us, prologue_end = [], "?", None, 0, None, 0, None
    for line in text.splitlines():
        if m := _PIPELINE.search(line):
            module = m.group(1)
        elif _PASS_START.search(line):
            start, count, checker_us, checker_start, prologue_end = _stamp(line), 0, 0, None, None
        elif start is None:
            continue
        elif m := _NUM_INSTRS.search(line):
            count, prologue_end = int(m.group(1)), _stamp(line)
        elif m := _CHECKER.search(line):
            t = _stamp(line)
            if m.group(1) and checker_start is not None and t is not None:
                checker_us += round((t - checker_start) * 1e6)
            else:
                checker_start = t
        elif m := _PASS_TIME.search(line):
            prologue = round((prologue_end - start) * 1e6) if prologue_end and start else 0
            runs.append(XlaRun(module, int(m.group(1)), count, checker_us, prologue))
            start = None
    return runs


def main_run(runs: list[XlaRun]) -> XlaRun:
    """The main module's run: the largest module when several ran the pass."""
    if not runs:
        raise SystemExit("bench: no 'HLO pass: layout-assignment time' line in XLA's log")
    return max(runs, key=lambda r: r.instructions)


_HLO_INSTR = re.compile(r"^\s+(?:ROOT\s+)?[%\w.\-]+ = ")


def count_hlo_instructions(path: str) -> int:
    """Instructions in an HLO text dump (every `name = ...` line in every computation)."""
    with open(path) as f:
        return sum(1 for line in f if _HLO_INSTR.match(line))


def compile_xla(layers: int, keep_dump_as: str | None, full: bool = False) -> XlaRun:
    """One XLA:CPU compile in a subprocess; optionally keep the before-layout-assignment dump.

    Unless `full`, the compile is stopped once the layout-assignment line has
    been logged and the next pass has started: nothing after it is measured,
    and for large L the backend (LLVM codegen) takes most of the compile.
    XLA writes the ``before_layout-assignment`` dump before running the pass.
    """
    with tempfile.TemporaryDirectory(prefix="bench-xla-") as dump:
        env = dict(os.environ, **XLA_ENV)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "_worker", "compile", str(layers), dump],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        seen_time = stopped = False
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if _PASS_TIME.search(line):
                seen_time = True
            elif seen_time and not full and re.search(r"\]\s+HLO pass \S", line):
                proc.kill()  # our own child, by its handle
                stopped = True
                break
        proc.stderr.close()
        code = proc.wait()
        text = "".join(lines)
        if code != 0 and not stopped:
            sys.stderr.write(text[-4000:])
            raise SystemExit(f"bench: XLA compile of L={layers} failed (exit {code})")
        run = main_run(parse_xla_log(text))
        if keep_dump_as:
            dumps = glob.glob(os.path.join(dump, "*before_layout-assignment.txt"))
            if not dumps:
                raise SystemExit(f"bench: XLA wrote no *before_layout-assignment.txt into {dump}")
            # Several modules: the main one is the one named in the log line, else the largest.
            named = [d for d in dumps if f".{run.module}." in os.path.basename(d)]
            shutil.copyfile(max(named or dumps, key=os.path.getsize), keep_dump_as)
        return run


# --------------------------------------------------------------------------
# Workload preparation (cached, not timed)


@dataclass
class Workload:
    layers: int
    export_bc: str          # raw jax.export StableHLO bytecode
    dump_txt: str           # XLA's HLO just before layout-assignment
    dump_bc: str            # that dump converted to StableHLO bytecode
    dump_instructions: int
    xla: list[XlaRun] = field(default_factory=list)


def prepare(layers: int, xla_repeat: int, reuse_xla: bool, full_compile: bool = False) -> Workload:
    d = cache_dir(layers)
    export_bc = os.path.join(d, "export.mlirbc")
    dump_txt = os.path.join(d, "xla_before_layout-assignment.txt")
    dump_bc = os.path.join(d, "xla_before_layout-assignment.mlirbc")
    xla_json = os.path.join(d, "xla_runs.json")

    if not os.path.exists(export_bc):
        log(f"L={layers}: generating the jax.export module")
        t = time.perf_counter()
        _checked(_worker("export", str(layers), export_bc), f"export of L={layers}")
        log(f"L={layers}: generated in {time.perf_counter() - t:.1f} s")

    runs: list[XlaRun] = []
    if reuse_xla and os.path.exists(xla_json) and os.path.exists(dump_txt):
        with open(xla_json) as f:
            runs = [XlaRun(**r) for r in json.load(f)]
        log(f"L={layers}: reusing {len(runs)} cached XLA timing(s)")
    else:
        for i in range(xla_repeat):
            keep = None if os.path.exists(dump_txt) else dump_txt
            log(f"L={layers}: XLA compile {i + 1}/{xla_repeat}")
            t = time.perf_counter()
            runs.append(compile_xla(layers, keep, full_compile))
            log(f"L={layers}: compiled in {time.perf_counter() - t:.1f} s; "
                f"layout-assignment {runs[-1].pass_us / 1000:.1f} ms")
        with open(xla_json, "w") as f:
            json.dump([asdict(r) for r in runs], f, indent=1)

    if not os.path.exists(dump_bc):
        log(f"L={layers}: converting the XLA dump to StableHLO bytecode (not timed)")
        _checked(_worker("convert", dump_txt, dump_bc), f"conversion of {dump_txt}")
    return Workload(layers, export_bc, dump_txt, dump_bc, count_hlo_instructions(dump_txt), runs)


# --------------------------------------------------------------------------
# Our pass, in process


@dataclass
class Ours:
    best_ms: dict[str, float]       # best of the repeats, phase by phase
    graph_instructions: int         # instructions in our graph (after inlining)
    copies: int                     # copies the rewrite inserted
    memory: dict[str, float] = field(default_factory=dict)

    @property
    def pass_ms(self) -> float:
        return sum(self.best_ms[p] for p in PASS_PHASES)


def _run_once(data: bytes, path: str) -> tuple[dict[str, float], int, int]:
    import phases

    phases.start()
    gc.collect()
    t0 = time.perf_counter()
    s = phases.parse(data, path)
    t1 = time.perf_counter()
    # The pass runs with the cyclic collector paused, as assign_module does.
    with phases.quiet_gc():
        phases.import_(s)
        t2 = time.perf_counter()
        phases.propagate(s)
        t3 = time.perf_counter()
        phases.rewrite(s)
        t4 = time.perf_counter()
    phases.print_(s)
    t5 = time.perf_counter()
    assert s.text
    ms = dict(zip(PHASES, ((b - a_) * 1000 for a_, b in zip((t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5)))))
    return ms, len(s.graph.instrs), len(s.copies)


def time_ours(path: str, repeat: int) -> Ours:
    with open(path, "rb") as f:
        data = f.read()
    best: dict[str, float] = {}
    n = copies = 0
    for _ in range(repeat):
        ms, n, copies = _run_once(data, path)
        for p, v in ms.items():
            best[p] = min(best.get(p, math.inf), v)
    return Ours(best, n, copies)


def measure_memory(path: str) -> dict[str, float]:
    """Two fresh subprocesses: tracemalloc peak of the pass, and RSS peak growth of the pass."""
    out: dict[str, float] = {}
    for mode in ("tracemalloc", "rss"):
        proc = _checked(_worker("memory", mode, path), f"memory ({mode}) of {path}")
        out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    parsed = out["parsed_rss_mb"]
    out["ratio_tracemalloc"] = out["pass_tracemalloc_peak_mb"] / parsed if parsed > 0 else math.nan
    out["ratio_rss"] = out["pass_rss_peak_mb"] / parsed if parsed > 0 else math.nan
    return out


def run_measured(args: list[str]) -> tuple[float, float]:
    """(wall ms, peak RSS MB) of one run of `stablehlo-layout ARGS` (or ``--baseline FILE``), stdout to /dev/null.

    The command runs through bench/peak.py, which reads the process's own
    VmHWM as it leaves (why not wait4's ru_maxrss: see peak.py).  Output goes
    to stdout redirected to /dev/null rather than `-o /dev/null`: the command
    writes -o atomically (temp file + rename), which as root would replace
    the /dev/null device node with a regular file.
    """
    with tempfile.TemporaryDirectory(prefix="bench-peak-") as tmp:
        report = os.path.join(tmp, "peak.json")
        cmd = [sys.executable, os.path.join(BENCH, "peak.py"), report, *args]
        t = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        elapsed = (time.perf_counter() - t) * 1000
        if proc.returncode != 0 or not os.path.exists(report):
            sys.stderr.write(proc.stderr[-4000:])
            raise SystemExit(f"bench: {' '.join(cmd)} failed (exit {proc.returncode})")
        with open(report) as f:
            peak = json.load(f)["vmhwm_kb"]
    return elapsed, peak / 1024


def best_of(args: list[str], repeat: int) -> tuple[float, float]:
    """Best wall ms and lowest peak RSS MB over `repeat` runs."""
    runs = [run_measured(args) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


@dataclass
class Commands:
    """The whole commands on one file, each best of --repeat."""
    assign_ms: float
    assign_rss_mb: float
    baseline_ms: float      # bench/baseline.py: parse + walk + print only
    baseline_rss_mb: float
    explain_ms: float | None = None  # `explain` with its what-if fixes

    @property
    def rss_ratio(self) -> float:
        return self.assign_rss_mb / self.baseline_rss_mb

    @property
    def explain_ratio(self) -> float | None:
        return None if self.explain_ms is None else self.explain_ms / self.assign_ms


def measure_commands(path: str, repeat: int, explain: bool) -> Commands:
    assign_ms, assign_rss = best_of(["assign", "--target", "xla-cpu", path], repeat)
    base_ms, base_rss = best_of(["--baseline", path], repeat)
    explain_ms = best_of(["explain", "--target", "xla-cpu", path], repeat)[0] if explain else None
    return Commands(assign_ms, assign_rss, base_ms, base_rss, explain_ms)


# --------------------------------------------------------------------------
# Workers (subprocesses)


def _rss_kb(field_name: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return 0


def _malloc_in_use_kb() -> float:
    """Bytes malloc has handed out and not got back (glibc mallinfo2: arena + mmapped), in kB; NaN elsewhere."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")]
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return math.nan
    return (info.uordblks + info.hblkhd) / 1024


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(args: list[str]) -> int:
    kind = args[0]
    if kind == "export":
        sys.path.insert(0, BENCH)
        from workload import export
        data = export(int(args[1]))
        tmp = args[2] + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, args[2])
        return 0
    if kind == "compile":
        sys.path.insert(0, BENCH)
        from workload import compile_with_dumps
        compile_with_dumps(int(args[1]), args[2])
        return 0
    if kind == "convert":
        from stablehlo_layout.ir import mlir
        ctx = mlir.make_context()
        m = mlir.read_input(args[1], ctx)
        tmp = args[2] + ".tmp"
        with open(tmp, "wb") as f:
            f.write(mlir.to_bytecode(m))
        os.replace(tmp, args[2])
        return 0
    if kind == "memory":
        mode, path = args[1], args[2]
        import tracemalloc

        import phases

        phases.start()
        with open(path, "rb") as f:
            data = f.read()
        gc.collect()
        before, heap_before = _rss_kb(), _malloc_in_use_kb()
        s = phases.parse(data, path)
        del data
        gc.collect()
        parsed, heap_parsed = _rss_kb(), _malloc_in_use_kb()
        # RSS growth is the measure; malloc's in-use growth cross-checks it (RSS can hide
        # reuse of memory freed earlier in the process).
        result = {"parsed_rss_mb": (parsed - before) / 1024, "parsed_malloc_mb": (heap_parsed - heap_before) / 1024}
        if mode == "tracemalloc":
            tracemalloc.start()
            for step in PASS_PHASES:
                phases.STEPS[step](s)
            result["pass_tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        else:
            reset = _reset_peak_rss()
            for step in PASS_PHASES:
                phases.STEPS[step](s)
            peak = _rss_kb("VmHWM") if reset else _rss_kb()
            result["pass_rss_peak_mb"] = max(0, peak - parsed) / 1024
        print(json.dumps(result))
        return 0
    raise SystemExit(f"bench: unknown worker {kind}")


# --------------------------------------------------------------------------
# Report


@dataclass
class Row:
    layers: int
    source: str             # "xla-dump" or "jax-export"
    instructions: int       # dump instructions (xla-dump) / our graph's (jax-export)
    xla_ms: float
    xla_net_ms: float
    ours: Ours
    command_ms: float | None
    loadavg: tuple[float, float, float] = (0.0, 0.0, 0.0)  # 1/5/15-min load when this row finished
    commands: Commands | None = None  # whole commands: RSS, the parse + walk + print floor, explain


def _fmt(v: float | None, spec: str = ".0f") -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISS"


def render(rows: list[Row], repeat: int, xla_repeat: int) -> str:
    head = ["L", "input", "instrs", "XLA ms", "XLA net", "parse", "import", "propagate", "rewrite", "print",
            "ours i+p+r", "ours/XLA", "command", "cmd/XLA", "mem (tm)", "mem (rss)"]
    table = [head]
    for r in rows:
        o, mem = r.ours, r.ours.memory
        ratio = o.pass_ms / r.xla_ms
        cmd_ratio = r.command_ms / r.xla_ms if r.command_ms is not None else None
        table.append([
            str(r.layers), r.source, str(r.instructions), _fmt(r.xla_ms), _fmt(r.xla_net_ms),
            *(_fmt(o.best_ms[p]) for p in PHASES), _fmt(o.pass_ms),
            f"{ratio:.2f} {_mark(ratio <= TARGET_PASS_RATIO)}",
            _fmt(r.command_ms),
            f"{cmd_ratio:.2f} {_mark(cmd_ratio <= TARGET_COMMAND_RATIO)}" if cmd_ratio is not None else "-",
            f"{mem['ratio_tracemalloc']:.2f} {_mark(mem['ratio_tracemalloc'] < TARGET_MEMORY_RATIO)}" if mem else "-",
            f"{mem['ratio_rss']:.2f}" if mem else "-",
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in table]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    notes = [
        "",
        f"times in ms; ours = best of {repeat} per phase; XLA ms = best of {xla_repeat} compiles, from XLA's "
        "'HLO pass: layout-assignment time' line (main module)",
        "XLA net = that time less the hlo-verifier invariant check and module hash/count logging it includes",
        f"ours/XLA = (import+propagate+rewrite)/XLA ms, target <= {TARGET_PASS_RATIO}; "
        f"cmd/XLA = whole `stablehlo-layout assign --target xla-cpu` wall time / XLA ms, target <= {TARGET_COMMAND_RATIO}",
        f"mem (tm) = tracemalloc peak of Python allocations during import+propagate+rewrite / RSS growth of parsing "
        f"the module in a fresh process, target < {TARGET_MEMORY_RATIO}",
        "mem (rss) = RSS peak growth during import+propagate+rewrite (VmHWM, no tracemalloc) / the same parsed-module RSS",
        "instrs = instructions in XLA's before-layout-assignment dump (xla-dump) or in our graph after inlining "
        "(jax-export)",
    ]
    for r in rows:
        mem = r.ours.memory
        if mem:
            notes.append(f"memory L={r.layers} {r.source}: parsed module {mem['parsed_rss_mb']:.1f} MB RSS "
                         f"({mem.get('parsed_malloc_mb', math.nan):.1f} MB malloc in use); "
                         f"pass peak {mem['pass_tracemalloc_peak_mb']:.1f} MB tracemalloc, "
                         f"{mem['pass_rss_peak_mb']:.1f} MB RSS; {r.ours.copies} copies inserted; "
                         f"load average {r.loadavg[0]:.1f}/{r.loadavg[1]:.1f}/{r.loadavg[2]:.1f}")
    for source in ("xla-dump", "jax-export"):
        rs = sorted((r for r in rows if r.source == source), key=lambda r: r.instructions)
        if len(rs) >= 2 and rs[0].instructions != rs[-1].instructions:
            a, b = rs[0], rs[-1]
            k = math.log(b.ours.pass_ms / a.ours.pass_ms) / math.log(b.instructions / a.instructions)
            xk = math.log(b.xla_ms / a.xla_ms) / math.log(b.instructions / a.instructions) \
                if source == "xla-dump" else None
            notes.append(
                f"growth exponent ({source}, L={a.layers}->{b.layers}, n={a.instructions}->{b.instructions}): "
                f"ours {k:.3f} {_mark(k <= TARGET_EXPONENT)} (target <= {TARGET_EXPONENT})"
                + (f"; XLA {xk:.3f}" if xk is not None else ""))
            if len(rs) > 2:  # step by step too: one noisy end point skews the end-to-end figure
                steps = []
                for a, b in zip(rs, rs[1:]):
                    k = math.log(b.ours.pass_ms / a.ours.pass_ms) / math.log(b.instructions / a.instructions)
                    xk = math.log(b.xla_ms / a.xla_ms) / math.log(b.instructions / a.instructions)
                    xla = f" XLA {xk:.2f}" if source == "xla-dump" else ""
                    steps.append(f"L={a.layers}->{b.layers} ours {k:.2f}" + xla)
                notes.append(f"  step exponents ({source}): " + "; ".join(steps))
    return "\n".join(lines + notes + render_commands(rows, repeat))


def render_commands(rows: list[Row], repeat: int) -> list[str]:
    """The whole commands on XLA's dump: peak RSS against parse + walk + print, explain against assign."""
    measured = [r for r in rows if r.commands is not None]
    if not measured:
        return []
    head = ["L", "instrs", "assign ms", "assign RSS MB", "baseline ms", "baseline RSS MB", "RSS ratio",
            "explain ms", "explain/assign", "cmd - baseline ms", "(cmd - baseline)/XLA"]
    table = [head]
    for r in measured:
        c = r.commands
        extra = c.assign_ms - c.baseline_ms
        table.append([
            str(r.layers), str(r.instructions), _fmt(c.assign_ms), _fmt(c.assign_rss_mb, ".1f"), _fmt(c.baseline_ms),
            _fmt(c.baseline_rss_mb, ".1f"), f"{c.rss_ratio:.2f} {_mark(c.rss_ratio <= TARGET_RSS_RATIO)}",
            _fmt(c.explain_ms),
            f"{c.explain_ratio:.2f} {_mark(c.explain_ratio <= TARGET_EXPLAIN_RATIO)}" if c.explain_ratio else "-",
            _fmt(extra), f"{extra / r.xla_ms:.2f}",
        ])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["", "whole commands on XLA's dump (best of %d each):" % repeat]
    lines += ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in table]
    lines.insert(3, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += [
        "",
        "assign = `stablehlo-layout assign --target xla-cpu DUMP > /dev/null`; baseline = `python bench/baseline.py DUMP`"
        " (the same bindings: parse, walk every op once, print, nothing else)",
        "RSS = the process's peak resident set (its own VmHWM, start-up to exit: bench/peak.py); "
        "RSS ratio = assign / baseline, "
        f"target <= {TARGET_RSS_RATIO}",
        f"explain = `stablehlo-layout explain --target xla-cpu DUMP` with its what-if fixes; explain/assign target "
        f"<= {TARGET_EXPLAIN_RATIO}",
        "cmd - baseline = what the command spends beyond reading and printing the module (import, propagate, rewrite,"
        " verification)",
    ]
    return lines


def render_saved(path: str) -> str:
    """The table of a run saved with --json."""
    with open(path) as f:
        saved = json.load(f)
    rows = []
    for r in saved["rows"]:
        r = dict(r)
        o = r.pop("ours")
        r.pop("pass_ms", None)
        r["loadavg"] = tuple(r.get("loadavg", (0, 0, 0)))
        c = r.pop("commands", None)  # runs saved before the whole-command table have none
        rows.append(Row(ours=Ours(**o), commands=Commands(**c) if c else None, **r))
    return render(rows, saved["repeat"], saved["xla_repeat"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_worker"]:
        return worker(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", default="64,256,1024", help="comma-separated L values (default: 64,256,1024)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement, best kept (default: 3)")
    p.add_argument("--quick", action="store_true", help="smoke test: L=64, repeat 1")
    p.add_argument("--xla-repeat", type=int, default=None, help="XLA compiles per L (default: --repeat)")
    p.add_argument("--reuse-xla", action="store_true", help="reuse cached XLA timings instead of recompiling")
    p.add_argument("--full-compile", action="store_true",
                   help="let each XLA compile finish instead of stopping it after layout-assignment")
    p.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    p.add_argument("--no-export", action="store_true", help="skip timing the raw jax.export module")
    p.add_argument("--no-explain", action="store_true", help="skip timing `explain` (with fixes) on the dump")
    p.add_argument("--render", metavar="RESULTS", help="only re-print the table of a saved --json file")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON (default: bench/cache/last_run.json)")
    args = p.parse_args(argv)
    if args.render:
        print(render_saved(args.render))
        return 0
    layers = [64] if args.quick else sorted({int(x) for x in args.layers.split(",") if x.strip()})
    repeat = 1 if args.quick else args.repeat
    xla_repeat = 1 if args.quick else (args.xla_repeat or repeat)
    sys.path.insert(0, ROOT)

    engine_at_start = engine_hash()
    log(f"engine sources {engine_at_start}; layers {layers}; repeat {repeat}; XLA compiles {xla_repeat}")
    rows: list[Row] = []
    for L in layers:
        w = prepare(L, xla_repeat, args.reuse_xla, args.full_compile)
        best = min(w.xla, key=lambda r: r.pass_us)
        xla_ms, xla_net_ms = best.pass_us / 1000, best.net_us / 1000
        if best.instructions and best.instructions != w.dump_instructions:
            log(f"L={L}: note: XLA logged {best.instructions} instructions, the dump has {w.dump_instructions}")
        sources = [("xla-dump", w.dump_bc)] + ([] if args.no_export else [("jax-export", w.export_bc)])
        for source, path in sources:
            log(f"L={L} {source}: timing our pass ({repeat} run(s))")
            ours = time_ours(path, repeat)
            log(f"L={L} {source}: i+p+r {ours.pass_ms:.0f} ms " +
                " ".join(f"{p}={ours.best_ms[p]:.0f}" for p in PHASES))
            if not args.no_memory:
                log(f"L={L} {source}: memory")
                ours.memory = measure_memory(path)
            commands = None
            if source == "xla-dump":
                log(f"L={L} {source}: whole commands: assign, baseline{'' if args.no_explain else ', explain'} "
                    f"({repeat} run(s) each)")
                commands = measure_commands(path, repeat, not args.no_explain)
            n = w.dump_instructions if source == "xla-dump" else ours.graph_instructions
            rows.append(Row(L, source, n, xla_ms, xla_net_ms, ours, commands and commands.assign_ms,
                            os.getloadavg(), commands))
        print(render(rows, repeat, xla_repeat), file=sys.stderr, flush=True)  # progress: table so far

    report = render(rows, repeat, xla_repeat)
    engine_at_end = engine_hash()
    print(report)
    if engine_at_end != engine_at_start:
        print(f"WARNING: the engine sources changed during the run ({engine_at_start} -> {engine_at_end}); "
              "rows may measure different code")
    print(f"machine: {os.cpu_count()} CPUs; load average at the end "
          + "/".join(f"{x:.1f}" for x in os.getloadavg()) + " (other jobs on the machine inflate both sides)")
    out = args.json or os.path.join(CACHE, "last_run.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"engine": [engine_at_start, engine_at_end], "loadavg_end": os.getloadavg(), "repeat": repeat,
                   "xla_repeat": xla_repeat, "rows": [dict(asdict(r), pass_ms=r.ours.pass_ms) for r in rows]},
                  f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
