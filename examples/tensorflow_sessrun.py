"""sess.run mode: Ascend TF 1.x session code, profiled by npuprof on CPU.

The session config below is exactly what the Ascend docs write; the only
npuprof line is ``activate()``. Run: ``python examples/tensorflow_sessrun.py``
then ``npuprof show -dir ./npuprof_tf_sessrun``.
"""
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

from npuprof.integrations import tensorflow as nptf

nptf.activate()

tf.compat.v1.disable_eager_execution()
x = tf.compat.v1.placeholder(tf.float32, [64, 256])
w1 = tf.Variable(tf.random.normal([256, 512]))
w2 = tf.Variable(tf.random.normal([512, 10]))
loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.001).minimize(loss)

config = tf.compat.v1.ConfigProto()
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["profiling_mode"].b = True
custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes(
    '{"output":"./npuprof_tf_sessrun","training_trace":"on","task_time":"on","fp_point":"","bp_point":"",'
    '"aic_metrics":"PipeUtilization"}')
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

with tf.compat.v1.Session(config=config) as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    batch = np.random.rand(64, 256).astype(np.float32)
    for _ in range(20):
        sess.run(train_op, {x: batch})

print("run directories:", nptf.current_activation().profilers[0].saved_runs)
