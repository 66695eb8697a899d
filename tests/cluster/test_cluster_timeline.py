"""Large timelines stay openable: step / rank / minimum-duration filters,
gzip, and a size report (estimate before writing, measured after)."""
from __future__ import annotations

import gzip
import json

import pytest

from npuprof import ProfilerConfigError
from npuprof.events import EventKind, EventTable
from npuprof.export.filters import filter_events, parse_duration_ns, parse_steps, size_report

from cluster_support import ensure_cluster_plugin, make_job


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    ensure_cluster_plugin()
    return make_job(tmp_path_factory.mktemp("tl"), ranks=8, steps=6, slow_ranks=(3,))


def _timeline(capsys, *args) -> dict:
    from npuprof.cli import main

    assert main(["timeline", *args, "--size-report-json"]) == 0
    return json.loads(capsys.readouterr().out)


def _events(path) -> list:
    raw = open(path, "rb").read()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    return json.loads(raw)["traceEvents"]


def test_filters_by_rank_step_and_duration_with_gzip(job, capsys, tmp_path):
    full = _timeline(capsys, str(job.root), "-o", str(tmp_path / "all.json"))
    cut = _timeline(capsys, str(job.root), "--ranks", "0,3", "--steps", "2-3", "--min-dur", "250us", "--gzip",
                    "-o", str(tmp_path / "cut.json.gz"))
    assert full["ranks"] == list(range(8)) and cut["ranks"] == [0, 3]
    ev = _events(tmp_path / "cut.json.gz")
    spans = [e for e in ev if e.get("ph") == "X"]
    steps = {e["name"] for e in spans if e["name"].startswith("ProfilerStep#")}
    assert steps == {"ProfilerStep#2", "ProfilerStep#3"}
    assert all(e["args"]["Step"] in (2, 3) for e in spans)
    assert all(e["dur"] >= 250 for e in spans if not e["name"].startswith("ProfilerStep#"))
    assert {e["pid"] // 1000 - 1 for e in spans} == {0, 3}
    assert any(e["name"] == "MatMul_kernel" for e in spans) and not any(e["name"] == "Add_kernel" for e in spans)
    assert cut["written"]["bytes"] < full["written"]["bytes"] / 10
    assert cut["written"]["uncompressed_bytes"] > 3 * cut["written"]["bytes"]


def test_size_estimate_is_close_to_the_written_size(job, capsys, tmp_path):
    rep = _timeline(capsys, str(job.root), "-o", str(tmp_path / "all.json"))
    est, real = rep["estimate"]["estimated_bytes"], rep["written"]["bytes"]
    assert abs(est - real) / real < 0.15
    assert rep["estimate"]["events"] == sum(v["events"] for v in rep["estimate"]["by_kind"].values())
    assert set(rep["estimate"]["by_kind"]) >= {"KERNEL", "COMM", "STEP", "OP", "COUNTER"}
    gz = _timeline(capsys, str(job.root), "--gzip", "-o", str(tmp_path / "all.json.gz"))
    assert abs(gz["estimate"]["estimated_gzip_bytes"] - gz["written"]["bytes"]) / gz["written"]["bytes"] < 0.6


def test_filter_events_keeps_counters_inside_chosen_steps():
    ev = EventTable.from_records(
        ts=[0, 10, 100, 110, 120, 150], dur=[100, 5, 100, 50, 0, 1],
        kind=[EventKind.STEP, EventKind.OP, EventKind.STEP, EventKind.OP, EventKind.COUNTER, EventKind.OP],
        name=["ProfilerStep#1", "a", "ProfilerStep#2", "b", "CPU Usage(%)", "c"], step=[1, 1, 2, 2, -1, 2])
    out = filter_events(ev, steps=[2], min_dur_ns=10)
    assert out.column_strings("name") == ["ProfilerStep#2", "b", "CPU Usage(%)"]
    assert filter_events(ev, drop_counters=True, kinds=[EventKind.OP]).column_strings("name") == ["a", "b", "c"]
    rep = size_report(ev)
    assert rep["events"] == 6 and rep["by_kind"]["OP"]["events"] == 3 and rep["estimated_bytes"] > 0


@pytest.mark.parametrize("value, ns", [("10us", 10_000), ("2ms", 2_000_000), ("500ns", 500), (15, 15_000),
                                       ("1.5 s", 1_500_000_000), ("0", 0)])
def test_durations(value, ns):
    assert parse_duration_ns("min_dur", value) == ns


@pytest.mark.parametrize("value", ["ten", "-3us", -1, True, "5 parsecs"])
def test_bad_durations_name_the_parameter(value):
    with pytest.raises(ProfilerConfigError) as e:
        parse_duration_ns("min_dur", value)
    assert "min_dur" in str(e.value)


def test_bad_steps_and_ranks_are_config_errors(job, capsys):
    from npuprof.cli import main

    with pytest.raises(ProfilerConfigError):
        parse_steps("steps", "3-1")
    assert main(["timeline", str(job.root), "--steps", "x"]) == 2
    assert "steps" in capsys.readouterr().err
    assert main(["cluster", str(job.root), "--ranks", "99", "--quiet"]) == 2
    assert "ranks" in capsys.readouterr().err
