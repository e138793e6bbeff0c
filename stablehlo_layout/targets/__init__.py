"""Backend targets: small objects that add constraints and may refine rules.

A target is chosen by name (``generic``, ``xla-cpu``, ``xla-gpu``), by a
file and class (``path/to/my_target.py:MyTarget``), or by the name of an
entry point in the ``stablehlo_layout.targets`` group that a package
registers (its value ``package.module:Class``).
"""

from __future__ import annotations

import importlib.util
import os

from ..errors import OptionError, PassError, UserTargetError
from .base import Target
from .generic import GenericTarget
from .xla_cpu import XlaCpuTarget
from .gpu_config import DEFAULT_GPU, GpuModel, load_gpu, shipped_gpus
from .xla_gpu import XlaGpuTarget

# The built-in targets by the name each class carries; the CLI and the pass
# accept these besides files and entry points.
_BUILTIN: dict[str, type[Target]] = {cls.name: cls for cls in (GenericTarget, XlaCpuTarget, XlaGpuTarget)}
TARGET_NAMES = tuple(_BUILTIN)
ENTRY_POINT_GROUP = "stablehlo_layout.targets"


def get_target(name: str, gpu: str | GpuModel | None = None) -> tuple[Target, str | None]:
    """The target for ``name`` and, when it is a stand-in, a warning to show.

    ``gpu`` (a shipped GPU name, a GpuTargetConfigProto text file, or a
    GpuModel) is the device of ``xla-gpu`` and of targets derived from it;
    any other target refuses it.
    """
    if name in _BUILTIN:
        return _instantiate(_BUILTIN[name], name, gpu), None
    path, sep, cls_name = name.rpartition(":")
    if sep and path.endswith(".py"):
        return _instantiate(_class_from_file(name, path, cls_name), name, gpu), None
    from importlib import metadata  # ~30 ms: only for names that are not built in

    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                cls = ep.load()
            except Exception as e:  # a broken plugin: say which and why, in one line
                raise PassError(f"target {name!r}: cannot load entry point {ep.value}: {e}") from None
            return _instantiate(cls, name, gpu), None
    raise PassError(f"unknown target {name!r} (expected one of: {', '.join(TARGET_NAMES)}, "
                    "FILE.py:Class, or an installed stablehlo_layout.targets entry point)")


def _class_from_file(name: str, path: str, cls_name: str) -> type:
    if not os.path.isfile(path):
        raise PassError(f"target {name!r}: no such file {path!r}")
    spec = importlib.util.spec_from_file_location(f"stablehlo_layout_user_target_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise PassError(f"target {name!r}: cannot load {path!r} as Python")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise PassError(f"target {name!r}: {path} failed to import: {type(e).__name__}: {e}") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise PassError(f"target {name!r}: {path} has no class {cls_name!r}")
    return cls


# The hooks the engine calls on a target (the methods of ``Target``).
_HOOKS = tuple(k for k, v in vars(Target).items() if callable(v) and not k.startswith("_"))


def _guard_hooks(target: Target, name: str) -> Target:
    """Make any failure inside a user target's own hooks one ``UserTargetError``.

    Only hooks the user's class defines itself are wrapped (the built-in ones
    it inherits are ours); SystemExit counts as a failure too, since a target
    has no business ending the command.  Ctrl-C passes through.
    """
    for hook in _HOOKS:
        owner = next((k for k in type(target).__mro__ if hook in vars(k)), None)
        if owner is None or owner.__module__.startswith("stablehlo_layout."):
            continue
        method = getattr(target, hook)

        def guarded(*args: object, _method=method, _hook=hook, **kwargs: object) -> object:
            try:
                return _method(*args, **kwargs)
            except (UserTargetError, KeyboardInterrupt):
                raise
            except BaseException as e:
                raise UserTargetError(f"target {name!r}: its hook {_hook} raised {type(e).__name__}"
                                      f"{': ' + str(e) if str(e) else ''}", e) from e

        setattr(target, hook, guarded)
    return target


def _instantiate(cls: object, name: str, gpu: str | GpuModel | None = None) -> Target:
    if not (isinstance(cls, type) and issubclass(cls, Target)):
        raise PassError(f"target {name!r}: {cls!r} is not a subclass of stablehlo_layout.targets.Target")
    if gpu is not None and not issubclass(cls, XlaGpuTarget):
        raise OptionError(f"--gpu {gpu if isinstance(gpu, str) else gpu.name}: a GPU model applies only to "
                          f"--target xla-gpu, not to target {name!r}")
    if issubclass(cls, XlaGpuTarget):
        model = gpu if isinstance(gpu, GpuModel) else load_gpu(gpu)  # bad configs fail here, in one line
        try:
            gpu_target = cls(gpu=model)
        except Exception as e:
            raise PassError(f"target {name!r}: constructing it failed: {type(e).__name__}: {e}") from None
        return gpu_target if name in _BUILTIN else _guard_hooks(gpu_target, name)
    try:
        target = cls()
    except Exception as e:
        raise PassError(f"target {name!r}: constructing it failed: {type(e).__name__}: {e}") from None
    if not getattr(target, "name", None) or target.name == "generic" and cls is not GenericTarget:
        target.name = name
    return target if name in _BUILTIN else _guard_hooks(target, name)


__all__ = ["Target", "GenericTarget", "XlaCpuTarget", "XlaGpuTarget", "get_target", "TARGET_NAMES",
           "ENTRY_POINT_GROUP", "GpuModel", "load_gpu", "shipped_gpus", "DEFAULT_GPU"]
