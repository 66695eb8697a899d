"""Real runs with planted problems for ``npuprof advise`` tests, each profiled by npuprof in its own process.

``python tests/advise_support.py OUT MODE`` runs 12 steps of a numpy "training step" (matrix products on
one BLAS thread inside ``record_function("compute")``) and prints the run directory. ``MODE``:

- ``clean``: the step is only its work;
- ``gc``: the step also builds 200,000 reference cycles and drops them, so the collector pauses inside
  it (``gc.collect()`` forces one full collection per step besides those the allocations trigger);
- ``dataloader``: each step first waits 30 ms for its batch (a sleep inside ``record_function``
  named like PyTorch's ``enumerate(DataLoader)#...`` range), then works.

Example::

    run = planted_run(tmp_path, "gc")
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STEPS = 12
DATA_WAIT_S = 0.030
CYCLES = 200_000


def planted_run(out: Path, mode: str, timeout: float = 180) -> Path:
    """Run the loop in a fresh process (one BLAS thread) under ``out/mode``; the run directory."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, __file__, str(out / mode), mode], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1])


class _Node:
    __slots__ = ("other", "__weakref__")


def _garbage(n: int) -> None:
    for _ in range(n):
        a, b = _Node(), _Node()
        a.other, b.other = b, a


def _main(out: str, mode: str) -> None:
    import gc
    import time

    import numpy as np

    from npuprof import Profiler, record_function

    a = np.random.default_rng(0).standard_normal((96, 96))

    def products(n: int) -> np.ndarray:
        x = a
        for _ in range(n):
            x = (x @ a) * 1e-3
        return x

    with Profiler(output_path=out) as prof:
        for _ in range(STEPS):
            if mode == "dataloader":
                with record_function("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"):
                    time.sleep(DATA_WAIT_S)
            with record_function("compute"):
                products(40)
                if mode == "gc":
                    _garbage(CYCLES)
                    gc.collect()
            prof.step()
    print(prof.saved_runs[0])


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2])
