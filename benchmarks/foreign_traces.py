"""Large traces written by other tools, built from the real samples in ../shared/realdata (never committed):

* :func:`kineto_repeated`: HTA's real GPU Kineto trace (``trace_diff/test/test.json.gz``, 68k complete events)
  repeated ``copies`` times, each copy shifted after the previous one in time, its correlation and flow ids
  shifted apart, written as one ``*.pt.trace.json`` (25 copies: 1.7M complete events, ~300 MB);
* :func:`trace_view_repeated`: the real Level1 torch_npu rank's ``trace_view.json`` (msinsight's
  ``level1/rank0_ascend_pt``) repeated ``copies`` times the same way (metadata events once), written as
  ``<dst>/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json`` with the run's ``profiler_info`` beside it
  (60 copies: ~640k events, ~120 MB);
* :func:`cann_timeline_repeated`: the real CANN 6.x/7.0 collection's merged device timeline (mindinsight's
  ``PROF_000001_..._COJGGGCANRMICFBC``: ``device_0/timeline/msprof_0_2_{1..10}.json``, one file per iteration)
  repeated ``copies`` times, copy ``k`` of slice ``i`` written as slice ``10k + i`` with its times shifted
  after the previous copy (the step trace's times in args too) and its iteration numbers ``+ 10k`` (metadata
  in every file, as msprof writes it), under a ``PROF_`` directory with the collection's info/start_info and
  an end_info moved to the new end along the collection's clock ratio (40 copies: 400 files, 110.7 MB,
  333,360 events read). Only the merged ``msprof_*`` files are written: the per-kind files
  (``task_time_*`` ...) are not read where they are present.

All three are what a user's long run looks like to a reader: the same kinds of events in the same proportions.

Example::

    python benchmarks/foreign_traces.py /tmp/traces        # builds all three (25x, 60x, 40x), prints their paths
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"
KINETO_SAMPLE = REALDATA / "hta" / "tests" / "data" / "trace_diff" / "test" / "test.json.gz"
CANN_PROF = REALDATA / "mindinsight" / "tests" / "utils" / "resource" / "profiler" / \
    "PROF_000001_20230818142704322_COJGGGCANRMICFBC"
LEVEL1_RUN = REALDATA / "msinsight" / "test" / "data" / "pytorch" / "text" / "level1" / "rank0_ascend_pt"


def _span(events: list, ts_of) -> float:
    times = [ts_of(e) for e in events if e.get("ts") is not None]
    ends = [ts_of(e) + float(e.get("dur") or 0) for e in events if e.get("ts") is not None]
    return max(ends) - min(times)


def kineto_repeated(dst_dir: Path, copies: int = 25) -> Path:
    """``copies`` shifted copies of the real Kineto sample as one trace file under ``dst_dir``."""
    doc = orjson.loads(gzip.decompress(KINETO_SAMPLE.read_bytes()))
    events = doc["traceEvents"]
    shift = int(_span(events, lambda e: float(e["ts"]))) + 1000
    max_corr = max((e.get("args", {}).get("correlation", 0) for e in events
                    if isinstance(e.get("args", {}).get("correlation"), int)), default=0) + 1
    max_id = max((e["id"] for e in events if isinstance(e.get("id"), int)), default=0) + 1
    out: list = [e for e in events if e.get("ph") == "M"]
    for k in range(copies):
        for e in events:
            if e.get("ph") == "M":
                continue
            c = dict(e)
            if isinstance(c.get("ts"), (int, float)):
                c["ts"] = c["ts"] + k * shift
            if isinstance(c.get("id"), int):
                c["id"] = c["id"] + k * max_id
            args = c.get("args")
            if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                c["args"] = {**args, "correlation": args["correlation"] + k * max_corr}
            out.append(c)
    doc["traceEvents"] = out
    dst_dir.mkdir(parents=True, exist_ok=True)
    path = dst_dir / f"rank-0.x{copies}.pt.trace.json"
    path.write_bytes(orjson.dumps(doc))
    return path


def trace_view_repeated(dst_dir: Path, copies: int = 60) -> Path:
    """``copies`` shifted copies of the real Level1 rank's trace_view.json, as a torch_npu run directory under
    ``dst_dir``; returns the run directory."""
    src = LEVEL1_RUN / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = orjson.loads(src.read_bytes())
    shift = Decimal(int(_span(events, lambda e: float(e["ts"]))) + 1000)
    id_shift = int(shift) * 1000     # some flow ids are ns times: shifted as the times are, apart from small ids
    out: list = [e for e in events if e.get("ph") == "M"]
    for k in range(copies):
        for e in events:
            if e.get("ph") == "M":
                continue
            c = dict(e)
            ts = c.get("ts")
            if isinstance(ts, str):     # µs text with three decimals: shifted exactly
                c["ts"] = f"{Decimal(ts) + k * shift:.3f}"
            elif isinstance(ts, (int, float)):
                c["ts"] = ts + k * float(shift)
            if isinstance(c.get("id"), int):
                c["id"] = c["id"] + k * id_shift
            elif isinstance(c.get("id"), str) and k:
                c["id"] = f"{c['id']}-{k}"
            out.append(c)
    run = dst_dir / "rank0_ascend_pt"
    (run / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True, exist_ok=True)
    for info in LEVEL1_RUN.glob("profiler_*.json"):
        shutil.copyfile(info, run / info.name)
    (run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_bytes(orjson.dumps(out))
    return run


_STEP_TIME_KEY = re.compile(r"(Start|End)( \d+)?$")      # step trace args that are times (µs)


def _slice_number(path: Path) -> int:
    return int(path.stem.rsplit("_", 1)[1])


def cann_timeline_repeated(dst_dir: Path, copies: int = 40) -> Path:
    """``copies`` shifted copies of the real CANN collection's ``msprof_*.json`` slices, as a ``PROF_``
    directory under ``dst_dir``; returns that directory."""
    src = CANN_PROF / "device_0"
    slices = sorted(src.glob("timeline/msprof_*.json"), key=_slice_number)
    docs = [orjson.loads(p.read_bytes()) for p in slices]
    timed = [e for doc in docs for e in doc if isinstance(e.get("ts"), (int, float))]
    start = min(e["ts"] for e in timed)
    shift = int(max(e["ts"] + float(e.get("dur") or 0) for e in timed) - start) + 1000    # µs
    iterations = len(slices)
    prof = dst_dir / CANN_PROF.name
    timeline = prof / "device_0" / "timeline"
    timeline.mkdir(parents=True, exist_ok=True)
    for info in ("info.json.0", "start_info.0"):
        shutil.copyfile(src / info, prof / "device_0" / info)
    for k in range(copies):
        for path, doc in zip(slices, docs):
            out = []
            for e in doc:
                c = dict(e)
                if isinstance(c.get("ts"), (int, float)):
                    c["ts"] = c["ts"] + k * shift
                args = c.get("args")
                if k and isinstance(args, dict) and isinstance(args.get("Iteration ID"), int):
                    old, new = args["Iteration ID"], args["Iteration ID"] + k * iterations
                    c["args"] = {key: (v + k * shift if _STEP_TIME_KEY.search(key) and isinstance(v, float) else v)
                                 for key, v in args.items()}
                    c["args"]["Iteration ID"] = new
                    renamed = re.compile(rf"(?<=[ _]){old}(?=$|_)")
                    for key in ("name", "id"):
                        if isinstance(c.get(key), str):
                            c[key] = renamed.sub(str(new), c[key])
                out.append(c)
            number = _slice_number(path) + k * iterations
            name = path.name[:-len(f"_{_slice_number(path)}.json")] + f"_{number}.json"
            (timeline / name).write_bytes(json.dumps(out).encode())      # msprof's own spacing
    # the end pair moved to the new end along the collection's own clock ratio
    begin = json.loads((src / "start_info.0").read_text())
    end = json.loads((src / "end_info.0").read_text())
    mono0, real0 = int(begin["clockMonotonicRaw"]), int(begin["collectionTimeBegin"])
    mono1, real1 = int(end["clockMonotonicRaw"]), int(end["collectionTimeEnd"])
    mono_end = mono1 + (copies - 1) * shift * 1000
    real_end = real0 + round((mono_end - mono0) * (real1 - real0) / (mono1 - mono0))     # µs
    date_end = datetime.strptime(end["collectionDateEnd"], "%Y-%m-%d %H:%M:%S.%f") + \
        timedelta(microseconds=real_end - real1)
    (prof / "device_0" / "end_info.0").write_text(json.dumps(
        {"collectionDateEnd": date_end.strftime("%Y-%m-%d %H:%M:%S.%f"), "collectionTimeEnd": str(real_end),
         "clockMonotonicRaw": str(mono_end)}, separators=(",", ":")))
    return prof


if __name__ == "__main__":     # foreign_traces.py [DST [KINETO_COPIES [TRACE_VIEW_COPIES [CANN_COPIES]]]]
    dst = Path(sys.argv[1] if len(sys.argv) > 1 else "foreign_traces")
    print(kineto_repeated(dst / "kineto", int(sys.argv[2]) if len(sys.argv) > 2 else 25))
    print(trace_view_repeated(dst / "trace_view", int(sys.argv[3]) if len(sys.argv) > 3 else 60))
    print(cann_timeline_repeated(dst / "cann", int(sys.argv[4]) if len(sys.argv) > 4 else 40))
