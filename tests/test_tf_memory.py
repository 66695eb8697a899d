"""profile_memory with real TensorFlow 2.21 on CPU: the allocator's own events in the window become
allocation events, and npuprof's peak equals TensorFlow's own ``get_memory_info`` peak for that window."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import npuprof
from npuprof.analysis.memory import memory_summary

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


@pytest.mark.slow
def test_keras_peak_equals_tensorflows_own_peak(tmp_path):
    pytest.importorskip("tensorflow", reason="TensorFlow is an extra (make test installs it)")
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "prof")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
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
