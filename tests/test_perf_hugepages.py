"""Analysis runs with numpy's huge-page advice off (npuprof.hugepages) and leaves it as it found it."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from npuprof import hugepages
from npuprof.analysis import analyzers, pipeline
from npuprof.export import writer
from npuprof.hugepages import ordinary_pages

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

SWITCH = hugepages._numpy_switch()
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
    real_step_times = analyzers.ANALYZERS["step_trace_time"]

    def step_times(events):
        seen["analyse"] = advised()
        return real_step_times(events)

    monkeypatch.setitem(analyzers.ANALYZERS, "step_trace_time", step_times)
    run = make_run(tmp_path / "runs", 2_000)

    writer.analyse_and_export(run)
    assert seen == {"load": False, "analyse": False, "write": False}
    assert advised()

    seen.clear()
    pipeline.analyse_run(run)          # the path show, report and Profiler.key_averages take
    assert seen == {"load": False, "analyse": False}
    assert advised()
