"""Append-only, crash-safe raw event files.

Layout: ``<run_dir>/NPUPROF/events_<pid>_<seq>.npr`` segments. Each segment
is a sequence of framed records::

    b"NPR1" | u32 payload length | u32 crc32(payload) | payload

and each payload is one self-contained chunk of an :class:`EventTable`::

    u32 header length | header JSON {"n": rows, "strings": [...]} | columns

with the numeric and string-code columns in ``COLUMN_ORDER``, little endian,
then the optional columns the header lists in ``"cols"`` (``corr``, only
when a chunk has launch links). Files written before ``corr`` existed have
no ``"cols"`` and read with ``corr = -1``; host-only chunks stay that size.
A column that holds one value throughout the chunk (the writer passes it as
a stride-0 view: a thread's ``pid``/``tid``, host events' ``device``,
``stream``, ``value``, ``step``, most ``type``/``args``) is not written out:
the header's ``"const"`` maps it to that value (string columns: its code).
``ts`` is always written, so a record spends at least 8 bytes per row
(:data:`MIN_ROW_BYTES`). Host annotations take ~25 bytes per event this way
instead of 67. Files without ``"const"`` read as before.
Records are written with one ``write`` on an ``O_APPEND`` descriptor, so a
SIGKILL can only leave a torn *last* record; the reader checks length and CRC,
drops a torn tail and resynchronises on the next magic after damage in the
middle, reporting what it skipped. Nothing is fsynced per record: the page
cache survives a killed process; ``close()`` fsyncs.

Example::

    w = RawWriter(run_dir / "NPUPROF")
    w.append(table)
    w.close()
    events, report = read_raw_dir(run_dir / "NPUPROF")
"""
from __future__ import annotations

import itertools
import json
import os
import re
import struct
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

import numpy as np

from .errors import ProfilerDataError
from .events import (JOINED_CONSTANT, NUMERIC_COLUMNS, STRING_COLUMNS, EventTable, StringPool, constant_column,
                     is_constant_column, used_strings, joined_value, pool_remap, put_column, same_value)
from .fileio import atomic_write, check_input_file, open_private, secure_mkdir
from .pages import populate
from .sigsafe import SignalSafeLock

MAGIC = b"NPR1"
FRAME = struct.Struct("<4sII")
U32 = struct.Struct("<I")
OPTIONAL_COLUMNS = ("corr",)   # written only when set; old files lack them (default -1)
COLUMN_ORDER = tuple(k for k in NUMERIC_COLUMNS if k not in OPTIONAL_COLUMNS) + STRING_COLUMNS
_DTYPES = {**{k: np.dtype(v).newbyteorder("<") for k, v in NUMERIC_COLUMNS.items()},
           **{k: np.dtype("<i4") for k in STRING_COLUMNS}}
RAW_DIR = "NPUPROF"
SEGMENT_GLOB = "events_*.npr"
STORAGE_REPORT = "storage.json"
DEFAULT_SEGMENT_BYTES = 32 << 20
MAX_RECORD_BYTES = 1 << 30
_SEGMENT_RE = re.compile(r"^events_(\d+)_(\d+)\.npr$")
# The one call that puts bytes on disk; tests replace it to inject ENOSPC/EIO.
_write = os.write


def encode_chunk(table: EventTable) -> bytes:
    """Serialise a table as one record payload (strings restricted to those used)."""
    return encode_record(table)[FRAME.size:].tobytes()


def encode_record(table: EventTable) -> np.ndarray:
    """One whole framed record (frame, then :func:`encode_chunk`'s payload) as a uint8 array.

    The record is allocated once and each column is copied straight into it
    (a stride-0 column, one value throughout, is a fill): no per-column bytes
    objects, no joins.
    """
    cols = table.cols
    n = len(table)
    seen = np.zeros(len(table.strings), dtype=bool)
    for key in STRING_COLUMNS:
        col = cols[key]
        seen[col[:1] if is_constant_column(col) else col] = True
    remap, strings = used_strings(seen, table.strings)   # remap None: a flushed chunk's own pool
    extra = [k for k in OPTIONAL_COLUMNS if n and int(cols[k].max()) >= 0]
    head: dict = {"n": n, "strings": strings}
    if extra:
        head["cols"] = extra
    const = {k: _const_value(cols[k], remap if k in STRING_COLUMNS else None)
             for k in (*COLUMN_ORDER, *extra) if k != "ts" and is_constant_column(cols[k])}
    if const:
        head["const"] = const
    header = json.dumps(head, ensure_ascii=False).encode("utf-8")
    keys = [k for k in (*COLUMN_ORDER, *extra) if k not in const]
    start = FRAME.size + U32.size + len(header)
    size = start + n * sum(_DTYPES[k].itemsize for k in keys)
    record = np.empty(size, dtype=np.uint8)
    U32.pack_into(record, FRAME.size, len(header))
    record[FRAME.size + U32.size:start] = np.frombuffer(header, dtype=np.uint8)
    offset = start
    for key in keys:
        dt = _DTYPES[key]
        end = offset + n * dt.itemsize
        dst = record[offset:end].view(dt)
        col = cols[key]
        if remap is not None and key in STRING_COLUMNS:
            col = remap[col]
        np.copyto(dst, col, casting="unsafe")
        offset = end
    FRAME.pack_into(record, 0, MAGIC, size - FRAME.size, zlib.crc32(record[FRAME.size:]))
    return record


def _const_value(col: np.ndarray, remap: Optional[np.ndarray]) -> object:
    """The one value of a stride-0 column as JSON takes it (a string column's code remapped)."""
    value = col[0].item()
    return int(remap[value]) if remap is not None else value


def _const_column(value: object, key: str, n: int, copy: bool) -> np.ndarray:
    """A ``"const"`` entry as a column of ``n`` rows: a stride-0 view, or filled when ``copy``."""
    dtype = _DTYPES[key].newbyteorder("=")
    if type(value) is not int and not (type(value) is float and dtype.kind == "f"):
        raise ValueError(f"constant of column {key!r} is {value!r}, not a number of its type")
    scalar = np.array(value, dtype=dtype)   # out of the type's range: OverflowError
    if scalar.item() != value and value == value:   # NaN != NaN; anything else must survive the cast
        raise ValueError(f"constant of column {key!r} does not fit {dtype}")
    return np.full(n, scalar) if copy else np.broadcast_to(scalar, (n,))


def decode_chunk(payload: bytes, copy: bool = True) -> EventTable:
    """Inverse of :func:`encode_chunk`; raises ValueError (or TypeError,
    KeyError ...) on a payload that is not one. With ``copy=False`` the
    columns are read-only views of ``payload`` (valid while it is)."""
    if len(payload) < U32.size:
        raise ValueError(f"payload of {len(payload)} bytes is shorter than its header length field")
    (hlen,) = U32.unpack_from(payload, 0)
    if U32.size + hlen > len(payload):
        raise ValueError("header length beyond the payload")
    header = json.loads(str(payload[4:4 + hlen], "utf-8"))
    n, strings = int(header["n"]), header["strings"]
    extra = header.get("cols", [])
    const = header.get("const", {})
    if not isinstance(strings, list) or n < 0 or not isinstance(extra, list) \
            or not set(extra) <= set(OPTIONAL_COLUMNS) or len(set(extra)) != len(extra) \
            or not isinstance(const, dict) or not set(const) <= set(COLUMN_ORDER).union(extra) - {"ts"}:
        raise ValueError("bad chunk header")
    offset = 4 + hlen
    numeric, codes = {}, {}
    for key in (*COLUMN_ORDER, *extra):
        dt = _DTYPES[key]
        if key in const:
            arr = _const_column(const[key], key, n, copy)
        else:
            arr = np.frombuffer(payload, dtype=dt, count=n, offset=offset).astype(dt.newbyteorder("="), copy=copy)
            offset += n * dt.itemsize
        (codes if key in STRING_COLUMNS else numeric)[key] = arr
    if offset != len(payload):
        raise ValueError("chunk length mismatch")
    for key in STRING_COLUMNS:
        if n and (codes[key].min() < 0 or codes[key].max() >= len(strings)):
            raise ValueError("string code out of range")
    return EventTable.from_codes(numeric, codes, [str(s) for s in strings])


class RawWriteError(OSError):
    """Writing raw data failed (disk full, I/O error, file size limit)."""


@dataclass
class StorageReport:
    """What the storage limit aged out (recorded in ``NPUPROF/storage.json``)."""

    limit_bytes: Optional[int]
    aged_out_segments: list = field(default_factory=list)
    bytes_aged_out: int = 0


class RawWriter:
    """Appends framed chunks to rotating segment files in one directory.

    Thread-safe. ``storage_limit`` (bytes) ages out the oldest segments so
    the directory stays under the limit, and records it in storage.json.
    """

    def __init__(self, directory: Path, storage_limit: Optional[int] = None,
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 on_error: Optional[Callable[[BaseException], None]] = None) -> None:
        self.directory = secure_mkdir(directory)
        self.storage_limit = storage_limit
        self.segment_bytes = segment_bytes if storage_limit is None else max(1 << 16, min(segment_bytes, storage_limit // 4))
        self.on_error = on_error
        self.report = StorageReport(limit_bytes=storage_limit)
        self._lock = SignalSafeLock()   # a signal handler must not re-enter it
        self._seq = 0
        self._fd: Optional[int] = None
        self._size = 0
        self._segments: list[tuple[Path, int]] = []
        self.failed: Optional[BaseException] = None
        self.events_written = 0
        self.events_failed = 0      # events handed over but not on disk (write error)

    def _open_segment(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._seq += 1
        path = self.directory / f"events_{os.getpid()}_{self._seq:05d}.npr"
        self._fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self._size = 0
        self._segments.append((path, 0))

    def append(self, table: EventTable) -> None:
        """Write one chunk; on an OS error mark the writer failed and raise RawWriteError."""
        if not len(table):
            return
        record = encode_record(table)
        with self._lock:
            if self.failed is not None:
                self.events_failed += len(table)
                raise RawWriteError(f"raw writer stopped after an earlier error: {self.failed}")
            try:
                if self._fd is None or self._size + len(record) > self.segment_bytes and self._size:
                    self._open_segment()
                view = memoryview(record)
                while view:
                    written = _write(self._fd, view)
                    view = view[written:]
                self._size += len(record)
                path, _ = self._segments[-1]
                self._segments[-1] = (path, self._size)
                self.events_written += len(table)
                self._enforce_limit()
            except OSError as e:
                self.failed = e
                self.events_failed += len(table)
                raise RawWriteError(e.errno, f"writing raw data in {self.directory} failed: {e.strerror}") from e

    def _enforce_limit(self) -> None:
        if self.storage_limit is None:
            return
        total = sum(size for _, size in self._segments)
        while total > self.storage_limit and len(self._segments) > 1:
            path, size = self._segments.pop(0)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            total -= size
            self.report.aged_out_segments.append(path.name)
            self.report.bytes_aged_out += size
            atomic_write(self.directory / STORAGE_REPORT, json.dumps(self.report.__dict__, indent=1))

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                try:
                    os.fsync(self._fd)
                except OSError:
                    pass
                os.close(self._fd)
                self._fd = None


@dataclass
class ReadReport:
    files: int = 0
    records: int = 0
    events: int = 0
    skipped_bytes: int = 0
    problems: list = field(default_factory=list)      # data lost: a segment or records that could not be read
    aged_out: str = ""        # what storage_limit removed during collection, as the user asked (a note)


def read_segment(path: Path, report: ReadReport) -> list[EventTable]:
    """Read every intact record of one segment; damage is reported, not raised.

    Raises ProfilerDataError (naming the file) only when the file cannot be
    read at all or is over the input size limit.
    """
    check_input_file(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ProfilerDataError(path, f"cannot be read ({e.strerror})") from None
    return parse_records(data, path.name, report)


def parse_records(data: bytes, label: str, report: ReadReport, end: Optional[int] = None,
                  copy: bool = True, checksums: Optional[dict[int, int]] = None) -> list[EventTable]:
    """Every intact record of one segment's bytes (the first ``end`` of them when
    given); damage goes to ``report`` (prefixed with ``label``). Never raises on
    any input. With ``copy=False`` the tables are views of ``data`` (see
    :func:`decode_chunk`). ``checksums`` maps a record's byte offset to the CRC32 of
    the payload its frame spans, computed beforehand on these same bytes
    (:func:`frame_checksums`); a record not in it is checksummed here."""
    tables: list[EventTable] = []
    pos, end = 0, len(data) if end is None else end
    view = memoryview(data)
    while pos < end:
        if end - pos < FRAME.size:
            report.skipped_bytes += end - pos
            report.problems.append(f"{label}: torn record of {end - pos} bytes at the end dropped")
            break
        magic, length, crc = FRAME.unpack_from(data, pos)
        body = pos + FRAME.size
        problem = None
        if magic != MAGIC:
            problem = "bad record marker"
        elif length > MAX_RECORD_BYTES or body + length > end:
            problem = "torn record at the end" if magic == MAGIC and body + length > end else "bad record length"
        elif (checksums[pos] if checksums is not None and pos in checksums
              else zlib.crc32(view[body:body + length])) != crc:
            problem = "checksum mismatch"
        if problem is None:
            try:
                tables.append(decode_chunk(view[body:body + length], copy=copy))
                report.records += 1
                pos = body + length
                continue
            except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError, OverflowError,
                    MemoryError, struct.error) as e:
                problem = f"undecodable record ({type(e).__name__}: {str(e)[:80]})"
        nxt = data.find(MAGIC, pos + 1, end)
        nxt = end if nxt < 0 else nxt
        report.skipped_bytes += nxt - pos
        report.problems.append(f"{label}: {problem} at byte {pos}; {nxt - pos} bytes skipped")
        pos = nxt
    return tables


def frame_checksums(data: Union[bytes, bytearray], end: int) -> dict[int, int]:
    """CRC32 of the payload of each record that follows the one before it in ``data[:end]``, by byte
    offset: the records a segment written without damage holds, walked frame by frame and stopped at
    the first frame that does not fit (:func:`parse_records` checks the rest itself). zlib leaves
    Python's lock free while it checksums a large payload, so the reader thread does this beside the
    decoding of the segment before."""
    sums: dict[int, int] = {}
    pos = 0
    with memoryview(data) as view:
        while end - pos >= FRAME.size:
            magic, length, _ = FRAME.unpack_from(data, pos)
            body = pos + FRAME.size
            if magic != MAGIC or length > MAX_RECORD_BYTES or body + length > end:
                break
            sums[pos] = zlib.crc32(view[body:body + length])
            pos = body + length
    return sums


def segment_order(path: Path) -> tuple:
    """Sort key: (pid, sequence) numerically, so segment 100000 follows 99999."""
    m = _SEGMENT_RE.match(path.name)
    return (0, int(m.group(1)), int(m.group(2)), "") if m else (1, 0, 0, path.name)


def read_raw_dir(directory: Path) -> tuple[EventTable, ReadReport]:
    """All events of a raw directory, segments in write order.

    A segment that cannot be read (or is over the size limit) is skipped and
    reported; what ``storage_limit`` aged out is reported too. Each segment
    is read into one of three reused buffers (the next one is read and
    checksummed meanwhile, :func:`_read_ahead`) and its records are copied
    straight into the output columns: every byte is copied once, into memory
    touched once. Decoding a record (its header, string pool, the rows it
    fills) stays on this thread, in order; the copies of its columns into
    those rows run on a second thread (:class:`_Columns`).
    """
    report = ReadReport()
    directory = Path(directory)
    paths = []
    for path in sorted(directory.glob(SEGMENT_GLOB), key=segment_order):
        if path.is_symlink() or not path.is_file():
            report.problems.append(f"{path.name}: not a regular file; skipped")
            continue
        report.files += 1
        try:
            check_input_file(path)
            paths.append((path, path.stat().st_size))
        except ProfilerDataError as e:
            report.problems.append(f"{path.name}: {e.problem}; skipped")
        except OSError as e:
            report.problems.append(f"{path.name}: cannot be read ({e.strerror}); skipped")
    columns = _Columns(sum(size for _, size in paths) // MIN_ROW_BYTES)
    read_up_to = list(itertools.accumulate(size for _, size in paths))   # bytes of segments 0..i
    with columns.copying():
        for i, (path, buffer, got, sums) in enumerate(_read_ahead(paths, columns.populate_for(read_up_to),
                                                                  columns.copied)):
            if isinstance(got, OSError):
                report.problems.append(f"{path.name}: cannot be read ({got.strerror}); skipped")
            else:
                for table in parse_records(buffer, path.name, report, end=got, copy=False, checksums=sums):
                    columns.append(table, segment=i)
            columns.done_reading(read_up_to[i])
    report.aged_out = _aged_out(directory)
    table = columns.table()
    report.events = len(table)
    return table, report


def _read_into(path: Path, size: int, buffer: bytearray) -> Union[int, OSError]:
    """Read up to ``size`` bytes of ``path`` into ``buffer``: how many were read, or why none could be."""
    try:
        with open(path, "rb") as fh:
            return fh.readinto(memoryview(buffer)[:size])
    except OSError as e:
        return e


READ_BUFFERS = 3   # a segment being read, one being decoded, one whose columns are still being copied


def _read_ahead(paths: list[tuple[Path, int]], after_read: Callable[[int], None],
                before_reuse: Callable[[int], None] = lambda i: None,
                ) -> Iterator[tuple[Path, bytearray, Union[int, OSError], Optional[dict[int, int]]]]:
    """(path, buffer, bytes read into it or the error, its records' checksums) of each segment, in
    order; a helper thread reads the next segment and checksums its records (:func:`frame_checksums`)
    while the caller decodes this one, then calls ``after_read(i)`` with that segment's index
    (read_raw_dir faults in the rows it will fill there).

    :data:`READ_BUFFERS` buffers of the largest segment's size take turns: segment i's bytes stay as
    they are until segment ``i + READ_BUFFERS`` is read into them, which waits for
    ``before_reuse(i)`` to return (read_raw_dir's copies out of segment i done). The read, its copy out
    of the page cache and the checksums leave the GIL free, so they overlap the decoding (reading ahead
    alone, two buffers and no checksums here yet: read_raw_dir of 10M events 0.78-0.85 s against
    0.92-1.12 s reading in turn, 4 alternated pairs).
    """
    if not paths:
        return
    largest = max(size for _, size in paths)
    # made by the thread that first reads into each: their zeroed pages are faulted in there
    buffers: list[bytearray] = []
    turns = min(READ_BUFFERS, len(paths))

    def buffer_of(i: int) -> bytearray:
        if len(buffers) <= i % turns:
            buffers.append(bytearray(largest))
        return buffers[i % turns]

    def read(i: int) -> tuple[bytearray, Union[int, OSError], dict[int, int]]:
        # the checksums travel with the buffer they were computed on
        buffer = buffer_of(i)
        got = _read_into(*paths[i], buffer)
        sums = frame_checksums(buffer, got) if isinstance(got, int) else {}
        after_read(i)
        return buffer, got, sums

    with ThreadPoolExecutor(1, thread_name_prefix="npuprof-read") as reader:
        try:
            pending = reader.submit(read, 0)
        except RuntimeError:   # the interpreter is exiting (a handler run at exit): no new threads, read in turn
            for i, (path, size) in enumerate(paths):
                before_reuse(i - 1)
                buffer = buffer_of(0)
                yield path, buffer, _read_into(path, size, buffer), None
            return
        for i, (path, _) in enumerate(paths):
            buffer, got, sums = pending.result()
            if i + 1 < len(paths):
                before_reuse(i + 1 - turns)
                pending = reader.submit(read, i + 1)
            yield path, buffer, got, sums


MIN_ROW_BYTES = _DTYPES["ts"].itemsize   # a record holds at least this per row: ts is never "const"


class _Columns:
    """Decoded chunks copied into columns allocated once for ``bound`` rows.

    The bound (bytes read / ``MIN_ROW_BYTES``) holds: every record spends at
    least that many bytes per row, and no more than ``size`` bytes of a
    segment are read. It only reserves address space (up to ~8x the raw
    bytes over all columns when most columns are "const"): pages past the
    rows written are never touched. Any column but ``ts`` stays a stride-0
    view while every chunk holds one and the same value in it (a record's
    "const" columns), so a host run's pid, device, stream, step, source ...
    take no memory per row; the first chunk that differs fills it in.

    Inside :meth:`copying`, :meth:`append` decides where a chunk's rows go
    and leaves the copies (numpy, without the GIL) to a thread of their own,
    so the next records decode meanwhile; :meth:`copied` waits for those of
    one segment (its read buffer is about to be reused), :meth:`table` for
    all of them.
    """

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.n = 0
        self.pool = StringPool()
        self.cols: dict[str, np.ndarray] = {}
        self.constant: dict[str, object] = {}
        self._progress = (0, 0)   # (rows, bytes) of the segments appended so far
        self._copier: Optional[ThreadPoolExecutor] = None
        self._copies: dict[int, list[Future]] = {}   # by segment, those not waited for yet

    @contextmanager
    def copying(self) -> Iterator[None]:
        """Copies run on a thread of their own in this block (here when no thread may start, at
        interpreter exit); every one is done when it ends. A copy's error is raised by
        :meth:`copied` or here."""
        copier = self._copier = ThreadPoolExecutor(1, thread_name_prefix="npuprof-copy")
        try:
            yield
            self.copied(None)
        finally:
            copier.shutdown(wait=True, cancel_futures=True)
            self._copier = None

    def copied(self, segment: Optional[int]) -> None:
        """Wait for the copies out of ``segment`` (every segment: None)."""
        for key in [k for k in self._copies if segment is None or k == segment]:
            for future in self._copies.pop(key):
                future.result()

    def done_reading(self, bytes_so_far: int) -> None:
        """The segments up to ``bytes_so_far`` bytes are appended (the rows per byte so far)."""
        self._progress = (self.n, bytes_so_far)

    def populate_for(self, read_up_to: list[int]) -> Callable[[int], None]:
        """For the reader thread: after segment i is read, fault in the rows segments up to i are
        expected to fill (at the rows per byte seen so far), ahead of the loader writing them.

        Pages the loader is writing meanwhile are left as they are (``pages.populate`` changes no
        content); before the first segment is appended there is no estimate and nothing is done.
        """
        def populate_up_to(i: int) -> None:
            rows, nbytes = self._progress
            if nbytes:
                expected = min(self.bound, rows * read_up_to[i] // nbytes)
                for col in list(self.cols.values()):   # a column the loader adds meanwhile: next time
                    populate(col, self.n, expected)
        return populate_up_to

    def append(self, table: EventTable, segment: int = 0) -> None:
        """``table``'s rows after those appended so far; ``segment``: the index of the segment whose read
        buffer its columns are views of (:meth:`copied` waits for the copies out of it)."""
        k = len(table)
        if not k:
            return
        lo, hi = self.n, self.n + k
        remap = pool_remap(self.pool, table.strings)
        copies: list[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = []
        for key, src in table.cols.items():
            if key in JOINED_CONSTANT and key not in self.cols and (k == 1 or is_constant_column(src)):
                value = joined_value(key, src[0].item(), remap)
                if same_value(self.constant.setdefault(key, value), value):
                    continue
            out = self.cols.get(key)
            if out is None:
                out = self.cols[key] = np.empty(self.bound, dtype=NUMERIC_COLUMNS.get(key, np.int32))
                if key in self.constant:   # rows no other copy writes: this column was one value so far
                    copies.append((out[:lo], constant_column(self.constant.pop(key), lo, out.dtype), None))
            # codes checked in decode_chunk
            copies.append((out[lo:hi], src, remap if key in STRING_COLUMNS else None))
        self.n = hi
        try:
            if self._copier is not None:
                self._copies.setdefault(segment, []).append(self._copier.submit(_copy_columns, copies))
                return
        except RuntimeError:   # the interpreter is exiting (a handler run at exit): no new threads
            self._copier = None
        _copy_columns(copies)

    def table(self) -> EventTable:
        self.copied(None)
        if not self.n:
            return EventTable.empty()
        cols = {key: out[:self.n] for key, out in self.cols.items()}
        for key, value in self.constant.items():
            cols[key] = constant_column(value, self.n, NUMERIC_COLUMNS.get(key, np.int32))
        return EventTable(cols, list(self.pool.strings))


def _copy_columns(copies: list[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]]) -> None:
    for out, src, remap in copies:
        put_column(out, src, remap)


def _aged_out(directory: Path) -> str:
    path = directory / STORAGE_REPORT
    if not path.is_file():
        return ""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        segments, size = len(data["aged_out_segments"]), int(data["bytes_aged_out"])
        limit = data.get("limit_bytes")
    except (OSError, ValueError, KeyError, TypeError):
        return f"{STORAGE_REPORT}: unreadable storage report; some of the oldest raw data may have been aged out"
    return (f"storage_limit {limit} bytes: the {segments} oldest raw segments ({size} bytes) were aged out "
            "during collection; the run's earliest events are not in the analysis")
