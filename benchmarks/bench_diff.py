"""``npuprof diff`` against HTA's ``TraceDiff.compare_traces`` and msprof-analyze ``compare``, whole processes,
on the same pairs:

* **real**: HTA's own trace_diff pair (two real GPU Kineto traces, ../shared/realdata/hta/tests/data/trace_diff);
* **1M**: two synthetic 1M-event runs (:mod:`synth`), written once as Kineto-form traces
  (``npuprof.export.trace_json.write_trace``) so that all three tools read the same two files.

Each tool runs as a user runs it: ``npuprof diff BASE NEW --json``; a script calling
``TraceDiff.compare_traces(control_dir, test_dir)`` (HTA 0.5.0, .venv-interop; its default: the first
iteration of the first rank); ``msprof-analyze compare -d NEW -bp BASE -o OUT`` (it takes plain JSON:
the gzipped real pair is unpacked once, untimed). Timed as whole processes (interpreter start, imports,
reading, comparing, output), alternating run by run (``harness.interleave``). On the 1M pair npuprof also
diffs its own raw runs (the format it records), and ``compare()`` alone is timed on the analysed results:
the comparison without reading.
"""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import child_main, interleave, summary

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"
PAIR = REALDATA / "hta" / "tests" / "data" / "trace_diff"
INTEROP = REPO / ".venv-interop" / "bin"
HTA_SCRIPT = r'''
import sys
from hta.trace_diff import TraceDiff
df = TraceDiff.compare_traces(sys.argv[1], sys.argv[2])
print(len(df))
'''


def _timed(cmd: list, timeout: float, cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1, 3):      # npuprof diff's verdict codes; the others exit 0
        raise RuntimeError(f"{cmd[0]} exited {done.returncode}: {done.stderr[-1500:]}")
    return wall


def _tools(work: Path, base_file: Path, new_file: Path, base_plain: Path, new_plain: Path) -> dict:
    """The three commands on one pair (trace files; directories holding them for HTA)."""
    script = work / "hta_diff.py"
    script.write_text(HTA_SCRIPT)
    out = work / "msprof_out"
    tools = {"npuprof": [sys.executable, "-m", "npuprof", "diff", str(base_file), str(new_file), "--json"]}
    if (INTEROP / "python").exists():
        tools["hta"] = [str(INTEROP / "python"), str(script), str(base_file.parent), str(new_file.parent)]
    if (INTEROP / "msprof-analyze").exists():
        tools["msprof"] = [str(INTEROP / "msprof-analyze"), "compare", "-d", str(new_plain), "-bp", str(base_plain),
                           "-o", str(out)]
    return tools


def _race(tools: dict, reps: int, timeout: float, cwd: Path) -> dict:
    def one(cmd: list):
        shutil.rmtree(cwd / "msprof_out", ignore_errors=True)
        return _timed(cmd, timeout, cwd)

    samples = interleave({name: (lambda c=cmd: one(c)) for name, cmd in tools.items()}, reps)
    return {name: summary(s) for name, s in samples.items()}


def _real_pair(work: Path, reps: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    base, new = PAIR / "control" / "control.json.gz", PAIR / "test" / "test.json.gz"
    plain = []
    for src, name in ((base, "control.json"), (new, "test.json")):
        dst = work / name
        dst.write_bytes(gzip.decompress(src.read_bytes()))
        plain.append(dst)
    events = [sum(1 for e in json.loads(p.read_bytes())["traceEvents"] if e.get("ph") == "X") for p in plain]
    return {"complete_events": events, **_race(_tools(work, base, new, *plain), reps, 900, work)}


def _synthetic_pair(work: Path, n: int, reps: int, slow_reps: int) -> dict:
    from synth import make_run

    from npuprof.analysis.diff import compare
    from npuprof.analysis.pipeline import analyse_run
    from npuprof.export.trace_json import write_trace

    runs, traces = [], []
    for side in ("base", "new"):
        run = make_run(work / side, n)
        runs.append(run)
        res = analyse_run(run)
        trace = work / f"{side}_trace" / f"{side}.pt.trace.json"
        trace.parent.mkdir(parents=True, exist_ok=True)
        write_trace(res.events, trace)
        traces.append(trace)
    results = [analyse_run(r) for r in runs]
    samples = [0.0] * reps
    for i in range(reps):
        t0 = time.perf_counter()
        compare(*results)
        samples[i] = time.perf_counter() - t0
    out: dict = {"events": n, "compare_only": summary(samples)}
    raw = [sys.executable, "-m", "npuprof", "diff", str(runs[0]), str(runs[1]), "--json"]
    out["npuprof_raw_runs"] = _race({"npuprof": raw}, reps, 900, work)["npuprof"]
    tools = _tools(work, traces[0], traces[1], traces[0], traces[1])
    out.update(_race({"npuprof": tools.pop("npuprof")}, reps, 900, work))
    for name, cmd in tools.items():     # the slow ones: fewer repetitions, each may fail on its own
        try:
            out.update(_race({name: cmd}, slow_reps, 1800, work))
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            out[f"{name}_error"] = str(e)[-500:]
    return out


def run(params: dict) -> dict:
    work = Path(params["out"])
    result = {}
    try:
        result["real"] = _real_pair(work / "real", int(params.get("reps", 3)))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        result["real"] = {"error": str(e)[-500:]}
    result["synthetic"] = _synthetic_pair(work / "synthetic", int(params.get("n", 1_000_000)),
                                          int(params.get("reps", 3)), int(params.get("slow_reps", 1)))
    shutil.rmtree(work, ignore_errors=True)
    return result


if __name__ == "__main__":
    child_main(run)
