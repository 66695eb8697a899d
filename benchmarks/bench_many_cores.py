"""The many-core figures of issues 36 and 38, for a host with more cores than the bench machine (and,
for the live trace, torch with a CUDA GPU). Not part of ``make bench``: run it by hand there::

    python benchmarks/bench_many_cores.py OUT_DIR [REPS [COPIES [EVENTS]]]

It writes ``OUT_DIR/many_cores.json`` and prints each figure as it is measured; a part that fails leaves its
error in the file, the other parts still run, and the command exits 1. Every comparison alternates
its variants run by run (``harness.interleave``), whole processes (``bench_cluster.run_tree``: wall, CPU of
the process tree, the largest process's peak RSS; the tree's memory is not sampled, which would slow it):

- ``live_kineto`` (torch with CUDA only): a live trace of a 12-layer ``nn.TransformerEncoder`` (d_model 512,
  8 heads, batch 16 x 256 tokens), 60 training steps under ``torch.profiler.profile`` (CPU and CUDA,
  ``record_shapes=True``, ``tensorboard_trace_handler``); ``npuprof analyse`` of it against HTA's
  ``TraceAnalysis`` + temporal + kernel breakdown (``bench_foreign.HTA_SCRIPT``), where HTA imports;
- ``cluster``: the real 2-rank Level1 job copied to ``2 * copies`` ranks (``bench_cluster.make_job``,
  ``COPIES`` 64: the 128-rank job of issue 36); ``npuprof cluster --recompute`` with the process pool at each
  of ``workers``, the local Dask cluster at the most workers, and the default (the tool's own tables);
- ``one_run``: ``npuprof analyse`` of an ``EVENTS`` (10M) synthetic run (``synth.make_run``) pinned to two cores
  (``taskset -c 0,1``) against all of them.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from bench_cluster import make_job, real_job, run_tree
from bench_foreign import HTA_SCRIPT
from harness import interleave, summary

LIVE_TRACE_SCRIPT = textwrap.dedent(r'''
    import sys, torch
    from torch import nn
    out = sys.argv[1]
    dev = "cuda"
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=12).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 256, 512, device=dev)
    for _ in range(3):      # warm-up, not recorded
        model(x).sum().backward(); opt.step(); opt.zero_grad()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True,
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(out)):
        for step in range(60):
            with torch.profiler.record_function(f"ProfilerStep#{step}"):
                model(x).sum().backward(); opt.step(); opt.zero_grad()
        torch.cuda.synchronize()
''')
NPUPROF = [sys.executable, "-m", "npuprof"]


def _brief(fig: dict) -> str:
    """One variant's medians in one line: wall and CPU seconds, the largest process's peak RSS."""
    return (f"wall {fig['seconds']['median']:.2f} s [{fig['seconds']['min']:.2f}-{fig['seconds']['max']:.2f}], "
            f"CPU {fig['cpu_seconds']['median']:.2f} s, peak RSS {fig['max_process_rss_bytes']['median'] / 1e6:.0f} MB")


def _race(variants: dict[str, list[str]], work: Path, reps: int) -> dict:
    """Each variant's command ``reps`` times, alternated; its wall/CPU/peak-RSS summaries."""
    def runner(name: str, cmd: list[str]):
        def once() -> dict:
            out = work / f"out_{name}"
            shutil.rmtree(out, ignore_errors=True)
            res = run_tree([c.replace("{out}", str(out)) for c in cmd], cwd=work, log=work / f"{name}.log",
                           env=dict(os.environ, PYTHONWARNINGS="ignore"), period=None)   # no sampler: see run_tree
            shutil.rmtree(out, ignore_errors=True)
            return res
        return once

    samples = interleave({n: runner(n, c) for n, c in variants.items()}, reps)
    figures = {n: {k: summary([r[k] for r in runs]) for k in ("seconds", "cpu_seconds", "max_process_rss_bytes")} for n, runs in samples.items()}
    for name, fig in figures.items():
        print(f"  {name}: {_brief(fig)}", flush=True)
    return figures


def live_kineto(work: Path, reps: int) -> dict:
    try:
        import torch
        if not torch.cuda.is_available():
            return {"skipped": "torch has no CUDA device here"}
    except ImportError:
        return {"skipped": "torch is not installed"}
    trace_dir = work / "live_trace"
    shutil.rmtree(trace_dir, ignore_errors=True)
    script = work / "live_trace.py"
    script.write_text(LIVE_TRACE_SCRIPT)
    subprocess.run([sys.executable, str(script), str(trace_dir)], check=True, timeout=900)
    trace = next(trace_dir.glob("*.pt.trace.json"))
    result: dict = {"trace_bytes": trace.stat().st_size}
    variants = {"npuprof": NPUPROF + ["analyse", "--quiet", "-o", "{out}", str(trace)]}
    hta = work / "hta_analysis.py"
    hta.write_text(HTA_SCRIPT)
    if subprocess.run([sys.executable, "-c", "import hta.trace_analysis"], capture_output=True).returncode == 0:
        variants["hta"] = [sys.executable, str(hta), str(trace_dir)]
    else:
        result["hta"] = "HTA does not import here"
    print(f"live trace: {trace.stat().st_size / 1e6:.0f} MB", flush=True)
    result.update(_race(variants, work, reps))
    counted = subprocess.run(NPUPROF + ["analyse", "-o", str(work / "out_count"), str(trace)],   # its event count
                             capture_output=True, text=True)
    result["npuprof_stderr_tail"] = (counted.stdout + counted.stderr)[-400:]
    if "hta" in variants:
        result["hta_over_npuprof"] = round(result["hta"]["seconds"]["median"]
                                           / result["npuprof"]["seconds"]["median"], 2)
    return result


def cluster(work: Path, reps: int, copies: int, workers: list[int]) -> dict:
    src, why = real_job()
    if src is None:
        return {"skipped": why}
    job = work / "job"
    shutil.rmtree(job, ignore_errors=True)
    made = make_job(src, job, copies=copies)
    print(f"cluster job: {made['ranks']} ranks, {made['bytes'] / 1e6:.0f} MB", flush=True)
    base = NPUPROF + ["cluster", str(job), "-o", "{out}", "--quiet"]
    variants = {f"process_{n}": base + ["--recompute", "--workers", str(n)] for n in workers}
    variants[f"dask_{max(workers)}"] = base + ["--recompute", "--backend", "dask", "--workers", str(max(workers))]
    variants["default"] = base
    result = {"ranks": made["ranks"], "bytes": made["bytes"], **_race(variants, work, reps)}
    shutil.rmtree(job, ignore_errors=True)
    return result


def one_run(work: Path, reps: int, events: int) -> dict:
    from synth import make_run
    if not shutil.which("taskset"):
        return {"skipped": "no taskset here"}
    run_dir = make_run(work / "synth", events)
    cmd = NPUPROF + ["analyse", "--quiet", "-o", "{out}", str(run_dir)]
    cores = os.cpu_count()
    result = {"events": events, "cores": cores,
              **_race({"two_cores": ["taskset", "-c", "0,1"] + cmd, f"all_{cores}_cores": cmd}, work, reps)}
    shutil.rmtree(run_dir.parent, ignore_errors=True)
    return result


def main() -> int:
    """0 once every part has measured (or said why it could not here), 1 where a part failed."""
    work = Path(sys.argv[1]).resolve()
    reps, copies, events = (int(a) for a in (sys.argv[2:] + ["2", "64", "10000000"][len(sys.argv) - 2:]))
    work.mkdir(parents=True, exist_ok=True)
    result = {"cpu_count": os.cpu_count(), "reps": reps}
    failed = []
    for name, part in (("live_kineto", lambda: live_kineto(work, reps)),
                       ("cluster", lambda: cluster(work, reps, copies, [1, 4, 8, 15])),
                       ("one_run", lambda: one_run(work, reps, events))):
        print(f"== {name}", flush=True)
        try:
            result[name] = part()
        except Exception as e:      # the other parts still run; the failure is in the result
            result[name] = {"error": f"{type(e).__name__}: {e}"}
            failed.append(name)
            print(result[name], flush=True)
        (work / "many_cores.json").write_text(json.dumps(result, indent=2))
    print(f"figures: {work / 'many_cores.json'}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
