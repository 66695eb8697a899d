"""analysis.memory over npuprof's own data: the definition of the peak and of "alive", and a real run's
process RSS as a memory series (profile_memory=True)."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import npuprof
from npuprof.analysis.memory import memory_summary, operator_memory
from npuprof.events import EventKind, EventTable

M = int(EventKind.MEMORY)


def test_peak_alive_set_and_step_follow_the_definition():
    # a: 0..100 (released), b: 20.. (never released), c: 50..60; totals make the peak at c's allocation (t=50)
    ev = EventTable.concat([
        EventTable.from_records(ts=[0, 20, 50], dur=[100, 0, 10], kind=M, name=["a", "b", "c"], type="operator_memory",
                                value=[1024.0, 2048.0, 4096.0],
                                args=['{"Allocation Total Allocated(MB)": "1", "Release Time(us)": "0.1", '
                                      '"Release Total Allocated(MB)": "2"}',
                                      '{"Allocation Total Allocated(MB)": "3"}',
                                      '{"Allocation Total Allocated(MB)": "7", "Release Time(us)": "0.06", '
                                      '"Release Total Allocated(MB)": "3"}']),
        EventTable.from_records(ts=[40], dur=[30], kind=int(EventKind.STEP), name=["ProfilerStep#7"])])
    s = memory_summary(ev)
    assert (s.peak_mb, s.peak_ns, s.peak_step, s.allocations) == (7.0, 50, 7, 3)
    assert [a.name for a in s.live] == ["c", "b", "a"]                  # largest first, all three alive at 50
    assert [a.released_ns for a in s.live] == [60, None, 100]
    assert [r["Name"] for r in operator_memory(ev).records()] == ["a", "b", "c"]


def test_a_run_without_allocations_says_so_and_still_shows_its_rss(tmp_path):
    with npuprof.Profiler(output_path=tmp_path, profile_memory=True) as prof:
        for _ in range(4):
            time.sleep(0.05)
            prof.step()
        deadline = time.monotonic() + 120      # two RSS samples taken, however slow the machine
        while prof._sampler.samples < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    (run,) = prof.saved_runs
    (res,) = npuprof.analyse(run)
    s = memory_summary(res.events)
    assert s.peak_mb is None and s.allocations == 0
    (rss,) = [r for r in s.series if r.name == "Process RSS(B)"]
    assert rss.samples >= 2 and rss.peak > 1 << 20
    done = subprocess.run([sys.executable, "-m", "npuprof", "memory", "-dir", str(run), "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)[0]["peak_mb"] is None
