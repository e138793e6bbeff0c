"""XLA:GPU's compiler for a GPU that is not there: its plugin, a device for a described GPU, what verify reads.

XLA:GPU's whole compiler runs deviceless for a device described by a
``GpuTargetConfigProto`` (the configs in ``stablehlo_layout/gpus/``): the
``jax-cuda12-plugin`` / ``jax-cuda12-pjrt`` packages carry it (the
``gpu-oracle`` extra; no driver, no CUDA wheels), and
``jax.experimental.topologies`` turns a config into a device to compile for
(``deviceless_device``; ``compile.compile_module`` compiles for it too).
``analyze(..., target="xla-gpu", verify=True)`` uses this to hold our answer
against XLA:GPU's own; the compile itself, its dumps included, is
``dumps.run_to_layout_assignment``'s.

What comes back (``XlaGpuCompilation``): the entry layouts XLA:GPU compiled
with, and every copy its layout assignment added (from the
``before_layout-assignment`` / ``after_layout-assignment`` dumps: a ``copy`` in
the after dump that the before dump does not have), with the layouts it
copies between.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stablehlo_layout.model.errors import PassError

Layout = tuple[int, ...]

# XLA:GPU's compiler comes as a JAX plugin; either CUDA major version's works deviceless.
# Each plugin module with the distributions that carry it; both must be of jaxlib's own version.
PLUGIN_DISTRIBUTIONS = {"jax_plugins.xla_cuda12": ("jax-cuda12-pjrt", "jax-cuda12-plugin"),
                        "jax_plugins.xla_cuda13": ("jax-cuda13-pjrt", "jax-cuda13-plugin")}
PLUGIN_MODULES = tuple(PLUGIN_DISTRIBUTIONS)
INSTALL_HINT = ("pip install 'stablehlo-layout[xla-gpu]' (jax-cuda12-plugin and jax-cuda12-pjrt of the "
                "installed jaxlib's version; the gpu-oracle test extra is the same)")


@dataclass(frozen=True)
class XlaCopy:
    """One copy XLA:GPU's layout assignment added."""

    name: str  # the copy instruction, e.g. "copy.3"
    operand: str  # the instruction it copies
    shape: str  # element type and dims, e.g. "f32[2,4,8,8]"
    src: Layout | None  # the operand's layout (minor_to_major)
    dst: Layout  # the copy's layout
    line: str  # the copy's line in the after dump


@dataclass
class XlaGpuCompilation:
    gpu: str  # the GPU model's label, e.g. "a100 (sm_8.0, cuDNN 8.9.4)"
    entry_params: list[Layout | None]
    entry_results: list[Layout | None]
    copies: list[XlaCopy] = field(default_factory=list)
    late_error: str = ""  # a pass after layout assignment failed deviceless (the dumps are complete)


def plugin_available() -> bool:
    """Whether XLA:GPU's compiler plugin is installed (looked up, not loaded: loading starts CUDA probing)."""
    import importlib.util

    for module in PLUGIN_MODULES:
        try:
            if importlib.util.find_spec(module) is not None:
                return True
        except ModuleNotFoundError:  # not even the jax_plugins namespace is there
            return False
    return False


def plugin_version_mismatch() -> str:
    """"" when the installed XLA:GPU plugin is of jaxlib's version, else one line saying which differs.

    A plugin of another version is another XLA, and jax loads it without asking
    (its C API may not even match): its layouts would answer for the wrong XLA.
    """
    import importlib.metadata as md
    import importlib.util

    jaxlib = md.version("jaxlib")
    for module, dists in PLUGIN_DISTRIBUTIONS.items():
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:
            return ""
        for dist in dists:
            try:
                found = md.version(dist)
            except md.PackageNotFoundError:
                continue
            if found != jaxlib:
                return (f"XLA:GPU's plugin {dist} {found} does not match jaxlib {jaxlib}: "
                        f"pip install '{dist}=={jaxlib}' (or {INSTALL_HINT.removeprefix('pip install ')})")
    return ""


_DEVICES: dict[str, Any] = {}


def deviceless_device(config_text: str) -> Any:
    """XLA:GPU's device for the GPU that ``config_text`` (a GpuTargetConfigProto) describes.

    One topology per config and process.  jaxlib's own exception comes
    through when the plugin refuses the config or did not load; callers word it.
    """
    if config_text not in _DEVICES:
        from jax.experimental import topologies

        topology = topologies.get_topology_desc(platform="cuda", target_config=config_text, topology="1x1x1")
        _DEVICES[config_text] = topology.devices[0]
    return _DEVICES[config_text]


def gpu_device(gpu: Any) -> tuple[Any, str]:
    """A deviceless XLA:GPU device for ``gpu``: a shipped name, a config file, None (the default) or a GpuModel."""
    from stablehlo_layout.targets import load_gpu
    from stablehlo_layout.targets.gpu_config import GpuModel

    model = gpu if isinstance(gpu, GpuModel) else load_gpu(gpu)
    if not plugin_available():
        raise PassError(f"verify=True with target xla-gpu compiles with XLA:GPU, which is not installed: {INSTALL_HINT}")
    mismatch = plugin_version_mismatch()
    if mismatch:
        raise PassError(mismatch)
    if model.platform != "cuda":
        raise PassError(f"verify=True with target xla-gpu compiles for CUDA GPUs only; {model.label} is not one")
    try:
        return deviceless_device(model.text), model.label
    except Exception as e:  # jaxlib refused the config or the plugin did not load
        raise PassError(f"XLA:GPU cannot compile for {model.label}: {str(e).splitlines()[0][:200]}") from None


def on_device(formats: Any, device: Any) -> Any:
    """``formats`` (a pytree of jax ``Format`` / None) with every sharding moved to ``device``."""
    import jax
    from jax.experimental.layout import Format
    from jax.sharding import SingleDeviceSharding

    sharding = SingleDeviceSharding(device)

    def move(f: Any) -> Any:
        if isinstance(f, Format):
            return Format(f.layout, sharding)
        return sharding if f is None else f

    return jax.tree.map(move, formats, is_leaf=lambda x: x is None or isinstance(x, Format))


def compile_deviceless(jitted_for: Any, structs: list[Any], in_formats: Any, out_formats: Any,
                       gpu: Any) -> XlaGpuCompilation:
    """Compile for ``gpu``; ``jitted_for(in_formats, out_formats)`` builds the ``jax.jit`` object."""
    import jax
    from jax.sharding import SingleDeviceSharding

    from stablehlo_layout.xla import dumps as xla_dumps

    device, label = gpu_device(gpu)
    sharding = SingleDeviceSharding(device)
    args = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), structs)
    lowered = jitted_for(on_device(in_formats, device), on_device(out_formats, device)).lower(*args)
    dumps = xla_dumps.run_to_layout_assignment(lambda flags: lowered.compile(compiler_options=flags))
    late = ""
    if dumps.failure is not None:  # e.g. Triton tiling without autotuning, after layout assignment
        e = dumps.failure
        late = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}" if str(e) else type(e).__name__
    if dumps.before is None or dumps.after is None:
        raise PassError(f"XLA:GPU ({label}) failed before layout assignment: {late or 'no dumps written'}")
    params, results = entry_layouts(dumps.after)
    if dumps.result is not None:
        params, results = _formats_layouts(dumps.result.input_formats[0]), _formats_layouts(dumps.result.output_formats)
    return XlaGpuCompilation(label, params, results, added_copies(dumps.before, dumps.after), late)


def _formats_layouts(formats: Any) -> list[Layout | None]:
    import jax
    from jax.experimental.layout import Format

    from stablehlo_layout.model import layout as L

    out: list[Layout | None] = []
    for f in jax.tree.leaves(formats, is_leaf=lambda x: x is None or isinstance(x, Format)):
        m2m = getattr(getattr(f, "layout", None), "major_to_minor", None)
        out.append(None if m2m is None else L.from_major_to_minor(m2m))
    return out


# -- reading the dumps ----------------------------------------------------------------------

_INSTR = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\([^=]*?\)|[a-z][a-z0-9]*\[[^\]]*\](?:\{[^}]*\})?) "
                    r"([a-z][\w\-]*)\(([^)]*)\)")
_ARRAY = re.compile(r"([a-z][a-z0-9]*\[[^\]]*\])(?:\{([^}]*)\})?")


def _layout(text: str | None) -> Layout | None:
    if text is None:
        return None
    body = text.split(":", 1)[0]
    return tuple(int(x) for x in body.split(",") if x.strip())


def _array_layout(m: re.Match[str]) -> Layout | None:
    """The layout of a matched array shape; HLO text prints none for a scalar."""
    if m.group(2) is not None:
        return _layout(m.group(2))
    return () if m.group(1).endswith("[]") else None


def added_copies(before_text: str, after_text: str) -> list[XlaCopy]:
    """The copies in ``after_text`` that ``before_text`` does not have, with both layouts."""
    return copies_in(after_text, {m.group(1) for m in map(_INSTR.match, before_text.splitlines()) if m})


def copies_in(after_text: str, before_names: set[str] | frozenset[str] = frozenset()) -> list[XlaCopy]:
    """Every ``copy`` instruction of an HLO module's text not named in ``before_names``, with both layouts."""
    shapes: dict[str, tuple[str, Layout | None]] = {}
    copies: list[tuple[str, str, str]] = []
    for line in after_text.splitlines():
        m = _INSTR.match(line)
        if m is None:
            continue
        name, shape, opcode, operands = m.groups()
        a = _ARRAY.fullmatch(shape)
        if a is not None:
            shapes[name] = (a.group(1), _array_layout(a))
        elif shape.startswith("(") and "(" not in shape[1:]:
            # XLA 0.11+ prints a tuple element as the operand `%t#i`, without a get-tuple-element.
            for i, e in enumerate(_ARRAY.finditer(shape)):
                shapes[f"{name}#{i}"] = (e.group(1), _array_layout(e))
        if opcode == "copy" and name not in before_names:
            copies.append((name, operands.strip().lstrip("%"), line.strip()))
    out = []
    for name, operand, line in copies:
        shape, dst = shapes.get(name, ("?", None))
        _, src = shapes.get(operand, ("?", None))
        out.append(XlaCopy(name, operand, shape, src, dst or (), line))
    return out


def entry_layouts(after_text: str) -> tuple[list[Layout | None], list[Layout | None]]:
    """Entry parameter and result layouts from the HloModule line's ``entry_computation_layout``."""
    header = after_text.split("\n", 1)[0]
    start = header.find("entry_computation_layout={")
    if start < 0:
        return [], []
    body = header[start + len("entry_computation_layout={"):]
    params_text, _, result_text = body.partition(")->")
    params = [_array_layout(m) for m in _ARRAY.finditer(params_text)]
    results = [_array_layout(m) for m in _ARRAY.finditer(result_text.rsplit("}", 1)[0])]
    return params, results
