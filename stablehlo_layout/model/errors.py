"""Errors the package reports to users.

Two kinds: the input could not be read or an output not written (`InputError`
and its `OutputError`, rendered like a compiler diagnostic so editors can jump
to it), or the pass found something it cannot
handle inside a module that did load (`PassError`).
"""

from __future__ import annotations

from dataclasses import dataclass


def _one_line(text: str) -> str:
    # Diagnostics are grepped and shown in terminals line by line; a reason that
    # spans lines would break both.
    parts = [part.strip() for part in text.splitlines()]
    return "; ".join(part for part in parts if part)


# eq=False keeps identity equality and hashing, which exception handling
# machinery (tracebacks, context chaining) expects of exceptions.
@dataclass(eq=False)
class InputError(Exception):
    """The input at `path` is missing, of an unknown kind, or not a valid module."""

    path: str
    reason: str
    line: int | None = None
    col: int | None = None

    def __post_init__(self) -> None:
        # Fill `args` so the error pickles and reprs like any other exception.
        Exception.__init__(self, self.path, self.reason, self.line, self.col)

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return f"{where}: error: {_one_line(self.reason)}"


class OutputError(InputError):
    """An output (``-o``, ``--html``, stdout) could not be written: one line, like an input error."""


class PassError(Exception):
    """Something inside a loaded module that the pass cannot handle."""

    def __init__(self, msg: str, location: str | None = None) -> None:
        super().__init__(msg, location)
        self.msg = msg
        self.location = location

    def __str__(self) -> str:
        if self.location:
            return f"{self.location}: error: {self.msg}"
        return self.msg


class OptionError(PassError):
    """A command-line or pass option that names nothing usable (``--gpu h900``).

    Not about the input, so it is shown without the input's name.
    """


class UserTargetError(PassError):
    """A user target's hook raised: the target's code failed, not the input.

    ``cause`` is the exception itself, so that ``--debug`` (or
    ``STABLEHLO_LAYOUT_DEBUG=1``) can show where in the target it came from.
    """

    def __init__(self, msg: str, cause: BaseException) -> None:
        super().__init__(msg)
        self.cause = cause
