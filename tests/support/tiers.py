"""Test tiers (pyproject.toml's markers): one case of a family in the fast tier, the rest in a slow one.

A family of programs checked against the real XLA (``oracle``) keeps one
representative in the fast tier, so that a bare ``pytest`` still compiles with
XLA and compares, and the whole family runs with ``-m oracle`` (and in
./run-tests).  A sweep over the whole corpus run once per mode (``slow``)
keeps one mode in the fast tier.  Each case runs in exactly one tier.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

import pytest
from _pytest.mark import ParameterSet

__all__ = ["ORACLE", "SLOW", "one_fast"]

ORACLE = pytest.mark.oracle
SLOW = pytest.mark.slow


def one_fast(cases: Iterable[Any], fast: Collection[Any], mark: pytest.MarkDecorator = ORACLE,
             key: Callable[[Any], Any] = lambda value: value) -> list[ParameterSet]:
    """``cases`` for ``pytest.mark.parametrize``, each marked ``mark`` except those named in ``fast``.

    A case is a value, a tuple of values (several argnames) or a ``pytest.param``;
    it is named by its id where it has one, else by ``key`` of its (first) value.  The
    ids and marks the cases already have are kept; a name in ``fast`` that no case has
    is an error.
    """
    out: list[ParameterSet] = []
    seen: set[Any] = set()
    for case in cases:
        p = case if isinstance(case, ParameterSet) else (
            pytest.param(*case) if isinstance(case, tuple) else pytest.param(case))
        name = p.id if p.id is not None else key(p.values[0])
        if name in fast:
            seen.add(name)
            out.append(p)
        else:
            out.append(pytest.param(*p.values, marks=[*p.marks, mark], id=p.id))
    missing = set(fast) - seen
    if missing:
        raise ValueError(f"one_fast: no case named {sorted(missing, key=str)}")
    return out
