"""Read the Ascend profiler databases: torch_npu's ``ascend_pytorch_profiler_{rank}.db``,
MindSpore's ``ascend_mindspore_profiler_{rank}.db`` (``export_type=db``) and CANN's
``msprof_{timestamp}.db`` (``msprof --type=db``).

All three hold msprof's tables (schema 1.x, ``META_DATA.SCHEMA_VERSION``); the
framework ones add their own (torch_npu: ``PYTORCH_API``, ``CONNECTION_IDS``,
``STEP_TIME``, ``MEMORY_RECORD`` ...). Every table is optional and read by
column name (``PRAGMA table_info``): a query names only the columns the file
has, an optional column missing reads as unknown, a table missing one of its
required columns is skipped with a warning. Text is decoded through
``STRING_IDS`` (a cell that is already text is taken as it is), enumerations
through the ``ENUM_*`` tables (or their documented values when the table is
absent). Times are ns since the Unix epoch ("local unix time" in the schema;
checked on real files against ``SESSION_TIME_INFO`` and ``profiler_info``).

How tables become events (:mod:`npuprof.events`; each row one event, nothing
counted twice):

=============================  ==============================================================
table                          events
=============================  ==============================================================
``STEP_TIME``                  STEP ``ProfilerStep#<id>``; without it, the framework's own
                               ``ProfilerStep#N`` rows (never both)
``PYTORCH_API``                by ``type`` (``ENUM_API_TYPE``): ``op`` -> OP (type = its
                               name, as torch_npu's ``cpu_op``), ``queue`` -> RANGE
                               (``enqueue``/``dequeue``), ``trace`` -> STACK, ``mstx`` ->
                               RANGE/MARK
``CANN_API``                   API, type = its level (``acl``, ``node``, ``hccl`` ...)
``TASK`` + ``COMPUTE_TASK_INFO``  KERNEL: op type, ``Accelerator Core`` (its ``taskType``),
                               ``Block Dim``, ``Mix Block Dim``, ``Task ID``, ``Model ID``,
                               ``Context ID``, ``Wait Time(us)``, tensor columns; stream,
                               device as recorded
``TASK`` + ``COMMUNICATION_TASK_INFO``  COMM task (``task_type``; ``src_rank``/``dst_rank``/
                               ``size``/``transport`` where it is a transfer), group and op
                               type of its operator
``TASK`` + ``COMMUNICATION_SCHEDULE_TASK_INFO``  COMM task (communication run as kernels)
other ``TASK`` rows            RANGE ``device_task`` on its device and stream (event
                               records/waits, memcpy, profiling markers: device activity,
                               neither compute nor communication)
``COMMUNICATION_OP``           COMM operator: op type, ``group`` (see below), device (its
                               ``deviceId`` column from schema 1.2, else its tasks' device)
``MSTX_EVENTS``                MARK (``marker``) or RANGE, type ``mstx``
``MEMORY_RECORD``              COUNTER series ``<component> NPU:<d> Total ...(MB)``, type
                               ``memory`` (as memory_record.csv rows; args: ``Component``,
                               ``Device Type``, ``Stream Ptr``)
``OP_MEMORY``                  MEMORY, one per allocation, type ``operator_memory`` (as
                               operator_memory.csv rows: its other columns in args under the
                               csv's names, times as exact µs text)
``NPU_MEM``                    COUNTER series ``<type> NPU:<d> ddr(B)`` / ``hbm(B)``, type
                               ``npu_mem`` (args: ``Component`` = app/device, ``Device``)
``NPU_MODULE_MEM``             COUNTER series ``<module> NPU:<d> Total Reserved(MB)``, type
                               ``npu_module_mem`` (as npu_module_mem.csv rows; module names
                               from ``ENUM_MODULE``)
=============================  ==============================================================

Launch links: ``TASK.connectionId`` is the ``corr`` of a task and of the
``CANN_API`` row (or ``COMMUNICATION_OP``) with that id; a framework op gets the
one of its ``CONNECTION_IDS`` that a task carries only where no CANN API
carries it (so a launch is linked once, as the text reader does with
``HostToDevice`` flows before ``async_npu`` ones); its other connection ids stay in
its ``args`` (``connection_ids``), so a writer can give them back.

Groups: ``COMMUNICATION_OP.groupName`` is the group's own name
(``90.91.105.46%enp189s0f0_60000_0_1736410538306028``); the Ascend tools name a
group in their summaries (``analysis.db``, ``communication.json``) by its
:func:`group_id`, so a communication event's ``args`` carry both: ``group`` =
the id, ``group_name`` = the name.

The database is opened read-only and immutable (``file:...?mode=ro&immutable=1``):
sqlite writes no journal or lock file beside it. ``analysis.db`` (the tools'
StepTraceTime / CommAnalyzer* summaries) is the tool's result, not events; it is
not read here. Not read either: PMU tables (``TASK_PMU_INFO``, ``SAMPLE_PMU_*``),
hardware counters (``HBM``, ``LLC``, ``ACC_PMU`` ...),
``NPU_OP_MEM``, call stacks, and ``PYTORCH_API``'s input
shapes/types (in torch_npu's schema 1.0.0 the column named ``inputShapes``
holds the types and ``inputDtypes`` the dims).

Example::

    >>> group_id("90.91.105.46%enp189s0f0_60000_0_1736410538306028")
    '17148521525495523210'
    >>> read = read_ascend_db(Path("ascend_pytorch_profiler_0.db"))      # doctest: +SKIP
    >>> read.facts.rank, read.facts.devices, len(read.events)            # doctest: +SKIP
    (0, (0,), 5134)
"""
from __future__ import annotations

import functools
import math
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence
from urllib.parse import quote

import numpy as np
import orjson

from npuprof.clock import ns_to_us_text
from npuprof.errors import ProfilerDataError
from npuprof.events import EventKind, EventTable, StringPool
from npuprof.fileio import check_input_file
from npuprof.readers.ascend_output import comm_op_type, op_type_of

SQLITE_MAGIC = b"SQLite format 3\x00"
TORCH_NPU_DB_RE = re.compile(r"^ascend_pytorch_profiler(?:_(\d+))?\.db$")
MINDSPORE_DB_RE = re.compile(r"^ascend_mindspore_profiler(?:_(\d+))?\.db$")
MSPROF_DB_RE = re.compile(r"^msprof_\d+\.db$")
ANALYSIS_DB = "analysis.db"
INVALID_U32 = 4294967295            # msprof's "none" for ids, ranks and connection ids (uint32 max)
MB = 1024.0 * 1024.0
# ENUM_API_TYPE / ENUM_MSTX_EVENT_TYPE as documented, for a file without the table
API_TYPES = {5000: "runtime", 5500: "hccl", 10000: "node", 15000: "model", 20000: "acl", 50001: "op",
             50002: "queue", 50003: "trace", 50004: "mstx"}
MSTX_TYPES = {0: "marker", 1: "push/pop", 2: "start/end", 3: "marker_ex"}
# ENUM_MODULE (the modules of NPU_MODULE_MEM) as torch_npu's files carry it
MODULES = dict(enumerate((
    "SLOG", "IDEDD", "IDEDH", "HCCL", "FMK", "HIAIENGINE", "DVPP", "RUNTIME", "CCE", "HDC", "DRV", "MDCFUSION",
    "MDCLOCATION", "MDCPERCEPTION", "MDCFSM", "MDCCOMMON", "MDCMONITOR", "MDCBSWP", "MDCDEFAULT", "MDCSC", "MDCPNC",
    "MLL", "DEVMM", "KERNEL", "LIBMEDIA", "CCECPU", "ASCENDDK", "ROS", "HCCP", "ROCE", "TEFUSION", "PROFILING", "DP",
    "APP", "TS", "TSDUMP", "AICPU", "LP", "TDT", "FE", "MD", "MB", "ME", "IMU", "IMP", "GE", "MDCFUSA", "CAMERA",
    "ASCENDCL", "TEEOS", "ISP", "SIS", "HSM", "DSS", "PROCMGR", "BBOX", "AIVECTOR", "TBE", "FV", "MDCMAP", "TUNE",
    "HSS", "FFTS", "OP", "UDF", "HICAID", "TSYNC", "AUDIO", "TPRT", "ASCENDCKERNEL", "ASYS", "ATRACE", "RTC",
    "SYSMONITOR", "AMP", "ADETECT", "MBUFF", "CUSTOM")))
_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
_MAX_DEVICE = 32767                  # the event table's device column is int16
Warn = Callable[[str], None]


@functools.lru_cache(maxsize=4096)
def group_id(name: str) -> str:
    """The id the Ascend tools give a communication group in their summaries.

    Two 32-bit polynomial hashes of the name (multipliers 29 and 131), high
    and low word, as msprof-analyze's ``double_hash``; a name that is already
    an id (all digits) is kept.

    Example::

        >>> group_id("90.91.105.46%enp189s0f0_60000_0_1736410538306028")
        '17148521525495523210'
        >>> group_id("17522688603477080586")
        '17522688603477080586'
    """
    if name.isdigit():
        return name
    high = low = 0
    for ch in name:
        high = (high * 29 + ord(ch)) & 0xFFFFFFFF
        low = (low * 131 + ord(ch)) & 0xFFFFFFFF
    return str((high << 32) | low)


def db_kind(path: Path) -> Optional[str]:
    """Which tool wrote a profiler database, judged by its file name: the
    event ``source`` (``torch_npu``, ``mindspore``, ``cann``) or None.

    Example::

        >>> db_kind(Path("ascend_pytorch_profiler_1.db")), db_kind(Path("msprof_20250109080000.db"))
        ('torch_npu', 'cann')
        >>> db_kind(Path("analysis.db")) is None
        True
    """
    name = Path(path).name
    if TORCH_NPU_DB_RE.match(name):
        return "torch_npu"
    if MINDSPORE_DB_RE.match(name):
        return "mindspore"
    if MSPROF_DB_RE.match(name):
        return "cann"
    return None


def rank_in_name(path: Path) -> Optional[int]:
    """The rank in a framework database's name (``..._profiler_3.db`` -> 3), else None."""
    m = TORCH_NPU_DB_RE.match(Path(path).name) or MINDSPORE_DB_RE.match(Path(path).name)
    return int(m.group(1)) if m and m.group(1) is not None else None


def framework_dbs(output_dir: Path) -> list[Path]:
    """The torch_npu / MindSpore profiler databases in an ``ASCEND_PROFILER_OUTPUT`` folder."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    return sorted(p for p in output_dir.iterdir()
                  if p.is_file() and (TORCH_NPU_DB_RE.match(p.name) or MINDSPORE_DB_RE.match(p.name)))


@dataclass(frozen=True)
class AscendDbFacts:
    """What a profiler database records about its run.

    ``rank``: ``RANK_DEVICE_MAP.rankId`` (None where absent or -1, CANN's
    "set by the framework"); ``devices``: the device ids its tasks ran on
    (else ``RANK_DEVICE_MAP``/``NPU_INFO``); ``chip``: ``NPU_INFO``'s name;
    ``session_ns``: ``SESSION_TIME_INFO`` (start, end) epoch ns.
    """

    path: Path
    schema_version: Optional[str] = None
    rank: Optional[int] = None
    devices: tuple = ()
    chip: Optional[str] = None
    session_ns: Optional[tuple] = None


@dataclass
class AscendDbRead:
    """A database read: its events, its facts, and rows read per table."""

    events: EventTable
    facts: AscendDbFacts
    rows_read: dict = field(default_factory=dict)


def open_readonly(path: Path) -> sqlite3.Connection:
    """An sqlite connection that cannot change ``path`` or write beside it
    (read-only, immutable: no journal, WAL or lock file)."""
    uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True)


def read_ascend_db(path: Path, warn: Optional[Warn] = None, source: Optional[str] = None) -> AscendDbRead:
    """Events of one Ascend profiler database (see module doc).

    ``warn`` is told what was skipped (a table without a required column, rows
    with an unreadable cell, each naming the file and the table); ``source``
    names the events' producer (default: from the file name, see
    :func:`db_kind`). Raises :class:`~npuprof.ProfilerDataError` naming the
    file when it is not an sqlite database, cannot be queried, or yields no
    event at all.
    """
    path = Path(path)
    check_input_file(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as e:
        raise ProfilerDataError(path, f"cannot be read ({e.strerror})") from None
    if head != SQLITE_MAGIC:
        raise ProfilerDataError(path, "is not an SQLite database (no SQLite header)")
    problems: list[str] = []

    def note(message: str) -> None:
        problems.append(message)
        if warn is not None:
            warn(message)

    try:
        con = open_readonly(path)
    except sqlite3.Error as e:
        raise ProfilerDataError(path, f"cannot be opened as sqlite ({e})") from None
    try:
        reader = _DbReader(con, path, note, source or db_kind(path) or "ascend_db")
        read = reader.read()
    except (sqlite3.Error, MemoryError) as e:   # malformed/truncated file, a query sqlite refuses
        raise ProfilerDataError(path, f"unreadable profiler database ({type(e).__name__}: {e})") from None
    finally:
        con.close()
    if not len(read.events):
        found = ", ".join(f"{t} ({n} rows)" for t, n in read.rows_read.items()) or "none of its event tables"
        why = "; ".join(problems) if problems else f"tables read: {found}"
        raise ProfilerDataError(path, f"holds no event npuprof can read ({why})")
    return read


# -- cells ----------------------------------------------------------------------------------------
class _BadCell(ValueError):
    """A cell that cannot be the number its column holds."""


def _cell_int(value: Any, what: str) -> int:
    """An integer cell: int, integral finite float, or decimal text; else _BadCell naming ``what``."""
    if type(value) is int:
        return value
    if value is None:
        raise _BadCell(f"{what} is NULL")
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
        return int(value)
    shown = repr(value)
    raise _BadCell(f"{what} is {shown[:40] + '...' if len(shown) > 40 else shown}")


def _ints(values: Sequence[Any], what: str, default: Optional[int] = None,
          lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> tuple[np.ndarray, list[Optional[str]]]:
    """A column of integer cells -> (int64 array, per-row problem or None).

    NULL is ``default`` where one is given (an optional value), else a problem;
    values outside ``lo..hi`` are problems."""
    n = len(values)
    if default is None or not any(v is None for v in values):
        try:
            arr = np.fromiter(values, dtype=np.int64, count=n) if n else np.zeros(0, np.int64)
            if all(type(v) is int or isinstance(v, str) for v in values) and \
                    (not n or (int(arr.min()) >= lo and int(arr.max()) <= hi)):
                return arr, [None] * n
        except (TypeError, ValueError, OverflowError):
            pass
    out = np.zeros(n, dtype=np.int64)
    bad: list[Optional[str]] = [None] * n
    for i, v in enumerate(values):
        if v is None and default is not None:
            out[i] = default
            continue
        try:
            x = _cell_int(v, what)
        except _BadCell as e:
            bad[i] = str(e)
            continue
        if not lo <= x <= hi:
            bad[i] = f"{what} {x} is out of range"
            continue
        out[i] = x
    return out, bad


def _plain(value: Any) -> Any:
    """A cell for the args JSON: numbers and text as they are, anything else as text."""
    if value is None or isinstance(value, (int, str)) or isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


def _args_text(args: dict) -> str:
    return orjson.dumps(args, default=str).decode() if args else ""


# -- the reader -----------------------------------------------------------------------------------
@dataclass
class _Rows:
    """Rows of one table: ``cols[name]`` is the list of that column's cells (None where the file lacks it)."""

    table: str
    cols: dict
    n: int

    def get(self, name: str) -> list:
        return self.cols.get(name) or [None] * self.n


class _Out:
    """Event columns, filled part by part with one string pool."""

    def __init__(self, source: str) -> None:
        self.pool = StringPool()
        self.source = source
        self.parts: list[dict] = []

    def add(self, kind: EventKind, ts: np.ndarray, dur: np.ndarray, name: Iterable[str], type_: Any,
            *, pid: Any = 0, tid: Any = 0, device: Any = -1, stream: Any = -1, value: Any = 0.0, step: Any = -1,
            args: Any = "", corr: Any = -1) -> None:
        n = len(ts)
        if not n:
            return
        code = self.pool.code
        part = {"ts": ts, "dur": dur, "kind": np.full(n, int(kind), np.uint8), "pid": pid, "tid": tid,
                "device": device, "stream": stream, "value": value, "step": step, "corr": corr,
                "name": np.fromiter((code(s) for s in name), np.int32, count=n),
                "type": np.full(n, code(type_), np.int32) if isinstance(type_, str)
                else np.fromiter((code(s) for s in type_), np.int32, count=n),
                "args": np.full(n, code(args), np.int32) if isinstance(args, str)
                else np.fromiter((code(s) for s in args), np.int32, count=n)}
        self.parts.append(part)

    def table(self) -> EventTable:
        source = self.pool.code(self.source)
        tables = []
        for p in self.parts:
            numeric = {k: p[k] for k in ("ts", "dur", "kind", "pid", "tid", "device", "stream", "value", "step",
                                         "corr")}
            codes = {"name": p["name"], "type": p["type"], "args": p["args"], "source": source}
            tables.append(EventTable.from_codes(numeric, codes, self.pool.strings))
        return EventTable.concat(tables)


class _DbReader:
    """One open database -> events (see module doc for the rules)."""

    def __init__(self, con: sqlite3.Connection, path: Path, note: Warn, source: str) -> None:
        self.con, self.path, self.note, self.source = con, path, note, source
        self.tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self._columns: dict[str, list[str]] = {}
        self.strings: dict = {}
        self.rows_read: dict[str, int] = {}
        self.out = _Out(source)

    # -- schema -----------------------------------------------------------------------------------
    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            self._columns[table] = [str(r[1]) for r in self.con.execute(f'PRAGMA table_info("{table}")')]
        return self._columns[table]

    def select(self, table: str, required: Sequence[str], optional: Sequence[Any] = ()) -> Optional[_Rows]:
        """The rows of ``table``: its ``required`` columns and those of ``optional`` it has.

        An optional entry is a name or a tuple of accepted spellings (the first
        one the file has is read, under the first spelling). Returns None
        (with a warning when the table exists) when the table or a required
        column is missing.
        """
        if table not in self.tables:
            return None
        have = set(self.columns(table))
        missing = [c for c in required if c not in have]
        if missing:
            self.note(f"{self.path}: table {table} has no column(s) {', '.join(missing)}; table skipped")
            return None
        picks: list[tuple[str, str]] = [(c, c) for c in required]
        for entry in optional:
            names = (entry,) if isinstance(entry, str) else tuple(entry)
            found = next((c for c in names if c in have), None)
            if found is not None:
                picks.append((names[0], found))
        sql = "SELECT " + ", ".join(f'"{col}"' for _, col in picks) + f' FROM "{table}"'
        rows = self.con.execute(sql).fetchall()
        cols = {key: [r[i] for r in rows] for i, (key, _) in enumerate(picks)}
        self.rows_read[table] = len(rows)
        return _Rows(table, cols, len(rows))

    def enum(self, table: str, documented: dict) -> dict:
        """An ``ENUM_*`` table as {id: name}, over its documented values."""
        out = dict(documented)
        rows = self.select(table, ("id", "name")) if table in self.tables else None
        if rows is not None:
            for k, v in zip(rows.cols["id"], rows.cols["name"]):
                if type(k) is int and v is not None:
                    out[k] = str(v)
        return out

    def text(self, value: Any) -> str:
        """A STRING_IDS id (or a cell that is text already) -> text; "" for NULL."""
        if type(value) is int:
            got = self.strings.get(value)
            return got if got is not None else str(value)
        if value is None:
            return ""
        return value if isinstance(value, str) else str(value)

    def texts(self, values: Sequence[Any]) -> list[str]:
        strings = self.strings
        return [strings.get(v, str(v)) if type(v) is int else self.text(v) for v in values]

    def skip_bad(self, rows: _Rows, *problems: list) -> np.ndarray:
        """Mask of rows with no problem; the others are reported once for the table."""
        ok = np.ones(rows.n, dtype=bool)
        first = None
        for per_row in problems:
            for i, p in enumerate(per_row):
                if p is not None:
                    if ok[i] and first is None:
                        first = p
                    ok[i] = False
        bad = int((~ok).sum())
        if bad:
            self.note(f"{self.path}: {bad} row(s) of table {rows.table} skipped (first: {first})")
        return ok

    def span(self, rows: _Rows, start: str = "startNs", end: str = "endNs",
             end_optional: bool = False) -> tuple[np.ndarray, np.ndarray, list]:
        """(start, duration, problems) of each row; an end before its start is a problem."""
        ts, bad_ts = _ints(rows.get(start), start)
        ends_raw = rows.get(end)
        if end_optional:
            ends_raw = [e if e is not None else s for e, s in zip(ends_raw, rows.get(start))]
        te, bad_te = _ints(ends_raw, end)
        dur = te - ts
        problems = [a or b or (f"{end} is before {start}" if d < 0 else None)
                    for a, b, d in zip(bad_ts, bad_te, dur.tolist())]
        return ts, np.maximum(dur, 0), problems

    # -- the whole file ---------------------------------------------------------------------------
    def read(self) -> AscendDbRead:
        if "STRING_IDS" in self.tables:
            rows = self.select("STRING_IDS", ("id", "value"))
            if rows is not None:
                self.strings = {k: (v if isinstance(v, str) else "" if v is None else str(v))
                                for k, v in zip(rows.cols["id"], rows.cols["value"]) if type(k) is int}
        self.api_types = self.enum("ENUM_API_TYPE", API_TYPES)
        facts = self.facts()
        tasks = self.read_tasks(facts)
        cann_links = self.read_cann_api()
        self.read_comm_ops(tasks, facts)
        steps_from_table = self.read_step_time()
        self.read_framework_api(tasks, cann_links, steps_from_table)
        self.read_mstx()
        self.read_memory_record()
        self.read_op_memory()
        self.read_npu_mem()
        self.read_npu_module_mem()
        return AscendDbRead(self.out.table(), facts, dict(self.rows_read))

    def facts(self) -> AscendDbFacts:
        version = None
        meta = self.select("META_DATA", ("name", "value"))
        if meta is not None:
            values = {self.text(k): self.text(v) for k, v in zip(meta.cols["name"], meta.cols["value"])}
            version = values.get("SCHEMA_VERSION") or None
            major = values.get("SCHEMA_VERSION_MAJOR") or (version or "").split(".")[0]
            if major and major.isdigit() and int(major) > 1:
                self.note(f"{self.path}: schema version {version or major} is newer than the 1.x npuprof knows; "
                          "read by column name")
        rank, mapped = None, []
        rdm = self.select("RANK_DEVICE_MAP", ("rankId", "deviceId"))
        if rdm is not None:
            pairs = [(r, d) for r, d in zip(rdm.cols["rankId"], rdm.cols["deviceId"])
                     if type(r) is int and type(d) is int]
            ranks = {r for r, _ in pairs if 0 <= r < INVALID_U32}
            rank = ranks.pop() if len(ranks) == 1 else None
            mapped = sorted({d for _, d in pairs if 0 <= d <= _MAX_DEVICE})
        chip, npus = None, []
        info = self.select("NPU_INFO", ("id",), ("name",))
        if info is not None:
            npus = sorted({d for d in info.cols["id"] if type(d) is int and 0 <= d <= _MAX_DEVICE})
            names = {self.text(v) for v in info.get("name") if v is not None}
            chip = names.pop() if len(names) == 1 else None
        devices: tuple = ()
        if "TASK" in self.tables and "deviceId" in self.columns("TASK"):
            found = [r[0] for r in self.con.execute('SELECT DISTINCT "deviceId" FROM "TASK"')]
            devices = tuple(sorted({d for d in found if type(d) is int and 0 <= d <= _MAX_DEVICE}))
        devices = devices or tuple(mapped) or tuple(npus)
        session = None
        sti = self.select("SESSION_TIME_INFO", ("startTimeNs", "endTimeNs"))
        if sti is not None and sti.n:
            s, e = sti.cols["startTimeNs"][0], sti.cols["endTimeNs"][0]
            if type(s) is int and type(e) is int:
                session = (s, e)
        return AscendDbFacts(self.path, version, rank, devices, chip, session)

    # -- device tasks -----------------------------------------------------------------------------
    def read_tasks(self, facts: AscendDbFacts) -> "_Tasks":
        """TASK joined in Python with its info tables (each optional)."""
        rows = self.select("TASK", ("startNs", "endNs"),
                           ("deviceId", "connectionId", "globalTaskId", "globalPid", "taskType", "contextId",
                            "streamId", "taskId", "modelId"))
        tasks = _Tasks()
        if rows is None:
            return tasks
        ts, dur, bad_span = self.span(rows)
        one_device = facts.devices[0] if len(facts.devices) == 1 else -1
        device, bad_dev = _ints(rows.get("deviceId"), "device", default=one_device, lo=-1, hi=_MAX_DEVICE)
        stream, bad_stream = _ints(rows.get("streamId"), "streamId", default=-1, lo=-1, hi=INVALID_U32)
        gid, bad_gid = _ints(rows.get("globalTaskId"), "globalTaskId", default=-1)
        ok = self.skip_bad(rows, bad_span, bad_dev, bad_stream, bad_gid)
        stream = np.where(stream >= (1 << 31), -1, stream).astype(np.int32)
        corr = np.array([_link(v) for v in rows.get("connectionId")], dtype=np.int64)
        pid = np.array([v if type(v) is int and 0 <= v < 1 << 62 else 0 for v in rows.get("globalPid")], np.int64)
        task_type = self.texts(rows.get("taskType"))
        compute = self.compute_info()
        comm = self.comm_task_info()
        schedule = self.schedule_info()
        gids = gid.tolist()
        kinds = np.zeros(rows.n, dtype=np.int8)      # 0 other, 1 kernel, 2 comm task, 3 scheduled comm
        for i, g in enumerate(gids):
            if not ok[i]:
                kinds[i] = -1
            elif g in compute:
                kinds[i] = 1
            elif g in comm:
                kinds[i] = 2
            elif g in schedule:
                kinds[i] = 3
        model, task_id, context = rows.get("modelId"), rows.get("taskId"), rows.get("contextId")
        for c, d, k in zip(corr.tolist(), device.tolist(), ok.tolist()):
            if k and c >= 0:
                tasks.devices_of_link.setdefault(c, set()).add(d)
        tasks.links = {c for c, k in zip(corr.tolist(), ok.tolist()) if k and c >= 0}

        # kernels
        sel = np.flatnonzero(kinds == 1)
        names, types, args = [], [], []
        for i in sel.tolist():
            info = dict(compute[gids[i]])
            name = info.pop("_name")
            op_type = info.pop("_op_type") or op_type_of(name)
            a = {"Model ID": _id_text(model[i]), "Task ID": _id_text(task_id[i])}
            a.update(info)
            a.setdefault("Accelerator Core", task_type[i])
            if task_type[i]:
                a["device_task_type"] = task_type[i]    # TASK's own type (KERNEL_AIVEC ...), for writers
            a["Context ID"] = _id_text(context[i])
            names.append(name)
            types.append(op_type)
            args.append(_args_text({k: v for k, v in a.items() if v is not None}))
        self.out.add(EventKind.KERNEL, ts[sel], dur[sel], names, types, pid=pid[sel], tid=np.maximum(stream[sel], 0),
                     device=device[sel], stream=stream[sel], args=args, corr=corr[sel])

        # communication tasks: the group and op type of their operator (by opId), else their own
        op_of = self.comm_op_types()
        sel = np.flatnonzero(kinds == 2)
        names, types, args = [], [], []
        for i in sel.tolist():
            info = dict(comm[gids[i]])
            op_id = info.pop("_op_id")
            op_name = info.pop("_op_name")
            names.append(info.get("task_type") or task_type[i])
            types.append(op_of.get(op_id) or comm_op_type(op_name) or "hcom")
            info["Task ID"] = _id_text(task_id[i])
            args.append(_args_text({k: v for k, v in info.items() if v is not None}))
            if op_id is not None:
                tasks.devices_of_op.setdefault(op_id, set()).add(int(device[i]))
        self.out.add(EventKind.COMM, ts[sel], dur[sel], names, types, pid=pid[sel], tid=np.maximum(stream[sel], 0),
                     device=device[sel], stream=stream[sel], args=args, corr=corr[sel])

        sel = np.flatnonzero(kinds == 3)
        names, types, args = [], [], []
        for i in sel.tolist():
            name, op_type, ttype = schedule[gids[i]]
            names.append(name)
            types.append(op_type or comm_op_type(name))
            args.append(_args_text({"task_type": ttype or task_type[i], "Task ID": _id_text(task_id[i])}))
        self.out.add(EventKind.COMM, ts[sel], dur[sel], names, types, pid=pid[sel], tid=np.maximum(stream[sel], 0),
                     device=device[sel], stream=stream[sel], args=args, corr=corr[sel])

        sel = np.flatnonzero(kinds == 0)
        args = [_args_text({"Task Type": task_type[i], "Task ID": _id_text(task_id[i])}) for i in sel.tolist()]
        self.out.add(EventKind.RANGE, ts[sel], dur[sel], [task_type[i] for i in sel.tolist()], "device_task",
                     pid=pid[sel], tid=np.maximum(stream[sel], 0), device=device[sel], stream=stream[sel], args=args,
                     corr=corr[sel])
        return tasks

    def compute_info(self) -> dict:
        """globalTaskId -> kernel_details columns of COMPUTE_TASK_INFO (plus ``_name``, ``_op_type``)."""
        rows = self.select("COMPUTE_TASK_INFO", ("globalTaskId",),
                           ("name", "opType", "taskType", ("blockDim", "block_dim", "blockNum"), "mixBlockDim",
                            "opState", "hf32Eligible", "inputShapes", "inputDataTypes", "inputFormats",
                            "outputShapes", "outputDataTypes", "outputFormats", "waitNs"))
        if rows is None:
            return {}
        g, bad = _ints(rows.get("globalTaskId"), "globalTaskId")
        ok = self.skip_bad(rows, bad)
        has = set(rows.cols)
        text_cols = [(c, col) for c, col in (("OP State", "opState"), ("HF32 Eligible", "hf32Eligible"),
                                             ("Input Shapes", "inputShapes"), ("Input Data Types", "inputDataTypes"),
                                             ("Input Formats", "inputFormats"), ("Output Shapes", "outputShapes"),
                                             ("Output Data Types", "outputDataTypes"),
                                             ("Output Formats", "outputFormats")) if col in has]
        names, op_types, cores = (self.texts(rows.get(c)) for c in ("name", "opType", "taskType"))
        block, mix, wait = rows.get("blockDim"), rows.get("mixBlockDim"), rows.get("waitNs")
        texts = {col: self.texts(rows.get(col)) for _, col in text_cols}
        out = {}
        for i, gid in enumerate(g.tolist()):
            if not ok[i]:
                continue
            info: dict = {"_name": names[i], "_op_type": op_types[i]}
            if cores[i]:
                info["Accelerator Core"] = cores[i]
            if "blockDim" in has:
                info["Block Dim"] = _id_text(block[i])
            if "mixBlockDim" in has:
                info["Mix Block Dim"] = _id_text(mix[i])
            if "waitNs" in has and type(wait[i]) in (int, float) and wait[i] >= 0:
                info["Wait Time(us)"] = f"{wait[i] / 1000.0:.3f}"
            for column, col in text_cols:
                value = texts[col][i]
                info[column] = value if value != "" else "N/A"
            out[gid] = info
        return out

    def comm_task_info(self) -> dict:
        """globalTaskId -> communication-task args (the npuprof.analysis.rank_communication convention, plus ``_op_*``)."""
        rows = self.select("COMMUNICATION_TASK_INFO", ("globalTaskId",),
                           ("name", "taskType", "groupName", "opId", "srcRank", "dstRank", "transportType",
                            "linkType", "size", "notifyId", "planeId", "rdmaType", "dataType", "isMaster"))
        if rows is None:
            return {}
        g, bad = _ints(rows.get("globalTaskId"), "globalTaskId")
        ok = self.skip_bad(rows, bad)
        transports = self.enum("ENUM_HCCL_TRANSPORT_TYPE", {})
        links = self.enum("ENUM_HCCL_LINK_TYPE", {})
        rdma_types = self.enum("ENUM_HCCL_RDMA_TYPE", {})
        rdma, master = rows.get("rdmaType"), rows.get("isMaster")
        names, ttypes, groups = (self.texts(rows.get(c)) for c in ("name", "taskType", "groupName"))
        src, dst, size, op_id = rows.get("srcRank"), rows.get("dstRank"), rows.get("size"), rows.get("opId")
        tt, lt, notify, plane = rows.get("transportType"), rows.get("linkType"), rows.get("notifyId"), \
            rows.get("planeId")
        out = {}
        for i, gid in enumerate(g.tolist()):
            if not ok[i]:
                continue
            info: dict = {"_op_id": op_id[i] if type(op_id[i]) is int else None, "_op_name": names[i],
                          "task_type": ttypes[i], "notify_id": _plain(notify[i]),
                          "plane_id": plane[i] if type(plane[i]) is int else None}
            if groups[i]:
                info["group"] = group_id(groups[i])
                info["group_name"] = groups[i]
            s, d = src[i], dst[i]
            if type(s) is int and type(d) is int and 0 <= s and 0 <= d:   # as recorded, 0xFFFFFFFF included
                transport = transports.get(tt[i], "") if type(tt[i]) is int else self.text(tt[i])
                link = links.get(lt[i], "") if type(lt[i]) is int else self.text(lt[i])
                link = "" if link in ("N/A", "INVALID_TYPE") else link
                info.update({"src_rank": s, "dst_rank": d, "size": size[i] if type(size[i]) is int else 0,
                             "link_type": link, "transport_type": transport})
                if s < INVALID_U32 and d < INVALID_U32:
                    info["transport"] = "RDMA" if transport == "RDMA" else ("LOCAL" if s == d else (link or transport))
            kind = rdma_types.get(rdma[i], "") if type(rdma[i]) is int else self.text(rdma[i])
            if kind and kind not in ("N/A", "INVALID_TYPE"):
                info["rdma_type"] = kind
            if type(master[i]) is int:
                info["is_master"] = master[i]
            out[gid] = info
        return out

    def schedule_info(self) -> dict:
        """globalTaskId -> (name, op type, task type) of COMMUNICATION_SCHEDULE_TASK_INFO."""
        rows = self.select("COMMUNICATION_SCHEDULE_TASK_INFO", ("globalTaskId",), ("name", "opType", "taskType"))
        if rows is None:
            return {}
        g, bad = _ints(rows.get("globalTaskId"), "globalTaskId")
        ok = self.skip_bad(rows, bad)
        names, ops, ttypes = (self.texts(rows.get(c)) for c in ("name", "opType", "taskType"))
        return {gid: (names[i], ops[i], ttypes[i]) for i, gid in enumerate(g.tolist()) if ok[i]}

    def comm_op_types(self) -> dict:
        """opId -> op type of COMMUNICATION_OP (for its tasks)."""
        if "COMMUNICATION_OP" not in self.tables or not {"opId", "opName"} <= set(self.columns("COMMUNICATION_OP")):
            return {}
        cols = self.columns("COMMUNICATION_OP")
        sql = 'SELECT "opId", "opName"' + (', "opType"' if "opType" in cols else ", NULL") + ' FROM "COMMUNICATION_OP"'
        out = {}
        for op_id, name, op_type in self.con.execute(sql):
            if type(op_id) is int:
                out[op_id] = self.text(op_type) or comm_op_type(self.text(name))
        return out

    # -- host and communication operators ---------------------------------------------------------
    def read_cann_api(self) -> set:
        """CANN_API -> API events; returns the connection ids they carry."""
        rows = self.select("CANN_API", ("startNs", "endNs", "name"), ("type", "globalTid", "connectionId"))
        if rows is None:
            return set()
        ts, dur, bad_span = self.span(rows)
        ok = self.skip_bad(rows, bad_span)
        sel = np.flatnonzero(ok)
        names = self.texts(rows.get("name"))
        levels = [self.api_types.get(t, str(t)) if type(t) is int else self.text(t) for t in rows.get("type")]
        pid, tid = _pid_tid(rows.get("globalTid"))
        corr = np.array([_link(v) for v in rows.get("connectionId")], dtype=np.int64)
        self.out.add(EventKind.API, ts[sel], dur[sel], [names[i] for i in sel.tolist()],
                     [levels[i] for i in sel.tolist()], pid=pid[sel], tid=tid[sel], corr=corr[sel])
        return {int(c) for c in corr[sel].tolist() if c >= 0}

    def read_comm_ops(self, tasks: "_Tasks", facts: AscendDbFacts) -> None:
        """COMMUNICATION_OP -> COMM operators on the device their tasks ran on."""
        rows = self.select("COMMUNICATION_OP", ("startNs", "endNs", "opName"),
                           ("opType", "groupName", "opId", "connectionId", "deviceId", "algType", "dataType",
                            "count", "waitNs", "relay", "retry"))
        if rows is None:
            return
        ts, dur, bad_span = self.span(rows)
        has_device = "deviceId" in rows.cols
        device_col, bad_dev = _ints(rows.get("deviceId"), "device", default=-1, lo=-1, hi=_MAX_DEVICE)
        ok = self.skip_bad(rows, bad_span, bad_dev if has_device else [None] * rows.n)
        names, op_types, groups, algs = (self.texts(rows.get(c)) for c in ("opName", "opType", "groupName",
                                                                            "algType"))
        data_types = self.enum("ENUM_HCCL_DATA_TYPE", {})
        dtypes = [data_types.get(v, str(v)) if type(v) is int else self.text(v) for v in rows.get("dataType")]
        corr = np.array([_link(v) for v in rows.get("connectionId")], dtype=np.int64)
        op_ids, counts, waits = rows.get("opId"), rows.get("count"), rows.get("waitNs")
        one_device = facts.devices[0] if len(facts.devices) == 1 else -1
        device = np.full(rows.n, -1, dtype=np.int64)
        unplaced = 0
        for i in range(rows.n):
            if not ok[i]:
                continue
            d = int(device_col[i]) if has_device else -1
            if d < 0:
                d = _only(tasks.devices_of_op.get(op_ids[i])) if type(op_ids[i]) is int else -1
            if d < 0 and corr[i] >= 0:
                d = _only(tasks.devices_of_link.get(int(corr[i])))
            if d < 0:
                d = one_device
            unplaced += d < 0
            device[i] = d
        if unplaced:
            self.note(f"{self.path}: {unplaced} communication operator(s) of table COMMUNICATION_OP have no device "
                      "(no deviceId column, no task on one device); read as host events")
        sel = np.flatnonzero(ok)
        args, types = [], []
        for i in sel.tolist():
            a: dict = {"Accelerator Core": "HCCL"}
            if groups[i]:
                a["group"] = group_id(groups[i])
                a["group_name"] = groups[i]
            if algs[i]:
                a["alg_type"] = algs[i]
            if dtypes[i]:
                a["data_type"] = dtypes[i]
            if counts[i] is not None:
                a["count"] = _plain(counts[i])
            if type(waits[i]) in (int, float) and waits[i] >= 0:
                a["Wait Time(us)"] = f"{waits[i] / 1000.0:.3f}"
            if corr[i] >= 0:
                a["connection_id"] = int(corr[i])
            args.append(_args_text(a))
            types.append(op_types[i] or comm_op_type(names[i]))
        self.out.add(EventKind.COMM, ts[sel], dur[sel], [names[i] for i in sel.tolist()], types,
                     device=device[sel], args=args, corr=corr[sel])

    def read_step_time(self) -> bool:
        """STEP_TIME -> STEP events; True when the table gave steps."""
        rows = self.select("STEP_TIME", ("id", "startNs", "endNs"))
        if rows is None or not rows.n:
            return False
        ts, dur, bad_span = self.span(rows)
        ids, bad_id = _ints(rows.get("id"), "id", lo=-(1 << 31), hi=(1 << 31) - 1)
        ok = self.skip_bad(rows, bad_span, bad_id)
        sel = np.flatnonzero(ok)
        self.out.add(EventKind.STEP, ts[sel], dur[sel], [f"ProfilerStep#{i}" for i in ids[sel].tolist()],
                     "ProfilerStep", step=ids[sel].astype(np.int32))
        return bool(len(sel))

    def read_framework_api(self, tasks: "_Tasks", cann_links: set, steps_given: bool) -> None:
        """PYTORCH_API -> OP / RANGE / STACK / MARK (and STEP without STEP_TIME)."""
        rows = self.select("PYTORCH_API", ("startNs", "endNs", "name"), ("type", "globalTid", "connectionId"))
        if rows is None:
            return
        ts, dur, bad_span = self.span(rows)
        ok = self.skip_bad(rows, bad_span)
        names = self.texts(rows.get("name"))
        kinds = [self.api_types.get(t, "") if type(t) is int else self.text(t) for t in rows.get("type")]
        pid, tid = _pid_tid(rows.get("globalTid"))
        links_of = self.connection_links(rows.get("connectionId"))
        launches = self.op_launches(links_of, tasks.links - cann_links)
        groups: dict[tuple, list[int]] = {}
        steps: list[int] = []
        for i in np.flatnonzero(ok).tolist():
            step = _STEP_RE.match(names[i])
            if step:
                if not steps_given:
                    steps.append(i)
                continue
            kind = kinds[i]
            if kind == "trace":
                key = (EventKind.STACK, "python_function")
            elif kind == "queue":
                key = (EventKind.RANGE, names[i].split("@", 1)[0].lower() or "queue")
            elif kind == "mstx":
                key = (EventKind.RANGE if dur[i] > 0 else EventKind.MARK, "mstx")
            elif kind == "op" or not kind:
                key = (EventKind.OP, "")
            else:
                key = (EventKind.RANGE, kind)
            groups.setdefault(key, []).append(i)
        for (kind, type_), idx in groups.items():
            sel = np.array(idx, dtype=np.int64)
            chosen = [names[i] for i in idx]
            corr = [launches.get(i, -1) for i in idx] if kind == EventKind.OP else [-1] * len(idx)
            # the links the event's corr does not hold (launches a CANN API carries): kept for writers
            extra = [[c for c in links_of.get(i, ()) if c != own] for i, own in zip(idx, corr)]
            self.out.add(kind, ts[sel], dur[sel], chosen, chosen if kind == EventKind.OP else type_,
                         pid=pid[sel], tid=tid[sel], corr=np.array(corr, np.int64),
                         args=[_args_text({"connection_ids": e}) if e else "" for e in extra])
        if steps:
            sel = np.array(steps, dtype=np.int64)
            numbers = [int(_STEP_RE.match(names[i]).group(1)) for i in steps]   # type: ignore[union-attr]
            self.out.add(EventKind.STEP, ts[sel], dur[sel], [f"ProfilerStep#{n}" for n in numbers], "ProfilerStep",
                         pid=pid[sel], tid=tid[sel], step=np.array(numbers, np.int32))

    def connection_links(self, connection_refs: list) -> dict[int, list[int]]:
        """Row -> every connectionId its CONNECTION_IDS reference lists, in table order."""
        if not any(v is not None for v in connection_refs):
            return {}
        rows = self.select("CONNECTION_IDS", ("id", "connectionId"))
        if rows is None:
            return {}
        by_ref: dict = {}
        for ref, link in zip(rows.cols["id"], rows.cols["connectionId"]):
            if type(ref) is int and type(link) is int and link >= 0:
                by_ref.setdefault(ref, []).append(link)
        return {i: by_ref[ref] for i, ref in enumerate(connection_refs) if ref in by_ref}

    @staticmethod
    def op_launches(links_of: dict[int, list[int]], launch_links: set) -> dict[int, int]:
        """Row -> the first of its CONNECTION_IDS links that a task carries and no CANN API does."""
        out = {}
        for row, links in links_of.items():
            chosen = next((c for c in links if c in launch_links), None)
            if chosen is not None:
                out[row] = chosen
        return out

    def read_mstx(self) -> None:
        """MSTX_EVENTS -> MARK (markers) and RANGE events, type ``mstx``."""
        rows = self.select("MSTX_EVENTS", ("startNs",), ("endNs", "eventType", "message", "globalTid", "domainId"))
        if rows is None:
            return
        ts, dur, bad_span = self.span(rows, end_optional=True)
        ok = self.skip_bad(rows, bad_span)
        types = self.enum("ENUM_MSTX_EVENT_TYPE", MSTX_TYPES)
        messages = self.texts(rows.get("message"))
        domains = self.texts(rows.get("domainId")) if "domainId" in rows.cols else [""] * rows.n
        pid, tid = _pid_tid(rows.get("globalTid"))
        etype = rows.get("eventType")
        is_mark = np.array([types.get(t, "") in ("marker", "marker_ex") if type(t) is int else False
                            for t in etype], dtype=bool)
        for mark, kind in ((True, EventKind.MARK), (False, EventKind.RANGE)):
            sel = np.flatnonzero(ok & (is_mark == mark))
            self.out.add(kind, ts[sel], dur[sel] if not mark else np.zeros(len(sel), np.int64),
                         [messages[i] for i in sel.tolist()], "mstx", pid=pid[sel], tid=tid[sel],
                         args=[_args_text({"domain": domains[i]}) if domains[i] else "" for i in sel.tolist()])

    def read_memory_record(self) -> None:
        """MEMORY_RECORD -> COUNTER series in MB, named as memory_record.csv names them; args the row's
        identity (``Component``, ``Device Type``, ``Stream Ptr``) as the text reader keeps it."""
        rows = self.select("MEMORY_RECORD", ("timestamp",),
                           ("component", "totalAllocated", "totalReserved", "totalActive", "streamPtr", "deviceId"))
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("timestamp"), "timestamp")
        ok = self.skip_bad(rows, bad_ts)
        comps = self.texts(rows.get("component"))
        devs = rows.get("deviceId")
        who = [f"{c} NPU:{d}".strip() if type(d) is int and d >= 0 else c for c, d in zip(comps, devs)]
        args = [_args_text({k: v for k, v in (("Component", c), ("Device Type", _npu(d)), ("Stream Ptr", _ptr(p)))
                            if v}) for c, d, p in zip(comps, devs, rows.get("streamPtr"))]
        for col, series in (("totalAllocated", "Total Allocated(MB)"), ("totalReserved", "Total Reserved(MB)"),
                            ("totalActive", "Total Active(MB)")):
            if col in rows.cols:
                self._add_series(ts, ok, rows.cols[col], lambda i: f"{who[i]} {series}", "memory", args, MB)

    def read_op_memory(self) -> None:
        """OP_MEMORY -> one MEMORY event per allocation, as operator_memory.csv rows are read
        (``dur`` the lifetime, 0 with no release; the row's other cells in args under the csv's
        names: times in exact µs text, totals in MB)."""
        rows = self.select("OP_MEMORY", ("name", "size", "allocationTime"), _OP_MEMORY_OPTIONAL)
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("allocationTime"), "allocationTime")
        ok = self.skip_bad(rows, bad_ts)
        idx = _numeric_rows(ok, rows.cols["size"])
        if not idx:
            return
        names = self.texts(rows.get("name"))
        released = rows.get("releaseTime")
        devices = rows.cols.get("deviceId") or [-1] * rows.n
        streams = rows.get("streamPtr")
        cells = {col: rows.get(col) for col, _ in _OP_MEMORY_TIMES + _OP_MEMORY_TOTALS}
        args, dur = [], []
        for i in idx:
            a: dict[str, Any] = {}
            rel = released[i]
            if type(rel) is int and rel >= ts[i]:
                a["Release Time(us)"] = ns_to_us_text(rel)
            for col, csv_name in _OP_MEMORY_TIMES:
                v = cells[col][i]
                if type(v) is int and v >= 0:
                    a[csv_name] = ns_to_us_text(v)
            for col, csv_name in _OP_MEMORY_TOTALS:
                v = cells[col][i]
                if isinstance(v, (int, float)):
                    a[csv_name] = str(v / MB)
            for csv_name, v in (("Stream Ptr", _ptr(streams[i])), ("Device Type", _npu(devices[i]))):
                if v:
                    a[csv_name] = v
            dur.append(rel - int(ts[i]) if "Release Time(us)" in a else 0)
            args.append(_args_text(a))
        sel = np.array(idx, dtype=np.int64)
        self.out.add(EventKind.MEMORY, ts[sel], np.array(dur, np.int64), [names[i] for i in idx], "operator_memory",
                     device=np.array([d if type(d) is int and d >= 0 else -1 for d in (devices[i] for i in idx)],
                                     np.int16),
                     value=np.array([float(rows.cols["size"][i]) for i in idx], np.float64), args=args)

    def read_npu_mem(self) -> None:
        """NPU_MEM -> COUNTER series ``<type> NPU:<d> ddr(B)`` / ``hbm(B)`` (type ``npu_mem``; the
        sample's type and device in args, as memory_record.csv's ``APP`` rows come from its app rows)."""
        rows = self.select("NPU_MEM", ("timestampNs",), ("type", "ddr", "hbm", "deviceId"))
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("timestampNs"), "timestampNs")
        ok = self.skip_bad(rows, bad_ts)
        kinds = self.texts(rows.get("type"))
        devs = rows.get("deviceId")
        who = [f"{k} {_npu(d)}".strip() for k, d in zip(kinds, devs)]
        args = [_args_text({k: v for k, v in (("Component", c), ("Device", _npu(d))) if v})
                for c, d in zip(kinds, devs)]
        for col in ("ddr", "hbm"):
            self._add_series(ts, ok, rows.get(col), lambda i: f"{who[i]} {col}(B)", "npu_mem", args)

    def read_npu_module_mem(self) -> None:
        """NPU_MODULE_MEM -> COUNTER series ``<module> NPU:<d> Total Reserved(MB)`` (type
        ``npu_module_mem``), as npu_module_mem.csv rows are read."""
        rows = self.select("NPU_MODULE_MEM", ("timestampNs", "totalReserved"), ("moduleId", "deviceId"))
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("timestampNs"), "timestampNs")
        ok = self.skip_bad(rows, bad_ts)
        modules = self.enum("ENUM_MODULE", MODULES)
        names = [modules.get(m, "" if m is None else str(m)) for m in rows.get("moduleId")]
        devs = rows.get("deviceId")
        args = [_args_text({k: v for k, v in (("Component", m), ("Device", _npu(d))) if v}) for m, d in zip(names, devs)]
        self._add_series(ts, ok, rows.get("totalReserved"),
                         lambda i: f"{names[i]} {_npu(devs[i])}".strip() + " Total Reserved(MB)", "npu_module_mem",
                         args, MB)

    def _add_series(self, ts: np.ndarray, ok: np.ndarray, values: Sequence, name_of: Callable[[int], str],
                    type_: str, args: Sequence[str], scale: float = 1.0) -> None:
        """One COUNTER event per readable row whose ``values`` cell is a number (divided by ``scale``)."""
        idx = _numeric_rows(ok, values)
        self.out.add(EventKind.COUNTER, ts[np.array(idx, dtype=np.int64)], np.zeros(len(idx), np.int64),
                     [name_of(i) for i in idx], type_, value=np.array([values[i] / scale for i in idx], np.float64),
                     args=[args[i] for i in idx])


def _numeric_rows(ok: np.ndarray, values: Sequence) -> list[int]:
    """The rows kept by ``ok`` whose cell in ``values`` is a number."""
    return [i for i in np.flatnonzero(ok).tolist() if isinstance(values[i], (int, float))]


def _npu(device: Any) -> str:
    """A deviceId cell as the csv files' ``NPU:<n>`` ("" when not a device id)."""
    return f"NPU:{device}" if type(device) is int and 0 <= device < INVALID_U32 else ""


def _ptr(value: Any) -> str:
    """A streamPtr cell as the csv files write it ("" for NULL)."""
    return str(value) if type(value) is int else ""


_OP_MEMORY_TOTALS = (("allocationTotalAllocated", "Allocation Total Allocated(MB)"),
                     ("allocationTotalReserved", "Allocation Total Reserved(MB)"),
                     ("allocationTotalActive", "Allocation Total Active(MB)"),
                     ("releaseTotalAllocated", "Release Total Allocated(MB)"),
                     ("releaseTotalReserved", "Release Total Reserved(MB)"),
                     ("releaseTotalActive", "Release Total Active(MB)"))
_OP_MEMORY_TIMES = (("activeReleaseTime", "Active Release Time(us)"), ("duration", "Duration(us)"),
                    ("activeDuration", "Active Duration(us)"))
_OP_MEMORY_OPTIONAL = ("releaseTime", "deviceId", "streamPtr") + tuple(col for col, _ in _OP_MEMORY_TIMES) + \
    tuple(col for col, _ in _OP_MEMORY_TOTALS)


@dataclass
class _Tasks:
    """What the TASK table told the later tables."""

    devices_of_op: dict = field(default_factory=dict)     # COMMUNICATION_TASK_INFO.opId -> devices
    devices_of_link: dict = field(default_factory=dict)   # connectionId -> devices
    links: set = field(default_factory=set)               # connectionIds of the tasks


def _link(value: Any) -> int:
    """A connectionId cell -> ``corr`` (-1 for NULL, msprof's uint32 "none", or anything not an id)."""
    if type(value) is int and 0 <= value < INVALID_U32:
        return value
    return -1


def _id_text(value: Any) -> Optional[str]:
    """An id cell as kernel_details writes it: the number, ``N/A`` for msprof's "none"."""
    if value is None:
        return None
    if type(value) is int:
        return "N/A" if value == INVALID_U32 or value < 0 else str(value)
    return str(_plain(value))


def _only(values: Optional[set]) -> int:
    """The one value of a set, else -1."""
    return next(iter(values)) if values and len(values) == 1 else -1


def _pid_tid(global_tids: list) -> tuple[np.ndarray, np.ndarray]:
    """``globalTid`` (pid in the high 32 bits, tid in the low 32) -> (pid, tid); 0 where unusable."""
    g = np.array([v if type(v) is int and 0 <= v < 1 << 63 else 0 for v in global_tids], dtype=np.int64)
    return g >> 32, g & 0xFFFFFFFF
