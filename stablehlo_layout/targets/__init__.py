"""Backend targets: small objects that return layout demands and may refine rules.

A target is chosen by name (``generic``, ``xla-cpu``, ``xla-gpu``, ``xla-tpu``), by a
file and class (``path/to/my_target.py:MyTarget``), or by the name of an
entry point in the ``stablehlo_layout.targets`` group that a package
registers (its value ``package.module:Class``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from stablehlo_layout.model import layout as L
from stablehlo_layout.model.constraints import Origin
from stablehlo_layout.targets.demands import BUFFER, FREE_OPERANDS, KINDS, OPERAND, RESULTS, Demand
from stablehlo_layout.model.errors import OptionError, PassError, UserTargetError
from stablehlo_layout.model.graph import shape_text
from stablehlo_layout.targets.base import Target
from stablehlo_layout.targets.generic import GenericTarget
from stablehlo_layout.targets.xla_cpu import XlaCpuTarget

if TYPE_CHECKING:
    from stablehlo_layout.model.graph import Value
    from stablehlo_layout.targets.gpu_config import DEFAULT_GPU, GpuModel, load_gpu, shipped_gpus
    from stablehlo_layout.targets.xla_gpu import XlaGpuTarget
    from stablehlo_layout.targets.xla_tpu import XlaTpuTarget

# The GPU target's rules and its GPU models (with their config-file parser)
# are imported on first use: a CPU or generic run never reads them, and they
# were a fifth of the command's start-up imports.
_LAZY = {"XlaGpuTarget": ".xla_gpu", "XlaTpuTarget": ".xla_tpu", "GpuModel": ".gpu_config", "load_gpu": ".gpu_config",
         "shipped_gpus": ".gpu_config", "DEFAULT_GPU": ".gpu_config"}
_GPU_MODULE = __name__ + ".xla_gpu"
_TPU_MODULE = __name__ + ".xla_tpu"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def _gpu_target_class() -> type[Target]:
    return importlib.import_module(_GPU_MODULE).XlaGpuTarget


def _tpu_target_class() -> type[Target]:
    return importlib.import_module(_TPU_MODULE).XlaTpuTarget


# The built-in targets by the name each class carries (a test holds them
# equal); the CLI and the pass accept these besides files and entry points.
_BUILTIN: dict[str, Callable[[], type[Target]]] = {
    GenericTarget.name: lambda: GenericTarget,
    XlaCpuTarget.name: lambda: XlaCpuTarget,
    "xla-gpu": _gpu_target_class,
    "xla-tpu": _tpu_target_class,
}
TARGET_NAMES = tuple(_BUILTIN)
ENTRY_POINT_GROUP = "stablehlo_layout.targets"


def get_target(name: str, gpu: str | GpuModel | None = None,
               tpu: str | None = None) -> tuple[Target, str | None]:
    """The target for ``name`` and, when it is a stand-in, a warning to show.

    ``gpu`` (a shipped GPU name, a GpuTargetConfigProto text file, or a
    GpuModel) is the device of ``xla-gpu`` and of targets derived from it;
    ``tpu`` (a generation: v4, v5e, v5p, v6e, tpu7x) that of ``xla-tpu`` and
    its subclasses; any other target refuses them.
    """
    if name in _BUILTIN:
        return _instantiate(_BUILTIN[name](), name, gpu, tpu), None
    path, sep, cls_name = name.rpartition(":")
    if sep and path.endswith(".py"):
        return _instantiate(_class_from_file(name, path, cls_name), name, gpu, tpu), None
    from importlib import metadata  # ~30 ms: only for names that are not built in

    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                cls = ep.load()
            except Exception as e:  # a broken plugin: say which and why, in one line
                raise PassError(f"target {name!r}: cannot load entry point {ep.value}: {e}") from None
            return _instantiate(cls, name, gpu, tpu), None
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


if TYPE_CHECKING:
    from stablehlo_layout.targets.view import TargetView

# The hooks the engine calls on a target (the methods of ``Target``).
_HOOKS = tuple(k for k, v in vars(Target).items() if callable(v) and not k.startswith("_"))
# The hook that let a target call into the engine, gone since targets return demands.
_OLD_HOOK = "add_backend_constraints"


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
        if hook == "backend_demands":
            setattr(target, hook, _guarded_demands(method, name))
            continue

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


def _guarded_demands(method: Callable[["TargetView", int], Iterable[Demand]],
                     name: str) -> Callable[["TargetView", int], Iterator[Demand]]:
    """A user target's ``backend_demands``, failing in one line and handing on only well-formed demands.

    The hook may be a generator: its own code runs while the engine iterates,
    so the guard covers each step of the iteration, not only the call.  The
    engine applies a demand before it asks for the next one (the generator
    stays suspended meanwhile), so an error of the engine's own is not
    blamed on the target.
    """
    hook = "backend_demands"

    def failed(e: BaseException) -> UserTargetError:
        return UserTargetError(f"target {name!r}: its hook {hook} raised {type(e).__name__}"
                               f"{': ' + str(e) if str(e) else ''}", e)

    def guarded(view: "TargetView", comp: int) -> Iterator[Demand]:
        try:
            demands = method(view, comp)
            if demands is None:
                raise TypeError("it returned None, not Demand objects (return an empty tuple for none)")
            it = iter(demands)
        except (UserTargetError, KeyboardInterrupt):
            raise
        except BaseException as e:
            raise failed(e) from e
        while True:
            try:
                d = next(it)
            except StopIteration:
                return
            except (UserTargetError, KeyboardInterrupt):
                raise
            except BaseException as e:
                raise failed(e) from e
            yield _checked_demand(d, view, name)

    return guarded


def _checked_demand(d: object, view: "TargetView", name: str) -> Demand:
    """The demand with its layouts interned, or one UserTargetError saying what is wrong with it.

    The engine trusts the built-in targets' demands; a user target's are
    checked here, so a wrong one names the target, not the input.
    """
    def bad(why: str) -> UserTargetError:
        e = ValueError(why)
        return UserTargetError(f"target {name!r}: its hook backend_demands made a bad demand: {why}", e)

    if not isinstance(d, Demand):
        raise bad(f"{d!r} is not a stablehlo_layout.targets.demands.Demand")
    g = view.graph
    if d.kind not in KINDS:
        raise bad(f"kind {d.kind!r} is none of {', '.join(KINDS)}")
    # An Origin, or the raw (rule, instr, parent, note) a built-in target's demands carry
    # (a user target that extends one passes those on); results need the Origin itself.
    o = d.origin
    if not isinstance(o, Origin) and (
            d.kind == RESULTS or not (isinstance(o, tuple) and len(o) == 4 and isinstance(o[0], str)
                                      and (o[1] is None or type(o[1]) is int)
                                      and (o[2] is None or isinstance(o[2], Origin)) and isinstance(o[3], str))):
        raise bad(f"the {d.kind} demand's origin must be a stablehlo_layout.model.constraints.Origin, not {o!r}")
    assert o is not None
    if d.priority is not None and not isinstance(d.priority, int):
        raise bad(f"priority {d.priority!r} is not an integer (or None for the round's)")

    def layout_for(v, lay: object, what: str) -> L.Layout:
        if not (isinstance(lay, (tuple, list)) and all(type(x) is int for x in lay)
                and sorted(lay) == list(range(v.rank))):
            raise bad(f"layout {lay!r} for {what} is not a permutation of the {v.rank} dimensions of {shape_text(v)}")
        return L.intern(lay)

    def operand(n: int) -> Value:
        ovs = view.operand_values(d.target)
        if not (isinstance(n, int) and 0 <= n < len(ovs)):
            raise bad(f"{where} has no operand {n!r}")
        return ovs[n]

    if d.kind == BUFFER:
        if not (isinstance(d.target, int) and 0 <= d.target < len(g.values)):
            raise bad(f"there is no value {d.target!r}")
        v = g.values[d.target]
        if not v.is_array or v.buffer != v.id:
            raise bad(f"value {d.target} ({shape_text(v)}) is not an array buffer of its own; demand its "
                      f"buffer {v.buffer} or the operand that reads it")
        return Demand.on_buffer(d.target, layout_for(v, d.layout, f"value {d.target}"), o,
                                bool(d.mandatory), bool(d.dfs), d.priority)
    if not (isinstance(d.target, int) and 0 <= d.target < len(g.instrs)) or g.instrs[d.target].op == "root":
        raise bad(f"there is no instruction {d.target!r} to demand of")
    where = f"instruction {d.target} ({g.instrs[d.target].op})"
    if d.kind == OPERAND:
        v = operand(d.operand)
        return Demand.on_operand(d.target, d.operand, layout_for(v, d.layout, f"operand {d.operand} of {where}"), o,
                                 bool(d.mandatory), bool(d.dfs), d.priority)
    if d.kind == RESULTS:
        leaves = view.leaves(d.target)
        if len(d.layouts) > len(leaves):
            raise bad(f"{len(d.layouts)} result layouts for {where}, which has {len(leaves)} results")
        if not d.dfs:
            raise bad("a results demand is always depth-first (XLA's SetInstructionLayout)")
        lays = tuple(None if lay is None else layout_for(g.values[r], lay, f"result {i} of {where}")
                     for i, (r, lay) in enumerate(zip(leaves, d.layouts)))
        assert isinstance(o, Origin)
        return Demand.on_results(d.target, lays, o, bool(d.mandatory), d.priority)
    assert d.kind == FREE_OPERANDS
    if not (d.mandatory and d.dfs):
        raise bad("a free-operands demand is always mandatory and depth-first")
    slots = []
    forwarded = len(g.instrs[d.target].results) if view.forwards(d.target) else 0
    for slot in d.slots:
        if not (isinstance(slot, tuple) and len(slot) == 2):
            raise bad(f"slot {slot!r} is not an (operand number, layout) pair")
        n, lay = slot
        v = operand(n)
        if not v.is_array or v.rank == 0 or n < forwarded:
            raise bad(f"operand {n} of {where} ({shape_text(v)}) has no layout to choose")
        slots.append((n, layout_for(v, lay, f"operand {n} of {where}")))
    return Demand.on_free_operands(d.target, tuple(slots), o, d.priority)


def _is_gpu_target(cls: type) -> bool:
    # No class derives from XlaGpuTarget before its module is imported.
    gpu_module = sys.modules.get(_GPU_MODULE)
    return gpu_module is not None and issubclass(cls, gpu_module.XlaGpuTarget)


def _is_tpu_target(cls: type) -> bool:
    tpu_module = sys.modules.get(_TPU_MODULE)
    return tpu_module is not None and issubclass(cls, tpu_module.XlaTpuTarget)


def _instantiate(cls: object, name: str, gpu: str | GpuModel | None = None, tpu: str | None = None) -> Target:
    if not (isinstance(cls, type) and issubclass(cls, Target)):
        raise PassError(f"target {name!r}: {cls!r} is not a subclass of stablehlo_layout.targets.Target")
    old = next((k for k in cls.__mro__ if _OLD_HOOK in vars(k)), None)
    if old is not None:
        raise UserTargetError(f"target {name!r}: {old.__name__}.{_OLD_HOOK}(engine, comp) is no longer called; "
                              "a target returns Demand objects from backend_demands(view, comp) instead "
                              "(docs/cli.md: Targets)", TypeError(f"{old.__qualname__}.{_OLD_HOOK} is obsolete"))
    is_gpu = _is_gpu_target(cls)
    if tpu is not None and not _is_tpu_target(cls):
        raise OptionError(f"--tpu {tpu}: a TPU generation applies only to --target xla-tpu, not to target {name!r}")
    if _is_tpu_target(cls):
        from stablehlo_layout.targets.xla_tpu import check_generation

        generation = check_generation(tpu) if tpu is not None else None  # a bad name fails here, in one line
        try:
            tpu_target = cls(generation)  # type: ignore[call-arg]  # an XlaTpuTarget
        except Exception as e:
            raise PassError(f"target {name!r}: constructing it failed: {type(e).__name__}: {e}") from None
        return tpu_target if name in _BUILTIN else _guard_hooks(tpu_target, name)
    if gpu is not None and not is_gpu:
        raise OptionError(f"--gpu {gpu if isinstance(gpu, str) else gpu.name}: a GPU model applies only to "
                          f"--target xla-gpu, not to target {name!r}")
    if is_gpu:
        from stablehlo_layout.targets.gpu_config import GpuModel, load_gpu

        model = gpu if isinstance(gpu, GpuModel) else load_gpu(gpu)  # bad configs fail here, in one line
        try:
            gpu_target = cls(gpu=model)  # type: ignore[call-arg]  # an XlaGpuTarget
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


__all__ = ["Target", "GenericTarget", "XlaCpuTarget", "XlaGpuTarget", "XlaTpuTarget", "get_target", "TARGET_NAMES",
           "ENTRY_POINT_GROUP", "GpuModel", "load_gpu", "shipped_gpus", "DEFAULT_GPU"]
