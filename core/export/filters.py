"""Event filters and size estimates that keep large timelines openable.

Filters work on whole columns (no per-event Python): by step, by minimum
duration, by event kind, and dropping counters. :func:`size_report` says how
big a Chrome trace of the table will be, per category, before writing it;
:func:`file_size_report` measures written files (raw and gzip).

Example::

    >>> from npuprof.events import EventTable, EventKind
    >>> ev = EventTable.from_records(ts=[0, 10, 20], dur=[5, 500, 5000], step=[1, 1, 2],
    ...                              kind=[EventKind.OP] * 3, name=["a", "b", "c"])
    >>> len(filter_events(ev, steps=[1], min_dur_ns=100))
    1
"""
from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import numpy as np

from ..errors import ProfilerConfigError
from ..validate import parse_rank_list  # steps have the syntax of rank lists
from ..events import EventKind, EventTable

_DUR_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)?\s*$")
_UNIT_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1_000}


def parse_duration_ns(name: str, value: Any) -> int:
    """``"10us"``, ``"2ms"``, ``"500ns"``, or a number of µs -> ns.

    Example::

        >>> parse_duration_ns("min_dur", "2ms"), parse_duration_ns("min_dur", 15)
        (2000000, 15000)
    """
    if isinstance(value, bool):
        raise ProfilerConfigError(name, value, "a duration such as '10us', '2ms' or a number of µs")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ProfilerConfigError(name, value, "a duration >= 0")
        return int(round(value * 1000))
    m = _DUR_RE.match(str(value))
    if not m:
        raise ProfilerConfigError(name, value, "a duration such as '10us', '2ms', '500ns' or a number of µs")
    return int(round(float(m.group(1)) * _UNIT_NS[m.group(2)]))


def parse_steps(name: str, value: Any) -> Optional[list[int]]:
    """``"2-4,7"`` / list / None -> sorted step numbers (None = all steps)."""
    try:
        return parse_rank_list(name, value)
    except ProfilerConfigError:
        raise ProfilerConfigError(name, value, "step numbers >= 0 as a list or a string like '2-4,7' "
                                               "(or 'all')") from None


def filter_events(events: EventTable, steps: Optional[Iterable[int]] = None, min_dur_ns: int = 0,
                  kinds: Optional[Iterable[EventKind]] = None, drop_counters: bool = False) -> EventTable:
    """Keep events of ``steps`` (by the ``step`` column; the ProfilerStep
    ranges themselves are kept for those steps), spans of at least
    ``min_dur_ns`` (instants, counters and steps are kept), only ``kinds``
    when given, and no counters when ``drop_counters``.
    """
    if not len(events):
        return events
    keep = np.ones(len(events), dtype=bool)
    kind = events["kind"]
    if steps is not None:
        wanted = np.asarray(sorted(set(steps)), dtype=np.int32)
        in_step = np.isin(events["step"], wanted)
        if (kind == int(EventKind.STEP)).any():
            from ..analysis.steps import step_spans

            numbers, starts, ends = step_spans(events)
            sel = np.isin(numbers, wanted)
            # unassigned events (counters, events between steps) kept when inside a wanted step span
            ts = events["ts"]
            idx = np.searchsorted(starts, ts, side="right") - 1
            ok = idx >= 0
            inside = np.zeros(len(events), dtype=bool)
            ci = np.clip(idx, 0, max(len(starts) - 1, 0))
            if len(starts):
                inside = ok & (ts < ends[ci]) & sel[ci]
            in_step = in_step | ((events["step"] < 0) & inside)
        keep &= in_step
    if min_dur_ns > 0:
        spans = ~np.isin(kind, np.array([int(EventKind.COUNTER), int(EventKind.MARK), int(EventKind.MEMORY),
                                         int(EventKind.STEP)], dtype=np.uint8))
        keep &= ~spans | (events["dur"] >= min_dur_ns)
    if kinds is not None:
        keep &= np.isin(kind, np.array([int(k) for k in kinds], dtype=np.uint8))
    if drop_counters:
        keep &= kind != int(EventKind.COUNTER)
    return events if keep.all() else events.select(keep)


def size_report(events: EventTable, sample: int = 20_000) -> dict:
    """Estimated Chrome-trace size of ``events`` per event kind, from a
    rendered sample (the real writer on up to ``sample`` events per kind).

    Returns ``{"events": n, "estimated_bytes": b, "estimated_gzip_bytes": g,
    "by_kind": {kind: {"events", "bytes"}}}``.
    """
    from .trace_json import event_lines

    by_kind: dict[str, dict] = {}
    total = gz_total = 0.0
    for k in EventKind:
        sel = events.select(events["kind"] == int(k)) if len(events) else events
        n = len(sel)
        if not n:
            continue
        part = sel.select(slice(0, sample))
        text = ",\n".join(b for b in event_lines(part, int(part["ts"].min())) if b).encode()
        per = len(text) / len(part)
        per_gz = len(zlib.compress(text, 6)) / len(part)
        by_kind[k.name] = {"events": n, "bytes": int(per * n)}
        total += per * n
        gz_total += per_gz * n
    return {"events": len(events), "estimated_bytes": int(total), "estimated_gzip_bytes": int(gz_total),
            "by_kind": by_kind}


def file_size_report(paths: Iterable[Union[str, Path]]) -> list[dict]:
    """Size on disk of written trace files (and the uncompressed size of .gz ones)."""
    out = []
    for p in paths:
        p = Path(p)
        row: dict = {"path": str(p), "bytes": os.path.getsize(p)}
        if p.suffix == ".gz":
            with gzip.open(p, "rb") as fh:
                n = 0
                while chunk := fh.read(1 << 20):
                    n += len(chunk)
            row["uncompressed_bytes"] = n
        out.append(row)
    return out


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TiB"
