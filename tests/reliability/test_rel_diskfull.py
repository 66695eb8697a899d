"""Disk full and write errors: the training goes on, npuprof warns once,
stops collecting, and everything written before stays readable.

Three ways to make writing fail: a fault-injecting ``write`` in the raw store
(ENOSPC, EIO, EFBIG, a short write then ENOSPC), a 2 MB tmpfs mounted in a
private mount namespace (real ENOSPC), and RLIMIT_FSIZE (real EFBIG). Plus
``storage_limit``: the oldest raw data is aged out, the directory stays under
the limit and the run says so.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rel_support as rs
from npuprof import Profiler, analyse, mstx, schedule
from npuprof import rawstore
from npuprof.compiled import FALLBACK_LINE_PREFIX
from npuprof.analysis.pipeline import analyse_run
from npuprof.recorder import active_recorder
from npuprof.runinfo import read_info
from rel_support import counts_summary  # noqa: F401

CHILD = Path(__file__).resolve().parents[1] / "rel_workloads" / "diskfull_child.py"


def _npuprof_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "npuprof" and r.levelno >= logging.WARNING]


def _train_a_bit(w: np.ndarray) -> np.ndarray:
    x = np.ones((64, 8))
    return w - 0.01 * (x.T @ (x @ w - 1.0)) / len(x)


@pytest.mark.parametrize("err,short", [(errno.ENOSPC, False), (errno.EIO, False), (errno.EFBIG, False),
                                       (errno.ENOSPC, True)])
def test_write_error_warns_once_stops_collecting_keeps_earlier_data(tmp_path, monkeypatch, caplog, err, short):
    caplog.set_level(logging.INFO, logger="npuprof")
    prof = Profiler(output_path=tmp_path / "out", flush_interval=3600, host_sys=["cpu"], host_sys_usage_freq=200)
    rec = active_recorder()
    for i in range(1000):
        mstx.mark(f"ok:{i}")
    assert rec.flush() >= 1000
    fault = rs.FaultyWrite(budget=300 if short else 0, errno_=err)
    monkeypatch.setattr(rawstore, "_write", fault)
    for i in range(1000):
        mstx.mark(f"lost:{i}")
    rec.flush()                       # fails: the chunk of "lost" marks never reaches the disk
    assert active_recorder() is None  # annotations stop buffering at once
    deadline = time.monotonic() + 5   # and host sampling ends without waiting for a step()
    while any(t.name == "npuprof-hostsys" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "npuprof-hostsys" for t in threading.enumerate())
    failures_at_error = fault.failures
    w = np.zeros((8, 1))
    for step in range(20):            # the training goes on, profiler calls included
        w = _train_a_bit(w)
        mstx.mark(f"after:{step}")
        prof.step()
    prof.stop()
    assert np.isfinite(w).all()
    assert fault.failures == failures_at_error == 1, "collection did not stop after the first error"

    warnings = _npuprof_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "writing profiling data failed" in warnings[0] and os.strerror(err) in warnings[0]

    (run,) = prof.saved_runs
    info = read_info(run)["npuprof"]
    assert info["state"] == "stopped"
    assert os.strerror(err) in info["collection_error"]
    assert info["events_dropped"] >= 1000
    monkeypatch.undo()                # analysis writes its outputs normally
    from npuprof.export.writer import export_result

    res = analyse_run(run)
    export_result(res)
    names = set(rs.marks_of(res).tolist())
    assert {f"ok:{i}" for i in range(1000)} <= names
    assert not any(n.startswith(("lost:", "after:")) for n in names)
    if short:   # the record cut short by the full disk is dropped and reported, not fatal
        assert any("torn record" in w_ for w_ in res.warnings), res.warnings
    assert (run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").stat().st_size > 0
    rs.COUNTS["write faults injected"] += 1


def test_write_error_in_a_schedule_opens_no_more_windows(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="npuprof")
    fault = rs.FaultyWrite(budget=0, errno_=errno.ENOSPC)
    with Profiler(output_path=tmp_path / "out", flush_interval=3600,
                  schedule=schedule(wait=0, warmup=0, active=2)) as prof:
        for step in range(12):
            mstx.mark(f"s{step}")
            if step == 3:             # second window: its first flush fails
                monkeypatch.setattr(rawstore, "_write", fault)
                active_recorder().flush()
            prof.step()
    monkeypatch.undo()
    assert len(_npuprof_warnings(caplog)) == 1
    runs = sorted((tmp_path / "out").glob("*_ascend_*"))
    assert len(runs) == 2 == len(prof.saved_runs)     # no window opened after the failure
    assert {"s0", "s1"} <= set(rs.marks_of(analyse_run(runs[0])).tolist())
    assert "collection_error" in read_info(runs[1])["npuprof"]


def _in_private_tmpfs(size: str, mountpoint: Path, argv: list) -> list:
    """argv run inside a new mount namespace with a tmpfs of ``size`` at
    ``mountpoint``; the mount vanishes with the process."""
    script = 'mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@"'
    for unshare in (["unshare", "--user", "--map-root-user", "--mount"], ["unshare", "--mount"]):
        probe = subprocess.run([*unshare, "sh", "-c", script, "sh", "64k", str(mountpoint), "true"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return [*unshare, "sh", "-c", script, "sh", size, str(mountpoint), *argv]
    pytest.skip(f"cannot mount a small filesystem here (no mount namespaces): {probe.stderr.strip()}")


def _run_child(argv: list) -> tuple[subprocess.CompletedProcess, rs.Truth, list[int]]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    truth = rs.Truth()
    failed_at = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "E":
            truth.events[("d", int(parts[1]))] = (int(parts[2]), int(parts[3]), int(parts[4]))
        elif parts and parts[0] == "F":
            failed_at.append(int(parts[1]))
        elif parts and parts[0] == "DONE":
            truth.done = True
    return proc, truth, failed_at


def _check_child(proc, truth, failed_at, run_root: Path, problem: str) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert truth.done, "the training did not run to its end"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    # the one line about the pure-Python fallback (NPUPROF_PURE_PYTHON=1, no compiler) is not about this run
    warnings = [line for line in proc.stderr.splitlines()
                if line.startswith("npuprof:") and not line.startswith(FALLBACK_LINE_PREFIX)]
    assert len(warnings) == 1, warnings
    assert "writing profiling data failed" in warnings[0] and problem in warnings[0]
    assert len(failed_at) == 1
    (run,) = sorted(run_root.glob("diskfull_*_ascend_*"))
    res = analyse_run(run)
    found = {int(n.split(":")[1]) for n in rs.marks_of(res).tolist()}
    horizon = failed_at[0] - int((0.05 + rs.FLUSH_S + rs.SCHEDULING_SLACK_S) * 1e9)
    old = [i for (_, i), (t0, t1, flag) in truth.events.items() if flag == 1 and t1 < horizon]
    assert len(old) > 500, "the filesystem filled up too early for the check to mean anything"
    missing = [i for i in old if i not in found]
    assert not missing, f"{len(missing)} marks written before the failure are not readable"
    after = [i for (_, i), v in truth.events.items() if v[2] == 0]
    assert after and not found & set(after)
    return {"run": run, "result": res, "checked": len(old)}


def test_enospc_on_a_full_tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    copy = tmp_path / "copy"
    # 2.6 MB fill up well into the run (~4.6 MB of raw data in all): enough events are older than the
    # failure horizon on a slow machine
    cfg = {"out": str(mnt / "out"), "steps": 3000, "marks": 40, "flush": 0.05, "copy_to": str(copy)}
    argv = _in_private_tmpfs("2600k", mnt, [sys.executable, str(CHILD), json.dumps(cfg)])
    proc, truth, failed_at = _run_child(argv)
    checked = _check_child(proc, truth, failed_at, copy, "No space left on device")
    rs.COUNTS["write faults injected"] += 1
    print(f"ENOSPC on a 2.6 MB tmpfs: {checked['checked']} marks made before the failure all readable")


def test_efbig_under_rlimit_fsize(tmp_path):
    out = tmp_path / "out"
    # 2 MB fill up about halfway into the run (~3.6 MB of raw data in all): enough events are older than the
    # failure horizon even on a slow machine
    cfg = {"out": str(out), "steps": 2400, "marks": 40, "flush": 0.05, "fsize": 2 << 20}
    proc, truth, failed_at = _run_child([sys.executable, str(CHILD), json.dumps(cfg)])
    checked = _check_child(proc, truth, failed_at, out, "File too large")
    info = checked["result"].info.raw["npuprof"]
    assert info["state"] == "stopped" and "File too large" in info["collection_error"]
    assert info["events_dropped"] > 0
    rs.COUNTS["write faults injected"] += 1


def test_storage_limit_ages_out_the_oldest_raw_data_and_says_so(tmp_path):
    limit = 1 << 20
    with Profiler(output_path=tmp_path / "out", flush_interval=3600, storage_limit="1MB") as prof:
        rec = active_recorder()
        i = 0
        for chunk in range(40):
            for _ in range(2000):
                mstx.mark(f"m:{i}")
                i += 1
            rec.flush()
            prof.step()
    (run,) = prof.saved_runs
    raw = run / rawstore.RAW_DIR
    segments = list(raw.glob(rawstore.SEGMENT_GLOB))
    assert sum(p.stat().st_size for p in segments) <= limit
    report = json.loads((raw / rawstore.STORAGE_REPORT).read_text())
    assert report["limit_bytes"] == limit and report["aged_out_segments"] and report["bytes_aged_out"] > 0
    assert read_info(run)["npuprof"]["storage"]["aged_out_segments"] == report["aged_out_segments"]
    (res,) = analyse(run)
    ids = sorted(int(n.split(":")[1]) for n in rs.marks_of(res).tolist())
    # what is left is the newest data, without holes
    assert ids == list(range(ids[0], i)) and ids[0] > 0 and len(ids) > 5000
    assert any("aged out" in w for w in res.warnings), res.warnings


def test_failed_output_write_leaves_no_empty_or_partial_file(tmp_path):
    """A final file is renamed into place only once fully written."""
    from npuprof.fileio import atomic_write

    target = tmp_path / "trace_view.json"
    atomic_write(target, b'{"old": true}')

    def explode(fh):
        fh.write(b'{"traceEvents": [')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError):
        atomic_write(target, explode)
    assert target.read_bytes() == b'{"old": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["trace_view.json"]


FORKED_CSV_SCRIPT = r"""
import json, os, sys
from npuprof.cli import main
from npuprof.export import csvfiles
forked = []
real = csvfiles.ForkedFile
csvfiles.FORK_MIN_ROWS = 1                      # every CSV by a child of its own
csvfiles.available_cores = lambda: 2            # as on a machine with a second core
csvfiles.ForkedFile = lambda *a: forked.append(a[0].name) or real(*a)
code = main(["analyse", sys.argv[1], "-o", sys.argv[2]])
left = sorted(str(p.relative_to(sys.argv[2])) for p in __import__("pathlib").Path(sys.argv[2]).rglob("*") if p.is_file())
print(json.dumps({"code": code, "forked": forked, "left": left}))
"""


def test_enospc_in_a_forked_csv_fails_the_analysis_by_name_and_leaves_no_part_of_it(tmp_path):
    """A CSV written by a forked child on a full filesystem: the child's real ENOSPC is raised in the
    analysing process, the CSV exporter is reported failed by name, the command exits 1, and neither
    the file nor its temporary remains (no analyse.done either): a table is never silently missing."""
    from synth import make_run

    run = make_run(tmp_path / "runs", 30_000)
    ref = tmp_path / "ref"
    done = subprocess.run([sys.executable, "-c", FORKED_CSV_SCRIPT, str(run), str(ref)], capture_output=True,
                          text=True, timeout=300)
    assert json.loads(done.stdout.splitlines()[-1])["code"] == 0, done.stderr
    (out_dir,) = {p.parent for p in ref.rglob("kernel_details.csv")}
    sizes = {p.name: p.stat().st_size for p in out_dir.iterdir()}
    # room for every file but kernel_details.csv (the trace is written first, the CSVs after it)
    room = sum(-(-s // 4096) * 4096 for name, s in sizes.items() if name != "kernel_details.csv")
    assert sizes["kernel_details.csv"] > 256 << 10
    mnt = tmp_path / "small"
    mnt.mkdir()
    argv = _in_private_tmpfs(f"{(room + (128 << 10)) // 1024}k", mnt,
                             [sys.executable, "-c", FORKED_CSV_SCRIPT, str(run), str(mnt / "out")])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout.splitlines()[-1])
    assert "kernel_details.csv" in report["forked"]
    assert report["code"] == 1
    assert "exporter 'exporters' failed: OSError: [Errno 28] No space left on device" in proc.stderr
    left = [Path(p).name for p in report["left"]]
    assert "trace_view.json" in left
    assert "kernel_details.csv" not in left and "analyse.done" not in left
    assert not [n for n in left if ".tmp." in n]
    rs.COUNTS["write faults injected"] += 1
