"""The MindSpore half of ``make demo``: a small MLP trained with ``Model.train``
on generated data, profiled by :class:`ProfilerCallback` on CPU.

Example::

    from npuprof.integrations.mindspore.demo import run_demo
    info = run_demo("./npuprof_demo/mindspore")
    print(info["traces"])
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

import numpy as np

from npuprof.demo import N_CLASSES, N_FEATURES, clustered_data

BATCH = 64


def _make_dataset(seed: int = 0) -> Any:
    import mindspore.dataset as ds

    feats, labels = clustered_data(seed)

    def generate() -> Any:
        for f, y in zip(feats, labels):
            # numpy 2: GeneratorDataset wants arrays, not numpy scalars
            yield np.array(f, dtype=np.float32), np.array(y, dtype=np.int32)

    return ds.GeneratorDataset(generate, ["features", "label"], shuffle=False).batch(BATCH, drop_remainder=True)


def _make_network() -> Any:
    from mindspore import nn

    class MLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(N_FEATURES, 128)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Dense(128, 64)
            self.relu2 = nn.ReLU()
            self.fc3 = nn.Dense(64, N_CLASSES)

        def construct(self, x: Any) -> Any:
            return self.fc3(self.relu2(self.fc2(self.relu1(self.fc1(x)))))

    return MLP()


def run_demo(output_dir: Union[str, Path], epochs: int = 2) -> dict:
    """Train the MLP for ``epochs`` with a scheduled :class:`ProfilerCallback`.

    Returns ``{"results": [AnalysisResult], "runs": [run dirs],
    "summaries": [op_statistic.csv paths], "traces": [trace_view.json paths],
    "accuracy": float}``.
    """
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Accuracy, Model

    import npuprof

    from .callback import ProfilerCallback

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    ms.set_seed(0)
    out = Path(output_dir).absolute()
    net = _make_network()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9), metrics={"acc": Accuracy()})
    cb = ProfilerCallback(str(out), activities=["CPU"], host_sys=["cpu", "mem"],
                          schedule=npuprof.schedule(wait=2, warmup=1, active=4, repeat=2))
    model.train(epochs, _make_dataset(0), callbacks=[cb], dataset_sink_mode=False)
    acc = model.eval(_make_dataset(0), dataset_sink_mode=False)["acc"]
    out_dirs = [r.run_dir / "ASCEND_PROFILER_OUTPUT" for r in cb.results]
    return {
        "results": cb.results,
        "runs": [str(r) for r in cb.saved_runs],
        "summaries": [str(d / "op_statistic.csv") for d in out_dirs],
        "traces": [str(d / "trace_view.json") for d in out_dirs],
        "accuracy": float(acc),
    }


if __name__ == "__main__":
    import json
    import sys

    info = run_demo(sys.argv[1] if len(sys.argv) > 1 else "./npuprof_demo/mindspore")
    print(json.dumps({k: v for k, v in info.items() if k != "results"}, indent=2))
