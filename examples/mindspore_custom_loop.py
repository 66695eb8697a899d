"""A MindSpore value_and_grad training loop under ``with Profiler()`` (PyNative, CPU),
with record_function and mstx ranges that land next to MindSpore's operators.

Uses mindspore.profiler-style keywords (its enums and _ExperimentalConfig).

Run: ``python examples/mindspore_custom_loop.py``.
"""
import numpy as np

import mindspore as ms
from mindspore import nn
from mindspore.profiler import ProfilerActivity, ProfilerLevel, _ExperimentalConfig

import npuprof
from npuprof.integrations.mindspore import profile

ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_device("CPU")

net = nn.SequentialCell(nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 4))
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Adam(net.trainable_params(), 1e-3)
grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)

rng = np.random.default_rng(0)
x = ms.Tensor(rng.standard_normal((16, 32)).astype(np.float32))
y = ms.Tensor(rng.integers(0, 4, 16).astype(np.int32))

with profile(output_path="./npuprof_ms_loop", activities=[ProfilerActivity.CPU],
             schedule=npuprof.schedule(wait=1, warmup=1, active=3, repeat=1),
             experimental_config=_ExperimentalConfig(profiler_level=ProfilerLevel.Level0),
             host_sys=["cpu", "mem"]) as prof:
    for step in range(8):
        with npuprof.record_function("forward_backward"):
            loss, grads = grad_fn(x, y)
        rid = npuprof.mstx.range_start("optimizer")
        opt(grads)
        npuprof.mstx.range_end(rid)
        print(f"step {step} loss {float(loss.asnumpy()):.4f}")
        prof.step()

for res in prof.analyse():
    print(res.run_dir)
    print("  ranges:", [r[0] for r in res.tables["range_statistic"].rows()])
    print("  ops:", [r[1] for r in res.tables["op_statistic"].rows()[:6]])
    print("  trace:", res.run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
