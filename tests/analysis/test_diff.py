"""``npuprof diff`` / ``npuprof.diff()`` on real runs: a run against itself, planted slowdowns in real
processes (and the false-alarm rate of identical ones), the real torch_npu Level1 job's ranks against the
tool's own step_trace_time rows, a GPU Kineto trace against an Ascend run, usage errors, partial input,
and the HTML page in headless Chromium."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import npuprof
from diff_support import profiled_pair
from npuprof.cli import main
from npuprof.events import EventKind
from realdata import realdata, tree_digest

LEVEL1 = "msinsight/test/data/pytorch/text/level1"
KINETO = "hta/tests/data/trace_diff/control/control.json.gz"
ROW_KINDS = {"op": EventKind.OP, "kernel": EventKind.KERNEL, "api": EventKind.API, "range": EventKind.RANGE}


def _diff_json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["diff", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> tuple[Path, Path]:
    """Two real runs of the loop side by side, the second with its ``forward`` range 20 % slower."""
    return profiled_pair(tmp_path_factory.mktemp("planted"), 1.0, 1.2)


@pytest.fixture(scope="module")
def base_run(planted) -> Path:
    return planted[0]


@pytest.fixture(scope="module")
def slow_run(planted) -> Path:
    return planted[1]


# -- a run against itself --------------------------------------------------------------------------------------------
def test_a_run_against_itself_is_no_significant_change_with_zero_deltas(base_run, capsys):
    code, d = _diff_json(capsys, str(base_run), str(base_run), "--fail-on", "0")
    assert code == 0
    st = d["step_time"]
    assert st["verdict"] == "no significant change" and st["delta_pct"] == 0.0
    assert st["ci95_pct"][0] <= 0.0 <= st["ci95_pct"][1]
    assert len(d["base"]["steps"]) >= 40 and d["base"]["step_ms"] == d["new"]["step_ms"]
    assert all(b["delta_us"] == 0 for b in d["breakdown"])
    assert {r["by"] for r in d["rows"]} >= {"range", "step"}
    assert all(r["delta_us"] == 0 and r["change"] == "=" and r["match"] == "exact" for r in d["rows"])
    assert {r["name"] for r in d["rows"] if r["by"] == "range"} == {"load", "forward", "backward"}
    assert d["unmatched"] == {"base": [], "new": []}
    assert d["data_quality"]["partial"] is False


def test_the_level1_job_against_itself_has_zero_deltas_and_no_verdict_on_one_step(capsys):
    run = realdata(f"{LEVEL1}/rank0_ascend_pt")
    before = tree_digest(run)
    code, d = _diff_json(capsys, str(run), str(run))
    assert code == 0
    assert d["step_time"]["delta_pct"] == 0.0
    assert d["step_time"]["verdict"] == "not enough steps"      # the job recorded one step: no interval
    assert all(b["delta_us"] == 0 for b in d["breakdown"]) and all(r["delta_us"] == 0 for r in d["rows"])
    assert {"op", "kernel", "api", "range", "communication", "step"} <= {r["by"] for r in d["rows"]}
    assert tree_digest(run) == before                            # another tool's run: read, never written


# -- planted changes in real processes -------------------------------------------------------------------------------
def test_a_range_made_20_percent_slower_fails_the_gate_and_leads_the_contributors(base_run, slow_run, capsys):
    code, d = _diff_json(capsys, str(base_run), str(slow_run), "--fail-on", "5")
    assert code == 1, d["step_time"]
    st = d["step_time"]
    assert st["verdict"] == "regression" and st["ci95_pct"][0] > 5
    first = d["top_contributors"][0]
    assert (first["by"], first["name"]) == ("range", "forward")
    assert first["share_pct"] >= 80, d["top_contributors"][:3]
    forward = next(r for r in d["rows"] if r["by"] == "range" and r["name"] == "forward")
    assert forward["new_total_us"] > 1.1 * forward["base_total_us"]
    # the same answer through the Python API, with the range's own time per step as the metric
    res = npuprof.diff(base_run, slow_run, metric="range:forward", by="range")
    assert res.step_time.verdict == "regression" and res.step_time.regressed_beyond(10)
    assert {r.by for r in res.rows} == {"range"} and res.top_contributors[0].name == "forward"
    assert "regression" in res.table() and json.loads(res.to_json())["step_time"]["metric"] == "range:forward"


@pytest.mark.slow
def test_identical_runs_pass_the_gate_in_at_least_19_of_20_repeats(tmp_path, capsys):
    codes, lows = [], []
    for i in range(20):
        a, b = profiled_pair(tmp_path / str(i), 1.0, 1.0)
        code, d = _diff_json(capsys, str(a), str(b), "--fail-on", "10")
        codes.append(code)
        lows.append(d["step_time"]["ci95_pct"][0])
    alarms = sum(c == 1 for c in codes)
    with capsys.disabled():
        print(f"\nnpuprof diff --fail-on 10 on identical runs: {alarms}/20 false alarms "
              f"(interval low ends {min(lows):+.2f}% .. {max(lows):+.2f}%)")
    assert set(codes) <= {0, 1} and alarms <= 1, (codes, lows)


# -- the real Level1 job: rank 0 against rank 1 ----------------------------------------------------------------------
def _tool_step_rows(run: Path) -> dict:
    with open(run / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1
    return {k: float(v) for k, v in rows[0].items()}


def _bound(column: str, ops: int) -> float:
    """How far npuprof's step_trace_time may be from the tool's (test_real_torch_npu_text.DIFFERS says why)."""
    from realdata import FLOAT_EPOCH_US, US

    return {"Preparing": 2 * FLOAT_EPOCH_US, "Free": 2 * FLOAT_EPOCH_US + ops * US}.get(column, ops * US) + 1e-9


def _operators(run: Path) -> int:
    with open(run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as fh:
        return sum(1 for _ in csv.DictReader(fh))


def test_rank0_against_rank1_breakdown_deltas_equal_the_tools_step_trace_rows(capsys):
    job = realdata(LEVEL1)
    code, d = _diff_json(capsys, str(job), str(job), "--base-rank", "0", "--new-rank", "1")
    assert code == 0
    assert (d["base"]["rank"], d["new"]["rank"]) == (0, 1)
    r0, r1 = _tool_step_rows(job / "rank0_ascend_pt"), _tool_step_rows(job / "rank1_ascend_pt")
    got = {b["name"]: b for b in d["breakdown"]}
    assert set(got) == {"Computing", "Communication(Not Overlapped)", "Overlapped", "Free", "Preparing"}
    ops0, ops1 = _operators(job / "rank0_ascend_pt"), _operators(job / "rank1_ascend_pt")
    for name, b in got.items():
        assert abs(b["base_us"] - r0[name]) <= _bound(name, ops0), (name, b, r0[name])
        assert abs(b["new_us"] - r1[name]) <= _bound(name, ops1), (name, b, r1[name])
        assert abs(b["delta_us"] - (r1[name] - r0[name])) <= _bound(name, ops0) + _bound(name, ops1), name
    stage = 2 * 0.25 + 1e-9
    assert abs(d["base"]["step_ms"][0] * 1e3 - r0["Stage"]) <= stage and len(d["base"]["step_ms"]) == 1
    assert abs(d["new"]["step_ms"][0] * 1e3 - r1["Stage"]) <= stage
    assert d["step_time"]["delta_pct"] == pytest.approx(100 * (r1["Stage"] - r0["Stage"]) / r0["Stage"], abs=1e-3)
    comm = [r for r in d["rows"] if r["by"] == "communication"]
    assert comm and all("[" in r["name"] for r in comm)          # per collective and group
    # memory peak per side: the largest Total Allocated the tool's operator_memory.csv records
    peaks = [_peak_allocated(job / f"rank{r}_ascend_pt") for r in (0, 1)]
    assert [d["memory"]["base_peak_mb"], d["memory"]["new_peak_mb"]] == peaks
    assert d["memory"]["delta_mb"] == round(peaks[1] - peaks[0], 3)


def _peak_allocated(run: Path) -> float:
    """The largest allocated memory any of the tool's files records: operator_memory's running totals and
    memory_record's Total Allocated of every component (the memory headline's rule)."""
    with open(run / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(run / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv", newline="") as fh:
        records = list(csv.DictReader(fh))
    return max([float(r[k]) for r in rows for k in ("Allocation Total Allocated(MB)", "Release Total Allocated(MB)")
                if (r.get(k) or "").strip() not in ("", "N/A")] +
               [float(r["Total Allocated(MB)"]) for r in records if (r["Total Allocated(MB)"] or "").strip()])


# -- a GPU Kineto trace against an Ascend run ------------------------------------------------------------------------
def test_gpu_kineto_against_ascend_lists_matched_and_unmatched_rows_and_drops_nothing(tmp_path, capsys):
    from npuprof.analysis.pipeline import analyse_run

    gpu, npu = realdata(KINETO), realdata(f"{LEVEL1}/rank0_ascend_pt")
    name_map = tmp_path / "map.json"
    nccl = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
    name_map.write_text(json.dumps({"ampere_sgemm_128x128_tn": "aclnnMm_MatMulCommon_MatMulV2",
                                    "cudaLaunchKernel": "launch", nccl: "hcom_allReduce__586_0_1"}))
    code, d = _diff_json(capsys, str(gpu), str(npu), "--map", str(name_map))
    assert code == 0
    assert d["base"]["kind"] == "trace" and d["new"]["kind"] == "torch_npu"
    assert d["step_time"]["verdict"] == "not enough steps"     # the Ascend job has one step
    matches = {r["match"] for r in d["rows"]}
    assert {"exact", "map", "base only", "new only"} <= matches
    mapped = {(r["by"], tuple(r["base_names"]), tuple(r["new_names"])) for r in d["rows"] if r["match"] == "map"}
    assert ("kernel", ("ampere_sgemm_128x128_tn",), ("aclnnMm_MatMulCommon_MatMulV2",)) in mapped
    assert ("api", ("cudaLaunchKernel",), ("launch",)) in mapped
    # a collective is mapped by its name; its row keeps each side's group
    assert ("communication", (f"{nccl} [default]",), ("hcom_allReduce__586_0_1 [17522688603477080586]",)) in mapped
    assert any(r["by"] == "op" and r["match"] == "exact" and r["name"].startswith("aten::") for r in d["rows"])
    # every unmatched row is listed, and is a row with zeros on the other side
    for side, other in (("base", "new"), ("new", "base")):
        listed = {(u["by"], u["name"]) for u in d["unmatched"][side]}
        only = {(r["by"], r["name"]) for r in d["rows"] if r["match"] == f"{side} only"}
        assert listed == only and listed
        assert all(r[f"{other}_count"] == 0 for r in d["rows"] if r["match"] == f"{side} only")
    # nothing dropped: each kind's events are in the rows, counted outside the compared steps, or are
    # tasks of a collective (inside its operator's row)
    for side, path in (("base", gpu), ("new", npu)):
        kinds = analyse_run(path).events["kind"]
        in_rows = sum(r[f"{side}_count"] for r in d["rows"] if r["by"] != "step")
        compared = int(np.isin(kinds, [int(k) for k in ROW_KINDS.values()]).sum() + (kinds == EventKind.COMM).sum())
        assert in_rows + d[side]["outside_steps"] + d[side]["communication_tasks"] == compared
    assert d["new"]["communication_tasks"] > 0 and d["base"]["communication_tasks"] == 0
    rows = {(r["by"], r["name"]) for r in d["rows"]}
    assert len(rows) == len(d["rows"])                          # one row per name and kind


# -- usage, partial input, outputs -----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, param", [
    (["--steps", "9-3"], "--steps"), (["--steps", "x"], "--steps"), (["--by", "layer"], "--by"),
    (["--metric", "speed"], "--metric"), (["--top", "0"], "--top"), (["--fail-on", "-1"], "--fail-on"),
    (["-o", "out.txt"], "-o"), (["--map", "missing.json"], "--map"), (["--base-steps", "1-2-3"], "--base-steps"),
])
def test_bad_options_are_usage_errors_naming_the_option(argv, param, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["diff", "does-not-exist-a", "does-not-exist-b", *argv])   # refused before any run is read
    err = capsys.readouterr().err
    assert code == 2 and f"invalid {param}=" in err, err


def test_steps_and_ranks_absent_from_a_run_are_usage_errors(base_run, capsys):
    assert main(["diff", str(base_run), str(base_run), "--steps", "500-600"]) == 2
    assert "invalid --base-steps='500-600'" in capsys.readouterr().err
    assert main(["diff", str(base_run), str(base_run), "--new-rank", "7"]) == 2
    assert "invalid --new-rank=7" in capsys.readouterr().err


def test_an_output_inside_a_compared_run_is_refused(base_run, capsys):
    assert main(["diff", str(base_run), str(base_run), "-o", str(base_run / "diff.html")]) == 2
    assert not (base_run / "diff.html").exists()


def test_steps_select_the_compared_steps_and_json_output_is_written(base_run, tmp_path, capsys):
    out = tmp_path / "d.json"
    assert main(["diff", str(base_run), str(base_run), "--steps", "2-8", "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["base"]["steps"] == list(range(2, 9)) and d["new"]["steps"] == list(range(2, 9))
    assert [r["name"] for r in d["rows"] if r["by"] == "step"] == [f"step {i}" for i in range(2, 9)]
    forward = next(r for r in d["rows"] if r["name"] == "forward")
    assert forward["base_count"] == 7
    assert set(d) >= {"base", "new", "step_time", "breakdown", "rows", "top_contributors", "unmatched",
                      "data_quality"}


def test_a_side_with_skipped_inputs_exits_3(base_run, tmp_path, capsys):
    """A reader that claims one of the run's files and cannot read it: the rest is compared, exit 3."""
    import shutil

    from npuprof.errors import ProfilerDataError
    from npuprof.hookspecs import hookimpl
    from npuprof.plugins.manager import get_plugin_host

    partial = tmp_path / base_run.name
    shutil.copytree(base_run, partial)
    (partial / "extra.broken").write_text("not readable")

    class BrokenFormat:
        @hookimpl
        def npuprof_parse_run(self, run_dir, context):
            if (Path(run_dir) / "extra.broken").exists():
                raise ProfilerDataError(Path(run_dir) / "extra.broken", "is not in the expected format")
            return None

    host = get_plugin_host()
    host.register(BrokenFormat(), name="broken_format")
    try:
        code, d = _diff_json(capsys, str(base_run), str(partial))
        assert code == 3
        assert d["data_quality"]["partial"] is True and d["data_quality"]["new"]["issues"]
        assert "extra.broken" in d["data_quality"]["new"]["issues"][0]
        assert d["data_quality"]["base"]["issues"] == []
        code, _ = _diff_json(capsys, str(base_run), str(partial), "--fail-on", "5")
        assert code == 3                          # no regression past the gate: partial input decides
    finally:
        host.unregister("broken_format")


@pytest.mark.slow
def test_the_html_page_is_self_contained_and_renders_in_headless_chromium(base_run, slow_run, tmp_path):
    import re

    from browser_support import render_page, screenshot_dir

    page = tmp_path / "diff.html"
    assert main(["diff", str(base_run), str(slow_run), "-o", str(page)]) == 0
    text = page.read_text()
    assert "<script" not in text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*['"]?(?:https?:)?//""", text)
    got = render_page(page, screenshot_dir(tmp_path) / "diff_page.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    assert all(u.startswith("file://") for u in got["requests"]), got["requests"]
    f = got["facts"]
    assert f["h2"][:3] == ["Step time", "Breakdown (mean per step)", "Top contributors to the change"]
    assert f["charts"] == 3                    # step points side by side, breakdown, contributors
    assert f["bars"] >= 3 + 2                  # contributors (3 ranges) + breakdown per side
    assert "regression" in text and "forward" in text


# -- the pieces ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, key", [
    ("aten::addmm", "addmm"), ("aclnnAddmm_AddmmKernel_1", "addmm"), ("aclnnMm_MatMulCommon_MatMulV2", "mm"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float)",
     "vectorized_elementwise_kernel"), ("MatMul-op12", "matmul"), ("Conv2D", "conv2d"), ("ProfilerStep#3", "profilerstep#3"),
])
def test_normalised_names(name, key):
    from npuprof.analysis.diffnames import normalise_name

    assert normalise_name(name) == key


def test_names_fold_together_and_nothing_is_left_out():
    from npuprof.analysis.diffnames import match_names

    got = match_names(["aten::mm", "aten::addmm", "x", "only_base"], ["aclnnMm", "aclnnAddmm_AddmmKernel_1",
                      "aclnnAddmm_AddmmKernel_2", "x", "only_new"], {"only_base": "nowhere"})
    by_how = {m.how: [] for m in got}
    for m in got:
        by_how[m.how].append((m.base, m.new))
    assert by_how["exact"] == [(("x",), ("x",))]
    assert (("aten::addmm",), ("aclnnAddmm_AddmmKernel_1", "aclnnAddmm_AddmmKernel_2")) in by_how["normalised"]
    assert by_how["base only"] == [(("only_base",), ())] and by_how["new only"] == [((), ("only_new",))]
    assert sorted(n for m in got for n in m.base) == sorted(["aten::mm", "aten::addmm", "x", "only_base"])


def test_the_interval_says_improvement_regression_or_nothing():
    from npuprof.analysis.diffstats import step_change

    rng = np.random.default_rng(1)
    base = 100 + rng.normal(0, 2, 30)
    assert step_change(base, base * 0.8).verdict == "improvement"
    assert step_change(base, base * 1.1).regressed_beyond(5) and not step_change(base, base * 1.1).regressed_beyond(15)
    same = step_change(base, 100 + rng.normal(0, 2, 30))
    assert same.verdict == "no significant change" and same.ci95_pct[0] < 0 < same.ci95_pct[1]
    assert step_change(base[:4], base[:30]).verdict == "not enough steps" and step_change(base[:4], base).ci95_pct is None


def test_bad_map_files_are_usage_errors(tmp_path):
    from npuprof.errors import ProfilerConfigError

    bad = tmp_path / "map.json"
    for text in ("[1, 2]", "{not json", '{"a": 3}'):
        bad.write_text(text)
        with pytest.raises(ProfilerConfigError, match="--map"):
            npuprof.diff("unused", "unused", name_map=bad)
