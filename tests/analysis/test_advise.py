"""``npuprof advise``: the rule seam (a third-party rule through the plugin host), the runner's contract
(needs, caps, order, errors, data quality), the CLI, and planted problems in real npuprof processes.

The planted runs (tests/advise_support.py) are real Python processes profiled by npuprof: a step that
builds reference cycles (gc), a step that first waits for its batch (dataloader), a clean step.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from advise_support import CYCLES, DATA_WAIT_S, STEPS, planted_run
from realdata import realdata, tree_digest

from npuprof.advise import advise_path, registered_rules
from npuprof.analysis.advice import Finding, Needs, NotChecked, Rule, advise
from npuprof.analysis.pipeline import analyse_run
from npuprof.cli import main
from npuprof.hookspecs import hookimpl
from npuprof.plugins.manager import get_plugin_host
from npuprof.quality import QualityIssue

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted")
    return {mode: planted_run(out, mode) for mode in ("clean", "gc", "dataloader")}


def _json(capsys, argv: list) -> tuple[int, dict]:
    code = main(argv)
    out = capsys.readouterr().out
    return code, json.loads(out)


class _ThirdParty:
    """A plugin as a third party writes it: one rule, registered through the plugin host."""

    @staticmethod
    def _ranges(ctx):
        table = ctx.result.tables["range_statistic"]
        rows = [r for r in table.records() if r["Name"] == "compute"]
        total_ms = sum(float(r["Total Time(us)"]) for r in rows) / 1000
        return [Finding("compute_ranges", "compute ranges", "info", total_ms / ctx.steps, rows,
                        "nothing to do")] if rows else []

    @hookimpl
    def npuprof_advice_rules(self):
        return [Rule("compute_ranges", "Time in compute ranges", self._ranges,
                     Needs(tables={"range_statistic": ("Name", "Total Time(us)")}))]


@pytest.fixture
def third_party():
    host = get_plugin_host()
    host.register(_ThirdParty(), name="third_party_rules")
    yield
    host.unregister("third_party_rules")


def test_a_third_party_rule_appears_in_the_output_without_a_core_edit(third_party, planted, capsys):
    assert "compute_ranges" in [r.id for r in registered_rules()]
    code, out = _json(capsys, ["advise", str(planted["clean"]), "--json"])
    assert code == 0
    (run,) = out["runs"]
    found = [f for f in run["findings"] if f["rule"] == "compute_ranges"]
    assert len(found) == 1 and found[0]["evidence"][0]["Name"] == "compute"
    assert 0 < found[0]["at_stake_ms"] <= run["step_ms"]
    assert {"rule": "compute_ranges", "title": "Time in compute ranges", "status": "found", "findings": 1} \
        in run["rules"]
    # --rules picks it by id like a built-in one
    code, out = _json(capsys, ["advise", str(planted["clean"]), "--json", "--rules", "compute_ranges"])
    assert [r["rule"] for r in out["runs"][0]["rules"]] == ["compute_ranges"]


def test_every_finding_has_the_documented_shape_and_rules_are_sorted_by_time_at_stake(capsys):
    run = realdata(LEVEL1)
    code, out = _json(capsys, ["advise", str(run), "--json"])
    assert code == 0
    (adv,) = out["runs"]
    keys = {"rule", "title", "severity", "at_stake_ms", "share_of_step", "evidence", "advice", "docs"}
    stakes = [f["at_stake_ms"] for f in adv["findings"]]
    assert stakes == sorted(stakes, reverse=True) and len(stakes) >= 5
    for f in adv["findings"]:
        assert set(f) == keys
        # memory costs no step time by itself: its finding says 0 ms (docs/advise.md#memory)
        assert (0 < f["at_stake_ms"] if f["rule"] != "memory" else f["at_stake_ms"] == 0) and \
            f["at_stake_ms"] <= adv["step_ms"]
        assert f["share_of_step"] == pytest.approx(f["at_stake_ms"] / adv["step_ms"], abs=1e-5)
        assert f["evidence"] and f["advice"] and f["docs"].startswith("docs/advise.md#")
    # a rule with no finding says it checked; one whose data is missing says what it needs
    status = {r["rule"]: r for r in adv["rules"]}
    assert status["ai_cpu"]["status"] == "checked"
    assert status["gc"]["status"] == "not_checked" and "gc.callbacks" in status["gc"]["needs"]


def _rule(rid, check, needs=Needs()):
    return Rule(rid, rid, check, needs)


def test_the_runner_caps_at_the_step_time_reports_missing_needs_and_isolates_a_failing_rule(planted):
    result = analyse_run(planted["clean"])
    rules = [
        _rule("huge", lambda ctx: [Finding("", "huge", "high", 1e9, [{"x": 1}], "a")]),
        _rule("small", lambda ctx: [Finding("", "small", "low", 0.5, [{"x": 2}], "b")]),
        _rule("needy", lambda ctx: [], Needs(tables={"kernel_details": ("Duration(us)",)}, description="device")),
        _rule("column", lambda ctx: [], Needs(tables={"range_statistic": ("No Such Column",)})),
        _rule("finer", lambda ctx: NotChecked("a thing only the data can say")),
        _rule("broken", lambda ctx: 1 / 0),
        _rule("empty", lambda ctx: []),
    ]
    adv = advise(result, rules, min_ms=0.0)
    assert [f.rule for f in adv.findings] == ["huge", "small"]
    assert adv.findings[0].at_stake_ms == pytest.approx(adv.step_ms) and adv.findings[0].share_of_step == 1.0
    by = {o.rule: o for o in adv.outcomes}
    assert by["needy"].status == "not_checked" and by["needy"].needs == "table kernel_details (device)"
    assert by["column"].needs == "range_statistic column(s) No Such Column"
    assert by["finer"].needs == "a thing only the data can say"
    assert by["broken"].status == "error" and "ZeroDivisionError" in by["broken"].error
    assert by["empty"].status == "checked"
    # --min-ms hides, and counts, what has less at stake
    adv = advise(result, rules, min_ms=1.0)
    assert [f.rule for f in adv.findings] == ["huge"] and adv.below_min == 1


def test_data_quality_is_carried_into_the_advice_and_the_findings_it_concerns(planted):
    result = analyse_run(planted["dataloader"])
    result.quality.add(QualityIssue("NPUPROF/events_0.npr", "cut at 81 %", affects=("all tables",)))
    result.quality.add(QualityIssue("kernel_details.csv", "a column missing", affects=("kernel_details",)))
    adv = advise(result, registered_rules())
    assert adv.partial and len(adv.data_quality["issues"]) == 2
    (f,) = [f for f in adv.findings if f.rule == "dataloader"]
    assert f.affected_by_quality == ["NPUPROF/events_0.npr: cut at 81 % (affects all tables)"]
    assert f.to_json()["data_quality"] == f.affected_by_quality


def test_the_cli_checks_its_options_before_reading(planted, tmp_path, capsys):
    run = planted["clean"]
    assert main(["advise", str(run), "--rules", "breakdown,no_such_rule"]) == 2
    assert "no_such_rule" in capsys.readouterr().err
    assert main(["advise", str(run), "--min-ms", "-1"]) == 2
    assert main(["advise", str(run), "-o", str(tmp_path / "a.txt")]) == 2
    assert main(["advise", str(run), "-o", str(run / "advice.html")]) == 2
    assert main(["advise", str(tmp_path / "nothing_here")]) == 1


def test_html_and_json_outputs_and_the_run_is_left_as_it_was(tmp_path, capsys):
    run = realdata(LEVEL1)
    before = tree_digest(run)
    page, data = tmp_path / "advice.html", tmp_path / "advice.json"
    assert main(["advise", str(run), "-o", str(page)]) == 0
    assert main(["advise", str(run), "-o", str(data), "--min-ms", "1"]) == 0
    text = page.read_text()
    assert "byte_alignment" in text and "hcom_allReduce__586_0_1" in text and "28647232" in text
    adv = json.loads(data.read_text())["runs"][0]
    assert all(f["at_stake_ms"] >= 1 for f in adv["findings"]) and adv["below_min_ms"] >= 1
    assert tree_digest(run) == before


# -- planted problems in real processes ---------------------------------------------------------------

def test_gc_pauses_are_recorded_in_npuprof_runs_and_found(planted, capsys):
    code, out = _json(capsys, ["advise", str(planted["gc"]), "--json", "--rules", "gc"])
    assert code == 0
    (f,) = out["runs"][0]["findings"]
    assert f["rule"] == "gc" and f["at_stake_ms"] >= 1.0
    gens = {r["name"]: r for r in f["evidence"]}
    # one forced full collection per step at least, each freeing that step's cycles
    assert gens["Python GC gen 2"]["count"] >= STEPS
    assert sum(r["objects_collected"] for r in gens.values()) >= STEPS * CYCLES * 2 * 0.9
    # the clean run records no pause long enough to matter
    code, out = _json(capsys, ["advise", str(planted["clean"]), "--json", "--rules", "gc", "--min-ms", "1"])
    assert out["runs"][0]["findings"] == [] and out["runs"][0]["rules"][0]["status"] in ("checked", "found")


def test_a_data_loader_wait_is_found_with_its_range(planted, capsys):
    code, out = _json(capsys, ["advise", str(planted["dataloader"]), "--json", "--min-ms", "1"])
    adv = out["runs"][0]
    top = adv["findings"][0]
    assert top["rule"] == "dataloader"
    assert top["evidence"][0]["name"].startswith("enumerate(DataLoader)#")
    assert top["evidence"][0]["count"] == STEPS
    # 30 ms slept per step over the run's steps (the window also holds the last step() to its stop)
    waited_ms = DATA_WAIT_S * 1000 * STEPS / adv["steps"]
    assert waited_ms * 0.95 <= top["at_stake_ms"] <= adv["step_ms"]


def test_a_clean_run_gets_no_finding_above_one_millisecond(planted, capsys):
    code, out = _json(capsys, ["advise", str(planted["clean"]), "--json", "--min-ms", "1"])
    assert code == 0
    assert out["runs"][0]["findings"] == []
    assert {r["status"] for r in out["runs"][0]["rules"]} <= {"checked", "found", "not_checked"}


def test_advise_path_reads_each_run_of_a_folder(planted):
    folder = planted["clean"].parent.parent
    advices = advise_path(folder, rules=["dataloader"], min_ms=1)
    assert len(advices) == 3
    found = {Path(a.run).parent.name: [f.rule for f in a.findings] for a in advices}
    assert found == {"clean": [], "gc": [], "dataloader": ["dataloader"]}


THIRD_PARTY_RULES = '''
from npuprof import hookimpl
from npuprof.analysis.advice import Finding, Needs, Rule


def _many_ranges(ctx):
    n = sum(int(c) for c in ctx.result.tables["range_statistic"].column("Count"))
    return [Finding("many_ranges", f"{n} ranges", "info", 0.0, [{"ranges": n}], "fewer ranges")] if n > 5 else []


def _taken(ctx):
    return []


@hookimpl
def npuprof_advice_rules():
    return [Rule("many_ranges", "Many user ranges", _many_ranges, Needs(tables={"range_statistic": ("Count",)})),
            Rule("breakdown", "a second rule with a taken id", _taken)]
'''


def test_an_installed_third_party_rule_plugin_is_used_and_a_taken_id_is_refused(planted, tmp_path):
    """The hookspec's own example, installed as a distribution with an ``npuprof`` entry point."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    info = site / "advice_rules-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Name: advice-rules\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[npuprof]\nadvice_rules = advice_rules\n")
    (site / "advice_rules.py").write_text(THIRD_PARTY_RULES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "npuprof", "advise", str(planted["clean"]), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    (f,) = [f for f in run["findings"] if f["rule"] == "many_ranges"]
    assert f["evidence"] == [{"ranges": STEPS}]
    ids = [r["rule"] for r in run["rules"]]
    assert ids.count("breakdown") == 1 and ids.index("breakdown") == 0     # the built-in one kept
    assert "rule id 'breakdown' of plugin 'advice_rules' is taken by plugin 'advise'" in proc.stderr


def test_the_report_ends_with_each_ranks_advice(tmp_path):
    job = realdata("msinsight/test/data/pytorch/text/level1")
    before = tree_digest(job)
    page = tmp_path / "report.html"
    assert main(["report", str(job), "-o", str(page), "--backend", "serial", "--quiet", "--advise", "1"]) == 0
    text = page.read_text()
    advice = text[text.index("<h2>Advice (findings of at least 1 ms per step)</h2>"):]
    assert advice.count("rank0_ascend_pt") >= 1 and advice.count("rank1_ascend_pt") >= 1
    assert advice.count("rule <code>breakdown</code>") == 2 and "byte_alignment" in advice
    assert text.rstrip().endswith("</html>")
    assert main(["report", str(job), "-o", str(tmp_path / "r2.html"), "--advise", "-1"]) == 2
    assert tree_digest(job) == before


def test_slow_rank_names_the_rank_and_its_slow_range_and_a_late_starter_is_not_slow(tmp_path, capsys):
    from advise_support import FORWARD_S, SLOW_FACTOR, planted_job

    job = planted_job(tmp_path / "job", slow_rank=1, late_rank=3)
    code, out = _json(capsys, ["advise", str(job), "--json", "--rules", "slow_rank"])
    assert code == 0
    job_advice = out["runs"][0]
    assert job_advice["run"].startswith("job: ") and len(out["runs"]) == 5
    slow = [f["evidence"][0]["rank"] for f in job_advice["findings"]]
    # rank 1 first (a rank the shared machine's load slowed by over 5 % may follow); rank 3 started late and
    # is not slower
    assert slow[0] == 1 and 3 not in slow, json.dumps(job_advice["findings"])[:3000]
    f = job_advice["findings"][0]
    head, *parts = f["evidence"]
    assert f["rule"] == "slow_rank" and head["rank"] == 1 and f["title"].startswith("Rank 1 is slow")
    planted_ms = FORWARD_S * (SLOW_FACTOR - 1) * 1000
    assert planted_ms * 0.8 <= head["excess_ms"] <= planted_ms * 1.5
    shares = {p["component"]: p["share_of_excess"] for p in parts if "component" in p}
    assert max(shares, key=shares.get) == "range: forward" and shares["range: forward"] >= 0.8
    skew = next(p for p in parts if "start_skew_ms_by_rank (trimmed: steps matched by number)" in p)[
        "start_skew_ms_by_rank (trimmed: steps matched by number)"]
    assert skew["3"] > 500 and skew["3"] == max(skew.values())     # measured, and not taken for slowness
    # the single-run advice of each rank is there too, without the job rule
    assert all("slow_rank" not in [r["rule"] for r in a["rules"]] for a in out["runs"][1:])


def test_mfu_counts_two_m_k_n_for_every_matmul_row_of_a_real_run(capsys):
    from npuprof.analysis.advice.flops import is_matmul, parse_shapes
    from npuprof.analysis.advice.rules.mfu import op_flops_rows

    result = analyse_run(realdata(LEVEL1))
    rows = [r for r in op_flops_rows(result) if is_matmul(r.op_type)]
    assert len(rows) >= 9
    table = result.tables["kernel_details"]
    outputs = {(n, float(d)): o for n, d, o in zip(table.column("Name"), table.column("Duration(us)"),
                                                   table.column("Output Shapes"))}
    for r in rows:
        a, b = parse_shapes(r.input_shapes)[:2]
        m, n = parse_shapes(outputs[(r.name, r.duration_us)])[0]
        k = a[1] if a[0] == m else a[0]
        assert sorted(b) == sorted([k, n]), (r.name, r.input_shapes)
        assert r.flops == 2 * m * k * n
    # the finding: per op type, and judged against the peak given
    code, out = _json(capsys, ["advise", str(realdata(LEVEL1)), "--json", "--rules", "mfu", "--peak-tflops", "100"])
    (f,) = out["runs"][0]["findings"]
    head = f["evidence"][0]
    matmul_gflop = sum(e["GFLOP"] for e in f["evidence"][1:] if "MatMul" in e["OP Type"])
    assert matmul_gflop == pytest.approx(sum(r.flops for r in rows) / 1e9, abs=1e-3)
    assert head["MFU(%)"] == pytest.approx(head["achieved TFLOP/s (step)"] / 100 * 100, abs=1e-2)
    code, out = _json(capsys, ["advise", str(realdata(LEVEL1)), "--json", "--rules", "mfu"])
    assert out["runs"][0]["rules"][0]["status"] == "not_checked" and "--peak-tflops" in out["runs"][0]["rules"][0]["needs"]
    assert main(["advise", str(realdata(LEVEL1)), "--peak-tflops", "0"]) == 2


def test_host_bound_dispatch_on_the_acl_double_is_found_with_its_launch(tmp_path, monkeypatch, capsys):
    """The device waits for each aclmdlExecute: 10 ms of host work follows every launch."""
    from advise_support import ACL_STEPS, EXECUTES_PER_STEP, planted_acl_run

    gap_s = 0.010
    run = planted_acl_run(tmp_path / "gaps", gap_s)
    monkeypatch.setenv("PATH", f"{Path(__file__).resolve().parents[1] / 'acl' / 'bin'}:{__import__('os').environ['PATH']}")
    code, out = _json(capsys, ["advise", str(run), "--json", "--rules", "host_bound,breakdown"])
    assert code == 0
    adv = out["runs"][0]
    top = adv["findings"][0]
    assert top["rule"] in ("host_bound", "breakdown")
    (f,) = [f for f in adv["findings"] if f["rule"] == "host_bound"]
    gaps = [r for r in f["evidence"] if "gap_ms" in r]
    assert gaps and all(r["launched_by"] == "aclmdlExecute" for r in gaps)
    assert all(r["launched_ms_into_gap"] >= gap_s * 1000 * 0.9 for r in gaps)
    # a step's device window holds the gaps between its launches (the one after its last ends the window)
    assert f["at_stake_ms"] >= (EXECUTES_PER_STEP - 1) * gap_s * 1000 * 0.7
    summary = f["evidence"][-1]
    assert summary["judged_by_launch_link"] == summary["gaps"]
    # every planted gap inside a step's device window is found (the double's own Python dispatch between
    # launches adds shorter ones on a loaded machine; those are real host-bound time too)
    assert summary["gaps"] >= (EXECUTES_PER_STEP - 1) * ACL_STEPS * 0.8


def test_block_dim_counts_the_idle_cores_of_each_kernel_from_kernel_details(capsys):
    import csv
    import math

    run = realdata(LEVEL1)
    code, out = _json(capsys, ["advise", str(run), "--json", "--rules", "block_dim", "--ai-cores", "24,48"])
    (f,) = out["runs"][0]["findings"]
    cores = {"AI_CORE": 24, "AI_VECTOR_CORE": 48, "MIX_AIV": 48}
    idle = {}
    with open(run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            n, bd = cores.get(r["Accelerator Core"]), int(r["Block Dim"])
            if n and bd > 0:
                lost = float(r["Duration(us)"]) * (1 - bd / (math.ceil(bd / n) * n))
                if lost > 0:
                    key = (r["Type"], r["Accelerator Core"])
                    idle[key] = idle.get(key, 0.0) + lost
    assert f["at_stake_ms"] == pytest.approx(sum(idle.values()) / 1000, abs=1e-3)
    for row in f["evidence"]:
        assert row["idle-core time(us)"] == pytest.approx(idle[(row["OP Type"], row["Accelerator Core"])], abs=2e-3)
    code, out = _json(capsys, ["advise", str(run), "--json", "--rules", "block_dim"])
    assert out["runs"][0]["rules"][0]["needs"].startswith("the device's AI Core count")


def test_cluster_explain_says_why_the_slow_rank_is_slow(tmp_path, capsys):
    from advise_support import planted_job

    # the runs of one job must overlap in time for `cluster` to take them as one: no late start, and steps
    # enough to outlast the processes' staggered start on a busy machine
    job = planted_job(tmp_path / "job", slow_rank=2, late_rank=-1, steps=60)
    assert main(["cluster", str(job), "-o", str(tmp_path / "out"), "--backend", "serial", "--quiet",
                 "--explain"]) == 0
    out = capsys.readouterr().out
    assert "slow_rank: Rank 2 is slow" in out and "range: forward" in out, out[-2000:]


def test_analyse_writes_op_flops_csv_for_a_run_with_shapes_only(planted, tmp_path):
    import csv
    import shutil

    run = realdata(LEVEL1)
    assert main(["analyse", str(run), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    (path,) = (tmp_path / "out").rglob("op_flops.csv")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as fh:
        assert len(rows) == len(list(csv.DictReader(fh)))
    matmul = [r for r in rows if r["Type"].startswith("MatMul")]
    assert matmul and all(int(r["FLOPs"]) > 0 and float(r["TFLOP/s"]) > 0 for r in matmul)
    big = [r for r in matmul if r["Input Shapes"].strip('"').startswith("32,9216;4096,9216")]
    assert big and int(big[0]["FLOPs"]) == 2 * 32 * 9216 * 4096
    assert all(r["Not Counted"] for r in rows if r["FLOPs"] == "")
    # an npuprof host run has no shapes: no file (analysed in a copy: the planted runs stay as recorded)
    copy = tmp_path / "clean" / planted["clean"].name
    shutil.copytree(planted["clean"], copy)
    assert main(["analyse", str(copy), "--quiet"]) == 0
    assert (copy / "ASCEND_PROFILER_OUTPUT").is_dir() and not list(copy.rglob("op_flops.csv"))


def test_memory_names_the_peak_the_memory_record_holds_and_what_was_alive(planted, capsys):
    import csv

    run = realdata(LEVEL1)
    code, out = _json(capsys, ["advise", str(run), "--json", "--rules", "memory", "--device-memory-gb", "64"])
    (f,) = out["runs"][0]["findings"]
    head = f["evidence"][0]
    with open(run / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv", newline="") as fh:
        allocated = [float(r["Total Allocated(MB)"]) for r in csv.DictReader(fh) if r["Total Allocated(MB)"]]
    assert head["peak allocated(MB)"] == pytest.approx(max(allocated), abs=1e-3)
    assert head["share of device(%)"] == pytest.approx(max(allocated) / 65536 * 100, abs=0.01)
    assert f["at_stake_ms"] == 0.0 and any("operator" in r for r in f["evidence"])
    code, out = _json(capsys, ["advise", str(planted["clean"]), "--json", "--rules", "memory"])
    assert out["runs"][0]["rules"][0]["needs"] == "memory events (profile_memory=True)"
