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




def planted_job(out: Path, slow_rank: int, late_rank: int, world: int = 4, timeout: float = 240) -> Path:
    """A job of ``world`` processes run at once (rank r profiled with ``rank=r`` into ``out``): every step
    is ``load`` / ``forward`` / ``backward`` ranges of sleeps (plus a few products), ``forward`` three times
    longer on ``slow_rank``; ``late_rank`` starts 2 s after the others. The job folder."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, __file__, str(out), "rank", str(r), str(int(r == slow_rank)),
                               str(int(r == late_rank))], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for r in range(world)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, stderr[-3000:]
    return out


FORWARD_S, OTHER_S, SLOW_FACTOR, LATE_S = 0.010, 0.005, 3.0, 2.0


def _rank_main(out: str, rank: int, slow: bool, late: bool) -> None:
    import time

    import numpy as np

    from npuprof import Profiler, record_function

    a = np.random.default_rng(0).standard_normal((64, 64))
    if late:
        time.sleep(LATE_S)
    with Profiler(output_path=out, rank=rank) as prof:
        for _ in range(STEPS):
            with record_function("load"):
                time.sleep(OTHER_S)
            with record_function("forward"):
                _ = a @ a
                time.sleep(FORWARD_S * (SLOW_FACTOR if slow else 1.0))
            with record_function("backward"):
                _ = a @ a
                time.sleep(OTHER_S)
            prof.step()


if __name__ == "__main__":
    if sys.argv[2] == "rank":
        _rank_main(sys.argv[1], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5] == "1")
    else:
        _main(sys.argv[1], sys.argv[2])
