"""``npuprof report``: one self-contained HTML page, rendered in Debian's
headless Chromium (installed by this test's setup when missing) driven over
the DevTools protocol on a pipe: no console error, no exception, no network
request, the charts are there, and a screenshot is taken."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cluster_support import ensure_cluster_plugin, make_job, run_ms_ranks
from plugin_support import KINDS_TABLE, KINDS_TITLE, FailingPlugin, KindsPlugin, registered_plugins

pytestmark = pytest.mark.slow


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


def _png_size(path: Path) -> tuple:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _report(path: Path, *extra: str) -> Path:
    from npuprof.cli import main

    ensure_cluster_plugin()
    assert main(["report", str(path), "--quiet", *extra]) == 0
    return path / "npuprof_report.html"


@pytest.fixture(scope="module")
def job_report(tmp_path_factory):
    from npuprof.cli import main

    job = make_job(tmp_path_factory.mktemp("job16"), ranks=16, steps=6, slow_ranks=(5,))
    assert main(["analyse", str(job.root), "--quiet"]) == 0   # the ranks' traces the page links to (report only reads)
    return job, _report(job.root, "--timeline", "0,5")


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("real2r")
    run_ms_ranks(out, steps=6, world=2)
    return out, _report(out)


def test_report_is_self_contained(job_report):
    _, page = job_report
    text = page.read_text()
    assert "<script" not in text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*['"]?(?:https?:)?//""", text), "no network resource"
    assert "@import" not in text and "url(" not in text


def test_job_report_renders_in_headless_chromium(job_report, tmp_path):
    job, page = job_report
    png = screenshot_dir(tmp_path) / "report_job16.png"
    got = render_page(page, png, tmp_path)
    assert got["problems"] == [], got["problems"]
    assert all(u.startswith("file://") for u in got["requests"]), got["requests"]
    f = got["facts"]
    assert f["h2"][:3] == ["Step time breakdown", "Top operators by time", "Host CPU and memory over time"]
    assert f["charts"] == 5                      # per step, per rank, top ops, CPU, memory
    assert all(w >= 800 and h >= 150 for w, h in f["chartBoxes"])
    # stacked segments per step and per rank (Computing, Communication; this synthetic job's steps are measured
    # over their device activity, as the Ascend tools do, so Free is 0), plus op bars
    assert f["bars"] >= 6 * 2 + 16 * 2
    assert f["lines"] >= 2 and f["slow"] == 1    # the one slow rank is outlined
    assert any(h.endswith("merged_timeline.json") for h in f["links"])
    assert sum(h.endswith("trace_view.json") for h in f["links"]) == 16
    for href in f["links"]:
        assert (page.parent / href).exists(), href   # every link resolves
    w, h = _png_size(png)
    assert w == 1000 and h > 1500


def test_real_run_report_renders_in_headless_chromium(real_report, tmp_path):
    out, page = real_report
    png = screenshot_dir(tmp_path) / "report_real2.png"
    got = render_page(page, png, tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert f["charts"] >= 4 and f["bars"] > 10
    text = page.read_text()
    assert "MatMul" in text and "Slow-rank test not applied" in text
    assert "Communication matrix" in text and "TCP" in text
    assert _png_size(png)[0] == 1000


def test_report_memory_section_renders_in_headless_chromium(tmp_path):
    """A run with memory data: the report shows each rank's peak and the memory timeline of the highest."""
    from npuprof import Profiler

    kept = []
    with Profiler(output_path=tmp_path / "prof", python_memory=True) as prof:
        for _ in range(6):
            kept.append(bytearray(512 * 1024))
            prof.step()
    run = prof.saved_runs[0]
    page = _report(run)
    got = render_page(page, screenshot_dir(tmp_path) / "report_memory.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert "Memory peak per rank" in f["h2"] and "Memory over time, rank 0" in f["h2"]
    text = page.read_text()
    assert text.count("<polygon") >= 1 and "Alive at the peak" in text and "test_report_html.py:" in text


def test_a_plugin_analyzers_table_renders_for_a_run_and_a_job(tmp_path, capsys, monkeypatch):
    """An analyzer registered by a plugin written here gets its section (title, declared columns, rows as
    each rank's analysis made them, the first MAX_ANALYZER_ROWS) in the report of a run and of a job of four
    ranks (a Rank column); one that fails leaves the page whole, with a warning naming its plugin on the page
    and on stderr."""
    from npuprof import Profiler, mstx
    from npuprof.analysis.pipeline import analyse_run
    from npuprof.cli import main
    from npuprof.cluster.ranks import discover_ranks

    ensure_cluster_plugin()
    monkeypatch.setattr("npuprof.report.page.MAX_ANALYZER_ROWS", 12)
    with Profiler(output_path=tmp_path / "prof") as prof:
        for _ in range(3):
            mstx.mark("m")
            prof.step()
    run = prof.saved_runs[0]
    job = make_job(tmp_path / "job", ranks=4, steps=3, slow_ranks=())
    warning = "analyzer 'broken_summary' of plugin 'failing' failed (RuntimeError: boom); its table is left out"
    with registered_plugins(kinds=KindsPlugin(), failing=FailingPlugin()):
        expected = {rank: analyse_run(dirs[0]).tables[KINDS_TABLE].rows()
                    for rank, dirs in discover_ranks(job.root).items()}
        expected_run = analyse_run(run).tables[KINDS_TABLE].rows()
        pages = {}
        for name, path in (("run", run), ("job", job.root)):
            capsys.readouterr()
            assert main(["report", str(path), "--backend", "serial", "--quiet"]) == 0
            pages[name] = path / "npuprof_report.html"
            assert f"warning: rank{'s 0-3' if name == 'job' else ' 0'}: {warning}" in capsys.readouterr().err

    got = render_page(pages["run"], screenshot_dir(tmp_path) / "report_plugin_run.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert KINDS_TITLE in f["h2"] and "Step time breakdown" in f["h2"] and "Analyzer warnings" in f["h2"]
    assert f["analyzerTables"][f"analyzer-{KINDS_TABLE}"] == [["Kind", "Events"]] + \
        [[k, str(n)] for k, n in expected_run]
    assert f["analyzerWarnings"] == [f"rank 0: {warning}"]
    assert any(h.endswith(f"cluster_{KINDS_TABLE}.csv") for h in f["links"])

    got = render_page(pages["job"], screenshot_dir(tmp_path) / "report_plugin_job.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert f["h2"][:3] == ["Step time breakdown", "Top operators by time", "Host CPU and memory over time"]
    assert f["charts"] >= 4 and KINDS_TITLE in f["h2"]
    rows = [[str(r), k, str(n)] for r in sorted(expected) for k, n in expected[r]]
    assert len(rows) > 12
    assert f["analyzerTables"][f"analyzer-{KINDS_TABLE}"] == [["Rank", "Kind", "Events"]] + rows[:12]
    assert f"4 of 4 rank(s); {len(rows)} row(s), the first 12 shown" in pages["job"].read_text()
    assert f["analyzerWarnings"] == [f"ranks 0-3: {warning}"]
    for href in f["links"]:
        assert (pages["job"].parent / href).exists(), href
