"""profile_memory with real TensorFlow 2.21 on CPU: the allocator's own events in the window become
allocation events, and npuprof's peak equals TensorFlow's own ``get_memory_info`` peak for that window."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap

import pytest

import npuprof
from npuprof.analysis.memory import MEMORY_RECORD_COLUMNS, OPERATOR_MEMORY_COLUMNS, memory_summary

CHILD = textwrap.dedent('''
    import json, sys
    import numpy as np
    from npuprof.integrations.tensorflow import Profiler   # before TensorFlow: profile_memory turns its CPU allocator events on
    prof = Profiler(output_path=sys.argv[1], profile_memory=True, start_profile=False)
    import tensorflow as tf
    model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(256, activation="relu"),
                                 tf.keras.layers.Dense(8)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.rand(512, 64).astype("float32"); y = np.random.rand(512, 8).astype("float32")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)      # warm up outside the window
    tf.config.experimental.reset_memory_stats("CPU:0")
    prof.start()
    model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    info = tf.config.experimental.get_memory_info("CPU:0")
    prof.stop()
    print(json.dumps({"tf_peak": info["peak"], "runs": [str(p) for p in prof.saved_runs]}))
''')


@pytest.fixture(scope="module")
def keras_run(tmp_path_factory):
    pytest.importorskip("tensorflow", reason="TensorFlow is an extra (make test installs it)")
    out = tmp_path_factory.mktemp("tfmem")
    done = subprocess.run([sys.executable, "-c", CHILD, str(out / "prof")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_keras_peak_equals_tensorflows_own_peak(keras_run):
    facts = keras_run
    (res,) = npuprof.analyse(facts["runs"][0])
    s = memory_summary(res.events, top=10_000)
    assert s.allocations > 100                                   # real allocations of the training steps
    assert s.peak_mb * 2**20 == facts["tf_peak"]                 # the same bytes, exactly
    assert 0 < sum(a.size_bytes for a in s.live) <= facts["tf_peak"]
    assert all(a.name and a.size_bytes > 0 for a in s.live)
    series = {r.name: r for r in s.series}
    assert any(name.endswith("Total Allocated(MB)") and r.peak * 2**20 == facts["tf_peak"]
               for name, r in series.items())               # the allocator's series over time peaks there too
    text = subprocess.run([sys.executable, "-m", "npuprof", "memory", "-dir", facts["runs"][0]],
                          capture_output=True, text=True)
    assert text.returncode == 0 and "peak allocated" in text.stdout


def test_only_a_tensorflow_profiler_changes_tensorflows_allocator(tmp_path):
    code = ("import os; from npuprof import Profiler; "
            "Profiler(output_path=r'%s', profile_memory=True, start_profile=False); "
            "print(os.environ.get('TF_CPU_ALLOCATOR_USE_BFC'))" % (tmp_path / "p"))
    env = {k: v for k, v in __import__("os").environ.items() if k != "TF_CPU_ALLOCATOR_USE_BFC"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "None", done.stderr        # a MindSpore or host profiler leaves it alone


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_keras_memory_files_in_the_anchors_layout_add_up_to_the_allocators_totals(keras_run, tmp_path):
    run = facts_run = keras_run["runs"][0]
    assert subprocess.run([sys.executable, "-m", "npuprof", "analyse", run, "--quiet"]).returncode == 0
    out = f"{facts_run}/ASCEND_PROFILER_OUTPUT"
    ops, record = _rows(f"{out}/operator_memory.csv"), _rows(f"{out}/memory_record.csv")
    assert list(ops[0]) == OPERATOR_MEMORY_COLUMNS and list(record[0]) == MEMORY_RECORD_COLUMNS
    assert {r["Device Type"] for r in ops} == {"CPU"} and {r["Device Type"] for r in record} == {"CPU"}
    # The allocator's own total after each allocation and release, minus the bytes of npuprof's allocations
    # alive then, is what was allocated before the window: it never grows (it falls when such memory is
    # freed); so every byte the allocator adds in the window is an allocation npuprof recorded.
    changes = []
    for r in ops:
        size = float(r["Size(KB)"]) * 1024
        changes.append((r["Allocation Time(us)"], 1, size, float(r["Allocation Total Allocated(MB)"]) * 2**20))
        if r["Release Time(us)"]:
            changes.append((r["Release Time(us)"], 0, -size, float(r["Release Total Allocated(MB)"]) * 2**20))
            assert float(r["Duration(us)"]) >= 0
    changes.sort(key=lambda c: (float(c[0]), c[1]))
    alive, before = 0.0, []
    for _, _, delta, total in changes:
        alive += delta
        before.append(total - alive)
    assert len(ops) > 100 and before[0] >= 0
    assert all(b <= a for a, b in zip(before, before[1:])), "the allocator counted bytes npuprof did not record"
    # memory_record: the allocator's totals over time, the same numbers as its allocation rows
    allocated = {float(r["Total Allocated(MB)"]) for r in record if r["Total Allocated(MB)"]}
    assert {float(r["Allocation Total Allocated(MB)"]) for r in ops} <= allocated
    assert max(allocated) * 2**20 == keras_run["tf_peak"]
    # the same series as counter tracks of trace_view.json, one per component and metric
    trace = json.loads(open(f"{out}/trace_view.json", encoding="utf-8").read())["traceEvents"]
    tracks = {}
    for e in trace:
        if e.get("ph") == "C" and e["name"].endswith("(MB)"):
            tracks.setdefault(e["name"], []).append(e)
    for component in {r["Component"] for r in record}:
        samples = [r for r in record if r["Component"] == component and r["Total Allocated(MB)"]]
        assert len(tracks[f"{component} Total Allocated(MB)"]) == len(samples)


@pytest.mark.slow
def test_keras_memory_timeline_page_renders_in_chromium(keras_run, tmp_path):
    from browser_support import render_page, screenshot_dir

    page = tmp_path / "memory.html"
    done = subprocess.run([sys.executable, "-m", "npuprof", "memory", "-dir", keras_run["runs"][0], "-o", str(page)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shown = render_page(page, screenshot_dir(tmp_path) / "memory_timeline.png", tmp_path)
    assert shown["problems"] == [] and shown["requests"] == [page.resolve().as_uri()]
    facts = shown["facts"]
    assert facts["charts"] == 3 and facts["scripts"] == 0   # allocations by operator, allocator series, process RSS
    assert all(w > 300 and h > 100 for w, h in facts["chartBoxes"])
    text = page.read_text()
    assert text.count("<polygon") >= 2 and "peak" in text
