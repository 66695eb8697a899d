"""``npuprof report``: one self-contained HTML page, rendered in Debian's
headless Chromium (installed by this test's setup when missing) driven over
the DevTools protocol on a pipe: no console error, no exception, no network
request, the charts are there, and a screenshot is taken."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_support import png_size, render_page, screenshot_dir
from cluster_support import ensure_cluster_plugin, make_job, run_ms_ranks
from plugin_support import KINDS_TABLE, KINDS_TITLE, FailingPlugin, KindsPlugin, registered_plugins

pytestmark = pytest.mark.slow


def _report(path: Path, *extra: str) -> Path:
    from npuprof.cli import main

    ensure_cluster_plugin()
    assert main(["report", str(path), "--quiet", *extra]) == 0
    return path / "npuprof_report.html"


@pytest.fixture(scope="module")
def job_report(tmp_path_factory):
    from npuprof.cli import main

    job = make_job(tmp_path_factory.mktemp("job16"), ranks=16, steps=6, slow_ranks=(5,))
    assert main(["analyse", str(job.root), "--quiet"]) == 0   # the ranks' traces the page links to (report only reads)
    return job, _report(job.root, "--timeline", "0,5")


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("real2r")
    run_ms_ranks(out, steps=6, world=2)
    return out, _report(out)


def test_report_is_self_contained(job_report):
    _, page = job_report
    text = page.read_text()
    assert "<script" not in text.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*['"]?(?:https?:)?//""", text), "no network resource"
    assert "@import" not in text and "url(" not in text


def test_job_report_renders_in_headless_chromium(job_report, tmp_path):
    job, page = job_report
    png = screenshot_dir(tmp_path) / "report_job16.png"
    got = render_page(page, png, tmp_path)
    assert got["problems"] == [], got["problems"]
    assert all(u.startswith("file://") for u in got["requests"]), got["requests"]
    f = got["facts"]
    assert f["h2"][:3] == ["Step time breakdown", "Top operators by time", "Host CPU and memory over time"]
    assert f["charts"] == 5                      # per step, per rank, top ops, CPU, memory
    assert all(w >= 800 and h >= 150 for w, h in f["chartBoxes"])
    # stacked segments per step and per rank (Computing, Communication; this synthetic job's steps are measured
    # over their device activity, as the Ascend tools do, so Free is 0), plus op bars
    assert f["bars"] >= 6 * 2 + 16 * 2
    assert f["lines"] >= 2 and f["slow"] == 1    # the one slow rank is outlined
    assert any(h.endswith("merged_timeline.json") for h in f["links"])
    assert sum(h.endswith("trace_view.json") for h in f["links"]) == 16
    for href in f["links"]:
        assert (page.parent / href).exists(), href   # every link resolves
    w, h = png_size(png)
    assert w == 1000 and h > 1500


def test_real_run_report_renders_in_headless_chromium(real_report, tmp_path):
    out, page = real_report
    png = screenshot_dir(tmp_path) / "report_real2.png"
    got = render_page(page, png, tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert f["charts"] >= 4 and f["bars"] > 10
    text = page.read_text()
    assert "MatMul" in text and "Slow-rank test not applied" in text
    assert "Communication matrix" in text and "TCP" in text
    assert png_size(png)[0] == 1000


def test_report_memory_section_renders_in_headless_chromium(tmp_path):
    """A run with memory data: the report shows each rank's peak and the memory timeline of the highest."""
    from npuprof import Profiler

    kept = []
    with Profiler(output_path=tmp_path / "prof", python_memory=True) as prof:
        for _ in range(6):
            kept.append(bytearray(512 * 1024))
            prof.step()
    run = prof.saved_runs[0]
    page = _report(run)
    got = render_page(page, screenshot_dir(tmp_path) / "report_memory.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert "Memory peak per rank" in f["h2"] and "Memory over time, rank 0" in f["h2"]
    text = page.read_text()
    assert text.count("<polygon") >= 1 and "Alive at the peak" in text and "test_report_html.py:" in text


def test_a_plugin_analyzers_table_renders_for_a_run_and_a_job(tmp_path, capsys, monkeypatch):
    """An analyzer registered by a plugin written here gets its section (title, declared columns, rows as
    each rank's analysis made them, the first MAX_ANALYZER_ROWS) in the report of a run and of a job of four
    ranks (a Rank column); one that fails leaves the page whole, with a warning naming its plugin on the page
    and on stderr."""
    from npuprof import Profiler, mstx
    from npuprof.analysis.pipeline import analyse_run
    from npuprof.cli import main
    from npuprof.cluster.ranks import discover_ranks

    ensure_cluster_plugin()
    monkeypatch.setattr("npuprof.report.page.MAX_ANALYZER_ROWS", 12)
    with Profiler(output_path=tmp_path / "prof") as prof:
        for _ in range(3):
            mstx.mark("m")
            prof.step()
    run = prof.saved_runs[0]
    job = make_job(tmp_path / "job", ranks=4, steps=3, slow_ranks=())
    warning = "analyzer 'broken_summary' of plugin 'failing' failed (RuntimeError: boom); its table is left out"
    with registered_plugins(kinds=KindsPlugin(), failing=FailingPlugin()):
        expected = {rank: analyse_run(dirs[0]).tables[KINDS_TABLE].rows()
                    for rank, dirs in discover_ranks(job.root).items()}
        expected_run = analyse_run(run).tables[KINDS_TABLE].rows()
        pages = {}
        for name, path in (("run", run), ("job", job.root)):
            capsys.readouterr()
            assert main(["report", str(path), "--backend", "serial", "--quiet"]) == 0
            pages[name] = path / "npuprof_report.html"
            assert f"warning: rank{'s 0-3' if name == 'job' else ' 0'}: {warning}" in capsys.readouterr().err

    got = render_page(pages["run"], screenshot_dir(tmp_path) / "report_plugin_run.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert KINDS_TITLE in f["h2"] and "Step time breakdown" in f["h2"] and "Analyzer warnings" in f["h2"]
    assert f["analyzerTables"][f"analyzer-{KINDS_TABLE}"] == [["Kind", "Events"]] + \
        [[k, str(n)] for k, n in expected_run]
    assert f["analyzerWarnings"] == [f"rank 0: {warning}"]
    assert any(h.endswith(f"cluster_{KINDS_TABLE}.csv") for h in f["links"])

    got = render_page(pages["job"], screenshot_dir(tmp_path) / "report_plugin_job.png", tmp_path)
    assert got["problems"] == [], got["problems"]
    f = got["facts"]
    assert f["h2"][:3] == ["Step time breakdown", "Top operators by time", "Host CPU and memory over time"]
    assert f["charts"] >= 4 and KINDS_TITLE in f["h2"]
    rows = [[str(r), k, str(n)] for r in sorted(expected) for k, n in expected[r]]
    assert len(rows) > 12
    assert f["analyzerTables"][f"analyzer-{KINDS_TABLE}"] == [["Rank", "Kind", "Events"]] + rows[:12]
    assert f"4 of 4 rank(s); {len(rows)} row(s), the first 12 shown" in pages["job"].read_text()
    assert f["analyzerWarnings"] == [f"ranks 0-3: {warning}"]
    for href in f["links"]:
        assert (pages["job"].parent / href).exists(), href
