"""An XLA dump as a user has it: which file is layout assignment's input, and which XLA wrote it.

``--xla_dump_to=DIR`` writes many files per compiled module, all named
``module_NNNN.<name>.<what>``; with ``--xla_dump_hlo_pass_re=layout-assignment``
one of them is the module layout assignment receives
(``...before_layout-assignment.txt``), the only one our pass should read.
The others say which compiler wrote the dump:

- the pass pipeline in the before dump's own name: XLA:CPU runs layout
  assignment in ``HLO_passes_through_layout_assignment``, XLA:GPU in
  ``layout_assignment``, XLA:TPU in ``Layout_assignment``;
- the files beside it: ``cpu_after_optimizations``, ``sm_9.0a_gpu_after_optimizations``
  (the GPU's compute capability), ``gpu_target_config.pbtxt`` (the GPU's
  whole description, the format ``--gpu FILE`` reads), ``tpu_comp_env.txt``
  and ``target_arguments.txt`` (XLA:TPU's; the latter names the chip's
  generation: ``version: TPU_VERSION_VIPERFISH`` with ``variant: "lite"`` is v5e);
- the module itself: only XLA:GPU forms cuBLAS, cuDNN and Triton custom
  calls before layout assignment, only XLA:TPU writes tiles.

Seen on jaxlib 0.10.2 and 0.12.0.1 (XLA:CPU, XLA:GPU deviceless) and on
libtpu 0.0.50 (XLA:TPU deviceless); the tests make such dumps and read them.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

# The flag that makes XLA write the file our pass reads, beside --xla_dump_to.
PASS_FLAG = "--xla_dump_hlo_pass_re=layout-assignment"
BEFORE_SUFFIX = "before_layout-assignment.txt"

_PIPELINES = (
    ("HLO_passes_through_layout_assignment", "xla-cpu", "XLA:CPU"),
    ("layout_assignment", "xla-gpu", "XLA:GPU"),
    ("Layout_assignment", "xla-tpu", "XLA:TPU"),
)
# <prefix>.<NNNN>.<pipeline>.after_<pass>.before_layout-assignment.txt
_BEFORE_NAME = re.compile(r"^(?P<prefix>.+?)\.\d{4}\.(?P<pipeline>[A-Za-z_]+)\.after_[^/]*\.before_layout-assignment\.txt$")
_MODULE_PREFIX = re.compile(r"^(module_\d{4}\.[^.]+)\.")

# Files an XLA dump holds that are not layout assignment's input, by what their names contain.
_OTHER_FILES = (
    ("before_optimizations", "the module before XLA's HLO passes, which change it before layout assignment"),
    ("after_optimizations", "the module after all of XLA's passes, layouts and fusions decided"),
    ("buffer-assignment", "XLA's buffer assignment"),
    ("memory-usage-report", "XLA's memory report"),
    ("live-range", "XLA's buffer live ranges"),
    ("after_spmd_partitioner", "the module right after SPMD partitioning, before the passes that precede layout assignment"),
    ("before_config_assignment", "the module before XLA:GPU's backend config assignment"),
    ("thunk_sequence", "XLA:GPU's thunk sequence"),
    ("thunk_metadata", "XLA:GPU's thunk metadata"),
    ("autotune_results", "XLA:GPU's autotuning results"),
    ("gpu_target_config.pbtxt", "the GPU XLA compiled for (give it to --gpu)"),
    ("tpu_comp_env", "XLA:TPU's compilation environment"),
    ("debug_options", "XLA's debug options"),
)
_OTHER_SUFFIXES = (".ll", ".ptx", ".o", ".pb", ".pbtxt", ".json", ".dot", ".html")


@dataclass(frozen=True)
class DumpOrigin:
    """Which XLA wrote a dump: a target name, the GPU (a shipped name or a config file) or
    TPU generation it compiled for where a file says so, and why."""

    target: str
    gpu: str | None
    evidence: str
    tpu: str | None = None


def wrong_file(path: str) -> str | None:
    """Why ``path`` is an XLA dump file other than layout assignment's input, naming the right
    one; None when it may be the right file (or is no dump file at all)."""
    base = os.path.basename(path)
    if base.endswith(BEFORE_SUFFIX):
        return None
    what = next((why for key, why in _OTHER_FILES if key in base), None)
    if what is None and not (base.startswith("module_") and base.endswith(_OTHER_SUFFIXES)):
        return None
    what = what or "a file XLA wrote beside its HLO dumps"
    befores = _siblings(path, BEFORE_SUFFIX)
    if befores:
        use = f"use {befores[0]}, the module layout assignment reads"
    else:
        use = (f"use the module layout assignment reads (*{BEFORE_SUFFIX}), which XLA writes with "
               f"{PASS_FLAG} beside --xla_dump_to")
    return f"is {what}, not layout assignment's input: {use}"


def folder_without_before_dumps(folder: str) -> str:
    """The one line for a dump folder that holds no layout-assignment input."""
    modules = sorted({m.group(1) for f in os.listdir(folder) if (m := _MODULE_PREFIX.match(f))})
    if modules:
        return (f"is an XLA dump of {len(modules)} module(s) without layout assignment's input "
                f"(*{BEFORE_SUFFIX}): dump again with {PASS_FLAG} beside --xla_dump_to")
    return f"is a directory without XLA dumps (*{BEFORE_SUFFIX}; XLA writes them with {PASS_FLAG})"


def origin(path: str, head: str) -> DumpOrigin | None:
    """Which XLA wrote the dump at ``path`` (``head``: the start of its text), or None where
    nothing tells.  The GPU of an XLA:GPU dump is None where no file beside it names it."""
    base = os.path.basename(path)
    found = None
    m = _BEFORE_NAME.match(base)
    if m:
        found = next(((t, n) for p, t, n in _PIPELINES if p == m.group("pipeline")), None)
        if found:
            evidence = f"its file name's pass pipeline, {m.group('pipeline')}"
    if found is None:
        found, evidence = _from_siblings(path)
    if found is None:
        found, evidence = _from_text(head)
    if found is None:
        return None
    target, name = found
    gpu = tpu = None
    if target == "xla-gpu":
        gpu, how = _gpu_of(path)
        if how:
            evidence += f"; {how}"
    if target == "xla-tpu":
        tpu, how = _tpu_of(path)
        if how:
            evidence += f"; {how}"
    return DumpOrigin(target, gpu, f"{name} dump ({evidence})", tpu)


def _siblings(path: str, suffix: str) -> list[str]:
    """The files beside ``path`` of the same compiled module whose names end in ``suffix``."""
    folder, base = os.path.split(path)
    m = _MODULE_PREFIX.match(base)
    if not m:
        return []
    return sorted(glob.glob(os.path.join(glob.escape(folder or "."), glob.escape(m.group(1)) + ".*" + suffix)))


def _from_siblings(path: str) -> tuple[tuple[str, str] | None, str]:
    checks = (("cpu_after_optimizations.txt", "xla-cpu", "XLA:CPU"),
              ("gpu_after_optimizations.txt", "xla-gpu", "XLA:GPU"),
              ("gpu_target_config.pbtxt", "xla-gpu", "XLA:GPU"),
              ("tpu_comp_env.txt", "xla-tpu", "XLA:TPU"))
    for suffix, target, name in checks:
        got = _siblings(path, suffix)
        if got:
            return (target, name), f"{os.path.basename(got[0])} beside it"
    return None, ""


_GPU_CALLS = re.compile(r'custom_call_target="__(cublas|cudnn|triton)')
_TILES = re.compile(r"\{[\d,]*:T\(\d")


def _from_text(head: str) -> tuple[tuple[str, str] | None, str]:
    if not re.match(r"\s*HloModule\b", head):
        return None, ""  # StableHLO's custom calls and layout modes are the user's, not a backend's
    m = _GPU_CALLS.search(head)
    if m:
        return ("xla-gpu", "XLA:GPU"), f"its __{m.group(1)} custom calls, which only XLA:GPU forms"
    if _TILES.search(head):
        return ("xla-tpu", "XLA:TPU"), "its tiled layouts, which only XLA:TPU writes"
    return None, ""


def _gpu_of(path: str) -> tuple[str | None, str]:
    """The GPU an XLA:GPU dump was compiled for: the config XLA wrote beside it (a shipped
    name where it describes that GPU exactly, else the file itself), or None."""
    configs = _siblings(path, "gpu_target_config.pbtxt")
    if not configs:
        return None, ""
    from stablehlo_layout.targets.gpu_config import load_gpu, shipped_gpus

    def facts(m):  # the device as XLA:GPU's layout decisions and our reports read it
        return (m.description, m.platform, m.compute_capability, m.rocm_arch)

    dumped = load_gpu(configs[0])
    name = next((n for n in shipped_gpus() if facts(load_gpu(n)) == facts(dumped)), configs[0])
    return name, f"its GPU from {os.path.basename(configs[0])}: {dumped.label if name == configs[0] else name}"


_TPU_VERSION = re.compile(r"^\s*version:\s*(\w+)", re.M)
_TPU_VARIANT = re.compile(r'^\s*variant:\s*"([^"]*)"', re.M)


def _tpu_of(path: str) -> tuple[str | None, str]:
    """The TPU generation an XLA:TPU dump was compiled for, from the ``target_arguments.txt``
    libtpu writes beside it (its chip version and variant), or None."""
    found = _siblings(path, "target_arguments.txt")
    if not found:
        return None, ""
    try:
        with open(found[0], errors="replace") as f:
            text = f.read(1 << 16)
    except OSError:
        return None, ""
    version, variant = _TPU_VERSION.search(text), _TPU_VARIANT.search(text)
    if version is None:
        return None, ""
    from stablehlo_layout.targets.xla_tpu import GENERATIONS

    chip = (version.group(1), variant.group(1) if variant else "")
    gen = next((g for g, names in GENERATIONS.items() if names == chip), None)
    what = f"{chip[0]}" + (f' variant "{chip[1]}"' if chip[1] else "")
    if gen is None:
        return None, f"{os.path.basename(found[0])} names a chip we do not model ({what})"
    return gen, f"its generation from {os.path.basename(found[0])}: {what} is {gen}"
