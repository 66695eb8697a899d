"""Chrome / Kineto trace JSON that Perfetto, chrome://tracing, HTA and
MindStudio Insight open.

Kineto conventions kept (reference/formats.md §1): a top-level object with
``schemaVersion``, ``"distributedInfo": {"rank": N, ...}`` written with a space
after each colon (HTA finds the rank with the regex ``"rank":\\s+(\\d+)``),
``baseTimeNanoseconds``, numeric ``ts``/``dur`` in µs with 3 decimals relative
to that base, ``ProfilerStep#N`` as ``user_annotation`` spans, and a final
``Record Window End`` instant. Events are formatted per column, not per
Python dict, and written one per line.

Example::

    write_trace(result.events, Path("trace_view.json"), rank=0, world_size=1)
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Any, Iterable, Optional

import numpy as np
import orjson

from ..events import EventKind, EventTable
from ..fileio import atomic_write

DAY_NS = 86_400 * 10**9
CATEGORY = {
    EventKind.STEP: "user_annotation", EventKind.RANGE: "user_annotation", EventKind.OP: "cpu_op",
    EventKind.KERNEL: "kernel", EventKind.API: "cpu_op", EventKind.COMM: "collective_comm",
    EventKind.STACK: "python_function",
}
DEVICE_PID_BASE = 1 << 24   # synthetic pid for device d: DEVICE_PID_BASE + d
CHUNK = 200_000


def _json_strings(strings: list[str]) -> list[str]:
    return [orjson.dumps(s).decode() for s in strings]


def _args_json(strings: list[str]) -> list[str]:
    out = []
    for s in strings:
        if s.startswith("{"):
            try:
                out.append(orjson.dumps(orjson.loads(s)).decode())
                continue
            except orjson.JSONDecodeError:
                pass
        out.append("{}" if not s else orjson.dumps({"info": s}).decode())
    return out


def trace_header(rank: int, world_size: int, base_ns: int, metadata: Optional[dict] = None) -> str:
    """The object prefix up to ``"traceEvents": [``; keys in Kineto's order."""
    head = {"schemaVersion": 1, "deviceProperties": [],
            "distributedInfo": {"backend": "none", "rank": rank, "world_size": world_size}}
    head.update(metadata or {})
    head.update({"displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns})
    body = json.dumps(head)  # default separators keep '": ' so HTA's rank regex matches
    return body[:-1] + ', "traceEvents": [\n'


def _metadata_events(events: EventTable, base_pid: int) -> list[str]:
    lines = []
    pids = set(np.unique(events["pid"]).tolist()) if len(events) else set()
    devices = set(np.unique(events["device"][events["device"] >= 0]).tolist()) if len(events) else set()
    for pid in sorted(pids | {base_pid}):
        lines.append(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":"Host {pid}"}}}}')
        lines.append(f'{{"ph":"M","name":"process_labels","pid":{pid},"tid":0,"args":{{"labels":"CPU"}}}}')
        lines.append(f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}')
    for d in sorted(devices):
        pid = DEVICE_PID_BASE + d
        lines.append(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":"Ascend Hardware {d}"}}}}')
        lines.append(f'{{"ph":"M","name":"process_labels","pid":{pid},"tid":0,"args":{{"labels":"NPU {d}"}}}}')
    host = events.select(events["device"] < 0) if len(events) else events
    if len(host):
        pairs = np.unique(np.stack([host["pid"], host["tid"]], 1), axis=0)
        for pid, tid in pairs.tolist():
            lines.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},'
                         f'"args":{{"name":"Thread {tid}"}}}}')
    return lines


def event_lines(events: EventTable, base_ns: int) -> Iterable[str]:
    """Trace event JSON lines for a table, in chunks (bounded memory)."""
    names = _json_strings(events.strings)
    args = _args_json(events.strings)
    cats = {int(k): v for k, v in CATEGORY.items()}
    for lo in range(0, len(events), CHUNK):
        part = events.select(slice(lo, lo + CHUNK))
        ts_us = ((part["ts"] - base_ns) / 1000.0).tolist()
        dur_us = (part["dur"] / 1000.0).tolist()
        kind = part["kind"].tolist()
        device = part["device"].tolist()
        pid = np.where(part["device"] >= 0, DEVICE_PID_BASE + part["device"].astype(np.int64), part["pid"]).tolist()
        tid = np.where(part["device"] >= 0, np.maximum(part["stream"], 0), part["tid"]).tolist()
        name_c, arg_c, type_c = part["name"].tolist(), part["args"].tolist(), part["type"].tolist()
        value = part["value"].tolist()
        step = part["step"].tolist()
        out = []
        for i in range(len(kind)):
            k = kind[i]
            if k == 7:  # COUNTER
                out.append(f'{{"ph":"C","name":{names[name_c[i]]},"pid":{pid[i]},"tid":{tid[i]},'
                           f'"ts":{ts_us[i]:.3f},"args":{{"value":{value[i]!r}}}}}')
            elif k == 2:  # MARK
                out.append(f'{{"ph":"i","s":"t","cat":"cpu_instant_event","name":{names[name_c[i]]},'
                           f'"pid":{pid[i]},"tid":{tid[i]},"ts":{ts_us[i]:.3f},"args":{args[arg_c[i]]}}}')
            elif k == 8:  # MEMORY
                out.append(f'{{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":{pid[i]},'
                           f'"tid":{tid[i]},"ts":{ts_us[i]:.3f},"args":{{"Bytes":{value[i]!r}}}}}')
            else:
                a = args[arg_c[i]]
                extra = f'"Op Type":{names[type_c[i]]},"Step":{step[i]}'
                if device[i] >= 0:
                    extra += f',"device":{device[i]},"stream":{tid[i]}'
                a = "{" + extra + ("," + a[1:] if len(a) > 2 else "}")
                out.append(f'{{"ph":"X","cat":"{cats.get(k, "cpu_op")}","name":{names[name_c[i]]},'
                           f'"pid":{pid[i]},"tid":{tid[i]},"ts":{ts_us[i]:.3f},"dur":{dur_us[i]:.3f},"args":{a}}}')
        yield ",\n".join(out)


def base_time_ns(events: EventTable) -> int:
    """Base for relative ``ts``: the start of the UTC day of the first event."""
    if not len(events):
        return 0
    return int(events["ts"].min()) // DAY_NS * DAY_NS


def write_trace_to(fh: IO[bytes], events: EventTable, rank: int = 0, world_size: int = 1,
                   metadata: Optional[dict] = None, host_pid: int = 0) -> None:
    base = base_time_ns(events)
    fh.write(trace_header(rank, world_size, base, metadata).encode())
    first = True
    for line in _metadata_events(events, host_pid):
        fh.write((("" if first else ",\n") + line).encode())
        first = False
    for block in event_lines(events, base):
        if block:
            fh.write((("" if first else ",\n") + block).encode())
            first = False
    end_ts = ((int((events["ts"] + events["dur"]).max()) - base) / 1000.0) if len(events) else 0.0
    tail = f'{{"ph":"i","s":"g","name":"Record Window End","pid":{host_pid},"tid":0,"ts":{end_ts:.3f}}}'
    fh.write((("" if first else ",\n") + tail + "\n]}\n").encode())


def write_trace(events: EventTable, path: Path, rank: int = 0, world_size: int = 1,
                metadata: Optional[dict] = None, use_gzip: bool = False, host_pid: int = 0) -> Path:
    """Write a Kineto-style trace atomically (gzip when asked or path ends .gz)."""
    use_gzip = use_gzip or str(path).endswith(".gz")

    def write(fh: IO[bytes]) -> None:
        if use_gzip:
            with gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=6, mtime=0) as gz:
                write_trace_to(gz, events, rank, world_size, metadata, host_pid)
        else:
            write_trace_to(fh, events, rank, world_size, metadata, host_pid)

    return atomic_write(path, write)


def load_trace(path: Path) -> Any:
    """Read a trace written by npuprof or another tool (object or array form)."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    return orjson.loads(raw)
