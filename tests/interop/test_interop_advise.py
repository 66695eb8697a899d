"""``npuprof advise`` against msprof-analyze's ``advisor all`` (26.2, run for real from .venv-interop) on the
real Level1 torch_npu runs (text and db export of one 2-rank 910B job).

Every problem the advisor reports is checked against the npuprof rule that reports it:

- Overall Summary -> ``breakdown``: Computing, Uncovered Communication, SDMA(Tensor Move) to 0.001 ms
  (the advisor prints 3 decimals: 0.0015 allows its rounding); Free and E2E too on the text runs. On the
  db runs the advisor's E2E window is longer than torch_npu's own StepTraceTime (analysis.db), by exactly
  the extra Free: npuprof reports the tool's table, and E2E - Free agrees to 0.002 ms. Conv / Matmul /
  Vector: the advisor attributes a Vector kernel launched inside ``aten::conv*`` / ``aten::mm`` to Conv /
  Matmul through torch_npu's ``async_npu`` flows; npuprof's launch links are CANN's ``HostToDevice``
  ones (fewer on the text export), so the split differs on text runs while the three add up alike (0.002).
- Byte Alignment Analysis -> ``byte_alignment``: the same operators, sizes and bandwidth; durations to
  0.01 µs (npuprof reads the tasks' times in ns from the same µs text).
- Operator Dynamic Shape Issues -> ``dynamic_shape`` (the text export has kernel_details' OP State).
- Packet Analysis -> ``small_packets`` (not reported on these runs: the rule checked and found nothing).
- Not covered by an npuprof rule: Environment Variable Issues (no measurement behind it), Vector
  Operator Perf Analysis and Operator No Bound Issues (AI Core PMU ratios), Affinity API Issues (listed
  in the test, so a new category fails it).

On msprof-analyze's own advisor samples (lone ``trace_view.json`` / ``kernel_details.csv``) the advisor
reports only Affinity API Issues (the traces) or nothing (the kernel_details), none of it an npuprof rule's.

The advisor runs on a temporary copy of each run: on a db export it opens the databases in WAL mode,
creating ``-wal``/``-shm`` files beside them; npuprof reads the original, which stays as it was.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cluster_support import interop_python
from realdata import realdata, tree_digest

pytestmark = pytest.mark.slow
RUNS = ["msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
        "msinsight/test/data/pytorch/text/level1/rank1_ascend_pt",
        "msinsight/test/data/pytorch/db/level1/rank0_ascend_pt",
        "msinsight/test/data/pytorch/db/level1/rank1_ascend_pt"]
COVERED = {"Overall Summary": "breakdown", "Byte Alignment Analysis": "byte_alignment",
           "Operator Dynamic Shape Issues": "dynamic_shape", "Packet Analysis": "small_packets"}
NOT_COVERED = {"Environment Variable Issues", "Vector Operator Perf Analysis", "Affinity API Issues",
               "AI Core Performance Analysis", "Operator No Bound Issues"}


def _advisor(run: Path, out: Path) -> tuple[list, str]:
    """The categories the advisor reports (its --agent JSON) and its HTML page as text."""
    tool = interop_python().parent / "msprof-analyze"
    procs = [subprocess.run([str(tool), "advisor", "all", "-d", str(run), "-l", "en", *extra, "-o", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=out)
             for extra in (["--agent"], [])]       # --agent prints the JSON and writes no page
    assert all(p.returncode == 0 for p in procs), procs[0].stderr[-2000:]
    line = [ln for ln in procs[0].stdout.splitlines() if '"status"' in ln][-1]
    result = json.loads(line[line.index("{"):])
    categories = [row[0] for row in result["message"]["problems"]["data"]]
    page = next(out.glob("mstt_advisor_*.html")).read_text()
    page = re.sub(r"<(script|style).*?</\1>", " ", page, flags=re.S)
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))
    return categories, text


def _summary(text: str) -> dict:
    header = "Performance Index Duration(ms) Duration Ratio"
    part = text[text.index(header) + len(header):]
    part = part[:part.index("E2E Time") + 40]
    rows = re.findall(r"((?:-- )?[A-Za-z][A-Za-z0-9 ()]*?) (\d+\.\d{3}) \d+\.\d+%", part)
    return {name.strip(): float(ms) for name, ms in rows}


def _alignment_rows(text: str) -> list:
    start = text.index("abnormal communication operators are as follows")
    part = text[start:text.index("computation", start) if "computation" in text[start:] else None]
    return [(op, int(size), float(d), float(ab), float(bw))
            for op, size, d, ab, bw in re.findall(r"(hcom_\S+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+)", part)]


@pytest.mark.parametrize("relative", RUNS)
def test_every_problem_the_advisor_reports_is_reported_by_the_same_rule(relative, tmp_path, capsys):
    from npuprof.cli import main

    run = realdata(relative)
    before = tree_digest(run)
    copy = tmp_path / "copy" / run.name
    shutil.copytree(run, copy)
    out = tmp_path / "advisor"
    out.mkdir()
    categories, text = _advisor(copy, out)
    unknown = [c for c in categories if c not in COVERED and c not in NOT_COVERED]
    assert not unknown, f"the advisor reports a category no test covers: {unknown}"
    assert main(["advise", str(run), "--json"]) == 0
    (adv,) = json.loads(capsys.readouterr().out)["runs"]
    found = {f["rule"]: f for f in adv["findings"]}
    for category in categories:
        if category in COVERED:
            assert COVERED[category] in found, (category, [r for r in adv["rules"]])
    # and where the advisor finds nothing, the same rule checked and found nothing too
    status = {r["rule"]: r["status"] for r in adv["rules"]}
    for category, rule in COVERED.items():
        if category not in categories and rule != "dynamic_shape":
            assert status[rule] == "checked", (category, rule, status[rule])

    theirs = _summary(text)
    ours = {row["Performance Index"].strip(): row["Duration(ms)"] for row in found["breakdown"]["evidence"]}
    for name in ("Computing Time", "Uncovered Communication Time", "-- SDMA(Tensor Move)", "-- Flash Attention"):
        assert ours[name] == pytest.approx(theirs[name], abs=0.0015), name
    families = ("-- Conv", "-- Matmul", "-- Vector")
    assert sum(ours[n] for n in families) == pytest.approx(sum(theirs[n] for n in families), abs=0.002)
    if "/text/" in relative:
        for name in ("Free Time", "E2E Time"):
            assert ours[name] == pytest.approx(theirs[name], abs=0.0015), name
    else:   # the advisor's db window is longer than torch_npu's own StepTraceTime by exactly its extra Free
        import sqlite3

        db = run / "ASCEND_PROFILER_OUTPUT" / "analysis.db"
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            free_us, stage_us = con.execute("SELECT free, stage FROM StepTraceTime").fetchone()
        assert ours["Free Time"] == pytest.approx(free_us / 1000, abs=0.0015)
        assert ours["E2E Time"] == pytest.approx(stage_us / 1000, abs=0.0015)
        assert ours["E2E Time"] - ours["Free Time"] == pytest.approx(theirs["E2E Time"] - theirs["Free Time"],
                                                                     abs=0.002)
    assert tree_digest(run) == before
    # the at-stake time is what is not computing, per step (one step here)
    assert found["breakdown"]["at_stake_ms"] == pytest.approx(
        ours["Uncovered Communication Time"] + ours["Free Time"], abs=0.002)

    rows = _alignment_rows(text)
    assert rows, "the advisor reported no byte alignment rows"
    mine = [(r["op name"], r["total size(Byte)"], r["duration(us)"], r["abnormal duration(us)"],
             r["bandwidth(GB/s)"]) for r in found["byte_alignment"]["evidence"]]
    assert [(op, size) for op, size, *_ in mine] == [(op, size) for op, size, *_ in rows]
    for (_, _, d, ab, bw), (_, _, td, tab, tbw) in zip(mine, rows):
        assert d == pytest.approx(td, abs=0.01) and ab == pytest.approx(tab, abs=0.01)
        assert bw == pytest.approx(tbw, abs=0.001)


ADVISOR_SAMPLES = ["msprof-analyze/test/ut/advisor/timeline_advice/trace_view.json",
                   "msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice/trace_view.json",
                   "msprof-analyze/test/ut/advisor/compute_advice/data/kernel_details.csv",
                   "msprof-analyze/test/ut/advisor/advisor_backend/compute_advice/kernel_details.csv"]


@pytest.mark.parametrize("relative", ADVISOR_SAMPLES)
def test_on_msprof_analyzes_own_advisor_samples_it_reports_nothing_an_npuprof_rule_covers(relative, tmp_path, capsys):
    """The advisor's samples are lone torch_npu files (no run directory): what ``advisor all`` reports on
    them (the trace: Affinity API only; the kernel_details: nothing) has no npuprof rule, and npuprof,
    which reads runs and traces it recognises, says it cannot read the lone file (exit 1) instead of
    reporting that nothing was found."""
    from npuprof.cli import main

    src = realdata(relative)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(src, folder / src.name)
    out = tmp_path / "advisor"
    out.mkdir()
    tool = interop_python().parent / "msprof-analyze"
    proc = subprocess.run([str(tool), "advisor", "all", "-d", str(folder), "-l", "en", "--agent", "-o", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [ln for ln in proc.stdout.splitlines() if '"status"' in ln][-1]
    message = json.loads(line[line.index("{"):])["message"]
    categories = [row[0] for row in message.get("problems", {}).get("data", [])] if message else []
    assert all(c in NOT_COVERED for c in categories), categories
    assert ("trace_view" in relative) == bool(categories)     # the trace: Affinity API; kernel_details: none
    assert main(["advise", str(src)]) == 1
    assert "is not a directory nor a trace file any reader understands" in capsys.readouterr().err
