"""What the bench report says bounds a missed goal, from the run's own figures (benchmarks/report.py)."""
from __future__ import annotations

import report


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
    assert "(in Python: " in line
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


def test_analysis_bound_sets_the_write_time_against_the_goal():
    a10 = {"events": 10**7, "events_per_s": _median(1.0e6), "cpu_seconds": _median(9.0),
           "children_cpu_seconds": _median(8.5),
           "outputs": {"trace_view.json": 1_750_000_000, "kernel_details.csv": 760_000_000}}
    a1 = {"disk_write_bytes_per_s": 251e6, "disk_rewrite_bytes_per_s": 2.5e9}
    results = {"analysis_10M": a10, "analysis_1M": a1, "machine": {"cores": 2}}
    (line,) = [b for b in report.bounds(results) if b.startswith("analysis at 10M")]
    assert "2.51 GB, 1.0–10.0 CPU s at the two plain write speeds below, of the run's 17.5 CPU s" in line
    assert "the goal allows 5.0 s on 2 cores" in line
    (disk,) = [b for b in report.bounds(results) if b.startswith("disk:")]
    assert "251 MB/s" in disk and "2500 MB/s plain again" in disk and "written behind" not in disk
    behind = dict(results, analysis_1M=dict(a1, disk_write_behind_bytes_per_s=1.255e9))
    (line,) = [b for b in report.bounds(behind) if b.startswith("analysis at 10M")]
    assert "2.51 GB, 2.0 s at the written-behind speed below (plain: 1.0–10.0 CPU s at the two plain" in line
    (disk,) = [b for b in report.bounds(behind) if b.startswith("disk:")]
    assert "251 MB/s in the output directory, 1255 MB/s written behind" in disk
    assert "in the kernel" not in line   # a results file from before the split
    split = dict(results, analysis_10M=dict(a10, system_seconds=_median(7.2), user_seconds=_median(10.3)))
    (line,) = [b for b in report.bounds(split) if b.startswith("analysis at 10M")]
    assert "of those CPU s, 7.2 in the kernel (faulting in fresh memory for the event table" in line
    assert "10.3 in npuprof's own code" in line
    older = {"analysis_10M": {k: v for k, v in a10.items() if k != "children_cpu_seconds"}, "analysis_1M": a1}
    (line,) = [b for b in report.bounds(older) if b.startswith("analysis at 10M")]
    assert "CPU s" not in line and "writing 251 B/event" in line


def test_sustained_rows_give_the_python_fallback_beside_the_compiled_figure():
    ann = dict(_annotations(700.0, 900.0), compiled=True, rf_over_clock={"median": 3.0, "min": 3.0, "max": 3.0},
               sustained_python={"record_function": {"median": 1500.0, "worst": 1800.0}})
    ann["clock_pair"] = {"median": 200.0, "min": 190.0, "max": 210.0}
    for key in ("record_function", "mstx_mark", "record_function_idle"):
        ann[key] = {"median": 600.0, "min": 590.0, "max": 610.0}
    (row,) = [r for r in report.build_rows({"annotations": ann}) if r["key"] == "sustained_record_function"]
    assert row["met"] is True and "(Python fallback: median 1,500 ns, worst 1,800 ns)" in row["npuprof"]
    (line,) = [b for b in report.bounds({"annotations": dict(ann, sustained={
        "record_function": {"median": 1300.0, "worst": 1400.0}, "n": 10**6, "window": 50000})})
        if b.startswith("sustained medians")]
    assert "(compiled: " in line


def test_the_rss_row_gives_the_event_table_as_measured():
    timing = {"median": 5.0, "min": 4.0, "max": 6.0}
    a10 = {"events": 10**7, "table_bytes": 410 * 2**20, "raw_bytes": 397 * 2**20, "seconds": timing,
           "events_per_s": {"median": 2.0e6}, "peak_rss_bytes": {"max": 700 * 2**20}}
    (row,) = [r for r in report.build_rows({"analysis_10M": a10}) if r["key"] == "analysis_rss_10M"]
    assert row["baseline"] == "its table alone: 410 MB" and row["met"] is True


def test_a_partial_rerun_keeps_the_other_suites_and_says_which_run_measured_them():
    import run

    previous = {"started": "2026-11-27 06:27 UTC", "machine": {"summary": "old"}, "rows": ["old rows"],
                "annotations": {"old": 1}, "host": {"old": 2}, "host_sys": {"old": 3},
                "analysis_1M": {"old": 4}, "analysis_10M": {"old": 5}, "cluster": {"old": 6}}
    results = {"started": "2026-11-27 10:50 UTC", "machine": {"summary": "new"}, "cluster": {"new": 7},
               "analysis_10M": {"new": 8}}
    run.carry_over(results, previous, ["analysis", "cluster"])
    assert results["cluster"] == {"new": 7} and results["analysis_10M"] == {"new": 8}    # re-run: the new figures
    assert "analysis_1M" not in results            # a re-run suite keeps nothing of the old run, not even a row
    assert results["annotations"] == {"old": 1} and results["host_sys"] == {"old": 3}  # the others carried over
    assert results["machine"] == {"summary": "new"} and "rows" not in results          # the run's own entries not
    assert results["measured_at"] == {"annotations": "2026-11-27 06:27 UTC", "host": "2026-11-27 06:27 UTC",
                                      "analysis": "2026-11-27 10:50 UTC", "cluster": "2026-11-27 10:50 UTC"}
    note = report.measured_note(results)
    assert "annotations, host at 2026-11-27 06:27 UTC" in note and "analysis, cluster at 2026-11-27 10:50 UTC" in note
    again = {"started": "2026-11-27 11:30 UTC", "host": {"newer": 9}}
    run.carry_over(again, results, ["host"])       # a second partial run keeps each suite's own date
    assert again["measured_at"]["cluster"] == "2026-11-27 10:50 UTC"
    assert again["measured_at"]["host"] == "2026-11-27 11:30 UTC"
    assert report.measured_note({"measured_at": {"host": "x", "db": "x"}}) == ""     # one run: nothing to say


def _scaling(two: float, one: float, dask: float, **extra) -> dict:
    run = lambda s: {"seconds": {"median": s, "min": s, "max": s}, "load1": [1.0]}   # noqa: E731
    return {"ranks": 16, "bytes": 2 << 30, "reps": 3, "process_1": run(one), "process_2": run(two),
            "dask_2": run(dask), "workers_2_vs_1": {"median": one / two, "min": one / two, "max": one / two},
            "dask_vs_process_2": {"median": dask / two, "min": dask / two, "max": dask / two}, **extra}


def test_cluster_scaling_rows_judge_each_job_on_its_own():
    rows = report.cluster_scaling_rows({"scaling": _scaling(1.4, 2.0, 2.2),
                                        "scaling_heavy": _scaling(5.7, 10.8, 5.9, trace_view_copies=60)})
    by_key = {r["key"]: r for r in rows}
    assert set(by_key) == {"cluster_recompute_workers", "cluster_dask_vs_process",
                           "cluster_recompute_workers_user_size", "cluster_dask_vs_process_user_size"}
    assert not by_key["cluster_recompute_workers"]["met"] and by_key["cluster_recompute_workers_user_size"]["met"]
    assert not by_key["cluster_dask_vs_process"]["met"] and by_key["cluster_dask_vs_process_user_size"]["met"]
    assert "x60" in by_key["cluster_dask_vs_process_user_size"]["benchmark"]
    assert "x60" not in by_key["cluster_dask_vs_process"]["benchmark"]
