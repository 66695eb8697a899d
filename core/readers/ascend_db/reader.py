"""One database -> events: every table family read in order (see :mod:`npuprof.readers.ascend_db`).

Example::

    >>> read = read_ascend_db(Path("ascend_pytorch_profiler_0.db"))      # doctest: +SKIP
    >>> read.facts.rank, len(read.events)                                # doctest: +SKIP
    (0, 5134)
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Optional

from npuprof.errors import ProfilerDataError
from npuprof.fileio import check_input_file
from .files import db_kind, open_readonly, SQLITE_MAGIC
from .host_apis import _ApiTables
from .memory import _MemoryTables
from .schema import API_TYPES, AscendDbFacts, AscendDbRead, INVALID_U32, _MAX_DEVICE, Warn
from .tasks import _TaskTables


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


class _DbReader(_TaskTables, _ApiTables, _MemoryTables):
    """One open database -> events (see module doc for the rules)."""

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
