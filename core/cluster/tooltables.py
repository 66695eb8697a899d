"""The fast path of cluster analysis: a rank's summary from the summary files another tool wrote.

torch_npu (``*_ascend_pt``) and MindSpore (``*_ascend_ms``) write, beside their events, the per-rank
summaries cluster analysis needs into ``ASCEND_PROFILER_OUTPUT/``. Those files are the tool's own
numbers (the project's ground truth for another tool's run), and reading them takes milliseconds where
parsing the rank's events (``trace_view.json``, ``kernel_details.csv``, the memory CSVs) takes seconds.
This is also all msprof-analyze ``cluster`` reads of such a job.

A rank's :class:`~.worker.RankSummary` is built from these files when *every* one of its run
directories is another tool's (read-only) run holding all four, each parsing:

==============================  =================================================================
``step_trace_time.csv``          ``steps`` (cluster_step_trace_time, cluster_rank_summary, slow ranks)
``op_statistic.csv``             ``ops`` (cluster_op_statistic)
``communication.json``           ``communication``, ``comm_ops`` (cluster_communication), the
                                 alignment keys (each operator's start and elapse time)
``communication_matrix.json``    ``communication_matrix`` (cluster_communication_matrix)
==============================  =================================================================

Otherwise (npuprof's own runs, a trace file, a file missing or damaged, windows sharing a step) the
rank's events are parsed as before (:func:`~.worker.summarise_rank`); :func:`tool_summary` says why.
What such a summary does not carry (nothing the cluster tables read): the event count (``events`` is
-1: "Events" in cluster_rank_summary), link transfers (``links``), host counter series, the memory
timeline, the time span (``t0_ns``/``t1_ns`` 0) - the HTML report, which shows those, parses events.
Nothing is written into the runs.

Example::

    summary, why = tool_summary(RankTask(rank=0, run_dirs=("prof/rank0_ascend_pt",)))
    summary.steps["Stage"] if summary else why
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..analysis.step_breakdown import STEP_TRACE_COLUMNS
from ..analysis.communication import TOTAL_OP, ordinal_keys
from ..errors import ProfilerDataError
from ..fileio import check_input_file
from ..quality import QualityIssue
from ..runinfo import OUTPUT_DIR, RunInfo, read_run_info
from .worker import RankSummary, RankTask, parallel_groups_of

STEP_TRACE = "step_trace_time.csv"
OP_STATISTIC = "op_statistic.csv"
COMMUNICATION = "communication.json"
COMMUNICATION_MATRIX = "communication_matrix.json"
TOOL_FILES = (STEP_TRACE, OP_STATISTIC, COMMUNICATION, COMMUNICATION_MATRIX)
OP_COLUMNS = ("OP Type", "Core Type", "Count", "Total Time(us)")
# step_trace_time columns every torch_npu/MindSpore version writes; the others (Preparing, Bubble, the
# receive-excluded communication ...) came and went across versions: absent means not measured (NaN)
STEP_CORE_COLUMNS = ("Step", "Computing", "Communication(Not Overlapped)", "Free")
OWN_RUN = "npuprof's own run: its events are the data"
_STEP_KEY = re.compile(r"^step(-?\d*)$")


class _Unusable(Exception):
    """The tool's tables of a run cannot stand in for its events (the message says why)."""


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise _Unusable(f"no {path.parent.name}/{path.name}")
    try:
        check_input_file(path)
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError, ProfilerDataError) as e:
        raise _Unusable(f"{path.name} unreadable: {e}") from None


def _number(text: Any, what: str) -> float:
    try:
        x = float(str(text).strip())
    except ValueError:
        raise _Unusable(f"{what}: {str(text)[:40]!r} is not a number") from None
    if not math.isfinite(x):
        raise _Unusable(f"{what}: {text!r} is not finite")
    return x


def _csv_rows(path: Path, columns: tuple) -> list[dict]:
    """The rows of one of the tool's CSVs as :func:`npuprof.export.own_tables.read_own_tables` reads them
    (``show`` displays the same files), as dicts of strings; ``columns`` are the ones it must have."""
    from ..export.own_tables import read_own_tables
    from ..readers.ascend_contract import cut_short

    if cut_short(path):
        raise _Unusable(f"{path.name} cut short (its last row ends no line)")
    table = read_own_tables(path.parent.parent, [path.stem]).get(path.stem)
    if table is None:
        raise _Unusable(f"no {path.parent.name}/{path.name} (or not readable as CSV)")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise _Unusable(f"{path.name} lacks column(s) {missing}")
    return [row for row in table.records() if any(v.strip() for v in row.values())]


def _steps(path: Path) -> tuple[list[list], list[str]]:
    """Rows of step_trace_time.csv as [step, col1, ...] in STEP_TRACE_COLUMNS order (NaN for a column the
    file does not have), and the columns it does not have."""
    out = []
    rows = _csv_rows(path, STEP_CORE_COLUMNS)
    absent = [c for c in STEP_TRACE_COLUMNS if rows and c not in rows[0]]
    for i, row in enumerate(rows, 2):
        step = _number(row["Step"], f"{path.name} line {i} Step")
        if step != int(step):
            raise _Unusable(f"{path.name} line {i}: Step {row['Step']!r} is not a step number")
        out.append([int(step)] + [math.nan if c in absent else _number(row[c], f"{path.name} line {i} {c}")
                                  for c in STEP_TRACE_COLUMNS[1:]])
    return out, absent


def _ops(path: Path) -> list[tuple]:
    out = []
    for i, row in enumerate(_csv_rows(path, OP_COLUMNS), 2):
        count = _number(row["Count"], f"{path.name} line {i} Count")
        if count != int(count) or count < 0:
            raise _Unusable(f"{path.name} line {i}: Count {row['Count']!r}")
        out.append((str(row["OP Type"]), str(row["Core Type"]), int(count),
                    _number(row["Total Time(us)"], f"{path.name} line {i} Total Time(us)")))
    return out


def _json(path: Path) -> dict:
    try:
        doc = json.loads(_read_text(path))
    except ValueError as e:
        raise _Unusable(f"{path.name} is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise _Unusable(f"{path.name} is not a JSON object")
    return doc


def _operators(doc: dict, name: str) -> list[tuple[str, str, str, dict]]:
    """(step key, kind, operator, info) of a communication(_matrix).json, Total Op Info included;
    raises _Unusable unless it has the tools' step -> kind -> operator -> object layout."""
    out = []
    for step, kinds in doc.items():
        if not _STEP_KEY.match(str(step)) or not isinstance(kinds, dict):
            raise _Unusable(f"{name}: {str(step)[:40]!r} is not a step of operators")
        for kind, ops in kinds.items():
            if not isinstance(ops, dict):
                raise _Unusable(f"{name}: {step} > {kind} is not an object of operators")
            for op, info in ops.items():
                if not isinstance(info, dict):
                    raise _Unusable(f"{name}: {step} > {kind} > {op[:60]} is not an object")
                out.append((str(step), str(kind), str(op), info))
    return out


def _step_of(key: str) -> int:
    m = _STEP_KEY.match(key)
    return int(m.group(1)) if m and m.group(1) not in ("", "-") else -1


def _comm_ops(comm: dict) -> tuple[list, list]:
    """comm_ops rows and the operators' (start ns, end ns, step, op type, group) from a communication.json
    (the alignment keys are made of the latter: :func:`npuprof.analysis.communication.ordinal_keys`)."""
    from ..readers.ascend_output import comm_op_type

    agg: dict = {}
    spans = []
    for step_key, _kind, op, info in _operators(comm, COMMUNICATION):
        if op == TOTAL_OP:
            continue
        t = info.get("Communication Time Info")
        if not isinstance(t, dict):
            raise _Unusable(f"{COMMUNICATION}: {step_key} > {op[:60]} has no Communication Time Info")
        name, _, group = op.rpartition("@")
        if not name:
            raise _Unusable(f"{COMMUNICATION}: operator {op[:60]!r} names no group")
        elapse = _number(t.get("Elapse Time(ms)"), f"{COMMUNICATION} {op[:60]} Elapse Time(ms)")
        wait = _number(t.get("Wait Time(ms)"), f"{COMMUNICATION} {op[:60]} Wait Time(ms)")
        start = _number(t.get("Start Timestamp(us)"), f"{COMMUNICATION} {op[:60]} Start Timestamp(us)")
        step, typ = _step_of(step_key), comm_op_type(name)
        a = agg.setdefault((step, typ, group), [0, 0.0, 0.0])
        a[0] += 1
        a[1] += elapse * 1e3
        a[2] += wait * 1e3
        ts = int(round(start * 1e3))
        spans.append((ts, ts + int(round(elapse * 1e6)), step, typ, group))
    rows = [(k[0], k[1], k[2], v[0], round(v[1], 3), round(v[2], 3)) for k, v in sorted(agg.items())]
    return rows, spans


def _matrix(doc: dict) -> dict:
    for step, kind, op, links in _operators(doc, COMMUNICATION_MATRIX):
        for link, info in links.items():
            src, sep, dst = str(link).partition("-")
            if not (sep and src.isdigit() and dst.isdigit() and isinstance(info, dict)):
                raise _Unusable(f"{COMMUNICATION_MATRIX}: {step} > {op[:60]} > {str(link)[:40]!r} is not a link")
            for k in ("Transit Time(ms)", "Transit Size(MB)"):
                _number(info.get(k, 0), f"{COMMUNICATION_MATRIX} {op[:60]} {link} {k}")
    return doc


def _device(info: RunInfo, out_dir: Path) -> int:
    """The rank's device as the full parse finds it (:func:`npuprof.readers.ascend_output.device_from_data`:
    profiler_info, else the trace's ``NPU <n>`` process label, the memory files' ``NPU:<n>``, msprof's
    encoded device process ids), from the trace's metadata events and the memory files' heads only."""
    if info.device_id is not None:
        return info.device_id
    from ..readers.ascend_output import _TraceMeta, device_from_data

    trace = out_dir / "trace_view.json"
    return device_from_data(out_dir, _TraceMeta.of(_trace_metadata(trace, (b'"process_labels"',))),
                            lambda: _TraceMeta.of(_trace_metadata(trace, (b'"process_labels"',
                                                                          b'"process_sort_index"'))))


def _trace_metadata(path: Path, needles: tuple) -> list:
    """The metadata events named by ``needles`` (``b'"process_labels"'``, ...) of a trace_view.json, found
    in its text (each a flat object with one ``args`` object, its name first, as torch_npu and MindSpore
    write them) without parsing the whole trace; raises _Unusable for one written otherwise."""
    import mmap

    out: list = []
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for needle in needles:
                pos = data.find(needle)
                while pos >= 0:
                    start = data.rfind(b"{", max(0, pos - 4096), pos)
                    end = data.find(b"}", pos)
                    end = data.find(b"}", end + 1) if end >= 0 else -1
                    try:
                        ev = json.loads(data[start:end + 1]) if start >= 0 and end >= 0 else None
                    except ValueError:
                        ev = None
                    if not isinstance(ev, dict):     # not the usual layout: let the full parse read it
                        raise _Unusable(f"{path.name}: a {needle.decode()} event not in the usual layout")
                    out.append(ev)
                    pos = data.find(needle, pos + 1)
    except (OSError, ValueError):      # no trace, or an empty one (mmap of 0 bytes)
        return []
    return out


def _window(run_dir: Path) -> dict:
    """One run directory's part of a summary from its tool tables (raises _Unusable)."""
    if not run_dir.is_dir():
        raise _Unusable("a trace file, no tool tables")
    try:
        info = read_run_info(run_dir)
    except ProfilerDataError as e:
        raise _Unusable(f"profiler_info unreadable: {e}") from None
    if info.writable:
        raise _Unusable(OWN_RUN)
    out_dir = run_dir / OUTPUT_DIR
    steps, absent = _steps(out_dir / STEP_TRACE)
    ops = _ops(out_dir / OP_STATISTIC)
    comm = _json(out_dir / COMMUNICATION)
    comm_ops, spans = _comm_ops(comm)
    matrix = _matrix(_json(out_dir / COMMUNICATION_MATRIX))
    traces = [str(out_dir / n) for n in ("trace_view.json", "trace_view.json.gz") if (out_dir / n).exists()]
    issues = [QualityIssue(f"{run_dir.name}/{OUTPUT_DIR}/{STEP_TRACE}",
                           f"has no {', '.join(absent)} column(s) (an older {info.origin} writes none): not measured",
                           tuple(f"cluster_step_trace_time.{c}" for c in absent))] if absent else []
    issues += [QualityIssue(f"{run_dir.name}/{OUTPUT_DIR}/{Path(t).name}", "cut short (its JSON is not closed)",
                            ("merged timeline", "per-rank traces", "report"))
               for t in traces if not _json_closed(Path(t))]
    return dict(info=info, out_dir=out_dir, steps=steps, ops=ops, communication=comm, comm_ops=comm_ops,
                spans=spans, matrix=matrix, traces=traces, issues=issues)


def _json_closed(path: Path) -> bool:
    """False for a plain JSON file whose last non-blank byte closes no array or object (a file cut short);
    a check of its tail only, not a parse. Compressed files are taken as they are."""
    if path.suffix == ".gz":
        return True
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - 256))
            tail = fh.read().rstrip()
    except OSError:
        return False
    return tail.endswith((b"]", b"}"))


def _merge_steps(dicts: list[dict], what: str) -> dict:
    out: dict = {}
    for d in dicts:
        shared = set(out) & set(d)
        if shared:
            raise _Unusable(f"windows share {what} {sorted(shared)[:3]}")
        out.update(d)
    return out


def tool_summary(task: RankTask) -> tuple[Optional[RankSummary], str]:
    """``(summary, "")`` from the rank's tool tables (see the module doc), or ``(None, why not)``."""
    try:
        windows = [_window(Path(d)) for d in task.run_dirs]
        rows = sorted((r for w in windows for r in w["steps"]), key=lambda r: r[0])
        steps_seen = [r[0] for r in rows]
        if len(set(steps_seen)) != len(steps_seen):
            raise _Unusable("windows share a step")
        communication = _merge_steps([w["communication"] for w in windows], "communication steps")
        matrix = _merge_steps([w["matrix"] for w in windows], "matrix steps")
        first = windows[0]
        device = _device(first["info"], first["out_dir"])
    except _Unusable as e:
        return None, str(e)
    ops: dict = {}
    for w in windows:
        for typ, core, count, total in w["ops"]:
            a = ops.setdefault((typ, core), [0, 0.0])
            a[0] += count
            a[1] += total
    # windows share no step (checked above): ordinals over all of them are each window's own
    spans = sorted((s for w in windows for s in w["spans"]), key=lambda s: s[0])
    info = first["info"]
    return RankSummary(
        rank=task.rank, hostname=info.hostname, pid=info.pid, device_id=device, world_size=info.world_size,
        run_dirs=[str(d) for d in task.run_dirs], events=-1,
        steps={c: [r[i] for r in rows] for i, c in enumerate(STEP_TRACE_COLUMNS)},
        ops=[(t, c, n, round(tot, 3)) for (t, c), (n, tot) in ops.items()],
        comm_ops=sorted(r for w in windows for r in w["comm_ops"]), links=[],
        communication=communication, communication_matrix=matrix,
        align_keys=ordinal_keys(s[2:] for s in spans),
        align_start=np.array([s[0] for s in spans], dtype=np.int64),
        align_end=np.array([s[1] for s in spans], dtype=np.int64),
        host_series={}, t0_ns=0, t1_ns=0, traces=[t for w in windows for t in w["traces"]],
        issues=[i for w in windows for i in w["issues"]],
        parallel_groups=parallel_groups_of(task.run_dirs)), ""
