"""Importing the TensorFlow integration (and its plugin) never imports TensorFlow."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_import_does_not_import_tensorflow():
    code = textwrap.dedent("""
        import sys
        import npuprof
        import npuprof.integrations.tensorflow as nptf
        import npuprof.integrations.tensorflow.plugin
        import npuprof.integrations.tensorflow.xplane
        import npuprof.integrations.tensorflow.demo
        from npuprof.plugins.manager import get_plugin_host
        host = get_plugin_host()
        rec = host.records["tensorflow"]
        assert rec.loaded, rec.error
        assert "npuprof_parse_run" in rec.hooks and "npuprof_start" in rec.hooks, rec.hooks
        nptf.parse_profiling_options('{"output":"/tmp/x"}')
        nptf.ProfilingConfig(enable_profiling=True, profiling_options='{"output":"/tmp/x"}')
        nptf.global_options().profiling_config.enable_profiling = True
        assert "tensorflow" not in sys.modules, "tensorflow was imported"
        print("OK")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"
