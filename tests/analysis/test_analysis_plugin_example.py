"""The "add an analyzer" example of docs/architecture.md, run as written through the real plugin
host: its table appears in the analysis, in `npuprof analyse`'s files, `show`, `export summary` and
`plugins --json` with no core edit; a taken table name and a failing analyzer are reported, not fatal."""
from __future__ import annotations

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
from npuprof.plugins.manager import get_plugin_host

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
