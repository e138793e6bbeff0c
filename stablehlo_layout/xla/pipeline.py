"""XLA's own pipeline up to layout assignment: the module XLA is about to lay out.

A raw StableHLO module (a ``jax.export`` artifact, a lowered JAX function) is
not what XLA lays out: XLA first runs its HLO passes (simplification, on GPU
the cuDNN rewrites and conv+bias fusion, ...).  ``compile_module`` hands the
module to XLA's compiler for the target, as ``jax.jit(f).compile()`` would,
with ``xla_dump_hlo_pass_re=layout-assignment`` in that one compile's debug
options, and returns the HLO text XLA dumps right before its layout
assignment (and right after it, which is XLA's own answer).

jaxlib has no way to hand back an intermediate module in process, so the
dump goes to a temporary folder that is removed before this returns, on
errors and interrupts too.

- XLA:CPU: jaxlib's CPU client.
- XLA:GPU: deviceless, for a described GPU (a ``GpuTargetConfigProto``), through
  the CUDA plugin's compile-only client.  The plugin packages are an optional
  extra; without them the error says what to install.
- XLA:TPU: deviceless, for a generation's topology, through libtpu in a child
  process (``tpu_deviceless.py``; the ``xla-tpu`` extra).

Entry layouts: the compile sees the layouts the input pins, as ``mhlo.layout_mode``
on the entry function (jaxlib's clients read nothing else): pins given as
module attributes are copied there, ``"auto"`` (and, with free entry layouts,
anything left unstated) stays open for XLA to choose.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from stablehlo_layout.ir.entry_modes import entry_function
from stablehlo_layout.ir.sharding import entry_shardings
from stablehlo_layout.model import layout as L
from stablehlo_layout.model.errors import InputError
from stablehlo_layout.xla import dumps as xla_dumps
from stablehlo_layout.xla import partitioned
from stablehlo_layout.xla.gpu_deviceless import (
    INSTALL_HINT,
    deviceless_device,
    plugin_available,
    plugin_version_mismatch,
)

if TYPE_CHECKING:
    from jaxlib.mlir import ir

# jaxlib is imported only inside the functions that need it: a command must
# be able to set jax's environment (``prepare_environment``) before jaxlib's
# runtime loads and reads it.

__all__ = ["COMPILE_TARGETS", "Compiled", "GPU_EXTRA_HINT", "backend_of", "check_target",
           "compile_module", "gpu_options", "prepare_environment",
           "with_entry_layout_modes"]

# The targets that name an XLA backend whose pipeline can be run.
COMPILE_TARGETS = ("xla-cpu", "xla-gpu", "xla-tpu")

GPU_EXTRA_HINT = INSTALL_HINT


@dataclass(frozen=True)
class Compiled:
    """XLA's module around its layout assignment, as HLO text (metadata included)."""

    before: str  # the module layout assignment receives
    after: str | None  # the module it returns: XLA's own layouts and copies
    backend: str  # "XLA:CPU", or "XLA:GPU (<device description>)"
    note: str | None = None  # XLA failed after layout assignment: its message
    # The before module's HloProto (XLA:CPU): its instruction ids give XLA's instruction
    # list order (``ir.hlo_proto``), which the text has lost; hand it to ``mlir.load``.
    before_proto: bytes | None = None


# --------------------------------------------------------------------------
# Entry layouts as the compile must see them


def _mode_text(mode: Any, rank: int, entry_layouts: str) -> str | None:
    """The ``mhlo.layout_mode`` string XLA's client should see for one entry leaf."""
    if mode == "auto":
        return "auto"
    if isinstance(mode, tuple):
        return L.format_layout(mode) if rank else None
    # Unstated: the default layout, or open with free entry layouts.
    return "auto" if entry_layouts == "free" and rank else None


def with_entry_layout_modes(module: ir.Module, entry_layouts: str) -> ir.Module:
    """A clone of ``module`` whose entry function states every entry layout as XLA's client reads it."""
    from jaxlib.mlir import ir

    from stablehlo_layout.ir.importer import import_module

    # The importer already knows every way an input states entry layouts
    # (mhlo.layout_mode, module attributes, layouts this tool chose earlier).
    graph, _ = import_module(module.operation.clone())
    clone = ir.Module.parse(module.operation.get_asm(binary=True, enable_debug_info=True),  # type: ignore[call-overload]
                            module.context)  # jaxlib types get_asm as object
    f = entry_function(clone)
    comp = graph.comps[graph.entry]  # type: ignore[index]
    params = [graph.values[graph.instrs[p].results[0]] for p in comp.params]
    results = [graph.values[v] for v in graph.instrs[comp.root].operands]
    with clone.context:
        for key, values, modes in (("arg_attrs", params, graph.entry_param_modes),
                                   ("res_attrs", results, graph.entry_result_modes)):
            existing = list(ir.ArrayAttr(f.attributes[key])) if key in f.attributes else []
            entries = []
            for i, v in enumerate(values):
                d = ir.DictAttr(existing[i]) if i < len(existing) else ir.DictAttr.get({})
                attrs = {d[k].name: d[k].attr for k in range(len(d))}
                attrs.pop("stablehlo_layout.chosen", None)
                attrs.pop("mhlo.layout_mode", None)
                text = _mode_text(modes[i], v.rank, entry_layouts) if v.is_array else None
                if text is not None:
                    attrs["mhlo.layout_mode"] = ir.StringAttr.get(text)
                entries.append(ir.DictAttr.get(attrs))
            if entries:
                f.attributes[key] = ir.ArrayAttr.get(entries)
        for key in ("mhlo.xla_entry_computation_parameter_layouts", "mhlo.xla_entry_computation_result_layout"):
            if key in clone.operation.attributes:
                del clone.operation.attributes[key]
    return clone


_POSITION = re.compile(r'loc\("[^"]*":(\d+):(\d+)\)')


def _check_ops_known(module: ir.Module, path: str) -> None:
    """Refuse ops of dialects no jaxlib knows: XLA's converter crashes on them instead of saying so."""
    from stablehlo_layout.ir.mlir import nested_ops

    context = module.context
    for op in nested_ops(module.operation):
        if not context.is_registered_operation(op.name):
            m = _POSITION.match(str(op.location))
            line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
            raise InputError(path, f"XLA cannot compile '{op.name}': an op of a dialect XLA does not know",
                             line, col)


def _check_single_platform(module: ir.Module, path: str) -> None:
    """A multi-platform export branches on a platform index argument that only ``Exported.call`` supplies.

    Compiled as it is, XLA would lay out every platform's branch, not the
    program it runs; say so rather than answer for the wrong program.
    """
    from jaxlib.mlir import ir

    f = entry_function(module)
    if "arg_attrs" not in f.attributes:
        return
    for d in ir.ArrayAttr(f.attributes["arg_attrs"]):
        d = ir.DictAttr(d)
        if "jax.global_constant" in d and ir.StringAttr(d["jax.global_constant"]).value == "_platform_index":
            raise InputError(path, "a jax.export for several platforms (its @main takes the platform index): "
                                   "--as-compiled needs one exported for the target's platform alone, e.g. "
                                   "jax.export.export(f, platforms=['cpu'])")


def _xla_message(error: BaseException) -> str:
    """XLA's own message, one line: its first non-blank line, without the status code."""
    lines = [x.strip() for x in str(error).splitlines() if x.strip()]
    text = lines[0] if lines else type(error).__name__
    return re.sub(r"^[A-Z_]+: ", "", text)


def _options(client: Any, device: Any, flags: dict[str, Any], n_params: int, n_results: int) -> Any:
    """The compile options jax.jit would use for one device, with the debug options ``flags``."""
    from jax._src import compiler

    options = compiler.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=[device],
                                           backend=client)
    build = options.executable_build_options
    # What jit passes for arguments and results without a sharding.
    build.allow_spmd_sharding_propagation_to_parameters = [True] * max(n_params, 1)
    build.allow_spmd_sharding_propagation_to_output = [True] * max(n_results, 1)
    for name, value in flags.items():
        setattr(build.debug_options, name, value)
    return options


def _cpu_client() -> tuple[Any, Any]:
    import jax

    try:
        device = jax.devices("cpu")[0]
        return device.client, device
    except RuntimeError as e:
        raise InputError("stablehlo-layout", f"cannot reach XLA:CPU through jaxlib: {_xla_message(e)}") from None


def backend_of(target: Any) -> str:
    """The XLA backend whose pipeline a target object stands for: its own, or that of the target it derives from."""
    from stablehlo_layout.targets import XlaCpuTarget, XlaGpuTarget, XlaTpuTarget

    if isinstance(target, XlaGpuTarget):
        return "xla-gpu"
    if isinstance(target, XlaTpuTarget):
        return "xla-tpu"
    if isinstance(target, XlaCpuTarget):
        return "xla-cpu"
    return getattr(target, "name", str(target))


def lowering_platforms(backend: str) -> list[str] | None:
    """The platforms JAX lowers a function for so that ``backend``'s XLA compiles it (None: JAX's default)."""
    return {"xla-gpu": ["cuda"], "xla-tpu": ["tpu"]}.get(backend)


def check_target(target: str) -> None:
    """``--as-compiled`` needs a target that names an XLA backend."""
    if target not in COMPILE_TARGETS:
        raise InputError("stablehlo-layout", f"--as-compiled runs XLA's own pipeline: give --target "
                                             f"{', '.join(COMPILE_TARGETS[:-1])} or {COMPILE_TARGETS[-1]} "
                                             f"(not {target!r})")


def prepare_environment(target: str = "") -> None:
    """For a command line process, before anything loads jaxlib's runtime: start jax quietly.

    Every compile here is for a described target, never for a device of this
    machine, so jax need not look for GPUs; the CUDA plugin, when XLA:GPU is
    wanted, must register without one (deviceless compiles).  Where the CUDA
    plugin is installed, loading it writes driver-probe log lines straight to
    file descriptor 2 on every machine without a GPU; they are held back here
    so that a command's stderr carries only what the command says.
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # only the CUDA plugin reads it
    start_jax_quietly(_start_jax)


def start_jax_quietly(start: Callable[[], None]) -> None:
    """Run ``start`` (which imports jax) with its start-up log lines held back from stderr.

    XLA's INFO lines ("dump enabled ...") obey TF_CPP_MIN_LOG_LEVEL; the CUDA
    plugin's driver probe writes to file descriptor 2 before logging is set
    up, on every machine without a GPU, so the descriptor itself is parked.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    quietly(start)


def quietly(work: Callable[[], Any]) -> Any:
    """``work()`` with file descriptor 2 parked: what XLA's C++ logs meanwhile
    (its "HloModule dump enabled" line, whose level was read before the
    command could set TF_CPP_MIN_LOG_LEVEL) never reaches the user's stderr.
    Errors come back as exceptions, with XLA's own message."""
    import sys

    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to keep clean
        saved = -1
    if saved < 0:
        return work()
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                return work()
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _start_jax() -> None:
    try:
        import jax

        jax.devices("cpu")
    except Exception as e:
        raise InputError("stablehlo-layout", f"jax failed to start: {_xla_message(e)}") from None


def gpu_options(target: Any) -> dict[str, Any]:
    """``compile_module``'s device arguments from a target object that carries a GPU model
    or a TPU generation."""
    generation = getattr(target, "generation", None)
    if isinstance(generation, str):
        return {"tpu": generation}
    gpu = getattr(target, "gpu", None)
    if gpu is None or not getattr(gpu, "text", ""):
        return {}
    return {"gpu_config": gpu.text, "gpu_label": getattr(gpu, "label", "") or getattr(gpu, "name", "")}


def _gpu_client(path: str, gpu_config: str | None, gpu_label: str) -> tuple[Any, Any]:
    if gpu_config is None:
        raise InputError(path, "--as-compiled --target xla-gpu needs the GPU to compile for (--gpu)")
    if not plugin_available():
        raise InputError("stablehlo-layout",
                         f"--as-compiled --target xla-gpu needs XLA:GPU's compiler: {GPU_EXTRA_HINT}")
    mismatch = plugin_version_mismatch()
    if mismatch:  # another XLA's compiler would answer for the wrong XLA
        raise InputError("stablehlo-layout", mismatch)
    try:
        device = deviceless_device(gpu_config)
    except Exception as e:
        message = _xla_message(e)
        if "not implemented for cuda" in message or "Unknown backend" in message:
            raise InputError("stablehlo-layout",
                             "XLA:GPU's plugin did not load in this process (no CUDA here?): set "
                             f"JAX_PLATFORMS=cpu or JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 before jax starts ({message})"
                             ) from None
        raise InputError("stablehlo-layout", f"XLA:GPU refused the GPU description {gpu_label}: {message}") from None
    return device.client, device


def compile_module(module: ir.Module, path: str, target: str, entry_layouts: str = "default",
                   gpu_config: str | None = None, gpu_label: str = "", tpu: str | None = None,
                   quiet: bool = True) -> Compiled:
    """Run XLA's pipeline for ``target`` on ``module`` up to layout assignment.

    ``path`` names the input in errors.  ``gpu_config`` is the
    ``GpuTargetConfigProto`` text of the GPU to compile for (``xla-gpu``),
    ``tpu`` the generation (``xla-tpu``; v5e when omitted).
    Raises ``InputError`` with XLA's own message when XLA refuses the module.
    ``quiet`` parks file descriptor 2 for the compile (``quietly``); a caller
    that compiles from several threads at once parks it once around them all
    instead, as the descriptor is the process's.
    """
    check_target(target)
    from jax._src.lib import xla_client as xc
    from jaxlib.mlir import ir

    n = partitioned.partitions(module)
    if n > 1:
        partitioned.check_partitions(n, path)
    devices: list[Any] = []
    if target == "xla-cpu":
        client, device = _cpu_client()
        label = "XLA:CPU"
        if n > 1:
            devices = partitioned.cpu_devices(n) or []
            if not devices:  # jax started with fewer host devices: a child process makes N
                _check_ops_known(module, path)
                _check_single_platform(module, path)
                bytecode = cast(bytes, module.operation.get_asm(binary=True, enable_debug_info=True))
                before, after, note = partitioned.compile_cpu_in_child(bytecode, n, path, entry_layouts)
                return Compiled(before, after, f"XLA:CPU ({n} devices)", note)
            label = f"XLA:CPU ({n} devices)"
    elif target == "xla-tpu":
        from stablehlo_layout.targets.xla_tpu import DEFAULT_GENERATION
        from stablehlo_layout.xla import tpu_deviceless

        generation = tpu or DEFAULT_GENERATION
        client = device = None
        label = f"XLA:TPU {generation}"
        if n > 1:
            label = f"XLA:TPU {generation} ({n} chips)"
    else:
        client, device = _gpu_client(path, gpu_config, gpu_label)
        label = f"XLA:GPU ({device.device_kind})"
        if n > 1:
            assert gpu_config is not None  # _gpu_client refused it otherwise
            devices = partitioned.gpu_devices(gpu_config, n)
            client = devices[0].client
            label = f"XLA:GPU ({device.device_kind}, {n} devices)"
    _check_ops_known(module, path)
    _check_single_platform(module, path)
    program = with_entry_layout_modes(module, entry_layouts)
    f = entry_function(program)
    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)

    def compile(flags: dict[str, Any]) -> Any:
        if target == "xla-tpu":
            bytecode = program.operation.get_asm(binary=True, enable_debug_info=True)
            stated = entry_shardings(f)
            mesh = (n, [s is not None for s in stated[0]], [s is not None for s in stated[1]]) if n > 1 else None
            return tpu_deviceless.compile_in_child(cast(bytes, bytecode), generation, flags, len(ftype.inputs),
                                                   len(ftype.results), path, mesh)
        if target == "xla-cpu":
            flags = {**flags, "xla_dump_hlo_as_proto": True}  # the list order (Compiled.before_proto)
        if devices:
            options = partitioned.options(client, devices, flags, *entry_shardings(f))
            executable_devices = xc.DeviceList(tuple(devices))
        else:
            options = _options(client, device, flags, len(ftype.inputs), len(ftype.results))
            executable_devices = xc.DeviceList((device,))
        if target == "xla-cpu":
            # jaxlib's CPU client compiles only to load (it has no compile-only factory).
            return client.compile_and_load(program, executable_devices, options)
        # Deviceless: the plugin's compile-only client for a described GPU; nothing to load onto.
        return client.compile(program, executable_devices=executable_devices, compile_options=options)

    def run() -> xla_dumps.Dumps:
        return xla_dumps.run_to_layout_assignment(compile)

    dumps = quietly(run) if quiet else run()
    if dumps.before is None:
        what = _xla_message(dumps.failure) if dumps.failure is not None else \
            "it dumped no module before layout assignment"
        raise InputError(path, f"{label} refused to compile it: {what}")
    note = None
    if dumps.failure is not None:
        # A pass after layout assignment failed (deviceless XLA:GPU cannot
        # autotune, deviceless libtpu aborts in some late passes); what layout
        # assignment saw is complete.
        note = f"note: {label} failed after layout assignment: {_xla_message(dumps.failure)}"
    return Compiled(dumps.before, dumps.after, label, note, dumps.before_proto)
