"""Host-side rules: ``host_bound``, ``dataloader``, ``gc``, ``sync_stream``."""
from __future__ import annotations

import re

import numpy as np

from ....events import EventKind, EventTable
from ...steps import step_spans
from ...intervals import per_bucket_length, union
from ..model import CheckResult, Finding, Needs, NotChecked, Rule, RuleContext

GC_DOMAIN = "python_gc"     # npuprof.recorder.GC_DOMAIN (collection layer; repeated, not imported upward)
DATA_WAIT = re.compile(r"enumerate\(DataLoader\)|DataLoaderIter|IteratorGetNext|GetNext|dataset_iterator|"
                       r"data_?load|next_batch", re.IGNORECASE)
SYNC = re.compile(r"Synchroni[sz]e(Stream|Device|Event)?|StreamSynchronize|aclrtSynchronize|cudaDeviceSynchronize|"
                  r"\.synchronize\b|item\(\)|aten::item|aten::_local_scalar_dense", re.IGNORECASE)
MIN_GAP_NS = 20_000         # device idle gaps shorter than 20 µs are launch latency, not host-bound time
TOP = 10


def _steps(events: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    numbers, starts, ends = step_spans(events)
    if not len(numbers) and len(events):
        ts = events["ts"]
        return np.array([-1]), np.array([int(ts.min())]), np.array([int((ts + events["dur"]).max())])
    return numbers, starts, ends


def _host_rows(events: EventTable, kinds: tuple, pattern: "re.Pattern | None" = None,
               domain: "str | None" = None) -> np.ndarray:
    kind = events["kind"]
    mask = np.isin(kind, np.array([int(k) for k in kinds], np.uint8)) & (events["device"] < 0)
    rows = np.flatnonzero(mask)
    if domain is not None:
        rows = rows[events.string_array("type")[rows] == domain]
    if pattern is not None:
        names = events.string_array("name")[rows]
        rows = rows[np.array([bool(pattern.search(str(n))) for n in names], bool)] if len(rows) else rows
    return rows


def _per_name(events: EventTable, rows: np.ndarray, steps_n: int) -> list:
    names = events.string_array("name")[rows]
    dur = events["dur"][rows]
    out = []
    for name in dict.fromkeys(names.tolist()):
        d = dur[names == name]
        out.append({"name": str(name), "count": int(len(d)), "total_ms": round(int(d.sum()) / 1e6, 3),
                    "per_step_ms": round(int(d.sum()) / 1e6 / steps_n, 3), "max_ms": round(int(d.max()) / 1e6, 3)})
    return sorted(out, key=lambda r: -r["total_ms"])


def _covered_in_steps(events: EventTable, rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per step: the union of the rows' intervals inside the step (nested ranges counted once)."""
    ts = events["ts"][rows]
    return per_bucket_length(ts, ts + events["dur"][rows], starts, ends)


def dataloader(ctx: RuleContext) -> list:
    """Time the step spends getting its batch: host ranges and operators named as data loading
    (PyTorch's ``enumerate(DataLoader)#...``, TensorFlow's ``IteratorGetNext``, MindSpore's ``GetNext``, a
    ``data_load`` range). At stake per step: their union inside the steps."""
    ev = ctx.result.events
    rows = _host_rows(ev, (EventKind.RANGE, EventKind.OP, EventKind.API), DATA_WAIT)
    if not len(rows):
        return []
    numbers, starts, ends = _steps(ev)
    covered = _covered_in_steps(ev, rows, starts, ends)
    total = int(covered.sum())
    if total <= 0:
        return []
    evidence = _per_name(ev, rows, ctx.steps)
    worst = np.argsort(-covered)[:3]
    evidence += [{"step": int(numbers[i]), "data_wait_ms": round(int(covered[i]) / 1e6, 3),
                  "step_ms": round(int(ends[i] - starts[i]) / 1e6, 3)} for i in worst if covered[i] > 0]
    return [Finding("dataloader", ctx.say("dataloader.title", ms=total / 1e6 / ctx.steps), "medium",
                    total / 1e6 / ctx.steps, evidence, ctx.say("dataloader.advice"))]


def gc_pauses(ctx: RuleContext):
    """Python garbage-collector pauses inside the steps (npuprof records them in its own runs through
    ``gc.callbacks``). At stake per step: the pauses' time inside the steps."""
    ev = ctx.result.events
    rows = _host_rows(ev, (EventKind.RANGE,), domain=GC_DOMAIN)
    if not len(rows):
        if ctx.result.info.parameters.get("gc_detect_threshold") is not None:
            return []                 # recorded, and none as long as the threshold
        return NotChecked("Python GC pauses, which npuprof records in its own runs with "
                          "Profiler(gc_detect_threshold=MS) (gc.callbacks)")
    numbers, starts, ends = _steps(ev)
    covered = _covered_in_steps(ev, rows, starts, ends)
    total = int(covered.sum())
    evidence = []
    for name in _per_name(ev, rows, ctx.steps):
        collected = [ev.args_object(c).get("collected", 0) for c in
                     ev["args"][rows][ev.string_array("name")[rows] == name["name"]]]
        name["objects_collected"] = int(sum(int(c or 0) for c in collected))
        evidence.append(name)
    if total <= 0:
        return []
    gen2 = sum(r["total_ms"] for r in evidence if r["name"].endswith("gen 2"))
    return [Finding("gc", ctx.say("gc.title", ms=total / 1e6 / ctx.steps), "medium", total / 1e6 / ctx.steps,
                    evidence, ctx.say("gc.advice") + (ctx.say("gc.advice.gen2", ms=gen2) if gen2 else ""))]


def _launch_of(ev: EventTable) -> dict:
    """corr -> (start ns, row) of the first host event carrying it (the call that launched the device work)."""
    if not ev.has_links():
        return {}
    rows = np.flatnonzero((ev["device"] < 0) & (ev["corr"] >= 0))
    out: dict = {}
    for r, c, t in zip(rows.tolist(), ev["corr"][rows].tolist(), ev["ts"][rows].tolist()):
        if c not in out or t < out[c][0]:
            out[c] = (t, r)
    return out


def host_bound(ctx: RuleContext) -> CheckResult:
    """Device idle gaps (no kernel nor communication on any stream, longer than 20 µs) inside the steps
    that the host caused: the work ending the gap was launched (its ``corr`` link to the host call) after
    the gap began, so the device waited for the host's dispatch; where that work has no launch link, a gap
    with a host launch call in flight. At stake per step: those gaps' time, each listed with the host calls in it."""
    ev = ctx.result.events
    kind, device = ev["kind"], ev["device"]
    dev_rows = np.flatnonzero(np.isin(kind, np.array([int(EventKind.KERNEL), int(EventKind.COMM)], np.uint8))
                              & (device >= 0))
    host = _host_rows(ev, (EventKind.API,))      # the launch path: runtime / ACL calls
    if not len(host):
        host = _host_rows(ev, (EventKind.OP,))
    if not len(host):
        return NotChecked("host API calls or operators (the host's dispatch)")
    numbers, starts, ends = _steps(ev)
    dts = ev["ts"][dev_rows]
    order = np.argsort(dts, kind="stable")
    dev_rows, dts = dev_rows[order], dts[order]
    s, e = union(dts, dts + ev["dur"][dev_rows])
    gap_s, gap_e = e[:-1], s[1:]
    keep = (gap_e - gap_s) >= MIN_GAP_NS
    gap_s, gap_e = gap_s[keep], gap_e[keep]
    b = np.searchsorted(starts, gap_s, side="right") - 1
    inside = (b >= 0) & (gap_e <= ends[np.clip(b, 0, len(ends) - 1)])
    gap_s, gap_e, b = gap_s[inside], gap_e[inside], b[inside]
    if not len(gap_s):
        return []
    launches = _launch_of(ev)
    hs = ev["ts"][host]
    he = hs + ev["dur"][host]
    horder = np.argsort(hs, kind="stable")
    hs, he, host = hs[horder], he[horder], host[horder]
    reach = np.maximum.accumulate(he)
    names = ev.string_array("name")
    busy_gaps: list = []
    for gs, ge, step_i in zip(gap_s.tolist(), gap_e.tolist(), b.tolist()):
        nxt = dev_rows[int(np.searchsorted(dts, ge, side="left"))]
        launch = launches.get(int(ev["corr"][nxt])) if int(ev["corr"][nxt]) >= 0 else None
        hi = int(np.searchsorted(hs, ge, side="left"))
        lo = int(np.searchsorted(reach, gs, side="right"))
        calls = [int(host[j]) for j in range(lo, hi) if he[j] > gs]
        if launch is not None:
            if launch[0] > gs:
                busy_gaps.append((ge - gs, gs, step_i, calls, (launch[1], launch[0] - gs)))
        elif calls:     # no launch link for this gap's work: a launch call in flight
            busy_gaps.append((ge - gs, gs, step_i, calls, None))
    if not busy_gaps:
        return []
    total = sum(g[0] for g in busy_gaps)
    evidence = []
    for gap, gs, step_i, calls, launch in sorted(busy_gaps, key=lambda g: -g[0])[:TOP]:
        top_calls = sorted(calls, key=lambda j: -int(ev["dur"][j]))[:3]
        row = {"step": int(numbers[step_i]), "gap_start_ms": round((gs - int(starts[step_i])) / 1e6, 3),
               "gap_ms": round(gap / 1e6, 3)}
        if launch is not None:
            row["launched_by"] = str(names[launch[0]])
            row["launched_ms_into_gap"] = round(launch[1] / 1e6, 3)
        row["host_calls"] = [f"{names[j]} ({int(ev['dur'][j]) / 1e6:.3f} ms)" for j in top_calls]
        evidence.append(row)
    by_link = sum(1 for g in busy_gaps if g[4] is not None)
    evidence.append({"gaps": len(busy_gaps), "total_ms": round(total / 1e6, 3), "judged_by_launch_link": by_link,
                     "judged_by_host_call_in_flight": len(busy_gaps) - by_link})
    return [Finding("host_bound", ctx.say("host_bound.title", ms=total / 1e6 / ctx.steps, gaps=len(busy_gaps)),
                    "medium", total / 1e6 / ctx.steps, evidence, ctx.say("host_bound.advice"))]


def _device_free_ms(ctx: RuleContext):
    """The device's Free time per step (step_trace_time), None on a host-only run or when not measured."""
    ev = ctx.result.events
    table = ctx.result.tables.get("step_trace_time")
    if table is None or "Free" not in table.columns or not (ev["kind"] == np.uint8(EventKind.KERNEL)).any():
        return None
    try:
        values = [float(v) for v in table.column("Free")]
    except (TypeError, ValueError):
        return None
    if not values or any(v != v for v in values):
        return None
    return sum(values) / 1000.0 / ctx.steps


def sync_stream(ctx: RuleContext) -> list:
    """Host calls that wait for the device (stream/device synchronisation, ``.item()``): the host stalls and
    stops feeding the device. At stake per step: their time inside the steps, at most the device's Free time
    (while the host waits the device works; only its idle time can be won back)."""
    ev = ctx.result.events
    rows = _host_rows(ev, (EventKind.API, EventKind.OP, EventKind.RANGE), SYNC)
    if not len(rows):
        return []
    numbers, starts, ends = _steps(ev)
    total = int(_covered_in_steps(ev, rows, starts, ends).sum())
    if total <= 0:
        return []
    evidence = _per_name(ev, rows, ctx.steps)
    stake = total / 1e6 / ctx.steps
    free = _device_free_ms(ctx)
    if free is not None and free < stake:
        # while the host waits the device works; only the device's idle time can be won back
        evidence.append({"host_wait_ms_per_step": round(stake, 3), "device_free_ms_per_step": round(free, 3)})
        stake = free
    return [Finding("sync_stream", ctx.say("sync_stream.title", ms=total / 1e6 / ctx.steps), "low", stake, evidence,
                    ctx.say("sync_stream.advice"))]


RULES = [
    Rule("host_bound", "Device waiting for the host's dispatch", host_bound,
         Needs(events=(EventKind.KERNEL,), description="device data with host API calls", reads=("events",)),
         docs="docs/advise.md#host_bound"),
    Rule("dataloader", "Step time waiting for data", dataloader, Needs(reads=("events",)), docs="docs/advise.md#dataloader"),
    Rule("gc", "Python garbage-collector pauses", gc_pauses, Needs(reads=("events",)), docs="docs/advise.md#gc"),
    Rule("sync_stream", "Host synchronisations stalling the device", sync_stream,
         Needs(reads=("events", "step_trace_time")),
         docs="docs/advise.md#sync_stream"),
]
