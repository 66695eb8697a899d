"""TF2 / Keras: profile batches of ``fit`` with ProfilerCallback, and a
``tf.function`` loop with ``Profiler`` and a schedule.

Run: ``python examples/tensorflow_keras.py``.
"""
import numpy as np
import tensorflow as tf

import npuprof
from npuprof.integrations.tensorflow import Profiler, ProfilerCallback

x = np.random.rand(4096, 32).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                             tf.keras.layers.Dense(1)])
model.compile("adam", "mse")

# Keras: batches 10..14 (1-based, inclusive), as TensorBoard(profile_batch=(10, 14)) would.
cb = ProfilerCallback(profile_batch=(10, 14), output_path="./npuprof_tf_keras")
model.fit(x, y, batch_size=64, epochs=2, callbacks=[cb], verbose=0)
print("keras window:", cb.saved_runs)

# tf.function loop: two windows of 3 steps, configured with Ascend profiling_options.
opt = tf.keras.optimizers.SGD(0.01)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb) - yb))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


with Profiler(profiling_options='{"output":"./npuprof_tf_function","task_time":"l1","host_sys":"cpu,mem"}',
              schedule=npuprof.schedule(wait=1, warmup=1, active=3, repeat=2)) as prof:
    for i in range(12):
        train_step(x[i * 64:(i + 1) * 64], y[i * 64:(i + 1) * 64])
        prof.step()
for result in prof.analyse():
    print(result.run_dir, result.tables["op_statistic"].rows()[:3])
