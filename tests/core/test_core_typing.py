"""The public API is typed, and a type checker (mypy, from the dev extra) holds it: the public modules
check clean, a typical use type-checks, and wrong calls an editor should flag are rejected."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ["npuprof", "npuprof.types", "npuprof.profiler", "npuprof.schedule", "npuprof.handlers",
          "npuprof.config", "npuprof.integrations.mindspore.callback", "npuprof.integrations.tensorflow.profiler",
          "npuprof.integrations.tensorflow.tf2", "npuprof.integrations.tensorflow.estimator",
          "npuprof.integrations.pyacl.profiler", "npuprof.dynamic_profile", "npuprof.dynamic_profile.controller",
          "npuprof.dynamic_profile.request", "npuprof.dynamic_profile.autostart",
          "npuprof.integrations.mindspore.dynamic", "npuprof.integrations.tensorflow.dynamic",
          "npuprof.integrations.mindspore.profiler", "npuprof.analysis.diff", "npuprof.rundiff",
          "npuprof.analysis.advice", "npuprof.analysis.advice.model", "npuprof.analysis.advice.runner",
          "npuprof.analysis.advice.families", "npuprof.analysis.advice.flops", "npuprof.analysis.advice.rules",
          "npuprof.analysis.advice.rules.breakdown", "npuprof.analysis.advice.rules.communication",
          "npuprof.analysis.advice.rules.host", "npuprof.analysis.advice.rules.operators",
          "npuprof.analysis.advice.rules.mfu", "npuprof.analysis.advice.rules.slowrank",
          "npuprof.analysis.advice.rules.memory", "npuprof.advise",
          "npuprof.advise.page", "npuprof.advise.plugin"]


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    """The package as installed (npuprof = core/, its integrations = integrations/*), by symlinks."""
    if shutil.which("mypy", path=os.path.dirname(sys.executable)) is None:
        pytest.fail("mypy is missing: it is in the dev extra (pip install -e '.[dev]')")
    root = tmp_path_factory.mktemp("typed")
    pkg = root / "npuprof"
    pkg.mkdir()
    for entry in (ROOT / "core").iterdir():
        if entry.name not in ("integrations", "__pycache__"):
            (pkg / entry.name).symlink_to(entry)
    (pkg / "integrations").mkdir()
    (pkg / "integrations" / "__init__.py").symlink_to(ROOT / "core" / "integrations" / "__init__.py")
    for sub in (ROOT / "integrations").iterdir():
        if sub.is_dir() and (sub / "__init__.py").exists():
            (pkg / "integrations" / sub.name).symlink_to(sub)
    return root


def _mypy(layout: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MYPYPATH=str(layout))
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "mypy"), "--config-file",
                           str(ROOT / "pyproject.toml"), "--no-incremental", *args],
                          capture_output=True, text=True, timeout=900, cwd=layout, env=env)


def test_the_public_modules_type_check(layout):
    done = _mypy(layout, *[a for m in PUBLIC for a in ("-m", m)])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_typical_use_checks_and_wrong_calls_are_flagged(layout):
    good = layout / "good.py"
    good.write_text(textwrap.dedent("""
        from npuprof import Profiler, ProfilerActivity, schedule, tensorboard_trace_handler, analyse
        with Profiler("./prof", activities=[ProfilerActivity.CPU, "NPU"], profiler_level="Level1",
                      schedule=schedule(wait=1, active=2), on_trace_ready=tensorboard_trace_handler("./tb"),
                      export_type=["text", "db"]) as prof:
            prof.step()
        results = analyse("./prof", export_type=["db"], output_path="./out")
    """))
    assert _mypy(layout, str(good)).returncode == 0
    bad = layout / "bad.py"
    bad.write_text(textwrap.dedent("""
        from npuprof import Profiler, tensorboard_trace_handler
        Profiler(schedule=5)
        Profiler(profiler_level="Level9")
        Profiler(activities=["TPU"])
        tensorboard_trace_handler(async_mode="yes")
    """))
    done = _mypy(layout, str(bad))
    flagged = {int(line.split(":")[1]) for line in done.stdout.splitlines() if line.startswith("bad.py:")
               and ": error:" in line}
    assert flagged == {3, 4, 5, 6}, done.stdout
