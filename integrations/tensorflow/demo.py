"""The TensorFlow half of ``make demo``: a small Keras MLP trained with ``fit`` on
generated data, profiled on CPU by :class:`ProfilerCallback` configured with an
Ascend ``profiling_options`` string and an npuprof schedule.

Example::

    from npuprof.integrations.tensorflow.demo import run_demo
    info = run_demo("./npuprof_demo/tensorflow")
    print(info["summaries"], info["traces"])
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union


from npuprof.demo import N_CLASSES, N_FEATURES, clustered_data

BATCH = 64


def _make_model() -> Any:
    import tensorflow as tf

    model = tf.keras.Sequential([
        tf.keras.Input((N_FEATURES,)),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(N_CLASSES),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05, momentum=0.9),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def run_demo(output_dir: Union[str, Path], epochs: int = 2) -> dict:
    """Train the MLP for ``epochs`` under a scheduled :class:`ProfilerCallback`.

    Returns ``{"results": [AnalysisResult], "runs": [run dirs], "summaries":
    [op_statistic.csv paths], "traces": [trace_view.json paths],
    "profiling_options": str, "accuracy": float}``.
    """
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's C++ info lines out of the demo output
    import tensorflow as tf

    import npuprof

    from .tf2 import get_callback_class

    tf.keras.utils.set_random_seed(0)
    out = Path(output_dir).absolute()
    # The options as Ascend users write them; npuprof maps them (Level1, host cpu/mem sampling).
    options = json.dumps({"output": str(out), "training_trace": "on", "task_time": "on",
                          "aic_metrics": "PipeUtilization", "host_sys": "cpu,mem"})
    callback = get_callback_class()(profiling_options=options, activities=["CPU"],
                                    schedule=npuprof.schedule(wait=2, warmup=1, active=4, repeat=2))
    x, y = clustered_data(0)
    model = _make_model()
    model.fit(x, y, batch_size=BATCH, epochs=epochs, callbacks=[callback], verbose=0)
    _, accuracy = model.evaluate(x, y, batch_size=BATCH, verbose=0)
    out_dirs = [r.run_dir / "ASCEND_PROFILER_OUTPUT" for r in callback.results]
    return {
        "results": callback.results,
        "runs": [str(r) for r in callback.saved_runs],
        "summaries": [str(d / "op_statistic.csv") for d in out_dirs],
        "traces": [str(d / "trace_view.json") for d in out_dirs],
        "profiling_options": options,
        "accuracy": float(accuracy),
    }


if __name__ == "__main__":
    import sys

    info = run_demo(sys.argv[1] if len(sys.argv) > 1 else "./npuprof_demo/tensorflow")
    print(json.dumps({k: v for k, v in info.items() if k != "results"}, indent=2))
