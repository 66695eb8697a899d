"""The exporter seam: an exporter is a function of the AnalysisResult and a target folder, registered
through the plugin host; from the writer's concurrency size the writer runs every exporter at once on its
own threads while the analyzers run, and an exporter that reads a table waits for it; below it they run
one after another on the calling thread once the analyzers are done."""
from __future__ import annotations

import dataclasses
import sys
import threading
import time
from pathlib import Path

import pytest

from npuprof import hookimpl
from npuprof.errors import ProfilerDataError
from npuprof.export import trace_json, writer
from npuprof.export.csvfiles import write_csv
from npuprof.plugins import analyzers as builtin_analyzers
from npuprof.plugins.manager import get_plugin_host

from synth import make_run


@pytest.fixture
def synthetic_run(tmp_path):
    return make_run(tmp_path / "runs", 20_000)


@pytest.fixture
def plugin():
    host = get_plugin_host()
    added = []

    def register(obj, name):
        host.register(obj, name=name)
        added.append(name)

    yield register
    for name in added:
        host.unregister(name)


@pytest.fixture
def concurrent(monkeypatch):
    """The writer runs this test's small run as it runs a large one: exporters beside the analyzers."""
    monkeypatch.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)


def test_a_third_party_exporter_runs_through_the_seam_beside_the_analyzers(synthetic_run, plugin, monkeypatch,
                                                                           concurrent):
    """Its events-only file is written while an analyzer still runs (the analyzer waits for it), its table
    file once the table exists; it ran on a thread of the writer's executor and its files are listed."""
    trace_written = threading.Event()
    seen = {}

    class EventCounts:   # a third-party exporter: a plain function of the result and the target
        @hookimpl
        def npuprof_export(self, result, target):
            seen["thread"] = threading.current_thread().name
            counts = target.output_dir / "event_count.txt"
            target.output_dir.mkdir(parents=True, exist_ok=True)
            counts.write_text(str(len(result.events)))
            trace_written.set()
            ops = write_csv(result.tables["op_statistic"], target.output_dir / "my_op_statistic.csv")
            return [counts, ops]

    real = builtin_analyzers.STEP_TRACE_TIME.compute

    def step_times(events):
        seen["exporter_wrote_during_analysis"] = trace_written.wait(timeout=60)
        return real(events)

    _replace_builtin(monkeypatch, "step_trace_time", step_times)
    plugin(EventCounts(), "event_counts")
    assert "event_counts" in writer.exporter_names()
    (run,) = writer.analyse_and_export(synthetic_run)
    out = synthetic_run / "ASCEND_PROFILER_OUTPUT"
    assert seen["exporter_wrote_during_analysis"] is True
    assert seen["thread"].startswith(writer.EXPORT_THREAD_PREFIX)
    assert (out / "event_count.txt").read_text() == str(len(run.result.events)) == "20000"
    assert (out / "my_op_statistic.csv").read_bytes() == (out / "op_statistic.csv").read_bytes()
    assert {out / "event_count.txt", out / "my_op_statistic.csv", out / "analyse.done"} <= set(run.outputs)
    assert not run.failures


def test_a_small_run_s_exporters_run_here_in_turn_once_the_analyzers_are_done(synthetic_run, plugin):
    """Below the writer's concurrency size no thread is started: a third-party exporter runs on the calling
    thread, every table already there, and its files are listed as at any size."""
    seen = {}

    class TableCopy:
        @hookimpl
        def npuprof_export(self, result, target):
            seen["thread"] = threading.current_thread()
            seen["tables"] = type(result.tables)
            return [write_csv(result.tables["op_statistic"], target.output_dir / "my_op_statistic.csv")]

    plugin(TableCopy(), "table_copy")
    before = {t.ident for t in threading.enumerate()}
    (run,) = writer.analyse_and_export(synthetic_run)
    out = synthetic_run / "ASCEND_PROFILER_OUTPUT"
    assert len(run.result.events) < writer.CONCURRENT_MIN_EVENTS
    assert seen["thread"] is threading.current_thread() and seen["tables"] is dict
    assert not [t for t in threading.enumerate() if t.ident not in before
                and t.name.startswith(writer.EXPORT_THREAD_PREFIX)]
    assert (out / "my_op_statistic.csv").read_bytes() == (out / "op_statistic.csv").read_bytes()
    assert {out / "my_op_statistic.csv", out / "trace_view.json", out / "analyse.done"} <= set(run.outputs)
    assert not run.failures


def test_a_table_file_is_written_while_the_later_analyzers_still_run(synthetic_run, monkeypatch, tmp_path):
    """The CSV writer takes each table as soon as its analyzer has made it: step_trace_time.csv (the first
    analyzer's) is complete while range_statistic's analyzer runs, and every file is the same as when the
    analysis is done before any file is written."""
    from npuprof.analysis.pipeline import analyse_run

    whole = analyse_run(synthetic_run)
    before = tmp_path / "after_the_analysis"
    writer.write_outputs(whole, writer.ExportTarget(before))
    seen = {}
    real = next(a for a in builtin_analyzers.BUILTIN_ANALYZERS if a.table == "range_statistic").compute

    def ranges(events):
        early = synthetic_run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
        deadline = time.monotonic() + 60
        while not early.is_file() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["step_trace_time.csv"] = early.read_bytes() if early.is_file() else None
        return real(events)

    _replace_builtin(monkeypatch, "range_statistic", ranges)
    monkeypatch.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)     # a small run's exporters wait for every table
    (run,) = writer.analyse_and_export(synthetic_run)
    out = synthetic_run / "ASCEND_PROFILER_OUTPUT"
    assert seen["step_trace_time.csv"] == (before / "step_trace_time.csv").read_bytes()
    for name in ("step_trace_time.csv", "op_statistic.csv", "kernel_details.csv", "range_statistic.csv",
                 "trace_view.json"):
        assert (out / name).read_bytes() == (before / name).read_bytes(), name
    assert not run.failures


def test_pending_tables_hand_each_table_over_once_made_and_say_when_one_never_will_be():
    from npuprof.analysis.pipeline import PendingTables
    from npuprof.analysis.table import Table

    pending = PendingTables("run")
    made = Table("first", ["a"], {"a": [1]})
    pending._publish_one("first", made)
    assert pending.wait_for("first") is made              # while the analysis still runs
    got = []
    waiter = threading.Thread(target=lambda: got.append(pending.wait_for("never_made")))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()                               # it may still come: waits
    pending._publish({"first": made})
    waiter.join(10)
    assert got == [None] and pending.wait_for("first") is made
    failed = PendingTables("run")
    failed._publish({}, MemoryError("analyzer"))
    with pytest.raises(ProfilerDataError, match="analysis did not complete: MemoryError"):
        failed.wait_for("first")


def _replace_builtin(monkeypatch, table, compute):
    monkeypatch.setattr(builtin_analyzers, "BUILTIN_ANALYZERS", tuple(
        dataclasses.replace(a, compute=compute) if a.table == table else a
        for a in builtin_analyzers.BUILTIN_ANALYZERS))


@pytest.mark.parametrize("schedule", ["in_turn", "threads", "forked"])
def test_an_analysis_that_fails_leaves_no_output_and_its_exporters_are_told(synthetic_run, plugin, monkeypatch,
                                                                            schedule):
    """Whether the exporters ran beside the analyzers, the trace rendered by a forked child (stopped, its
    files removed) or on an exporter thread, or were to run after them (then none runs)."""
    forked = schedule == "forked"
    if schedule != "in_turn":
        monkeypatch.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)
    if forked:
        monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
        monkeypatch.setattr(writer, "fork_is_safe", lambda: True)   # whatever other tests left running
    started = []
    real_fork = trace_json.ForkedTrace
    monkeypatch.setattr(trace_json, "ForkedTrace", lambda *a: started.append(1) or real_fork(*a))
    waited = {}

    class TableReader:
        @hookimpl
        def npuprof_export(self, result, target):
            try:
                result.tables["op_statistic"]
            except ProfilerDataError as e:
                waited["error"] = str(e)
                raise

    def broken(events):
        raise MemoryError("out of memory in an analyzer")

    _replace_builtin(monkeypatch, "op_statistic", broken)
    plugin(TableReader(), "table_reader")
    with pytest.raises(MemoryError):
        writer.analyse_and_export(synthetic_run)
    if schedule == "in_turn":
        assert waited == {}
    else:
        assert "analysis did not complete: MemoryError" in waited["error"]
    assert started == ([1] if forked else [])
    out = synthetic_run / "ASCEND_PROFILER_OUTPUT"
    assert not out.exists() or not any(out.iterdir())   # the trace written meanwhile is removed too


def test_at_interpreter_exit_the_exporters_run_one_after_another_here(synthetic_run, monkeypatch, tmp_path):
    """A window saved at exit is analysed when no new thread may start: the same outputs, the database's
    too, written in turn."""
    from npuprof.export import sqlite_db

    kinds = ["text", "db"]
    with monkeypatch.context() as threads:
        threads.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)
        writer.analyse_and_export(synthetic_run, export_type=kinds, output=tmp_path / "threads")

    class Exiting(writer.ThreadPoolExecutor):
        def submit(self, *args, **kwargs):
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(writer, "ThreadPoolExecutor", Exiting)
    monkeypatch.setattr(sqlite_db, "ThreadPoolExecutor", Exiting)
    (run,) = writer.analyse_and_export(synthetic_run, export_type=kinds, output=tmp_path / "in_turn")
    assert not run.failures and (run.output_dir / "analyse.done").is_file()

    def files(folder):
        return {p.name: p.read_bytes() for p in folder.rglob("*.*") if p.name != "npuprof_analysis.json"}

    threads, in_turn = files(tmp_path / "threads"), files(tmp_path / "in_turn")
    assert in_turn == threads
    assert {"trace_view.json", "op_statistic.csv"} <= set(threads)
    assert sum(name.endswith(".db") for name in threads) == 2   # the profiler database and its analysis db
