"""One progress line on a terminal's stderr for long work, nothing elsewhere.

    with Progress("verifying", total=len(fixes)) as p:
        for fix in fixes:
            p.step(f"rerun without {fix.name}")
            ...

The line is rewritten in place (carriage return, then erase to the end of
the line) and cleared when the block ends, also on an error, so an error
line printed after it starts at column 0 on a clean line.  Where stderr is
not a terminal (a pipe, a file, CI's log) nothing is written: a log keeps
only what the command says, never half-drawn lines.  ``step`` may be
called from several threads: one lock guards the count and the write.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import TextIO

# ESC [ K: erase from the cursor to the end of the line (every terminal since the VT100).
_ERASE = "\r\x1b[K"
# Redrawing more often than this is flicker a reader cannot follow and costs
# a write per step on loops of thousands of small steps.
_MIN_INTERVAL_S = 0.05


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or replaced stream
        return False


@dataclass
class Progress:
    """``with Progress(label, total=N) as p: p.step(what)``: ``label [i/N] what`` on a TTY.

    ``total`` may be ``None`` (unknown length): the line then shows the step
    count alone.  ``stream`` defaults to ``sys.stderr`` as it is when the
    block is entered (so a test's or a caller's replacement is honoured).
    """

    label: str
    total: int | None = None
    stream: TextIO | None = None
    done: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _active: bool = field(default=False, init=False, repr=False)
    _drawn: bool = field(default=False, init=False, repr=False)
    _last_draw: float = field(default=0.0, init=False, repr=False)
    _what: str = field(default="", init=False, repr=False)
    # The terminal's own descriptor, held apart from fd 2: work that parks fd 2
    # (XLA's C++ logs, ``xla.pipeline.quietly``) leaves the line visible.
    _fd: int = field(default=-1, init=False, repr=False)

    def __enter__(self) -> "Progress":
        if self.stream is None:
            self.stream = sys.stderr
        self._active = _is_terminal(self.stream)
        if self._active:
            try:
                self.stream.flush()
                self._fd = os.dup(self.stream.fileno())
            except (AttributeError, ValueError, OSError):
                self._fd = -1
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        with self._lock:
            if self._active and self._drawn:
                self._write(_ERASE)
            self._active = False
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    @property
    def shown(self) -> bool:
        """Whether the line is drawn at all (stderr is a terminal and the block is open)."""
        return self._active

    def step(self, what: str = "") -> None:
        """Count one step begun and show ``what`` it does; thread-safe, a no-op off a terminal."""
        with self._lock:
            self.done += 1
            if not self._active:
                return
            now = time.monotonic()
            last = self.total is not None and self.done >= self.total
            if self._drawn and not last and now - self._last_draw < _MIN_INTERVAL_S:
                return
            self._last_draw = now
            self._draw(what)

    def note(self, what: str) -> None:
        """Show ``what`` the current step is doing now, without counting a step."""
        with self._lock:
            if self._active:
                self._draw(what)

    def print(self, message: str) -> None:
        """Write ``message`` as its own line on the stream, the progress line redrawn below it.

        Anything else written to stderr while the line is drawn would start
        mid-line, after it: the command's notes and errors go through here.
        """
        with self._lock:
            if not self._active:
                stream = self.stream if self.stream is not None else sys.stderr
                print(message, file=stream)
                return
            self._write(_ERASE + message + "\n")
            if self._drawn:
                self._write(self._line(self._what))

    def clear(self) -> None:
        """Erase the line now (before output on the same terminal); the next step or note redraws it."""
        with self._lock:
            if self._active and self._drawn:
                self._write(_ERASE)
                self._drawn = False

    def _draw(self, what: str) -> None:
        self._what = what
        self._write(_ERASE + self._line(what))
        self._drawn = True

    def _line(self, what: str) -> str:
        count = f"[{self.done}/{self.total}]" if self.total is not None else f"[{self.done}]"
        text = " ".join(f"{self.label} {count} {what}".split())
        # A line longer than the terminal wraps, and the carriage return then
        # rewrites only its last row: keep it one row (one column spare for the cursor).
        width = _columns(self._fd if self._fd >= 0 else self.stream) - 1
        return text if len(text) <= width else text[: max(width - 1, 0)] + "…"

    def _write(self, text: str) -> None:
        assert self.stream is not None
        try:
            if self._fd >= 0:
                os.write(self._fd, text.encode("utf-8", "replace"))
                return
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: progress is never worth failing for
            self._active = False


def _columns(stream: TextIO | int | None) -> int:
    try:
        fd = stream if isinstance(stream, int) else stream.fileno() if stream is not None else -1
        columns = os.get_terminal_size(fd).columns if fd >= 0 else 0
    except (AttributeError, ValueError, OSError):
        columns = 0
    # A pseudo-terminal nobody sized reports 0 columns: fall back to $COLUMNS, else 80.
    return columns if columns > 0 else shutil.get_terminal_size().columns
