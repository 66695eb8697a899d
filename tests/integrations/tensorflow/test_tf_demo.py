"""The TensorFlow half of `make demo` runs real Keras training on CPU and exports tables."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from npuprof.integrations.tensorflow.demo import run_demo  # noqa: E402
from tf_support import read_csv  # noqa: E402


@pytest.mark.slow
def test_run_demo(tmp_path):
    info = run_demo(tmp_path / "tf")
    assert len(info["runs"]) == 2 and len(info["results"]) == 2
    assert info["accuracy"] > 0.5  # it really trained
    for summary, trace in zip(info["summaries"], info["traces"]):
        rows = read_csv(Path(summary))
        assert any("MatMul" in r["OP Type"] and float(r["Total Time(us)"]) > 0 for r in rows)
        events = json.loads(Path(trace).read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        assert any(e.get("name", "").startswith("ProfilerStep#") for e in events)
    assert json.loads(info["profiling_options"])["output"] == str(tmp_path / "tf")
