"""One XLA compile with layout assignment's dumps, and those dumps read back.

jaxlib cannot hand back an intermediate module in process, so XLA dumps the
module before and after its layout assignment into a temporary folder that
is removed before ``run_to_layout_assignment`` returns, on errors and
interrupts too.  Every compile that wants XLA's answer (``--as-compiled``,
verification, the deviceless GPU compile) goes through here.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@contextlib.contextmanager
def _dump_folder() -> Iterator[str]:
    """A fresh folder that never outlives the block: errors, Ctrl-C and SIGTERM included.

    A signal arriving while XLA compiles is handled once the compile returns;
    SIGTERM is turned into an exception for the duration so that the folder
    is still removed.
    """
    previous = None
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        def on_term(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt("SIGTERM")

        previous = signal.signal(signal.SIGTERM, on_term)
    folder = None
    try:
        folder = tempfile.mkdtemp(prefix="stablehlo-layout-xla-")
        yield folder
    finally:
        try:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        finally:
            if main_thread:
                signal.signal(signal.SIGTERM, previous)


_PASS_INDEX = re.compile(r"\.(\d{4})\.[^/]*before_layout-assignment\.txt$")


def _read_dumps(folder: str) -> tuple[str | None, str | None, bytes | None]:
    """The first layout assignment's before/after dumps of the (one) module compiled, and the
    before dump's HloProto where XLA wrote one (``xla_dump_hlo_as_proto``)."""
    befores = glob.glob(os.path.join(glob.escape(folder), "*before_layout-assignment.txt"))
    if not befores:
        return None, None, None
    # Dumps are numbered in pass order; a pipeline that runs the pass again
    # (none does today) would follow the first.
    befores.sort(key=lambda p: (os.path.basename(p).split(".")[0],
                                int(m.group(1)) if (m := _PASS_INDEX.search(p)) else 0))
    before = befores[0]
    prefix = os.path.basename(before).split(".")[0]
    afters = sorted(glob.glob(os.path.join(glob.escape(folder), f"{prefix}.*after_layout-assignment*.txt")))
    with open(before, encoding="utf-8") as f:
        before_text = f.read()
    after_text = None
    if afters:
        with open(afters[0], encoding="utf-8") as f:
            after_text = f.read()
    proto = None
    if os.path.isfile(before[: -len(".txt")] + ".hlo.pb"):
        with open(before[: -len(".txt")] + ".hlo.pb", "rb") as f:
            proto = f.read()
    return before_text, after_text, proto


# Debug options that make XLA dump the module around its layout assignment, as text.
DUMP_FLAGS: dict[str, Any] = {"xla_dump_hlo_pass_re": "layout-assignment", "xla_dump_hlo_as_text": True}


@dataclass(frozen=True)
class Dumps:
    """One XLA compile run with layout assignment's dumps: the dumps, and how the compile ended."""

    before: str | None  # the module layout assignment receives (None: XLA stopped earlier)
    after: str | None  # the module it returns
    result: Any  # what the compile call returned; None when it raised
    failure: BaseException | None  # what it raised
    before_proto: bytes | None = None  # the before dump's HloProto, when the flags asked for one


def run_to_layout_assignment(compile: Callable[[dict[str, Any]], Any]) -> Dumps:
    """Run ``compile(flags)`` (one XLA compile with the debug options ``flags``) and hand back its dumps.

    ``flags`` are ``DUMP_FLAGS`` plus a temporary ``xla_dump_to`` folder that
    is gone when this returns.  An exception of the compile is handed back,
    not raised: XLA may fail in a pass after layout assignment, whose dumps
    are complete then.
    """
    with _dump_folder() as folder:
        result, failure = None, None
        try:
            result = compile({"xla_dump_to": folder, **DUMP_FLAGS})
        except Exception as e:  # XLA's status errors, and nanobind's for a module it cannot take
            failure = e
        before, after, proto = _read_dumps(folder)
    return Dumps(before, after, result, failure, proto)


# --------------------------------------------------------------------------
# Compiling
