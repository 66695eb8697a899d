"""Read what msprof.pyc (SS928/SS927) exported into a JOB: its timelines and its AA Core metrics.

* ``timeline/task_time_*.json`` -> KERNEL events (``Task Id``, ``Task Type``, and the
  file's model and iteration kept in args; device and stream as the file gives them);
* ``timeline/acl_*.json`` -> API events (the call's ``Mode`` kept in args, pid/tid);
* ``summary/op_summary_*.csv`` -> the ``aa_core_metrics`` table (the manual's AA Core
  columns, one row per layer, with the fields of the file name in front) and the
  ``frequency`` table (one row per op_summary: device, model, batch, picture count,
  icache miss rate and frequency, as the names give them). Those are the tool's own
  measurements, which npuprof cannot recompute from events: they are handed over as
  they are (text), for ``npuprof show`` and the manual's exports.

Example::

    events = read_svp_exports(Path("JOBABCDEFGH"), warn=print, add_table=tables.append)
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Callable, Optional

from npuprof.analysis.table import Table
from npuprof.errors import ProfilerDataError
from npuprof.events import EventKind, EventTable
from npuprof.fileio import check_input_file

from .cann_import import complete_events, events_table, int_or, load_json, norm_header, us_to_ns
from .svp_parser import HOW_TO_GET_IT, find_svp_parser, is_raw_job, vendor_exports
from .svp_names import (ACL, FREQUENCY_COLUMNS, OP_SUMMARY, OP_SUMMARY_COLUMNS, SUMMARY_KEY_COLUMNS, TASK_TIME,
                        SummaryKey, TimelineKey)

AA_CORE_TABLE, FREQUENCY_TABLE = "aa_core_metrics", "frequency"
Warn = Callable[[str], None]


def parse_svp_job(job_dir: Path, warn: Warn, add_table: Optional[Callable[[Table], None]] = None,
                  run_parser: bool = True) -> EventTable:
    """The events of an SS928/SS927 JOB: msprof.pyc's exports in it are read; a raw JOB (``data/`` and
    ``info.json.N`` only) is exported by the vendor's msprof.pyc on a copy first (:mod:`.svp_parser`), or
    refused saying how to get it (npuprof decodes no raw SoC data)."""
    job_dir = Path(job_dir)
    if not is_raw_job(job_dir):
        return read_svp_exports(job_dir, warn, add_table)
    parser = find_svp_parser() if run_parser else None
    if parser is None:
        raise ProfilerDataError(job_dir, "holds raw SS928/SS927 data only (data/ + info.json.N) and no "
                                         f"msprof.pyc was found to parse it. {HOW_TO_GET_IT}")
    with vendor_exports(job_dir, parser, warn) as exported:
        return read_svp_exports(exported, warn, add_table)


def read_svp_exports(job_dir: Path, warn: Warn, add_table: Optional[Callable[[Table], None]] = None) -> EventTable:
    """The events of ``job_dir/timeline`` (see module doc); the summary tables go to ``add_table``."""
    tables = []
    for path in sorted((job_dir / "timeline").glob(f"{TASK_TIME}*.json")):
        key = TimelineKey.parse(TASK_TIME, path.name)
        rows = []
        for ev, ts in complete_events(load_json(path)):
            args = ev.get("args")
            args = args if isinstance(args, dict) else {}
            kept = {k: args[k] for k in ("Task Id", "Task Type") if k in args}
            rows.append((ts, us_to_ns(ev.get("dur")) or 0, str(ev.get("name", "")), str(args.get("Task Type", "")),
                         key.device, int_or(args.get("Stream Id"), 0), int_or(ev.get("tid"), 0),
                         int_or(ev.get("pid"), 0), json.dumps({**kept, **key.as_args()})))
        tables.append(events_table(EventKind.KERNEL, rows, warn, path))
    for path in sorted((job_dir / "timeline").glob(f"{ACL}*.json")):
        key = TimelineKey.parse(ACL, path.name)
        rows = []
        for ev, ts in complete_events(load_json(path)):
            args = ev.get("args")
            args = args if isinstance(args, dict) else {}
            kept = {"Mode": args["Mode"]} if "Mode" in args else {}
            rows.append((ts, us_to_ns(ev.get("dur")) or 0, str(ev.get("name", "")), "AscendCL", key.device, -1,
                         int_or(ev.get("tid", args.get("Thread_Id")), 0),
                         int_or(ev.get("pid", args.get("Process_Id")), 0),
                         json.dumps({**kept, **key.as_args()})))
        tables.append(events_table(EventKind.API, rows, warn, path))
    if add_table is not None:
        for table in read_aa_core_metrics(job_dir / "summary", warn):
            add_table(table)
    return EventTable.concat(tables)


def read_aa_core_metrics(summary_dir: Path, warn: Warn) -> list[Table]:
    """The ``aa_core_metrics`` and ``frequency`` tables of the op_summary files (none when there is none)."""
    paths = sorted(summary_dir.glob(f"{OP_SUMMARY}*.csv")) if summary_dir.is_dir() else []
    columns = SUMMARY_KEY_COLUMNS + OP_SUMMARY_COLUMNS
    rows: list[tuple] = []
    keys: list[SummaryKey] = []
    for path in paths:
        key = SummaryKey.parse(path.name)
        if key is None:
            warn(f"{path}: the name does not carry the manual's fields (op_summary_{{device_id}}.{{model_file_name}}."
                 "{model_id}.{batch_num}.{input_pic_num}.{current_pic_count}.{icache_miss_rate}.{frequency}.csv); "
                 "file skipped")
            continue
        body = _read_op_summary(path, warn)
        if body is None:
            continue
        keys.append(key)
        rows.extend(key.cells() + r for r in body)
    if not keys:
        return []
    metrics = Table(AA_CORE_TABLE, list(columns), {c: [r[i] for r in rows] for i, c in enumerate(columns)})
    freq_rows = [(k.device, k.model_file_name, k.model_id, k.batch_num, k.current_pic_count, k.icache_miss_rate,
                  k.frequency) for k in keys]
    frequency = Table(FREQUENCY_TABLE, list(FREQUENCY_COLUMNS),
                      {c: [r[i] for r in freq_rows] for i, c in enumerate(FREQUENCY_COLUMNS)})
    return [metrics, frequency]


def _read_op_summary(path: Path, warn: Warn) -> Optional[list[tuple]]:
    """The manual's AA Core columns of one op_summary (text as written; ``N/A`` for a column the file lacks,
    which is flagged)."""
    check_input_file(path)
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            warn(f"{path}: empty op_summary; file skipped")
            return None
        normed = [norm_header(h) for h in header]
        index = {c: normed.index(norm_header(c)) for c in OP_SUMMARY_COLUMNS if norm_header(c) in normed}
        missing = [c for c in OP_SUMMARY_COLUMNS if c not in index]
        if "Layer Name" not in index:
            warn(f"{path}: no Layer Name column (header: {', '.join(header[:8])}); file skipped")
            return None
        if missing:
            warn(f"{path}: no column {', '.join(missing)}; left N/A")
        out, short = [], 0
        for rec in reader:
            if not rec:
                continue
            if len(rec) < len(header):
                short += 1
                continue
            out.append(tuple(rec[index[c]].strip() if c in index else "N/A" for c in OP_SUMMARY_COLUMNS))
    if short:
        warn(f"{path}: {short} row(s) with missing cells were skipped")
    return out
