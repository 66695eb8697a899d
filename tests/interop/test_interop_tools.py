"""The ecosystem's own tools on real npuprof output (a real 2-rank MindSpore
job and generated device data), each run from its PyPI release in
.venv-interop: msprof-analyze 26.2 (cluster, advisor, compare), HolisticTraceAnalysis
0.5 (TraceAnalysis) and xprof 2.24 (converter and server)."""
from __future__ import annotations

import csv
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


from cluster_support import KERNELS, ensure_cluster_plugin, interop_python, make_job, run_ms_ranks

pytestmark = pytest.mark.slow
GRAD_BYTES = (64 * 128 + 128 + 128 * 10 + 10) * 4


@pytest.fixture(scope="module")
def tools() -> Path:
    return interop_python().parent


@pytest.fixture(scope="module")
def real2(tmp_path_factory):
    """Two real MindSpore ranks, analysed and clustered by npuprof (per-rank traces for HTA)."""
    from npuprof.cli import main

    out = tmp_path_factory.mktemp("real2")
    run_ms_ranks(out, steps=6, world=2)
    ensure_cluster_plugin()
    assert main(["analyse", str(out), "--quiet"]) == 0     # each rank's outputs (cluster analysis only reads)
    assert main(["cluster", str(out), "--traces", "--quiet"]) == 0
    return out


def _run(cmd: list, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def _csv(path: Path) -> list:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


# -- msprof-analyze ------------------------------------------------------------------------------------------------
def test_msprof_analyze_cluster_reads_a_multi_rank_npuprof_directory(tools, real2, tmp_path):
    proc = _run([str(tools / "msprof-analyze"), "cluster", "-d", str(real2), "-m", "all"], cwd=tmp_path)
    assert "2 ranks, data type: text, profiling type: mindspore" in proc.stdout + proc.stderr
    out = real2 / "cluster_analysis_output"
    theirs = {(int(r["Step"]), int(r["Index"])): r for r in _csv(out / "cluster_step_trace_time.csv")}
    ours = {(int(r["Step"]), int(r["Index"])): r for r in _csv(real2 / "npuprof_cluster" /
                                                               "cluster_step_trace_time.csv")}
    assert sorted(theirs) == sorted(ours) == [(s, r) for s in (2, 3, 4, 5) for r in (0, 1)]
    for key, row in theirs.items():
        assert row["Type"] == "rank"
        for col in ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage"):
            assert float(row[col]) == pytest.approx(float(ours[key][col]), abs=0.002), (key, col)
    matrix = json.loads((out / "cluster_communication_matrix.json").read_text())
    (group,) = matrix.keys()
    assert group == "(0, 1)"
    step = matrix[group]["step3"]
    links = step["AllReduce@world"]
    assert set(links) == {"0-1", "1-0", "0-0", "1-1"}
    assert links["0-1"]["Transport Type"] == "TCP" and links["0-0"]["Transport Type"] == "LOCAL"
    assert links["0-1"]["Transit Size(MB)"] == pytest.approx(GRAD_BYTES / 1e6, rel=1e-4)
    assert links["0-1"]["Bandwidth(GB/s)"] > 0
    comm = json.loads((out / "cluster_communication.json").read_text())[group]["step3"]
    op = comm["hcom_allReduce_3@world"]
    assert set(op) == {"0", "1"} or set(op) == {0, 1}
    for rank_info in op.values():
        t = rank_info["Communication Time Info"]
        assert t["Elapse Time(ms)"] >= t["Transit Time(ms)"] > 0
    assert "Total Op Info@world" in comm


def _advisor(tools: Path, run_dir: Path, cwd: Path) -> tuple[dict, str]:
    proc = _run([str(tools / "msprof-analyze"), "advisor", "all", "-d", str(run_dir), "-pt", "mindspore",
                 "-l", "en", "--agent"], cwd=cwd)
    line = [ln for ln in proc.stdout.splitlines() if '"status"' in ln][-1]
    result = json.loads(line[line.index("{"):])
    log = Path(result["log_path"]).read_text(errors="replace")
    return result, log


def _rank0_run(real2: Path) -> Path:
    return next((real2 / "rank0").glob("*_ascend_ms"))


def test_msprof_analyze_advisor_runs_on_a_single_rank_output(tools, real2, tmp_path):
    result, log = _advisor(tools, _rank0_run(real2), tmp_path)
    assert result["status"] == "success" and result["code"] == 0
    summary = result["message"]["Overall Summary"]
    assert summary["headers"] == ["Performance Index", "Duration(ms)", "Duration Ratio"]
    rows = [r[0].strip() for r in summary["data"]]
    assert {"Computing Time", "Uncovered Communication Time", "Free Time", "E2E Time"} <= set(rows)
    # npuprof's communication.json (with its "Total Op Info") is read without error
    assert "rdma_bandwidth" not in log and "Failed to read communication.json" not in log


@pytest.mark.xfail(strict=True, reason="advisor's msprof parser streams ASCEND_PROFILER_OUTPUT/trace_view.json as a "
                                       "JSON array (ijson 'item', torch_npu/MindSpore form); a run keeps the Kineto "
                                       "object form there (HTA, Perfetto; one file cannot be both): "
                                       "`npuprof export ascend` writes the array form into a copy")
def test_msprof_analyze_advisor_parses_trace_view(tools, real2, tmp_path):
    _, log = _advisor(tools, _rank0_run(real2), tmp_path)
    assert "'str' object has no attribute 'get'" not in log


def test_msprof_analyze_advisor_on_an_export_ascend_copy(tools, real2, tmp_path):
    """The advisor's Overall Summary equals npuprof's step_trace_time.csv on `npuprof export ascend` output.

    Tolerance 0.002 ms: both sides carry the same ns-exact segments; the advisor prints each figure rounded to
    0.001 ms and derives Free as E2E - Computing - Uncovered Communication (three roundings)."""
    from npuprof.cli import main

    run = _rank0_run(real2)
    out = tmp_path / "ascend"
    assert main(["export", "ascend", "-dir", str(real2), "-o", str(out)]) == 0
    copy = out / "rank0" / run.name
    result, log = _advisor(tools, copy, tmp_path)
    assert result["status"] == "success"
    assert "'str' object has no attribute 'get'" not in log and "while parsing file" not in log
    assert "Failed to get overlap analysis data" not in log and "skip timeline analysis" not in log
    figures = {r[0].strip(): float(r[1]) for r in result["message"]["Overall Summary"]["data"]}
    steps = _csv(run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")
    assert len(steps) == 4
    total = {col: sum(float(r[col]) for r in steps) / 1000 for col in
             ("Computing", "Communication(Not Overlapped)", "Free", "Stage")}
    assert total["Computing"] > 0 and total["Communication(Not Overlapped)"] > 0
    assert figures["Computing Time"] == pytest.approx(total["Computing"], abs=0.002)
    assert figures["Uncovered Communication Time"] == pytest.approx(total["Communication(Not Overlapped)"], abs=0.002)
    assert figures["Free Time"] == pytest.approx(total["Free"], abs=0.002)
    assert figures["E2E Time"] == pytest.approx(total["Stage"], abs=0.002)   # ProfilerStep spans are contiguous
    # the Ascend tools' other inputs are the run's own files, byte for byte
    for name in ("step_trace_time.csv", "kernel_details.csv", "communication.json"):
        assert (copy / "ASCEND_PROFILER_OUTPUT" / name).read_bytes() == \
            (run / "ASCEND_PROFILER_OUTPUT" / name).read_bytes()
    # the exported parent is still a cluster for msprof-analyze
    proc = _run([str(tools / "msprof-analyze"), "cluster", "-d", str(out), "-m", "all"], cwd=tmp_path)
    assert "2 ranks, data type: text, profiling type: mindspore" in proc.stdout + proc.stderr
    theirs = _csv(out / "cluster_analysis_output" / "cluster_step_trace_time.csv")
    assert sorted((int(r["Step"]), int(r["Index"])) for r in theirs) == [(s, r) for s in (2, 3, 4, 5) for r in (0, 1)]


# A real TensorFlow 2.21 run (`_ascend_tf`): msprof-analyze takes only *_ascend_ms / *_ascend_pt directories
TF_WORKLOAD = r"""
import sys, numpy as np, tensorflow as tf
import npuprof
from npuprof.integrations.tensorflow import Profiler
from tf_support import build_tf2_train_step
step = build_tf2_train_step(tf)
x = tf.constant(np.random.default_rng(0).random((32, 64)).astype(np.float32))
with Profiler(output_path=sys.argv[1], schedule=npuprof.schedule(wait=1, warmup=1, active=4)) as prof:
    for _ in range(6):
        with npuprof.record_function("train_step"):
            step(x).numpy()
        prof.step()
"""


def test_msprof_analyze_reads_a_tensorflow_run_through_its_export_ascend_copy(tools, tmp_path):
    from npuprof.cli import main

    script = tmp_path / "train_tf.py"
    script.write_text(TF_WORKLOAD)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "prof")], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp_path / "prof").glob("*_ascend_tf")
    assert main(["analyse", str(run), "--quiet"]) == 0
    # the run itself: msprof-analyze finds no profiling data in a *_ascend_tf directory
    proc = _run([str(tools / "msprof-analyze"), "cluster", "-d", str(tmp_path / "prof"), "-m", "all"], cwd=tmp_path)
    assert "Can not get rank info or profiling data" in proc.stdout + proc.stderr
    out = tmp_path / "ascend"
    assert main(["export", "ascend", "-dir", str(tmp_path / "prof"), "-o", str(out)]) == 0
    (copy,) = out.glob("*_ascend_ms")
    proc = _run([str(tools / "msprof-analyze"), "cluster", "-d", str(out), "-m", "all"], cwd=tmp_path)
    assert "1 ranks, data type: text, profiling type: mindspore" in proc.stdout + proc.stderr
    steps = _csv(run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")
    theirs = _csv(out / "cluster_analysis_output" / "cluster_step_trace_time.csv")
    assert [r["Step"] for r in theirs] == [r["Step"] for r in steps] == ["2", "3", "4", "5"]
    for mine, their in zip(steps, theirs):
        assert float(their["Computing"]) == pytest.approx(float(mine["Computing"]), abs=0.002)
        assert float(their["Free"]) == pytest.approx(float(mine["Free"]), abs=0.002)
    result, log = _advisor(tools, copy, tmp_path)
    assert result["status"] == "success" and "while parsing file" not in log
    figures = {r[0].strip(): float(r[1]) for r in result["message"]["Overall Summary"]["data"]}
    total = {col: sum(float(r[col]) for r in steps) / 1000 for col in ("Computing", "Free", "Stage")}
    assert total["Computing"] > 0
    assert figures["Computing Time"] == pytest.approx(total["Computing"], abs=0.002)
    assert figures["Free Time"] == pytest.approx(total["Free"], abs=0.002)
    assert figures["E2E Time"] == pytest.approx(total["Stage"], abs=0.002)


# msprof-analyze compare: two MindSpore CPU trainings that differ (1 hidden layer, batch 8 vs 2 hidden layers, batch 32)
COMPARE_WORKLOAD = r"""
import sys, numpy as np, mindspore as ms
from mindspore import nn
import npuprof
out, hidden, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
ms.set_seed(0)
layers = [nn.Dense(64, 128), nn.ReLU()]
for _ in range(hidden - 1):
    layers += [nn.Dense(128, 128), nn.ReLU()]
net = nn.SequentialCell(layers + [nn.Dense(128, 10)])
loss_fn, opt = nn.MSELoss(), nn.SGD(net.trainable_params(), 0.01)
grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)
rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((batch, 64)).astype(np.float32))
y = ms.Tensor(rng.standard_normal((batch, 10)).astype(np.float32))
with npuprof.Profiler(output_path=out, activities=["CPU"], schedule=npuprof.schedule(wait=1, warmup=1, active=4)) as prof:
    for _ in range(6):
        with npuprof.record_function("forward_backward"):
            loss, grads = grad_fn(x, y)
        opt(grads)
        loss.asnumpy()
        prof.step()
"""
_XL = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
       "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}


def _xlsx(path: Path) -> dict:
    """Sheets of an xlsx as lists of rows (numbers as float). The stdlib suffices for xlsxwriter's output, and
    .venv-interop has no openpyxl (msprof-analyze writes with xlsxwriter; pandas cannot read xlsx without it)."""
    import re
    import xml.etree.ElementTree as ET
    import zipfile

    m = f"{{{_XL['m']}}}"
    with zipfile.ZipFile(path) as z:
        shared = ["".join(t.text or "" for t in si.iter(m + "t"))
                  for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", _XL)] \
            if "xl/sharedStrings.xml" in z.namelist() else []
        rels = {r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
        sheets = {}
        for sheet in ET.fromstring(z.read("xl/workbook.xml")).find("m:sheets", _XL):
            target = rels[sheet.get(f"{{{_XL['r']}}}id")].lstrip("/").removeprefix("xl/")
            rows = []
            for row in ET.fromstring(z.read("xl/" + target)).iter(m + "row"):
                cells = {}
                for c in row.findall("m:c", _XL):
                    col = 0
                    for ch in re.match(r"[A-Z]+", c.get("r")).group():
                        col = col * 26 + ord(ch) - 64
                    v = c.find("m:v", _XL)
                    if v is None:
                        val = "".join(t.text or "" for t in c.iter(m + "t")) or None
                    elif c.get("t") == "s":
                        val = shared[int(v.text)]
                    elif c.get("t") in ("str", "e"):
                        val = v.text
                    else:
                        val = float(v.text)
                    cells[col - 1] = val
                rows.append([cells.get(i) for i in range(max(cells) + 1)] if cells else [])
            sheets[sheet.get("name")] = rows
    return sheets


def _compare(tools: Path, base: Path, comparison: Path, cwd: Path) -> tuple[dict, str]:
    out = cwd / f"compare_{base.parent.name}_{comparison.parent.name}"
    out.mkdir()
    proc = _run([str(tools / "msprof-analyze"), "compare", "-d", str(comparison), "-bp", str(base), "-o", str(out)],
                cwd=cwd)
    (result,) = out.glob("performance_comparison_result_*.xlsx")
    return _xlsx(result), proc.stdout + proc.stderr


def _rows(sheet: list) -> dict:
    """Data rows of a compare sheet by their name column (row 0: the two profiles, row 1: headers)."""
    name_col = 0 if sheet[1][0] == "Index" else 1
    return {r[name_col]: r for r in sheet[2:] if len(r) > name_col and r[name_col] is not None}


@pytest.fixture(scope="module")
def two_trainings(tmp_path_factory):
    """(small, large): run dirs of the two trainings and their `npuprof export ascend` copies."""
    import sys

    from npuprof.cli import main

    root = tmp_path_factory.mktemp("compare")
    script = root / "workload.py"
    script.write_text(COMPARE_WORKLOAD)
    env = dict(os.environ, GLOG_v="3")
    procs = [subprocess.Popen([sys.executable, str(script), str(root / name), hidden, batch], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, hidden, batch in (("small", "1", "8"), ("large", "2", "32"))]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-4000:]
    out = {}
    for name in ("small", "large"):
        assert main(["analyse", str(root / name), "--quiet"]) == 0     # the runs' own outputs (export only reads)
        assert main(["export", "ascend", "-dir", str(root / name), "-o", str(root / f"{name}_ascend")]) == 0
        (run,) = (root / name).glob("*_ascend_ms")
        out[name] = (run, root / f"{name}_ascend" / run.name)
    return out["small"], out["large"]


def _step_totals_ms(run: Path) -> dict:
    steps = _csv(run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")
    assert len(steps) == 4
    return {col: sum(float(r[col]) for r in steps) / 1000 for col in
            ("Computing", "Communication(Not Overlapped)", "Free", "Stage")}


def _op_statistic(run: Path) -> dict:
    return {r["OP Type"]: (int(r["Count"]), float(r["Total Time(us)"]))
            for r in _csv(run / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv")}


def test_msprof_analyze_compare_on_two_export_ascend_copies(tools, two_trainings, tmp_path):
    """compare's overall, operator and kernel sheets equal npuprof's step_trace_time and op_statistic of each side.

    Overall figures to 1e-6 ms: the Overlap Analysis segments and step_trace_time.csv are the same ns-exact
    intervals (µs with 3 decimals) and compare keeps their float sums unrounded in the xlsx; kernel totals to
    0.01 µs: compare rounds them to 2 decimals."""
    (small_run, small), (large_run, large) = two_trainings
    sheets, log = _compare(tools, small, large, tmp_path)
    assert "Failed to get overlap analysis data" not in log and "Can't find any torch op" not in log
    overall = sheets["OverallMetrics"]
    assert str(small) in overall[0][1] and str(large) in overall[0][4]    # base, then comparison
    rows = _rows(overall)
    for run, dur in ((small_run, 1), (large_run, 4)):                     # Duration(ms) of each side
        total = _step_totals_ms(run)
        assert total["Computing"] > 0
        assert rows["Computing Time"][dur] == pytest.approx(total["Computing"], abs=1e-6)
        assert rows["Free Time"][dur] == pytest.approx(total["Free"], abs=1e-6)
        assert rows["E2E Time"][dur] == pytest.approx(total["Stage"], abs=1e-6)   # steps are contiguous
    assert "Uncovered Communication Time" not in rows                    # no communication in these runs
    # kernels (from kernel_details.csv, by op type) and operators (the cpu_op events, by name) of both sides
    kernels = _rows(sheets["KernelCompare"])
    operators = sheets["OperatorCompareStatistic"][2:]
    for run, calls, total_col, op_count in ((small_run, 7, 3, 3), (large_run, 12, 8, 5)):
        stat = _op_statistic(run)
        assert set(kernels) == set(stat) | set(_op_statistic(large_run if run == small_run else small_run))
        for typ, (count, total) in stat.items():
            assert kernels[typ][calls] == count, typ
            assert kernels[typ][total_col] == pytest.approx(total, abs=0.006), typ
        type_of = {r["Name"]: r["Type"] for r in _csv(run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv")}
        by_type: dict = {}
        for r in operators:
            by_type[type_of.get(r[1], r[1])] = by_type.get(type_of.get(r[1], r[1]), 0) + int(r[op_count])
        assert {t: n for t, n in by_type.items() if n} == {t: c for t, (c, _) in stat.items()}
    # the difference between the trainings shows where it should: one more Dense layer, forward and backward
    assert _op_statistic(small_run)["MatMul"][0] == 4 * 5 and _op_statistic(large_run)["MatMul"][0] == 4 * 8
    assert (kernels["MatMul"][7], kernels["MatMul"][12]) == (20, 32)


def test_msprof_analyze_compare_on_raw_runs_reads_only_kernel_details(tools, two_trainings, tmp_path):
    """On the run directories compare finds no JSON-array trace_view.json (ijson 'item' yields nothing from the
    Kineto object): it logs that, writes no overall/operator sheets and compares kernel_details.csv alone."""
    (small_run, small), (large_run, large) = two_trainings
    sheets, log = _compare(tools, small_run, large_run, tmp_path)
    assert "Failed to get overlap analysis data" in log and "Can't find any torch op" in log
    assert list(sheets) == ["KernelCompare"]
    exported, _ = _compare(tools, small, large, tmp_path)
    assert sheets["KernelCompare"][2:] == exported["KernelCompare"][2:]


def test_msprof_analyze_compare_gives_operators_the_device_time_of_their_linked_kernels(tools, tmp_path):
    """Generated NPU data with launch links: the export's async_npu flows give compare's operator sheets each
    operator's device duration, equal to its kernels' durations in kernel_details.csv (1.3x slower kernels on
    the comparison side)."""
    from npuprof.cli import main

    copies, kernel_us = [], []
    for name, slow in (("base", ()), ("slower", (0,))):
        make_job(tmp_path / name, ranks=1, steps=4, slow_ranks=slow, counters=False, links=True, world_size=1)
        (run,) = (tmp_path / name).rglob("*_ascend_ms")
        assert main(["analyse", str(run), "--quiet"]) == 0
        assert main(["export", "ascend", "-dir", str(run), "-o", str(tmp_path / f"{name}_ascend")]) == 0
        copies.append(tmp_path / f"{name}_ascend" / run.name)
        per_op: dict = {}
        for r in _csv(run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"):   # kernel <Type>_kernel <- <Type>-op
            if r["Type"] not in {k for k, _ in KERNELS}:   # communication rows (listed, as torch_npu lists them)
                continue
            per_op[f"{r['Type']}-op"] = per_op.get(f"{r['Type']}-op", 0.0) + float(r["Duration(us)"])
        kernel_us.append(per_op)
    sheets, log = _compare(tools, copies[0], copies[1], tmp_path)
    assert "Can't find any flow event" not in log
    stats = _rows(sheets["OperatorCompareStatistic"])
    assert set(stats) == set(kernel_us[0]) == {f"{k}-op" for k, _ in KERNELS}
    for op, row in stats.items():
        assert row[2] == pytest.approx(kernel_us[0][op] / 1000, abs=1e-6), op      # base device duration (ms)
        assert row[4] == pytest.approx(kernel_us[1][op] / 1000, abs=1e-6), op      # comparison
        assert row[4] > 1.2 * row[2]
        assert row[3] == row[5] == 4 * sum(1 for k, _ in KERNELS if f"{k}-op" == op)   # operators, 4 steps
    for r in sheets["OperatorCompare"][2:]:        # each launch carries its own kernel and nothing else
        assert r[4].startswith(r[1].replace("-op", "_kernel") + ",") and r[5] > 0


def test_msprof_analyze_compare_communication_of_two_ranks(tools, real2, tmp_path):
    """Two ranks of the real 2-rank job: compare's communication sheet lists each rank's all-reduce calls with
    their summed durations, and Uncovered Communication is step_trace_time's Communication(Not Overlapped)."""
    from npuprof.cli import main

    out = tmp_path / "ascend"
    assert main(["export", "ascend", "-dir", str(real2), "-o", str(out)]) == 0
    runs = [next((real2 / f"rank{r}").glob("*_ascend_ms")) for r in (0, 1)]
    sheets, log = _compare(tools, out / "rank0" / runs[0].name, out / "rank1" / runs[1].name, tmp_path)
    assert "Can't find any communication op" not in log
    (allreduce,) = sheets["CommunicationCompare"][2:]
    overall = _rows(sheets["OverallMetrics"])
    for run, (name, calls, total), dur in zip(runs, ((1, 3, 4), (8, 10, 11)), (1, 4)):
        trace = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())["traceEvents"]
        ops = [e["dur"] for e in trace if e["ph"] == "X" and e["name"].startswith("hcom_allReduce_")]
        assert allreduce[name] == "allreduce" and allreduce[calls] == len(ops) == 4
        assert allreduce[total] == pytest.approx(sum(ops), abs=0.002)
        uncovered = _step_totals_ms(run)["Communication(Not Overlapped)"]
        assert uncovered > 0
        assert overall["Uncovered Communication Time"][dur] == pytest.approx(uncovered, abs=1e-6)
        assert overall["\tGroup world Communication"][dur] == pytest.approx(uncovered, abs=1e-6)


# -- HTA -----------------------------------------------------------------------------------------------------------
HTA_SCRIPT = r'''
import json, sys
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
t = ta.t
out = {"ranks": sorted(int(r) for r in t.get_ranks()), "iterations": {}, "names": {}, "steps": {}}
sym = t.symbol_table.get_sym_table()
for r in out["ranks"]:
    df = t.get_trace(r)
    out["iterations"][r] = sorted(int(i) for i in set(df["iteration"].tolist()) if i >= 0)
    out["names"][r] = sorted({sym[i] for i in set(df["name"].tolist())})
    steps = df[df["name"].map(lambda i: sym[i].startswith("ProfilerStep#"))]
    out["steps"][r] = sorted((sym[n], int(it)) for n, it in zip(steps["name"], steps["iteration"]))
if len(sys.argv) > 2:
    k = ta.get_gpu_kernel_breakdown(visualize=False)[0]
    out["kernel_types"] = sorted(k["kernel_type"].tolist())
    out["kernels"] = {}
    for r in out["ranks"]:   # device kernels: iteration (HTA takes it from the launch via correlation)
        df = t.get_trace(r)
        kern = df[df["name"].map(lambda i: sym[i].endswith("_kernel"))]
        launch = [sym[df.loc[c, "name"]] if c > 0 else None for c in kern["index_correlation"]]
        out["kernels"][r] = sorted((sym[n], int(it), lname, int(df.loc[c, "iteration"]) if c > 0 else None)
                                   for n, it, lname, c in zip(kern["name"], kern["iteration"], launch,
                                                              kern["index_correlation"]))
    tb = ta.get_temporal_breakdown(visualize=False)
    out["temporal_ranks"] = sorted(int(x) for x in tb["rank"].tolist())
    out["compute_pct"] = [float(x) for x in tb["compute_time_pctg"].tolist()]
print("HTA-RESULT " + json.dumps(out))
'''


def _hta(tools: Path, trace_dir: Path, cwd: Path, kernels: bool = False) -> dict:
    script = cwd / "hta_check.py"
    script.write_text(HTA_SCRIPT)
    proc = _run([str(tools / "python"), str(script), str(trace_dir)] + (["kernels"] if kernels else []), cwd=cwd)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("HTA-RESULT ")][-1]
    return json.loads(line[len("HTA-RESULT "):])


def test_hta_loads_npuprof_traces_of_several_ranks(tools, real2, tmp_path):
    res = _hta(tools, real2 / "npuprof_cluster" / "traces", tmp_path)
    assert res["ranks"] == [0, 1]
    for r in ("0", "1"):
        # HTA drops the last ProfilerStep by default: 2, 3, 4 of the recorded 2..5
        assert res["iterations"][r] == [2, 3, 4]
        assert [s for s, _ in res["steps"][r]] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
        assert all(f"ProfilerStep#{it}" == s for s, it in res["steps"][r])
        assert {"MatMul", "forward_backward", "hcom_allReduce_3"} <= set(res["names"][r])
        assert any("BiasAdd" in n for n in res["names"][r])


def test_hta_kernel_breakdowns_on_device_kernels(tools, tmp_path):
    """Generated NPU kernels (device >= 0, stream > 0): HTA's kernel and temporal breakdowns apply."""
    job = make_job(tmp_path / "job", ranks=4, steps=4, slow_ranks=(2,), counters=False)
    ensure_cluster_plugin()
    from npuprof.cluster import cluster_analyse

    res = cluster_analyse(job.root, backend="serial", rank_traces=True, use_gzip=True)
    traces = res.output_dir / "traces"
    assert sorted(p.name for p in traces.iterdir()) == [f"rank{r}.pt.trace.json.gz" for r in range(4)]
    hta = _hta(tools, traces, tmp_path, kernels=True)
    assert hta["ranks"] == [0, 1, 2, 3] and hta["temporal_ranks"] == [0, 1, 2, 3]
    assert "COMPUTATION" in hta["kernel_types"]
    assert all(0 < p <= 100 for p in hta["compute_pct"])
    assert {"MatMul_kernel", "Softmax_kernel"} <= set(hta["names"]["0"])
    # without launch links device kernels belong to no iteration
    assert {it for _, it, _, _ in hta["kernels"]["0"]} == {-1}


def test_hta_ties_linked_kernels_to_the_iterations_of_their_launches(tools, tmp_path):
    """Kernels linked to their launching operator (correlation + ac2g flows) get its iteration in HTA."""
    job = make_job(tmp_path / "job", ranks=2, steps=4, slow_ranks=(), counters=False, links=True)
    ensure_cluster_plugin()
    from npuprof.cluster import cluster_analyse

    res = cluster_analyse(job.root, backend="serial", rank_traces=True)
    hta = _hta(tools, res.output_dir / "traces", tmp_path, kernels=True)
    assert hta["ranks"] == [0, 1]
    for r in ("0", "1"):
        kernels = hta["kernels"][r]
        # HTA drops the last step (#4) and its events: the kernels of steps 1-3 remain
        assert len(kernels) == 3 * len(KERNELS)
        for name, it, launch, launch_it in kernels:
            assert launch == name.replace("_kernel", "-op")   # tied to its own launch, not the nearest op
            assert it == launch_it
        assert sorted({it for _, it, _, _ in kernels}) == [1, 2, 3]
        assert sorted(n for n, it, _, _ in kernels if it == 2) == sorted(f"{k}_kernel" for k, _ in KERNELS)


# -- xprof / TensorBoard ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def xplane_logdir(real2, tmp_path_factory):
    from npuprof.export.xplane import export_tensorboard

    logdir = tmp_path_factory.mktemp("tb")
    paths = export_tensorboard(real2, logdir, run_name="npuprof_run")
    return logdir, paths


def test_xplane_decodes_with_tensorflows_proto(real2, xplane_logdir):
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    from npuprof.analysis.pipeline import load_events
    from npuprof.events import EventKind

    logdir, paths = xplane_logdir
    assert sorted(p.name for p in paths) == sorted(f"{socket.gethostname()}_rank{r}.xplane.pb" for r in (0, 1))
    assert all(p.parent == logdir / "plugins" / "profile" / "npuprof_run" for p in paths)
    run = _rank0_run(real2)
    events, _, _ = load_events(run)
    space = xplane_pb2.XSpace()
    space.ParseFromString(next(p for p in paths if "_rank0" in p.name).read_bytes())
    (host,) = [p for p in space.planes if p.name == "/host:CPU"]
    got = []
    for line in host.lines:
        for e in line.events:
            got.append((line.timestamp_ns + e.offset_ps // 1000, e.duration_ps // 1000,
                        host.event_metadata[e.metadata_id].name))
    spans = events.select(~events["kind"].__eq__(int(EventKind.COUNTER)))
    expected = sorted(zip(spans["ts"].tolist(), spans["dur"].tolist(), spans.column_strings("name")))
    assert sorted(got) == expected
    stat_names = {m.name for m in host.stat_metadata.values()}
    assert {"step_num", "op_type"} <= stat_names
    step_nums = sorted(s.int64_value for line in host.lines for e in line.events for s in e.stats
                       if host.stat_metadata[s.metadata_id].name == "step_num")
    assert step_nums == [2, 3, 4, 5]


XPROF_SCRIPT = r'''
import json, sys
from xprof.convert import raw_to_tool_data as r
data, _ = r.xspace_to_tool_data([sys.argv[1]], "trace_viewer@", {})
trace = json.loads(data)
ops, _ = r.xspace_to_tool_data([sys.argv[1]], "framework_op_stats", {})
print("XPROF-RESULT " + json.dumps({"events": [e for e in trace["traceEvents"] if e.get("ph") == "X"],
      "processes": [e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"],
      "op_stats": ops.decode() if isinstance(ops, bytes) else ops}))
'''


def test_xprof_converter_reads_the_xspace(tools, xplane_logdir, tmp_path):
    _, paths = xplane_logdir
    pb = tmp_path / paths[0].name
    pb.write_bytes(paths[0].read_bytes())       # xprof caches beside the file
    script = tmp_path / "xprof_check.py"
    script.write_text(XPROF_SCRIPT)
    proc = _run([str(tools / "python"), str(script), str(pb)], cwd=tmp_path)
    res = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("XPROF-RESULT ")][-1][13:])
    names = {e["name"] for e in res["events"]}
    assert {"MatMul", "ProfilerStep#2", "hcom_allReduce_2", "forward_backward"} <= names
    assert any(p.endswith("/host:CPU") for p in res["processes"])
    assert all(e["dur"] >= 0 for e in res["events"])
    # framework_op_stats runs on it but needs TensorFlow-specific stats (tf_op, step groups) to fill rows
    assert '"rows"' in res["op_stats"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        body = resp.read()
        return gzip.decompress(body) if resp.headers.get("Content-Encoding") == "gzip" else body


def test_xprof_server_lists_and_serves_the_npuprof_run(tools, xplane_logdir, tmp_path):
    logdir, _ = xplane_logdir
    port = _free_port()
    server = subprocess.Popen([str(tools / "xprof"), f"--logdir={logdir}", f"--port={port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/data/plugin/profile"
        deadline = time.monotonic() + 120
        runs = None
        while time.monotonic() < deadline:
            try:
                runs = json.loads(_get(f"{base}/runs"))
                break
            except OSError:
                time.sleep(0.5)
        assert runs == ["npuprof_run"]
        tools_list = json.loads(_get(f"{base}/run_tools?run=npuprof_run"))
        assert "trace_viewer@" in tools_list and "framework_op_stats" in tools_list
        hosts = {h["hostname"] for h in json.loads(_get(f"{base}/hosts?run=npuprof_run&tag=trace_viewer@"))}
        assert hosts == {f"{socket.gethostname()}_rank{r}" for r in (0, 1)}
        trace = json.loads(_get(f"{base}/data?run=npuprof_run&tag=trace_viewer@&host={socket.gethostname()}_rank1"))
        assert any(e.get("name") == "MatMul" for e in trace["traceEvents"])
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_xplane_command_writes_the_tensorboard_layout(real2, tmp_path, capsys):
    from npuprof.cli import main

    ensure_cluster_plugin()
    assert main(["xplane", str(real2 / "rank1"), "--logdir", str(tmp_path / "tb"), "--run", "r1"]) == 0
    out = capsys.readouterr().out
    (pb,) = (tmp_path / "tb" / "plugins" / "profile" / "r1").glob("*.xplane.pb")
    assert pb.name == f"{socket.gethostname()}_rank1.xplane.pb" and str(pb) in out and pb.stat().st_size > 1000
    assert main(["xplane", str(real2 / "rank1"), "--logdir", str(tmp_path / "tb"), "--run", "bad/name"]) == 2


# msprof-analyze compare's memory sheets: two TF 2.21 trainings with profile_memory (Dense 128 vs 512 units)
TF_MEMORY_WORKLOAD = r"""
import sys, numpy as np
import npuprof
from npuprof.integrations.tensorflow import Profiler   # before TensorFlow: its CPU allocator events on
out, units = sys.argv[1], int(sys.argv[2])
prof = Profiler(output_path=out, profile_memory=True, start_profile=False)
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.Input((64,)), tf.keras.layers.Dense(units, activation="relu"),
                             tf.keras.layers.Dense(8)])
opt = tf.keras.optimizers.SGD(0.01)
x = tf.constant(np.random.rand(32, 64).astype("float32")); y = tf.constant(np.random.rand(32, 8).astype("float32"))
@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    g = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(g, model.trainable_variables))
    return loss
step()
prof.start()
for _ in range(4):
    step().numpy(); prof.step()
prof.stop()
"""
_DETAIL_RE = r"(.+?), \(([\d.]+), ([\d.]+)\), \[duration: [\d.]+\], \[size: ([\d.]+)\]"


def test_msprof_analyze_compare_fills_its_memory_sheets_from_two_npuprof_runs(tools, tmp_path):
    """Each allocation compare lists under an operator is a row of the copy's operator_memory.csv (allocation
    and release time, size: compare names it after the innermost operator running at its allocation), each
    operator's Size(KB) is the sum of its allocations, they cover most of the window's allocations (those made
    inside the operators compare reads), and the larger model allocates more."""
    import re

    from npuprof.cli import main

    script = tmp_path / "train_tf_memory.py"
    script.write_text(TF_MEMORY_WORKLOAD)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    copies = {}
    for units in ("128", "512"):
        proc = subprocess.run([sys.executable, str(script), str(tmp_path / f"p{units}"), units], capture_output=True,
                              text=True, timeout=600, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert main(["analyse", str(tmp_path / f"p{units}"), "--quiet"]) == 0
        assert main(["export", "ascend", "-dir", str(tmp_path / f"p{units}"), "-o", str(tmp_path / f"a{units}")]) == 0
        (copies[units],) = (tmp_path / f"a{units}").glob("*_ascend_ms")
    sheets, log = _compare(tools, copies["128"], copies["512"], tmp_path)
    rows = sheets["MemoryCompare"][2:]
    totals = {}
    for side, (detail_col, size_col) in (("128", (4, 5)), ("512", (9, 10))):
        ours = {(r["Allocation Time(us)"], r["Release Time(us)"] or "0", float(r["Size(KB)"]))
                for r in _csv(copies[side] / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv")}
        listed = 0.0
        for r in rows:
            details = re.findall(_DETAIL_RE, r[detail_col] or "")
            sizes = [float(d[3]) for d in details]
            assert sum(sizes) == pytest.approx(r[size_col]), r[1]
            for _, alloc, release, size in details:
                assert (alloc, release, float(size)) in ours
            listed += sum(sizes)
        totals[side] = listed
        assert listed > 0.5 * sum(s for *_, s in ours)       # most of the window's allocations
    assert totals["512"] > totals["128"]
    stats = _rows(sheets["MemoryCompareStatistic"])
    assert sum(r[3] for r in stats.values()) == pytest.approx(totals["128"] / 1024)   # MB
