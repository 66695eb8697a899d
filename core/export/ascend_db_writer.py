"""The Ascend profiler database (``export_type`` db): ``ascend_{pytorch|mindspore}_profiler_{rank}.db``.

The schema is the one torch_npu writes with ``export_type=db`` (schema
1.0.0 in ``META_DATA``): the tables, column names, declared types, ``ENUM_*``
tables and the ``STRING_IDS`` scheme (every text column is an id into
``STRING_IDS``) of its files, so msprof-analyze's ``cluster -m`` recipes and
MindStudio Insight read npuprof's runs as they read the tool's. Filled from
the event table, one block of rows at a time (bounded memory), many rows per
INSERT statement:

==================  ==============================================================
event               rows
==================  ==============================================================
STEP                ``STEP_TIME`` (id = N of ``ProfilerStep#N``)
RANGE / MARK        ``MSTX_EVENTS`` (eventType 2 start/end, 3 marker_ex;
                    ``domainId`` = the range's domain in ``STRING_IDS``);
                    a device task a reader typed ``device_task`` -> ``TASK``
                    only; ``enqueue``/``dequeue`` -> ``PYTORCH_API`` type queue
OP                  ``PYTORCH_API`` type op (50001); launch links via
                    ``CONNECTION_IDS`` (``PYTORCH_API.connectionId`` = its id;
                    its ``corr`` and its args' ``connection_ids``)
STACK               ``PYTORCH_API`` type trace (50003)
API                 ``CANN_API`` when its level is a CANN one (acl, runtime,
                    node, model, hccl), else ``PYTORCH_API`` type trace (50003)
KERNEL              ``TASK`` + ``COMPUTE_TASK_INFO``
COMM operator       ``COMMUNICATION_OP``; one run by the host (``device`` < 0,
                    no link) is its own HCCL-level call: a ``CANN_API`` row
                    with the operator's span and ``connectionId``
COMM task / link    ``TASK`` + ``COMMUNICATION_TASK_INFO`` (``opId`` = the
                    operator of its group whose span holds its start)
MEMORY              ``OP_MEMORY`` (type ``operator_memory``: operator_memory.csv's
                    columns from args, µs and MB back to exact ns and bytes)
COUNTER memory      ``MEMORY_RECORD`` (the metrics of one instant of a component
                    are one row); ``npu_mem`` -> ``NPU_MEM``; ``npu_module_mem``
                    -> ``NPU_MODULE_MEM`` + ``ENUM_MODULE``
==================  ==============================================================

plus ``SESSION_TIME_INFO`` (first start, last end), ``RANK_DEVICE_MAP``,
``HOST_INFO`` (hostname only where the run records it), ``NPU_INFO`` (only
where the run names the chip) and ``META_DATA``. Nothing is invented:
a CPU run has no ``TASK`` table, a table without rows is not written, and
launch links (``connectionId``) come only from the ``corr`` column.
The name says which framework layout msprof-analyze applies: torch_npu's
runs (``*_ascend_pt``) give ``ascend_pytorch_profiler_{rank}.db``, every
other run ``ascend_mindspore_profiler_{rank}.db`` (npuprof's own runs are
copied as ``*_ascend_ms`` for the Ascend tools, see
:mod:`npuprof.export.ascend_copy`).

Example::

    path = write_ascend_db(result, out_dir)   # out_dir/ascend_mindspore_profiler_0.db
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..analysis.rows import comm_task_mask
from ..analysis.steps import STEP_RE
from ..analysis.memory import memory_samples
from ..analysis.result import AnalysisResult
from ..events import EventKind, EventTable
from ..readers.ascend_db import MODULES
from ..readers.time_text import us_text_to_ns
from ..runinfo import NPUPROF_VERSION, RunOrigin
from .sqlite_db import INSERT_ROWS, StatementThread, building_db, create_table, insert_rows, statement_thread

SCHEMA_VERSION = (1, 0, 0)
INVALID = 4294967295          # the tools' "no value" for 32-bit ids (contextId, modelId, connectionId ...)
NOT_AVAILABLE = 65534         # "N/A" row of the ENUM_HCCL_* tables

ENUM_API_TYPE = {5000: "runtime", 5500: "hccl", 10000: "node", 15000: "model", 20000: "acl", 50001: "op",
                 50002: "queue", 50003: "trace", 50004: "mstx"}
ENUM_MSTX_EVENT_TYPE = {0: "marker", 1: "push/pop", 2: "start/end", 3: "marker_ex"}
ENUM_HCCL_DATA_TYPE = {0: "INT8", 1: "INT16", 2: "INT32", 3: "FP16", 4: "FP32", 5: "INT64", 6: "UINT64",
                       7: "UINT8", 8: "UINT16", 9: "UINT32", 10: "FP64", 11: "BFP16", 12: "INT128",
                       65534: "N/A", 65535: "INVALID_TYPE"}
ENUM_HCCL_LINK_TYPE = {0: "ON_CHIP", 1: "HCCS", 2: "PCIE", 3: "ROCE", 4: "SIO", 5: "HCCS_SW", 6: "STANDARD_ROCE",
                       7: "RESERVED", 65534: "N/A", 65535: "INVALID_TYPE"}
ENUM_HCCL_TRANSPORT_TYPE = {0: "SDMA", 1: "RDMA", 2: "LOCAL", 65534: "N/A", 65535: "INVALID_TYPE"}
ENUM_HCCL_RDMA_TYPE = {0: "RDMA_SEND_NOTIFY", 1: "RDMA_SEND_PAYLOAD", 2: "RDMA_PAYLOAD_PREPARE",
                       3: "RDMA_PAYLOAD_CHECK", 4: "RDMA_PAYLOAD_ACK", 5: "RDMA_SEND_OP", 65534: "N/A",
                       65535: "INVALID_TYPE"}
ENUM_TABLES = {"ENUM_API_TYPE": ENUM_API_TYPE, "ENUM_MSTX_EVENT_TYPE": ENUM_MSTX_EVENT_TYPE,
               "ENUM_HCCL_DATA_TYPE": ENUM_HCCL_DATA_TYPE, "ENUM_HCCL_LINK_TYPE": ENUM_HCCL_LINK_TYPE,
               "ENUM_HCCL_TRANSPORT_TYPE": ENUM_HCCL_TRANSPORT_TYPE, "ENUM_HCCL_RDMA_TYPE": ENUM_HCCL_RDMA_TYPE}

# Column declarations as torch_npu's files carry them (PYTORCH_API's times are TEXT there).
TABLES: dict[str, list[tuple[str, str]]] = {
    "META_DATA": [("name", "TEXT"), ("value", "TEXT")],
    "STRING_IDS": [("id", "INTEGER PRIMARY KEY"), ("value", "TEXT")],
    "SESSION_TIME_INFO": [("startTimeNs", "INTEGER"), ("endTimeNs", "INTEGER")],
    "NPU_INFO": [("id", "INTEGER"), ("name", "TEXT")],
    "HOST_INFO": [("hostUid", "TEXT"), ("hostName", "TEXT")],
    "RANK_DEVICE_MAP": [("rankId", "INTEGER"), ("deviceId", "INTEGER")],
    "STEP_TIME": [("id", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER")],
    "MSTX_EVENTS": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("eventType", "INTEGER"), ("rangeId", "INTEGER"),
                    ("category", "INTEGER"), ("message", "INTEGER"), ("globalTid", "INTEGER"),
                    ("endGlobalTid", "INTEGER"), ("domainId", "INTEGER"), ("connectionId", "INTEGER")],
    "PYTORCH_API": [("startNs", "TEXT"), ("endNs", "TEXT"), ("globalTid", "INTEGER"), ("connectionId", "INTEGER"),
                    ("name", "INTEGER"), ("sequenceNumber", "INTEGER"), ("fwdThreadId", "INTEGER"),
                    ("inputDtypes", "INTEGER"), ("inputShapes", "INTEGER"), ("callchainId", "INTEGER"),
                    ("type", "INTEGER")],
    "CONNECTION_IDS": [("id", "INTEGER"), ("connectionId", "INTEGER")],
    "CANN_API": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("type", "INTEGER"), ("globalTid", "INTEGER"),
                 ("connectionId", "INTEGER PRIMARY KEY"), ("name", "INTEGER")],
    "TASK": [("startNs", "INTEGER"), ("endNs", "INTEGER"), ("deviceId", "INTEGER"), ("connectionId", "INTEGER"),
             ("globalTaskId", "INTEGER"), ("globalPid", "INTEGER"), ("taskType", "INTEGER"),
             ("contextId", "INTEGER"), ("streamId", "INTEGER"), ("taskId", "INTEGER"), ("modelId", "INTEGER")],
    "COMPUTE_TASK_INFO": [("name", "INTEGER"), ("globalTaskId", "INTEGER PRIMARY KEY"), ("blockDim", "INTEGER"),
                          ("mixBlockDim", "INTEGER"), ("taskType", "INTEGER"), ("opType", "INTEGER"),
                          ("inputFormats", "INTEGER"), ("inputDataTypes", "INTEGER"), ("inputShapes", "INTEGER"),
                          ("outputFormats", "INTEGER"), ("outputDataTypes", "INTEGER"),
                          ("outputShapes", "INTEGER"), ("attrInfo", "INTEGER")],
    "COMMUNICATION_OP": [("opName", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER"),
                         ("connectionId", "INTEGER"), ("groupName", "INTEGER"), ("opId", "INTEGER PRIMARY KEY"),
                         ("relay", "INTEGER"), ("retry", "INTEGER"), ("dataType", "INTEGER"),
                         ("algType", "INTEGER"), ("count", "NUMERIC"), ("opType", "INTEGER")],
    "COMMUNICATION_TASK_INFO": [("name", "INTEGER"), ("globalTaskId", "INTEGER"), ("taskType", "INTEGER"),
                                ("planeId", "INTEGER"), ("groupName", "INTEGER"), ("notifyId", "INTEGER"),
                                ("rdmaType", "INTEGER"), ("srcRank", "INTEGER"), ("dstRank", "INTEGER"),
                                ("transportType", "INTEGER"), ("size", "INTEGER"), ("dataType", "INTEGER"),
                                ("linkType", "INTEGER"), ("opId", "INTEGER")],
}
TABLES.update({
    "MEMORY_RECORD": [("component", "INTEGER"), ("timestamp", "INTEGER"), ("totalAllocated", "INTEGER"),
                      ("totalReserved", "INTEGER"), ("totalActive", "INTEGER"), ("streamPtr", "INTEGER"),
                      ("deviceId", "INTEGER")],
    "OP_MEMORY": [("name", "INTEGER"), ("size", "INTEGER"), ("allocationTime", "INTEGER"), ("releaseTime", "INTEGER"),
                  ("activeReleaseTime", "INTEGER"), ("duration", "INTEGER"), ("activeDuration", "INTEGER"),
                  ("allocationTotalAllocated", "INTEGER"), ("allocationTotalReserved", "INTEGER"),
                  ("allocationTotalActive", "INTEGER"), ("releaseTotalAllocated", "INTEGER"),
                  ("releaseTotalReserved", "INTEGER"), ("releaseTotalActive", "INTEGER"), ("streamPtr", "INTEGER"),
                  ("deviceId", "INTEGER")],
    "NPU_MEM": [("type", "INTEGER"), ("ddr", "NUMERIC"), ("hbm", "NUMERIC"), ("timestampNs", "INTEGER"),
                ("deviceId", "INTEGER")],
    "NPU_MODULE_MEM": [("moduleId", "INTEGER"), ("timestampNs", "INTEGER"), ("totalReserved", "NUMERIC"),
                       ("deviceId", "INTEGER")],
    "ENUM_MODULE": [("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")],
})
INDEXES = {"TASK": "CREATE INDEX TaskIndex ON TASK (startNs,globalTaskId)",
           "COMMUNICATION_TASK_INFO": "CREATE INDEX CommunicationTaskIndex ON COMMUNICATION_TASK_INFO (globalTaskId)"}

CANN_API_LEVELS = {"acl": 20000, "ascendcl": 20000, "runtime": 5000, "node": 10000, "model": 15000, "hccl": 5500}
API_OP, API_QUEUE, API_TRACE = 50001, 50002, 50003
DEVICE_TASK = "device_task"              # a reader's type for device tasks that are neither kernel nor communication
QUEUE_RANGES = ("enqueue", "dequeue")    # torch_npu's task queue ranges (PYTORCH_API type "queue")
MSTX_RANGE, MSTX_MARK = 2, 3
# args keys a reader may keep a device task's columns under (kernel_details' spelling first, then CANN's)
KERNEL_KEYS = {
    "taskType": ("Accelerator Core", "Task Type", "task_type", "taskType"),
    "blockDim": ("Block Dim", "block_dim", "blockDim"),
    "mixBlockDim": ("Mix Block Dim", "mix_block_dim", "mixBlockDim"),
    "taskId": ("Task ID", "task_id", "taskId"),
    "modelId": ("Model ID", "model_id", "modelId"),
    "contextId": ("Context ID", "context_id", "contextId"),
    "inputFormats": ("Input Formats", "input_formats", "inputFormats"),
    "inputDataTypes": ("Input Data Types", "input_data_types", "inputDataTypes"),
    "inputShapes": ("Input Shapes", "input_shapes", "inputShapes"),
    "outputFormats": ("Output Formats", "output_formats", "outputFormats"),
    "outputDataTypes": ("Output Data Types", "output_data_types", "outputDataTypes"),
    "outputShapes": ("Output Shapes", "output_shapes", "outputShapes"),
    "attrInfo": ("Attr Info", "attr_info", "attrInfo"),
}
TRANSPORTS = {"SDMA": 0, "RDMA": 1, "LOCAL": 2}
LINKS = {name: i for i, name in ENUM_HCCL_LINK_TYPE.items() if i < 8}
LINK_TRANSPORT = {"HCCS": 0, "PCIE": 0, "SIO": 0, "HCCS_SW": 0, "ON_CHIP": 0, "ROCE": 1, "STANDARD_ROCE": 1}
DATA_TYPES = {name: i for i, name in ENUM_HCCL_DATA_TYPE.items()}
DATA_TYPES.update({"BF16": 11, "FLOAT16": 3, "FLOAT32": 4, "FLOAT": 4, "FP64": 10, "DOUBLE": 10})
_KIND = {k: np.uint8(k) for k in EventKind}
MB = 1024.0 * 1024.0
# memory: operator_memory.csv's columns (the readers' args keys) per OP_MEMORY column
OP_MEMORY_TIMES = (("Release Time(us)", "releaseTime"), ("Active Release Time(us)", "activeReleaseTime"),
                   ("Duration(us)", "duration"), ("Active Duration(us)", "activeDuration"))
OP_MEMORY_TOTALS = ("Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)", "Allocation Total Active(MB)",
                    "Release Total Allocated(MB)", "Release Total Reserved(MB)", "Release Total Active(MB)")
NPU_MEM_SERIES_RE = re.compile(r"^(?P<who>.*?)\s*(?P<metric>ddr|hbm)\(B\)$")
DEVICE_RE = re.compile(r"(?:^|\s)NPU:(\d+)$")
SHAPE_KEYS = ("Input Shapes", "input_shapes", "inputShapes")
VALUES_ROWS = 200        # rows per INSERT statement (one multi-row VALUES list)


def db_framework(result: AnalysisResult) -> str:
    """``pytorch`` for a torch_npu run (``*_ascend_pt``), else ``mindspore``: the layout msprof-analyze applies.

    Example::

        >>> from npuprof.runinfo import RunInfo
        >>> r = AnalysisResult(Path("w_1_20250101000000000_ascend_pt"),
        ...                    RunInfo(Path("w_1_20250101000000000_ascend_pt")), EventTable.empty())
        >>> db_framework(r)
        'pytorch'
    """
    if result.info.origin is RunOrigin.TORCH_NPU or result.run_dir.name.endswith("_ascend_pt"):
        return "pytorch"
    return "mindspore"


def ascend_db_name(result: AnalysisResult) -> str:
    """``ascend_{pytorch|mindspore}_profiler_{rank}.db``, the names msprof-analyze looks for."""
    return f"ascend_{db_framework(result)}_profiler_{result.rank}.db"


def write_ascend_db(result: AnalysisResult, out_dir: Path) -> Path:
    """Write ``out_dir/ascend_{fw}_profiler_{rank}.db`` (temporary name, then renamed); its path."""
    path = Path(out_dir) / ascend_db_name(result)
    with building_db(path) as con, statement_thread(con) as statements:
        _AscendDbWriter(con, statements, result).write()
    return path


def _first(obj: dict, keys: tuple) -> Any:
    for k in keys:
        v = obj.get(k)
        if v is not None and v != "":
            return v
    return None


def _group_name(args: dict) -> str:
    """A communication group's own name (``groupName`` holds the name; the tools hash it into the id
    their summaries use). A reader of Ascend data keeps both (``group_name``, ``group`` = the id)."""
    return str(args.get("group_name") or args.get("group") or "default")


INT64_MAX = 2**63 - 1


def _int(v: Any, default: int) -> int:
    """An INTEGER cell: exact (int(float(2**63 - 1)) is 2**63, too large for SQLite); an unsigned 64-bit
    value past int64 (a text export's notify id 2**64-1, "none") stored as int64's max, as the tool's
    own databases store it."""
    if not isinstance(v, int):
        try:
            v = int(v)
        except (TypeError, ValueError):
            try:
                v = int(float(v))
            except (TypeError, ValueError, OverflowError):
                return default
    return min(v, INT64_MAX) if v >= 0 else max(v, -INT64_MAX - 1)


def global_tid(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """The tools' ``globalTid``: pid in the high 32 bits, tid in the low 32.

    Example::

        >>> global_tid(np.array([3]), np.array([7])).tolist()
        [12884901895]
    """
    return ((pid.astype(np.int64) & 0x7FFFFFFF) << 32) | (tid.astype(np.int64) & 0xFFFFFFFF)


@dataclass
class _Strings:
    """STRING_IDS: the event pool's codes are the ids (no remapping); texts the db adds come after them."""

    pool: list
    used: np.ndarray
    extra: dict = field(default_factory=dict)

    def mark(self, codes: np.ndarray) -> np.ndarray:
        self.used[codes] = True
        return codes

    def id(self, text: str) -> int:
        i = self.extra.get(text)
        if i is None:
            i = self.extra[text] = len(self.pool) + len(self.extra)
        return i

    def rows(self):
        for i in np.flatnonzero(self.used).tolist():
            yield i, self.pool[i]
        yield from ((i, s) for s, i in self.extra.items())


@dataclass
class _Nullable:
    """A column of ints where -1 stands for NULL (ids the writer gives: connection, string)."""

    values: np.ndarray


@dataclass
class _CommOps:
    """The run's communication operators, for the tasks that belong to them (by group and span)."""

    by_group: dict = field(default_factory=dict)   # group -> (starts, ends, op ids, names), sorted by start

    def owner(self, group: str, ts: int) -> tuple[int, Optional[str]]:
        spans = self.by_group.get(group)
        if spans is None:
            return INVALID, None
        starts, ends, ids, names = spans
        j = int(np.searchsorted(starts, ts, side="right")) - 1
        while j >= 0:
            if ends[j] >= ts:
                return int(ids[j]), names[j]
            j -= 1
            if j >= 0 and ts - starts[j] > 10 ** 10:
                break
        return INVALID, None


class _AscendDbWriter:
    def __init__(self, con: sqlite3.Connection, statements: StatementThread, result: AnalysisResult) -> None:
        self.con = statements   # rows are stored on the statement thread while the next ones are built
        self.result = result
        self.ev: EventTable = result.events
        self.strings = _Strings(self.ev.strings, np.zeros(len(self.ev.strings), dtype=bool))
        self.created: set = set()
        self.task_id = 0
        self.conn_index = 0
        corr = self.ev["corr"]
        self.next_free_corr = int(corr.max()) + 1 if len(corr) and int(corr.max()) >= 0 else 0
        self.cann_ids: set = set()
        self.comm_task = comm_task_mask(self.ev) if len(self.ev) else np.zeros(0, bool)
        self.comm_ops = _CommOps()
        self.op_id = 0
        self.max_vars = con.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _create(self, table: str) -> None:
        if table not in self.created:
            create_table(self.con, table, TABLES[table])
            self.created.add(table)

    def _insert(self, table: str, rows: list) -> None:
        """Rows given as tuples (small tables, and those built from each row's args)."""
        if not rows:
            return
        self._create(table)
        width = len(TABLES[table])
        self._insert_flat(table, "(" + ",".join("?" * width) + ")", width, len(rows), list(chain.from_iterable(rows)))

    def _insert_cols(self, table: str, cols: list) -> None:
        """Rows given as columns: a numpy array or list per column, :class:`_Nullable` (-1 is NULL), or a
        constant (None or an int) written into the statement itself, not bound once per row."""
        n = next((len(c.values if isinstance(c, _Nullable) else c) for c in cols
                  if c is not None and not isinstance(c, (int, np.integer))), 0)
        if not n:
            return
        self._create(table)
        exprs, bound = [], []
        for c in cols:
            if c is None:
                exprs.append("NULL")
            elif isinstance(c, (int, np.integer)):
                exprs.append(str(int(c)))
            elif isinstance(c, _Nullable):
                exprs.append("NULLIF(?,-1)")
                bound.append(c.values)
            else:
                exprs.append("?")
                bound.append(c)
        if all(isinstance(b, np.ndarray) and b.dtype.kind in "iub" for b in bound):
            flat = np.stack([b.astype(np.int64, copy=False) for b in bound], axis=1).ravel().tolist()
        else:
            flat = list(chain.from_iterable(zip(*(b.tolist() if isinstance(b, np.ndarray) else b for b in bound))))
        self._insert_flat(table, "(" + ",".join(exprs) + ")", len(bound), n, flat)

    def _insert_flat(self, table: str, one: str, width: int, n: int, flat: list) -> None:
        """``n`` rows of ``width`` bound values each (``flat``, row after row): many rows per INSERT
        statement (one VALUES list), which costs SQLite and the sqlite3 module far less per row than
        one statement execution per row."""
        per = max(1, min(VALUES_ROWS, self.max_vars // max(width, 1)))
        full = n // per
        if full:
            sql = f"INSERT INTO {table} VALUES " + ",".join([one] * per)
            step = per * width
            if width:
                self.con.executemany(sql, (flat[i:i + step] for i in range(0, full * step, step)))
            else:
                self.con.executemany(sql, ((),) * full)
        rest = n - full * per
        if rest:
            self.con.execute(f"INSERT INTO {table} VALUES " + ",".join([one] * rest), flat[full * per * width:])

    def _args(self, codes: np.ndarray) -> list[dict]:
        return self.ev.args_objects(codes)

    def _text_id(self, obj: dict, keys: tuple, default: str = "N/A") -> int:
        v = _first(obj, keys)
        return self.strings.id(default if v is None else str(v))

    # -- the whole file ---------------------------------------------------------------------------------------
    def write(self) -> None:
        ev = self.ev
        self._write_meta()
        self._index_comm_ops()
        kinds = ev["kind"]
        for lo in range(0, len(ev), INSERT_ROWS):
            hi = min(len(ev), lo + INSERT_ROWS)
            block = kinds[lo:hi]
            for kind, fn in ((EventKind.STEP, self._steps), (EventKind.RANGE, self._ranges),
                             (EventKind.MARK, self._mstx), (EventKind.OP, self._framework_ops),
                             (EventKind.STACK, self._python_functions),
                             (EventKind.API, self._apis), (EventKind.KERNEL, self._kernels),
                             (EventKind.COMM, self._comm)):
                rows = np.flatnonzero(block == _KIND[kind])
                if len(rows):
                    fn(rows + lo)
        self._write_memory()
        self._write_run_tables()
        self._insert("STRING_IDS", list(self.strings.rows()))
        for table, sql in INDEXES.items():
            if table in self.created:
                self.con.execute(sql)

    def _write_meta(self) -> None:
        major, minor, micro = SCHEMA_VERSION
        self._insert("META_DATA", [("SCHEMA_VERSION_MICRO", str(micro)), ("SCHEMA_VERSION_MINOR", str(minor)),
                                   ("SCHEMA_VERSION_MAJOR", str(major)), ("SCHEMA_VERSION", f"{major}.{minor}.{micro}"),
                                   ("NPUPROF_VERSION", NPUPROF_VERSION)])
        for table, values in ENUM_TABLES.items():
            create_table(self.con, table, [("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")])
            insert_rows(self.con, table, 2, sorted(values.items()))

    def _write_run_tables(self) -> None:
        ev, info = self.ev, self.result.info
        if len(ev):
            end = ev["ts"] + ev["dur"]
            self._insert("SESSION_TIME_INFO", [(int(ev["ts"].min()), int(end.max()))])
        devices = ev["device"][ev["device"] >= 0] if len(ev) else np.zeros(0, np.int16)
        device = info.device_id if info.device_id is not None else (int(devices.min()) if len(devices) else None)
        self._insert("RANK_DEVICE_MAP", [(info.rank, device if device is not None else -1)])
        if info.hostname:
            self._insert("HOST_INFO", [("", info.hostname)])
        chip = info.raw.get("npu_name") or (info.raw.get("npuprof") or {}).get("npu_name") \
            if isinstance(info.raw, dict) else None
        if chip and device is not None:
            self._insert("NPU_INFO", [(device, str(chip))])

    # -- one kind of event at a time -------------------------------------------------------------------------
    def _steps(self, rows: np.ndarray) -> None:
        ev = self.ev
        out = []
        for code, ts, dur in zip(ev["name"][rows].tolist(), ev["ts"][rows].tolist(), ev["dur"][rows].tolist()):
            m = STEP_RE.search(ev.strings[code])
            if m:
                out.append((int(m.group(1)), ts, ts + dur))
        self._insert("STEP_TIME", out)

    def _links(self, rows: np.ndarray) -> np.ndarray:
        corr = self.ev["corr"][rows]
        return np.where(corr >= 0, corr, INVALID)

    def _ranges(self, rows: np.ndarray) -> None:
        """Device tasks without kernel or communication info -> TASK; the framework's queue
        ranges -> its API table; user ranges (record_function, mstx) -> MSTX_EVENTS."""
        ev = self.ev
        types = np.array([ev.strings[c] for c in ev["type"][rows].tolist()], dtype=object)
        device_task = (types == DEVICE_TASK) & (ev["device"][rows] >= 0)
        queue = np.isin(types, QUEUE_RANGES)
        if device_task.any():
            task_rows = rows[device_task]
            args = self._args(ev["args"][task_rows])
            types_ = [self._text_id(a, KERNEL_KEYS["taskType"], ev.strings[ev["name"][r]])
                      for r, a in zip(task_rows.tolist(), args)]
            self._task_rows(task_rows, self._new_task_ids(len(task_rows)), types_, args)
        if queue.any():
            self._framework_rows(rows[queue], API_QUEUE)
        user = ~device_task & ~queue
        if user.any():
            self._mstx(rows[user])

    def _python_functions(self, rows: np.ndarray) -> None:
        self._framework_rows(rows, API_TRACE)

    def _mstx(self, rows: np.ndarray) -> None:
        ev = self.ev
        kind = ev["kind"][rows]
        ts = ev["ts"][rows]
        end = ts + ev["dur"][rows]
        gtid = global_tid(ev["pid"][rows], ev["tid"][rows])
        event_type = np.where(kind == _KIND[EventKind.MARK], MSTX_MARK, MSTX_RANGE)
        message = self.strings.mark(ev["name"][rows])
        domain = self.strings.mark(ev["type"][rows])
        self._insert_cols("MSTX_EVENTS", [ts, end, event_type, INVALID, INVALID, message, gtid, gtid, domain,
                                          self._links(rows)])

    def _framework_rows(self, rows: np.ndarray, api_type: int) -> None:
        """PYTORCH_API rows; a row's links (its ``corr``, then its args' ``connection_ids``) get one
        ``connectionId`` (numbered in row order) and their CONNECTION_IDS rows. Args are looked at
        once per distinct args text."""
        ev = self.ev
        n = len(rows)
        ts = ev["ts"][rows]
        corr = ev["corr"][rows]
        codes = ev["args"][rows]
        extra_links: Optional[list] = None
        shapes: Any = None
        if (codes != 0).any():
            uniq, first, inv = np.unique(codes, return_index=True, return_inverse=True)
            inv = inv.reshape(-1)
            args = self._args(uniq)
            extra = [[int(x) for x in a.get("connection_ids", ())] for a in args]
            if any(extra):
                extra_links = [extra[j] for j in inv.tolist()]
            if api_type == API_OP:
                shape_id = np.full(len(uniq), -1, np.int64)
                for j in np.argsort(first, kind="stable").tolist():   # new string ids in the order rows use them
                    v = _first(args[j], SHAPE_KEYS)
                    if v is not None:
                        shape_id[j] = self.strings.id(str(v))
                if (shape_id >= 0).any():
                    shapes = _Nullable(shape_id[inv])
        linked = corr >= 0
        own = linked if extra_links is None else linked | np.array([bool(x) for x in extra_links], dtype=bool)
        count = int(own.sum())
        conn: Any = None
        if count:
            conn_ids = np.full(n, -1, np.int64)
            conn_ids[own] = np.arange(self.conn_index, self.conn_index + count, dtype=np.int64)
            self.conn_index += count
            if extra_links is None:
                self._insert_cols("CONNECTION_IDS", [conn_ids[linked], corr[linked]])
            else:
                links = []
                for i in np.flatnonzero(own).tolist():
                    c, cid = int(corr[i]), int(conn_ids[i])
                    links += [(cid, x) for x in ([c] if c >= 0 else []) + extra_links[i]]
                self._insert("CONNECTION_IDS", links)
            conn = _Nullable(conn_ids)
        self._insert_cols("PYTORCH_API", [
            ts, ts + ev["dur"][rows], global_tid(ev["pid"][rows], ev["tid"][rows]), conn,
            self.strings.mark(ev["name"][rows]), None, None, None, shapes, None, api_type])

    def _framework_ops(self, rows: np.ndarray) -> None:
        self._framework_rows(rows, API_OP)

    def _apis(self, rows: np.ndarray) -> None:
        ev = self.ev
        type_codes = ev["type"][rows]
        uniq, inv = np.unique(type_codes, return_inverse=True)
        level = np.array([CANN_API_LEVELS.get(ev.strings[c].lower(), 0) for c in uniq.tolist()])[inv.reshape(-1)]
        cann = level > 0
        if (~cann).any():
            self._framework_rows(rows[~cann], API_TRACE)
        if not cann.any():
            return
        rows, level = rows[cann], level[cann]
        corr = ev["corr"][rows].tolist()
        ids = []
        for c in corr:   # connectionId is CANN_API's primary key: unlinked or repeated calls get fresh ids
            if c < 0 or c in self.cann_ids:
                c = self.next_free_corr
                self.next_free_corr += 1
            self.cann_ids.add(c)
            ids.append(c)
        ts = ev["ts"][rows]
        self._insert_cols("CANN_API", [ts, ts + ev["dur"][rows], level, global_tid(ev["pid"][rows], ev["tid"][rows]),
                                       np.array(ids, dtype=np.int64), self.strings.mark(ev["name"][rows])])

    def _new_task_ids(self, n: int) -> list:
        ids = list(range(self.task_id, self.task_id + n))
        self.task_id += n
        return ids

    def _task_rows(self, rows: np.ndarray, task_ids: list, task_types: list, args: list) -> None:
        ev = self.ev
        ts = ev["ts"][rows]
        pid = self.result.info.pid
        pids = [pid] * len(rows) if pid else ev["pid"][rows].tolist()
        self._insert("TASK", list(zip(
            ts.tolist(), (ts + ev["dur"][rows]).tolist(), ev["device"][rows].tolist(), self._links(rows).tolist(),
            task_ids, pids, task_types, [_int(_first(a, KERNEL_KEYS["contextId"]), INVALID) for a in args],
            ev["stream"][rows].tolist(), [_int(_first(a, KERNEL_KEYS["taskId"]), INVALID) for a in args],
            [_int(_first(a, KERNEL_KEYS["modelId"]), INVALID) for a in args])))

    def _kernels(self, rows: np.ndarray) -> None:
        ev = self.ev
        args = self._args(ev["args"][rows])
        task_ids = self._new_task_ids(len(rows))
        task_types = [self._text_id(a, KERNEL_KEYS["taskType"]) for a in args]
        self._task_rows(rows, task_ids, [self._text_id(a, ("device_task_type",) + KERNEL_KEYS["taskType"])
                                         for a in args], args)
        text = {k: [self._text_id(a, KERNEL_KEYS[k]) for a in args]
                for k in ("inputFormats", "inputDataTypes", "inputShapes", "outputFormats", "outputDataTypes",
                          "outputShapes", "attrInfo")}
        self._insert("COMPUTE_TASK_INFO", list(zip(
            self.strings.mark(ev["name"][rows]).tolist(), task_ids,
            [_int(_first(a, KERNEL_KEYS["blockDim"]), 0) for a in args],
            [_int(_first(a, KERNEL_KEYS["mixBlockDim"]), 0) for a in args], task_types,
            self.strings.mark(ev["type"][rows]).tolist(), text["inputFormats"], text["inputDataTypes"],
            text["inputShapes"], text["outputFormats"], text["outputDataTypes"], text["outputShapes"],
            text["attrInfo"])))

    # -- communication -----------------------------------------------------------------------------------------
    def _index_comm_ops(self) -> None:
        """Number the communication operators (time order) before any task refers to one."""
        ev = self.ev
        if not len(ev):
            return
        rows = np.flatnonzero((ev["kind"] == _KIND[EventKind.COMM]) & ~self.comm_task)
        self.comm_op_rows = {}
        groups: dict = {}
        for i, (r, a) in enumerate(zip(rows.tolist(), self._args(ev["args"][rows]))):
            op_id = i + 1
            self.comm_op_rows[r] = op_id
            group = _group_name(a)
            groups.setdefault(group, []).append((int(ev["ts"][r]), int(ev["ts"][r] + ev["dur"][r]), op_id,
                                                 ev.strings[ev["name"][r]]))
        for group, spans in groups.items():
            spans.sort()
            self.comm_ops.by_group[group] = (np.array([s[0] for s in spans]), np.array([s[1] for s in spans]),
                                             np.array([s[2] for s in spans]), [s[3] for s in spans])

    def _comm(self, rows: np.ndarray) -> None:
        task = self.comm_task[rows]
        if (~task).any():
            self._comm_ops(rows[~task])
        if task.any():
            self._comm_tasks(rows[task])

    def _comm_ops(self, rows: np.ndarray) -> None:
        ev = self.ev
        args = self._args(ev["args"][rows])
        ts = ev["ts"][rows]
        out = []
        for r, t, end, name, typ, link, a in zip(rows.tolist(), ts.tolist(), (ts + ev["dur"][rows]).tolist(),
                                                 self.strings.mark(ev["name"][rows]).tolist(),
                                                 self.strings.mark(ev["type"][rows]).tolist(),
                                                 self._links(rows).tolist(), args):
            group = _group_name(a)
            count = _first(a, ("count", "Count"))
            if link == INVALID and ev["device"][r] < 0:
                link = self._host_collective_call(r, name)
            out.append((name, t, end, link, self.strings.id(group), self.comm_op_rows[r], 0, 0,
                        DATA_TYPES.get(str(_first(a, ("data_type", "dataType")) or "N/A").upper(), NOT_AVAILABLE),
                        self._text_id(a, ("alg_type", "algType")), None if count is None else float(count),
                        typ if ev.strings[ev["type"][r]] else name))
        self._insert("COMMUNICATION_OP", out)

    def _host_collective_call(self, row: int, name: int) -> int:
        """A collective run by the host (CPU: no device task) is its own HCCL-level call: its CANN_API row
        spans the operator itself and shares its connectionId, as msprof-analyze joins them."""
        ev = self.ev
        link = self.next_free_corr
        self.next_free_corr += 1
        self.cann_ids.add(link)
        ts = int(ev["ts"][row])
        gtid = int(global_tid(ev["pid"][row:row + 1], ev["tid"][row:row + 1])[0])
        self._insert("CANN_API", [(ts, ts + int(ev["dur"][row]), CANN_API_LEVELS["hccl"], gtid, link, name)])
        return link

    def _comm_tasks(self, rows: np.ndarray) -> None:
        ev = self.ev
        args = self._args(ev["args"][rows])
        task_ids = self._new_task_ids(len(rows))
        names = [ev.strings[c] for c in ev["name"][rows].tolist()]
        task_types = [self.strings.id(str(a.get("task_type") or n)) for a, n in zip(args, names)]
        self._task_rows(rows, task_ids, task_types, args)
        out = []
        for t, gid, ttype, a in zip(ev["ts"][rows].tolist(), task_ids, task_types, args):
            group = _group_name(a)
            op_id, op_name = self.comm_ops.owner(group, t)
            link = str(_first(a, ("link_type", "linkType")) or a.get("transport") or "").upper()
            transport = str(_first(a, ("transport_type", "transportType")) or "").upper()
            transport_id = TRANSPORTS.get(transport, TRANSPORTS.get(link, LINK_TRANSPORT.get(link, NOT_AVAILABLE)))
            link_id = LINKS.get(link, 0 if link == "LOCAL" else NOT_AVAILABLE)
            out.append((self.strings.id(op_name or "N/A"), gid, ttype, _int(a.get("plane_id"), 0),
                        self.strings.id(group), _int(a.get("notify_id"), INVALID),
                        _int(a.get("rdma_type"), NOT_AVAILABLE), _int(a.get("src_rank"), INVALID),
                        _int(a.get("dst_rank"), INVALID), transport_id, _int(a.get("size"), 0),
                        DATA_TYPES.get(str(_first(a, ("data_type", "dataType")) or "N/A").upper(), NOT_AVAILABLE),
                        link_id, op_id))
        self._insert("COMMUNICATION_TASK_INFO", out)

    # -- memory ------------------------------------------------------------------------------------------------
    def _rows_of(self, kind: EventKind, type_: str) -> np.ndarray:
        code = self.ev.code_of(type_) if len(self.ev) else -1
        if code < 0:
            return np.zeros(0, np.int64)
        return np.flatnonzero((self.ev["kind"] == _KIND[kind]) & (self.ev["type"] == code))

    def _write_memory(self) -> None:
        """OP_MEMORY, MEMORY_RECORD, NPU_MEM and NPU_MODULE_MEM from the memory events the readers make
        of torch_npu's files (see :mod:`npuprof.readers.ascend_db`), each only when the run has them."""
        self._op_memory(self._rows_of(EventKind.MEMORY, "operator_memory"))
        self._memory_record()
        self._npu_mem()
        self._npu_module_mem()

    def _device(self, row: int, text: Any) -> Optional[int]:
        """A memory row's deviceId: the event's device, else the ``NPU:<n>`` its file names; NULL for others."""
        d = int(self.ev["device"][row])
        if d >= 0:
            return d
        m = DEVICE_RE.search(str(text or ""))
        return int(m.group(1)) if m else None

    def _op_memory(self, rows: np.ndarray) -> None:
        """One row per allocation event, in torch_npu's order: the framework's allocations (those with a
        stream) by allocation time, then GE's (no stream) by release time; all by allocation time when
        no allocation records a stream."""
        if not len(rows):
            return
        ev = self.ev
        out, keys = [], []
        for r, a in zip(rows.tolist(), self._args(ev["args"][rows])):
            ts = int(ev["ts"][r])
            times = {col: _us_ns(a.get(key)) for key, col in OP_MEMORY_TIMES}
            stream = _int(a.get("Stream Ptr"), -1)
            out.append((int(self.strings.mark(ev["name"][r:r + 1])[0]), int(round(float(ev["value"][r]))), ts,
                        times["releaseTime"], times["activeReleaseTime"], times["duration"], times["activeDuration"],
                        *(_mb_bytes(a.get(k)) for k in OP_MEMORY_TOTALS), stream if stream >= 0 else None,
                        self._device(r, a.get("Device Type"))))
            release = times["releaseTime"]
            keys.append((0, ts) if stream >= 0 else (1, release if release is not None else ts))
        if not any(k[0] == 0 for k in keys):     # no framework/GE split (not torch_npu's data): by allocation time
            keys = [(0, row[2]) for row in out]
        order = sorted(range(len(out)), key=keys.__getitem__)
        self._insert("OP_MEMORY", [out[i] for i in order])

    def _samples(self, series_type: str, device_key: str, pattern: Optional[re.Pattern] = None) -> list:
        """The series' samples (:func:`~npuprof.analysis.memory.memory_samples`) as
        (ts, component, deviceId, streamPtr, {metric: value in bytes, or as written}), in time order."""
        found = []
        for smp in memory_samples(self.ev, series_type, device_key, **({"pattern": pattern} if pattern else {})):
            stream = _int(smp.stream, -1)
            found.append((smp.ts, smp.component, self._device(smp.row, smp.device), stream if stream >= 0 else None,
                          {k: v * MB if unit == "MB" else v for k, (v, unit) in smp.values.items()}))
        return found

    def _memory_record(self) -> None:
        """MEMORY_RECORD: one row per instant of a component, by time then component (as torch_npu)."""
        found = sorted(self._samples("memory", "Device Type"), key=lambda x: (x[0], x[1]))
        self._insert("MEMORY_RECORD", [
            (self.strings.id(comp), ts, *(_bytes(v.get(f"Total {m}")) for m in ("Allocated", "Reserved", "Active")),
             stream, device) for ts, comp, device, stream, v in found])

    def _npu_mem(self) -> None:
        """NPU_MEM: one row per sample of a type (app, device), by type then time (as torch_npu)."""
        found = sorted(self._samples("npu_mem", "Device", NPU_MEM_SERIES_RE), key=lambda x: (x[1], x[0]))
        self._insert("NPU_MEM", [(self.strings.id(comp), _numeric(v.get("ddr")), _numeric(v.get("hbm")), ts, device)
                                 for ts, comp, device, _, v in found])

    def _npu_module_mem(self) -> None:
        """NPU_MODULE_MEM: one row per sample of a module, by time then module id (as torch_npu), and
        ENUM_MODULE (a module it does not list gets the next id)."""
        found = self._samples("npu_module_mem", "Device")
        if not found:
            return
        modules = {name: i for i, name in MODULES.items()}
        out = []
        for ts, comp, device, _, v in found:
            if comp not in modules:
                modules[comp] = max(modules.values()) + 1
            out.append((modules[comp], ts, _numeric(v.get("Total Reserved")), device))
        out.sort(key=lambda x: (x[1], x[0]))
        create_table(self.con, "ENUM_MODULE", TABLES["ENUM_MODULE"])
        insert_rows(self.con, "ENUM_MODULE", 2, sorted((i, name) for name, i in modules.items()))
        self._insert("NPU_MODULE_MEM", out)


def _us_ns(value: Any) -> Optional[int]:
    """A µs cell as the files write it -> integer ns (None when empty or unreadable)."""
    if value is None or value == "":
        return None
    try:
        return us_text_to_ns(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _bytes(value: Optional[float]) -> Optional[int]:
    return None if value is None or value != value else int(round(value))


def _mb_bytes(value: Any) -> Optional[int]:
    """An MB cell (the files' text, or a number) -> whole bytes, as the database stores them."""
    if value is None or value == "":
        return None
    try:
        return _bytes(float(value) * MB)
    except (TypeError, ValueError, OverflowError):
        return None


def _numeric(value: Optional[float]) -> Any:
    """A NUMERIC cell: whole numbers as integers (as sqlite itself stores them), others as they are."""
    if value is None or value != value:
        return None
    return int(value) if float(value).is_integer() else value
