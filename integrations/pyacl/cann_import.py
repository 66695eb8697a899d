"""Import what CANN's msprof produces for a PROF_ (or SVP JOB) directory.

Sources, in order of preference:

* ``msprof_*.db`` (``PROF_x/`` or its ``mindstudio_profiler_output/``), read
  by :mod:`npuprof.readers.ascend_db` (the reader of every Ascend profiler
  database): TASK + COMPUTE_TASK_INFO -> KERNEL, CANN_API -> API,
  MSTX_EVENTS -> RANGE/MARK, COMMUNICATION_OP (and its tasks) -> COMM;
* text exports in ``mindstudio_profiler_output/``: ``op_summary_*.csv``
  (else ``task_time_*.csv``) -> KERNEL, the ``msprof_*.json`` timeline's
  CANN process -> API (and its Communication process -> COMM), and
  ``msprof_tx_*.csv`` -> RANGE/MARK;
* (an SS928/SS927 ``JOB*`` is read by :mod:`.svp_read`).

Launch links (``corr``): the db's ``connectionId`` of TASK, CANN_API and
COMMUNICATION_OP rows; in the timeline, the ``HostToDevice`` flows (CANN
node -> hardware task, matched to the complete events at the flows' exact
pid/tid/ts, as msprof draws them), else ``connection_id`` args. Kernels read
from ``op_summary`` take the link of the timeline's hardware task with the
same device, stream, task id and start time. Nothing is linked by time
proximity.

When a directory has only raw data and an ``msprof`` executable is found
(PATH, ``$ASCEND_TOOLKIT_HOME``/``$ASCEND_HOME_PATH`` tools), it is run with
``--export=on`` first. Headers are matched loosely (case, spaces, units,
``Block Dim``/``Block Num``, ``OP Type``/``Op Type``, ``Device_id``/``Device
ID``), ``N/A`` and tab-terminated timestamps are accepted. CSV/DB times are
taken as epoch µs/ns (msprof's "local time" on a UTC host).

Example::

    table = parse_prof_dir(Path("PROF_000001_20220129014731273_KEDKPORHMAGPGDCC"), warn=print)
"""
from __future__ import annotations

import csv
import glob
import json
import logging
import math
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import numpy as np

from npuprof.events import KERNEL_TENSOR_COLUMNS
from npuprof.errors import ProfilerDataError
from npuprof.events import EventKind, EventTable, offset_corr
from npuprof.fileio import check_input_file
from npuprof.traceflows import flow_ends, hashable, link_id

# the CANN timeline reader (its trace decoder) and the database reader (sqlite3) are imported by the functions
# that read a PROF_ directory: every ``npuprof analyse`` asks this plugin whether a run references one

log = logging.getLogger("npuprof")
SOURCE = "cann"
PROF_RE = re.compile(r"^PROF_\d+_\d+_[0-9a-zA-Z]+$")
OUTPUT = "mindstudio_profiler_output"
OWNED_MARKER = ".npuprof_cann_root"  # in a dir whose PROF_* belong to npuprof run dirs
NO_MSPROF_ENV = "NPUPROF_NO_MSPROF"
MSPROF_TIMEOUT = 3600
Warn = Callable[[str], None]

_ALIASES = {
    "device": ("deviceid", "device"),
    "model_id": ("modelid",),
    "task_id": ("taskid",),
    "stream_id": ("streamid",),
    "name": ("opname", "name", "kernelname", "layername"),
    "type": ("optype", "type", "kerneltype", "layertype"),
    "task_type": ("tasktype", "acceleratorcore"),
    "start": ("taskstarttimeus", "taskstarttime", "starttimeus", "taskstartus", "starttime"),
    "dur": ("taskdurationus", "taskduration", "durationus", "tasktimeus", "duration"),
    "block": ("blocknum", "blockdim"),
    "Input Shapes": ("inputshapes",),
    "Input Data Types": ("inputdatatypes",),
    "Input Formats": ("inputformats",),
    "Output Shapes": ("outputshapes",),
    "Output Data Types": ("outputdatatypes",),
    "Output Formats": ("outputformats",),
}
# op_summary's tensor description columns, kept in a kernel's args under their own names
TENSOR_COLUMNS = KERNEL_TENSOR_COLUMNS


def norm_header(name: str) -> str:
    """'Task Start Time(us)' -> 'taskstarttimeus' (case, spaces, punctuation dropped)."""
    return re.sub(r"[^0-9a-z]", "", name.strip().lower())


def column_map(header: list) -> dict:
    """Canonical key -> column index for the aliases present in ``header``."""
    normed = [norm_header(h) for h in header]
    out = {}
    for key, aliases in _ALIASES.items():
        for alias in aliases:
            if alias in normed:
                out[key] = normed.index(alias)
                break
    return out


_DECIMAL_RE = re.compile(r"(-?)([0-9]*)(?:\.([0-9]*))?")


def us_to_ns(text: Any) -> Optional[int]:
    """'1795306627735157.750\\t' -> 1795306627735157750 (exact, no float rounding).

    None for N/A, text that is not a number, infinities and NaN, and values
    of any other type (a list or object where a time belongs). The result
    may exceed int64; :func:`events_table` drops such rows with a warning.

    Example::

        >>> us_to_ns("12.5"), us_to_ns("1.5e3"), us_to_ns("N/A"), us_to_ns([1])
        (12500, 1500000, None, None)
    """
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text * 1000
    if isinstance(text, float):
        text = repr(text)   # the shortest exact decimal; non-finite ones are refused below
    if not isinstance(text, str):
        return None
    s = text.strip().strip('"')
    m = _DECIMAL_RE.fullmatch(s)
    if m and (m.group(2) or m.group(3)):
        if len(m.group(2)) > 30:
            return None   # far beyond any time (and beyond int()'s digit limit for huge ones)
        frac = ((m.group(3) or "") + "000")[:3]
        value = int(m.group(2) or 0) * 1000 + int(frac)
        return -value if m.group(1) else value
    try:
        f = float(s)   # exponent notation
    except ValueError:
        return None
    return int(round(f * 1000)) if math.isfinite(f) and abs(f) < 1e30 else None


def is_prof_dir(path: Path) -> bool:
    """A CANN PROF_ directory (with CANN's data: host/, device_N/, msprof's exports), or an SVP JOB
    directory (data/ + info.json.N). A folder named PROF_* holding none of them (npuprof's outputs of
    a PROF_ directory, under ``npuprof_output/``) is not one."""
    if not path.is_dir():
        return False
    if PROF_RE.match(path.name):
        return (path / "host").is_dir() or (path / OUTPUT).is_dir() or any(path.glob("device_*")) or \
            any(path.glob("msprof_*.db"))
    if path.name.startswith("JOB") and (path / "data").is_dir() and any(path.glob("info.json*")):
        return True
    return (path / OUTPUT).is_dir() and (path / "host").is_dir()


def owned_by_npuprof(path: Path) -> bool:
    return (path.parent / OWNED_MARKER).exists()


# -- msprof ---------------------------------------------------------------------------------
def find_msprof() -> Optional[str]:
    """The msprof executable, or None (NPUPROF_NO_MSPROF=1 disables its use)."""
    if os.environ.get(NO_MSPROF_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    exe = shutil.which("msprof")
    if exe:
        return exe
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        root = os.environ.get(var)
        if root:
            for rel in ("tools/profiler/bin/msprof", "bin/msprof"):
                cand = os.path.join(root, rel)
                if os.access(cand, os.X_OK):
                    return cand
    return None


def has_exports(prof_dir: Path) -> bool:
    from npuprof.readers.cann_timeline import has_device_timelines

    out = prof_dir / OUTPUT
    text = out.is_dir() and any(out.glob("*.csv")) or out.is_dir() and any(out.glob("msprof*.json"))
    db = any(prof_dir.glob("msprof_*.db")) or (out.is_dir() and any(out.glob("msprof_*.db")))
    svp = (prof_dir / "timeline").is_dir()
    return bool(text or db or svp or has_device_timelines(prof_dir))


def has_raw_data(prof_dir: Path) -> bool:
    """CANN's raw collection files (``device_N/data``, ``host/data``), which only msprof can export."""
    return any(p.is_dir() and any(p.iterdir()) for p in (*prof_dir.glob("device_*/data"), prof_dir / "host" / "data"))


def export_with_msprof(prof_dir: Path, exe: str, warn: Warn, export_type: str = "text",
                       timeout: float = MSPROF_TIMEOUT) -> bool:
    """Run ``msprof --export=on --output=<prof_dir>``; False (with a warning) on failure."""
    cmd = [exe, "--export=on", f"--output={prof_dir}"]
    if export_type == "db":
        cmd.append("--type=db")
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                              check=False, text=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        warn(f"{prof_dir}: running msprof failed ({e})")
        return False
    if proc.returncode != 0:
        tail = proc.stdout.strip().splitlines()[-3:] if proc.stdout else []
        warn(f"{prof_dir}: msprof --export exited {proc.returncode}: {' | '.join(tail)}")
        return False
    return True


# -- readers --------------------------------------------------------------------------------
def _latest(paths: Iterable[Path]) -> list:
    return sorted(paths)


# (row index, what, low, high) of the numeric cells of a row, by EventTable column dtype
_ROW_LIMITS = ((0, "time", -(1 << 63), (1 << 63) - 1), (1, "duration", -(1 << 63), (1 << 63) - 1),
               (4, "device", -(1 << 15), (1 << 15) - 1), (5, "stream", -(1 << 31), (1 << 31) - 1),
               (6, "thread", -(1 << 63), (1 << 63) - 1), (7, "pid", -(1 << 63), (1 << 63) - 1))


def _row_problem(row: tuple) -> Optional[str]:
    for i, what, low, high in _ROW_LIMITS:
        if not low <= row[i] <= high:
            return f"{what} {row[i]} out of range"
    if len(row) == 10 and not -1 <= row[9] < 1 << 63:
        return f"connection id {row[9]} out of range"
    return None


def events_table(kind: EventKind, rows: list, warn: Warn, where: Path) -> Optional[EventTable]:
    """Rows (ts, dur, name, type, device, stream, tid, pid, args JSON[, corr]) -> a table;
    rows whose numbers do not fit the table's columns are dropped with one warning."""
    good, bad, example = [], 0, ""
    for row in rows:
        problem = _row_problem(row)
        if problem is None:
            good.append(row)
        else:
            bad += 1
            example = example or problem
    if bad:
        warn(f"{where}: {bad} {kind.name.lower()} row(s) skipped: values out of range (first: {example})")
    if not good:
        return None
    ts, dur, name, typ, dev, stream, tid, pid, args, *corr = zip(*(r if len(r) == 10 else (*r, -1) for r in good))
    return EventTable.from_records(ts=list(ts), dur=list(dur), kind=int(kind), name=list(name), type=list(typ),
                                   device=list(dev), stream=list(stream), tid=list(tid), pid=list(pid),
                                   args=list(args), corr=list(corr[0]), source=SOURCE)


def int_or(text: Any, default: int = -1) -> int:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return default


def read_op_summary(path: Path, warn: Warn, links: Optional[dict] = None) -> Optional[EventTable]:
    """op_summary_*.csv or task_time_*.csv -> KERNEL events.

    ``links``: (device, stream, task id, start ns) -> connection id of the
    timeline's hardware tasks (see :func:`read_timeline`); a row with the same
    task identity takes that link.
    """
    links = links or {}
    check_input_file(path)
    rows = []
    skipped = 0
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            return None
        cols = column_map(header)
        missing = [k for k in ("name", "start", "dur") if k not in cols]
        if missing:
            raise ProfilerDataError(path, f"no column for {', '.join(missing)} (header: {', '.join(header[:12])})")
        for rec in reader:
            if len(rec) < len(header):
                skipped += 1
                continue
            start = us_to_ns(rec[cols["start"]])
            dur = us_to_ns(rec[cols["dur"]])
            if start is None:
                skipped += 1
                continue
            get = lambda k, d="": rec[cols[k]].strip() if k in cols else d  # noqa: E731
            args = {k: get(k) for k in ("model_id", "task_id", "task_type", "block") if k in cols}
            args.update((k, get(k)) for k in TENSOR_COLUMNS if k in cols and get(k) not in ("", "N/A"))
            device, stream = int_or(get("device"), 0), int_or(get("stream_id"))
            corr = links.get((device, stream, int_or(get("task_id")), start), -1)
            rows.append((start, dur or 0, get("name"), get("type"), device, stream, int_or(get("stream_id"), 0), 0,
                         json.dumps(args), corr))
    if skipped:
        warn(f"{path}: {skipped} row(s) without a usable start time or with missing cells were skipped")
    return events_table(EventKind.KERNEL, rows, warn, path)


def read_tx_csv(path: Path, warn: Warn) -> Optional[EventTable]:
    """msprof_tx_*.csv -> RANGE (start != end) and MARK events."""
    check_input_file(path)
    rows = []
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            return None
        normed = [norm_header(h) for h in header]

        def idx(*names: str) -> Optional[int]:
            for n in names:
                if n in normed:
                    return normed.index(n)
            return None

        i_start, i_end = idx("starttimeus", "starttime"), idx("endtimeus", "endtime")
        i_msg, i_tid, i_pid, i_kind = idx("message"), idx("tid"), idx("pid"), idx("eventtype")
        if i_start is None or i_msg is None:
            raise ProfilerDataError(path, "no Start_time(us) or message column")
        for rec in reader:
            if len(rec) <= max(i_start, i_msg):
                continue
            cell = lambda i: rec[i] if i is not None and i < len(rec) else None  # noqa: E731
            t0 = us_to_ns(rec[i_start])
            t1 = us_to_ns(cell(i_end)) if i_end is not None else t0
            if t0 is None:
                continue
            t1 = t0 if t1 is None else t1
            rows.append((t0, max(t1 - t0, 0), rec[i_msg], cell(i_kind) or "", -1, -1, int_or(cell(i_tid), 0),
                         int_or(cell(i_pid), 0), "{}"))
    marks = [r for r in rows if r[1] == 0 and "marker" in r[3]]
    ranges = [r for r in rows if not (r[1] == 0 and "marker" in r[3])]
    return EventTable.concat([events_table(EventKind.MARK, marks, warn, path),
                              events_table(EventKind.RANGE, ranges, warn, path)])


def load_json(path: Path) -> Any:
    check_input_file(path)
    try:
        import orjson

        return orjson.loads(path.read_bytes())
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ProfilerDataError(path, f"is not valid JSON ({e})") from None


def read_timeline(path: Path, warn: Warn, want_kernels: bool, links: Optional[dict] = None) -> Optional[EventTable]:
    """msprof_*.json (array or {traceEvents}) -> API (CANN), COMM, and KERNEL when asked.

    Launch links come from the ``HostToDevice`` flows when the file has
    any, else from ``connection_id`` args (never a mix of both). ``links``,
    when given, receives (device, stream, task id, start ns) -> link of every
    linked hardware task, kernels asked for or not (see
    :func:`read_op_summary`).
    """
    data = load_json(path)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ProfilerDataError(path, "holds neither a JSON array nor traceEvents")
    proc: dict = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_name":
            margs = ev.get("args")
            proc[hashable(ev.get("pid"))] = str(margs.get("name", "")) if isinstance(margs, dict) else ""
    flows = flow_ends(events, ("HostToDevice",), us_to_ns)
    api, comm, kern = [], [], []
    no_ts = 0
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        ts = us_to_ns(ev.get("ts"))
        if ts is None:
            no_ts += 1
            continue
        dur = us_to_ns(ev.get("dur")) or 0
        pname = proc.get(hashable(ev.get("pid")), "")
        name = str(ev.get("name", ""))
        tid = int_or(ev.get("tid"), 0)
        args = ev.get("args")
        args = args if isinstance(args, dict) else {}
        if flows:
            corr = flows.get((hashable(ev.get("pid")), hashable(ev.get("tid")), ts), -1)
        else:
            corr = link_id(args.get("connection_id"))
        if pname in ("CANN", "AscendCL", "Runtime", "GE") or "@" in name and pname == "":
            level, _, api_name = name.partition("@") if "@" in name else (pname, "", name)
            api.append((ts, dur, api_name, level, -1, -1, tid, 0, "{}", corr))
        elif pname in ("Communication", "HCCL") or pname.startswith("Communication"):
            comm.append((ts, dur, name, str(args.get("Task Type", "")), _device_of(ev), -1, tid, 0, "{}", corr))
        elif pname in ("Ascend Hardware", "Task Scheduler"):
            device, stream = _device_of(ev), int_or(args.get("Physic Stream Id", tid))
            if links is not None and corr >= 0:
                links[(device, stream, int_or(args.get("Task Id")), ts)] = corr
            if want_kernels:
                kern.append((ts, dur, name, str(args.get("Task Type", "")), device, stream, tid, 0,
                             json.dumps({k: args[k] for k in ("Model Id", "Task Id", "Task Type") if k in args}),
                             corr))
    if no_ts:
        warn(f"{path}: {no_ts} complete event(s) without a numeric ts skipped")
    return EventTable.concat([events_table(EventKind.API, api, warn, path),
                              events_table(EventKind.COMM, comm, warn, path),
                              events_table(EventKind.KERNEL, kern, warn, path)])


def _device_of(ev: dict) -> int:
    pid = ev.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1023:
        dev = pid & 0x1F  # synthetic pid = (realPid << 10) | (index << 5) | deviceId
        return -1 if dev == 31 else dev
    return 0


def complete_events(data: Any) -> Any:
    """(event, start ns) of the complete ("X") events with a usable ts in a Chrome trace (array or object)."""
    for ev in data if isinstance(data, list) else data.get("traceEvents", []):
        if isinstance(ev, dict) and ev.get("ph") == "X":
            ts = us_to_ns(ev.get("ts"))
            if ts is not None:
                yield ev, ts


def read_db(path: Path, warn: Warn) -> EventTable:
    """msprof_*.db -> KERNEL, API, RANGE/MARK, COMM events, read by the shared
    reader of the Ascend profiler databases (:mod:`npuprof.readers.ascend_db`:
    by column name, each table and optional column optional).

    A row with an unreadable time or id is skipped with a warning naming the
    file and table; a file that is not a readable database, or holds no event,
    raises ProfilerDataError naming it.
    """
    from npuprof.readers.ascend_db import read_ascend_db

    return read_ascend_db(path, warn, source=SOURCE).events


# -- one directory ------------------------------------------------------------------------------
def parse_prof_dir(prof_dir: Path, warn: Warn, run_msprof: bool = True, note: Optional[Warn] = None) -> EventTable:
    """All events of one PROF_ directory (see module doc). ``warn`` is told of every input lost,
    ``note`` (default ``warn``) of what is left out on purpose. An SS928/SS927 JOB is
    :func:`.svp_read.parse_svp_job`'s."""
    from npuprof.readers.cann_timeline import has_device_timelines, read_device_timelines

    prof_dir = Path(prof_dir)
    if run_msprof and not has_exports(prof_dir):
        exe = find_msprof()
        if exe is not None:
            export_with_msprof(prof_dir, exe, warn)
        elif has_raw_data(prof_dir):
            warn(f"{prof_dir}: holds raw CANN data only and no msprof executable was found to export it "
                 "(install the CANN toolkit or run 'msprof --export=on' where it is installed)")
        else:
            raise ProfilerDataError(prof_dir, "holds nothing npuprof reads: no msprof_*.db, no "
                                              "mindstudio_profiler_output/ export, no device_N/timeline/ export "
                                              "and no raw data (device_N/data, host/data)")
    out_dir = prof_dir / OUTPUT
    dbs = _latest(list(prof_dir.glob("msprof_*.db")) + (list(out_dir.glob("msprof_*.db")) if out_dir.is_dir() else []))
    if dbs:
        return read_db(dbs[-1], warn)
    tables = []
    if out_dir.is_dir():
        summaries = _latest(out_dir.glob("op_summary_*.csv")) or _latest(out_dir.glob("task_time_*.csv"))
        timelines = [p for p in _latest(out_dir.glob("msprof_*.json")) if not p.name.startswith("msprof_tx")]
        links: dict = {}
        for path in timelines:
            tables.append(read_timeline(path, warn, want_kernels=not summaries, links=links))
        for path in summaries:
            tables.append(read_op_summary(path, warn, links))
        for path in _latest(out_dir.glob("msprof_tx_*.csv")):
            tables.append(read_tx_csv(path, warn))
    if not tables and has_device_timelines(prof_dir):      # CANN 6.x/7.0: device_N/timeline/*.json
        tables.append(read_device_timelines(prof_dir, warn, note))
    return EventTable.concat(tables)


def parse_many(prof_dirs: Iterable[Path], warn: Warn, note: Optional[Warn] = None) -> EventTable:
    tables = []
    for d in prof_dirs:
        try:
            tables.append(parse_prof_dir(Path(d), warn, note=note))
        except ProfilerDataError as e:
            warn(str(e))
    return EventTable.concat(offset_corr(tables))   # each PROF_ dir numbers its connection ids from its own 0


def referenced_prof_dirs(run_dir: Path) -> list:
    """PROF_ dirs belonging to an npuprof run: run_dir/CANN/PROF_* and those listed in CANN/prof_dirs.json."""
    cann = run_dir / "CANN"
    found = [p for p in sorted(cann.glob("PROF_*")) if p.is_dir()] if cann.is_dir() else []
    index = cann / "prof_dirs.json"
    if index.is_file():
        try:
            listed = json.loads(index.read_text(encoding="utf-8")).get("prof_dirs", [])
        except (OSError, ValueError) as e:
            raise ProfilerDataError(index, f"is not valid JSON ({e})") from None
        for rel in listed:
            p = (cann / rel).resolve() if not os.path.isabs(rel) else Path(rel)
            if p.is_dir() and p not in found:
                found.append(p)
    return found


def glob_job_dirs(root: Path) -> list:
    """SVP JOB*/PROF_* directories under ``root`` (collect's fetched output)."""
    return [Path(p) for p in sorted(glob.glob(str(root / "**" / "PROF_*"), recursive=True)) if Path(p).is_dir()] + \
        [Path(p) for p in sorted(glob.glob(str(root / "**" / "JOB*"), recursive=True)) if is_prof_dir(Path(p))]


def kernels_of(table: EventTable) -> EventTable:
    return table.select(table["kind"] == np.uint8(EventKind.KERNEL))
