"""What the bench report says bounds a missed goal, from the run's own figures (benchmarks/report.py)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import report  # noqa: E402


def _median(v: float) -> dict:
    return {"median": v}


def _annotations(rf_median: float, worst: float) -> dict:
    return {"clock_pair": _median(200.0), "empty_loop": _median(20.0), "python_call": _median(50.0),
            "with_empty": _median(500.0), "record_function": _median(1300.0),
            "record_function_amortised": _median(1700.0),
            "sustained": {"record_function": {"median": rf_median, "worst": worst}, "n": 10**6, "window": 50000}}


def test_sustained_bounds_name_the_annotations_that_miss():
    (line,) = [b for b in report.bounds({"annotations": _annotations(1500.0, 1800.0)})
               if b.startswith("sustained medians")]
    assert "(record_function)" in line and "1,300 ns, 6.5x a clock pair" in line and "400 ns per event" in line
    assert not [b for b in report.bounds({"annotations": _annotations(1500.0, 1800.0)})
                if b.startswith("sustained worst")]
    spiky = report.bounds({"annotations": _annotations(1500.0, 3100.0)})
    assert any(b.startswith("sustained worst windows (record_function)") for b in spiky)
    assert not [b for b in report.bounds({"annotations": _annotations(900.0, 1000.0)}) if b.startswith("sustained")]


def test_analysis_bound_gives_the_bytes_written_per_event():
    a10 = {"events": 10**7, "events_per_s": _median(1.0e6),
           "outputs": {"trace_view.json": 1_750_000_000, "kernel_details.csv": 760_000_000}}
    (line,) = [b for b in report.bounds({"analysis_10M": a10}) if b.startswith("analysis at 10M")]
    assert "writing 251 B/event of outputs" in line
    assert not [b for b in report.bounds({"analysis_10M": dict(a10, events_per_s=_median(2.5e6))})
                if b.startswith("analysis at 10M")]
