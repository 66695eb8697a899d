"""MindSpore Model.train with npuprof's ProfilerCallback (GRAPH mode, CPU).

Two windows of 2 steps (wait 1, warm-up 1), analysed when training ends; then
one window over steps 5..8 and one over the whole second epoch.

Run: ``python examples/mindspore_callback.py``.
"""
import numpy as np

import mindspore as ms
import mindspore.dataset as ds
from mindspore import nn
from mindspore.train import Model

import npuprof
from npuprof.integrations.mindspore import ProfilerCallback, ProfilerEpochCallback

ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")


def dataset(n=64, batch=8):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 32)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    # numpy 2: yield arrays, not numpy scalars
    gen = ((np.array(a, dtype=np.float32), np.array(b, dtype=np.int32)) for a, b in zip(x, y))
    return ds.GeneratorDataset(list(gen), ["x", "y"], shuffle=False).batch(batch)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1, self.relu, self.fc2 = nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 2)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


net = Net()
model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
              nn.Momentum(net.trainable_params(), 0.01, 0.9))

cb = ProfilerCallback(output_path="./npuprof_ms_callback", activities=["CPU"],
                      schedule=npuprof.schedule(wait=1, warmup=1, active=2, repeat=2))
model.train(2, dataset(), callbacks=[cb], dataset_sink_mode=False)
for res in cb.results:
    print(res.run_dir)
    for row in res.tables["op_statistic"].rows()[:5]:
        print("   ", row[1], "count", row[3], "total us", row[4])

# MindSpore step numbers (1-based, inclusive), as in MindSpore's own callback examples.
steps = ProfilerCallback(output_path="./npuprof_ms_steps", activities=["CPU"], start_step=5, stop_step=8)
model.train(1, dataset(), callbacks=[steps], dataset_sink_mode=False)
print("steps 5..8:", steps.saved_runs)

epochs = ProfilerEpochCallback(output_path="./npuprof_ms_epochs", activities=["CPU"], start_epoch=2, stop_epoch=2)
model.train(2, dataset(), callbacks=[epochs], dataset_sink_mode=False)
print("epoch 2:", epochs.saved_runs)
