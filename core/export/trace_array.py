"""The trace as a JSON array, the form of MindSpore's and torch_npu's
``trace_view.json``: what msprof-analyze's advisor and compare tools stream
with ``ijson.items(f, "item")``.

Same events as the Kineto writer (:mod:`npuprof.export.trace_json`), same
numeric ``ts``/``dur`` (µs, 3 decimals, relative to the UTC day of the first
event, so doubles keep the ns: Perfetto-safe), rendered by the same code.
What differs is the layout the Ascend tools look for by process name:

* host framework events, ``ProfilerStep#N`` included, in processes named
  ``MindSpore`` (their own pid/tid);
* host-side communication in a process ``HCCL``, one thread per group
  (``args["group"]``) named ``Group <group> Communication`` with a
  ``thread_sort_index`` (compare's communication sheet reads only such
  threads), annotations (ranges and marks) in ``MsTx``;
* device events in ``Ascend Hardware`` (label ``NPU <d>``, one thread per
  stream);
* launch links as flows of cat ``HostToDevice`` (msprof's CANN node ->
  hardware task arrows) and again of cat ``async_npu`` (MindSpore's and
  torch_npu's framework op -> NPU op arrows: compare's operator sheets get
  each operator's device duration from them), with ``"correlation"`` in both
  ends' args;
* an ``Overlap Analysis`` process with threads ``Computing``,
  ``Communication``, ``Communication(Not Overlapped)`` and ``Free``: the
  advisor's Overall Summary is summed from it. Its segments follow
  ``step_trace_time.csv`` exactly (per ProfilerStep, intervals clipped to the
  step holding their start; compute = device kernels, else host operators),
  so the advisor's Computing / Uncovered Communication / Free times are the
  sums of that table's columns.

There is no top-level object, hence no ``baseTimeNanoseconds``: keep the
Kineto file for HTA and absolute time. npuprof reads this form back
(:func:`npuprof.readers.ascend_output.read_ascend_output`).

Example::

    write_trace_array(result.events, out / "ASCEND_PROFILER_OUTPUT" / "trace_view.json",
                      host_pid=result.info.pid)
"""
from __future__ import annotations

from pathlib import Path
from typing import IO

import numpy as np

from ..analysis.rows import comm_op_mask, computing_mask
from ..analysis.step_breakdown import step_windows
from ..analysis.intervals import union
from .textrows import RowBuilder
from ..events import EventKind, EventTable
from ..traceflows import LAUNCH_FLOW_CATS
from .trace_json import (DEVICE_PID_BASE, metadata_events, base_time_ns, window_end_event, write_event_blocks,
                         write_trace_file)

HOST_PROCESS = "MindSpore"
HCCL_PID = DEVICE_PID_BASE - 3        # synthetic pids below the device ones (Linux pids stay under 2**22)
MSTX_PID = DEVICE_PID_BASE - 2
OVERLAP_PID = DEVICE_PID_BASE - 1
OVERLAP_THREADS = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
_PROCESS = {HCCL_PID: "HCCL", MSTX_PID: "MsTx", OVERLAP_PID: "Overlap Analysis"}


def _process_name(pid: int) -> str:
    return _PROCESS.get(pid, HOST_PROCESS)


def comm_thread_name(group: str) -> str:
    """The ``HCCL`` thread of a communication group, named as MindSpore/torch_npu name it.

    Example::

        >>> comm_thread_name("world")
        'Group world Communication'
    """
    return f"Group {group} Communication" if group else "Communication"


def _group_of(args: dict) -> str:
    group = args.get("group", "")
    return group if isinstance(group, str) else str(group)


def ascend_layout(events: EventTable) -> tuple[EventTable, dict[int, str]]:
    """The table with host communication moved to the ``HCCL`` pid and ranges/marks to ``MsTx``,
    and the ``HCCL`` threads: one per communication group (``args["group"]``), tid -> thread name.

    Example::

        table, hccl_threads = ascend_layout(events)   # {0: "Group world Communication"}
    """
    if not len(events):
        return events, {}
    kind, host = events["kind"], events["device"] < 0
    comm = host & (kind == np.uint8(EventKind.COMM))
    pid = np.where(comm, HCCL_PID, events["pid"])
    annotation = host & ((kind == np.uint8(EventKind.RANGE)) | (kind == np.uint8(EventKind.MARK)))
    table = events.with_column("pid", np.where(annotation, MSTX_PID, pid).astype(events["pid"].dtype))
    rows = np.flatnonzero(comm)
    if not len(rows):
        return table, {}
    # msprof-analyze compare takes communication ops only from HCCL threads named "... Communication" that have a
    # thread_sort_index; the host thread that issued them is not a group, so the tid becomes the group's index
    codes, inverse = np.unique(events["args"][rows], return_inverse=True)
    group_of_code = [_group_of(a) for a in events.args_objects(codes)]
    groups = sorted(set(group_of_code))
    index = np.array([groups.index(g) for g in group_of_code], dtype=np.int64)
    tid = events["tid"].copy()
    tid[rows] = index[inverse].astype(tid.dtype)
    return table.with_column("tid", tid), {i: comm_thread_name(g) for i, g in enumerate(groups)}


def _clipped_union(events: EventTable, rows: np.ndarray, starts: np.ndarray,
                   ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of the rows' intervals, each clipped to the step holding its start (others dropped)."""
    s = events["ts"][rows].astype(np.int64)
    e = s + events["dur"][rows]
    b = np.searchsorted(starts, s, side="right") - 1
    cb = np.clip(b, 0, max(len(ends) - 1, 0))
    ok = (b >= 0) & (s < ends[cb]) if len(ends) else np.zeros(len(s), bool)
    return union(s[ok], np.minimum(e[ok], ends[cb[ok]]))


def _inside(seg_s: np.ndarray, seg_e: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Which points fall in one of the disjoint sorted segments."""
    if not len(seg_s):
        return np.zeros(len(x), bool)
    i = np.searchsorted(seg_s, x, side="right") - 1
    return (i >= 0) & (x < seg_e[np.clip(i, 0, len(seg_e) - 1)])


def _difference(a_s: np.ndarray, a_e: np.ndarray, b_s: np.ndarray,
                b_e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segments of ``a`` not covered by ``b`` (both disjoint and sorted); pieces of one ``a`` segment merged."""
    if not len(a_s) or not len(b_s):
        return a_s, a_e
    pts = np.unique(np.concatenate([a_s, a_e, b_s, b_e]))
    lo, hi = pts[:-1], pts[1:]
    keep = _inside(a_s, a_e, lo) & ~_inside(b_s, b_e, lo)
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return lo, hi
    owner = np.searchsorted(a_s, lo, side="right")
    new = np.ones(len(lo), bool)
    new[1:] = (lo[1:] != hi[:-1]) | (owner[1:] != owner[:-1])
    idx = np.flatnonzero(new)
    return lo[idx], np.append(hi[idx[1:] - 1], hi[-1])


def overlap_segments(events: EventTable) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``Overlap Analysis`` segments (start and end ns) per thread name, as ``step_trace_time`` counts them.

    Example::

        seg = overlap_segments(events)
        computing_us = (seg["Computing"][1] - seg["Computing"][0]).sum() / 1000
    """
    numbers, starts, ends = step_windows(events)
    starts, ends = starts.astype(np.int64), ends.astype(np.int64)
    if len(events):
        comm_rows = np.flatnonzero(comm_op_mask(events))
        comp_rows = np.flatnonzero(computing_mask(events))      # as step_trace_time's Computing (no copies)
    else:
        comm_rows = comp_rows = np.zeros(0, np.int64)
    comp = _clipped_union(events, comp_rows, starts, ends)
    comm = _clipped_union(events, comm_rows, starts, ends)
    busy = union(np.concatenate([comp[0], comm[0]]), np.concatenate([comp[1], comm[1]]))
    steps = union(starts, ends)
    return {"Computing": comp, "Communication": comm,
            "Communication(Not Overlapped)": _difference(*comm, *comp), "Free": _difference(*steps, *busy)}


def _overlap_metadata() -> list[str]:
    lines = [f'{{"ph":"M","name":"process_name","pid":{OVERLAP_PID},"tid":0,"args":{{"name":"Overlap Analysis"}}}}',
             f'{{"ph":"M","name":"process_sort_index","pid":{OVERLAP_PID},"tid":0,'
             f'"args":{{"sort_index":{OVERLAP_PID}}}}}']
    for tid, name in enumerate(OVERLAP_THREADS):
        lines.append(f'{{"ph":"M","name":"thread_name","pid":{OVERLAP_PID},"tid":{tid},"args":{{"name":"{name}"}}}}')
        lines.append(f'{{"ph":"M","name":"thread_sort_index","pid":{OVERLAP_PID},"tid":{tid},'
                     f'"args":{{"sort_index":{tid}}}}}')
    return lines


def _overlap_block(events: EventTable, base_ns: int) -> bytes:
    parts = []
    for tid, (name, (s, e)) in enumerate(overlap_segments(events).items()):
        if not len(s):
            continue
        rows = RowBuilder(len(s))
        rows.literal(f'{{"ph":"X","name":"{name}","pid":{OVERLAP_PID},"tid":{tid},"ts":')
        rows.fixed3(s - base_ns)
        rows.literal(',"dur":')
        rows.fixed3(e - s)
        rows.literal(',"args":{}},\n')
        parts.append(rows.render())
    return b"".join(parts)


def _hccl_sort_metadata(threads: dict[int, str]) -> list[str]:
    return [f'{{"ph":"M","name":"thread_sort_index","pid":{HCCL_PID},"tid":{tid},"args":{{"sort_index":{tid}}}}}'
            for tid in sorted(threads)]


def write_trace_array_to(fh: IO[bytes], events: EventTable, host_pid: int = 0) -> None:
    """Stream the array form of ``events`` to ``fh`` (see the module doc)."""
    base = base_time_ns(events)
    table, hccl_threads = ascend_layout(events)

    def thread_name(pid: int, tid: int) -> str:
        return hccl_threads.get(tid, f"Thread {tid}") if pid == HCCL_PID else f"Thread {tid}"

    meta = metadata_events(table, host_pid, host_name=_process_name, device_name=lambda d: "Ascend Hardware",
                            thread_name=thread_name)
    meta += _hccl_sort_metadata(hccl_threads) + _overlap_metadata()
    fh.write(("[\n" + ",\n".join(meta) + ",\n").encode())
    write_event_blocks(fh, table, base, flow_cats=LAUNCH_FLOW_CATS)
    fh.write(_overlap_block(events, base))
    fh.write((window_end_event(events, base, host_pid) + "\n]\n").encode())


def write_trace_array(events: EventTable, path: Path, host_pid: int = 0, use_gzip: bool = False) -> Path:
    """Write the array form atomically (gzip when asked or the path ends .gz).

    Example::

        write_trace_array(result.events, Path("copy/ASCEND_PROFILER_OUTPUT/trace_view.json"))
    """
    return write_trace_file(path, lambda fh: write_trace_array_to(fh, events, host_pid), use_gzip)
