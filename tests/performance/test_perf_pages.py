"""npuprof.pages: analysis runs with numpy's huge-page advice off and leaves it as it found it; populate faults
rows in without changing them."""
from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from npuprof import pages
from npuprof.analysis import pipeline
from npuprof.plugins import analyzers as builtin_analyzers
from npuprof.export import writer
from npuprof.pages import ordinary_pages, populate


SWITCH = pages.numpy_hugepage_switch()
pytestmark = pytest.mark.skipif(SWITCH is None, reason=f"numpy {np.__version__} has no huge-page switch")


def advised() -> bool:
    """numpy's current setting, read without changing it."""
    now = SWITCH(True)
    SWITCH(now)
    return now


@pytest.fixture
def advice_on():
    before = SWITCH(True)
    yield
    SWITCH(before)


def test_off_inside_restored_after_nested_and_on_error(advice_on):
    with ordinary_pages():
        assert not advised()
        with ordinary_pages():
            assert not advised()
        assert not advised()          # the inner block restores what it found: off
    assert advised()
    with pytest.raises(KeyError):
        with ordinary_pages():
            raise KeyError("x")
    assert advised()


def test_a_user_who_turned_it_off_keeps_it_off():
    before = SWITCH(False)
    try:
        with ordinary_pages():
            pass
        assert not advised()
    finally:
        SWITCH(before)


def test_loading_analysing_and_writing_run_without_the_advice(tmp_path, advice_on, monkeypatch):
    from synth import make_run

    seen: dict[str, bool] = {}
    real_assign = pipeline.assign_steps
    real_write = writer.write_outputs

    def assign(events):
        seen["load"] = advised()
        return real_assign(events)

    def write(*args, **kwargs):
        seen["write"] = advised()
        return real_write(*args, **kwargs)

    monkeypatch.setattr(pipeline, "assign_steps", assign)
    monkeypatch.setattr(writer, "write_outputs", write)
    real_step_times = builtin_analyzers.STEP_TRACE_TIME.compute

    def step_times(events):
        seen["analyse"] = advised()
        return real_step_times(events)

    monkeypatch.setattr(builtin_analyzers, "BUILTIN_ANALYZERS", tuple(
        dataclasses.replace(a, compute=step_times) if a.table == "step_trace_time" else a
        for a in builtin_analyzers.BUILTIN_ANALYZERS))
    run = make_run(tmp_path / "runs", 2_000)

    writer.analyse_and_export(run)
    assert seen == {"load": False, "analyse": False, "write": False}
    assert advised()

    seen.clear()
    pipeline.analyse_run(run)          # the path show, report and Profiler.key_averages take
    assert seen == {"load": False, "analyse": False}
    assert advised()


# -- populate ---------------------------------------------------------------------------------------

def _rss_bytes() -> int:
    import mmap

    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * mmap.PAGESIZE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux's")
def test_populate_faults_pages_in_and_changes_no_content():
    n = (64 << 20) // 8
    with ordinary_pages():
        fresh = np.empty(n, dtype=np.int64)          # 64 MB: mapped, not yet touched
    fresh[: n // 4] = np.arange(n // 4)
    before = _rss_bytes()
    if not populate(fresh, 0, n):
        pytest.skip("populate declined: no MADV_POPULATE_WRITE here (Linux 5.14+), or the advice is accepted "
                    "and ignored (qemu-user)")
    grown = _rss_bytes() - before
    assert grown > (48 << 20) * 0.9                  # the untouched three quarters are resident now
    assert np.array_equal(fresh[: n // 4], np.arange(n // 4))
    before = _rss_bytes()
    fresh[n // 4:] = 7                               # already resident: writing it adds next to nothing
    assert _rss_bytes() - before < grown // 10


def test_populate_declines_what_it_cannot_fault_in():
    assert not populate(np.broadcast_to(np.int64(1), (1 << 20,)), 0, 1 << 20)   # one value, no memory per row
    assert not populate(np.zeros((4, 4)), 0, 4)
    assert not populate(np.zeros(1 << 20)[::2], 0, 1 << 19)
    supported = populate(np.zeros(1 << 16), 0, 1 << 16)
    assert populate(np.zeros(16), 10, 3) is supported        # an empty range: nothing to do, not a refusal


def test_reading_raw_data_faults_in_the_rows_ahead_and_reads_the_same(tmp_path, monkeypatch):
    from npuprof import rawstore
    from npuprof.events import EventTable

    parts = [EventTable.from_records(ts=np.arange(2_000) + 10_000 * i, dur=1, tid=i,
                                     name=[f"s{i}_{j % 5}" for j in range(2_000)]) for i in range(8)]
    raw = rawstore.RawWriter(tmp_path / "NPUPROF", segment_bytes=1)   # one record per segment
    for t in parts:
        raw.append(t)
    raw.close()
    asked: list[tuple[int, int]] = []
    real = rawstore.populate
    monkeypatch.setattr(rawstore, "populate", lambda col, lo, hi: asked.append((lo, hi)) or real(col, lo, hi))
    table, report = rawstore.read_raw_dir(tmp_path / "NPUPROF")
    expected = EventTable.concat(parts)
    assert not report.problems and len(table) == len(expected)
    for key in ("ts", "dur", "tid"):
        assert table[key].tolist() == expected[key].tolist()
    assert table.column_strings("name") == expected.column_strings("name")
    assert asked, "no rows were faulted in ahead"
    # never past the rows the segments read so far can hold at the rate seen (all segments alike here)
    assert max(hi for _, hi in asked) <= len(expected)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux's")
def test_advice_accepted_but_ignored_is_declined_and_not_asked_again(monkeypatch):
    """qemu-user answers 0 to madvise advice it does not emulate and faults nothing in: populate checks
    once (mincore on a mapping of its own) and declines as on a kernel without the call."""
    real = pages.libc_function
    calls = []

    def ignoring_madvise(address, length, advice):
        calls.append(advice)
        return 0

    monkeypatch.setattr(pages, "libc_function", lambda name, *a, **k: ignoring_madvise if name == "madvise"
                        else real(name, *a, **k))
    monkeypatch.setattr(pages, "_refused", False)
    monkeypatch.setattr(pages, "_checked", False)
    column = np.zeros(1 << 16)
    assert populate(column, 0, 1 << 16) is False
    assert calls == [pages.MADV_POPULATE_WRITE]          # the check only, on its own mapping
    assert populate(column, 0, 1 << 16) is False and len(calls) == 1
    assert not column.any()
