"""A run killed with SIGKILL mid-collection is analysed offline."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from npuprof import analyse
from npuprof.events import EventKind

CHILD = textwrap.dedent("""
    import os, sys, time
    from npuprof import Profiler, mstx
    out, truth = sys.argv[1], sys.argv[2]
    fd = os.open(truth, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with Profiler(output_path=out, flush_interval=0.2):
        i = 0
        while True:
            mstx.mark(f"m{i}")
            os.write(fd, f"{i} {time.monotonic()}\\n".encode())
            i += 1
            time.sleep(0.001)
""")


def test_sigkill_mid_collection_keeps_everything_older_than_flush_interval(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    truth = tmp_path / "truth.txt"
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out"), str(truth)])
    deadline = time.time() + 60
    while (not truth.exists() or truth.stat().st_size < 20000) and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    kill_t = time.monotonic()
    proc.wait()
    (res,) = analyse(tmp_path / "out")
    marks = set(res.events.of_kind(EventKind.MARK).column_strings("name"))
    lines = [line.split() for line in truth.read_text().splitlines() if line.count(" ") == 1]
    old = [f"m{i}" for i, t in lines if float(t) < kill_t - 0.2 - 0.05]
    assert len(old) > 100
    missing = [m for m in old if m not in marks]
    assert not missing, f"{len(missing)} events older than the flush interval lost"
    assert (res.run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").exists()
