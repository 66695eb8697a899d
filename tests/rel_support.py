"""Helpers for npuprof's reliability tests (tests/reliability/test_rel_*.py).

- :func:`run_kill`: the crash-recovery harness. Starts
  ``rel_workloads/crash_child.py`` (a numpy training loop under a Profiler
  that logs its own ground truth), ends it at a chosen instant with SIGKILL,
  SIGTERM, SIGINT, an unhandled exception or ``os._exit``, analyses every run
  directory the child left and checks the ground truth against the events.
- ``counts_summary``: an autouse fixture (import it into a test module) that
  prints how many kills, bad inputs and fuzz cases ran in the terminal
  summary ("npuprof reliability counts").

Example::

    outcome = run_kill(tmp_path / "out", tmp_path, "k1", mode="SIGKILL", delay=0.3)
    assert outcome.checked_events > 0
"""
from __future__ import annotations

import collections
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
CHILD = HERE / "rel_workloads" / "crash_child.py"

# Counts printed in the terminal summary (and quoted in the closing note).
COUNTS: "collections.Counter[str]" = collections.Counter()

# How long after an event its data may still sit in memory: the flush
# interval, the flush itself, and slack for the flusher thread to get the GIL
# and the CPU on a loaded 2-core box. Every loss is also reported.
SCHEDULING_SLACK_S = 0.35
FLUSH_S = 0.05


@dataclass
class Truth:
    events: dict = field(default_factory=dict)    # (thread, id) -> (t0, t1, flag)
    last_id: dict = field(default_factory=dict)   # thread -> last logged id
    ready: Optional[int] = None
    self_kill: Optional[int] = None
    handler: Optional[int] = None
    done: bool = False


def read_truth(path: Path) -> Truth:
    truth = Truth()
    if not path.exists():
        return truth
    data = path.read_bytes()
    for line in data.split(b"\n")[:-1]:   # the last piece is empty or torn
        parts = line.decode().split()
        if not parts:
            continue
        if parts[0] == "E":
            th, i = parts[1], int(parts[2])
            truth.events[(th, i)] = (int(parts[3]), int(parts[4]), int(parts[5]))
            truth.last_id[th] = max(truth.last_id.get(th, -1), i)
        elif parts[0] == "READY":
            truth.ready = int(parts[1])
        elif parts[0] == "K":
            truth.self_kill = int(parts[1])
        elif parts[0] == "H":
            truth.handler = int(parts[1])
        elif parts[0] == "DONE":
            truth.done = True
    return truth


@dataclass
class KillOutcome:
    mode: str
    returncode: int
    killed: bool                   # the child was alive when it was ended
    run_dirs: list
    checked_events: int = 0        # flag-1 events older than the bound, all found
    recorded_events: int = 0       # marks found in the analysed runs
    oldest_lost_age_ms: float = 0.0
    states: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    sources: collections.Counter = field(default_factory=collections.Counter)   # events per producer
    stderr: str = ""


def _wait_ready(proc: subprocess.Popen, timeout: float) -> bool:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    buf = b""
    while time.monotonic() < deadline:
        if not sel.select(timeout=0.05):
            if proc.poll() is not None:
                return False
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            return False
        buf += chunk
        if b"READY" in buf:
            return True
    return False


def run_kill(out: Path, work: Path, tag: str, mode: str, delay: float, *, phase: str = "running",
             flush: float = 0.2, schedule: Optional[list] = None, style: str = "with", threads: int = 1,
             host_sys: bool = False, user_handler: Optional[str] = None, extra_env: Optional[dict] = None,
             framework: Optional[str] = None, hammer: int = 0) -> KillOutcome:
    """Run the child, end it with ``mode`` ``delay`` s after it is ready
    (``phase="startup"``: after it is spawned), analyse and check.

    ``mode``: SIGKILL, SIGTERM, SIGINT (signals sent by this process),
    exception, os_exit (raised / called by the child itself), none (the child
    ends by itself after ``delay`` s: normal interpreter exit).
    Raises AssertionError with the evidence when a guarantee is broken.
    """
    from npuprof.analysis.pipeline import analyse_run

    log_path = work / f"{tag}.truth"
    cfg: dict[str, Any] = {"out": str(out), "log": str(log_path), "tag": tag, "flush": flush,
                           "schedule": schedule, "style": style, "threads": threads, "host_sys": host_sys,
                           "user_handler": user_handler, "max_seconds": 30, "framework": framework,
                           "hammer": hammer}
    if mode in ("exception", "os_exit"):
        cfg["self_kill"] = {"mode": mode, "after": delay}
    if mode == "none":
        cfg["max_seconds"] = delay
    env = dict(os.environ, PYTHONUNBUFFERED="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **(extra_env or {}))
    err_path = work / f"{tag}.stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, str(CHILD), json.dumps(cfg)], stdout=subprocess.PIPE,
                                stderr=err, env=env, cwd=str(work))
        killed = False
        kill_t: Optional[int] = None
        try:
            if mode in ("SIGKILL", "SIGTERM", "SIGINT"):
                sig = getattr(signal, mode)
                if phase == "startup":
                    time.sleep(delay)
                else:
                    if not _wait_ready(proc, 60):
                        raise AssertionError(f"{tag}: child never became ready: {_tail(err_path)}")
                    time.sleep(delay)
                if proc.poll() is None:
                    kill_t = time.perf_counter_ns()
                    os.kill(proc.pid, sig)
                    killed = True
            hang_timeout = float(os.environ.get("REL_HANG_TIMEOUT", 60))
            try:
                rc = proc.wait(timeout=hang_timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGUSR1)   # faulthandler: stacks of every thread to stderr
                time.sleep(1)
                proc.kill()
                proc.wait()
                raise AssertionError(f"{tag}: child still running {hang_timeout:.0f} s after {mode} (hang); "
                                     f"stderr: {_tail(err_path)}") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
    stderr = err_path.read_text(errors="replace")
    truth = read_truth(log_path)
    if mode in ("exception", "os_exit") and truth.self_kill is not None:
        kill_t, killed = truth.self_kill, True
    outcome = KillOutcome(mode=mode, returncode=rc, killed=killed, run_dirs=[], stderr=stderr)
    expected = {"exception": "RuntimeError: injected failure", "SIGINT": "KeyboardInterrupt"}.get(mode)
    if "Traceback" in stderr and (expected is None or stderr.count("Traceback") != 1 or expected not in stderr):
        raise AssertionError(f"{tag}: unexpected traceback in the child:\n{stderr[-3000:]}")

    # Every directory this child created under ``out`` must analyse without error.
    pid = proc.pid
    runs = sorted(p for p in out.glob(f"{tag}_{pid}_*") if p.is_dir()) if out.exists() else []
    outcome.run_dirs = runs
    found: dict = {}
    for run in runs:
        if not any(p.is_file() for p in run.rglob("*")):
            continue   # killed before anything reached the disk: nothing to analyse (a data error, not 0 events)
        try:
            res = analyse_run(run)
        except Exception as e:  # noqa: BLE001 - report any failure with the evidence
            raise AssertionError(f"{tag}: analysing {run} after {mode} failed: {type(e).__name__}: {e}\n"
                                 f"files: {sorted(str(p.relative_to(run)) for p in run.rglob('*'))}") from e
        outcome.states.append(res.info.state or None)
        outcome.warnings.extend(res.warnings)
        outcome.sources.update(res.events.column_strings("source"))
        clock = res.info.clock
        marks = res.events.select(res.events["kind"] == 2)
        if not len(marks):
            continue
        if clock is None:
            raise AssertionError(f"{tag}: {run} has events but no clock anchor in profiler_info")
        offset = clock.offset_ns
        names = marks.column_strings("name")
        mono = marks["ts"] - offset
        for name, t in zip(names, mono.tolist()):
            parts = name.split(":")
            if len(parts) != 3 or parts[0] != tag:
                raise AssertionError(f"{tag}: unexpected mark {name!r} in {run}")
            key = (parts[1], int(parts[2]))
            if key in found:
                raise AssertionError(f"{tag}: mark {name} recorded twice")
            found[key] = t
    outcome.recorded_events = len(found)
    _check_truth(tag, mode, truth, found, kill_t, flush, outcome)
    return outcome


def _check_truth(tag: str, mode: str, truth: Truth, found: dict, kill_t: Optional[int], flush: float,
                 outcome: KillOutcome) -> None:
    # Nothing recorded that the child did not do, at the time it did it.
    for key, t in found.items():
        logged = truth.events.get(key)
        if logged is None:
            # only the very last mark of a thread may be recorded but not yet logged
            if key[1] != truth.last_id.get(key[0], -1) + 1:
                raise AssertionError(f"{tag}: recorded mark {key} was never made by the child")
            continue
        t0, t1, flag = logged
        if flag == 0:
            raise AssertionError(f"{tag}: mark {key} recorded while no profiler was recording")
        if not t0 <= t <= t1:
            raise AssertionError(f"{tag}: mark {key} has time {t}, outside [{t0}, {t1}] when it was made")
    if kill_t is None:   # normal end or a signal that arrived after the child had finished
        horizon = None
    elif mode in ("SIGKILL", "os_exit"):
        horizon = kill_t - int((flush + FLUSH_S + SCHEDULING_SLACK_S) * 1e9)
    else:                # SIGTERM, SIGINT, exception: the exit path flushes everything
        horizon = kill_t
    lost_ages = []
    checked = 0
    for key, (t0, t1, flag) in truth.events.items():
        if flag != 1:
            continue
        if key not in found:
            if kill_t is not None:
                lost_ages.append((kill_t - t1) / 1e6)
            if horizon is None or t1 < horizon:
                raise AssertionError(
                    f"{tag}: mark {key} made {((kill_t or t1) - t1) / 1e6:.1f} ms before {mode} is missing; "
                    f"{sum(1 for k, v in truth.events.items() if v[2] == 1 and k not in found)} of "
                    f"{sum(1 for v in truth.events.values() if v[2] == 1)} recorded marks lost")
        elif horizon is None or t1 < horizon:
            checked += 1
    outcome.checked_events = checked
    outcome.oldest_lost_age_ms = max(lost_ages) if lost_ages else 0.0


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


# -- fault injection -----------------------------------------------------------------------------

class FaultyWrite:
    """Replacement for ``os.write`` in npuprof.rawstore that fails with
    ``errno`` once ``budget`` bytes have been written (a short write first, as
    a full disk does)."""

    def __init__(self, budget: int, errno_: int) -> None:
        self.budget = budget
        self.errno = errno_
        self.calls = 0
        self.failures = 0
        self._real = os.write

    def __call__(self, fd: int, data: Any) -> int:
        self.calls += 1
        if self.budget <= 0:
            self.failures += 1
            raise OSError(self.errno, os.strerror(self.errno))
        n = min(len(data), self.budget)
        written = self._real(fd, bytes(data[:n]))
        self.budget -= written
        return written


def tree_modes(root: Path) -> dict:
    """{relative path: (is_dir, mode)} for everything under ``root``."""
    out = {}
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        out[str(p.relative_to(root))] = (p.is_dir(), st.st_mode & 0o7777)
    return out


def marks_of(result: Any) -> np.ndarray:
    return np.asarray(result.events.select(result.events["kind"] == 2).column_strings("name"), dtype=object)


# -- counts in the terminal summary ----------------------------------------------------------------

class _CountsReporter:
    """Registered once per session by the ``counts_summary`` fixture."""

    @staticmethod
    def pytest_terminal_summary(terminalreporter: Any) -> None:
        if not COUNTS:
            return
        tr = terminalreporter
        tr.section("npuprof reliability counts")
        kills = sum(v for k, v in COUNTS.items() if k.startswith("kill:"))
        if kills:
            detail = ", ".join(f"{k[5:]}={v}" for k, v in sorted(COUNTS.items()) if k.startswith("kill:"))
            tr.write_line(f"kills: {kills} ({detail})")
        for key in sorted(k for k in COUNTS if not k.startswith("kill:")):
            tr.write_line(f"{key}: {COUNTS[key]}")


@pytest.fixture(autouse=True, scope="module")
def counts_summary(request: Any) -> None:
    """Import into a test module to get the counts printed at the end of the run."""
    pm = request.config.pluginmanager
    if not pm.has_plugin("npuprof-rel-counts"):
        pm.register(_CountsReporter(), "npuprof-rel-counts")


# -- sample data for corruption and fuzz tests -------------------------------------------------------

def make_run(root: Path, chunks: int = 5, per_chunk: int = 50, tag: str = "c") -> tuple:
    """A finished run whose raw segment holds exactly one record per chunk of
    ``per_chunk`` marks named ``{tag}{chunk}:{i}``. Returns (run_dir, segment path)."""
    from npuprof import Profiler, mstx
    from npuprof.recorder import active_recorder

    with Profiler(output_path=root, flush_interval=3600, worker_name="sample") as prof:
        rec = active_recorder()
        for c in range(chunks):
            for i in range(per_chunk):
                mstx.mark(f"{tag}{c}:{i}")
            rec.flush()
    run = prof.saved_runs[0]
    segments = sorted((run / "NPUPROF").glob("events_*.npr"))
    assert len(segments) == 1
    return run, segments[0]


def record_spans(data: bytes) -> list:
    """(start, end) byte offsets of each framed record in a well-formed segment."""
    from npuprof.rawstore import FRAME

    spans, pos = [], 0
    while pos < len(data):
        _, length, _ = FRAME.unpack_from(data, pos)
        spans.append((pos, pos + FRAME.size + length))
        pos += FRAME.size + length
    return spans
