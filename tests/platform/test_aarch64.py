"""npuprof on aarch64 (scripts/aarch64/check.py, ``make test-aarch64``): Debian's arm64 CPython under
qemu-user with 64 KiB pages, installed with its own pip, the C modules cross-built; recording, analysis
to every output (md5 equal to this machine's) and the C-vs-Python parity tests there.

The end-to-end test below runs on any platform; check.py also runs it under qemu at 4 KiB and 64 KiB pages."""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RECORD = r'''
import sys, threading
import npuprof
from npuprof import mstx, record_function

THREADS, EACH = 4, 300


def work(i):
    for j in range(EACH):
        with record_function(f"t{i}.block"):
            mstx.mark(f"t{i}.mark")
        rid = mstx.range_start(f"t{i}.load", domain="io")
        mstx.range_end(rid)


with npuprof.Profiler(output_path=sys.argv[1], activities=["CPU"]) as prof:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
print(prof.saved_runs[0])
'''


def test_multithreaded_recording_and_cli_end_to_end(tmp_path):
    """Four threads record ranges and marks; ``npuprof analyse`` (text and db) and ``npuprof show`` on the
    run, each a fresh process of this interpreter, no framework installed or imported."""
    script = tmp_path / "record.py"
    script.write_text(RECORD)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    run = Path(done.stdout.strip().splitlines()[-1])
    cli = [sys.executable, "-m", "npuprof"]
    done = subprocess.run([*cli, "analyse", str(run), "--export-type", "text", "db"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = run / "ASCEND_PROFILER_OUTPUT"
    trace = json.loads((out / "trace_view.json").read_bytes())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    for i in range(4):
        named = [e for e in events if e.get("name") in (f"t{i}.block", f"t{i}.mark", f"t{i}.load")]
        assert len(named) == 3 * 300, f"thread {i}: {len(named)} of 900 events in trace_view.json"
        assert len({e["tid"] for e in named}) == 1
    assert len({e["tid"] for e in events if str(e.get("name", "")).startswith("t")}) == 4
    assert list(out.glob("*.db")), sorted(p.name for p in out.iterdir())
    done = subprocess.run([*cli, "show", str(run)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, COLUMNS="160"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "t0.block" in done.stdout


def _why_not_here() -> str:
    """Why the arm64 environment cannot be set up on this machine ('' when it can)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return f"the qemu-user recipe is for x86-64 Linux hosts, this is {sys.platform} {platform.machine()}"
    tools = [t for t in ("qemu-aarch64-static", "aarch64-linux-gnu-gcc") if shutil.which(t) is None]
    root_apt = os.geteuid() == 0 and shutil.which("apt-get") and shutil.which("dpkg")
    if tools and not root_apt:
        return f"{' and '.join(tools)} not installed, and no root apt-get here to install them (make system-deps)"
    cache = Path(os.environ.get("NPUPROF_AARCH64_CACHE", Path.home() / ".cache" / "npuprof-aarch64"))
    if not (cache / "root" / ".complete").exists() and not root_apt:
        return "Debian's arm64 packages are not cached and there is no root dpkg/apt-get to fetch them"
    return ""


@pytest.mark.slow
@pytest.mark.skipif(bool(_why_not_here()), reason=_why_not_here() or "-")
def test_install_record_analyse_and_parity_on_aarch64_with_64k_pages(tmp_path):
    """The CI subset of ``make test-aarch64``: the arm64 interpreter's ``pip install .`` builds both C
    modules, they load at 64 KiB pages, every output of one synthetic run is byte-identical to this
    machine's, and the parity tests (which record with both implementations) pass there."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "aarch64" / "check.py"), "--smoke",
                           "--build", str(tmp_path / "aarch64")],
                          cwd=ROOT, capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "aarch64 65536 True True" in done.stdout
    assert "PASS: outputs byte-identical to x86_64" in done.stdout
    assert "PASS: tests at 65536-byte pages" in done.stdout
