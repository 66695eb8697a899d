"""Import what CANN's msprof produces for a PROF_ (or SVP JOB) directory.

Sources, in order of preference:

* ``msprof_*.db`` (``PROF_x/`` or its ``mindstudio_profiler_output/``):
  TASK + COMPUTE_TASK_INFO -> KERNEL, CANN_API -> API, MSTX_EVENTS ->
  RANGE/MARK, COMMUNICATION_OP -> COMM;
* text exports in ``mindstudio_profiler_output/``: ``op_summary_*.csv``
  (else ``task_time_*.csv``) -> KERNEL, the ``msprof_*.json`` timeline's
  CANN process -> API (and its Communication process -> COMM), and
  ``msprof_tx_*.csv`` -> RANGE/MARK;
* SVP msprof.pyc exports in ``JOB*/timeline/``: ``task_time_*.json`` ->
  KERNEL, ``acl_*.json`` -> API.

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
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import numpy as np

from npuprof.errors import ProfilerDataError
from npuprof.events import EventKind, EventTable
from npuprof.fileio import check_input_file

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
}


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


def us_to_ns(text: Any) -> Optional[int]:
    """'1795306627735157.750\\t' -> 1795306627735157750 (exact, no float rounding); None for N/A."""
    if text is None:
        return None
    s = str(text).strip().strip('"')
    if not s or s.upper() == "N/A" or s == "-":
        return None
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    whole, _, frac = s.partition(".")
    if not whole.isdigit() and whole != "":
        try:
            return int(round(float(text) * 1000))
        except ValueError:
            return None
    frac = (frac + "000")[:3] if frac.isdigit() or frac == "" else "000"
    value = int(whole or 0) * 1000 + int(frac)
    return -value if neg else value


def is_prof_dir(path: Path) -> bool:
    """A CANN PROF_ directory, or an SVP JOB directory (data/ + info.json.N)."""
    if not path.is_dir():
        return False
    if PROF_RE.match(path.name):
        return True
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
    out = prof_dir / OUTPUT
    text = out.is_dir() and any(out.glob("*.csv")) or out.is_dir() and any(out.glob("msprof*.json"))
    db = any(prof_dir.glob("msprof_*.db")) or (out.is_dir() and any(out.glob("msprof_*.db")))
    svp = (prof_dir / "timeline").is_dir()
    return bool(text or db or svp)


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


def _events(kind: EventKind, rows: list, warn: Warn, where: Path) -> Optional[EventTable]:
    if not rows:
        return None
    ts, dur, name, typ, dev, stream, tid, pid, args = zip(*rows)
    return EventTable.from_records(ts=list(ts), dur=list(dur), kind=int(kind), name=list(name), type=list(typ),
                                   device=list(dev), stream=list(stream), tid=list(tid), pid=list(pid),
                                   args=list(args), source=SOURCE)


def _int(text: Any, default: int = -1) -> int:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return default


def read_op_summary(path: Path, warn: Warn) -> Optional[EventTable]:
    """op_summary_*.csv or task_time_*.csv -> KERNEL events."""
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
            rows.append((start, dur or 0, get("name"), get("type"), _int(get("device"), 0),
                         _int(get("stream_id")), _int(get("stream_id"), 0), 0, json.dumps(args)))
    if skipped:
        warn(f"{path}: {skipped} row(s) without a usable start time or with missing cells were skipped")
    return _events(EventKind.KERNEL, rows, warn, path)


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
            if len(rec) <= max(i for i in (i_start, i_msg) if i is not None):
                continue
            t0 = us_to_ns(rec[i_start])
            t1 = us_to_ns(rec[i_end]) if i_end is not None else t0
            if t0 is None:
                continue
            t1 = t0 if t1 is None else t1
            rows.append((t0, max(t1 - t0, 0), rec[i_msg], rec[i_kind] if i_kind is not None else "",
                         -1, -1, _int(rec[i_tid], 0) if i_tid is not None else 0,
                         _int(rec[i_pid], 0) if i_pid is not None else 0, "{}"))
    marks = [r for r in rows if r[1] == 0 and "marker" in r[3]]
    ranges = [r for r in rows if not (r[1] == 0 and "marker" in r[3])]
    return EventTable.concat([_events(EventKind.MARK, marks, warn, path), _events(EventKind.RANGE, ranges, warn, path)])


def _load_json(path: Path) -> Any:
    check_input_file(path)
    try:
        import orjson

        return orjson.loads(path.read_bytes())
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ProfilerDataError(path, f"is not valid JSON ({e})") from None


def read_timeline(path: Path, warn: Warn, want_kernels: bool) -> Optional[EventTable]:
    """msprof_*.json (array or {traceEvents}) -> API (CANN), COMM, and KERNEL when asked."""
    data = _load_json(path)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ProfilerDataError(path, "holds neither a JSON array nor traceEvents")
    proc: dict = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_name":
            proc[ev.get("pid")] = str((ev.get("args") or {}).get("name", ""))
    api, comm, kern = [], [], []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        ts = us_to_ns(ev.get("ts"))
        if ts is None:
            continue
        dur = us_to_ns(ev.get("dur")) or 0
        pname = proc.get(ev.get("pid"), "")
        name = str(ev.get("name", ""))
        tid = _int(ev.get("tid"), 0)
        args = ev.get("args") or {}
        if pname in ("CANN", "AscendCL", "Runtime", "GE") or "@" in name and pname == "":
            level, _, api_name = name.partition("@") if "@" in name else (pname, "", name)
            api.append((ts, dur, api_name, level, -1, -1, tid, 0, "{}"))
        elif pname in ("Communication", "HCCL") or pname.startswith("Communication"):
            comm.append((ts, dur, name, str(args.get("Task Type", "")), _device_of(ev), -1, tid, 0, "{}"))
        elif want_kernels and pname in ("Ascend Hardware", "Task Scheduler"):
            kern.append((ts, dur, name, str(args.get("Task Type", "")), _device_of(ev),
                         _int(args.get("Physic Stream Id", tid)), tid, 0,
                         json.dumps({k: args[k] for k in ("Model Id", "Task Id", "Task Type") if k in args})))
    return EventTable.concat([_events(EventKind.API, api, warn, path), _events(EventKind.COMM, comm, warn, path),
                              _events(EventKind.KERNEL, kern, warn, path)])


def _device_of(ev: dict) -> int:
    pid = ev.get("pid")
    if isinstance(pid, int) and pid > 1023:
        dev = pid & 0x1F  # synthetic pid = (realPid << 10) | (index << 5) | deviceId
        return -1 if dev == 31 else dev
    return 0


def read_svp_timeline(job_dir: Path, warn: Warn) -> Optional[EventTable]:
    """SVP msprof.pyc exports: timeline/task_time_*.json -> KERNEL, acl_*.json -> API."""
    tables = []
    for path in _latest((job_dir / "timeline").glob("task_time_*.json")):
        data = _load_json(path)
        rows = []
        for ev in data if isinstance(data, list) else data.get("traceEvents", []):
            if isinstance(ev, dict) and ev.get("ph") == "X":
                ts = us_to_ns(ev.get("ts"))
                if ts is not None:
                    args = ev.get("args") or {}
                    rows.append((ts, us_to_ns(ev.get("dur")) or 0, str(ev.get("name", "")),
                                 str(args.get("Task Type", "")), 0, _int(args.get("Stream Id"), 0),
                                 _int(ev.get("tid"), 0), 0, "{}"))
        tables.append(_events(EventKind.KERNEL, rows, warn, path))
    for path in _latest((job_dir / "timeline").glob("acl_*.json")):
        data = _load_json(path)
        rows = []
        for ev in data if isinstance(data, list) else data.get("traceEvents", []):
            if isinstance(ev, dict) and ev.get("ph") == "X":
                ts = us_to_ns(ev.get("ts"))
                if ts is not None:
                    rows.append((ts, us_to_ns(ev.get("dur")) or 0, str(ev.get("name", "")), "AscendCL", -1, -1,
                                 _int(ev.get("tid"), 0), _int(ev.get("pid"), 0), "{}"))
        tables.append(_events(EventKind.API, rows, warn, path))
    return EventTable.concat(tables)


def read_db(path: Path, warn: Warn) -> Optional[EventTable]:
    """msprof_*.db -> KERNEL, API, RANGE/MARK, COMM events (missing tables are skipped)."""
    check_input_file(path)
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise ProfilerDataError(path, f"cannot be opened as sqlite ({e})") from None
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        strings = dict(con.execute("SELECT id, value FROM STRING_IDS")) if "STRING_IDS" in tables else {}
        s = lambda v: strings.get(v, v if isinstance(v, str) else "" if v is None else str(v))  # noqa: E731
        cols = lambda t: {r[1] for r in con.execute(f"PRAGMA table_info({t})")}  # noqa: E731
        out = []
        if "TASK" in tables:
            has_info = "COMPUTE_TASK_INFO" in tables and {"globalTaskId", "name"} <= cols("COMPUTE_TASK_INFO")
            info_type = "c.opType" if has_info and "opType" in cols("COMPUTE_TASK_INFO") else "NULL"
            sql = ("SELECT t.startNs, t.endNs, t.deviceId, t.streamId, t.taskType, t.modelId, t.taskId, "
                   + (f"c.name, {info_type} FROM TASK t LEFT JOIN COMPUTE_TASK_INFO c "
                      "ON c.globalTaskId = t.globalTaskId" if has_info else "NULL, NULL FROM TASK t"))
            rows = []
            for st, en, dev, stream, ttype, model, task, name, optype in con.execute(sql):
                if name is None:
                    continue  # non-compute tasks (communication, memcpy) are not kernels of an op
                rows.append((int(st), int(en) - int(st), s(name), s(optype), int(dev), int(stream), int(stream), 0,
                             json.dumps({"Model ID": model, "Task ID": task, "Task Type": s(ttype)})))
            out.append(_events(EventKind.KERNEL, rows, warn, path))
        if "CANN_API" in tables:
            levels = {20000: "AscendCL", 15000: "Model", 10000: "Node", 5500: "Communication", 5000: "Runtime"}
            rows = [(int(st), int(en) - int(st), s(name), levels.get(typ, str(typ)), -1, -1,
                     int(gtid) & 0xFFFFFFFF, int(gtid) >> 32, "{}")
                    for st, en, typ, gtid, name in con.execute("SELECT startNs, endNs, type, globalTid, name "
                                                               "FROM CANN_API")]
            out.append(_events(EventKind.API, rows, warn, path))
        if "MSTX_EVENTS" in tables:
            marks, ranges = [], []
            for st, en, etype, msg, gtid in con.execute("SELECT startNs, endNs, eventType, message, globalTid "
                                                        "FROM MSTX_EVENTS"):
                row = (int(st), max(int(en) - int(st), 0), s(msg), "mstx", -1, -1, int(gtid) & 0xFFFFFFFF,
                       int(gtid) >> 32, "{}")
                (marks if etype in (0, 3) else ranges).append(row)
            out += [_events(EventKind.MARK, marks, warn, path), _events(EventKind.RANGE, ranges, warn, path)]
        if "COMMUNICATION_OP" in tables:
            rows = [(int(st), int(en) - int(st), s(name), s(optype), int(dev), -1, 0, 0, "{}")
                    for st, en, name, optype, dev in con.execute(
                        "SELECT startNs, endNs, opName, opType, deviceId FROM COMMUNICATION_OP")]
            out.append(_events(EventKind.COMM, rows, warn, path))
        return EventTable.concat(out)
    except sqlite3.Error as e:
        raise ProfilerDataError(path, f"unreadable msprof database ({e})") from None
    finally:
        con.close()


# -- one directory ------------------------------------------------------------------------------
def parse_prof_dir(prof_dir: Path, warn: Warn, run_msprof: bool = True) -> EventTable:
    """All events of one PROF_/JOB directory (see module doc)."""
    prof_dir = Path(prof_dir)
    if run_msprof and not has_exports(prof_dir):
        exe = find_msprof()
        if exe is not None:
            export_with_msprof(prof_dir, exe, warn)
        else:
            warn(f"{prof_dir}: holds raw CANN data only and no msprof executable was found to export it "
                 "(install the CANN toolkit or run 'msprof --export=on' where it is installed)")
    out_dir = prof_dir / OUTPUT
    dbs = _latest(list(prof_dir.glob("msprof_*.db")) + (list(out_dir.glob("msprof_*.db")) if out_dir.is_dir() else []))
    if dbs:
        return read_db(dbs[-1], warn)
    tables = []
    if out_dir.is_dir():
        summaries = _latest(out_dir.glob("op_summary_*.csv")) or _latest(out_dir.glob("task_time_*.csv"))
        for path in summaries:
            tables.append(read_op_summary(path, warn))
        timelines = [p for p in _latest(out_dir.glob("msprof_*.json")) if not p.name.startswith("msprof_tx")]
        for path in timelines:
            tables.append(read_timeline(path, warn, want_kernels=not summaries))
        for path in _latest(out_dir.glob("msprof_tx_*.csv")):
            tables.append(read_tx_csv(path, warn))
    if (prof_dir / "timeline").is_dir():
        tables.append(read_svp_timeline(prof_dir, warn))
    return EventTable.concat(tables)


def parse_many(prof_dirs: Iterable[Path], warn: Warn) -> EventTable:
    tables = []
    for d in prof_dirs:
        try:
            tables.append(parse_prof_dir(Path(d), warn))
        except ProfilerDataError as e:
            warn(str(e))
    return EventTable.concat(tables)


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
