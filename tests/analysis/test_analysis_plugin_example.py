"""The "add an analyzer" example of docs/architecture.md, run as written through the real plugin
host: its table appears in the analysis, in `npuprof analyse`'s files, `show`, `export summary`,
`plugins --json`, `npuprof cluster`'s tables and the HTML report with no core edit; a taken table
name and a failing analyzer are reported, not fatal (the report in headless Chromium:
tests/export/test_report_html.py)."""
from __future__ import annotations

import csv
import json
import re
import types
from pathlib import Path

import pytest

from npuprof import Profiler, hookimpl, mstx, record_function
from npuprof.analysis.analyzer import Analyzer, registered_analyzers
from npuprof.analysis.pipeline import analyse_run
from npuprof.analysis.table import Table
from npuprof.cli import main
from npuprof.cluster.packing import pack, unpack
from npuprof.cluster.worker import RankSummary, RankTask, summarise_rank
from npuprof.plugins.manager import get_plugin_host

from cluster_support import ensure_cluster_plugin
from plugin_support import KINDS_TABLE, FailingPlugin, KindsPlugin, registered_plugins
from realdata import realdata, tree_digest

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def _doc_example() -> str:
    """The first python block of the doc's "### An analyzer" section."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### An analyzer"):]
    section = section[:section.index("\n### ", 1)]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _plugin(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


@pytest.fixture
def registered():
    host = get_plugin_host()
    added: list[str] = []

    def register(name: str, plugin: object) -> None:
        host.register(plugin, name=name)
        added.append(name)

    yield register
    for name in added:
        host.unregister(name)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    with Profiler(output_path=out) as prof:
        for step in range(3):
            for _ in range(step + 1):       # step k holds k + 1 marks
                mstx.mark("m")
            with record_function("train"):
                pass
            prof.step()
    assert len(prof.saved_runs) == 1
    return prof.saved_runs[0]


def test_the_doc_example_registers_through_the_plugin_host(registered, run, capsys, tmp_path):
    registered("marks", _plugin("marks_plugin", _doc_example()))
    tables = [r.analyzer.table for r in registered_analyzers()]
    assert tables[-1] == "marks_per_step" and tables.index("step_trace_time") == 0   # built-ins run first

    result = analyse_run(run)
    marks = result.tables["marks_per_step"].records()
    assert [m["Marks"] for m in marks] == [1, 2, 3]

    assert main(["analyse", str(run), "--quiet"]) == 0
    csv = run / "ASCEND_PROFILER_OUTPUT" / "marks_per_step.csv"
    assert csv.read_text().splitlines() == ["Step,Marks"] + [f"{m['Step']},{m['Marks']}" for m in marks]
    capsys.readouterr()

    assert main(["show", "-dir", str(run)]) == 0
    assert "marks_per_step" in capsys.readouterr().out

    assert main(["export", "summary", "--format", "json", "-dir", str(run), "-o", str(tmp_path / "summary")]) == 0
    assert any(line.endswith("marks_per_step.json") for line in capsys.readouterr().out.splitlines())

    assert main(["plugins", "--json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed["marks"]["analyzers"] == ["marks_per_step"] and "npuprof_analyzers" in listed["marks"]["hooks"]
    assert "marks_per_step" not in listed["analyzers"]["analyzers"]
    assert main(["plugins"]) == 0
    assert re.search(r"marks_per_step\s+marks\s+mark events", capsys.readouterr().out)


def test_without_the_plugin_the_table_is_gone(run):
    assert "marks_per_step" not in analyse_run(run).tables


class _Taken:
    @hookimpl
    def npuprof_analyzers(self):
        return [Analyzer("op_statistic", ("X",), lambda events: Table("op_statistic", ["X"], {"X": [1]})),
                "not an analyzer"]


class _Failing:
    @hookimpl
    def npuprof_analyzers(self):
        def broken(events):
            raise RuntimeError("boom")
        return [Analyzer("broken_table", ("X",), broken), Analyzer("not_a_table", ("X",), lambda events: [1])]


def test_a_taken_name_or_a_failing_analyzer_is_reported_and_the_rest_is_made(registered, run, caplog):
    registered("taken", _Taken())
    registered("failing", _Failing())
    with caplog.at_level("WARNING", logger="npuprof"):
        owners = {r.analyzer.table: r.plugin for r in registered_analyzers()}
    assert owners["op_statistic"] == "analyzers"          # a built-in table is never replaced
    assert "table 'op_statistic' of plugin 'taken' is taken by plugin 'analyzers'" in caplog.text
    assert "returned 'str' from npuprof_analyzers, not an Analyzer" in caplog.text

    result = analyse_run(run)
    assert "X" not in result.tables["op_statistic"].columns
    assert "broken_table" not in result.tables and "not_a_table" not in result.tables
    assert any("analyzer 'broken_table' of plugin 'failing' failed (RuntimeError: boom)" in w for w in result.warnings)
    assert any("analyzer 'not_a_table' of plugin 'failing' returned list, not a Table" in w for w in result.warnings)
    assert "step_trace_time" in result.tables and "kernel_details" in result.tables


def test_an_analyzer_declaration_is_checked():
    with pytest.raises(ValueError, match="Analyzer.csv: one of always, with_rows, never, got 'sometimes'"):
        Analyzer("t", ("X",), lambda events: None, csv="sometimes")
    with pytest.raises(ValueError, match="a non-empty table name"):
        Analyzer("", ("X",), lambda events: None)


# -- the jobs' surfaces: `npuprof cluster`'s tables, the HTML report, `show` of another tool's run ---------------

def test_the_doc_example_reaches_the_cluster_tables_and_the_report(registered, run, capsys, tmp_path):
    """Cluster analysis runs the plugin's analyzer on each rank and writes its rows, by rank, as
    cluster_marks_per_step; the report (a run is a job of one rank) has its section, read from that table."""
    ensure_cluster_plugin()
    registered("marks", _plugin("marks_plugin", _doc_example()))
    marks = analyse_run(run).tables["marks_per_step"].rows()

    assert main(["cluster", str(run), "--backend", "serial", "-o", str(tmp_path / "c"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["analyzer_tables"] == {"cluster_marks_per_step": {"analyzer": "marks_per_step", "plugin": "marks",
                                                                     "ranks": [0]}}
    assert summary["analyzer_warnings"] == []
    with open(tmp_path / "c" / "cluster_marks_per_step.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["Rank", "Step", "Marks"]] + [["0", str(s), str(m)] for s, m in marks]
    doc = json.loads((tmp_path / "c" / "cluster_marks_per_step.json").read_text())
    assert [[r["Step"], r["Marks"]] for r in doc] == marks
    import pyarrow.parquet as pq        # npuprof[cluster]: the cluster command writes Parquet by default

    parquet = pq.read_table(tmp_path / "c" / "cluster_marks_per_step.parquet")
    assert parquet.column_names == ["Rank", "Step", "Marks"] and parquet.to_pylist() == [
        {"Rank": 0, "Step": s, "Marks": m} for s, m in marks]

    page = tmp_path / "r" / "report.html"
    assert main(["report", str(run), "--backend", "serial", "-o", str(page), "--quiet"]) == 0
    text = page.read_text()
    section = text[text.index("<h2 id='analyzer-marks_per_step'>mstx marks per step</h2>"):]
    section = section[:section.index("<h2", 5)]
    assert "of plugin <b>marks</b>" in section and "report_files/cluster_marks_per_step.csv" in section
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    assert cells == [str(v) for row in marks for v in row]      # one rank: no Rank column
    assert "analyzer-warnings" not in text


def test_a_plugin_table_of_another_tools_run_is_shown_and_merged(tmp_path, capsys):
    """torch_npu's run shows the tool's own tables; a plugin analyzer's table, which no tool writes, is
    npuprof's analysis beside them. Its cluster table needs the ranks' events: summarised from the tool's
    tables (the fast path) the ranks say so, with --recompute both ranks' rows are there."""
    ensure_cluster_plugin()
    job = realdata("msinsight/test/data/pytorch/text/level1")
    before = tree_digest(job)
    with registered_plugins(kinds=KindsPlugin()):
        expected = {r: analyse_run(job / f"rank{r}_ascend_pt").tables[KINDS_TABLE].rows() for r in (0, 1)}
        assert main(["show", "-dir", str(job / "rank0_ascend_pt"), "--width", "200"]) == 0
        out = capsys.readouterr().out
        assert "tables written by" in out and "plugin analyzers' tables: npuprof's analysis" in out
        assert KINDS_TABLE in out and "op_statistic" in out
        for kind, count in expected[0]:
            assert re.search(rf"{kind}\s*│\s*{count}\b", out), (kind, count)

        assert main(["cluster", str(job), "--backend", "serial", "-o", str(tmp_path / "fast"), "--json"]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["tool_tables"] == [0, 1] and summary["analyzer_tables"] == {}
        assert len(summary["analyzer_warnings"]) == 1
        assert summary["analyzer_warnings"][0].startswith("ranks 0-1: summarised from the tool's own tables: the "
                                                          "tables of analyzers 'events_per_kind' need its events")
        assert not (tmp_path / "fast" / f"cluster_{KINDS_TABLE}.csv").exists()

        assert main(["cluster", str(job), "--backend", "serial", "--recompute", "-o", str(tmp_path / "all"),
                     "--quiet"]) == 0
        out = capsys.readouterr().out
        assert f"cluster_{KINDS_TABLE}: analyzer '{KINDS_TABLE}' of plugin 'kinds', ranks 0-1" in out
    with open(tmp_path / "all" / f"cluster_{KINDS_TABLE}.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["Rank", "Kind", "Events"]] + [[str(r), k, str(n)] for r in (0, 1) for k, n in expected[r]]
    assert tree_digest(job) == before          # another tool's run: read, never written


def test_a_rank_whose_worker_lacks_the_plugin_says_so_and_a_table_survives_packing(run):
    """A worker process that does not have the plugin (one not forked from the process that registered it)
    names it; a rank's plugin table crosses to the driver as plain values, equal."""
    task = RankTask(rank=0, run_dirs=(str(run),), analyzers=((KINDS_TABLE, "kinds"),))
    alone = summarise_rank(task)
    assert alone.analyzer_tables == {}
    assert alone.analyzer_warnings == [f"analyzer '{KINDS_TABLE}' of plugin 'kinds' is not registered in the worker "
                                       "process; its table is left out (register the plugin under the 'npuprof' "
                                       "entry-point group, or use the serial backend)"]
    with registered_plugins(kinds=KindsPlugin(), failing=FailingPlugin()):
        task = RankTask(rank=0, run_dirs=(str(run),), analyzers=((KINDS_TABLE, "kinds"), ("broken_summary", "failing")))
        summary = summarise_rank(task)
        expected = analyse_run(run).tables[KINDS_TABLE].rows()
    back = unpack(pack(summary), RankSummary)
    assert back.analyzer_tables[KINDS_TABLE].rows() == expected == summary.analyzer_tables[KINDS_TABLE].rows()
    assert all(type(v) is int for _, v in expected)
    assert back.analyzer_warnings == ["analyzer 'broken_summary' of plugin 'failing' failed (RuntimeError: boom); "
                                      "its table is left out"]


class _ClusterName:
    @hookimpl
    def npuprof_analyzers(self):
        return [Analyzer("communication", ("X",), lambda events: Table("communication", ["X"], {"X": [1]}),
                         summary=True)]


def test_a_plugin_table_whose_job_name_is_a_cluster_tables_is_left_out_of_the_job(registered, run, capsys, tmp_path):
    """`communication` is free among analyzers, but cluster_communication is npuprof's own cluster table."""
    ensure_cluster_plugin()
    registered("clash", _ClusterName())
    assert main(["cluster", str(run), "--backend", "serial", "-o", str(tmp_path / "c"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["analyzer_tables"] == {}
    assert summary["analyzer_warnings"] == ["analyzer 'communication' of plugin 'clash': its job table would be "
                                            "'cluster_communication', a cluster table of npuprof's; left out of the "
                                            "cluster tables"]
    header = (tmp_path / "c" / "cluster_communication.csv").read_text().splitlines()[0]
    assert header.startswith("Rank,Step,OP Type")
