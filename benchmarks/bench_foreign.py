"""Reading other tools' traces: ``npuprof analyse`` on the three synthetic-from-real inputs of
:mod:`foreign_traces` (a real HTA Kineto trace repeated 25x, the real Level1 torch_npu rank's
trace_view.json repeated 60x, the real CANN 6.x/7.0 collection's ``msprof_*.json`` timeline repeated 40x),
whole processes, beside HTA's ``TraceAnalysis`` on the same Kineto file
(.venv-interop: HTA 0.5.0, loading the trace plus its temporal and kernel breakdowns, what a user asks it
first), alternating run by run (``harness.interleave``).

Each run's wall time and peak RSS (``wait4``'s ``ru_maxrss`` of that one child) are recorded; events/s is
the event count npuprof reports over the whole process's wall time. msprof-analyze has no command that
only reads a trace_view.json, but its ``compare`` reads one with its own parser (``NPUProfilingParser``:
ijson, one ``TraceEventBean`` per event): the trace_view row runs that parser's ``load_data`` with every
comparison but the kernel one (which reads kernel_details.csv) turned on, what ``msprof-analyze compare``
does per side before comparing.

For the CANN per-device layout (``PROF_*/device_N/timeline/msprof_*.json``) the side-by-side tool is
msprof-analyze's advisor timeline parser (``advisor.common.profiling.msprof.Msprof.parse_from_file``:
``json.load`` of a file, one ``TaskInfo`` per event), run on every ``msprof_*.json`` of the collection (the
advisor itself parses only the last file of a directory); it reads, npuprof reads, analyses and writes.

``NPUPROF_TRACE_DECODER=orjson`` runs of npuprof on each input (the readers without msgspec) are
interleaved as their own row.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness import child_main, interleave, summary

REPO = Path(__file__).resolve().parents[1]
INTEROP = REPO / ".venv-interop" / "bin"
HTA_SCRIPT = r'''
import sys, logging, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_temporal_breakdown(visualize=False)
a.get_gpu_kernel_breakdown(visualize=False)
'''
MSPROF_SCRIPT = r'''
import sys, logging, warnings
from types import SimpleNamespace
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from msprof_analyze.compare_tools.compare_backend.utils.args_manager import ArgsManager
from msprof_analyze.compare_tools.compare_backend.profiling_parser.npu_profiling_parser import NPUProfilingParser
flags = dict(enable_profiling_compare=True, enable_operator_compare=True, enable_memory_compare=True,
             enable_communication_compare=True, enable_api_compare=True, enable_kernel_compare=False)
# ArgsManager is wrapped in msprof-analyze's Singleton: its path parsing is a classmethod of the class inside
paths = ArgsManager._cls.parse_profiling_path(sys.argv[1])
NPUProfilingParser(SimpleNamespace(**flags), paths).load_data()
'''
MSPROF_TIMELINE_SCRIPT = r'''
import glob, logging, os, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from msprof_analyze.advisor.common.profiling.msprof import Msprof
for f in sorted(glob.glob(os.path.join(sys.argv[1], "device_*", "timeline", "msprof_*.json"))):
    if not Msprof(os.path.dirname(f)).parse_from_file(f):
        raise SystemExit(f"msprof-analyze could not parse {f}")
'''
EVENTS_RE = re.compile(r": (\d+) events -> ")


@dataclass(frozen=True)
class ForeignInput:
    """One input of the race, the result's ``<kind>`` rows: ``npuprof analyse`` of ``path`` (row ``npuprof``,
    its output in ``work/<out_name>``), the same with ``NPUPROF_TRACE_DECODER=orjson`` (row ``npuprof_orjson``,
    ``work/<out_name>o``) and, where .venv-interop is, the other tool (row named ``other_tool``: ``script``
    written to ``work/<script_name>``, run on ``other_input``), interleaved; ``<kind>_bytes`` is the size of
    ``sized`` (a file, or every file under it)."""
    kind: str
    path: Path
    sized: Path
    out_name: str
    other_tool: str
    script_name: str
    script: str
    other_input: Path


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def _timed_tool(cmd: list, out_dir: Path | None, env: dict | None, timeout: float) -> tuple:
    if out_dir is not None:
        shutil.rmtree(out_dir, ignore_errors=True)
    t0 = time.perf_counter()
    # the output goes to a file: a pipe left unread would block a chatty child before wait4 returns
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)     # this child's own rusage: its peak RSS
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        log.seek(0)
        text = log.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(map(str, cmd[:4]))} exited {proc.returncode}: {text[-1500:]}")
    m = EVENTS_RE.search(text)
    return wall, usage.ru_maxrss * 1024, int(m.group(1)) if m else 0


def _race(tools: dict, reps: int) -> dict:
    samples = interleave({name: (lambda spec=spec: _timed_tool(*spec)) for name, spec in tools.items()}, reps)
    out = {}
    for name, runs in samples.items():
        walls, rss, events = [r[0] for r in runs], [r[1] for r in runs], runs[0][2]
        out[name] = {"seconds": summary(walls), "peak_rss_bytes": summary(rss)}
        if events:
            out[name]["events"] = events
            out[name]["events_per_s"] = summary([events / w for w in walls])
    return out


def run(params: dict) -> dict:
    work = Path(params["out"])
    reps = int(params.get("reps", 3))
    timeout = float(params.get("timeout", 900))
    npuprof = [sys.executable, "-m", "npuprof", "analyse", "-o"]
    env = dict(os.environ)
    result: dict = {"kineto_copies": int(params.get("kineto_copies", 25)),
                    "trace_view_copies": int(params.get("trace_view_copies", 60)),
                    "cann_copies": int(params.get("cann_copies", 40))}
    # built by a child: a child's ru_maxrss starts from the RSS of the process it was forked from, so this
    # process stays small for the peak RSS figures to be the tools' own
    built = subprocess.run([sys.executable, str(Path(__file__).with_name("foreign_traces.py")), str(work),
                            str(result["kineto_copies"]), str(result["trace_view_copies"]),
                            str(result["cann_copies"])],
                           capture_output=True, text=True, check=True, timeout=timeout).stdout.split()
    kineto, run_dir, prof_dir = Path(built[0]), Path(built[1]), Path(built[2])
    # with NPUPROF_TRACE_DECODER=orjson the CANN timelines are read event by event (the reader before bulk decoding)
    inputs = [ForeignInput("kineto", kineto, kineto, "out_k", "hta", "hta_analysis.py", HTA_SCRIPT, kineto.parent),
              ForeignInput("trace_view", run_dir, run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", "out_tv",
                           "msprof_analyze", "msprof_compare_parser.py", MSPROF_SCRIPT, run_dir),
              ForeignInput("cann", prof_dir, prof_dir, "out_c", "msprof_analyze_timeline",
                           "msprof_timeline_parser.py", MSPROF_TIMELINE_SCRIPT, prof_dir)]
    for one in inputs:
        result[f"{one.kind}_bytes"] = _bytes(one.sized)
        out, out_orjson = work / one.out_name, work / f"{one.out_name}o"
        tools = {"npuprof": (npuprof + [str(out), str(one.path)], out, env, timeout),
                 "npuprof_orjson": (npuprof + [str(out_orjson), str(one.path)], out_orjson,
                                    {**env, "NPUPROF_TRACE_DECODER": "orjson"}, timeout)}
        if (INTEROP / "python").exists():
            script = work / one.script_name
            script.write_text(one.script)
            tools[one.other_tool] = ([str(INTEROP / "python"), str(script), str(one.other_input)], None, env,
                                     timeout * 3)
        result[one.kind] = _race(tools, reps)
        if one.path.is_dir():   # each input removed once raced: the next one has the disk
            shutil.rmtree(one.path, ignore_errors=True)
        else:
            one.path.unlink()
    shutil.rmtree(work, ignore_errors=True)
    return result


if __name__ == "__main__":
    child_main(run)
