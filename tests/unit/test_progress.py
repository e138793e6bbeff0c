"""The progress line: drawn on a terminal's stderr, rewritten in place and cleared; nothing elsewhere.

The terminal is a real pseudo-terminal (``pty.openpty()``): ``isatty()`` is
true on it as on a user's, and what the command wrote is read back from its
other end.  The command's runs lay out a real XLA dump folder of several
modules (XLA:CPU compiling three jitted functions with ``--xla_dump_to``) and
a JAX function ``--as-compiled``.
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stablehlo_layout.report.progress import Progress
from tests.support.command import COMMAND, QUIET, environment

ERASE = "\r\x1b[K"

_DUMP_PROGRAM = """
import sys
import jax, jax.numpy as jnp
flags = {"xla_dump_to": sys.argv[1], "xla_dump_hlo_pass_re": "layout-assignment"}
def mlp(w, x):
    return jnp.tanh(x @ w).sum()
def conv(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
def transposed(a):
    return (a.T @ a).T
jax.jit(mlp).lower(jnp.ones((64, 32)), jnp.ones((8, 64))).compile(compiler_options=flags)
jax.jit(conv).lower(jnp.ones((2, 3, 8, 8)), jnp.ones((4, 3, 3, 3))).compile(compiler_options=flags)
jax.jit(jax.grad(mlp)).lower(jnp.ones((64, 32)), jnp.ones((8, 64))).compile(compiler_options=flags)
"""


class _Terminal:
    """A pseudo-terminal: ``slave`` is the process's stderr; what reaches the other end is collected."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self._chunks: list[bytes] = []
        # A pty holds a few KiB: read while the writer writes, or it blocks.
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # the other end closed (EIO on Linux)
                return
            if not data:
                return
            self._chunks.append(data)

    def text(self) -> str:
        os.close(self.slave)
        self._reader.join(timeout=10)
        os.close(self.master)
        # The terminal's line discipline turns "\n" into "\r\n"; compare in the writer's terms.
        return b"".join(self._chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def _lines_drawn(text: str) -> list[str]:
    """Each state of the progress line: the text after each erase, up to the next control."""
    return [piece.split("\n")[-1] for piece in text.split(ERASE)[1:] if piece]


def test_on_a_terminal_each_step_rewrites_the_line_and_exit_clears_it() -> None:
    term = _Terminal()
    with os.fdopen(os.dup(term.slave), "w") as stream:
        with Progress("verifying", total=3, stream=stream) as p:
            assert p.shown
            for what in ("fix a", "fix b", "fix c"):
                p.step(what)
    text = term.text()
    assert "verifying [1/3] fix a" in text
    assert "verifying [3/3] fix c" in text  # the last step is always drawn, however fast it came
    assert text.endswith(ERASE), repr(text[-40:])  # nothing left on the line
    assert "\n" not in text  # rewritten in place: never a new line


def test_unknown_total_counts_steps_and_a_message_goes_above_the_line() -> None:
    term = _Terminal()
    with os.fdopen(os.dup(term.slave), "w") as stream:
        with Progress("reading", stream=stream) as p:
            p.step("module_0001")
            p.print("note: something worth saying")
            p.note("laying out")
    text = term.text()
    assert "reading [1] module_0001" in text
    # The message is its own whole line, and the progress line comes back below it.
    assert ERASE + "note: something worth saying\n" + "reading [1] module_0001" in text
    assert _lines_drawn(text)[-1] == "reading [1] laying out"
    assert text.endswith(ERASE)


def test_not_a_terminal_writes_nothing() -> None:
    out = io.StringIO()
    with Progress("verifying", total=2, stream=out) as p:
        assert not p.shown
        p.step("a")
        p.note("b")
        p.clear()
        p.step("c")
    assert out.getvalue() == ""
    assert p.done == 2
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe, Progress("verifying", stream=pipe) as p:
        p.step("a")
    with os.fdopen(read) as r:
        assert r.read() == ""


def test_step_is_thread_safe() -> None:
    term = _Terminal()
    threads, steps = 8, 300
    with os.fdopen(os.dup(term.slave), "w") as stream:
        with Progress("verifying", total=threads * steps, stream=stream) as p:
            def work(k: int) -> None:
                for i in range(steps):
                    p.step(f"thread {k} step {i}")

            workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        assert p.done == threads * steps  # no step lost to a race
    drawn = _lines_drawn(term.text())
    # Every state is one whole line (no two writers interleaved inside one), counts never go back.
    states = [d for d in drawn if d]
    assert states and all(re.fullmatch(r"verifying \[\d+/2400\] thread \d step \d+", d) for d in states), states[:5]
    counts = [int(re.search(r"\[(\d+)/", d).group(1)) for d in states]  # type: ignore[union-attr]
    assert counts == sorted(counts) and counts[-1] == threads * steps


def test_a_long_line_is_cut_to_the_terminal_width() -> None:
    term = _Terminal()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(term.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    with os.fdopen(os.dup(term.slave), "w") as stream:
        with Progress("verifying", total=1, stream=stream) as p:
            p.step("x" * 200)
    drawn = [d for d in _lines_drawn(term.text()) if d]
    assert drawn and all(len(d) <= 39 for d in drawn), drawn  # one row: a wrapped line could not be rewritten


# The command, as a user runs it.

@pytest.fixture(scope="module")
def dump_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("three-modules")
    subprocess.run([sys.executable, "-c", _DUMP_PROGRAM, str(folder)], check=True, env=environment(QUIET),
                   capture_output=True)
    return folder


def _run_on_terminal(*args: str, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, str]:
    term = _Terminal()
    done = subprocess.run([*COMMAND, *args], stdout=subprocess.PIPE, stderr=term.slave, text=True,
                          env=environment(QUIET), cwd=cwd, timeout=600)
    return done, term.text()


def test_a_dump_folder_shows_one_step_per_module_on_a_terminal(dump_folder: Path) -> None:
    done, stderr = _run_on_terminal("explain", "--no-fixes", str(dump_folder))
    assert done.returncode == 0, stderr
    heads = re.findall(r"^== module (\S+):", done.stdout, re.M)
    assert len(heads) == 3, done.stdout[:500]
    drawn = _lines_drawn(stderr)
    for i, name in enumerate(heads, 1):
        assert f"explain [{i}/3] {name}" in drawn, drawn
    assert any(d.startswith(f"explain [1/3] {heads[0]}: laying out") for d in drawn), drawn
    assert stderr.endswith(ERASE)  # cleared: the shell's prompt starts on a clean line
    # The dump names its backend: that note is a whole line of its own, above the progress line.
    assert re.search(r"(^|\n|" + re.escape(ERASE) + r")note: .*--target xla-cpu.*\n", stderr), stderr


def test_a_dump_folder_with_stderr_not_a_terminal_says_only_its_notes(dump_folder: Path) -> None:
    done = subprocess.run([*COMMAND, "explain", "--no-fixes", str(dump_folder)], capture_output=True,
                          text=True, env=environment(QUIET), timeout=600)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr
    assert all(line.startswith("note: ") for line in done.stderr.splitlines()), done.stderr


def test_as_compiled_says_it_is_compiling(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done, stderr = _run_on_terminal("explain", "--no-fixes", "--as-compiled", "--target", "xla-cpu",
                                    "examples.models:mlp", "--arg", "f32[8,128]", "--arg", "f32[128,256]",
                                    cwd=root)
    assert done.returncode == 0, stderr
    drawn = _lines_drawn(stderr)
    assert "explain [1/1] compiling with XLA (xla-cpu) up to its layout assignment" in drawn, drawn
    assert "explain [1/1] explaining the copies" in drawn, drawn
    assert stderr.endswith(ERASE)


def test_an_error_on_a_terminal_is_one_clean_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    done, stderr = _run_on_terminal("assign", str(bad))
    assert done.returncode == 1
    lines = [line.split(ERASE)[-1] for line in stderr.split("\n") if line.split(ERASE)[-1]]
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:") and "error:" in lines[0], repr(stderr)


def test_fix_shows_its_verification_on_a_terminal_while_xla_compiles(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done, stderr = _run_on_terminal("fix", "examples/pinned_transpose.mlir", cwd=root)
    assert done.returncode == 0, stderr
    drawn = _lines_drawn(stderr)
    # The line stays visible while XLA compiles with fd 2 parked: it writes to the terminal's own descriptor.
    assert any(re.search(r"verified \d+ of \d+ candidate change\(s\) with XLA:CPU", d) for d in drawn), drawn
    assert "XLA's copies: 1 (256 B) as given, 0 (0 B) fixed" in done.stdout
    assert "\x1b" not in done.stdout and stderr.endswith(ERASE)
