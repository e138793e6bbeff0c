"""XLA:TPU's compiler as the oracle, deviceless: compile for a named TPU topology, keep the dumps.

XLA:TPU's layout assignment is closed source (it lives in libtpu), so it can
only be observed.  The ``jax[tpu]`` extra (the ``tpu-oracle`` test extra)
installs libtpu, whose whole compiler runs without a TPU for a topology that
``jax.experimental.topologies.get_topology_desc(topology_name=..., platform="tpu")``
describes; a program compiled for such a device writes the same pass dumps as
on a chip.  With ``xla_dump_hlo_pass_re=layout-assignment`` XLA:TPU writes, per
module, the module the pass receives and the one it returns::

    *.Layout_assignment.after_pipeline-start.before_layout-assignment.txt   (BEFORE)
    *.Layout_assignment.after_layout-assignment.before_pipeline-end.txt     (AFTER)

and three files that name the target it compiled for: ``*.tpu_comp_env.txt``
(libtpu's compilation environment), ``*.hlo_module_config.txt`` (entry layouts
and debug options) and ``*.target_arguments.txt`` (the chip: version, variant,
chips per host).

``oracle_available()`` says whether jax[tpu] is installed and of one jax
release (libtpu is pinned per jax release: jax 0.12.0.1 -> libtpu 0.0.50.*);
nothing here imports jax or libtpu until a compile is asked for.
``TPU_GENERATIONS`` maps a generation to the topology it compiles for
(``DEFAULT_GENERATION`` is ``v5e``).  ``run_tpu_oracle(program, generation,
out_dir)`` compiles one ``programs.Program`` (or ``models.ModelProgram``) and
keeps ``before.txt`` / ``after.txt`` (as ``oracle.run_oracle`` does for XLA:CPU)
plus the three target files and ``meta.json``; ``run_tpu_oracle_text(text,
generation, out_dir)`` does the same for a StableHLO module's text.  libtpu
may abort the process in a pass after layout assignment (a ``Check failed``
deviceless); the dumps are written by then, and ``recover_tpu_oracle(out_dir,
why)``, called by whoever ran the dead process, keeps them.
``program_dir`` keys a dump cache by the oracle's version and the jax / libtpu
versions.

    python -m tests.differential.tpu_oracle --self-test [--generation v5e,v6e] [--out DIR]
    python -m tests.differential.tpu_oracle --module FILE.mlir [--generation v5e] [--out DIR]
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from stablehlo_layout.xla.dumps import DUMP_FLAGS

from .oracle import compile_on_device, OracleResult, _short, _skip_reason, find_dumps, finish

# Bump when the way programs are compiled for the TPU changes (it keys the dump cache).
TPU_ORACLE_VERSION = 1

# A generation's name -> the topology compiled for.  Every topology's device 0 is
# one chip (one TensorCore on v5e / v6e, a megacore chip on v4 / v5p, a tpu7x chip).
TPU_GENERATIONS: dict[str, str] = {
    "v4": "v4:2x2x1",
    "v5e": "v5e:2x2",
    "v5p": "v5p:2x2x1",
    "v6e": "v6e:2x2",
    "tpu7x": "tpu7x:2x2x1",
}
DEFAULT_GENERATION = "v5e"

# The dump files, besides the two modules, that name the target (kept beside them).
TARGET_FILES = ("tpu_comp_env.txt", "hlo_module_config.txt", "target_arguments.txt")
_BEFORE_SUFFIX = "before_layout-assignment.txt"
_AFTER_MARK = "after_layout-assignment"

# libtpu warns (harmlessly) when it cannot tell which accelerator or workers it
# runs on; any valid values silence it, whatever topology is compiled for.
QUIET_ENV = {"TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_WORKER_HOSTNAMES": "localhost"}
# libtpu takes /tmp/libtpu_lockfile so that one process owns the chips; a second
# process then fails every compile ("Internal error when accessing libtpu
# multi-process lockfile").  Deviceless compiles own no chip: let the differential
# harness's workers (and anyone else's compiles) load libtpu side by side.
SHARED_ENV = {"ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}



# -- is it here? ----------------------------------------------------------------------------

def _version_tuple(v: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.+]", v))


def _satisfies(version: str, spec: str) -> bool:
    """``version`` against a PEP 440 specifier list such as ``==0.0.50.*`` or ``>=0.12.0.1,<=0.12.0.1``.

    Enough of PEP 440 for the pins jax writes in its ``tpu`` extra; ``packaging``
    is not a dependency.
    """
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = re.match(r"(==|!=|>=|<=|>|<|~=)\s*(\S+)$", clause)
        if m is None:
            return False
        op, want = m.groups()
        if want.endswith(".*"):
            prefix = want[:-2]
            match = version == prefix or version.startswith(prefix + ".")
            if (op == "==") != match:
                return False
            continue
        a, b = _version_tuple(version), _version_tuple(want)
        try:
            ok = {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b,
                  "~=": a >= b and a[:len(b) - 1] == b[:len(b) - 1]}[op]
        except TypeError:  # a pre-release tag against a number
            ok = version == want
        if not ok:
            return False
    return True


def tpu_requirements() -> dict[str, str]:
    """What the installed jax's ``tpu`` extra pins: distribution -> specifier (read from jax's metadata)."""
    import importlib.metadata as md

    out: dict[str, str] = {}
    for req in md.requires("jax") or []:
        if "extra" not in req or not re.search(r"""extra\s*==\s*["']tpu["']""", req):
            continue
        m = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*([^;]*)", req)
        if m and m.group(1).lower() in ("libtpu", "jaxlib"):
            out[m.group(1).lower()] = m.group(2).strip()
    return out


def oracle_available() -> tuple[bool, str]:
    """(True, "") when XLA:TPU's compiler can be loaded here; else (False, why not).

    Looks at the installed distributions only: nothing is imported.
    """
    import importlib.metadata as md
    import importlib.util

    hint = "install the test extra (pip install -e '.[tpu-oracle]'), i.e. jax[tpu] of the installed jax's version"
    try:
        jax_version = md.version("jax")
    except md.PackageNotFoundError:
        return False, f"jax is not installed; {hint}"
    try:
        libtpu_version = md.version("libtpu")
    except md.PackageNotFoundError:
        return False, f"XLA:TPU's compiler (libtpu) is not installed; pip install 'jax[tpu]=={jax_version}'"
    if importlib.util.find_spec("libtpu") is None:
        return False, f"libtpu {libtpu_version} is listed as installed but cannot be found on sys.path"
    pins = tpu_requirements()
    if "libtpu" not in pins:
        return False, f"jax {jax_version} names no libtpu in its tpu extra; cannot tell which libtpu is its XLA"
    if not _satisfies(libtpu_version, pins["libtpu"]):
        return False, (f"libtpu {libtpu_version} is not the one jax {jax_version} pins (libtpu{pins['libtpu']}): "
                       f"another XLA:TPU; pip install 'jax[tpu]=={jax_version}'")
    if "jaxlib" in pins:
        try:
            jaxlib_version = md.version("jaxlib")
        except md.PackageNotFoundError:
            return False, f"jaxlib is not installed; pip install 'jax[tpu]=={jax_version}'"
        if not _satisfies(jaxlib_version, pins["jaxlib"]):
            return False, (f"jaxlib {jaxlib_version} is not the one jax {jax_version} pins for TPU "
                           f"(jaxlib{pins['jaxlib']}); pip install 'jax[tpu]=={jax_version}'")
    return True, ""


def versions() -> str:
    """jax, jaxlib and libtpu versions, for cache keys and reports ("" parts when missing)."""
    import importlib.metadata as md

    out = []
    for dist in ("jax", "jaxlib", "libtpu"):
        try:
            out.append(f"{dist}=={md.version(dist)}")
        except md.PackageNotFoundError:
            out.append(f"{dist}==missing")
    return " ".join(out)


# -- devices --------------------------------------------------------------------------------

def topology_name(generation: str) -> str:
    """The topology a generation compiles for: a name of ``TPU_GENERATIONS`` or a topology such as ``v5e:1x1``."""
    if generation in TPU_GENERATIONS:
        return TPU_GENERATIONS[generation]
    if re.fullmatch(r"[a-z0-9]+:\d+(x\d+)*", generation):
        return generation
    raise KeyError(f"unknown TPU generation {generation!r}; known: {', '.join(TPU_GENERATIONS)} "
                   "(or a topology such as v5e:1x1)")


def generation_label(generation: str) -> str:
    """The short name a generation goes by in reports and cache paths (``v5e``, or ``v5e-1x1`` for a topology)."""
    return generation if generation in TPU_GENERATIONS else generation.replace(":", "-")


_DEVICES: dict[str, Any] = {}


def tpu_device(generation: str = DEFAULT_GENERATION) -> Any:
    """Device 0 of the deviceless topology for ``generation`` (one topology per name and process)."""
    topo_name = topology_name(generation)
    if topo_name not in _DEVICES:
        ok, why = oracle_available()
        if not ok:
            raise RuntimeError(why)
        for k, v in {**QUIET_ENV, **SHARED_ENV}.items():
            os.environ.setdefault(k, v)
        from jax.experimental import topologies

        topo = topologies.get_topology_desc(topology_name=topo_name, platform="tpu")
        _DEVICES[topo_name] = topo.devices[0]
    return _DEVICES[topo_name]


# -- compiling ------------------------------------------------------------------------------

@dataclass
class TpuOracleResult(OracleResult):
    """An ``OracleResult`` that also names the target files kept and XLA's own dump file names."""

    generation: str = ""
    topology: str = ""
    target_files: dict[str, str] = field(default_factory=dict)  # kind (TARGET_FILES) -> kept path
    dump_names: dict[str, str] = field(default_factory=dict)  # before / after / kind -> XLA's file name

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "generation": self.generation, "topology": self.topology,
                "versions": versions(), "dump_names": self.dump_names,
                "target_files": sorted(os.path.basename(p) for p in self.target_files.values())}


def _module_prefix(path: str) -> str:
    """``module_0003.jit_f.cl_123`` for any file XLA dumped of that module."""
    base = os.path.basename(path)
    m = re.match(r"(module_\d+\.[^.]+(?:\.cl_\d+)?)\.", base)
    return m.group(1) if m else base.split(".")[0]


def keep_tpu_dumps(res: TpuOracleResult, dump: str, module_hint: str, out_dir: str) -> TpuOracleResult:
    """Copy the module's BEFORE / AFTER dumps and its target files from ``dump`` into ``out_dir``."""
    before, after = find_dumps(dump, module_hint)
    if before is None or after is None:
        reason = _skip_reason(Exception(res.jax_error)) if res.jax_error else "no layout-assignment dumps"
        res.reason = f"no dumps ({reason}: {res.jax_error[:120]})" if res.jax_error else reason
        return res
    prefix = _module_prefix(before)
    strip = lambda p: os.path.basename(p)[len(prefix) + 1:]  # noqa: E731  (the name without the module's)
    res.before = os.path.join(out_dir, "before.txt")
    res.after = os.path.join(out_dir, "after.txt")
    shutil.copyfile(before, res.before)
    shutil.copyfile(after, res.after)
    res.dump_names = {"before": strip(before), "after": strip(after)}
    for kind in TARGET_FILES:
        found = glob.glob(os.path.join(dump, f"{glob.escape(prefix)}.{kind}"))
        if found:
            res.target_files[kind] = os.path.join(out_dir, kind)
            shutil.copyfile(found[0], res.target_files[kind])
            res.dump_names[kind] = strip(found[0])
    res.status, res.reason = "ok", ""
    return res


def compile_for_tpu(fn: Any, args: list[Any], generation: str, dump_dir: str,
                    in_shardings: Any = None, out_shardings: Any = None) -> str:
    """Lower and compile ``fn`` for ``generation`` with layout-assignment dumps in ``dump_dir``.

    Returns "" or the error XLA raised in a pass after layout assignment (the
    dumps are complete then); an error before that propagates.
    """
    return compile_on_device(fn, args, tpu_device(generation), dump_dir, in_shardings, out_shardings)


def _new_result(generation: str, program: dict[str, Any]) -> TpuOracleResult:
    return TpuOracleResult("skipped", program={**program, "tpu": generation_label(generation)},
                           generation=generation_label(generation), topology=topology_name(generation))


DUMP_FOLDER = "xla_dump"  # XLA's dump folder, inside out_dir while a compile runs


def _start(res: TpuOracleResult, out_dir: str) -> str:
    """Mark ``out_dir`` as compiling and make XLA's dump folder inside it (see ``recover_tpu_oracle``)."""
    import json

    os.makedirs(out_dir, exist_ok=True)
    dump = os.path.join(out_dir, DUMP_FOLDER)
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(dump)
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump({**res.to_json(), "status": "compiling"}, f, indent=1)
    return dump


def recover_tpu_oracle(out_dir: str, why: str) -> TpuOracleResult | None:
    """The result of a compile whose process died (``why``: e.g. libtpu's ``Check failed`` line).

    libtpu CHECK-fails (aborting the process) in some passes long after layout
    assignment when compiling deviceless; its layout-assignment dumps are
    complete by then and still in ``out_dir``.  This keeps them as
    ``run_tpu_oracle`` would have, with ``why`` as the late error.  None when
    ``out_dir`` holds no compile that died.  Imports neither jax nor libtpu.
    """
    import json

    meta, dump = os.path.join(out_dir, "meta.json"), os.path.join(out_dir, DUMP_FOLDER)
    try:
        with open(meta) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    if d.get("status") != "compiling" or not os.path.isdir(dump):
        return None
    res = TpuOracleResult("skipped", program=d.get("program", {}), generation=d.get("generation", ""),
                          topology=d.get("topology", ""))
    res.jax_error = f"the compiling process died after layout assignment: {why}"[:400]
    keep_tpu_dumps(res, dump, res.program.get("name", ""), out_dir)
    finish(res, time.perf_counter(), dump, out_dir)
    return res


def run_tpu_oracle(program: Any, generation: str, out_dir: str) -> TpuOracleResult:
    """Compile ``program`` for ``generation`` deviceless; keep the dumps and target files in ``out_dir``.

    ``program`` is a ``programs.Program`` (its layout pins are honoured) or a
    ``models.ModelProgram`` (JAX's default layouts).  Never raises for what XLA
    or JAX refuse: the result is "skipped" with the reason then.
    """
    from .gpu_oracle import formats_for  # backend-neutral: pins as jit shardings on a device

    res = _new_result(generation, program.describe())
    start = time.perf_counter()
    dump = _start(res, out_dir)
    try:
        try:
            device = tpu_device(generation)
            ins, outs = formats_for(program, device)
        except Exception as e:
            res.reason = f"format: {_short(e)}"
            return res
        try:
            res.jax_error = compile_for_tpu(program.fn, program.args, generation, dump, ins, outs)
        except Exception as e:
            res.reason = f"lowering refused: {_short(e)[:160]}"
            return res
        return keep_tpu_dumps(res, dump, program.name, out_dir)
    finally:
        finish(res, start, dump, out_dir)


def compile_module_text(text: str, generation: str, dump_dir: str) -> str:
    """Compile a StableHLO module (MLIR text) for ``generation`` with layout-assignment dumps in ``dump_dir``.

    The entry layouts are what the text states (``mhlo.layout_mode`` attributes,
    ``mhlo.xla_entry_computation_*_layout``); where it states none, PJRT picks
    its default for each shape, as for ``jax.jit``.  Returns "" or the error XLA
    raised after layout assignment; an error before that propagates.
    """
    from jax._src import compiler
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir

    device = tpu_device(generation)
    module = ir.Module.parse(text, mlir.make_ir_context())
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=[device],
                                           backend=device.client)
    debug = options.executable_build_options.debug_options
    debug.xla_dump_to = dump_dir
    for name, value in DUMP_FLAGS.items():
        setattr(debug, name, value)
    try:
        device.client.compile(module, executable_devices=xc.DeviceList((device,)), compile_options=options)
    except Exception as e:
        return _short(e)
    return ""


def run_tpu_oracle_text(text: str, generation: str, out_dir: str, name: str = "module") -> TpuOracleResult:
    """``run_tpu_oracle`` for a StableHLO module given as MLIR text (``name`` names it in meta.json)."""
    res = _new_result(generation, {"name": name, "source": "stablehlo text",
                                   "sha1": hashlib.sha1(text.encode()).hexdigest()[:12]})
    start = time.perf_counter()
    dump = _start(res, out_dir)
    try:
        try:
            res.jax_error = compile_module_text(text, generation, dump)
        except Exception as e:
            res.reason = f"refused: {_short(e)[:160]}"
            return res
        return keep_tpu_dumps(res, dump, "", out_dir)
    finally:
        finish(res, start, dump, out_dir)


# -- the dump cache --------------------------------------------------------------------------

def oracle_key() -> str:
    """Changes whenever the TPU compiler or the way this module runs it changes."""
    return hashlib.sha1(f"{TPU_ORACLE_VERSION} {versions()}".encode()).hexdigest()[:10]


def program_dir(cache: str, generation: str, ident: str, programs_key: str = "") -> str:
    """Where one program's dumps for ``generation`` are cached: ``cache/<key>/<generation>/<ident>``.

    ``programs_key`` is the caller's hash of whatever builds the programs
    (a generator's source, a model library's version), so edited programs
    compile anew.
    """
    key = oracle_key() + (f"-{programs_key}" if programs_key else "")
    return os.path.join(cache, key, generation_label(generation), ident)


def run_tpu_oracle_cached(program: Any, generation: str, cache: str, ident: str | None = None,
                          programs_key: str = "", refresh: bool = False) -> OracleResult:
    """``run_tpu_oracle`` unless ``program_dir`` already holds its result (``refresh`` recompiles)."""
    from .oracle import load_cached

    out_dir = program_dir(cache, generation, ident or program.name, programs_key)
    if not refresh:
        cached = load_cached(out_dir)
        if cached is not None and cached.status != "compiling":  # "compiling": its process died
            return cached
    return run_tpu_oracle(program, generation, out_dir)


# -- self-test -------------------------------------------------------------------------------

@dataclass
class NamedProgram:
    """The smallest program ``run_tpu_oracle`` takes: a function, its argument structs, no layout pins."""

    name: str
    fn: Any
    args: list[Any]
    in_layouts: list[Any]
    out_layouts: list[Any] | None
    single_output: bool = True

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "args": [f"{a.dtype}{list(a.shape)}" for a in self.args],
                "in_layouts": [list(s) if isinstance(s, tuple) else s for s in self.in_layouts],
                "out_layouts": None if self.out_layouts is None else
                [list(s) if isinstance(s, tuple) else s for s in self.out_layouts]}


def self_test_program() -> NamedProgram:
    """``sin(a @ b.T)`` with ``a`` pinned row-major: a dot, a transpose and a pinned parameter."""
    import jax
    import jax.numpy as jnp

    def self_test(a: Any, b: Any) -> Any:
        return jnp.sin(a @ b.T)

    args = [jax.ShapeDtypeStruct((256, 512), jnp.bfloat16), jax.ShapeDtypeStruct((384, 512), jnp.bfloat16)]
    return NamedProgram("self_test", self_test, args, [(0, 1), None], None)


def _first_line(path: str | None, pattern: str) -> str:
    if path is None:
        return ""
    with open(path) as f:
        for line in f:
            if re.search(pattern, line):
                return line.strip()[:160]
    return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.differential.tpu_oracle",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="generations: " + ", ".join(f"{k} ({v})" for k, v in TPU_GENERATIONS.items())
                                        + f"; default {DEFAULT_GENERATION}")
    ap.add_argument("--self-test", action="store_true",
                    help="compile a small program for each --generation and print where its dumps are")
    ap.add_argument("--module", help="compile this StableHLO module (MLIR text) instead")
    ap.add_argument("--generation", default=None,
                    help="comma-separated generations or topologies (self-test: all; --module: "
                         f"{DEFAULT_GENERATION})")
    ap.add_argument("--out", help="where the dumps go (default: a new temporary folder, kept)")
    a = ap.parse_args(argv)
    if not a.self_test and not a.module:
        ap.print_help()
        return 0
    ok, why = oracle_available()
    if not ok:
        print(f"tpu_oracle: skipped: {why}", file=sys.stderr)
        return 2
    gens = [g for g in (a.generation or (",".join(TPU_GENERATIONS) if a.self_test else DEFAULT_GENERATION)).split(",") if g]
    out = a.out or tempfile.mkdtemp(prefix="tpu-oracle-")
    print(f"XLA:TPU oracle: {versions()}")
    failed = 0
    text = None
    if a.module:
        with open(a.module) as f:
            text = f.read()
    for g in gens:
        d = os.path.join(out, generation_label(g), "module" if text is not None else "self_test")
        res = (run_tpu_oracle_text(text, g, d, os.path.basename(a.module)) if text is not None
               else run_tpu_oracle(self_test_program(), g, d))
        if res.status != "ok":
            failed += 1
            print(f"{g:6s} ({topology_name(g)}): {res.status}: {res.reason}")
            continue
        print(f"{g:6s} ({topology_name(g)}): ok in {res.seconds:.2f} s")
        for label, path in (("BEFORE", res.before), ("AFTER", res.after), *sorted(res.target_files.items())):
            print(f"    {label:22s} {path}")
        chip = _first_line(res.target_files.get("target_arguments.txt"), r"version:")
        entry = _first_line(res.after, r"^HloModule").split("entry_computation_layout=")[-1]
        print(f"    target: {chip}   entry: {entry[:110]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
