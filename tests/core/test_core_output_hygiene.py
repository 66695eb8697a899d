"""Output hygiene (#34.7): no header-only memory files, no empty column in the report's per-rank
table, and a demo that runs what is installed and says what it skipped."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from realdata import realdata

from npuprof import Profiler, record_function
from npuprof.cli import main

MEMORY_FILES = ("operator_memory", "memory_record", "npu_module_mem")
TORCH_NPU_RUN = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"   # has memory data


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hygiene")
    with Profiler(output_path=out / "prof") as prof:
        for _ in range(3):
            with record_function("forward"):
                sum(range(20000))
            prof.step()
    prof.analyse()
    return prof.saved_runs[0]


@pytest.mark.parametrize("form", ["csv", "json"])
def test_export_summary_writes_no_memory_files_without_memory_data(run, form, capsys):
    assert main(["export", "summary", "--format", form, str(run)]) == 0
    summary = run / "summary"
    written = {p.stem for p in summary.iterdir()}
    assert "op_statistic" in written and not written & set(MEMORY_FILES)      # torch_npu writes none either
    assert not (run / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv").exists()   # as analyse


def test_export_summary_writes_the_memory_files_of_a_run_with_memory_data(tmp_path, capsys):
    assert main(["export", "summary", "-dir", str(realdata(TORCH_NPU_RUN)), "-o", str(tmp_path)]) in (0, 3)
    (summary,) = tmp_path.rglob("summary")
    rows = (summary / "operator_memory.csv").read_text().splitlines()
    assert len(rows) > 1 and rows[0].startswith("Name")


def _rank_table(html: str) -> str:
    start = html.index("<th", html.index("Slow-rank") if "Slow-rank" in html else html.index("slow rank"))
    return html[html.rfind("<table>", 0, start):html.index("</table>", start)]


def test_report_rank_table_has_no_empty_column(run, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", str(run), "-o", str(page), "--quiet"]) == 0
    table = _rank_table(page.read_text())
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    assert headers[:2] == ["Rank", "Host"] and all(headers), headers
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        assert len(re.findall(r"<td", row)) == len(headers)
        assert all(cell.strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)), row


def test_demo_runs_what_is_installed_and_says_what_it_skipped(tmp_path):
    """MindSpore and TensorFlow made unimportable (as where they are not installed): the host demo runs,
    each framework demo is skipped by name, exit 0."""
    code = ("import sys; sys.modules['mindspore'] = None; sys.modules['tensorflow'] = None\n"
            "from npuprof.demo import main\n"
            f"raise SystemExit(main(['--output', {str(tmp_path / 'demo')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, NPUPROF_NO_MSPROF="1"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "mindspore demo skipped: mindspore is not installed" in done.stdout
    assert "tensorflow demo skipped: tensorflow is not installed" in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last == ("demo ran: host (numpy); skipped: mindspore (mindspore is not installed), "
                    "tensorflow (tensorflow is not installed)")
    assert any(Path(tmp_path / "demo" / "host").rglob("trace_view.json"))
