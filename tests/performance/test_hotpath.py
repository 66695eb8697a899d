"""The compiled annotation hot paths (core/_hotpath.c) against their Python reference (recorder.py):
the install builds them, both record the same events, the recording thread's conversion gives the
same columns, and the recorder's tests pass on the fallback."""
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import npuprof
from npuprof import recorder, trace_api
from npuprof.compiled import compiled_status

ROOT = Path(__file__).resolve().parents[2]
# the tests of the compiled module run where it is built (and loaded); elsewhere they say why not
STATUS = compiled_status("npuprof._hotpath")
needs_compiled = pytest.mark.skipif(not STATUS.loaded, reason=f"npuprof._hotpath is not in use: {STATUS.reason}")
needs_drain = pytest.mark.skipif(getattr(recorder._hotpath, "drain", None) is None,
                                 reason=f"npuprof._hotpath is not in use: {STATUS.reason}" if not STATUS.loaded else
                                 "npuprof._hotpath has no drain in this build (no GIL, or built without CPython's "
                                 "private C API): recorder._drain slices")

# Every annotation path, with and without a profiler, with sinks, stacks and args, across threads,
# with exceptions; prints the events recorded (timestamps aside) and which implementation ran.
WORKLOAD = r'''
import json, queue, sys, threading
from pathlib import Path
import npuprof
from npuprof import mstx, record_function, recorder, trace_api
from npuprof.rawstore import read_raw_dir

out = Path(sys.argv[1])


class Sink:
    def __init__(self):
        self.calls = []
    def range_start(self, name, same_thread=True):
        self.calls.append(["start", name, same_thread])
        return len(self.calls)
    def range_end(self, token):
        self.calls.append(["end", token])
    def mark(self, message, stream=None):
        self.calls.append(["mark", message, stream])


@trace_api
def add(a, b=1):
    return a + b


@trace_api(level="DataLoader", name="loader.next")
def fail():
    raise KeyError("boom")


class Model:
    @trace_api
    def forward(self, x):
        return x * 2


returned = {"outside": [mstx.range_start("nobody"), add(2, b=3)]}
with record_function("outside"):
    pass
with npuprof.Profiler(output_path=out / "plain", activities=["CPU"]) as prof:
    with record_function("outer"):
        with record_function("inner", args={"k": 1}):
            mstx.mark("tick")
            mstx.mark("tock", domain="io")
    try:
        with record_function("raises"):
            raise ValueError("x")
    except ValueError:
        pass
    rid = mstx.range_start("load", domain="data")
    t = threading.Thread(target=lambda: (mstx.range_end(rid), mstx.mark("from thread")))
    t.start(); t.join()
    mstx.range_end(12345)
    returned["add"] = add(40, 2)
    returned["forward"] = Model().forward(21)
    try:
        fail()
    except KeyError as e:
        returned["fail"] = str(e)
    returned["names"] = [add.__name__, add.__wrapped__.__name__, Model.forward.__qualname__]
sink = Sink()
with npuprof.Profiler(output_path=out / "sinks", activities=["CPU"], with_stack=True) as prof2:
    recorder.active_recorder().sinks = [sink]
    with record_function("stacked"):
        mstx.mark("m", stream="s0")
    rid = mstx.range_start("r")
    mstx.range_end(rid)
filtered = npuprof.Profiler(output_path=out / "filtered", activities=["CPU"], mstx_domain_include=["keep"])
with filtered:
    mstx.mark("kept", domain="keep")
    mstx.mark("dropped", domain="other")
    returned["dropped_range"] = mstx.range_start("dropped", domain="other")

# one profiler after another: the main thread and a worker that lives through both record into each
# in turn (the compiled paths keep each thread's buffers per activation); a range started under the
# first and ended under the second is dropped
jobs = queue.Queue()
worker = threading.Thread(target=lambda: [(job(), jobs.task_done()) for job in iter(jobs.get, None)])
worker.start()
again = []
for i in range(2):
    with npuprof.Profiler(output_path=out / f"again{i}", activities=["CPU"]) as p:
        jobs.put(lambda i=i: (mstx.mark(f"worker {i}"), add(i)))
        jobs.join()
        with record_function(f"main {i}"):
            pass
        if i == 0:
            carried = mstx.range_start("carried")
        else:
            mstx.range_end(carried)
    again.append(p)
jobs.put(None)
worker.join()

# a traced call that stops its profiler and starts another: its event belongs to the first one
switched = {}


@trace_api
def switch():
    switched["first"].stop()
    switched["second"] = npuprof.Profiler(output_path=out / "second", activities=["CPU"])
    mstx.mark("inside second")


switched["first"] = npuprof.Profiler(output_path=out / "first", activities=["CPU"])
switch()
second = switched["second"]
second.stop()


def events(run):
    t, report = read_raw_dir(run / "NPUPROF")
    rows = zip(t["kind"].tolist(), t.column_strings("name"), t.column_strings("type"), t.column_strings("args"),
               t["dur"].tolist())
    rows = [[k, n, ty, ("Call stack" if "Call stack" in a else a), d >= 0] for k, n, ty, a, d in rows]
    return sorted(r for r in rows if not r[1].startswith("ProfilerStep"))


print(json.dumps({"compiled": recorder._hotpath is not None, "returned": returned, "sink": sink.calls,
                  "plain": events(prof.saved_runs[0]), "sinks": events(prof2.saved_runs[0]),
                  "filtered": events(filtered.saved_runs[0]),
                  "again": [events(p.saved_runs[0]) for p in again], "second": events(second.saved_runs[0])}))
'''


def _run_workload(tmp_path: Path, pure: bool) -> dict:
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    env = dict(os.environ, NPUPROF_PURE_PYTHON="1" if pure else "0")
    out = subprocess.run([sys.executable, str(script), str(tmp_path / ("py" if pure else "c"))], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_compiled
def test_the_install_built_the_compiled_hot_paths():
    # `make venv` (pip install -e .) compiles core/_hotpath.c here; a silent fallback would hide a broken build
    assert recorder._hotpath is not None
    assert issubclass(npuprof.record_function, recorder._hotpath.RangeBase)
    assert npuprof.mstx.mark is recorder._hotpath.mark


@needs_compiled
def test_compiled_and_python_paths_record_the_same_events(tmp_path):
    compiled, python = _run_workload(tmp_path, pure=False), _run_workload(tmp_path, pure=True)
    assert compiled.pop("compiled") is True and python.pop("compiled") is False
    assert compiled == python
    kinds = {row[1]: row[0] for row in compiled["plain"]}
    assert set(kinds) >= {"outer", "inner", "tick", "tock", "raises", "load", "from thread", "add",
                          "Model.forward", "loader.next"}
    assert compiled["returned"]["outside"] == [0, 5] and compiled["returned"]["fail"] == "'boom'"
    assert compiled["returned"]["add"] == 42 and compiled["returned"]["forward"] == 42
    assert compiled["returned"]["names"] == ["add", "add", "Model.forward"]
    assert compiled["sink"][0] == ["start", "stacked", True] and ["start", "r", False] in compiled["sink"]
    assert [row[1] for row in compiled["filtered"]] == ["kept"] and compiled["returned"]["dropped_range"] == 0
    assert [sorted(row[1] for row in run) for run in compiled["again"]] == [["add", "main 0", "worker 0"],
                                                                      ["add", "main 1", "worker 1"]]
    assert [row[1] for row in compiled["second"]] == ["inside second"]


def test_the_recorder_tests_pass_on_the_python_fallback():
    env = dict(os.environ, NPUPROF_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(ROOT / "tests" / "performance" / "test_perf_recorder.py")], env=env, capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:]
    assert " passed" in out.stdout


@pytest.mark.parametrize("value,compiled", [("1", False), ("yes", False), pytest.param("0", True, marks=needs_compiled),
                                            pytest.param("", True, marks=needs_compiled)])
def test_npuprof_pure_python_chooses_the_implementation(value, compiled):
    env = dict(os.environ, NPUPROF_PURE_PYTHON=value)
    out = subprocess.run([sys.executable, "-c", "from npuprof import recorder; print(recorder._hotpath is not None)"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == str(compiled), out.stderr


@trace_api
def _pickled_by_reference(x):
    return x + 1


@needs_compiled
def test_both_paths_refuse_the_same_bad_arguments_and_pickle_the_same():
    hot = recorder._hotpath
    pairs = [(hot.mark, recorder._mark), (hot.range_start, recorder._range_start), (hot.range_end, recorder._range_end)]
    bad_calls = [((), {}), (("a", None, "d", "extra"), {}), (("a",), {"colour": 1}), (("a",), {"message": "b"})]
    for compiled, python in pairs:
        for args, kwargs in bad_calls:
            for fn in (compiled, python):
                with pytest.raises(TypeError):
                    fn(*args, **kwargs)
    assert pickle.loads(pickle.dumps(_pickled_by_reference)) is _pickled_by_reference
    assert _pickled_by_reference(1) == 2 and _pickled_by_reference.__wrapped__(1) == 2


def _numpy_times(flat, width, first, offset, n):
    compiled = recorder._compiled_times
    recorder._compiled_times = None
    try:
        return recorder._times(flat, width, first, offset, n)
    finally:
        recorder._compiled_times = compiled


@needs_compiled
@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(-(2**62), 2**62)), max_size=60),
       st.sampled_from([(3, 1), (6, 2)]), st.integers(-(2**40), 2**40))
def test_compiled_conversion_gives_the_numpy_columns(pairs, layout, offset):
    """The recording thread's start/duration columns: compiled (one pass) and numpy (fromiter over
    slices) agree, wrap-around included, for both buffer layouts (ranges: 3 items, events: 6)."""
    width, first = layout
    flat = []
    for t0, t1 in pairs:
        item = ["name"] * width
        item[first], item[first + 1] = t0, t1
        flat += item
    assert recorder._compiled_times is recorder._hotpath.times
    got = recorder._times(flat, width, first, offset, len(pairs))
    want = _numpy_times(flat, width, first, offset, len(pairs))
    assert [c.tolist() for c in got] == [c.tolist() for c in want]


@needs_compiled
def test_items_that_are_not_plain_ints_take_the_numpy_path():
    import numpy as np

    flat = ["a", np.int64(10), 15, "b", True, 27]
    ts, dur = recorder._times(flat, 3, 1, 100, 2)
    assert ts.tolist() == [110, 101] and dur.tolist() == [5, 26]
    with pytest.raises(TypeError):
        recorder._hotpath.times(flat, 3, 1, 100, np.empty(2, np.int64), np.empty(2, np.int64))
    with pytest.raises(ValueError, match="hold 2 int64"):
        recorder._hotpath.times(["a", 1, 2, "b", 3, 4], 3, 1, 0, np.empty(3, np.int64), np.empty(2, np.int64))
    with pytest.raises(ValueError, match="within width"):
        recorder._hotpath.times([], 3, 2, 0, np.empty(0, np.int64), np.empty(0, np.int64))
    with pytest.raises(OverflowError):   # as np.fromiter refuses it too
        recorder._times(["a", 2**70, 1], 3, 1, 0, 1)


@needs_drain
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.data())
def test_compiled_drain_moves_what_slicing_takes(size, data):
    """``_drain``: the compiled move gives what ``buf[:n]; del buf[:n]`` gives, a whole buffer
    included, and leaves every item's reference count as it was (moved, none taken or dropped)."""
    assert recorder._compiled_drain is recorder._hotpath.drain
    n = data.draw(st.integers(0, size))
    items = [object() for _ in range(size)]
    buf = list(items)
    before = [sys.getrefcount(x) for x in items]
    taken = recorder._hotpath.drain(buf, n)
    assert taken == items[:n] and buf == items[n:]
    assert [sys.getrefcount(x) for x in items] == before
    buf.append("next")   # a buffer that handed over its items grows again
    assert buf[-1] == "next" and len(buf) == size - n + 1


@needs_drain
def test_compiled_drain_refuses_what_slicing_could_not_take():
    drain = recorder._hotpath.drain
    with pytest.raises(TypeError):
        drain((1, 2), 1)
    for n in (-1, 2):
        with pytest.raises(ValueError, match="not within the buffer's 1 items"):
            drain([1], n)
