"""XLA:GPU's compiler as the oracle, deviceless: compile for a described GPU, keep the dumps.

No GPU, driver or CUDA wheel is needed: the ``jax-cuda12-plugin`` /
``jax-cuda12-pjrt`` packages (the ``gpu-oracle`` test extra) carry XLA:GPU's
whole compiler, and ``jax.experimental.topologies`` gives a device for a GPU
described by a ``GpuTargetConfigProto`` (XLA's own format; the configs ship in
``stablehlo_layout/targets/gpus/``).  A program compiled for that device writes the
same ``before_layout-assignment`` / ``after_layout-assignment`` dumps as on
real hardware.

``oracle_available()`` says whether the plugin is installed (and why not);
``run_gpu_oracle(program, gpu, out_dir)`` compiles one ``programs.Program``
for ``gpu`` (a shipped name such as ``a100`` or a config file) and stores the
dumps as ``oracle.run_oracle`` does for XLA:CPU.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from tests.support import ROOT

from .oracle import compile_on_device, OracleResult, _short, _skip_reason, find_dumps, finish, keep_dumps

# Bump when the way programs are compiled for the GPU changes (it keys the dump cache).
GPU_ORACLE_VERSION = 1

SHIPPED_CONFIGS = os.path.join(ROOT, "stablehlo_layout", "targets", "gpus")

def oracle_available() -> tuple[bool, str]:
    """(True, "") when XLA:GPU's compiler can be loaded here; else (False, why not)."""
    from stablehlo_layout.xla.gpu_deviceless import plugin_available, plugin_version_mismatch

    if not plugin_available():
        return False, ("XLA:GPU's compiler (jax-cuda12-plugin / jax-cuda12-pjrt) is not installed; "
                       "install the test extra: pip install -e '.[gpu-oracle]'")
    mismatch = plugin_version_mismatch()
    if mismatch:
        return False, mismatch
    return True, ""


def config_path(gpu: str) -> str:
    """The GpuTargetConfigProto text file for ``gpu``: a shipped name or a path."""
    if os.sep not in gpu and "/" not in gpu and not gpu.endswith(".txtpb"):
        path = os.path.join(SHIPPED_CONFIGS, f"{gpu}.txtpb")
        if os.path.isfile(path):
            return path
        raise FileNotFoundError(f"no GPU config named {gpu!r} in {SHIPPED_CONFIGS}")
    if not os.path.isfile(gpu):
        raise FileNotFoundError(f"no such GPU config file {gpu!r}")
    return gpu


def gpu_name(gpu: str) -> str:
    """The short name a config goes by in reports and cache paths."""
    base = os.path.basename(gpu)
    return base[:-len(".txtpb")] if base.endswith(".txtpb") else base


def gpu_device(gpu: str) -> Any:
    """A deviceless XLA:GPU device for ``gpu`` (the package's: one topology per config and process)."""
    ok, why = oracle_available()
    if not ok:
        raise RuntimeError(why)
    from stablehlo_layout.xla.gpu_deviceless import deviceless_device

    with open(config_path(gpu)) as f:
        return deviceless_device(f.read())


def formats_for(program: Any, device: Any) -> tuple[Any, Any]:
    """``program``'s layout pins as jit shardings on ``device`` (Program.formats is CPU's)."""
    from jax.sharding import SingleDeviceSharding

    from .programs import layout_format

    sharding = SingleDeviceSharding(device)
    ins = tuple(layout_format(s, sharding, sharding) for s in program.in_layouts)
    if getattr(program, "out_layouts", None) is None:
        return ins, None  # a model program leaves its results to JAX's defaults
    outs = tuple(layout_format(s, sharding, sharding) for s in program.out_layouts)
    return ins, (outs[0] if program.single_output else outs)


def compile_for_gpu(fn: Any, args: list[Any], gpu: str, dump_dir: str,
                    in_shardings: Any = None, out_shardings: Any = None) -> str:
    """Lower and compile ``fn`` for ``gpu`` with layout-assignment dumps in ``dump_dir``.

    Returns "" or the error XLA raised in a pass after layout assignment (the
    dumps are complete then); an error before that propagates.
    """
    return compile_on_device(fn, args, gpu_device(gpu), dump_dir, in_shardings, out_shardings)


def run_gpu_oracle(program: Any, gpu: str, out_dir: str) -> OracleResult:
    """Compile ``program`` for ``gpu`` deviceless; keep before/after dumps in ``out_dir``."""
    os.makedirs(out_dir, exist_ok=True)
    res = OracleResult("skipped", program={**program.describe(), "gpu": gpu_name(gpu)})
    start = time.perf_counter()
    dump = tempfile.mkdtemp(prefix="xla_gpu_dump_", dir=os.environ.get("DIFFERENTIAL_TMP"))
    try:
        try:
            device = gpu_device(gpu)
            ins, outs = formats_for(program, device)
        except Exception as e:
            res.reason = f"format: {_short(e)}"
            return res
        try:
            res.jax_error = compile_for_gpu(program.fn, program.args, gpu, dump, ins, outs)
        except Exception as e:
            res.reason = f"lowering refused: {_short(e)[:160]}"
            return res
        before, after = find_dumps(dump, program.name)
        if before is None or after is None:
            reason = _skip_reason(Exception(res.jax_error)) if res.jax_error else "no layout-assignment dumps"
            res.reason = f"no dumps ({reason}: {res.jax_error[:120]})" if res.jax_error else reason
            return res
        return keep_dumps(res, before, after, out_dir)
    finally:
        finish(res, start, dump, out_dir)
