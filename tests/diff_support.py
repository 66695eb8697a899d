"""Real runs for ``npuprof diff`` tests: a numpy training-like loop profiled by npuprof in its own process.

``python tests/diff_support.py OUT FORWARD_SCALE`` runs 40 steps of three named ranges (``load``,
``forward``, ``backward``: matrix products on one BLAS thread); ``forward`` then waits for its "device"
(a sleep, as a host thread waits on an accelerator). ``forward`` does ``FORWARD_SCALE`` times its usual
work and wait, so 1.2 plants a range 20 % slower. It prints the run directory.

Most of a step is the wait: on a shared machine whose CPU load swings (other test sessions) the
products' time can grow several times over, the wait's does not, so a 20 % change stays measurable.

The two runs of a comparison are made side by side (:func:`profiled_pair`, one process each, one BLAS
thread each): load from other work on the machine then slows both alike instead of whichever ran at the
wrong moment.

Example::

    base, new = profiled_pair(tmp_path, 1.0, 1.2)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPS = 40
FORWARD_PRODUCTS = 4
FORWARD_WAIT_S = 0.040


def profiled_pair(out: Path, base_scale: float, new_scale: float, timeout: float = 180) -> tuple[Path, Path]:
    """Run the loop twice at once in fresh processes (``out/base``, ``out/new``); the two run directories."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, str(out / name), str(scale)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
             for name, scale in (("base", base_scale), ("new", new_scale))]
    runs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, stderr[-3000:]
        runs.append(Path(stdout.strip().splitlines()[-1]))
    return runs[0], runs[1]


def _main(out: str, forward_scale: float) -> None:
    import time

    import numpy as np

    from npuprof import Profiler, record_function

    a = np.random.default_rng(0).standard_normal((128, 128))

    def products(n: int) -> np.ndarray:
        x = a
        for _ in range(n):
            x = (x @ a) * 1e-3
        return x

    with Profiler(output_path=out) as prof:
        for _ in range(STEPS):
            with record_function("load"):
                products(2)
            with record_function("forward"):
                products(round(FORWARD_PRODUCTS * forward_scale))
                time.sleep(FORWARD_WAIT_S * forward_scale)
            with record_function("backward"):
                products(4)
            prof.step()
    print(prof.saved_runs[0])


if __name__ == "__main__":
    _main(sys.argv[1], float(sys.argv[2]))
