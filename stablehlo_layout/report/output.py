"""Every file the tool writes (`-o`, `--html`, JSON) and stdout go through here.

What a user expects of an output path, and what renaming a temporary file
over it would break:

* a regular file (new or existing) is replaced atomically: a reader never
  sees half a module, and an interrupted run leaves the old file and no
  temporary behind.  An existing file keeps its mode bits; a new one gets
  0666 minus the umask, as `open()` would give it;
* a symlink is followed: its target is replaced and the link stays a link;
* a FIFO, a character or block device (`/dev/null`, `/dev/stdout`, a
  terminal) is written in place, since a rename would put a regular file
  where the node was;
* a write that fails (ENOSPC, EPIPE, EACCES, ...) is one `OutputError`
  naming the path and the OS reason, never a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import Iterable

from stablehlo_layout.model.errors import OutputError

STDOUT = "-"
# Temporaries sit next to their target (a rename cannot cross file systems)
# and start with a dot so that globs over the folder do not pick them up.
TEMP_PREFIX = ".stablehlo-layout-"


def _reason(error: OSError) -> str:
    text = error.strerror or str(error)
    return text[:1].lower() + text[1:]


def _fail(path: str, error: OSError) -> OutputError:
    shown = "<stdout>" if path == STDOUT else path
    return OutputError(shown, f"cannot write output: {_reason(error)}")


def _pieces(data: bytes | Iterable[bytes]) -> Iterable[bytes]:
    return (data,) if isinstance(data, bytes) else data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one existing file (through links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write_output(path: str, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or pieces of them in order) to ``path`` (``-`` for stdout) as the module docstring says.

    Raises `OutputError`; a KeyboardInterrupt removes the temporary and propagates.
    """
    if path == STDOUT:
        _write_stdout(data)
        return
    try:
        st = os.stat(path)  # through symlinks
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise _fail(path, e) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise _fail(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
        # Opened by the name given: /dev/stdout onto a pipe resolves to
        # /proc/self/fd/1 -> "pipe:[N]", which names no file.
        _write_in_place(path, path, data)
        return
    target = os.path.realpath(path)  # through symlinks, so the link itself stays
    _replace(path, target, data, None if st is None else stat.S_IMODE(st.st_mode))


def _write_in_place(path: str, target: str, data: bytes | Iterable[bytes]) -> None:
    try:
        # O_TRUNC is meaningless on a pipe or device and refused by some.
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise _fail(path, e) from None
    try:
        for piece in _pieces(data):
            _write_all(fd, piece)
    except OSError as e:
        raise _fail(path, e) from None
    finally:
        os.close(fd)


def _replace(path: str, target: str, data: bytes | Iterable[bytes], mode: int | None) -> None:
    directory = os.path.dirname(target) or "."
    tmp = None
    try:
        fd, tmp = _create_temporary(directory)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            for piece in _pieces(data):
                _write_all(fd, piece)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise _fail(path, e) from None
    finally:
        # Also on KeyboardInterrupt: never leave a temporary next to the output.
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _create_temporary(directory: str) -> tuple[int, str]:
    """A new file next to the target, created 0666 so the umask shapes it as for any new file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        # What secrets.token_hex(6) does: importing secrets costs ~3 ms of start-up.
        name = os.path.join(directory, TEMP_PREFIX + os.urandom(6).hex())
        try:
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", directory)


def _write_stdout(data: bytes | Iterable[bytes]) -> None:
    try:
        sys.stdout.flush()
        out = sys.stdout.buffer
        for piece in _pieces(data):
            out.write(piece)
        out.flush()
    except OSError as e:
        # Whatever is still buffered would fail again when the process exits.
        _drop_stdout()
        raise _fail(STDOUT, e) from None


def _drop_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
