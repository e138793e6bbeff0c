"""The console command's import of jaxlib's MLIR bindings, with numpy's import deferred to its first use.

``jaxlib.mlir.ir`` imports numpy only to define four attribute builders
(``F64ElementsAttr``, ``I32ElementsAttr``, ``I64ElementsAttr``,
``IndexElementsAttr``) that call ``np.array`` when they run; importing numpy
costs ~65 ms of CPU and ~13 MB of RSS, a fifth of the command's start-up,
and nothing the command does on MLIR text or bytecode runs those builders.
So ``ir`` is imported while ``sys.modules["numpy"]`` holds a stand-in that
imports the real numpy the first time anything is read from it: the
builders stay registered and behave as before, numpy arrives when one
runs.  The stand-in leaves ``sys.modules`` as soon as ``ir`` is loaded, so
every later ``import numpy`` (jax's, when an input is a ``jax.export``
artifact) loads numpy itself.

Only the console command calls this, first thing, in a process of its own:
a library user's process keeps jaxlib's own import, and where numpy is
already imported (or not installed) nothing changes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

_NUMPY = "numpy"


class _DeferredNumpy(types.ModuleType):
    """Stands for numpy in the modules that imported it while it was deferred."""

    def __getattr__(self, name: str):
        if sys.modules.get(_NUMPY) is self:  # read during the deferral: load it for real now
            del sys.modules[_NUMPY]
        return getattr(importlib.import_module(_NUMPY), name)


def import_bindings() -> None:
    """Import ``jaxlib.mlir.ir`` (once per process) without importing numpy yet."""
    if "jaxlib.mlir.ir" in sys.modules or _NUMPY in sys.modules or importlib.util.find_spec(_NUMPY) is None:
        import jaxlib.mlir.ir  # noqa: F401  (nothing to defer)

        return
    stand_in = _DeferredNumpy(_NUMPY)
    sys.modules[_NUMPY] = stand_in
    try:
        import jaxlib.mlir.ir  # noqa: F401
    finally:
        if sys.modules.get(_NUMPY) is stand_in:
            del sys.modules[_NUMPY]
