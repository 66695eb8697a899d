"""torch.profiler's ``key_averages()`` and ``export_chrome_trace()`` on npuprof's Profiler."""
from __future__ import annotations

import gzip
import json

import pytest

from npuprof import Profiler, ProfilerConfigError, ProfilerStateError, record_function, schedule
from npuprof.analysis.averages import KeyAverages
from npuprof.analysis.table import Table


def busy(n: int) -> None:
    sum(range(n))


@pytest.fixture
def prof(tmp_path):
    with Profiler(output_path=tmp_path / "prof") as p:
        for step in range(3):
            with record_function("forward"):
                busy(20000)
            with record_function("backward"):
                busy(40000)
            p.step()
        with record_function("save"):
            busy(1000)
    return p


def test_key_averages_has_one_row_per_range_with_its_calls(prof):
    rows = {r["Name"]: r for r in prof.key_averages()}
    assert set(rows) == {"forward", "backward", "save"}
    assert [rows[n]["Count"] for n in ("forward", "backward", "save")] == [3, 3, 1]
    assert all(r["Core Type"] == "RANGE" for r in rows.values())
    fwd = rows["forward"]
    assert fwd["Min Time(us)"] <= fwd["Avg Time(us)"] <= fwd["Max Time(us)"]
    assert fwd["Total Time(us)"] == pytest.approx(fwd["Avg Time(us)"] * 3, abs=0.01)
    # the same numbers as the window's range_statistic.csv
    (res,) = prof.results
    assert res.tables["range_statistic"].records()[0]["Total Time(us)"] == \
        max(r["Total Time(us)"] for r in rows.values())


def test_table_sorts_limits_and_says_how_many_rows_it_shows(prof):
    text = prof.key_averages().table(sort_by="count", row_limit=2)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["Name", "Core", "Type"] and set(lines[1]) <= {"-", " "}
    assert {lines[2].split()[0], lines[3].split()[0]} == {"forward", "backward"}
    assert lines[-1] == "(2 of 3 rows)"
    assert prof.key_averages().table(row_limit=-1).splitlines()[-1] == "(3 of 3 rows)"
    assert str(prof.key_averages()) == prof.key_averages().table()


@pytest.mark.parametrize("call, param", [
    (lambda p: p.key_averages().table(sort_by="self_cpu_memory_usage"), "sort_by"),
    (lambda p: p.key_averages().table(row_limit="10"), "row_limit"),
    (lambda p: p.key_averages(group_by_input_shape="yes"), "group_by_input_shape"),
    (lambda p: p.export_chrome_trace(""), "path"),
    (lambda p: p.export_chrome_trace(p.config.output_path), "path"),
    (lambda p: p.export_chrome_trace(f"{p.config.output_path}/a;b.json"), "path"),
])
def test_bad_arguments_name_the_parameter(prof, call, param):
    with pytest.raises(ProfilerConfigError) as e:
        call(prof)
    assert e.value.param == param


def test_before_any_window_is_saved_the_state_is_said(tmp_path):
    p = Profiler(output_path=tmp_path / "prof")
    with pytest.raises(ProfilerStateError, match=r"key_averages\(\): no window has been saved yet"):
        p.key_averages()
    p.start()
    try:
        with pytest.raises(ProfilerStateError, match="export_chrome_trace"):
            p.export_chrome_trace(tmp_path / "t.json")
    finally:
        p.stop()


def test_export_chrome_trace_writes_the_windows_kineto_trace(prof, tmp_path):
    plain = prof.export_chrome_trace(tmp_path / "out" / "trace.json")
    (res,) = prof.results
    assert not (res.run_dir / "ASCEND_PROFILER_OUTPUT").exists()   # reading the window wrote nothing into it
    mine = json.loads(plain.read_text())
    prof.analyse()                             # now the window's outputs are written
    theirs = json.loads((res.run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    assert mine == theirs                      # the same trace as the run's own file
    assert json.loads(prof.export_chrome_trace(tmp_path / "copy.json").read_text()) == theirs   # copied now
    names = [e["name"] for e in mine["traceEvents"] if e.get("ph") == "X"]
    assert names.count("forward") == 3 and "ProfilerStep#2" in names
    packed = prof.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    assert json.loads(gzip.decompress(packed.read_bytes())) == mine
    plain.write_text("old")                    # an existing file is replaced, as torch does
    assert json.loads(prof.export_chrome_trace(plain).read_text()) == mine


def test_export_chrome_trace_renders_the_trace_when_the_analysis_wrote_none(tmp_path):
    with Profiler(output_path=tmp_path / "prof", export_type=["db"]) as p:
        for _ in range(2):
            with record_function("forward"):
                busy(5000)
            p.step()
    mine = json.loads(p.export_chrome_trace(tmp_path / "t.json").read_text())
    (res,) = p.results
    assert not (res.run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").exists()   # db only: rendered
    Profiler.offline_analyse(res.run_dir, export_type=["text"])
    assert mine == json.loads((res.run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())


def test_in_on_trace_ready_each_window_exports_its_own_steps(tmp_path):
    seen = []

    def ready(p):
        trace = json.loads(p.export_chrome_trace(tmp_path / f"w{len(seen)}.json").read_text())
        steps = sorted(e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
        seen.append((steps, [r["Count"] for r in p.key_averages()]))

    with Profiler(output_path=tmp_path / "prof", schedule=schedule(wait=1, active=2, repeat=2),
                  on_trace_ready=ready) as p:
        for _ in range(6):
            with record_function("step_body"):
                busy(5000)
            p.step()
    assert seen == [(["ProfilerStep#1", "ProfilerStep#2"], [2]), (["ProfilerStep#4", "ProfilerStep#5"], [2])]


def test_sort_keys_put_host_or_device_rows_first():
    ops = Table("op_statistic", ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                                 "Avg Time(us)", "Max Time(us)", "Ratio(%)"],
                {"Device_id": ["0", "host", "host"], "OP Type": ["MatMul", "Cast", "Add"],
                 "Core Type": ["AI_CORE", "HOST_CPU", "HOST_CPU"], "Count": [2, 10, 1],
                 "Total Time(us)": [90.0, 5.0, 4.0], "Min Time(us)": [40.0, 0.1, 4.0],
                 "Avg Time(us)": [45.0, 0.5, 4.0], "Max Time(us)": [50.0, 1.0, 4.0], "Ratio(%)": [90.7, 5.1, 4.2]})
    ranges = Table("range_statistic", ["Name", "Domain", "Count", "Total Time(us)", "Min Time(us)",
                                       "Avg Time(us)", "Max Time(us)"],
                   {"Name": ["fwd"], "Domain": ["default"], "Count": [1], "Total Time(us)": [100.0],
                    "Min Time(us)": [100.0], "Avg Time(us)": [100.0], "Max Time(us)": [100.0]})
    ka = KeyAverages(ops, ranges)
    assert ka.columns[:3] == ["Name", "Core Type", "Count"] and "Ratio(%)" not in ka.columns

    def order(sort_by):
        return [line.split()[0] for line in ka.table(sort_by=sort_by).splitlines()[2:-1]]

    assert order(None) == ["MatMul", "Cast", "Add", "fwd"]
    assert order("self_cpu_time_total") == ["fwd", "Cast", "Add", "MatMul"]
    assert order("npu_time_total") == ["MatMul", "fwd", "Cast", "Add"]
    assert order("cpu_time") == ["fwd", "Add", "Cast", "MatMul"]
    assert order("count") == ["Cast", "MatMul", "Add", "fwd"]
    assert order("Max Time(us)") == ["fwd", "MatMul", "Add", "Cast"]
    assert KeyAverages(ops).table(max_name_column_width=4).splitlines()[2].startswith("M...")
