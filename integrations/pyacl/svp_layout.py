"""npuprof's exports of an SS928/SS927 run in msprof.pyc's layout (seed 002, :mod:`.svp_names`).

``place/timeline/``: one ``task_time_*`` and one ``acl_*`` Chrome trace per device,
model and iteration, with the manual's fields (task: ``name, pid, tid, ts, dur, ph,
args: Task Type, Stream Id, Task Id``; ACL: ``name, pid, tid, ts, dur, ph, args: Mode,
Process_Id, Thread_Id``). ``place/summary/`` (csv or json):

* ``op_summary_*``: the AA Core metrics msprof.pyc measured (``aa_core_metrics``),
  one file per op_summary it wrote, the manual's columns, values as measured;
* ``op_statistic_{device}_{model}_{current_pic_count}_{iter}``: npuprof's statistics
  of the iteration's tasks by op name (with its task type and stream; ``Task ID`` is
  the op's first task id in the iteration), ``Total Time Ratio(%)`` of the iteration's
  task time; ``current_pic_count`` is that of the vendor's op_summary for the same
  model and iteration (``NA`` without one);
* ``acl_statistic_{device}_{model}_{iter}``: the ACL calls by process, thread, ``Mode``
  (the manual's ``Type``) and name, with their ratio of the iteration's ACL time.

A kind of data the run lacks writes no file (as msprof.pyc). ``place`` is a folder under
``-o`` for another tool's JOB; the JOB itself for npuprof's own collections (``npuprof
collect`` lists what it fetched in :data:`MANIFEST`) or with ``--in-place``.

Example::

    paths = SvpLayout().write(result, "summary", "csv", Path("out/JOBABCDEFGH"))
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from npuprof.analysis.result import AnalysisResult
from npuprof.analysis.table import Table
from npuprof.events import EventKind, EventTable
from npuprof.export.csvfiles import write_csv, write_json
from npuprof.fileio import atomic_write

from .svp_names import (ACL, ACL_STATISTIC_COLUMNS, OP_STATISTIC_COLUMNS, OP_SUMMARY_COLUMNS, TASK_TIME, UNKNOWN,
                        SummaryKey, TimelineKey, acl_statistic_name, op_statistic_name)
from .svp_read import AA_CORE_TABLE

MANIFEST = "npuprof_collect.json"   # in a `npuprof collect` run folder: the JOB/PROF_ folders it fetched
TOOL = "msprof.pyc (SS928/SS927)"


def write_manifest(run_dir: Path, collected: Iterable[Path]) -> Path:
    """List the folders ``npuprof collect`` fetched into ``run_dir`` (relative paths)."""
    return atomic_write(run_dir / MANIFEST, json.dumps(
        {"collected": [str(Path(p).relative_to(run_dir)) for p in collected]}, indent=1))


def collected_by_npuprof(job: Path) -> bool:
    """Whether ``job`` is one that ``npuprof collect`` fetched (its run folder's manifest names it)."""
    job = Path(job).absolute()
    for folder in list(job.parents)[:3]:
        manifest = folder / MANIFEST
        if manifest.is_file():
            try:
                listed = json.loads(manifest.read_text(encoding="utf-8")).get("collected", [])
            except (OSError, ValueError, AttributeError):
                return False
            return str(job.relative_to(folder)) in listed
    return False


@dataclass(frozen=True)
class SvpLayout:
    """msprof.pyc's export layout for one JOB (the ``npuprof_tool_layout`` answer for SS928/SS927 runs)."""

    collected_by_npuprof: bool = False
    tool: str = TOOL

    def write(self, result: AnalysisResult, what: str, fmt: str, place: Path) -> list[Path]:
        """Write ``what`` (``timeline`` or ``summary``) of ``result`` under ``place``; the paths written."""
        if what == "timeline":
            return write_timelines(result.events, Path(place) / "timeline")
        if what == "summary":
            return write_summaries(result, Path(place) / "summary", fmt)
        raise ValueError(f"what={what!r}: expected 'timeline' or 'summary'")


# -- grouping -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Row:
    """One event, decoded."""

    name: str
    type: str
    ts: int
    dur: int
    device: int
    stream: int
    tid: int
    pid: int
    args: dict


def _rows_by_key(events: EventTable, kind: EventKind) -> dict[TimelineKey, list[_Row]]:
    table = events.of_kind(kind)
    out: dict[TimelineKey, list[_Row]] = defaultdict(list)
    if not len(table):
        return out
    names, types = table.column_strings("name"), table.column_strings("type")
    cols = [table[c].tolist() for c in ("ts", "dur", "device", "stream", "tid", "pid")]
    for i, args in enumerate(table.args_objects(table["args"])):
        row = _Row(names[i], types[i], *(c[i] for c in cols), args)
        out[TimelineKey.from_args(max(row.device, 0), args)].append(row)
    return out


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


# -- timeline -----------------------------------------------------------------------------------
def write_timelines(events: EventTable, folder: Path) -> list[Path]:
    """``task_time_*`` and ``acl_*`` files of every device, model and iteration."""
    written = []
    for kind, prefix, process in ((EventKind.KERNEL, TASK_TIME, "Task Scheduler"), (EventKind.API, ACL, "ACL")):
        for key, rows in sorted(_rows_by_key(events, kind).items(), key=lambda kv: _sort_key(kv[0])):
            trace: list[dict] = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process}}
                                 for pid in sorted({r.pid for r in rows})]
            for r in rows:
                ev: dict[str, Any] = {"name": r.name, "pid": r.pid, "tid": r.tid, "ts": _us(r.ts), "dur": _us(r.dur),
                                      "ph": "X"}
                if kind is EventKind.KERNEL:
                    ev["args"] = {"Task Type": r.type or r.args.get("Task Type", "N/A"), "Stream Id": max(r.stream, 0),
                                  "Task Id": r.args.get("Task Id", "N/A")}
                else:
                    ev["args"] = {"Mode": r.args.get("Mode", "N/A"), "Process_Id": r.pid, "Thread_Id": r.tid}
                trace.append(ev)
            written.append(atomic_write(folder / key.file_name(prefix), json.dumps(trace, indent=1)))
    return written


def _sort_key(key: TimelineKey) -> tuple:
    return key.device, key.model_file_name or "", key.model_id, key.iteration


# -- summary ------------------------------------------------------------------------------------
def write_summaries(result: AnalysisResult, folder: Path, fmt: str) -> list[Path]:
    """op_summary (the vendor's AA Core metrics), op_statistic and acl_statistic files."""
    write = write_csv if fmt == "csv" else write_json
    written = []
    metrics = result.tables.get(AA_CORE_TABLE)
    per_summary: dict[SummaryKey, list[dict]] = defaultdict(list)
    for rec in metrics.records() if metrics is not None else []:
        per_summary[SummaryKey.from_cells(rec)].append(rec)
    for key, recs in per_summary.items():
        table = Table("op_summary", list(OP_SUMMARY_COLUMNS), {c: [r[c] for r in recs] for c in OP_SUMMARY_COLUMNS})
        written.append(write(table, folder / (key.file_name()[:-len(".csv")] + f".{fmt}")))
    for key, rows in sorted(_rows_by_key(result.events, EventKind.KERNEL).items(), key=lambda kv: _sort_key(kv[0])):
        pics = _current_pic_count(key, per_summary)
        written.append(write(op_statistic(rows), folder / op_statistic_name(key, pics, fmt)))
    for key, rows in sorted(_rows_by_key(result.events, EventKind.API).items(), key=lambda kv: _sort_key(kv[0])):
        written.append(write(acl_statistic(rows), folder / acl_statistic_name(key, fmt)))
    return written


def _current_pic_count(key: TimelineKey, summaries: dict) -> str:
    """The vendor's current_pic_count for this model and iteration (the largest when it wrote several)."""
    counts = [s.current_pic_count for s in summaries
              if (s.device, s.model_id, s.batch_num) == (key.device, key.model_id, key.iteration)
              and (key.model_file_name is None or s.model_file_name == key.model_file_name)]
    numeric = [c for c in counts if c.isdigit()]
    return max(numeric, key=int) if numeric else (counts[0] if counts else UNKNOWN)


def _statistics(name: str, groups: dict, lead: list[tuple], columns: tuple) -> Table:
    """Rows of ``lead`` cells + ratio, total, count, avg, max, min (µs) per group of durations (ns)."""
    grand = sum(sum(d) for d in groups.values()) or 1
    rows = []
    for cells, durs in zip(lead, groups.values()):
        total = sum(durs)
        rows.append((*cells, round(100.0 * total / grand, 2), _us(total), len(durs), _us(total / len(durs)),
                     _us(max(durs)), _us(min(durs))))
    return Table(name, list(columns), {c: [r[i] for r in rows] for i, c in enumerate(columns)})


def op_statistic(rows: list[_Row]) -> Table:
    """The manual's op_statistic of one iteration's tasks, by op name (with task type and stream)."""
    groups: dict[tuple, list[int]] = {}
    first_task: dict[tuple, Any] = {}
    for r in sorted(rows, key=lambda r: r.ts):
        key = (r.name, r.type, r.stream)
        groups.setdefault(key, []).append(r.dur)
        first_task.setdefault(key, r.args.get("Task Id", "N/A"))
    order = sorted(groups, key=lambda k: (_as_int(first_task[k]), k))
    ordered = {k: groups[k] for k in order}
    lead = [(first_task[k], k[2] if k[2] >= 0 else "N/A", k[0], k[1] or "N/A") for k in order]
    return _statistics("op_statistic", ordered, lead, OP_STATISTIC_COLUMNS)


def acl_statistic(rows: list[_Row]) -> Table:
    """The manual's acl_statistic of one iteration's ACL calls, by process, thread, Mode and name."""
    groups: dict[tuple, list[int]] = {}
    for r in rows:
        groups.setdefault((r.pid, r.tid, str(r.args.get("Mode", "N/A")), r.name), []).append(r.dur)
    order = sorted(groups, key=lambda k: -sum(groups[k]))
    return _statistics("acl_statistic", {k: groups[k] for k in order}, list(order), ACL_STATISTIC_COLUMNS)


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 1 << 62
