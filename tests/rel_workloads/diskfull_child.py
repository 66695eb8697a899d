"""A training loop whose profiling output cannot be written to the end.

Run by tests/reliability/test_rel_diskfull.py on a tiny tmpfs (ENOSPC) or under
RLIMIT_FSIZE (EFBIG). Argument: one JSON object::

    {"out": output_path, "steps": 300, "marks": 40, "fsize": null | bytes,
     "copy_to": null | directory, "flush": 0.05, "storage_limit": null}

Ground truth goes to stdout (a pipe: no file-size limit, no full disk):
``E <id> <t_before> <t_after> <flag>`` per mark as in crash_child.py, until
the profiler reports a failure; ``F <t>`` the first time it does;
``DONE <steps>`` when every training step ran. After ``stop()`` the output
directory is copied to ``copy_to`` (the tmpfs vanishes with the child's
mount namespace) and the loss of the model is printed, proving the training
itself went on.
"""
from __future__ import annotations

import json
import resource
import shutil
import sys
import time

import numpy as np

cfg = json.loads(sys.argv[1])
if cfg.get("fsize"):
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["fsize"], cfg["fsize"]))

from npuprof import Profiler, mstx, record_function  # noqa: E402
from npuprof.recorder import active_recorder  # noqa: E402

now = time.perf_counter_ns
out_lines = []


def emit(line: str) -> None:
    sys.stdout.write(line + "\n")


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 64))
    y = x @ rng.standard_normal((64, 1))
    w = np.zeros((64, 1))
    kwargs = dict(output_path=cfg["out"], flush_interval=cfg.get("flush", 0.05), worker_name="diskfull")
    if cfg.get("storage_limit"):
        kwargs["storage_limit"] = cfg["storage_limit"]
    failed_seen = False
    i = 0
    with Profiler(**kwargs) as prof:
        for step in range(cfg["steps"]):
            with record_function("step"):
                grad = x.T @ (x @ w - y) / len(x)
                w -= 0.05 * grad
            for _ in range(cfg["marks"]):
                before = active_recorder()
                t0 = now()
                mstx.mark(f"d:{i}")
                t1 = now()
                after = active_recorder()
                flag = 1 if (before is not None and before is after) else 0 if before is after else 2
                emit(f"E {i} {t0} {t1} {flag}")
                i += 1
            if prof.failed and not failed_seen:
                failed_seen = True
                emit(f"F {now()}")
            prof.step()
            time.sleep(0.001)
    loss = float(np.mean((x @ w - y) ** 2))
    emit(f"DONE {cfg['steps']} loss={loss:.6f}")
    if cfg.get("copy_to"):
        shutil.copytree(cfg["out"], cfg["copy_to"], dirs_exist_ok=True)


main()
