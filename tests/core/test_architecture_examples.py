"""The worked "add one" examples of docs/architecture.md run as written: each ```python block that follows
an ``<!-- example: NAME ... -->`` line is loaded as a plugin module, registered with the plugin host as a
third party's would be, and used on a run.

The analyzer's example is run by tests/analysis/test_analysis_plugin_example.py (through the analyzer
registry).
"""
from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Iterator

import pytest

from npuprof.errors import ProfilerDataError
from npuprof.plugins.manager import get_plugin_host

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
EXAMPLE_RE = re.compile(r"<!-- example: ([a-z ]+?)[ .(][^\n]*-->\n```python\n(.*?)\n```", re.S)


def examples() -> dict[str, str]:
    """{name: code} of every runnable example in docs/architecture.md."""
    return {name: code for name, code in EXAMPLE_RE.findall(DOC.read_text(encoding="utf-8"))}


@pytest.fixture
def registered(request: pytest.FixtureRequest) -> Iterator[types.ModuleType]:
    """The example named by the test's parameter, as a module registered with the plugin host."""
    name = request.param
    module = types.ModuleType(f"architecture_example_{name}")
    exec(compile(examples()[name], f"docs/architecture.md ({name} example)", "exec"), module.__dict__)
    host = get_plugin_host()
    host.register(module, name=module.__name__)
    try:
        yield module
    finally:
        host.unregister(module.__name__)


def _myprof_run(root: Path, rows: str) -> Path:
    run = root / "myprof_run"
    (run / "MYPROF").mkdir(parents=True)
    (run / "MYPROF" / "ops.csv").write_text(rows)
    return run


ROWS = "MatMul,1700000000000000000,5000\nAdd,1700000000000010000,1000\nMatMul,1700000000000020000,7000\n"


def test_the_doc_has_its_runnable_examples():
    assert {"reader", "exporter", "advice"} <= set(examples())


@pytest.mark.parametrize("registered", ["reader"], indirect=True)
def test_reader_example_makes_a_run_npuprof_analyses(registered, tmp_path, capsys):
    from npuprof.analysis.pipeline import analyse_run
    from npuprof.cli import main

    run = _myprof_run(tmp_path, ROWS)
    result = analyse_run(run)
    assert not result.info.writable                     # another tool's run: read-only
    stats = {r["OP Type"]: r for r in result.tables["op_statistic"].records()}
    assert set(stats) == {"MatMul", "Add"} and stats["MatMul"]["Count"] == 2
    assert float(stats["MatMul"]["Total Time(us)"]) == 12.0

    assert main(["analyse", str(run), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    assert (tmp_path / "out" / "myprof_run" / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").is_file()
    assert sorted(p.name for p in run.rglob("*")) == ["MYPROF", "ops.csv"]     # nothing written into the run


@pytest.mark.parametrize("registered", ["reader"], indirect=True)
def test_reader_example_refuses_a_damaged_file_by_name(registered, tmp_path):
    run = _myprof_run(tmp_path, "MatMul,not-a-time,5000\n")
    with pytest.raises(ProfilerDataError, match="ops.csv"):
        registered.read_myprof(run)


@pytest.mark.parametrize("registered", ["exporter"], indirect=True)
def test_exporter_example_writes_its_file_beside_the_others(registered, tmp_path):
    from npuprof.analysis.pipeline import analyse_run
    from npuprof.export.writer import export_result

    reader = types.ModuleType("architecture_example_reader_for_export")
    exec(compile(examples()["reader"], "docs/architecture.md (reader example)", "exec"), reader.__dict__)
    host = get_plugin_host()
    host.register(reader, name=reader.__name__)
    try:
        result = analyse_run(_myprof_run(tmp_path, ROWS))
    finally:
        host.unregister(reader.__name__)
    exported = export_result(result, output=tmp_path / "out")
    assert not exported.failures
    path = exported.output_dir / "op_counts.csv"
    assert path in exported.outputs
    assert path.read_text().splitlines() == ["OP Type,Count", "MatMul,2", "Add,1"]


@pytest.mark.parametrize("registered", ["advice"], indirect=True)
def test_advice_rule_example_finds_the_matmul_time_of_the_reader_examples_run(registered, tmp_path, capsys):
    import json

    from npuprof.cli import main

    reader = types.ModuleType("architecture_example_reader_for_advice")
    exec(compile(examples()["reader"], "docs/architecture.md (reader example)", "exec"), reader.__dict__)
    host = get_plugin_host()
    host.register(reader, name=reader.__name__)
    try:
        run = _myprof_run(tmp_path / "a", ROWS)
        assert main(["advise", str(run), "--json", "--rules", "matmul_time"]) == 0
        (advised,) = json.loads(capsys.readouterr().out)["runs"]
        no_matmul = _myprof_run(tmp_path / "b", "Add,1700000000000010000,1000\n")
        assert main(["advise", str(no_matmul), "--json", "--rules", "matmul_time"]) == 0
        (clean,) = json.loads(capsys.readouterr().out)["runs"]
    finally:
        host.unregister(reader.__name__)
    (finding,) = advised["findings"]
    assert finding["rule"] == "matmul_time" and finding["evidence"][0]["OP Type"] == "MatMul"
    assert 0 < finding["at_stake_ms"] <= 0.012               # 12 µs of MatMul in the run, per step
    assert [r["status"] for r in clean["rules"]] == ["checked"] and not clean["findings"]
