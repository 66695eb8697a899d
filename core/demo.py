"""The embedded demo behind ``make demo``: a host-only numpy training loop,
then a small MindSpore and a small TensorFlow training on CPU (when those
extras are installed), each profiled by npuprof; prints the summaries and
where the traces are.

Run it with ``python -m npuprof.demo`` or ``npuprof demo``.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from . import Profiler, record_function, schedule, tensorboard_trace_handler, trace_api


N_SAMPLES, N_FEATURES, N_CLASSES = 2048, 64, 10   # the framework demos' data


def clustered_data(seed: int = 0) -> tuple:
    """Features around one Gaussian centre per class, and int32 labels (the
    MindSpore and TensorFlow demos train an MLP on it)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((N_CLASSES, N_FEATURES)).astype(np.float32) * 2.0
    labels = rng.integers(0, N_CLASSES, N_SAMPLES)
    feats = centres[labels] + rng.standard_normal((N_SAMPLES, N_FEATURES)).astype(np.float32)
    return feats, labels.astype(np.int32)


def host_training(output: Path, steps: int = 12) -> list:
    """A linear model fitted with numpy, under a scheduled Profiler."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16384, 512))
    w_true = rng.standard_normal((512, 1))
    y = x @ w_true + 0.1 * rng.standard_normal((16384, 1))
    w = np.zeros((512, 1))

    @trace_api(level="DataLoader")
    def next_batch(i: int) -> tuple:
        idx = rng.integers(0, len(x), 8192)
        return x[idx], y[idx]

    with Profiler(schedule=schedule(wait=1, warmup=1, active=4, repeat=2),
                  on_trace_ready=tensorboard_trace_handler(str(output)), host_sys=["cpu", "mem"],
                  framework="ms") as prof:
        for i in range(steps):
            xb, yb = next_batch(i)
            with record_function("forward"):
                pred = xb @ w
            with record_function("backward"):
                grad = xb.T @ (pred - yb) / len(xb)
            with record_function("optimizer"):
                w -= 0.1 * grad
            prof.step()
    return prof.results


def _print_result(title: str, results: list) -> None:
    """The summary of the last saved window, and where every window's trace is."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not results:
        console.print(f"{title}: no window was saved")
        return
    res = results[-1]
    console.rule(f"{title}: {len(results)} window(s); the last one")
    for name in ("op_statistic", "range_statistic", "step_trace_time"):
        table = res.tables[name]
        if not len(table):
            continue
        rt = Table(title=name)
        for col in table.columns[:7]:
            rt.add_column(col)
        for row in table.head(8):
            rt.add_row(*[str(v) for v in row[:7]])
        console.print(rt)
    for r in results:
        console.print(f"trace: {r.run_dir / 'ASCEND_PROFILER_OUTPUT' / 'trace_view.json'}", soft_wrap=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="npuprof demo")
    ap.add_argument("--output", default="./npuprof_demo")
    ap.add_argument("--host-only", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")   # TensorFlow's C++ start-up chatter
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    out = Path(args.output).absolute()
    _print_result("host (numpy)", host_training(out / "host"))
    ran, skipped = ["host (numpy)"], []
    for fw in () if args.host_only else FRAMEWORK_DEMOS:
        reason = _missing(fw)
        if reason is None:
            try:
                info = importlib.import_module(f"npuprof.integrations.{fw}.demo").run_demo(out / fw)
            except ModuleNotFoundError as e:     # a package the framework itself needs
                reason = f"{e.name or e} is not installed"
        if reason is not None:
            print(f"{fw} demo skipped: {reason} (pip install 'npuprof[{fw}]')")
            skipped.append(f"{fw} ({reason})")
            continue
        results = info.get("results") if isinstance(info, dict) else None
        if results:
            _print_result(fw, results)
        else:
            print(f"{fw}: {info}")
        ran.append(fw)
    print(f"demo ran: {', '.join(ran)}" + (f"; skipped: {', '.join(skipped)}" if skipped else "") +
          ("; skipped: the framework demos (--host-only)" if args.host_only else ""))
    return 0


FRAMEWORK_DEMOS = ("mindspore", "tensorflow")


def _missing(framework: str) -> Optional[str]:
    """Why the ``framework`` demo cannot run here (None: it can)."""
    try:
        found = importlib.util.find_spec(framework) is not None
    except (ImportError, ValueError):
        found = False
    return None if found else f"{framework} is not installed"


if __name__ == "__main__":
    raise SystemExit(main())
