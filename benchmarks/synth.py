"""Synthetic host raw data: a run directory as npuprof's collectors write it.

The mix per simulated step of ``events_per_step`` events follows what a
host-only run records: one ``ProfilerStep#N`` range, framework operators
(OP, as a backend hands them to ``session.record_events``), user ranges
(``record_function``), timed API calls (``trace_api``), marks (``mstx.mark``)
and host usage counters (``host_sys``), over two threads. Chunks are written
through the real :class:`~npuprof.rawstore.RawWriter`, so analysis reads
exactly the format collection produces.

Example::

    run_dir = make_run(Path("/tmp/synth"), n_events=1_000_000)
    npuprof.analyse(run_dir)
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from npuprof.events import EventKind, EventTable, constant_column
from npuprof.rawstore import RAW_DIR, RawWriter
from npuprof.runinfo import base_info, new_run_dir, write_info

# share of each kind among the non-step events of one step
MIX = ((EventKind.OP, 0.55), (EventKind.RANGE, 0.28), (EventKind.API, 0.12),
       (EventKind.MARK, 0.04), (EventKind.COUNTER, 0.01))
OP_TYPES = [f"{t}" for t in ("MatMul", "BiasAdd", "Relu", "Conv2D", "Add", "Mul", "Softmax", "Reshape", "Transpose",
                              "ReduceMean", "Cast", "LayerNorm", "Gelu", "Concat", "Slice", "Gather", "AdamW",
                              "SoftmaxCrossEntropy", "Dropout", "BatchMatMul")]
N_OP_NAMES = 400
RANGE_NAMES = [f"{p}_{i}" for p in ("forward", "backward", "data_load", "optimizer", "layer") for i in range(8)]
API_NAMES = [f"dataset.loader.next_batch_{i}" for i in range(16)]
MARK_NAMES = [f"checkpoint {i}" for i in range(8)]
COUNTER_NAMES = ["CPU Usage(%)", "Memory Usage(%)", "Disk Usage(B/s)", "Network Usage(B/s)"]


def _strings() -> tuple[list[str], dict[str, np.ndarray]]:
    pool = ["", "npuprof", "ProfilerStep", "Python", "host_sys", "default"]
    ops = [f"Default/network-WithLossCell/_backbone-Net/layer{i // 20}/{OP_TYPES[i % len(OP_TYPES)]}-op{i}"
           for i in range(N_OP_NAMES)]
    groups = {}
    for key, names in (("op_name", ops), ("op_type", OP_TYPES), ("range", RANGE_NAMES), ("api", API_NAMES),
                       ("mark", MARK_NAMES), ("counter", COUNTER_NAMES)):
        groups[key] = np.arange(len(pool), len(pool) + len(names), dtype=np.int32)
        pool.extend(names)
    return pool, groups


def synth_chunk(first_step: int, n_steps: int, events_per_step: int, t0_ns: int, step_ns: int,
                rng: np.random.Generator, pid: int, strings: list[str], groups: dict) -> EventTable:
    """Events of ``n_steps`` consecutive steps as one table (time-ordered per thread)."""
    per = events_per_step - 1
    n = n_steps * events_per_step
    steps = np.repeat(np.arange(first_step, first_step + n_steps), events_per_step)
    step_start = t0_ns + (steps - first_step) * step_ns + first_step * step_ns
    pos = np.tile(np.arange(events_per_step), n_steps)
    kind = np.empty(n, np.uint8)
    kinds = np.concatenate([np.full(int(round(share * per)), int(k), np.uint8) for k, share in MIX])
    kinds = np.resize(kinds, per)
    rng.shuffle(kinds)
    kind.reshape(n_steps, events_per_step)[:, 0] = int(EventKind.STEP)
    kind.reshape(n_steps, events_per_step)[:, 1:] = kinds
    slot = step_ns // events_per_step
    ts = step_start + pos * slot + rng.integers(0, slot // 4, n)
    dur = rng.integers(slot // 8, slot, n)
    name = np.zeros(n, np.int32)
    type_ = np.zeros(n, np.int32)
    value = np.zeros(n, np.float64)
    tid = np.where(rng.random(n) < 0.8, pid, pid + 1).astype(np.int64)
    is_step = kind == int(EventKind.STEP)
    dur[is_step] = step_ns - 1
    ts[is_step] = step_start[is_step]
    tid[is_step] = pid
    step_names = [f"ProfilerStep#{s}" for s in range(first_step, first_step + n_steps)]
    base = len(strings)
    strings = strings + step_names
    name[is_step] = base + np.arange(n_steps)
    type_[is_step] = 2
    for k, group, typ in ((EventKind.OP, "op_name", None), (EventKind.RANGE, "range", 5),
                          (EventKind.API, "api", 3), (EventKind.MARK, "mark", 5), (EventKind.COUNTER, "counter", 4)):
        m = kind == int(k)
        codes = groups[group][rng.integers(0, len(groups[group]), int(m.sum()))]
        name[m] = codes
        if typ is None:  # op type follows from the op name
            type_[m] = groups["op_type"][(codes - groups["op_name"][0]) % len(OP_TYPES)]
        else:
            type_[m] = typ
    point = (kind == int(EventKind.MARK)) | (kind == int(EventKind.COUNTER))
    dur[point] = 0
    value[kind == int(EventKind.COUNTER)] = rng.random(int((kind == int(EventKind.COUNTER)).sum())) * 100
    # as the recorder hands them over: a column of one value is a stride-0 view, which the raw
    # record stores once in its header
    table = EventTable.from_codes(
        {"ts": ts, "dur": dur, "kind": kind, "pid": constant_column(pid, n, np.int64), "tid": tid, "value": value,
         "device": constant_column(-1, n, np.int16), "stream": constant_column(-1, n, np.int32),
         "step": constant_column(-1, n, np.int32)},
        {"name": name, "type": type_, "source": constant_column(1, n, np.int32),
         "args": constant_column(0, n, np.int32)},
        strings)
    # the recorder writes each flush thread by thread: time order holds per thread only
    return table.select(np.argsort(tid, kind="stable"))


def make_run(parent: Path, n_events: int, events_per_step: int = 1000, chunk_events: int = 50_000,
             seed: int = 0) -> Path:
    """Write a run directory holding ``n_events`` synthetic host events; returns it."""
    rng = np.random.default_rng(seed)
    run_dir = new_run_dir(Path(parent), "synth", "npu")
    raw = run_dir / RAW_DIR
    pid = 4242
    now = time.time_ns()
    mono = time.perf_counter_ns()
    info = base_info({"export_type": ["text"]}, 0, 0, 1)
    info["npuprof"].update({"state": "stopped", "clock": {"monotonic_ns": mono, "realtime_ns": now},
                            "pid": pid, "synthetic": True})
    writer = RawWriter(raw)
    strings, groups = _strings()
    steps_per_chunk = max(1, chunk_events // events_per_step)
    total_steps = -(-n_events // events_per_step)
    step_ns = 10_000_000
    written = 0
    for first in range(0, total_steps, steps_per_chunk):
        k = min(steps_per_chunk, total_steps - first)
        table = synth_chunk(first, k, events_per_step, now, step_ns, rng, pid, strings, groups)
        if written + len(table) > n_events:
            table = table.select(slice(0, n_events - written))
        writer.append(table)
        written += len(table)
    writer.close()
    info["npuprof"]["events_written"] = written
    write_info(run_dir, 0, info)
    return run_dir
