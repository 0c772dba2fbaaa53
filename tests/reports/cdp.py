"""A minimal DevTools-protocol client over `--remote-debugging-pipe` for headless Debian chromium.

Enough for the report's browser test: open a file:// page at a given viewport,
collect console errors and uncaught exceptions, measure the layout, and take a
screenshot. No network, no third-party packages.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--remote-debugging-pipe"]


class Browser:
    def __init__(self, timeout: float = 30.0):
        if CHROMIUM is None:
            raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="scoreaudit-chromium-")
        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()

        def plumbing():  # the protocol reads fd 3 and writes fd 4 (dup high first: the pipes may sit on 3/4)
            r, w = os.dup(to_child_r) + 100, os.dup(from_child_w) + 100
            os.dup2(to_child_r, r)
            os.dup2(from_child_w, w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        # subprocess closes unlisted fds after preexec_fn runs, so 3 and 4 must be listed
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     pass_fds=(3, 4, to_child_r, from_child_w), preexec_fn=plumbing,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child_r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_for(self, method: str, session: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self.events.append(m)

    def open(self, url: str, width: int, height: int, mobile: bool = False) -> str:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=s)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session=s)
        self.send("Page.navigate", {"url": url}, session=s)
        self.wait_for("Page.loadEventFired", s)
        return s

    def evaluate(self, session: str, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        return r["result"].get("value")

    def screenshot(self, session: str, path: Path, full_page: bool = False) -> Path:
        params: dict = {"format": "png"}
        if full_page:
            w = self.evaluate(session, "document.documentElement.scrollWidth")
            h = min(self.evaluate(session, "document.documentElement.scrollHeight"), 16000)
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": w, "height": h, "scale": 1})
        data = self.send("Page.captureScreenshot", params, session=session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def errors(self, session: str) -> list[str]:
        """Console errors, uncaught exceptions and failed loads seen by the page."""
        out = []
        for m in self.events:
            if m.get("sessionId") != session:
                continue
            p = m.get("params", {})
            if m.get("method") == "Runtime.exceptionThrown":
                out.append("Uncaught: " + p.get("exceptionDetails", {}).get("text", ""))
            elif m.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + " ".join(str(a.get("value", "")) for a in p.get("args", [])))
            elif m.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + p["entry"].get("text", ""))
        return out

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child_w, self._from_child_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
