"""The recorder's fast paths: flat per-thread buffers, column conversion at flush,
the enter hook, and a full buffer written by the thread that filled it."""
import threading

import numpy as np
import pytest

import npuprof
from npuprof import mstx, record_function, recorder, trace_api
from npuprof.events import EventKind
from npuprof.rawstore import read_raw_dir


def raw_events(run_dir):
    table, report = read_raw_dir(run_dir / "NPUPROF")
    assert not report.problems
    return table


def test_chunks_to_table_columns():
    ranges = ["a", 100, 150, "b", 200, 260]
    events = [int(EventKind.MARK), "m", 120, 120, "dom", "", int(EventKind.API), 7, 300, 340, "Python", '{"x": 1}']
    t = recorder.chunks_to_table([(1, 10, ranges, events), (1, 11, ["a", 5, 6], [])], offset_ns=1000)
    assert t.column_strings("name") == ["a", "b", "m", "7", "a"]      # a non-str name is kept as its text
    assert t["ts"].tolist() == [1100, 1200, 1120, 1300, 1005]
    assert t["dur"].tolist() == [50, 60, 0, 40, 1]
    assert t["kind"].tolist() == [int(EventKind.RANGE)] * 2 + [int(EventKind.MARK), int(EventKind.API),
                                                               int(EventKind.RANGE)]
    assert t["tid"].tolist() == [10, 10, 10, 10, 11]
    assert t.column_strings("type") == ["", "", "dom", "Python", ""]
    assert t.column_strings("args") == ["", "", "", '{"x": 1}', ""]
    assert set(t.column_strings("source")) == {"npuprof"}


def test_unhashable_names_do_not_break_a_flush():
    t = recorder.chunks_to_table([(1, 2, [["not", "hashable"], 1, 2, "ok", 3, 4], [])], offset_ns=0)
    assert t.column_strings("name") == ["['not', 'hashable']", "ok"]


def test_every_annotation_kind_reaches_the_raw_files(tmp_path):
    @trace_api(level="Loader")
    def load():
        return 1

    with npuprof.Profiler(output_path=tmp_path, activities=["CPU"]) as prof:
        for i in range(1000):
            with record_function("plain"):
                pass
            with record_function("with_args", args={"i": i}):
                pass
            mstx.mark("m", domain="d")
            load()
        rid = mstx.range_start("cross")
        threading.Thread(target=mstx.range_end, args=(rid,)).start()
        prof.step()
    ev = raw_events(prof.saved_runs[0])
    names = ev.column_strings("name")
    for name, count in (("plain", 1000), ("with_args", 1000), ("m", 1000), ("load", 1000), ("cross", 1)):
        assert sum(n.endswith(name) for n in names) == count, name
    args = [a for n, a in zip(names, ev.column_strings("args")) if n == "with_args"]
    assert args[:2] == ['{"i": 0}', '{"i": 1}']
    assert np.all(ev["dur"] >= 0)


def test_stack_and_sinks_take_the_slow_path(tmp_path):
    calls = []

    class Sink:
        def range_start(self, name, same_thread=True):
            calls.append(("start", name, same_thread))
            return len(calls)

        def range_end(self, rid):
            calls.append(("end", rid))

        def mark(self, message, stream=None):
            calls.append(("mark", message, stream))

    with npuprof.Profiler(output_path=tmp_path / "a", activities=["CPU"], with_stack=True) as prof:
        assert recorder._enter_hook is not None
        with record_function("stacked"):
            pass
    assert recorder._enter_hook is None
    ev = raw_events(prof.saved_runs[0])
    (args,) = [a for n, a in zip(ev.column_strings("name"), ev.column_strings("args")) if n == "stacked"]
    assert "Call stack" in args and "test_perf_recorder.py" in args
    with npuprof.Profiler(output_path=tmp_path / "b", activities=["CPU"]):
        rec = recorder.active_recorder()
        rec.sinks = (Sink(),)
        assert not rec._plain and recorder._enter_hook is not None
        with record_function("r"):
            pass
        mstx.mark("x", stream=7)
        rid = mstx.range_start("cross")
        ender = threading.Thread(target=mstx.range_end, args=(rid,))   # mstx ranges may end on another thread
        ender.start()
        ender.join()
        rec.sinks = ()
        assert rec._plain and recorder._enter_hook is None
    assert calls == [("start", "r", True), ("end", 1), ("mark", "x", 7), ("start", "cross", False), ("end", 4)]


def _small_buffers(monkeypatch, events: int) -> None:
    monkeypatch.setattr(recorder, "_RANGES_FULL", events * recorder.RANGE_ITEMS)
    monkeypatch.setattr(recorder, "_EVENTS_FULL", events * recorder.EVENT_ITEMS)


def test_full_buffers_bound_memory_and_keep_every_event(tmp_path, monkeypatch):
    _small_buffers(monkeypatch, 1_000)
    seen = []
    n_threads, per_thread = 3, 20_000
    with npuprof.Profiler(output_path=tmp_path, activities=["CPU"]) as prof:
        rec = recorder.active_recorder()
        rec._stop.set()          # park the flusher thread: the recording threads write everything
        rec._thread.join()

        def produce():
            for i in range(per_thread):
                with record_function("flood"):
                    pass
                mstx.mark("tick")
                if i % 500 == 0:
                    seen.append(rec.pending())

        threads = [threading.Thread(target=produce) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert max(seen) <= n_threads * 2 * 1_000     # two buffers per thread, each written when full
    ev = raw_events(prof.saved_runs[0])
    names = ev.column_strings("name")
    assert names.count("flood") == names.count("tick") == n_threads * per_thread


@pytest.mark.parametrize("annotation", ["record_function", "mark", "trace_api", "mstx_range", "add"])
def test_the_append_that_fills_a_buffer_writes_it(tmp_path, monkeypatch, annotation):
    _small_buffers(monkeypatch, 50)
    traced = trace_api(lambda: None, name="api")
    with npuprof.Profiler(output_path=tmp_path, activities=["CPU"]) as prof:
        rec = recorder.active_recorder()
        rec._stop.set()          # park the flusher thread: only a full buffer is written
        rec._thread.join()

        def once():
            if annotation == "record_function":
                with record_function("r"):
                    pass
            elif annotation == "mark":
                mstx.mark("m")
            elif annotation == "trace_api":
                traced()
            elif annotation == "add":
                rec.add(int(EventKind.MARK), "m", 1, 2)
            else:
                rid = mstx.range_start("load")     # ended on another thread: the starter's buffer fills
                ender = threading.Thread(target=mstx.range_end, args=(rid,))
                ender.start()
                ender.join()

        for _ in range(49):
            once()
        assert rec.pending() == 49 and rec.writer.events_written == 0
        once()
        assert rec.pending() == 0 and rec.writer.events_written == 50
        once()
        assert rec.pending() == 1
    assert len(raw_events(prof.saved_runs[0])) >= 51


@pytest.mark.parametrize("n", [0, 1, 7])
def test_pending_counts_events_not_items(tmp_path, n):
    with npuprof.Profiler(output_path=tmp_path, activities=["CPU"]):
        rec = recorder.active_recorder()
        rec.flush()
        for _ in range(n):
            with record_function("a"):
                pass
            mstx.mark("b")
        assert rec.pending() == 2 * n


def test_steps_are_buffered_as_numbers_and_flushed_as_named_step_events(tmp_path):
    """prof.step() buffers (step_num, t0, t1); the flush turns each into the
    STEP event ``ProfilerStep#N`` of the thread that stepped."""
    with npuprof.Profiler(output_path=tmp_path, activities=["CPU"]) as prof:
        rec = recorder.active_recorder()
        rec.flush()
        for _ in range(3):
            prof.step()
        assert rec.pending() == 3
        stepper = threading.Thread(target=prof.step)
        stepper.start()
        stepper.join()
        assert rec.pending() == 4
    ev = raw_events(prof.saved_runs[0])
    steps = ev.select(ev["kind"] == int(EventKind.STEP))
    names = steps.column_strings("name")
    # steps 0-3 by step(), step 4 closed by stop()
    assert sorted(names) == [f"ProfilerStep#{i}" for i in range(5)]
    assert set(steps.column_strings("type")) == {"ProfilerStep"}
    by_name = dict(zip(names, steps["tid"].tolist()))
    assert by_name["ProfilerStep#3"] == stepper.native_id
    assert {by_name[f"ProfilerStep#{i}"] for i in (0, 1, 2, 4)} == {threading.get_native_id()}
    order = np.argsort(steps["ts"])
    ts, dur = steps["ts"][order], steps["dur"][order]
    assert (dur >= 0).all() and (ts[:-1] + dur[:-1] == ts[1:]).all()   # back to back, no gap
    assert prof.saved_runs and recorder._step_events([7, 1, 2]) == [int(EventKind.STEP), "ProfilerStep#7", 1, 2,
                                                                    "ProfilerStep", ""]
