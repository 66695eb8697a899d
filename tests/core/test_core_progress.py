"""Progress of long commands: the analysis counts its phases over every run,
and the terminal bar shows them only on a terminal and only after a moment."""
from __future__ import annotations

import io
import subprocess
import sys
import time

from npuprof import Profiler, mstx, record_function, schedule
from npuprof.analysis.analyzer import registered_analyzers
from npuprof.analysis.pipeline import analyse_path, analyse_run
from npuprof.export.writer import analyse_and_export
from npuprof.plugins.manager import get_plugin_host
from npuprof.progress import TerminalProgress, terminal_progress


def _two_runs(out):
    with Profiler(output_path=out, schedule=schedule(wait=0, active=2, repeat=2)) as prof:
        for _ in range(4):
            with record_function("train"):
                mstx.mark("m")
            prof.step()
    assert len(prof.saved_runs) == 2
    return prof.saved_runs


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, message, done=None, total=None):
        self.calls.append((message, done, total))


def test_analysis_counts_every_phase_of_every_run(tmp_path):
    runs = _two_runs(tmp_path / "out")
    rec = Recorder()
    analyse_and_export(tmp_path / "out", progress=rec)
    exporters = [i.plugin_name for i in get_plugin_host().impls("npuprof_export")]
    tables = [r.analyzer.table for r in registered_analyzers()]
    per_run = 1 + len(tables) + len(exporters)
    totals = {t for _, _, t in rec.calls}
    assert totals == {2 * per_run}
    done = [d for _, d, _ in rec.calls]
    assert done == sorted(done) and done[0] == 0
    assert rec.calls[-1] == ("done", 2 * per_run, 2 * per_run)
    messages = [m for m, _, _ in rec.calls]
    for run in runs:
        assert f"parsing {run.name}" in messages
        for name in tables:
            assert f"{name} ({run.name})" in messages
        for exporter in exporters:
            assert f"writing {exporter} outputs ({run.name})" in messages


def test_one_run_alone_counts_from_zero_to_its_phases(tmp_path):
    run = _two_runs(tmp_path / "out")[0]
    rec = Recorder()
    analyse_run(run, progress=rec)
    total = rec.calls[0][2]
    assert total == 1 + len(registered_analyzers()), "reading counts parsing and the analyzers, no exporter"
    assert rec.calls[0][1] == 0 and rec.calls[-1] == ("done", total, total)


def test_reading_counts_no_writing_phase(tmp_path):
    _two_runs(tmp_path / "out")
    rec = Recorder()
    analyse_path(tmp_path / "out", progress=rec)
    assert not [m for m, _, _ in rec.calls if m.startswith("writing")]


def test_the_bar_draws_the_counts_on_a_terminal():
    out = io.StringIO()
    bar = TerminalProgress("analysing", file=out, show_after=0.0, force_terminal=True)
    deadline = time.monotonic() + 120   # the timer thread starts it; wait for that, not for a time
    while not bar.shown and time.monotonic() < deadline:
        time.sleep(0.01)
    shown = bar.shown
    bar("run_a: op_statistic", 3, 10)
    bar.close()
    assert shown
    text = out.getvalue()
    assert "npuprof: analysing" in text and "3/10" in text and "run_a: op_statistic" in text


def test_quick_work_prints_nothing():
    out = io.StringIO()
    bar = TerminalProgress("analysing", file=out, show_after=60.0, force_terminal=True)
    bar("parsing", 0, 4)
    bar("done", 4, 4)
    bar.close()
    assert not bar.shown and out.getvalue() == ""


def test_no_bar_when_the_output_is_not_a_terminal():
    with terminal_progress("analysing", file=io.StringIO()) as progress:
        assert progress is None
    with terminal_progress("analysing", enabled=False) as progress:
        assert progress is None


def test_cli_analyse_through_a_pipe_prints_no_bar(tmp_path):
    _two_runs(tmp_path / "out")
    proc = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "analysed 2 run(s)" in proc.stdout
    assert "\x1b[" not in proc.stderr and "npuprof: analysing" not in proc.stderr
