"""Communication events of one rank: operators, link transfers, and the
per-rank ``communication.json`` / ``communication_matrix.json`` files that
msprof-analyze ``cluster`` reads.

Convention for :data:`EventKind.COMM <npuprof.events.EventKind>` events
(parsers and user code follow it; ``args`` is a JSON object):

* an **operator** (``AllReduce``, ``Broadcast``, ``Send`` ...) has ``type`` =
  op type, ``name`` = op instance name and ``args`` ``{"group": "<name>"}``
  (optional ``"size"`` bytes, ``"wait_ns"`` time spent waiting for peers);
* a **link transfer** (a CANN communication task, a socket send) also carries
  ``"src_rank"``, ``"dst_rank"`` (global ranks), ``"size"`` (bytes) and
  ``"transport"`` (``LOCAL``, ``HCCS``, ``PCIE``, ``RDMA``, ``SIO``, ``TCP``);
  it belongs to the operator of the same rank and group whose span holds its
  start. A rank's copy into its own buffer is the link ``r-r`` (LOCAL);
* an **HCCL task** (``"task_type"`` in args: ``Memcpy``, ``Reduce_Inline``,
  ``Notify_Wait``, ``Notify_Record``, RDMA sends ..., with ``plane_id``,
  ``src_rank``/``dst_rank``, ``size``, ``transport_type``, ``link_type``,
  ``rdma_type`` as the Ascend tools record them) belongs to the operator of its
  group whose span holds its start, and its operator's numbers are computed as
  CANN's communication analysis computes them (what torch_npu and MindSpore
  copy into their ``communication.json``):

  - Transit: on the *master plane*, the SDMA ``Memcpy``/``Reduce_Inline``
    tasks over a link other than ``ON_CHIP`` plus each RDMA payload sequence
    (first payload to the end of its closing task); Wait: the master plane's
    ``Notify_Wait`` tasks; Synchronization: those before its first transit;
    Elapse: the operator's span; Idle = Elapse - Transit - Wait. The data does
    not always say which plane is the master: ``is_master`` where a database
    has it (schema 1.2), else the lowest plane that transits, else the lowest
    plane (checked on real 8-plane Ascend910B jobs, Level1 and Level2, text
    and db).
  - Bandwidth: every plane's transits by link (``HCCS``, ``PCIE``, ``SIO``;
    other SDMA links as ``SDMA``; ``RDMA``), sizes in MB of 10^6 bytes, GB/s =
    MB/ms; ``SDMA`` also sums ``HCCS``+``PCIE``+``SIO``.
  - Matrix: per operator and ``src-dst`` link (``dst`` 0xFFFFFFFF is the
    source itself; ``ON_CHIP`` shows as ``LOCAL``), then, as torch_npu writes
    ``communication_matrix.json``, per op type, group and link the operators
    ranked by bandwidth: ``top1``, ``middle``, ``bottom1..3`` and ``total``.

  Any other task of an operator without an Ascend task type stays inside its
  operator's time.

Example::

    >>> import json
    >>> from npuprof.events import EventTable, EventKind
    >>> ev = EventTable.from_records(ts=[0, 10], dur=[100, 50], kind=[EventKind.COMM] * 2,
    ...     name=["allreduce_1", "allreduce_1"], type="AllReduce",
    ...     args=['{"group": "world"}',
    ...           '{"group": "world", "src_rank": 0, "dst_rank": 1, "size": 1048576, "transport": "HCCS"}'])
    >>> c = comm_events(ev)
    >>> len(c.ops["ts"]), c.links["size"].tolist()
    (1, [1048576.0])
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import numpy as np

from ..events import EventKind, EventTable

P2P_WORDS = ("send", "recv", "receive")
TOTAL_OP = "Total Op Info"    # the per-step sum the tools write beside the operators
MB = 1e6                      # the Ascend tools' MB: 10^6 bytes (their GB/s is MB per ms)
INVALID_RANK = 0xFFFFFFFF     # an HCCL task's peer when it has none
TRANSPORTS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")    # communication.json's bandwidth keys, in its order
SDMA_TRANSIT = ("Memcpy", "Reduce_Inline")
RDMA_PAYLOAD = "RDMA_SEND_PAYLOAD"
# a packet larger than this (MB) is "large" (CANN's thresholds)
LARGE_PACKET_MB = {"RDMA": 0.5, "HCCS": 32, "PCIE": 32, "SIO": 32}
# torch_npu's op type of a communication operator in the matrix (first match, in this order)
MATRIX_OP_TYPE = re.compile(r"send|reduce|invalid|broadcast|allreduce|receive|allgather|reducescatter|scatter|"
                            r"alltoall|alltoallv|alltoallvc|batchsendrecv")
TORCH_P2P_PREFIXES = ("hcom_send", "hcom_receive", "hcom_batchsendrecv")


def _int_or(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


@dataclass
class CommEvents:
    """Column dicts of a rank's communication operators, link transfers and HCCL tasks."""

    ops: dict
    links: dict
    tasks: dict = field(default_factory=lambda: {"ts": np.zeros(0, np.int64)})
    # the HCCL tasks per operator and plane, built once for the files that read them (see _op_tasks)
    op_tasks_built: Optional[dict] = field(default=None, init=False, repr=False, compare=False)

    @property
    def has_tasks(self) -> bool:
        return len(self.tasks["ts"]) > 0

    @property
    def has_ops(self) -> bool:
        return len(self.ops["ts"]) > 0

    @property
    def has_links(self) -> bool:
        return len(self.links["ts"]) > 0

    @property
    def details_measured(self) -> bool:
        """True when the data records what an operator's time is made of (HCCL tasks or link transfers):
        without them (torch_npu Level0) transit, wait, synchronisation and bandwidth are not measured,
        and torch_npu writes no communication files."""
        return self.has_tasks or self.has_links


def comm_events(events: EventTable) -> CommEvents:
    """Split a rank's COMM events into operators and link transfers.

    Each distinct ``args`` string is parsed once (vectorised over events).
    """
    comm = events.of_kind(EventKind.COMM)
    codes = comm["args"]
    uniq, inv = np.unique(codes, return_inverse=True) if len(comm) else (np.zeros(0, np.int32), np.zeros(0, int))
    parsed = comm.args_objects(uniq)
    group = np.array([str(p.get("group", p.get("group_name", "default"))) for p in parsed] or [""], dtype=object)
    src = np.array([_int_or(p.get("src_rank"), -1) for p in parsed] or [-1], dtype=np.int64)
    dst = np.array([_int_or(p.get("dst_rank"), -1) for p in parsed] or [-1], dtype=np.int64)
    size = np.array([float(p.get("size", 0) or 0) for p in parsed] or [0.0], dtype=np.float64)
    wait = np.array([float(p.get("wait_ns", 0) or 0) for p in parsed] or [0.0], dtype=np.float64)
    transport = np.array([str(p.get("transport", "UNKNOWN")) for p in parsed] or [""], dtype=object)
    is_task = np.array([("task_type" in p) for p in parsed] or [False], dtype=bool)    # an HCCL task
    is_link = (src >= 0) & (dst >= 0) & ~is_task
    types = comm.string_array("type") if len(comm) else np.zeros(0, dtype=object)
    names = comm.string_array("name") if len(comm) else np.zeros(0, dtype=object)
    types = np.where(types == "", names, types)
    link_mask = is_link[inv] if len(comm) else np.zeros(0, bool)
    op_mask = ~(is_link | is_task)[inv] if len(comm) else np.zeros(0, bool)
    task_mask = is_task[inv] if len(comm) else np.zeros(0, bool)

    def cols(mask: np.ndarray, with_links: bool) -> dict:
        sel = inv[mask]
        out = {"ts": comm["ts"][mask], "dur": comm["dur"][mask], "step": comm["step"][mask],
               "type": types[mask], "name": names[mask], "group": group[sel], "size": size[sel],
               "wait": wait[sel]}
        if with_links:
            out.update({"src": src[sel], "dst": dst[sel], "transport": transport[sel]})
        return out

    tasks = cols(task_mask, True)
    sel = inv[task_mask]
    plane = np.array([_int_or(p.get("plane_id"), -1) for p in parsed] or [-1], dtype=np.int64)[sel]
    tasks.update({
        "task_type": np.array([str(p.get("task_type", "")) for p in parsed] or [""], dtype=object)[sel],
        "plane": np.where(plane >= 0, plane, comm["tid"][task_mask]),
        "transport_type": np.array([str(p.get("transport_type") or p.get("transport") or "") for p in parsed]
                                   or [""], dtype=object)[sel],
        "link_type": np.array([str(p.get("link_type") or "") for p in parsed] or [""], dtype=object)[sel],
        "rdma_type": np.array([str(p.get("rdma_type") or "") for p in parsed] or [""], dtype=object)[sel],
        "is_master": np.array([_int_or(p.get("is_master"), -1) for p in parsed] or [-1], dtype=np.int64)[sel]})
    return CommEvents(ops=cols(op_mask, False), links=cols(link_mask, True), tasks=tasks)


def is_p2p(op_type: str) -> bool:
    low = op_type.lower()
    return any(w in low for w in P2P_WORDS)


def link_owners(c: CommEvents) -> np.ndarray:
    """Index of the operator holding each link (same group, start inside), -1 if none."""
    return _owners(c, c.links)


def task_owners(c: CommEvents) -> np.ndarray:
    """Index of the operator holding each HCCL task (same group, start inside), -1 if none."""
    return _owners(c, c.tasks)


def _owners(c: CommEvents, items: dict) -> np.ndarray:
    n_items = len(items["ts"])
    owner = np.full(n_items, -1, dtype=np.int64)
    if not n_items or not c.has_ops:
        return owner
    ots, oend, ogroup = c.ops["ts"], c.ops["ts"] + c.ops["dur"], c.ops["group"]
    order = np.argsort(ots, kind="stable")
    sts = ots[order]
    # the latest operator started at or before each item holds it in the usual case: decided for all at once;
    # the others scan back one by one as before
    latest = np.searchsorted(sts, items["ts"], side="right") - 1
    k0 = order[np.maximum(latest, 0)]
    held = (latest >= 0) & (oend[k0] >= items["ts"]) & (ogroup[k0] == items["group"])
    owner[held] = k0[held]
    for i in np.flatnonzero(~held & (latest >= 0)).tolist():
        t, g = int(items["ts"][i]), items["group"][i]
        j = int(latest[i])
        while j >= 0:
            k = order[j]
            if oend[k] >= t and ogroup[k] == g:
                owner[i] = k
                break
            if t - sts[j] > 10**10:  # no op spans 10 s back; stop scanning
                break
            j -= 1
    return owner


def op_instance_names(c: CommEvents) -> list[str]:
    """Unique ``name@group`` per operator (repeats within a step get ``_<n>``)."""
    seen: dict[tuple, int] = {}
    out = []
    for step, name, group in zip(c.ops["step"].tolist(), c.ops["name"].tolist(), c.ops["group"].tolist()):
        k = (step, name, group)
        n = seen.get(k, 0)
        seen[k] = n + 1
        out.append(f"{name}{'' if n == 0 else f'_{n}'}@{group}")
    return out


def ordinal_keys(ops: Iterable[tuple[int, str, str]]) -> list[str]:
    """``step|type|group|ordinal`` of operators given as (step, type, group) in start-time order: the keys
    matching the same collective across ranks."""
    seen: dict[tuple, int] = {}
    keys = []
    for k in ops:
        n = seen.get(k, 0)
        seen[k] = n + 1
        keys.append(f"{k[0]}|{k[1]}|{k[2]}|{n}")
    return keys


def alignment_keys(c: CommEvents) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Keys matching the same collective across ranks (:func:`ordinal_keys`), with the operators' start and
    end times in that order."""
    order = np.lexsort((c.ops["ts"],))
    keys = ordinal_keys((int(c.ops["step"][i]), c.ops["type"][i], c.ops["group"][i]) for i in order.tolist())
    return keys, c.ops["ts"][order], (c.ops["ts"] + c.ops["dur"])[order]


def step_key(step: int) -> str:
    """The key of ``step`` in communication(_matrix).json: ``step3``, or ``step`` for no step (-1)."""
    return f"step{step}" if step >= 0 else "step"


# -- HCCL tasks: CANN's communication analysis --------------------------------------------------------------
@dataclass
class _Task:
    ts: int
    dur: int
    task_type: str
    src: int
    dst: int
    size: float
    transport_type: str
    link_type: str
    rdma_type: str
    is_master: int          # CANN's flag where the data has it (db schema 1.2), else -1


def _op_tasks(c: CommEvents) -> dict[int, dict[int, list[_Task]]]:
    """Operator index -> plane -> its HCCL tasks in time order (built once per ``c``; read-only)."""
    if c.op_tasks_built is not None:
        return c.op_tasks_built
    out: dict[int, dict[int, list[_Task]]] = {}
    owner = task_owners(c)
    held = np.flatnonzero(owner >= 0)
    if len(held):
        t = c.tasks
        cols = [t[k][held].tolist() for k in ("plane", "ts", "dur", "task_type", "src", "dst", "size",
                                              "transport_type", "link_type", "rdma_type", "is_master")]
        for o, plane, ts, dur, task_type, src, dst, size, transport, link, rdma, master in zip(
                owner[held].tolist(), *cols):
            out.setdefault(o, {}).setdefault(int(plane), []).append(_Task(
                int(ts), int(dur), str(task_type), int(src), int(dst), float(size), str(transport).upper(),
                str(link).upper(), str(rdma).upper(), int(master)))
    for planes in out.values():
        for tasks in planes.values():
            tasks.sort(key=lambda x: x.ts)
    c.op_tasks_built = out
    return out


def _sdma_transit(t: _Task) -> bool:
    return t.task_type in SDMA_TRANSIT and t.transport_type == "SDMA" and t.link_type != "ON_CHIP"


def _rdma_sequence(tasks: list[_Task], i: int, closing: int) -> tuple[int, float, float]:
    """From an RDMA payload at ``i``: (tasks to skip, transit ms, size MB); transit 0 when unclosed."""
    n = 0
    while i + n < len(tasks) and tasks[i + n].rdma_type == RDMA_PAYLOAD:
        n += 1
    last = i + n + closing - 2
    if last >= len(tasks):
        return n, 0.0, 0.0
    end = tasks[last].ts + tasks[last].dur
    return n + closing - 1, (end - tasks[i].ts) / 1e6, sum(x.size for x in tasks[i:i + n]) / MB


def _closing_tasks(op_name: str) -> int:
    """Tasks that close an RDMA send after its payloads: 3 for send/receive, 5 with a barrier (CANN)."""
    low = op_name.lower()
    return 3 if "send" in low or "receive" in low else 5


def _master_plane(planes: dict[int, list[_Task]]) -> int:
    flagged = [p for p, tasks in planes.items() if any(t.is_master == 1 for t in tasks)]
    if flagged:
        return min(flagged)
    transiting = [p for p, tasks in planes.items() if any(_sdma_transit(t) or t.rdma_type == RDMA_PAYLOAD
                                                          for t in tasks)]
    return min(transiting) if transiting else min(planes)


def _hccl_time_info(op_ts: int, op_dur: int, op_name: str, planes: dict[int, list[_Task]]) -> dict:
    tasks = planes[_master_plane(planes)]
    closing = _closing_tasks(op_name)
    transit = wait = sync = 0.0
    waiting = True
    i = 0
    while i < len(tasks):
        t = tasks[i]
        if _sdma_transit(t):
            waiting = False
            transit += t.dur / 1e6
        if t.rdma_type == RDMA_PAYLOAD:
            skip, ms, _ = _rdma_sequence(tasks, i, closing)
            if ms:
                transit += ms
                waiting = False
            i += max(skip, 1)
            continue
        if t.task_type == "Notify_Wait":
            wait += t.dur / 1e6
            if waiting:
                sync += t.dur / 1e6
        i += 1
    elapse = op_dur / 1e6
    return {"Start Timestamp(us)": op_ts / 1e3, "Elapse Time(ms)": elapse, "Transit Time(ms)": transit,
            "Wait Time(ms)": wait, "Synchronization Time(ms)": sync, "Idle Time(ms)": elapse - transit - wait,
            "Wait Time Ratio": _ratio(wait, wait + transit), "Synchronization Time Ratio": _ratio(sync, sync + transit)}


def _ratio(part: float, whole: float) -> float:
    """``part / whole`` to 4 places, 0 for an empty whole (the tools' ratios; GB/s = MB / ms)."""
    return round(part / whole, 4) if abs(whole) > 1e-15 else 0


def _hccl_bandwidth_info(op_name: str, planes: dict[int, list[_Task]]) -> dict:
    acc = {tr: {"size": 0.0, "time": 0.0, "dist": defaultdict(lambda: [0, 0.0])} for tr in TRANSPORTS}

    def record(tr: str, size_mb: float, ms: float) -> None:
        a = acc[tr]
        a["size"] += size_mb
        a["time"] += ms
        a["dist"][size_mb][0] += 1
        a["dist"][size_mb][1] += ms

    closing = _closing_tasks(op_name)
    for tasks in planes.values():
        i = 0
        while i < len(tasks):
            t = tasks[i]
            if _sdma_transit(t):
                link = "HCCS" if t.link_type == "HCCS_SW" else t.link_type
                record(link if link in ("HCCS", "PCIE", "SIO") else "SDMA", t.size / MB, t.dur / 1e6)
            if t.rdma_type == RDMA_PAYLOAD:
                skip, ms, size = _rdma_sequence(tasks, i, closing)
                if ms:
                    record(t.transport_type if t.transport_type in acc else "RDMA", size, ms)
                i += max(skip, 1)
                continue
            i += 1
    for tr in ("HCCS", "PCIE", "SIO"):     # SDMA is every SDMA link's total, its own distribution kept apart
        acc["SDMA"]["size"] += acc[tr]["size"]
        acc["SDMA"]["time"] += acc[tr]["time"]
    out = {}
    for tr in TRANSPORTS:
        a = acc[tr]
        packets = sum(n for n, _ in a["dist"].values())
        large = sum(n for size, (n, _) in a["dist"].items() if size > LARGE_PACKET_MB.get(tr, 0))
        out[tr] = {"Transit Size(MB)": a["size"], "Transit Time(ms)": a["time"],
                   "Bandwidth(GB/s)": round(a["size"] / a["time"], 4) if a["time"] else 0,
                   "Large Packet Ratio": round(large / packets, 4) if packets and tr != "SDMA" else 0,
                   "Size Distribution": {str(size): [n, ms] for size, (n, ms) in a["dist"].items()}}
    return out


def _hccl_links(planes: dict[int, list[_Task]], op_name: str) -> dict[str, dict]:
    """One operator's ``src-dst`` links (CANN's communication matrix of an operator)."""
    links: dict[str, list] = {}
    closing = _closing_tasks(op_name)

    def record(t: _Task, transport: str, size_mb: float, ms: float) -> None:
        dst = t.src if t.dst == INVALID_RANK else t.dst
        a = links.setdefault(f"{t.src}-{dst}", [transport, 0.0, 0.0])
        a[0] = transport
        a[1] += size_mb
        a[2] += ms

    for tasks in planes.values():
        i = 0
        while i < len(tasks):
            t = tasks[i]
            if t.src < 0 or t.src == INVALID_RANK:
                i += 1
                continue
            if t.transport_type == "SDMA" and t.task_type in SDMA_TRANSIT:
                link = {"ON_CHIP": "LOCAL", "HCCS_SW": "HCCS"}.get(t.link_type, t.link_type)
                record(t, link, t.size / MB, t.dur / 1e6)
            if t.rdma_type == RDMA_PAYLOAD:
                skip, ms, size = _rdma_sequence(tasks, i, closing)
                if ms:
                    record(t, t.transport_type, size, ms)
                i += max(skip, 1)
                continue
            i += 1
    return {k: {"Transport Type": tr, "Transit Size(MB)": size, "Transit Time(ms)": ms,
                "Bandwidth(GB/s)": round(size / ms, 4) if ms else 0}
            for k, (tr, size, ms) in links.items()}


def _torch_kind(op_name: str) -> str:
    return "p2p" if op_name.lower().startswith(TORCH_P2P_PREFIXES) else "collective"


def _ranked_links(ops: dict[str, dict[str, dict]]) -> dict:
    """torch_npu's matrix of a step and kind: per op type, group and link, the operators ranked by bandwidth."""
    per_link: dict[tuple, list] = defaultdict(list)
    for op_key, links in ops.items():
        name, _, group = op_key.rpartition("@")
        m = MATRIX_OP_TYPE.search(op_key.lower())
        op_type = m.group() if m else op_key.split("__")[0]
        for link, info in links.items():
            per_link[(op_type, group, link)].append(dict(info, **{"Op Name": name}))
    out: dict = defaultdict(dict)
    for (op_type, group, link), data in per_link.items():
        data.sort(key=lambda x: x["Bandwidth(GB/s)"], reverse=True)
        size = sum(x["Transit Size(MB)"] for x in data)
        ms = sum(x["Transit Time(ms)"] for x in data)
        out[f"{op_type}-top1@{group}"][link] = data[0]
        out[f"{op_type}-middle@{group}"][link] = data[len(data) // 2]
        out[f"{op_type}-bottom1@{group}"][link] = data[-1]
        out[f"{op_type}-total@{group}"][link] = {"Transport Type": data[0]["Transport Type"],
                                                 "Transit Size(MB)": size, "Transit Time(ms)": ms,
                                                 "Bandwidth(GB/s)": _ratio(size, ms)}
        if len(data) >= 2:
            out[f"{op_type}-bottom2@{group}"][link] = data[-2]
        if len(data) >= 3:
            out[f"{op_type}-bottom3@{group}"][link] = data[-3]
    return dict(out)


# -- the per-rank files ------------------------------------------------------------------------------------
def communication_json(c: CommEvents) -> dict:
    """The per-rank ``communication.json`` (torch_npu/MindSpore layout), times from events."""
    out: dict = {}
    owner = link_owners(c)
    names = op_instance_names(c)
    hccl = _op_tasks(c)
    for i, name in enumerate(names):
        step = int(c.ops["step"][i])
        if i in hccl:
            op_name = name.rpartition("@")[0]
            out.setdefault(step_key(step), {"collective": {}, "p2p": {}})[_torch_kind(op_name)][name] = {
                "Communication Time Info": _hccl_time_info(int(c.ops["ts"][i]), int(c.ops["dur"][i]), op_name,
                                                           hccl[i]),
                "Communication Bandwidth Info": _hccl_bandwidth_info(op_name, hccl[i])}
            continue
        kind = "p2p" if is_p2p(str(c.ops["type"][i])) else "collective"
        mine = owner == i
        transit_ns = float(c.links["dur"][mine].sum()) if mine.any() else 0.0
        elapse = float(c.ops["dur"][i]) / 1e6
        transit = transit_ns / 1e6
        wait = float(c.ops["wait"][i]) / 1e6
        bw: dict = {}
        for tr in sorted(set(c.links["transport"][mine].tolist())):
            sel = mine & (c.links["transport"] == tr)
            t_ms = float(c.links["dur"][sel].sum()) / 1e6
            s_mb = float(c.links["size"][sel].sum()) / MB
            dist: dict = {}
            for s, d in zip(c.links["size"][sel].tolist(), c.links["dur"][sel].tolist()):
                key = str(round(s / MB, 6))
                cnt, tm = dist.get(key, [0, 0.0])
                dist[key] = [cnt + 1, round(tm + d / 1e6, 6)]
            bw[tr] = {"Transit Time(ms)": round(t_ms, 6), "Transit Size(MB)": round(s_mb, 6),
                      "Bandwidth(GB/s)": _ratio(s_mb, t_ms),
                      "Large Packet Ratio": 0, "Size Distribution": dist}
        info = {"Start Timestamp(us)": round(float(c.ops["ts"][i]) / 1e3, 3),
                "Elapse Time(ms)": round(elapse, 6), "Transit Time(ms)": round(transit, 6),
                "Wait Time(ms)": round(wait, 6), "Synchronization Time(ms)": 0.0,
                "Idle Time(ms)": round(max(elapse - transit - wait, 0.0), 6),
                "Wait Time Ratio": round(wait / (wait + transit), 4) if wait + transit > 0 else 0,
                "Synchronization Time Ratio": 0}
        out.setdefault(step_key(step), {"collective": {}, "p2p": {}})[kind][name] = {
            "Communication Time Info": info, "Communication Bandwidth Info": bw}
    for step_dict in out.values():
        for kind, ops in step_dict.items():
            if ops:
                ops[TOTAL_OP] = total_op_info(list(ops.values()))
    return out


def total_op_info(ops: list) -> dict:
    """The "Total Op Info" entry the tools write: sums over ``ops`` (each an operator's info; a step's
    operators in a rank's file, one rank's operators of a group in the cluster's)."""
    keys = ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)", "Idle Time(ms)")
    t = {k: round(sum(o["Communication Time Info"][k] for o in ops), 6) for k in keys}
    wait, transit, sync = t["Wait Time(ms)"], t["Transit Time(ms)"], t["Synchronization Time(ms)"]
    t["Wait Time Ratio"] = round(wait / (wait + transit), 4) if wait + transit > 0 else 0
    t["Synchronization Time Ratio"] = round(sync / (sync + transit), 4) if sync + transit > 0 else 0
    bw: dict = {}
    for o in ops:
        for tr, v in o["Communication Bandwidth Info"].items():
            a = bw.setdefault(tr, {"Transit Time(ms)": 0.0, "Transit Size(MB)": 0.0, "Bandwidth(GB/s)": 0,
                                   "Large Packet Ratio": 0, "Size Distribution": {}})
            a["Transit Time(ms)"] = round(a["Transit Time(ms)"] + v["Transit Time(ms)"], 6)
            a["Transit Size(MB)"] = round(a["Transit Size(MB)"] + v["Transit Size(MB)"], 6)
            for size, (cnt, tm) in v["Size Distribution"].items():
                c0, t0 = a["Size Distribution"].get(size, [0, 0.0])
                a["Size Distribution"][size] = [c0 + cnt, round(t0 + tm, 6)]
    for a in bw.values():
        t_ms, s_mb = a["Transit Time(ms)"], a["Transit Size(MB)"]
        a["Bandwidth(GB/s)"] = _ratio(s_mb, t_ms)
    return {"Communication Time Info": t, "Communication Bandwidth Info": bw}


def communication_matrix_json(c: CommEvents) -> dict:
    """The per-rank ``communication_matrix.json``: per step and op type, ``"src-dst"`` links.

    Operators with HCCL tasks are written as torch_npu writes them (ranked
    ``top1``/``middle``/``bottom``/``total`` entries per op type and group);
    npuprof's own link transfers per op type and group.
    """
    out: dict = {}
    hccl = _op_tasks(c)
    if hccl:
        names = op_instance_names(c)
        per_step: dict = {}
        for i, planes in hccl.items():
            op_name = names[i].rpartition("@")[0]
            per_step.setdefault(step_key(int(c.ops["step"][i])), {"collective": {}, "p2p": {}})[
                _torch_kind(op_name)][names[i]] = _hccl_links(planes, op_name)
        for step, kinds in per_step.items():
            out[step] = {kind: _ranked_links(ops) for kind, ops in kinds.items()}
    if not c.has_links:
        return out
    owner = link_owners(c)
    op_type = np.where(owner >= 0, c.ops["type"][np.maximum(owner, 0)] if c.has_ops else "", c.links["type"])
    agg: dict = {}
    for i in range(len(c.links["ts"])):
        step = int(c.links["step"][i])
        t = str(op_type[i])
        kind = "p2p" if is_p2p(t) else "collective"
        key = (step, kind, f"{t}@{c.links['group'][i]}", f"{int(c.links['src'][i])}-{int(c.links['dst'][i])}")
        a = agg.setdefault(key, [str(c.links["transport"][i]), 0.0, 0.0, str(c.links["name"][i])])
        a[1] += float(c.links["dur"][i]) / 1e6
        a[2] += float(c.links["size"][i]) / MB
    for (step, kind, op, link), (tr, t_ms, s_mb, name) in sorted(agg.items()):
        out.setdefault(step_key(step), {"collective": {}, "p2p": {}})[kind].setdefault(op, {})[link] = {
            "Transport Type": tr, "Transit Time(ms)": round(t_ms, 6), "Transit Size(MB)": round(s_mb, 6),
            "Bandwidth(GB/s)": _ratio(s_mb, t_ms), "Op Name": name}
    return out
