"""Reading never writes: ``show``, ``export``, ``report`` and ``key_averages()``
leave every file of an analysed npuprof run as it was (bytes and mtime), and
no verb writes into a run another tool wrote (torch_npu's real run, read in
place from ../shared/realdata)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from realdata import realdata, tree_digest

from npuprof import Profiler, record_function
from npuprof.cli import main


def busy(n: int) -> None:
    sum(range(n))


@pytest.fixture(scope="module")
def analysed_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("readonly")
    with Profiler(output_path=out / "prof") as prof:
        for _ in range(3):
            with record_function("forward"):
                busy(20000)
            prof.step()
    prof.analyse()
    return prof


def _unchanged(before: dict, after: dict) -> list[str]:
    """Files of ``before`` whose bytes or mtime differ (or that vanished) in ``after``."""
    return [name for name, digest in before.items() if after.get(name) != digest]


@pytest.mark.parametrize("verb", ["show", "show_recompute", "export_summary", "export_timeline", "report",
                                  "key_averages", "export_chrome_trace"])
def test_reading_leaves_an_analysed_run_as_it_was(analysed_run, tmp_path, capsys, verb):
    run = analysed_run.saved_runs[0]
    before = tree_digest(run)
    assert any(name.endswith("op_statistic.csv") for name in before)
    if verb == "key_averages":
        assert analysed_run.key_averages().table()
    elif verb == "export_chrome_trace":
        analysed_run.export_chrome_trace(tmp_path / "t.json")
    else:
        argv = {"show": ["show", "-dir", str(run)], "show_recompute": ["show", "-dir", str(run), "--recompute"],
                "export_summary": ["export", "summary", "-dir", str(run), "-o", str(tmp_path / "o")],
                "export_timeline": ["export", "timeline", "-dir", str(run), "-o", str(tmp_path / "o")],
                "report": ["report", str(run), "-o", str(tmp_path / "r.html"), "--quiet", "--backend", "serial"]}[verb]
        assert main(argv) == 0, capsys.readouterr().err
    assert _unchanged(before, tree_digest(run)) == []


TORCH_NPU_TEXT = "msinsight/test/data/pytorch/text/level1"


def _verbs(run, job, out):
    return {
        "analyse": ["analyse", str(run), "-o", str(out), "--quiet"],
        "analyse_job": ["analyse", str(job), "-o", str(out), "--quiet"],
        "import": ["import", "-dir", str(run), "-o", str(out), "--quiet"],
        "show": ["show", "-dir", str(run)],
        "show_recompute": ["show", "-dir", str(run), "--recompute"],
        "export_summary": ["export", "summary", "-dir", str(run), "-o", str(out)],
        "export_timeline": ["export", "timeline", "-dir", str(run), "-o", str(out)],
        "export_ascend": ["export", "ascend", "-dir", str(run), "-o", str(out)],
        "report": ["report", str(job), "-o", str(out / "r.html"), "--quiet", "--backend", "serial"],
        "cluster": ["cluster", str(job), "-o", str(out), "--quiet", "--backend", "serial"],
        "timeline": ["timeline", str(job), "-o", str(out / "t.json"), "--backend", "serial"],
        "xplane": ["xplane", str(run), "--logdir", str(out)],
        "diff": ["diff", str(job), str(job), "--base-rank", "0", "--new-rank", "1", "-o", str(out / "d.html")],
    }


@pytest.mark.parametrize("verb", list(_verbs(Path("r"), Path("j"), Path("o"))))
def test_no_verb_writes_into_a_torch_npu_run(tmp_path, verb):
    job = realdata(TORCH_NPU_TEXT)
    run = job / "rank0_ascend_pt"
    before = tree_digest(job)
    argv = _verbs(run, job, tmp_path / "out")[verb]
    done = subprocess.run([sys.executable, "-m", "npuprof", *argv], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert tree_digest(job) == before, "a verb wrote into the torch_npu run"


@pytest.mark.parametrize("verb, written", [("cluster", "npuprof_cluster/cluster_step_trace_time.csv"),
                                            ("report", "npuprof_report.html")])
def test_cluster_and_report_without_o_write_outside_another_tools_job(tmp_path, verb, written):
    job = realdata(TORCH_NPU_TEXT)
    before = tree_digest(job)
    done = subprocess.run([sys.executable, "-m", "npuprof", verb, str(job), "--quiet", "--backend", "serial"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert tree_digest(job) == before
    assert (tmp_path / "npuprof_output" / job.name / written).is_file()


def test_analyse_without_o_writes_outside_the_run(tmp_path):
    job = realdata(TORCH_NPU_TEXT)
    run = job / "rank0_ascend_pt"
    before = tree_digest(job)
    done = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(run)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert tree_digest(job) == before
    assert (tmp_path / "npuprof_output" / run.name / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").is_file()


def test_an_output_place_inside_another_tools_run_is_refused(tmp_path, capsys):
    job = realdata(TORCH_NPU_TEXT)
    run = job / "rank0_ascend_pt"
    before = tree_digest(job)
    assert main(["analyse", str(run), "-o", str(run / "mine"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "invalid output=" in err and "read-only" in err
    assert tree_digest(job) == before


def test_offline_analyse_takes_an_output_path(tmp_path):
    job = realdata(TORCH_NPU_TEXT)
    run = job / "rank1_ascend_pt"
    before = tree_digest(job)
    (res,) = Profiler.offline_analyse(run, output_path=tmp_path / "o")
    assert len(res.events) > 0 and not res.info.writable
    assert (tmp_path / "o" / run.name / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").is_file()
    assert tree_digest(job) == before


# -- an output place that cannot be written (#34.4): /proc takes no new files, for root as for anyone ------------
UNWRITABLE = Path("/proc/npuprof_cannot_write_here")


def _npuprof(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npuprof", *argv], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def test_analyse_into_an_unwritable_place_prints_no_success_line(analysed_run, tmp_path):
    run = analysed_run.saved_runs[0]
    done = _npuprof("analyse", str(run), "-o", str(UNWRITABLE), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""                                  # no "N events -> ..." nor "analysed 1 run(s)"
    lines = done.stderr.splitlines()   # one per exporter that could not write (the CSVs', the trace's)
    assert lines and all(line.startswith(f"error: {run}: ") and str(UNWRITABLE) in line for line in lines)


def test_report_into_an_unwritable_place_names_the_path_given(analysed_run, tmp_path):
    page = UNWRITABLE / "r.html"
    done = _npuprof("report", str(analysed_run.saved_runs[0]), "-o", str(page), "--quiet", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"npuprof: error: {page}: ") and "r_files" not in done.stderr
