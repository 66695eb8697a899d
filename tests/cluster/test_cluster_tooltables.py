"""``npuprof cluster``'s fast path (core/cluster/tool_summary.py, reading core/readers/tool_summary_files.py) on the real 2-rank torch_npu job
(../shared/realdata, read in place; damaged variants on a temporary copy): ranks summarised from the
tool's own step_trace_time.csv / op_statistic.csv / communication*.json give the same cluster tables as
the full parse (``--recompute``), a rank whose file is missing or damaged falls back to the full parse
(alone: the other rank keeps the fast path), npuprof's own runs are always parsed, and nothing is
written into the runs. The fast path against msprof-analyze: tests/interop/test_interop_cluster_real.py.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from realdata import realdata, tree_digest
from cluster_real import JOB, STEP_US

OUT = "ASCEND_PROFILER_OUTPUT"
# table -> its key columns; the others are numbers compared within bounds (the tool's float µs sums vs
# npuprof's exact ns: well under STEP_US; matrix times in ms, bandwidths rounded to 4 places)
KEYS = {"cluster_step_trace_time": 3, "cluster_rank_summary": 1, "cluster_op_statistic": 2,
        "cluster_communication": 4, "cluster_communication_matrix": 6}
BOUNDS = {"Transit Time(ms)": 1e-5, "Transit Size(MB)": 1e-6, "Bandwidth(GB/s)": 0.05}


def _run(src: Path, out: Path, *extra: str, code: int = 0) -> dict:
    from npuprof.cli import main

    assert main(["cluster", str(src), "-o", str(out), "--quiet", *extra]) == code
    return json.loads((out / "cluster_summary.json").read_text())


def _rows(out: Path, table: str) -> tuple[list, dict]:
    with open(out / f"{table}.csv", newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    k = KEYS[table]
    return rows[0], {tuple(r[:k]): r for r in rows[1:]}


def _differences(a: Path, b: Path, table: str, ranks=None) -> list[str]:
    """What differs between two outputs' ``table`` beyond the bounds ("Events": -1 on the fast path)."""
    head, ra = _rows(a, table)
    head_b, rb = _rows(b, table)
    assert head == head_b
    if ranks is not None:     # only the rows of these ranks (tables with a rank column)
        col = head.index("Rank") if "Rank" in head else head.index("Index")
        ra = {k: r for k, r in ra.items() if int(r[col]) in ranks}
        rb = {k: r for k, r in rb.items() if int(r[col]) in ranks}
    if set(ra) != set(rb):
        return [f"{table}: rows {sorted(set(ra) ^ set(rb))[:4]}"]
    problems = []
    for key, row in ra.items():
        for col, x, y in zip(head, row, rb[key]):
            if col == "Events" or x == y:
                continue
            try:
                d = abs(float(x) - float(y))
            except ValueError:
                problems.append(f"{table} {key} {col}: {x!r} vs {y!r}")
                continue
            if d > BOUNDS.get(col, STEP_US):
                problems.append(f"{table} {key} {col}: {x} vs {y}")
    return problems


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict:
    src = realdata(JOB)
    root = tmp_path_factory.mktemp("tooltables")
    before = tree_digest(src)
    fast = _run(src, root / "fast")
    full = _run(src, root / "full", "--recompute")
    assert tree_digest(src) == before           # nothing written into the runs, either way
    return {"src": src, "root": root, "fast": root / "fast", "full": root / "full",
            "fast_summary": fast, "full_summary": full}


def test_fast_path_is_used_and_said(real):
    assert real["fast_summary"]["tool_tables"] == [0, 1] and real["fast_summary"]["events_parsed"] == {}
    assert real["full_summary"]["tool_tables"] == []
    assert set(real["full_summary"]["events_parsed"]) == {"0", "1"}
    with open(real["fast"] / "cluster_rank_summary.csv", newline="") as fh:
        assert [r["Events"] for r in csv.DictReader(fh)] == ["-1", "-1"]      # not counted: no event parsed
    with open(real["full"] / "cluster_rank_summary.csv", newline="") as fh:
        assert all(int(r["Events"]) > 10_000 for r in csv.DictReader(fh))


def test_cli_names_the_ranks_read_from_tool_tables(real, tmp_path, capsys):
    from npuprof.cli import main

    assert main(["cluster", str(real["src"]), "-o", str(tmp_path / "o"), "--quiet", "--no-parquet"]) == 0
    assert "ranks 0-1 summarised from the tool's own tables (--recompute parses their events)" in capsys.readouterr().out
    assert main(["cluster", str(real["src"]), "-o", str(tmp_path / "o"), "--quiet", "--no-parquet",
                 "--recompute"]) == 0
    assert "tool's own tables" not in capsys.readouterr().out


@pytest.mark.parametrize("table", sorted(KEYS))
def test_fast_tables_equal_the_full_parse(real, table):
    problems = _differences(real["fast"], real["full"], table)
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("name", ["cluster_communication.json", "cluster_communication_matrix.json",
                                  "slow_ranks.json", "clock_alignment.json"])
def test_fast_json_files_equal_the_full_parse(real, name):
    from realdata import Bounds, compare_json

    fast, full = (json.loads((real[k] / name).read_text()) for k in ("fast", "full"))
    problems = compare_json(full, fast, Bounds(ms=1e-5, ratio=1e-4 + 1e-9, start_us=0.5, bandwidth_rel=1e-3), name)
    assert not problems, "\n".join(problems[:20])
    assert json.dumps(sorted(fast)) == json.dumps(sorted(full))


def test_alignment_keys_from_communication_json_match_the_events(real):
    """Multi-host jobs align clocks on collectives: the fast path's keys (from each operator's start and
    elapse time in communication.json) are the full parse's, times within 1 µs."""
    from npuprof.cluster.tool_summary import tool_summary
    from npuprof.cluster.worker import RankTask, summarise_rank

    for rank in (0, 1):
        task = RankTask(rank=rank, run_dirs=(str(real["src"] / f"rank{rank}_ascend_pt"),))
        fast, why = tool_summary(task)
        full = summarise_rank(task)
        assert fast is not None, why
        assert fast.align_keys == full.align_keys and len(fast.align_keys) == 4
        assert np.abs(fast.align_start - full.align_start).max() <= 1000
        assert np.abs(fast.align_end - full.align_end).max() <= 1000
        assert (fast.hostname, fast.pid, fast.device_id, fast.world_size) == \
            (full.hostname, full.pid, full.device_id, full.world_size)
        assert fast.parallel_groups == full.parallel_groups and fast.run_dirs == full.run_dirs


def _truncate(path: Path) -> None:
    path.write_text(path.read_text()[:200])


def _bad_count(path: Path) -> None:
    lines = path.read_text().splitlines()
    cells = lines[1].split(",")
    cells[2] = "many"
    path.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")


DAMAGE = {
    "missing step_trace_time.csv": (1, "step_trace_time.csv", lambda p: p.unlink(), "no ASCEND_PROFILER_OUTPUT/step_trace_time.csv"),
    "missing communication_matrix.json": (0, "communication_matrix.json", lambda p: p.unlink(),
                                                         "no ASCEND_PROFILER_OUTPUT/communication_matrix.json"),
    "corrupt op_statistic.csv": (0, "op_statistic.csv", _bad_count, "op_statistic.csv line 2 Count: 'many' is not a number"),
    "truncated communication_matrix.json": (1, "communication_matrix.json", _truncate,
                                            "communication_matrix.json is not JSON"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_rank_with_a_missing_or_damaged_file_falls_back_alone(real, tmp_path, case):
    rank, name, damage, why = DAMAGE[case]
    job = tmp_path / "job"
    shutil.copytree(real["src"], job)                 # a copy: /work/shared is never touched
    for p in job.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    damage(job / f"rank{rank}_ascend_pt" / OUT / name)
    before = tree_digest(job)
    summary = _run(job, tmp_path / "out", "--no-parquet", code=3)     # partial: the damage is named
    assert tree_digest(job) == before
    assert any(i["subject"] == f"rank {rank}" and why in i["problem"] for i in summary["data_quality"]["issues"])
    other = 1 - rank
    assert summary["tool_tables"] == [other]
    assert list(summary["events_parsed"]) == [str(rank)] and summary["events_parsed"][str(rank)].startswith(why)
    for table in ("cluster_step_trace_time", "cluster_communication", "cluster_rank_summary"):
        # the damaged rank's rows are the full parse's exactly, the other rank's the fast path's
        assert not _differences(tmp_path / "out", real["full"], table, ranks={rank})
        _, mine = _rows(tmp_path / "out", table)
        _, full = _rows(real["full"], table)
        _, fast = _rows(real["fast"], table)
        col = 2 if table == "cluster_step_trace_time" else 0
        for key, row in mine.items():
            expect = full if int(row[col]) == rank else fast
            assert row == expect[key], (table, key)


def test_npuprofs_own_runs_are_always_parsed(tmp_path):
    from cluster_support import ensure_cluster_plugin, make_job
    from npuprof.cluster import cluster_analyse
    from npuprof.cluster.tool_summary import OWN_RUN

    ensure_cluster_plugin()
    job = make_job(tmp_path / "job", ranks=3, steps=2, slow_ranks=())
    res = cluster_analyse(job.root, output=tmp_path / "out", backend="serial", formats=("csv",), tool_tables=True)
    assert res.tool_table_ranks == [] and res.parsed == {0: OWN_RUN, 1: OWN_RUN, 2: OWN_RUN}
    assert all(s.events > 0 for s in res.summaries)


@pytest.mark.parametrize("labels, memory, expect", [
    (["NPU 3"], "NPU:0", 3),            # a labelled device wins, as in the full parse
    (["NPU"], "NPU:5", 5),              # no id in the label: the memory file's
    (["NPU 1", "NPU 2"], None, 0),      # two labelled devices, nothing else: 0
])
def test_device_is_found_as_the_full_parse_finds_it(tmp_path, labels, memory, expect):
    from npuprof.readers.tool_summary_files import device_of
    from npuprof.readers.ascend_output import device_from_data
    from npuprof.readers.ascend_trace_view import TraceMeta
    from npuprof.runinfo import RunInfo

    out = tmp_path / OUT
    out.mkdir()
    events = [{"name": "process_labels", "ph": "M", "pid": 100 + i, "tid": 0, "args": {"labels": label}}
              for i, label in enumerate(labels)]
    events.append({"name": "x", "ph": "X", "pid": 1, "tid": 1, "ts": "1.0", "dur": 1, "args": {}})
    (out / "trace_view.json").write_text(json.dumps(events, indent=1))
    if memory:
        (out / "memory_record.csv").write_text("Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),"
                                              f"Total Active(MB),Stream Ptr,Device Type\nAPP,1.0,,2.0,,,{memory}\n")
    info = RunInfo(run_dir=tmp_path)
    assert device_of(info, out) == expect == device_from_data(out, TraceMeta.of(events))


def test_metadata_written_otherwise_sends_the_rank_to_the_full_parse(tmp_path):
    from npuprof.readers.tool_summary_files import Unusable, trace_metadata

    path = tmp_path / "trace_view.json"
    path.write_text('[{"args": {"labels": "NPU 3"}, "name": "process_labels", "ph": "M", "pid": 1, "tid": 0}]')
    with pytest.raises(Unusable):
        trace_metadata(path, (b'"process_labels"',))


def _second_window(src: Path, dest: Path, step: int = 0) -> Path:
    """A copy of ``src`` as another window of its rank (a later run dir name); ``step`` > 0 renumbers its
    step 50 in the three tool files that carry steps (the events keep theirs: only tool_summary is used)."""
    shutil.copytree(src, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    if step:
        out = dest / OUT
        lines = (out / "step_trace_time.csv").read_text().splitlines()
        lines[1] = f"{step}," + lines[1].split(",", 1)[1]
        (out / "step_trace_time.csv").write_text("\n".join(lines) + "\n")
        for name in ("communication.json", "communication_matrix.json"):
            doc = json.loads((out / name).read_text())
            (out / name).write_text(json.dumps({f"step{step}": v for v in doc.values()}))
    return dest


def test_windows_of_a_rank_are_merged_when_their_steps_differ(real, tmp_path):
    from npuprof.cluster.tool_summary import tool_summary
    from npuprof.cluster.worker import RankTask

    first = real["src"] / "rank0_ascend_pt"
    later = _second_window(first, tmp_path / "rank0b_ascend_pt", step=51)
    one, _ = tool_summary(RankTask(rank=0, run_dirs=(str(first),)))
    two, why = tool_summary(RankTask(rank=0, run_dirs=(str(first), str(later))))
    assert one is not None and two is not None, why
    assert two.steps["Step"] == [50, 51] and two.steps["Stage"] == one.steps["Stage"] * 2
    assert [r[0] for r in two.comm_ops] == [50, 51] and two.comm_ops[1][1:] == one.comm_ops[0][1:]
    assert sorted(two.communication) == ["step50", "step51"] and sorted(two.communication_matrix) == ["step50", "step51"]
    assert {(t, c): (n * 2, round(tot * 2, 3)) for t, c, n, tot in one.ops} == \
        {(t, c): (n, round(tot, 3)) for t, c, n, tot in two.ops}
    assert len(two.align_keys) == 8 and len(set(two.align_keys)) == 8
    assert len(two.run_dirs) == 2


def test_windows_sharing_a_step_are_parsed(real, tmp_path):
    from npuprof.cluster.tool_summary import tool_summary
    from npuprof.cluster.worker import RankTask

    first = real["src"] / "rank0_ascend_pt"
    again = _second_window(first, tmp_path / "rank0b_ascend_pt")
    summary, why = tool_summary(RankTask(rank=0, run_dirs=(str(first), str(again))))
    assert summary is None and why == "windows share a step"


def test_a_tool_csv_without_a_needed_column_is_not_used(real, tmp_path):
    """The CSVs come through read_own_tables (as ``show`` reads them): a column the summary needs missing,
    or a blank line between rows, is seen."""
    from npuprof.cluster.tool_summary import tool_summary
    from npuprof.cluster.worker import RankTask

    run = _second_window(real["src"] / "rank0_ascend_pt", tmp_path / "rank0_ascend_pt")
    path = run / OUT / "op_statistic.csv"
    text = path.read_text(encoding="utf-8-sig")
    path.write_text(text.replace("\n", "\n,,,\n", 1), encoding="utf-8")     # a row of empty cells: skipped
    kept, why = tool_summary(RankTask(rank=0, run_dirs=(str(run),)))
    assert kept is not None, why
    path.write_text(text.replace("Core Type", "Core"), encoding="utf-8")
    summary, why = tool_summary(RankTask(rank=0, run_dirs=(str(run),)))
    assert summary is None and why == "op_statistic.csv lacks column(s) ['Core Type']"


def test_the_command_says_which_ranks_were_parsed_and_why(real, tmp_path, capsys):
    from npuprof.cli import main

    job = tmp_path / "job"
    shutil.copytree(real["src"], job)
    for p in job.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (job / "rank1_ascend_pt" / OUT / "step_trace_time.csv").unlink()
    # a tool table missing is partial data (exit 3), however rank 1's numbers are then made
    assert main(["cluster", str(job), "-o", str(tmp_path / "fast"), "--quiet", "--no-parquet"]) == 3
    captured = capsys.readouterr()
    out = captured.out
    assert "rank 0 summarised from the tool's own tables" in out
    assert "rank 1: events parsed (no ASCEND_PROFILER_OUTPUT/step_trace_time.csv" in out
    assert "data quality: partial" in captured.err and "rank 1: the tool's own tables not used" in captured.err
    assert main(["cluster", str(job), "-o", str(tmp_path / "full"), "--quiet", "--no-parquet", "--recompute"]) == 3
    captured = capsys.readouterr()
    assert "events parsed" not in captured.out and "own tables" not in captured.out
    assert "step_trace_time.csv: missing" in captured.err
