"""The ``stablehlo-layout`` command as the tests run it: a fresh interpreter, its output captured.

``run_command("assign", path)`` runs ``python -m stablehlo_layout.frontends.cli
assign path`` with this interpreter (the checkout's package, as the editable
install has it), jax on CPU only and absl quiet (``QUIET``), and returns the
``CompletedProcess``: text by default, bytes with ``text=False``.  A test that
needs another environment passes the whole of it, built with ``environment``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

__all__ = ["COMMAND", "QUIET", "environment", "run_command"]

# The console command, run by this interpreter: python -m stablehlo_layout.frontends.cli.
COMMAND = [sys.executable, "-m", "stablehlo_layout.frontends.cli"]

# What most command tests run under: jax on CPU only (no device probe) and absl's logging off.
QUIET = {"JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}


def environment(add: Mapping[str, str] | None = None, drop: Iterable[str] = ()) -> dict[str, str]:
    """This process's environment, less the variables in ``drop``, with ``add`` on top."""
    dropped = set(drop)
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **(add or {})}


def run_command(*args: str, cwd: str | Path | None = None, stdin: str | bytes | None = None,
                env: Mapping[str, str] | None = None, text: bool = True, timeout: float | None = None,
                python: Sequence[str] = (), check: bool = False) -> subprocess.CompletedProcess:
    """Run ``stablehlo-layout ARGS`` and capture its stdout and stderr.

    ``stdin`` is the input on standard input (``str`` with ``text``, else ``bytes``); ``env`` is the
    whole environment (default: this process's with ``QUIET``); ``python`` are options for the
    interpreter itself, before ``-m`` (such as ``-X importtime``); ``check`` raises
    ``CalledProcessError`` on a nonzero exit, as ``subprocess.run`` does.
    """
    return subprocess.run([COMMAND[0], *python, *COMMAND[1:], *args], cwd=cwd, input=stdin, capture_output=True,
                          text=text, env=environment(QUIET) if env is None else dict(env), timeout=timeout,
                          check=check)
