"""Memory files of real torch_npu runs (profile_memory=True; ../shared/realdata/msinsight, see its README):
operator_memory.csv read row for row and given back as the tool wrote it, npu_module_mem.csv and
memory_record.csv as series, and the peak with what was alive then - checked against the files themselves,
by the definition, not by npuprof's own code."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from realdata import realdata, tree_digest

from npuprof.analysis.memory import (OPERATOR_MEMORY_COLUMNS, memory_record, memory_summary, npu_module_mem,
                                     operator_memory)
from npuprof.analysis.pipeline import load_events
from npuprof.events import EventKind

LEVELS = tuple(f"msinsight/test/data/pytorch/text/level{n}" for n in (0, 1, 2))


def _csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return [{k.strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(fh)]


@pytest.fixture(scope="module", params=[(lv, r) for lv in LEVELS for r in (0, 1)],
                ids=[f"{lv.rpartition('/')[2]}-rank{r}" for lv in LEVELS for r in (0, 1)])
def run(request):
    level, rank = request.param
    run_dir = realdata(f"{level}/rank{rank}_ascend_pt")
    out = run_dir / "ASCEND_PROFILER_OUTPUT"
    if not (out / "operator_memory.csv").is_file():
        pytest.skip(f"{run_dir.name}: the tool wrote no operator_memory.csv at this level (profile_memory off)")
    events, _, warnings = load_events(run_dir)
    assert warnings == []
    return run_dir, out, events


def test_operator_memory_row_for_row_as_the_tool_wrote_it(run):
    _, out, events = run
    tool = _csv(out / "operator_memory.csv")
    assert list(tool[0]) == OPERATOR_MEMORY_COLUMNS            # the exact header
    ours = operator_memory(events).records()
    assert len(ours) == len(tool)
    key = lambda r: (r["Allocation Time(us)"], r["Name"], float(r["Size(KB)"]))   # noqa: E731
    for t, o in zip(sorted(tool, key=key), sorted(ours, key=key)):
        for col in OPERATOR_MEMORY_COLUMNS:
            if col == "Size(KB)":
                assert abs(float(t[col]) - o[col]) <= 1e-6, (t["Name"], col)
            else:
                assert str(o[col]) == t[col], (t["Name"], col, t[col], o[col])


def test_every_memory_series_row_is_read(run):
    _, out, events = run
    counters = events.select(events["kind"] == int(EventKind.COUNTER))
    types = Counter(counters.column_strings("type"))
    module_rows = [r for r in _csv(out / "npu_module_mem.csv") if r["Total Reserved(MB)"] != ""]
    assert types["npu_module_mem"] == len(module_rows)
    record = _csv(out / "memory_record.csv")
    assert types["memory"] == sum(1 for r in record for c in ("Total Allocated(MB)", "Total Reserved(MB)",
                                                             "Total Active(MB)") if r[c] != "")
    (device,) = {r["Device Type"] for r in record}
    assert set(events["device"][events["kind"] == int(EventKind.MEMORY)].tolist()) == {int(device.split(":")[1])}


def test_the_peak_and_what_was_alive_then_by_the_files_own_numbers(run):
    _, out, events = run
    tool = _csv(out / "operator_memory.csv")
    totals = [(float(r["Allocation Total Allocated(MB)"]), r["Allocation Time(us)"]) for r in tool
              if r["Allocation Total Allocated(MB)"]]
    totals += [(float(r["Release Total Allocated(MB)"]), r["Release Time(us)"]) for r in tool
               if r["Release Total Allocated(MB)"]]
    op_peak_mb, _ = max(totals, key=lambda x: x[0])
    # the headline is the largest allocated memory any of the run's files records: operator_memory's running
    # totals and every Total Allocated component of memory_record (PTA, GE, their sum PTA+GE)
    records = [(float(r["Total Allocated(MB)"]), r["Timestamp(us)"], r["Component"])
               for r in _csv(out / "memory_record.csv") if r["Total Allocated(MB)"]]
    record_mb, record_at, component = max(records, key=lambda x: x[0])
    s = memory_summary(events, top=len(tool))
    assert s.allocations == len(tool)
    assert s.peak_mb == max(op_peak_mb, record_mb)
    if record_mb > op_peak_mb:
        assert s.peak_source.startswith(f"{component} ") and s.peak_source.endswith("Total Allocated(MB)")
        assert abs(s.peak_ns / 1000.0 - float(record_at)) <= 0.25      # float64 epoch µs resolution
    from npuprof.readers.time_text import us_text_to_ns

    at = s.peak_ns                                                       # exact ns, as the files' µs text says
    alive = [r for r in tool if us_text_to_ns(r["Allocation Time(us)"]) <= at
             and (not r["Release Time(us)"] or us_text_to_ns(r["Release Time(us)"]) > at)]
    assert sorted(a.size_bytes for a in s.live) == sorted(float(r["Size(KB)"]) * 1024 for r in alive)
    by_name = Counter(r["Name"] for r in alive)
    assert {name: count for name, count, _ in s.live_by_operator} == dict(by_name)
    steps = _csv(out / "step_trace_time.csv")
    assert s.peak_step in {int(float(r["Step"])) for r in steps}
    record_peak = max(float(r["Total Allocated(MB)"]) for r in _csv(out / "memory_record.csv")
                      if r["Component"] == "PTA" and r["Total Allocated(MB)"])
    assert op_peak_mb == record_peak                                     # the allocator's own series agrees


def test_npuprof_memory_answers_and_writes_nothing(run):
    run_dir, _, events = run
    before = tree_digest(run_dir)
    done = subprocess.run([sys.executable, "-m", "npuprof", "memory", "-dir", str(run_dir), "--json", "--top", "3"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (doc,) = json.loads(done.stdout)
    assert doc["peak_mb"] == memory_summary(events).peak_mb and len(doc["live"]) == 3
    text = subprocess.run([sys.executable, "-m", "npuprof", "memory", "-dir", str(run_dir)], capture_output=True,
                          text=True)
    assert text.returncode == 0 and "peak allocated" in text.stdout and "aten::" in text.stdout
    assert tree_digest(run_dir) == before


DB_LEVELS = tuple(f"msinsight/test/data/pytorch/db/level{n}" for n in (0, 1, 2))


@pytest.mark.parametrize("level, rank", [(lv, r) for lv in DB_LEVELS for r in (0, 1)],
                         ids=[f"db-{lv.rpartition('/')[2]}-rank{r}" for lv in DB_LEVELS for r in (0, 1)])
def test_op_memory_of_the_database_gives_the_same_answers_by_its_own_numbers(level, rank):
    import sqlite3

    run_dir = realdata(f"{level}/rank{rank}_ascend_pt")
    (db,) = (run_dir / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db")
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    if not con.execute("SELECT count(*) FROM sqlite_master WHERE name='OP_MEMORY'").fetchone()[0]:
        pytest.skip(f"{run_dir.name}: no OP_MEMORY table (profile_memory off)")
    rows = con.execute("SELECT size, allocationTime, releaseTime, allocationTotalAllocated, releaseTotalAllocated "
                       "FROM OP_MEMORY").fetchall()
    records = con.execute("SELECT totalAllocated, timestamp FROM MEMORY_RECORD WHERE totalAllocated IS NOT NULL"
                          ).fetchall() if con.execute("SELECT count(*) FROM sqlite_master WHERE name='MEMORY_RECORD'"
                                                      ).fetchone()[0] else []
    con.close()
    events, _, warnings = load_events(run_dir)
    assert warnings == []
    s = memory_summary(events, top=len(rows))
    totals = [(a_tot, t) for _, t, _, a_tot, _ in rows if a_tot is not None]
    totals += [(r_tot, rel) for _, _, rel, _, r_tot in rows if r_tot is not None and rel is not None]
    peak_bytes, at = max(totals + records, key=lambda x: x[0])      # the largest of every memory source
    assert s.allocations == len(rows) and s.peak_mb == peak_bytes / 2**20 and s.peak_ns == at
    alive = sorted(size for size, t, rel, _, _ in rows if t <= at and (rel is None or rel > at))
    assert sorted(a.size_bytes for a in s.live) == alive


@pytest.mark.parametrize("file_name, table", [("memory_record.csv", memory_record), ("npu_module_mem.csv", npu_module_mem)])
def test_memory_series_files_given_back_row_for_row(run, file_name, table):
    _, out, events = run
    tool = _csv(out / file_name)
    ours = table(events)
    assert ours.columns == list(tool[0])                      # the exact header, in the tool's order
    numeric = [c for c in ours.columns if c.endswith("(MB)")]
    # a row with no value at all is not a sample (npu_module_mem writes some): nothing to give back
    tool = [r for r in tool if any(r[c] != "" for c in numeric)]

    def key(r):
        return tuple(str(r[c]) for c in ours.columns if c not in numeric) + tuple(
            "" if r[c] == "" else float(r[c]) for c in numeric)
    assert sorted(map(key, tool)) == sorted(map(key, ours.records()))
