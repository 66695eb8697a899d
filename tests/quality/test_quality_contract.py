"""The data-quality contract (npuprof.quality): every number right or flagged, never a confident wrong
answer. One test per case of issue 30, each reproduced on a copy of real data or on a real run: a partial
run of an older torch_npu, memory's headline, a trace cut short, npuprof's own runs emptied, killed or
re-analysed, Level0 communication.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from realdata import realdata

LEVEL1 = "msinsight/test/data/pytorch/text/level1"
OUT = "ASCEND_PROFILER_OUTPUT"


def _cli(*argv: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "npuprof", *argv], capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def older_job(tmp_path: Path) -> Path:
    """The real 2-rank Level1 job as an older torch_npu leaves it: step_trace_time.csv without its
    Preparing column, trace_view.json missing."""
    job = _copy(realdata(LEVEL1), tmp_path / "job")
    for rank in (0, 1):
        out = job / f"rank{rank}_ascend_pt" / OUT
        rows = list(csv.reader(open(out / "step_trace_time.csv", newline="", encoding="utf-8-sig")))
        i = rows[0].index("Preparing")
        with open(out / "step_trace_time.csv", "w", newline="") as fh:
            csv.writer(fh, lineterminator="\r\n").writerows(r[:i] + r[i + 1:] for r in rows)
        (out / "trace_view.json").unlink()
    return job


def test_cluster_of_an_older_partial_job_keeps_the_tools_numbers_and_says_partial(older_job, tmp_path):
    code, out, err = _cli("cluster", str(older_job), "-o", str(tmp_path / "c"), "--no-parquet")
    assert code == 3, err
    assert "summarised from the tool's own tables" in out          # not recomputed from the partial run
    assert "data quality: partial" in err and "has no Preparing column" in err
    rows = {r["Index"]: r for r in _rows(tmp_path / "c" / "cluster_step_trace_time.csv")}
    for rank in ("0", "1"):
        own = _rows(older_job / f"rank{rank}_ascend_pt" / OUT / "step_trace_time.csv")[0]
        assert rows[rank]["Step"] == own["Step"]                     # the run's step, not an invented 0
        for column in ("Computing", "Communication(Not Overlapped)", "Free", "Stage"):
            assert float(rows[rank][column]) == pytest.approx(float(own[column]), abs=1e-3)
        assert rows[rank]["Preparing"] == ""                         # not measured, not a number
    groups = {op.rpartition("@")[2]
              for steps in json.loads((older_job / "rank0_ascend_pt" / OUT / "communication.json").read_text()).values()
              for kinds in steps.values() for op in kinds}
    ours = {r["Group"] for r in _rows(tmp_path / "c" / "cluster_communication.csv")}
    assert groups - {"Total Op Info", ""} <= ours | {"Total Op Info"}  # the tool's groups, none invented
    summary = json.loads((tmp_path / "c" / "cluster_summary.json").read_text())
    assert "cluster_step_trace_time.Preparing" in summary["data_quality"]["affects"]


@pytest.mark.parametrize("verb", ["analyse", "show", "report"])
def test_every_verb_on_the_older_partial_job_exits_3_naming_the_missing_trace(older_job, tmp_path, verb):
    args = {"analyse": ["analyse", str(older_job), "-o", str(tmp_path / "a"), "--quiet"],
            "show": ["show", "-dir", str(older_job / "rank0_ascend_pt")],
            "report": ["report", str(older_job), "-o", str(tmp_path / "r.html"), "--quiet"]}[verb]
    code, _, err = _cli(*args)
    assert code == 3, err
    assert "trace_view.json: missing" in err
    if verb == "analyse":    # the step the data numbers, and Preparing not measured without the step's start
        (row,) = _rows(tmp_path / "a" / "rank0_ascend_pt" / OUT / "step_trace_time.csv")
        assert row["Step"] == "50" and row["Preparing"] == ""
    if verb == "report":
        assert "Data quality: partial" in (tmp_path / "r.html").read_text()


def test_memory_headline_is_the_largest_source_in_the_runs_step(older_job):
    run = older_job / "rank0_ascend_pt"
    code, out, err = _cli("memory", "-dir", str(run), "--json")
    assert code == 3, err
    (summary,) = json.loads(out)
    peaks: dict = {}
    for row in _rows(run / OUT / "memory_record.csv"):
        if row["Total Allocated(MB)"].strip():
            key = f"{row['Component']} {row['Device Type']} Total Allocated(MB)"
            peaks[key] = max(peaks.get(key, 0.0), float(row["Total Allocated(MB)"]))
    source, peak = max(peaks.items(), key=lambda kv: kv[1])
    op_peak = max(float(r[k]) for r in _rows(run / OUT / "operator_memory.csv")
                  for k in ("Allocation Total Allocated(MB)", "Release Total Allocated(MB)") if r[k].strip())
    assert summary["peak_mb"] == pytest.approx(max(peak, op_peak))
    assert summary["peak_source"] == (source if peak > op_peak else "operator_memory")
    assert summary["peak_step"] == 50                                  # the run's step, from its own data
    assert summary["data_quality"]["verdict"] == "partial"


@pytest.mark.parametrize("verb", ["show", "analyse", "cluster"])
def test_a_trace_cut_short_is_partial_for_every_verb(tmp_path, verb):
    job = _copy(realdata(LEVEL1), tmp_path / "job")
    trace = job / "rank1_ascend_pt" / OUT / "trace_view.json"
    trace.write_bytes(trace.read_bytes()[:100_000])
    args = {"show": ["show", "-dir", str(job / "rank1_ascend_pt")],
            "analyse": ["analyse", str(job / "rank1_ascend_pt"), "-o", str(tmp_path / "a"), "--quiet"],
            "cluster": ["cluster", str(job), "-o", str(tmp_path / "c"), "--no-parquet", "--quiet"]}[verb]
    code, _, err = _cli(*args)
    assert code == 3, err
    assert "trace_view.json" in err and "cut short" in err


def _own_run(tmp_path: Path) -> Path:
    """A real npuprof run of a small loop: one window recording steps 2 and 3."""
    script = textwrap.dedent("""
        import sys, time
        from npuprof import Profiler, schedule, record_function
        with Profiler(output_path=sys.argv[1], schedule=schedule(wait=1, active=2, skip_first=1)) as p:
            for i in range(4):
                with record_function("work"):
                    time.sleep(0.002)
                p.step()
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "prof")], check=True, timeout=120)
    (run,) = sorted((tmp_path / "prof").glob("*_ascend_ms"))[:1]
    return run


def test_an_emptied_raw_segment_is_unusable_and_keeps_the_previous_outputs(tmp_path):
    run = _own_run(tmp_path)
    info = json.loads(next(run.glob("profiler_info_*.json")).read_text())["npuprof"]
    assert info["steps"] == [2, 3] and info["events_written"] > 0
    assert _cli("analyse", str(run), "--quiet")[0] == 0
    good = (run / OUT / "step_trace_time.csv").read_bytes()
    for segment in (run / "NPUPROF").glob("events_*.npr"):
        segment.write_bytes(b"")
    code, _, err = _cli("analyse", str(run), "--quiet")
    assert code == 1, err                                              # nothing usable: not success
    assert f"{info['events_written']} event(s) written by the profiler, 0 readable" in err
    assert "records steps [2, 3], the data has none of them" in err
    assert (run / OUT / "step_trace_time.csv").read_bytes() == good   # the good outputs are kept
    assert "the previous analysis read" in err and (run / f"{OUT}_reanalysis").is_dir()


def test_a_window_killed_mid_run_says_where_it_was_cut(tmp_path):
    script = textwrap.dedent("""
        import sys, time
        from npuprof import Profiler, record_function
        p = Profiler(output_path=sys.argv[1], flush_interval=0.05)
        p.start()
        for i in range(10_000):
            with record_function("work"):
                time.sleep(0.001)
            p.step()
            if i == 5:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "prof")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    (run,) = (tmp_path / "prof").glob("*_ascend_ms")
    code, _, err = _cli("analyse", str(run), "--quiet")
    assert code == 3, err
    assert "window cut at step" in err and "device data not flushed" in err


def test_a_native_file_cut_after_the_window_stopped_is_named(tmp_path):
    run = _own_run(tmp_path)
    native = run / "FRAMEWORK" / "ops.csv"
    native.parent.mkdir()
    native.write_text("op,dur\nMatMul,5\n")
    info_path = next(run.glob("profiler_info_*.json"))
    info = json.loads(info_path.read_text())
    info["npuprof"]["native_files"] = {"FRAMEWORK/ops.csv": native.stat().st_size}   # as a framework left it
    info_path.write_text(json.dumps(info))
    assert _cli("show", "-dir", str(run))[0] == 0
    whole = native.stat().st_size
    native.write_text("op,dur\n")
    code, _, err = _cli("show", "-dir", str(run))
    assert code == 3 and f"FRAMEWORK/ops.csv ({native.stat().st_size} of {whole} bytes)" in err, err


def test_level0_communication_writes_no_zeros(tmp_path):
    """Communication operators without their HCCL tasks (what Level0 records): no communication.json of
    zero wait and 100 % idle, as torch_npu writes none."""
    from npuprof.events import EventKind, EventTable
    from npuprof.analysis.result import AnalysisResult
    from npuprof.export.communication_json import write_communication_files
    from npuprof.runinfo import RunInfo

    ops = EventTable.from_records(ts=[1_000, 5_000], dur=[2_000, 2_000], kind=[EventKind.COMM] * 2,
                                  name=["hcom_allReduce__1_0_1", "hcom_allReduce__2_0_1"],
                                  type=["hcom_allReduce_"] * 2, args=['{"group": "hccl_world"}'] * 2, step=[0, 0],
                                  source="torch_npu")
    result = AnalysisResult(run_dir=tmp_path, info=RunInfo(run_dir=tmp_path), events=ops)
    assert write_communication_files(result, tmp_path) == []
    assert not (tmp_path / "communication.json").exists()


def test_a_recomputation_that_differs_from_the_tools_table_is_named(tmp_path):
    """kernel_details losing whole rows (cut at a line end: nothing looks damaged) makes npuprof's Computing
    smaller than the tool's own step_trace_time says: the difference is named, column and step."""
    run = _copy(realdata(f"{LEVEL1}/rank0_ascend_pt"), tmp_path / "rank0_ascend_pt")
    kernels = run / OUT / "kernel_details.csv"
    lines = kernels.read_bytes().splitlines(keepends=True)
    kernels.write_bytes(b"".join(lines[:len(lines) // 2]))
    code, _, err = _cli("show", "-dir", str(run))
    assert code == 3, err
    assert "step_trace_time.Computing: npuprof's recomputation differs from the tool's own step_trace_time.csv" in err
    assert "step 50:" in err


def test_the_quality_model_decides_the_exit_code():
    from npuprof.quality import DataQuality, QualityIssue

    quality = DataQuality()
    assert quality.complete and quality.exit_code == 0 and quality.lines() == []
    quality.add(QualityIssue("a.csv", "cut short", ("op_statistic",)))
    quality.add(QualityIssue("a.csv", "cut short", ("op_statistic",)))          # the same issue once
    assert quality.exit_code == 3 and quality.verdict == "partial" and len(quality.issues) == 1
    assert quality.lines() == ["data quality: partial", "  - a.csv: cut short (affects op_statistic)"]
    quality.add(QualityIssue("b", "no Computing", ("step_trace_time.Computing",), not_measured=True))
    assert quality.not_measured == ["step_trace_time.Computing"]
    assert quality.to_json()["affects"] == ["op_statistic", "step_trace_time.Computing"]
    quality.usable = False
    assert quality.exit_code == 1 and quality.to_json()["verdict"] == "unusable"
    assert QualityIssue.from_message("run/k.csv:7: row skipped") == QualityIssue("run/k.csv:7", "row skipped")


def test_an_export_ascend_copy_is_not_held_to_its_sources_framework_files(tmp_path):
    """A copy carries the run's profiler_info but not its raw data or framework files: the run's own contract
    (those files, its raw events) is the source run's, never the copy's."""
    run = _own_run(tmp_path)
    native = run / "TF" / "w.xplane.pb"
    native.parent.mkdir()
    native.write_bytes(b"\x00" * 16)
    info_path = next(run.glob("profiler_info_*.json"))
    info = json.loads(info_path.read_text())
    info["npuprof"]["native_files"] = {"TF/w.xplane.pb": 16}
    info_path.write_text(json.dumps(info))
    code, _, err = _cli("export", "ascend", "-dir", str(run), "-o", str(tmp_path / "copy"))
    assert code == 0, err
    code, _, err = _cli("show", "-dir", str(tmp_path / "copy"))
    assert code == 0, err


@pytest.mark.parametrize("verb", ["timeline", "xplane"])
def test_the_merged_timeline_and_the_xplane_export_say_when_their_input_is_partial(tmp_path, verb):
    """The two verbs that write from the events alone also carry the data's quality: a trace cut short is
    named and exits 3, the intact job exits 0."""
    job = _copy(realdata(LEVEL1), tmp_path / "job")
    args = {"timeline": ["timeline", str(job), "-o", str(tmp_path / "t.json")],
            "xplane": ["xplane", str(job), "--logdir", str(tmp_path / "tb")]}[verb]
    code, _, err = _cli(*args)
    assert code == 0, err
    trace = job / "rank1_ascend_pt" / OUT / "trace_view.json"
    trace.write_bytes(trace.read_bytes()[:100_000])
    code, _, err = _cli(*args)
    assert code == 3, err
    assert "trace_view.json" in err and "cut short" in err
