"""Vectorised text rows: many CSV lines or JSON objects rendered at once.

A row is a sequence of *pieces*: a literal, a string picked per row from a
pool, or a number (integer, or an integer count of thousandths printed with
3 decimals). Every piece is a matrix of 4-byte cells, one matrix row per
output row: pool strings and literals padded with NUL to whole cells, numbers
as 4-digit groups from lookup tables (leading groups without leading zeros,
empty groups all NUL). The matrices are laid side by side and every NUL byte
is dropped in one pass. No Python runs per row, and the cell layout keeps
every copy and gather 4 bytes wide.

Pool strings must not contain a NUL byte (JSON and CSV text never do: JSON
escapes it as ``\\u0000``).

Example::

    >>> rows = RowBuilder(3)
    >>> rows.literal('{"id":'); rows.integer(np.array([5, -12, 300]))
    >>> rows.literal(',"t":'); rows.fixed3(np.array([1500, 7, -1]))
    >>> rows.literal('}\\n')
    >>> print(rows.render().decode(), end="")
    {"id":5,"t":1.500}
    {"id":-12,"t":0.007}
    {"id":300,"t":-0.001}

The same rows are also rendered compiled (``_rowrender.c``: each row written
once, piece after piece, into the output); :class:`RowBuilder` records the
pieces and renders them with it when it is built (see :mod:`npuprof.compiled`).
The cell renderer here is the reference and the fallback; both give the same
bytes.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from ..compiled import load_compiled
from ..fileio import WriteBehind

FILL = 0
_FILL_BYTE = bytes([FILL])
CELL = 4
# one piece matrix of a chunk stays under this many bytes: under glibc's mmap threshold,
# so repeated chunks reuse heap memory instead of faulting in fresh pages
MATRIX_BYTES = 4 << 20

Text = Union[str, bytes]


def _cells(texts: Sequence[bytes]) -> np.ndarray:
    """Strings as a (len, k) uint32 matrix, NUL padded to whole 4-byte cells."""
    width = max((len(t) for t in texts), default=0)
    width = max(CELL, -(-width // CELL) * CELL)
    joined = b"".join(t.ljust(width, b"\0") for t in texts)
    return np.frombuffer(joined, dtype=np.uint8).view(np.uint32).reshape(len(texts), width // CELL)


def _lut(texts: Sequence[str]) -> np.ndarray:
    return _cells([t.encode("ascii") for t in texts]).reshape(-1)


def _digit_cells(n: int, digits: int, blank_lead: bool, zero: bytes) -> np.ndarray:
    """The texts ``f"{i:0{digits}d}"`` for i in range(n) as one 4-byte cell each (``digits`` <= 4, left
    aligned, NUL padded); ``blank_lead``: leading zeros as NUL (right aligned), and 0 as ``zero`` (4 bytes).
    Built from the digits with numpy (0.2 ms): the same texts formatted one by one (:func:`_lut`) took ~11 ms."""
    i = np.arange(n)
    out = np.zeros((n, CELL), dtype=np.uint8)
    for k in range(digits):
        out[:, k] = ord("0") + i // 10 ** (digits - 1 - k) % 10
    if blank_lead:
        for k in range(digits - 1):
            out[:, k][i < 10 ** (digits - 1 - k)] = 0
        out[0] = np.frombuffer(zero, dtype=np.uint8)
    return out.view(np.uint32).reshape(-1)


# 4-digit groups: full (zero padded), leading (no leading zeros; 0 -> empty), last (0 -> "0")
LUT_FULL = _digit_cells(10000, 4, False, b"")
LUT_LEAD = _digit_cells(10000, 4, True, b"\x00\x00\x00\x00")
LUT_ONLY = _digit_cells(10000, 4, True, b"\x00\x00\x000")
# ".ddd" and the same with trailing zeros stripped (keeping one digit), as repr(round(x, 3)) prints
LUT_FRAC = _lut([f".{i:03d}" for i in range(1000)])
LUT_FRAC_STRIP = _lut([("." + f"{i:03d}".rstrip("0")).ljust(2, "0").ljust(4, "\0") for i in range(1000)])
MINUS = np.frombuffer(b"\0\0\0-", dtype=np.uint32)[0]
POW4 = [10 ** (4 * k) for k in range(6)]


def _b(text: Text) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def uint_cells(v: np.ndarray) -> np.ndarray:
    """Decimal text of non-negative int64 values as 4-digit cells, right-aligned."""
    v = np.asarray(v, dtype=np.int64)
    n = len(v)
    mx = int(v.max()) if n else 0
    groups = max(1, (len(str(mx)) + 3) // 4)
    out = np.empty((n, groups), dtype=np.uint32)
    if groups == 1:
        out[:, 0] = np.take(LUT_ONLY, v)
        return out
    # when every value (or none) reaches a group's zero-padded form, the group needs one lookup, no where
    mn = int(v.min())
    rest = v
    for g in range(groups - 1, -1, -1):
        if g:
            q = rest // 10000
            low = rest - q * 10000
        else:
            q, low = None, rest
        if g == groups - 1:
            if mn >= 10000:
                out[:, g] = np.take(LUT_FULL, low)
            else:
                out[:, g] = np.where(v >= 10000, np.take(LUT_FULL, low), np.take(LUT_ONLY, low))
        else:
            # prefix = the number down to this group: 0 -> above the number, < 10000 -> its leading group;
            # prefix >= 10000 exactly when the number is >= 10000 * POW4[groups - 1 - g]
            full_from = 10000 * POW4[groups - 1 - g]
            if mn >= full_from:
                out[:, g] = np.take(LUT_FULL, low)
            elif mx < full_from:
                out[:, g] = np.take(LUT_LEAD, low)
            else:
                prefix = v // POW4[groups - 1 - g]
                out[:, g] = np.where(prefix >= 10000, np.take(LUT_FULL, low), np.take(LUT_LEAD, low))
        rest = q
    return out


def int_cells(v: np.ndarray) -> np.ndarray:
    """Signed integers: a sign cell (``-`` or empty) before the digit cells."""
    v = np.asarray(v, dtype=np.int64)
    neg = v < 0
    if not neg.any():
        return uint_cells(v)
    mag = uint_cells(np.abs(v))
    out = np.empty((len(v), mag.shape[1] + 1), dtype=np.uint32)
    out[:, 0] = np.where(neg, MINUS, 0)
    out[:, 1:] = mag
    return out


def fixed3_cells(v: np.ndarray, strip: bool = False) -> np.ndarray:
    """Integer thousandths as ``int.ddd`` (e.g. ns -> µs with 3 decimals).

    With ``strip`` trailing zeros of the fraction are dropped (keeping one
    digit): what ``repr(round(x / 1000, 3))`` prints for ``abs(x) < 1e17``
    (``2.5``, ``7.0``, ``12.345``).
    """
    v = np.asarray(v, dtype=np.int64)
    neg = v < 0
    any_neg = bool(neg.any())
    mag = np.abs(v) if any_neg else v
    q = mag // 1000
    r = mag - q * 1000
    ip = uint_cells(q)
    k = ip.shape[1] + (1 if any_neg else 0)
    out = np.empty((len(v), k + 1), dtype=np.uint32)
    if any_neg:
        out[:, 0] = np.where(neg, MINUS, 0)
    out[:, k - ip.shape[1]:k] = ip
    out[:, k] = np.take(LUT_FRAC_STRIP if strip else LUT_FRAC, r)
    return out


class Pool:
    """Strings for :meth:`RowBuilder.pooled` used chunk after chunk: each string's cells
    (after the literal that precedes the piece) are laid out once, when the pool is small
    (under :data:`MATRIX_BYTES`); a chunk then takes its rows' strings in one gather."""

    __slots__ = ("texts", "_cells", "_packed")

    def __init__(self, texts: Sequence[Text]) -> None:
        self.texts = texts
        self._cells: dict = {}
        self._packed: Optional[tuple[bytes, np.ndarray]] = None

    def packed(self) -> tuple[bytes, np.ndarray]:
        """The texts packed for the compiled renderer (see :func:`pack`), once."""
        if self._packed is None:
            self._packed = pack(self.texts)
        return self._packed

    def __getitem__(self, i: int) -> Text:
        return self.texts[i]

    def cells(self, lead: bytes) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """``(cells, per-string cell count)`` of ``lead + text`` for every text; None for a large pool."""
        got = self._cells.get(lead)
        if got is None:
            enc = [lead + _b(t) for t in self.texts]
            count = np.fromiter(((len(e) + CELL - 1) // CELL for e in enc), dtype=np.int64, count=len(enc))
            width = max(1, int(count.max(initial=1)))
            got = self._cells[lead] = (
                (_cells(enc), np.maximum(count, 1)) if enc and len(enc) * width * CELL <= MATRIX_BYTES else False)
        return got or None


# piece tags shared with _rowrender.c
_LITERAL, _POOLED, _INTEGER, _FIXED3 = 0, 1, 2, 3


# the compiled renderer (built from ``_rowrender.c``), or None (see npuprof.compiled)
_compiled = load_compiled("npuprof.export._rowrender")


def compiled_rows() -> bool:
    """Whether :meth:`RowBuilder.render` renders compiled (``_rowrender.c`` built here)."""
    return _compiled is not None


class RowBuilder:
    """Collects the pieces of ``n`` rows, then renders them (see module doc)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pieces: list[tuple] = []

    def literal(self, text: Text) -> None:
        """The same text in every row (adjacent literals are merged)."""
        if self.pieces and self.pieces[-1][0] == _LITERAL:
            self.pieces[-1] = (_LITERAL, self.pieces[-1][1] + _b(text))
        else:
            self.pieces.append((_LITERAL, _b(text)))

    def pooled(self, codes: np.ndarray, texts: Union[Sequence[Text], Pool],
               present: Optional[np.ndarray] = None) -> None:
        """``texts[codes[i]]`` in row i; rows where ``present`` is False stay empty."""
        self.pieces.append((_POOLED, np.asarray(codes), texts, present))

    def integer(self, values: np.ndarray, present: Optional[np.ndarray] = None) -> None:
        """``str(values[i])`` in row i; rows where ``present`` is False stay empty."""
        self.pieces.append((_INTEGER, np.asarray(values), present))

    def fixed3(self, values: np.ndarray, present: Optional[np.ndarray] = None, strip: bool = False) -> None:
        """Integer thousandths as ``int.ddd`` in row i (see :func:`fixed3_cells`)."""
        self.pieces.append((_FIXED3, np.asarray(values), present, strip))

    def render(self, compiled: Optional[bool] = None) -> bytes:
        """All rows, concatenated: compiled when built (or as ``compiled`` says), else as cells."""
        if compiled is None:
            compiled = _compiled is not None
        if compiled:
            if _compiled is None:
                raise RuntimeError("the compiled row renderer is not built here (core/export/_rowrender.c)")
            return _compiled.render(self.n, [_compiled_piece(p) for p in self.pieces])
        cells = CellRows(self.n)
        for tag, *args in self.pieces:
            (cells.literal, cells.pooled, cells.integer, cells.fixed3)[tag](*args)
        return cells.render()


# bytes after a packed pool's last text: the compiled renderer copies texts 16 bytes at a time
_PACK_PAD = 16


def pack(texts: Sequence[Text]) -> tuple[bytes, np.ndarray]:
    """``(blob, offsets)``: text ``k`` is ``blob[offsets[k]:offsets[k + 1]]`` (UTF-8), and the
    blob ends with padding the compiled renderer may read past the last text.

    Example::

        >>> pack(["ab", "", "ü"])[1].tolist()
        [0, 2, 2, 4]
    """
    encoded = [_b(t) for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return b"".join(encoded) + bytes(_PACK_PAD), offsets


def _compiled_piece(piece: tuple) -> tuple:
    """A recorded piece as ``_rowrender.render`` takes it: pools packed (see the C source)."""
    if piece[0] != _POOLED:
        return piece
    _, codes, texts, present = piece
    if isinstance(texts, Pool):
        blob, offsets = texts.packed()
    elif len(texts) > 4 * len(codes) + (1 << 16):   # a large pool for few rows: pack only what they use
        used, codes = np.unique(codes, return_inverse=True)
        blob, offsets = pack([texts[c] for c in used.tolist()])
        codes = codes.reshape(-1)
    else:
        blob, offsets = pack(texts)
    return (_POOLED, codes, blob, offsets, present)


class CellRows:
    """The cell renderer (see module doc): the reference for, and fallback of, the compiled one."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[np.ndarray] = []
        self._literal = b""

    def _flush_literal(self) -> None:
        if self._literal:
            self.parts.append(_cells([self._literal]))
            self._literal = b""

    def literal(self, text: Text) -> None:
        self._literal += _b(text)

    def pooled(self, codes: np.ndarray, texts: Union[Sequence[Text], Pool],
               present: Optional[np.ndarray] = None) -> None:
        """Only the strings used by these rows are laid out (found with one ``bincount``, or a
        sort for pools much larger than the rows); a piece that is the same in every row becomes
        a literal."""
        codes = np.asarray(codes, dtype=np.int64)
        if isinstance(texts, Pool):
            laid = texts.cells(self._literal) if self.n and (present is None or present.all()) else None
            if laid is not None:
                first = int(codes[0])
                if first == int(codes.min()) == int(codes.max()):   # the same text in every row
                    self.literal(texts[first])
                    return
                cells, count = laid
                width = int(count[codes].max())   # as wide as this chunk's longest string, as below
                self._literal = b""
                self.parts.append(np.take(cells[:, :width], codes, axis=0))
                return
            texts = texts.texts
        m = len(texts)
        if present is not None and not present.all():
            codes = np.where(present, codes, m)
            texts = list(texts) + [""]
            m += 1
        if not self.n:
            return
        if m <= 4 * len(codes) + (1 << 16):
            used = np.flatnonzero(np.bincount(codes, minlength=m))
            remap = np.zeros(m, dtype=np.int64)
            remap[used] = np.arange(len(used))
            idx = remap[codes] if len(used) > 1 else None
        else:
            used, idx = np.unique(codes, return_inverse=True)
            idx = idx.reshape(-1) if len(used) > 1 else None
        if idx is None:  # the same text in every row
            self.literal(texts[int(used[0])])
            return
        # the pending literal goes in front of every pool string: no padding between them
        lead, self._literal = self._literal, b""
        self.parts.append(np.take(_cells([lead + _b(texts[c]) for c in used.tolist()]), idx, axis=0))

    def integer(self, values: np.ndarray, present: Optional[np.ndarray] = None) -> None:
        values = np.asarray(values)
        if len(values) and values.min() == values.max() and (present is None or present.all()):
            self.literal(str(int(values[0])))
            return
        self._add(int_cells(values), present)

    def fixed3(self, values: np.ndarray, present: Optional[np.ndarray] = None, strip: bool = False) -> None:
        self._add(fixed3_cells(values, strip=strip), present)

    def _add(self, cells: np.ndarray, present: Optional[np.ndarray]) -> None:
        if present is not None and not present.all():
            cells *= present.astype(np.uint32)[:, None]
        self._flush_literal()
        self.parts.append(cells)

    def render(self) -> bytes:
        """All rows, concatenated, filler removed."""
        self._flush_literal()
        n = self.n
        if not n:
            return b""
        width = sum(p.shape[1] for p in self.parts)
        out = np.empty((n, width), dtype=np.uint32)
        col = 0
        for p in self.parts:
            w = p.shape[1]
            out[:, col:col + w] = p
            col += w
        return out.tobytes().translate(None, _FILL_BYTE)   # C loop: ~20% faster than a numpy mask here


def chunk_rows(row_bytes: int, max_rows: int = 200_000) -> int:
    """Rows per chunk so one row matrix stays under :data:`MATRIX_BYTES`."""
    return max(1024, min(max_rows, MATRIX_BYTES // max(row_bytes, 1)))


class BackgroundWriter:
    """Writes blocks to a binary file object from a second thread.

    Rendering (numpy, GIL mostly released) and the ``write`` system calls
    (GIL released) then overlap on two cores. At most ``depth`` blocks wait;
    an error from the file is raised by the next :meth:`write` or by
    :meth:`close`. A file on disk is written behind (:class:`~npuprof.fileio.WriteBehind`)
    unless ``write_behind`` is false.

    Example::

        with BackgroundWriter(fh) as w:
            for block in blocks:
                w.write(block)
    """

    def __init__(self, fh, depth: int = 3, write_behind: bool = True) -> None:
        import queue
        import threading

        self.fh = fh
        try:
            fd = fh.fileno() if write_behind else -1
        except (AttributeError, OSError, ValueError):   # in memory: nothing to write behind
            fd = -1
        self._behind = WriteBehind(fd)
        self.error: Optional[BaseException] = None
        self._queue: "queue.Queue" = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="npuprof-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            block = self._queue.get()
            if block is None:
                return
            if self.error is None:
                try:
                    self.fh.write(block)
                    self._behind.update()
                except BaseException as e:  # reported to the producer
                    self.error = e

    def write(self, block: bytes) -> None:
        if self.error is not None:
            raise self.error
        if block:
            self._queue.put(block)

    def close(self) -> None:
        self._stop()
        if self.error is not None:
            raise self.error

    def _stop(self) -> None:
        self._queue.put(None)
        self._thread.join()
        self._behind.close()

    def __enter__(self) -> "BackgroundWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:  # stop the thread; the producer's exception wins
            self._stop()
