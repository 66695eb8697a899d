"""Estimator mode with TF Adapter names (needs TensorFlow <= 2.15 + tensorflow-estimator).

Porting from Ascend changes one import: ``npu_bridge.estimator.npu.npu_config`` /
``npu_estimator`` -> ``npuprof.integrations.tensorflow``.
Run: ``.venv-tf215/bin/python examples/tensorflow_npu_estimator.py``.
"""
import numpy as np
import tensorflow as tf

import npuprof
from npuprof.integrations.tensorflow import NPUEstimator, NPURunConfig, ProfilingConfig

profiling_options = ('{"output":"./npuprof_tf_estimator","training_trace":"on","task_trace":"on",'
                     '"fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"}')
profiling_config = ProfilingConfig(enable_profiling=True, profiling_options=profiling_options,
                                   schedule=npuprof.schedule(wait=5, active=5, repeat=1))  # global steps 5..9
session_config = tf.compat.v1.ConfigProto()
config = NPURunConfig(profiling_config=profiling_config, session_config=session_config,
                      model_dir="./npuprof_tf_estimator_model", iterations_per_loop=1)


def model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 64, activation=tf.nn.relu)
    pred = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(loss, tf.compat.v1.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
    x = np.random.rand(1024, 16).astype("float32")
    return tf.data.Dataset.from_tensor_slices(({"x": x}, x.sum(1, keepdims=True))).repeat().batch(32)


estimator = NPUEstimator(model_fn=model_fn, config=config)
estimator.train(input_fn, max_steps=20)
print("profiled windows:", estimator.profiling_hooks[-1].saved_runs)
