"""MFU on a real TensorFlow run: a Dense layer on CPU, profiled by npuprof with ``record_shapes=True``.

TensorFlow's own trace carries no shapes; npuprof records them from the traced functions' graphs
(``npuprof.integrations.tensorflow.opshapes``). The ``mfu`` rule then counts each MatMul as 2·M·K·N, and
its achieved GFLOP/s must be within a factor of 2 of the same matmul timed with numpy in the same
process, interleaved with the TensorFlow steps (both single-threaded, so a loaded machine slows both alike).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from npuprof.cli import main

M, K, N = 256, 1024, 1024
STEPS = 20

SCRIPT = r'''
import json, sys, time
import numpy as np
import tensorflow as tf
from npuprof.integrations.tensorflow import Profiler

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
M, K, N, STEPS = (int(v) for v in sys.argv[2:6])
layer = tf.keras.layers.Dense(N, use_bias=False)
x = tf.random.normal([M, K])
a = np.random.rand(M, K).astype(np.float32)
b = np.random.rand(K, N).astype(np.float32)


@tf.function
def step(x):
    return layer(x)


for _ in range(3):          # trace and warm up outside the window
    step(x).numpy()
    a @ b
numpy_s = []
with Profiler(sys.argv[1], record_shapes=True) as prof:
    for _ in range(STEPS):
        step(x).numpy()
        t = time.perf_counter()
        a @ b
        numpy_s.append(time.perf_counter() - t)
        prof.step()
print(json.dumps(numpy_s))
'''


@pytest.fixture(scope="module")
def dense_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf_dense")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(out / "prof"), str(M), str(K), str(N), str(STEPS)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    numpy_s = json.loads(proc.stdout.strip().splitlines()[-1])
    (run,) = (out / "prof").glob("*_ascend_tf")
    return run, numpy_s


def test_tf_dense_matmul_rows_are_two_m_k_n_and_achieved_gflops_match_numpy(dense_run, tmp_path, capsys):
    run, numpy_s = dense_run
    flops = 2 * M * K * N
    assert main(["advise", str(run), "--json", "--rules", "mfu", "--peak-tflops", "1"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["runs"][0]["findings"]
    (matmul,) = [e for e in f["evidence"][1:] if "MatMul" in e["OP Type"]]
    assert matmul["kernels"] == STEPS
    assert matmul["GFLOP"] == pytest.approx(STEPS * flops / 1e9, abs=1e-3)
    achieved = matmul["achieved TFLOP/s"] * 1e3
    numpy_gflops = STEPS * flops / sum(numpy_s) / 1e9
    assert numpy_gflops / 2 <= achieved <= numpy_gflops * 2, (achieved, numpy_gflops)
    # op_flops.csv: every MatMul row 2*M*K*N from the shapes TensorFlow's graph gave
    copy = tmp_path / "out"
    assert main(["analyse", str(run), "-o", str(copy), "--quiet"]) in (0, 3)
    (path,) = copy.rglob("op_flops.csv")
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if "MatMul" in r["Type"]]
    assert len(rows) == STEPS and all(int(r["FLOPs"]) == flops for r in rows)
    assert all(r["Input Shapes"].strip('"') == f"{M},{K};{K},{N}" for r in rows)


def test_shapes_are_recorded_only_when_asked(tmp_path):
    script = SCRIPT.replace("record_shapes=True", "record_shapes=False")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "prof"), "8", "16", "4", "2"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp_path / "prof").glob("*_ascend_tf")
    assert not list(run.rglob("tf_op_shapes.json"))


def test_an_unreadable_shapes_file_is_said_and_the_trace_still_read(dense_run, tmp_path, capsys):
    import shutil

    run, _ = dense_run
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    (copy / "tf_op_shapes.json").write_text("{not json")
    assert main(["advise", str(copy), "--json", "--rules", "mfu", "--peak-tflops", "1"]) == 3
    captured = capsys.readouterr()
    adv = json.loads(captured.out)["runs"][0]
    assert adv["rules"][0]["status"] == "not_checked" and adv["steps"] >= STEPS     # the trace's steps are read
    assert "tf_op_shapes.json" in captured.err and "unreadable" in captured.err
