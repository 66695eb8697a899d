"""Conformance on real torch_npu text outputs (Ascend910B, 2 ranks, Level1, step 50;
../shared/realdata/msinsight, see its README): npuprof's recomputation of every
table the tool wrote, against the tool's own file in the same run directory.

The samples are read where they are (never copied, never written). Where the
two cannot agree to the writer's last digit, :data:`DIFFERS` says which
column and why; every other column must be equal to the writer's rounding.
The last tests check the general rule on lone real files (other runs, other
versions) that nothing is assumed: core types read, counts equal the rows.
"""
from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from realdata import FLOAT_EPOCH_US, US, Bounds, compare_json, realdata, tree_digest

from npuprof.analysis.analyzer import registered_analyzers
from npuprof.analysis.steps import step_spans

ANALYZERS = {r.analyzer.table: r.analyzer.compute for r in registered_analyzers()}
from npuprof.analysis.pipeline import load_events
from npuprof.analysis.rank_communication import (comm_events, communication_json, communication_matrix_json,
                                            op_instance_names)
from npuprof.events import EventKind
from npuprof.integrations.mindspore import parser as ms_parser
from npuprof.plugins.manager import get_plugin_host
from npuprof.readers.ascend_output import AscendWriter, read_ascend_output, writer_of

# the same job at every profiler level the samples hold (Level1 is in ../shared/realdata; a level that is not
# there skips); the tests hold for each, where the tool wrote the file
LEVELS = tuple(f"msinsight/test/data/pytorch/text/level{n}" for n in (0, 1, 2))
RANKS = (0, 1)

# Columns that cannot agree to the last digit, and why (the bound each test allows is derived from this):
DIFFERS = {
    ("step_trace_time", "Stage"): "the tool subtracts epoch µs held in float64 (0.25 µs apart); npuprof exact ns",
    ("step_trace_time", "Preparing"): "as Stage: a difference of two float64 epoch µs",
    ("step_trace_time", "Free"): "Stage less the busy time: Stage's float64 rounding plus <1 ns per operator",
    ("step_trace_time", "*busy*"): "Computing, Communication, Overlapped, Not Overlapped: the tool adds sub-ns "
                                   "durations; kernel_details.csv (npuprof's source) cuts them to whole ns: "
                                   "< 1 ns per operator",
    ("op_statistic", "Total Time(us)"): "the tool adds sub-ns durations, npuprof the csv's whole ns: < 1 ns per op",
    ("op_statistic", "Min/Avg/Max Time(us)"): "one duration rounded vs cut to ns: < 1 ns",
}


def _csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return [{k.strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(fh)]


class Analysed:
    """One real rank: its run directory, npuprof's events and tables, the tool's own tables."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.out = run / "ASCEND_PROFILER_OUTPUT"
        self.events, self.info, self.warnings = load_events(run)
        self.tables = {name: ANALYZERS[name](self.events) for name in
                       ("step_trace_time", "op_statistic", "api_statistic", "kernel_details")}

    def tool_file(self, name: str) -> Path:
        """The tool's own file, or skip: a profiler level writes only some (Level0 has no op_statistic)."""
        path = self.out / name
        if not path.is_file():
            pytest.skip(f"{self.run.name}: the tool wrote no {name} at this level")
        return path

    def tool(self, name: str) -> list[dict]:
        return _csv(self.tool_file(name))


@pytest.fixture(scope="module", params=[(level, r) for level in LEVELS for r in RANKS],
                ids=[f"{level.rpartition('/')[2]}-rank{r}" for level in LEVELS for r in RANKS])
def rank(request) -> tuple[int, Analysed]:
    level, r = request.param
    run = realdata(f"{level}/rank{r}_ascend_pt")
    before = tree_digest(run)
    analysed = Analysed(run)
    assert tree_digest(run) == before            # read-only input
    return r, analysed


def _device_ops(a: Analysed) -> int:
    return sum(1 for r in a.tool("kernel_details.csv") if r["Accelerator Core"] not in ("HCCL", "COMMUNICATION"))


def test_read_cleanly_by_exactly_one_reader(rank):
    r, a = rank
    assert a.warnings == []
    assert a.info.rank == r and writer_of(a.run) is AscendWriter.TORCH_NPU
    assert not ms_parser.recognise(a.run)        # MindSpore's plugin leaves torch_npu runs alone
    host = get_plugin_host()
    readers = [impl.plugin_name for impl in host.impls("npuprof_parse_run")
               if impl.function(run_dir=a.run, context=_Context(a)) is not None]
    assert readers == ["ascend"]
    assert set(a.events.column_strings("source")) == {"torch_npu"}


class _Context:
    def __init__(self, a: Analysed) -> None:
        self.info, self.run_dir, self.warnings = a.info, a.run, []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def test_device_id_is_the_one_the_tool_recorded(rank):
    r, a = rank
    devices = {row["Device Type"] for row in a.tool("operator_memory.csv")}    # a file npuprof does not read
    (label,) = devices
    device = int(label.split(":")[1])
    kinds = a.events["kind"]
    on_device = (kinds == int(EventKind.KERNEL)) | (kinds == int(EventKind.COMM))
    assert set(a.events["device"][on_device].tolist()) == {device}
    assert {row["Device_id"] for row in a.tables["op_statistic"].records()} == {str(device)}


def test_nothing_is_counted_twice(rank):
    _, a = rank
    kd = a.tool("kernel_details.csv")
    kinds = Counter(EventKind(k).name for k in a.events["kind"].tolist())
    hccl_rows = sum(1 for row in kd if row["Accelerator Core"] == "HCCL")
    assert kinds["KERNEL"] == len(kd) - hccl_rows
    c = comm_events(a.events)
    assert len(c.ops["ts"]) == hccl_rows              # the operators; their Notify/Memcpy tasks are not ops
    assert kinds["STEP"] == len(a.tool("step_trace_time.csv"))


def test_step_trace_time_every_column(rank):
    _, a = rank
    tool = a.tool("step_trace_time.csv")
    ours = a.tables["step_trace_time"].records()
    assert [int(float(r["Step"])) for r in tool] == [r["Step"] for r in ours] == [50]
    ops = len(a.tool("kernel_details.csv"))
    bound = {"Stage": 2 * FLOAT_EPOCH_US, "Preparing": 2 * FLOAT_EPOCH_US,
             "Free": 2 * FLOAT_EPOCH_US + ops * US}
    for t, o in zip(tool, ours):
        for column, text in t.items():
            if column == "Step":
                continue
            allowed = bound.get(column, ops * US if column != "Bubble" else 0.0)
            assert abs(float(text) - o[column]) <= allowed + 1e-9, (column, text, o[column])


def test_op_statistic_per_op_type(rank):
    _, a = rank
    tool = a.tool("op_statistic.csv")
    ours = {(r["OP Type"], r["Core Type"]): r for r in a.tables["op_statistic"].records()}
    assert len(ours) == len(tool)
    assert Counter(r["Core Type"] for r in tool) == Counter(core for _, core in ours)
    for t in tool:
        o = ours[(t["OP Type"], t["Core Type"])]
        n = int(t["Count"])
        assert o["Count"] == n
        assert abs(o["Total Time(us)"] - float(t["Total Time(us)"])) <= n * US + 1e-9
        for col in ("Min Time(us)", "Avg Time(us)", "Max Time(us)"):
            assert abs(o[col] - float(t[col])) <= US + 1e-9, (t["OP Type"], col)
        assert abs(o["Ratio(%)"] - float(t["Ratio(%)"])) <= 0.002
    assert [r["OP Type"] for r in a.tables["op_statistic"].records()][:3] == [r["OP Type"] for r in tool][:3]


def test_kernel_details_every_column_of_every_row(rank):
    _, a = rank
    tool = a.tool("kernel_details.csv")
    table = a.tables["kernel_details"]
    ours = table.records()
    assert len(ours) == len(tool)
    missing = [c for c in tool[0] if c not in table.columns and c != "Step Id"]
    assert missing == []
    for t, o in zip(tool, ours):
        for column, text in t.items():
            value = o["Step ID" if column == "Step Id" else column]
            try:
                assert abs(float(text) - float(value)) <= US / 2 + 1e-9, (t["Name"], column)
            except ValueError:
                assert str(value) == text, (t["Name"], column, text, value)
    if "Stream ID" in tool[0]:      # Level1 and up write the ids; Level0's file has no such column
        assert {str(o["Stream ID"]) for o in ours} == {t["Stream ID"] for t in tool}
    assert Counter(o["Accelerator Core"] for o in ours) == Counter(t["Accelerator Core"] for t in tool)


def test_api_statistic_every_row(rank):
    _, a = rank
    tool = a.tool("api_statistic.csv")
    ours = {(r["Level"], r["API Name"]): r for r in a.tables["api_statistic"].records()}
    assert set(ours) == {(t["Level"], t["API Name"]) for t in tool}
    for t in tool:
        o = ours[(t["Level"], t["API Name"])]
        assert o["Count"] == int(t["Count"])
        for col in ("Time(us)", "Avg(us)", "Min(us)", "Max(us)", "Variance"):
            assert abs(o[col] - float(t[col])) <= US + 1e-9, (t["API Name"], col, t[col], o[col])


def test_communication_ops_and_groups(rank):
    _, a = rank
    tool = json.loads(a.tool_file("communication.json").read_text())
    c = comm_events(a.events)
    names = op_instance_names(c)
    for step_key, kinds in tool.items():
        step = int(step_key.removeprefix("step"))
        for kind in ("collective", "p2p"):
            want = {k: v for k, v in kinds.get(kind, {}).items() if k != "Total Op Info"}
            got = {n: i for i, n in enumerate(names) if int(c.ops["step"][i]) == step
                   and (kind == "collective") != any(w in n.lower() for w in ("send", "recv", "receive"))}
            assert set(got) == set(want), kind
            for name, i in got.items():
                info = want[name]["Communication Time Info"]
                assert abs(c.ops["ts"][i] / 1e3 - info["Start Timestamp(us)"]) <= 2 * FLOAT_EPOCH_US
                assert abs(c.ops["dur"][i] / 1e6 - info["Elapse Time(ms)"]) <= 1e-6
    groups = {n.rpartition("@")[2] for n in names}
    matrix = json.loads(a.tool_file("communication_matrix.json").read_text())
    assert groups == {op.rpartition("@")[2] for kinds in matrix.values() for ops in kinds.values() for op in ops}
    tasks = a.events.select(a.events["kind"] == int(EventKind.COMM))
    task_groups = {json.loads(t).get("group") for t in tasks.column_strings("args")}
    assert task_groups == groups                     # every Notify/Memcpy task under its operator's group


# how far npuprof's communication numbers may be from the tool's: the tool sums sub-ns task durations, the
# text holds whole ns (< 1 ns per task, at most a few hundred tasks per operator); ratios and bandwidths are
# rounded to 4 places from those; the start is a float64 epoch µs in the tool's file
COMM_BOUNDS = Bounds(ms=1e-5, ratio=1e-4 + 1e-9, start_us=2 * FLOAT_EPOCH_US, bandwidth_rel=1e-3)


@pytest.mark.parametrize("name, build", [("communication.json", communication_json),
                                         ("communication_matrix.json", communication_matrix_json)])
def test_communication_files_every_number(rank, name, build):
    """Transit, wait, synchronization and idle times, the bandwidth per link type with its size
    distribution, and the ranked per-link matrix: npuprof's recomputation equals the tool's file."""
    _, a = rank
    tool = json.loads(a.tool_file(name).read_text())
    problems = compare_json(tool, build(comm_events(a.events)), COMM_BOUNDS, name)
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.rpartition("/")[2])
def test_the_two_ranks_are_two_devices_of_one_group(level):
    a0, a1 = (Analysed(realdata(f"{level}/rank{r}_ascend_pt")) for r in RANKS)
    d0, d1 = ({int(d) for d in a.events["device"][a.events["kind"] == int(EventKind.KERNEL)]} for a in (a0, a1))
    assert len(d0) == len(d1) == 1 and d0 != d1
    g0, g1 = ({n.rpartition("@")[2] for n in op_instance_names(comm_events(a.events))} for a in (a0, a1))
    assert g0 == g1 and len(g0) == 1


# -- the general rule on lone real files (other runs, other versions) -------------------------------------------
ADVISOR = "msprof-analyze/test/ut/advisor"


@pytest.mark.parametrize("where", ["timeline_advice", "advisor_backend/timeline_advice"])
def test_a_lone_torch_npu_trace_reads_core_types_and_steps_as_written(where):
    folder = realdata(f"{ADVISOR}/{where}")
    trace = json.loads((folder / "trace_view.json").read_text())
    names = {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e.get("name") == "process_name"}
    hardware = [e for e in trace if e.get("ph") == "X" and names.get(e["pid"]) == "Ascend Hardware"]
    steps = [e for e in trace if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    events, problems = read_ascend_output(folder, writer=AscendWriter.TORCH_NPU)
    assert problems == []
    kern = events.select(events["kind"] == int(EventKind.KERNEL))
    assert len(kern) == len(hardware)
    table = ANALYZERS["op_statistic"](events)
    got = Counter()
    for r in table.records():
        got[r["Core Type"]] += r["Count"]
    assert got == Counter(e["args"]["Task Type"] for e in hardware)
    numbers, _, _ = step_spans(events)
    assert sorted(numbers.tolist()) == sorted(int(e["name"].split("#")[1]) for e in steps)


@pytest.mark.parametrize("where", ["compute_advice/data", "advisor_backend/compute_advice"])
def test_a_lone_kernel_details_is_read_row_for_row(where):
    folder = realdata(f"{ADVISOR}/{where}")
    rows = _csv(folder / "kernel_details.csv")
    events, problems = read_ascend_output(folder, writer=AscendWriter.TORCH_NPU)
    assert problems == []
    table = ANALYZERS["kernel_details"](events)
    assert len(table) == len(rows)
    ours = table.records()
    order = np.argsort([float(r["Start Time(us)"]) for r in rows], kind="stable")
    for i, o in zip(order.tolist(), ours):
        t = rows[i]
        for column in ("Name", "Type", "Accelerator Core", "Task ID", "Block Dim", "Stream ID"):
            assert str(o[column]) == t[column], column
        assert o["Step ID"] == int(t["Step Id"])
    stats = Counter()
    for r in ANALYZERS["op_statistic"](events).records():
        stats[(r["OP Type"], r["Core Type"])] += r["Count"]
    is_hccl = [t["Accelerator Core"] in ("HCCL", "COMMUNICATION") or t["Type"].startswith("hcom_") for t in rows]
    # operators are counted per type and core; HCCL's rows are communication operators, not operators
    assert stats == Counter((t["Type"], t["Accelerator Core"]) for t, h in zip(rows, is_hccl) if not h)
    assert len(comm_events(events).ops["ts"]) == sum(is_hccl)


def test_a_run_given_as_text_reads_as_a_path():
    """load_events("…") read nothing through the host reader ('str' / 'str'); every reader now sees a Path."""
    run = realdata(f"{LEVELS[1]}/rank0_ascend_pt")
    ev_str, _, warn_str = load_events(str(run))
    ev_path, _, warn_path = load_events(run)
    assert not warn_str and warn_str == warn_path and len(ev_str) == len(ev_path) > 0
