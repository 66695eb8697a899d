"""XSpace parsing and the TensorFlow backend plugin, on files TF 2.21 writes itself."""
from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

tf = pytest.importorskip("tensorflow")

import npuprof  # noqa: E402
from npuprof import BackendUnavailable, EventKind, ProfilerDataError  # noqa: E402
from npuprof.config import build_config  # noqa: E402
from npuprof.integrations import tensorflow as nptf  # noqa: E402
from npuprof.integrations.tensorflow import plugin, xplane  # noqa: E402
from tf_support import exported  # noqa: E402


@pytest.fixture(scope="module")
def tf_logdir(tmp_path_factory):
    """A TensorBoard-style logdir written by TF's own profiler: 3 marked steps of a tf.function."""
    logdir = tmp_path_factory.mktemp("tflog")
    w = tf.Variable(tf.random.normal([64, 32]))

    @tf.function
    def step(x):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))

    x = tf.ones([16, 64])
    step(x)
    tf.profiler.experimental.start(str(logdir))
    for i in range(3):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            step(x)
    tf.profiler.experimental.stop()
    return logdir


def test_xspace_ops_names_types_threads_and_times(tf_logdir):
    [path] = xplane.find_xspace_files(tf_logdir)
    space = xplane.load_xspace(path)
    start, stop = xplane.profile_window_ns(space)
    assert start and stop and start < stop
    table = xplane.read_xspace(path, pid=123)
    ops = table.of_kind(EventKind.OP)
    rows = list(xplane.iter_op_rows(table))
    assert ("Relu", "Relu") in {(n, t) for n, t, _ in rows}
    assert ("MatMul", "_MklMatMul") in {(n, t) for n, t, _ in rows} or \
        any(t.endswith("MatMul") and n == "MatMul" for n, t, _ in rows)
    assert all(d > 0 for _, _, d in rows)
    assert len([1 for n, _, _ in rows if n == "Relu"]) == 3
    # epoch-ns timestamps inside the profiling window (line times are stored relative to its start)
    assert (ops["ts"] >= start).all() and (ops["ts"] + ops["dur"] <= stop).all()
    assert set(ops.column_strings("source")) == {"tensorflow"}
    assert (ops["pid"] == 123).all() and (ops["device"] == -1).all()
    assert len(set(ops["tid"].tolist())) >= 1
    api = set(table.of_kind(EventKind.API).column_strings("name"))
    assert "EagerExecute" in api or "FunctionRun" in api
    assert "ThreadpoolListener::Record" not in api  # zero-length bookkeeping dropped
    markers = table.of_kind(EventKind.RANGE)
    assert markers.column_strings("name") == ["train"] * 3
    assert markers["step"].tolist() == [0, 1, 2]


def test_step_markers_become_steps_for_a_bare_logdir(tf_logdir):
    table = xplane.read_logdir(tf_logdir, step_kind=EventKind.STEP)
    steps = table.of_kind(EventKind.STEP)
    assert steps.column_strings("name") == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
    assert (steps["dur"] > 0).all()
    assert "train" not in table.of_kind(EventKind.API).column_strings("name")


def test_offline_analysis_of_a_tensorboard_logdir(tf_logdir, tmp_path):
    import shutil

    logdir = tmp_path / "logs"
    shutil.copytree(tf_logdir, logdir)
    assert plugin.npuprof_recognise_run(logdir) is True
    [res] = npuprof.analyse(logdir, output_path=tmp_path / "out")   # TensorFlow's files: outputs elsewhere
    types = {r["OP Type"] for r in exported(tmp_path / "out" / logdir.name, "op_statistic.csv")}
    assert "Relu" in types and any("MatMul" in t for t in types)
    steps = exported(tmp_path / "out" / logdir.name, "step_trace_time.csv")
    assert [int(r["Step"]) for r in steps] == [0, 1, 2]


def test_corrupt_and_empty_files(tmp_path, tf_logdir):
    run = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "empty.xplane.pb").write_bytes(b"")
    with pytest.raises(ProfilerDataError, match="empty"):
        xplane.load_xspace(run / "empty.xplane.pb")
    (run / "bad.xplane.pb").write_bytes(b"\xff\xff\xff\xff not a protobuf")
    with pytest.raises(ProfilerDataError, match="bad.xplane.pb"):
        xplane.load_xspace(run / "bad.xplane.pb")
    [good] = xplane.find_xspace_files(tf_logdir)
    (run / "good.xplane.pb").write_bytes(good.read_bytes())
    warnings: list = []
    table = xplane.read_logdir(tmp_path, on_error=warnings.append)
    assert len(warnings) == 2
    assert len(table.of_kind(EventKind.OP)) > 0  # the readable file still counts
    with pytest.raises(ProfilerDataError):
        xplane.read_logdir(tmp_path)


def test_proto_module_fallback(monkeypatch):
    monkeypatch.setattr(xplane, "_pb2_cache", [])
    monkeypatch.setattr(xplane, "_PROTO_MODULES",
                        ("no_such_pkg.xplane_pb2", "tensorflow.tsl.profiler.protobuf.xplane_pb2"))
    assert xplane.xplane_pb2().__name__ == "tensorflow.tsl.profiler.protobuf.xplane_pb2"
    monkeypatch.setattr(xplane, "_pb2_cache", [])
    monkeypatch.setattr(xplane, "_PROTO_MODULES", ("no_such_pkg.xplane_pb2",))
    with pytest.raises(ImportError, match="no XSpace protobuf module"):
        xplane.xplane_pb2()


def test_device_plane_and_absolute_timestamps():
    """An XSpace as older TF/GPU builds write it: absolute line times, a /device:GPU:0 plane."""
    pb = xplane.xplane_pb2()
    space = pb.XSpace()
    gpu = space.planes.add(id=1, name="/device:GPU:0")
    gpu.event_metadata[1].id = 1
    gpu.event_metadata[1].name = "volta_sgemm_128x64_nn"
    gpu.stat_metadata[7].id = 7
    gpu.stat_metadata[7].name = "tf_op"
    gpu.stat_metadata[8].id = 8
    gpu.stat_metadata[8].name = "dense/MatMul:MatMul"
    line = gpu.lines.add(id=5, display_id=5, name="Stream #5", timestamp_ns=1_700_000_000_000_000_000)
    ev = line.events.add(metadata_id=1, offset_ps=2_000_000, duration_ps=3_000_000)
    ev.stats.add(metadata_id=7, ref_value=8)
    host = space.planes.add(id=2, name="/host:CPU")
    host.event_metadata[1].id = 1
    host.event_metadata[1].name = "dense/Relu:Relu"
    host.event_metadata[1].display_name = "Relu"
    hl = host.lines.add(id=9, name="tf_Compute", timestamp_ns=1_700_000_000_000_000_000)
    hl.events.add(metadata_id=1, offset_ps=1_000_000, duration_ps=500_000)
    table = xplane.xspace_to_table(space)
    kern = table.of_kind(EventKind.KERNEL)
    assert kern.column_strings("name") == ["volta_sgemm_128x64_nn"]
    assert kern.column_strings("type") == ["MatMul"]
    assert kern["device"].tolist() == [0] and kern["stream"].tolist() == [5]
    assert kern["ts"].tolist() == [1_700_000_000_000_002_000] and kern["dur"].tolist() == [3_000]
    op = table.of_kind(EventKind.OP)
    assert op.column_strings("name") == ["dense/Relu"] and op["ts"].tolist() == [1_700_000_000_000_001_000]


@pytest.mark.parametrize("name,expected", [
    ("MatMul:_MklMatMul", ("MatMul", "_MklMatMul")),
    ("gradients/MatMul_1_grad/MatMul:_MklMatMul", ("gradients/MatMul_1_grad/MatMul", "_MklMatMul")),
    ("a:B", ("a", "B")),
    ("ExecutorState::Process", None),
    ("EagerLocalExecute: __inference_step_71", None),
    ("Iterator::Model::MapAndBatch", None),
    ("SessionRun", None),
])
def test_tf_op_name_pattern(name, expected):
    m = xplane._TF_OP_RE.match(name)
    assert (None if m is None else (m.group("name"), m.group("type"))) == expected


def test_backend_needs_cpu_or_gpu(tmp_path):
    with pytest.raises(BackendUnavailable):
        plugin.npuprof_configure(build_config(output_path=tmp_path, activities=["NPU"]))
    plugin.npuprof_configure(build_config(output_path=tmp_path, activities=["CPU"]))  # TF is imported here


def test_backend_without_tensorflow_imported(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from npuprof import BackendUnavailable
        from npuprof.config import build_config
        from npuprof.integrations.tensorflow import plugin
        out = {str(tmp_path)!r}
        try:
            plugin.npuprof_configure(build_config(output_path=out, framework="ms"))
            print("ms: available")
        except BackendUnavailable as e:
            print("ms: unavailable", e)
        plugin.npuprof_configure(build_config(output_path=out, framework="tf"))
        print("tf: lazy")
        assert "tensorflow" not in sys.modules
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ms: unavailable tensorflow is not imported" in proc.stdout
    assert "tf: lazy" in proc.stdout


@pytest.mark.slow
def test_profiler_created_before_import_tensorflow(tmp_path):
    """framework='tf' profiler started before `import tensorflow`: TF's profiler joins at the next step."""
    code = textwrap.dedent(f"""
        import sys
        import npuprof
        from npuprof.integrations.tensorflow import Profiler
        prof = Profiler(output_path={str(tmp_path / 'p')!r})
        assert "tensorflow" not in sys.modules
        import tensorflow as tf
        w = tf.Variable(tf.ones([8, 8]))
        f = tf.function(lambda x: tf.nn.relu(tf.matmul(x, w)))
        for _ in range(3):
            f(tf.ones([4, 8]))
            prof.step()
        prof.stop()
        [res] = prof.analyse()
        print("TYPES", sorted(set(res.events.of_kind(npuprof.EventKind.OP).column_strings("type"))))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("TYPES")][0]
    assert "Relu" in line


@pytest.mark.slow
def test_busy_tf_profiler_is_reported_not_fatal(tmp_path, caplog):
    other = tmp_path / "other"
    tf.profiler.experimental.start(str(other))
    try:
        f = tf.function(lambda x: tf.nn.relu(x))
        with caplog.at_level(logging.WARNING, logger="npuprof"):
            with nptf.Profiler(output_path=tmp_path / "p") as prof:
                f(tf.ones([4]))
                prof.step()
    finally:
        tf.profiler.experimental.stop()
    assert any("could not start" in r.getMessage() for r in caplog.records)
    assert len(prof.saved_runs) == 1
    assert not xplane.find_xspace_files(prof.saved_runs[0] / "TF")
    assert xplane.find_xspace_files(other)  # the user's own profile is intact


def test_window_not_saved_discards_tf_data(tmp_path):
    sched = npuprof.schedule(wait=0, warmup=1, active=1, repeat=1)
    f = tf.function(lambda x: tf.nn.relu(x))
    with nptf.Profiler(output_path=tmp_path / "p", schedule=sched) as prof:
        f(tf.ones([4]))  # warm-up only, then the profiler stops
    assert prof.saved_runs == []
    assert plugin._running_for is None and plugin._pending is None


def test_offline_parsing_does_not_import_tensorflow(tf_logdir):
    code = textwrap.dedent(f"""
        import sys
        from npuprof.integrations.tensorflow import xplane
        table = xplane.read_logdir({str(tf_logdir)!r})
        types = set(table.of_kind(xplane.EventKind.OP).column_strings("type"))
        assert "Relu" in types, types
        assert "tensorflow" not in sys.modules
        print("OK")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "OK"
