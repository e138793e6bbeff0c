"""Writing outputs: regular files, links, FIFOs, devices, full disks, closed pipes.

Each test drives the real command (or, for an interrupt, the helper itself)
against a real special file.  Device nodes are made in the test's own folder
with mknod (where allowed), so a regression replaces a scratch node, never the
machine's /dev/null.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stablehlo_layout.report import output
from stablehlo_layout.model.errors import OutputError

from tests.support import ROOT
from tests.support.command import COMMAND, QUIET, environment, run_command

EXAMPLE = str(ROOT / "examples" / "pinned_transpose.mlir")
ENV = environment(QUIET)  # the command's environment, for the runs that are not run_command's


def _one_line_error(out: subprocess.CompletedProcess, path: str, reason: str) -> None:
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"{path}: error: cannot write output: ") and reason in lines[0], lines[0]


def _temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(output.TEMP_PREFIX)]


def _device(folder: Path, name: str, minor: int) -> Path:
    """A character device like /dev/null (minor 3) or /dev/full (minor 7), in ``folder``."""
    node = folder / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here: {e}")
    return node


def test_new_file_follows_the_umask_and_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    new = tmp_path / "new.mlir"
    out = subprocess.run(["sh", "-c", 'umask 027; exec "$@"', "sh", *COMMAND, "assign", EXAMPLE, "-o", str(new)],
                         capture_output=True, text=True, env=ENV)
    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE(new.stat().st_mode) == 0o640
    old = tmp_path / "old.mlir"
    old.write_text("old")
    old.chmod(0o604)
    assert run_command("assign", EXAMPLE, "-o", str(old)).returncode == 0
    assert stat.S_IMODE(old.stat().st_mode) == 0o604
    assert "mhlo.copy" in old.read_text()
    assert _temporaries(tmp_path) == []


def test_html_and_json_keep_an_existing_files_mode(tmp_path: Path) -> None:
    page, report = tmp_path / "t.html", tmp_path / "r.json"
    for p in (page, report):
        p.write_text("x")
        p.chmod(0o664)
    assert run_command("trace", "--html", str(page), EXAMPLE).returncode == 0
    assert run_command("explain", "--json", "-o", str(report), EXAMPLE).returncode == 0
    assert stat.S_IMODE(page.stat().st_mode) == stat.S_IMODE(report.stat().st_mode) == 0o664
    assert page.read_text().startswith("<!DOCTYPE html>") and '"schema"' in report.read_text()


def test_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "real.mlir"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.mlir"
    link.symlink_to(target.name)
    assert run_command("assign", EXAMPLE, "-o", str(link)).returncode == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert "mhlo.copy" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    page = tmp_path / "page.html"
    page.symlink_to("real.html")  # dangling: the target is created
    assert run_command("trace", "--html", str(page), EXAMPLE).returncode == 0
    assert page.is_symlink() and (tmp_path / "real.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("command", [["assign", EXAMPLE, "-o"], ["explain", "--json", EXAMPLE, "-o"],
                                     ["trace", EXAMPLE, "--html"]])
def test_fifo_is_written_in_place(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    out = run_command(*command, str(fifo))
    reader.join()
    assert out.returncode == 0, out.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert len(got[0]) > 100
    assert _temporaries(tmp_path) == []


@pytest.mark.parametrize("command", [["assign", EXAMPLE, "-o"], ["trace", EXAMPLE, "--html"]])
def test_character_device_is_written_in_place_not_replaced(tmp_path: Path, command: list[str]) -> None:
    null = _device(tmp_path, "null", 3)
    out = run_command(*command, str(null))
    assert out.returncode == 0, out.stderr
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert _temporaries(tmp_path) == []


@pytest.mark.parametrize("command", [["assign", EXAMPLE, "-o"], ["explain", "--json", EXAMPLE, "-o"],
                                     ["trace", EXAMPLE, "--html"]])
def test_dev_stdout_onto_a_pipe_is_written_in_place(command: list[str]) -> None:
    # capture_output makes stdout a pipe: /dev/stdout resolves to "pipe:[N]",
    # which used to end in "cannot write output: no such file or directory".
    if not os.path.exists("/dev/stdout"):
        pytest.skip("no /dev/stdout here")
    out = run_command(*command, "/dev/stdout")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout) > 100 and out.stderr == ""


def test_full_device_is_one_line_and_exit_1(tmp_path: Path) -> None:
    full = _device(tmp_path, "full", 7)
    _one_line_error(run_command("assign", EXAMPLE, "-o", str(full)), str(full), "no space left on device")
    _one_line_error(run_command("trace", "--html", str(full), EXAMPLE), str(full), "no space left on device")
    with open(full, "wb") as f:  # stdout onto a full device
        out = subprocess.run([*COMMAND, "explain", EXAMPLE], stdout=f, stderr=subprocess.PIPE, text=True, env=ENV)
    _one_line_error(out, "<stdout>", "no space left on device")
    assert stat.S_ISCHR(full.lstat().st_mode)


def _big_module(tmp_path: Path, n: int = 3000) -> Path:
    body = "\n".join(f"  %{i + 1} = stablehlo.negate %{i} : tensor<4x8xf32>" for i in range(n))
    src = tmp_path / "big.mlir"
    src.write_text(f"func.func @main(%0: tensor<4x8xf32>) -> tensor<4x8xf32> {{\n{body}\n"
                   f"  return %{n} : tensor<4x8xf32>\n}}\n")
    return src


def test_closed_pipe_is_one_line_and_exit_1(tmp_path: Path) -> None:
    src = _big_module(tmp_path)  # prints far more than a pipe buffer holds
    tool = subprocess.Popen([*COMMAND, "assign", str(src)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ENV)
    assert tool.stdout is not None and tool.stderr is not None
    # The reader goes away before the command prints (`| head -c0`, or `| head -c1` on a
    # kernel that lets a write in flight finish): the next write meets EPIPE.
    tool.stdout.close()
    err = tool.stderr.read().decode()
    assert tool.wait() == 1
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0] == "<stdout>: error: cannot write output: broken pipe", err


def test_permission_denied_is_one_line_and_exit_1(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root ignores permission bits; sysfs still refuses to create files, with EACCES.
        if not os.path.isdir("/sys/kernel"):
            pytest.skip("running as root without /sys: no folder refuses root with EACCES")
        folder = Path("/sys/kernel")
    else:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o555)
    dest = folder / "stablehlo-layout-test.mlir"
    _one_line_error(run_command("assign", EXAMPLE, "-o", str(dest)), str(dest), "permission denied")
    _one_line_error(run_command("trace", EXAMPLE, "--html", str(dest)), str(dest), "permission denied")
    assert not dest.exists() and _temporaries(folder) == []


def test_ctrl_c_while_writing_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch) -> None:
    dest = tmp_path / "out.mlir"
    dest.write_text("old")

    def interrupted(fd: int, data: bytes) -> None:
        os.write(fd, data[:10])
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "_write_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        output.write_output(str(dest), b"new contents " * 1000)
    assert dest.read_text() == "old"
    assert _temporaries(tmp_path) == []


@pytest.mark.parametrize("signal_name, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_during_a_run_leaves_no_temporary(tmp_path: Path, signal_name: str, code: int) -> None:
    """Ctrl-C or SIGTERM at the first write of the output: the temporary exists then, and is removed.

    The exit code is the shell's 128 + the signal's number.
    """
    src = _big_module(tmp_path, 20000)
    dest = tmp_path / "out.mlir"
    script = (
        "import os, signal, sys, time\n"
        "from stablehlo_layout.frontends import cli\nfrom stablehlo_layout.report import output\n"
        "real = output._write_all\n"
        "def write(fd, data):\n"
        "    real(fd, data[:4096])\n"
        f"    os.kill(os.getpid(), signal.{signal_name})\n"
        "    for _ in range(1000):  # the command runs on a worker thread: let the signal reach it\n"
        "        time.sleep(0.01)\n"
        "    real(fd, data[4096:])\n"
        "output._write_all = write\n"
        f"sys.exit(cli.main(['assign', {str(src)!r}, '-o', {str(dest)!r}]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV)
    assert out.returncode == code, out.stderr
    assert "Traceback" not in out.stderr
    assert not dest.exists()
    assert _temporaries(tmp_path) == []


def test_output_naming_the_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    src = tmp_path / "in.mlir"
    src.write_text(Path(EXAMPLE).read_text())
    before = src.read_bytes()
    link = tmp_path / "alias.mlir"
    link.symlink_to(src.name)
    for args in (["assign", str(src), "-o", str(src)], ["assign", str(src), "-o", str(link)],
                 ["explain", str(src), "-o", str(src)], ["trace", str(src), "--html", str(src)]):
        out = run_command(*args)
        assert out.returncode == 1 and "names the input file" in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert src.read_bytes() == before


def test_helper_rejects_a_directory_with_one_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="cannot write output: is a directory"):
        output.write_output(str(tmp_path), b"x")
