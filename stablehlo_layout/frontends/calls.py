"""A function's example call as users write it: pytrees, keyword arguments, static arguments.

    call = make_call(loss, (params, x), {"training": True}, static_argnames=("training",))
    traced, dynamic = call.traced()     # traced(*dynamic) == loss(params, x, training=True)

The layout pass sees one ``@main`` whose parameters are the call's array
leaves, so everything past this module works on a function of positional
array pytrees only: ``traced`` closes over the static arguments and takes
the dynamic keyword arguments as one trailing dict.  The flat order of the
entry parameters is then: the positional arguments in order, then the
keyword arguments by name (a dict's leaves, sorted as jax sorts them).

Checks that a JAX traceback would otherwise make: the call fits the
signature (arity, names), a static index or name exists, and every leaf
of a dynamic argument is an array (or a scalar); each failure is an
``InputError`` naming the function, one line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stablehlo_layout.model.errors import InputError

__all__ = ["Call", "make_call"]

@dataclass(frozen=True)
class Call:
    """``fn(*args, **kwargs)`` with ``static`` positions and names held out of tracing."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    static_argnums: frozenset[int] = frozenset()
    static_argnames: frozenset[str] = frozenset()

    @property
    def dynamic_args(self) -> tuple[Any, ...]:
        return tuple(a for i, a in enumerate(self.args) if i not in self.static_argnums)

    @property
    def dynamic_kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in self.kwargs.items() if k not in self.static_argnames}

    def traced(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """A function of the dynamic arguments alone and those arguments, in ``@main``'s order."""
        fn, args, kwargs = self.fn, self.args, dict(self.kwargs)
        static_pos = {i: a for i, a in enumerate(args) if i in self.static_argnums}
        static_kw = {k: v for k, v in kwargs.items() if k in self.static_argnames}
        dyn_args, dyn_kwargs = self.dynamic_args, self.dynamic_kwargs
        n_dyn = len(dyn_args)
        with_kwargs = bool(dyn_kwargs)

        def traced(*flat: Any) -> Any:
            given = iter(flat[:n_dyn])
            positional = [static_pos[i] if i in static_pos else next(given) for i in range(len(args))]
            keywords = {**(flat[n_dyn] if with_kwargs else {}), **static_kw}
            return fn(*positional, **keywords)

        # jax names the module jit_<name>: keep the user's, as for a plain function.
        traced.__name__ = traced.__qualname__ = self.name
        return traced, (*dyn_args, dyn_kwargs) if with_kwargs else dyn_args


def make_call(fn: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None = None, *,
              static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
              name: str | None = None) -> Call:
    """The checked call; ``InputError(name, reason)`` when it cannot be made.

    ``static_argnums`` and ``static_argnames`` mean what they mean to
    ``jax.jit``: a parameter named by either is static whether it is passed
    by position or by name; negative indices count from the end of the
    positional parameters.
    """
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    args, kwargs = tuple(args), dict(kwargs or {})
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    sig = _signature(fn)
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise InputError(label, f"{_shown(label, sig)} cannot be called with these arguments: {e}") from None
    positional = [] if sig is None else [p.name for p in sig.parameters.values()
                                         if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    static_nums: set[int] = set()
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise InputError(label, f"static_argnums: {n!r} is not an index")
        count = len(positional) if sig is not None else len(args)
        i = n + count if n < 0 else n
        if not 0 <= i < max(count, len(args)):
            raise InputError(label, f"static_argnums: {n} is out of range: {_shown(label, sig)} "
                                    f"takes {count} positional argument(s)")
        static_nums.add(i)
    static_names = set(names)
    known = set() if sig is None else set(sig.parameters)
    var_kw = sig is not None and any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    for pname in names:
        if sig is not None and pname not in known and not var_kw:
            raise InputError(label, f"static_argnames: {_shown(label, sig)} has no parameter {pname!r}")
    # A parameter is static by either handle, however the call passes it (as jax.jit does).
    for i in list(static_nums):
        if i < len(positional):
            static_names.add(positional[i])
    for i, p in enumerate(positional):
        if p in static_names:
            static_nums.add(i)
    call = Call(label, fn, args, kwargs, frozenset(static_nums), frozenset(static_names))
    _check_leaves(call)
    return call


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or an object that hides it: jax will say
        return None


def _shown(label: str, sig: inspect.Signature | None) -> str:
    return f"{label}{sig}" if sig is not None else label


def _is_array_like(x: Any) -> bool:
    import numpy as np

    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return True  # arrays, jax.ShapeDtypeStruct, numpy scalars
    return isinstance(x, (bool, int, float, complex, np.generic))


def _check_leaves(call: Call) -> None:
    """Every leaf jax would trace must be an array: a string or an object fails deep in jax otherwise."""
    import jax

    dyn_args, dyn_kwargs = call.dynamic_args, call.dynamic_kwargs
    positions = [i for i in range(len(call.args)) if i not in call.static_argnums]
    sig = _signature(call.fn)
    params = [] if sig is None else [p for p in sig.parameters.values()
                                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    tops: list[tuple[str, Any]] = [
        (params[i].name if i < len(params) else f"argument {i}", a) for i, a in zip(positions, dyn_args)]
    tops += list(dyn_kwargs.items())
    for top, value in tops:
        leaves, _ = jax.tree_util.tree_flatten_with_path(value)
        for path, leaf in leaves:
            if not _is_array_like(leaf):
                where = top + jax.tree_util.keystr(path)
                raise InputError(call.name, f"argument {where} is a {type(leaf).__name__} ({short(repr(leaf))}), "
                                            "not an array: pass an array or jax.ShapeDtypeStruct, or make it "
                                            "static (static_argnums / static_argnames)")


def short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
