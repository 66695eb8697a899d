"""The damage matrix (issue 30, tests/damage.py): for every real sample and for npuprof's own runs
(host, MindSpore, TensorFlow), damaged copies - each kind of file removed, emptied, cut at two points,
binary files zeroed, each CSV column dropped - and for each, every verb exits 0 with exactly the intact
run's numbers for what the damage does not touch, or flags it (exit 3 with a data quality section, or 1).
Never exit 0 with a changed number. The counts are printed in the terminal summary.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rel_support as rs
from damage import VERBS, copy_of, run_verbs, variants, violations
from realdata import realdata
from rel_support import counts_summary  # noqa: F401

REAL_SAMPLES = {
    "torch_npu text": "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
    "torch_npu db": "msinsight/test/data/pytorch/db/level1/rank0_ascend_pt",
    "CANN PROF_": "mindinsight/tests/utils/resource/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC",
    "Kineto trace": "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
}


def _matrix(sample: Path, tmp: Path, verbs: tuple = VERBS) -> list[str]:
    base = run_verbs(copy_of(sample, tmp / "base"), verbs, tmp / "out-base")
    assert all(o.code == 0 for o in base.values()), {v: o.code for v, o in base.items()}
    found = []
    cases = variants(sample)
    for i, variant in enumerate(cases):
        run = variant.apply(copy_of(sample, tmp / f"v{i}"))
        outcome = run_verbs(run, verbs, tmp / f"out{i}")
        found += [f"{variant.name}: {v}" for v in violations(base, outcome)]
        rs.COUNTS["damaged variants checked"] += 1
        rs.COUNTS["verb runs on damaged data"] += len(verbs)
        rs.COUNTS["flagged (exit 3 or 1)"] += sum(o.code in (1, 3) for o in outcome.values())
        shutil.rmtree(tmp / f"v{i}")
        shutil.rmtree(tmp / f"out{i}", ignore_errors=True)
    rs.COUNTS["exit 0 with a changed number"] += len(found)
    rs.COUNTS["samples in the damage matrix"] += 1
    return found


@pytest.mark.parametrize("name", sorted(REAL_SAMPLES))
def test_real_sample_damage_matrix(name, tmp_path):
    found = _matrix(realdata(REAL_SAMPLES[name]), tmp_path)
    assert not found, "\n".join(found)


def test_job_damage_matrix_for_cluster(tmp_path):
    """One rank of the real 2-rank job damaged every way; cluster keeps the intact rank's and the tool's
    numbers or flags the damage."""
    job = copy_of(realdata("msinsight/test/data/pytorch/text/level1"), tmp_path / "src")
    base = run_verbs(job, ("cluster",), tmp_path / "out-base")
    assert base["cluster"].code == 0
    found = []
    for i, variant in enumerate(variants(job / "rank1_ascend_pt")):
        copy = copy_of(job, tmp_path / f"v{i}")
        variant.apply(copy / "rank1_ascend_pt")
        outcome = run_verbs(copy, ("cluster",), tmp_path / f"out{i}")
        found += [f"{variant.name}: {v}" for v in violations(base, outcome)]
        rs.COUNTS["damaged variants checked"] += 1
        rs.COUNTS["verb runs on damaged data"] += 1
        shutil.rmtree(tmp_path / f"v{i}")
        shutil.rmtree(tmp_path / f"out{i}", ignore_errors=True)
    rs.COUNTS["exit 0 with a changed number"] += len(found)
    rs.COUNTS["samples in the damage matrix"] += 1
    assert not found, "\n".join(found)


HOST_RUN = textwrap.dedent("""
    import sys, time
    from npuprof import Profiler, schedule, record_function, mstx
    with Profiler(output_path=sys.argv[1], schedule=schedule(wait=1, active=3), flush_interval=0.01) as p:
        for i in range(4):
            with record_function("forward"):
                time.sleep(0.003)
            mstx.mark(f"step {i}")
            time.sleep(0.02)          # several flushes: several raw segments
            p.step()
""")

TF_RUN = textwrap.dedent("""
    import sys
    import tensorflow as tf
    import npuprof
    from npuprof.integrations import tensorflow as nptf
    sys.path.insert(0, sys.argv[2])
    from tf_support import build_tf2_train_step
    step = build_tf2_train_step(tf)
    x = tf.ones([32, 64])
    step(x)
    with nptf.Profiler(output_path=sys.argv[1], schedule=npuprof.schedule(wait=1, active=2)) as prof:
        for _ in range(3):
            step(x)
            prof.step()
""")


def _own_run(tmp_path: Path, script: str) -> Path:
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "prof"), str(Path(__file__).resolve().parents[1])], check=True,
                   timeout=600, capture_output=True)
    (run,) = sorted((tmp_path / "prof").glob("*_ascend_*"))[:1]
    return run


def test_npuprof_host_run_damage_matrix(tmp_path):
    run = _own_run(tmp_path, HOST_RUN)
    assert len(list((run / "NPUPROF").glob("events_*.npr"))) >= 1
    found = _matrix(run, tmp_path / "m")
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_npuprof_tensorflow_run_damage_matrix(tmp_path):
    pytest.importorskip("tensorflow")
    run = _own_run(tmp_path, TF_RUN)
    assert list(run.rglob("*.xplane.pb"))
    found = _matrix(run, tmp_path / "m", ("analyse", "show"))
    assert not found, "\n".join(found)


@pytest.mark.slow
def test_npuprof_mindspore_run_damage_matrix(tmp_path):
    pytest.importorskip("mindspore")
    from ms_support import run_scenario

    facts = run_scenario("model_train", tmp_path / "ms", epochs=1, n=6)
    run = Path(facts["saved_runs"][0])
    found = _matrix(run, tmp_path / "m", ("analyse", "show"))
    assert not found, "\n".join(found)
