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

    with Profiler(output_path=out, gc_detect_threshold=0) as prof:
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




def planted_job(out: Path, slow_rank: int, late_rank: int, world: int = 4, late_s: float = 2.0,
                steps: int = STEPS, timeout: float = 240) -> Path:
    """A job of ``world`` processes run at once (rank r profiled with ``rank=r`` into ``out``): every step
    is ``load`` / ``forward`` / ``backward`` ranges of sleeps (plus a few products), ``forward`` three times
    longer on ``slow_rank``; ``late_rank`` starts ``late_s`` after the others (``WORLD_SIZE`` says the
    world, as a launcher does); ``steps`` steps each. The job folder."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               WORLD_SIZE=str(world))
    procs = [subprocess.Popen([sys.executable, __file__, str(out), "rank", str(r), str(int(r == slow_rank)),
                               str(late_s if r == late_rank else 0.0), str(steps)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for r in range(world)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, stderr[-3000:]
    return out


FORWARD_S, OTHER_S, SLOW_FACTOR = 0.020, 0.005, 3.0


def _rank_main(out: str, rank: int, slow: bool, late_s: float, steps: int) -> None:
    import time

    import numpy as np

    from npuprof import Profiler, record_function

    a = np.random.default_rng(0).standard_normal((64, 64))
    if late_s:
        time.sleep(late_s)
    with Profiler(output_path=out, rank=rank) as prof:
        for _ in range(steps):
            with record_function("load"):
                time.sleep(OTHER_S)
            with record_function("forward"):
                _ = a @ a
                time.sleep(FORWARD_S * (SLOW_FACTOR if slow else 1.0))
            with record_function("backward"):
                _ = a @ a
                time.sleep(OTHER_S)
            prof.step()


EXECUTES_PER_STEP, ACL_STEPS = 4, 6


def planted_acl_run(out: Path, gap_s: float, timeout: float = 180) -> Path:
    """A pyACL app on the acl TEST DOUBLE (tests/acl, its fake msprof on PATH), profiled at Level1: each step
    runs the model ``EXECUTES_PER_STEP`` times with ``gap_s`` of host work (a sleep) after each execute,
    so the device idles until the next launch. The run directory."""
    here = Path(__file__).resolve().parent
    env = dict(os.environ, PATH=f"{here / 'acl' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("NPUPROF_NO_MSPROF", None)
    proc = subprocess.run([sys.executable, __file__, str(out), "acl", str(gap_s)], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1])


def _acl_main(out: str, gap_s: float) -> None:
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from acl_support import fresh_process_state, write_model

    from npuprof import Profiler

    acl = fresh_process_state()
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    acl.init()
    acl.rt.set_device(0)
    prof = Profiler(output_path=root / "prof", profiler_level="Level1", start_profile=False)
    model_id, _ = acl.mdl.load_from_file(str(write_model(root / "m.json", [("conv1", "Conv2D", 100),
                                                                           ("relu1", "Relu", 25)])))
    prof.start()
    for _ in range(ACL_STEPS):
        for _ in range(EXECUTES_PER_STEP):
            acl.mdl.execute(model_id, 0, 0)
            time.sleep(gap_s)
        prof.step()
    prof.stop()
    acl.finalize()
    print(prof.saved_runs[0])


if __name__ == "__main__":
    if sys.argv[2] == "acl":
        _acl_main(sys.argv[1], float(sys.argv[3]))
    elif sys.argv[2] == "rank":
        _rank_main(sys.argv[1], int(sys.argv[3]), sys.argv[4] == "1", float(sys.argv[5]), int(sys.argv[6]))
    else:
        _main(sys.argv[1], sys.argv[2])
