"""Headless Chromium for the HTML pages' tests: Debian's Chromium (installed when missing) driven over
the DevTools protocol on a pipe; a page is rendered, its console errors, exceptions and network requests
collected and a screenshot taken."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path


def screenshot_dir(tmp_path: Path) -> Path:
    """Where the PNGs go: NPUPROF_SCREENSHOT_DIR to keep them for a look, else the test's tmp_path."""
    return Path(os.environ.get("NPUPROF_SCREENSHOT_DIR") or tmp_path)


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-extensions", "--disable-sync", "--disable-default-apps", "--no-first-run",
                  "--disable-component-update", "--mute-audio", "--hide-scrollbars", "--remote-debugging-pipe"]


def chromium() -> str:
    """Debian's chromium, installed with apt when absent (the machines run as root)."""
    path = shutil.which("chromium")
    if path:
        return path
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=900)
    subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, timeout=1800)
    path = shutil.which("chromium")
    assert path, "apt-get installed chromium but it is not on PATH"
    return path


class Chrome:
    """A minimal DevTools-protocol client over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome_w = os.pipe()
        self._from_chrome_r, from_chrome_w = os.pipe()

        def child_fds() -> None:
            # chromium reads commands on fd 3 and writes replies on fd 4; dup first so neither end is clobbered
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        # close_fds=False: subprocess would otherwise close fds 3/4 made in preexec_fn
        self.proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     close_fds=False, preexec_fn=child_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_chrome_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe: " + self.proc.stderr.read().decode()[-2000:])
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict = None, session: str = None, timeout: float = 60) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                assert "error" not in reply, reply
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome_w)
        os.close(self._from_chrome_r)


def render_page(page: Path, png: Path, tmp: Path) -> dict:
    """Load ``page`` in headless chromium; return problems, DOM facts and write a full-page screenshot."""
    chrome = Chrome(chromium(), tmp / "chrome-profile")
    try:
        targets = chrome.send("Target.getTargets")["targetInfos"]
        target = next(t for t in targets if t["type"] == "page")
        session = chrome.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            chrome.send(f"{domain}.enable", session=session)
        chrome.send("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": 900, "deviceScaleFactor": 1,
                                                           "mobile": False}, session=session)
        chrome.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        chrome.wait_event("Page.loadEventFired")
        facts = json.loads(chrome.send("Runtime.evaluate", {"returnByValue": True, "expression": """JSON.stringify({
            charts: document.querySelectorAll('svg.chart').length,
            bars: document.querySelectorAll('svg.chart rect.bar').length,
            lines: document.querySelectorAll('svg.chart polyline.line').length,
            slow: document.querySelectorAll('svg.chart rect.slow').length,
            chartBoxes: [...document.querySelectorAll('svg.chart')].map(s => {
                const r = s.getBoundingClientRect(); return [r.width, r.height]; }),
            h2: [...document.querySelectorAll('h2')].map(h => h.textContent),
            links: [...document.querySelectorAll('a')].map(a => a.getAttribute('href')),
            scripts: document.scripts.length,
            analyzerTables: Object.fromEntries([...document.querySelectorAll('h2[id^="analyzer-"]')].map(h => {
                let t = h.nextElementSibling;
                while (t && t.tagName !== 'TABLE' && t.tagName !== 'H2') t = t.nextElementSibling;
                return [h.id, t && t.tagName === 'TABLE' ? [...t.rows].map(r => [...r.cells].map(c => c.textContent))
                                                         : null]; })),
            analyzerWarnings: [...document.querySelectorAll('#analyzer-warnings + ul li')].map(li => li.textContent),
            height: document.documentElement.scrollHeight})"""}, session=session)["result"]["value"])
        chrome.send("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": min(facts["height"], 6000),
                                                           "deviceScaleFactor": 1, "mobile": False}, session=session)
        import base64

        shot = chrome.send("Page.captureScreenshot", {"format": "png"}, session=session)
        png.parent.mkdir(parents=True, exist_ok=True)
        png.write_bytes(base64.b64decode(shot["data"]))
        problems = []
        for ev in chrome.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                problems.append(("console", p))
            elif m == "Runtime.exceptionThrown":
                problems.append(("exception", p))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                problems.append(("log", p["entry"]))
        requests = [ev["params"]["request"]["url"] for ev in chrome.events
                    if ev.get("method") == "Network.requestWillBeSent"]
        return {"facts": facts, "problems": problems, "requests": requests}
    finally:
        chrome.close()


def png_size(path: Path) -> tuple:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
