"""A missing framework makes the tests that need it skip, saying which framework, never fail.

npuprof's own modules import without any framework, so ``pytest.importorskip("npuprof....")`` could
never skip: the suite skips on the framework itself. Checked by running a test that needs TensorFlow in a
Python where ``import tensorflow`` fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCKER = '''
import importlib.abc, sys
class _NoFramework(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked for this test)", name=name)
sys.meta_path.insert(0, _NoFramework())
'''


def test_a_test_needing_tensorflow_skips_with_the_reason_when_it_is_missing(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/reliability/test_rel_corrupt.py::test_corrupt_xspace_is_reported_and_the_rest_exported[empty]"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "1 skipped" in out and "the XSpace proto comes with TensorFlow" in out, out[-3000:]
