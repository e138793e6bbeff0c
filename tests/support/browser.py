"""Headless Chromium driven over its DevTools pipe, for the tests that check a page on screen.

Standard library only: no WebSocket client, no driver download.  A test
module makes one ``Browser`` per module (``chromium()`` finds the binary,
None when there is none: skip and say why) and calls ``open``, ``js``,
``key``, ``click`` and ``screenshot``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

__all__ = ["Browser", "chromium", "NO_CHROMIUM"]

NO_CHROMIUM = ("no Chromium binary (/usr/bin/chromium or chromium on PATH): "
               "apt-get install -y chromium to run the browser tests")


def chromium() -> str | None:
    for c in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if c and os.access(c, os.X_OK):
            return c
    return None


_TRAMPOLINE = (
    "import os, sys\n"
    "r, w = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


class Browser:
    """Headless Chromium over the DevTools pipe (fd 3: commands in, fd 4: replies out)."""

    def __init__(self, binary: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        # Chromium reads commands on fd 3 and answers on fd 4.  A small Python
        # trampoline moves the pipe ends there and execs the browser
        # (no preexec_fn: this process has threads).
        hi_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(out_w, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (cmd_r, out_w):
            os.close(fd)
        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1400,900",
                "about:blank"]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _TRAMPOLINE, str(hi_r), str(hi_w), *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(hi_r, hi_w))
        os.close(hi_r)
        os.close(hi_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if ready:
                chunk = os.read(self._out_r, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: bool = False, timeout: float = 30, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for n, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(n)
            self.events.append(self._read(deadline))

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")
        self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def js(self, expression: str):
        r = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def settle(self) -> None:
        self.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def key(self, key: str, code: int) -> None:
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", session=True, type=kind, key=key, code=key,
                      windowsVirtualKeyCode=code, nativeVirtualKeyCode=code)
        self.settle()

    def click(self, selector: str) -> None:
        box = self.js(f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                      " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1],
                      button="left", clickCount=1)
        self.settle()

    def text(self, selector: str) -> str:
        return self.js(f"document.querySelector({json.dumps(selector)}).textContent")

    def texts(self, selector: str) -> list[str]:
        return self.js(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)")

    def screenshot(self, path: Path) -> Path:
        """The page as the window shows it now, written to ``path`` as PNG."""
        shot = self.call("Page.captureScreenshot", session=True, format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium for a test module's pages; the module skips, saying why, where there is none."""
    binary = chromium()
    if binary is None:
        pytest.skip(NO_CHROMIUM)
    b = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()
