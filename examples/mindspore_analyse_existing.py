"""Analyse a directory written by plain ``mindspore.profiler`` with npuprof.

Profiles a few steps with MindSpore's own profiler (its usual ``*_ascend_ms``
output), then reads it with ``npuprof.analyse`` -- the same as
``npuprof analyse ./ms_profiler_data`` / ``npuprof show -dir ./ms_profiler_data``.

Run: ``python examples/mindspore_analyse_existing.py``.
"""
import numpy as np

import mindspore as ms
from mindspore import nn
from mindspore.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

import npuprof

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")
net = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 4))
x = ms.Tensor(np.ones((8, 32), np.float32))

with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
             on_trace_ready=tensorboard_trace_handler("./ms_profiler_data")) as prof:
    for _ in range(4):
        net(x).asnumpy()
        prof.step()

for res in npuprof.analyse("./ms_profiler_data"):
    print(res.run_dir, len(res.events), "events")
    for row in res.tables["op_statistic"].rows():
        print("   ", row[1], row[3], "calls,", row[4], "us")
