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


def test_every_public_name_is_handed_out_from_its_module_and_others_are_refused():
    """The package's PEP 562 ``__getattr__``: ``__all__`` is what the TYPE_CHECKING imports name, each name
    is the defining module's own object, an unknown name is an AttributeError naming the package; none of it
    imports TensorFlow (a name a TensorFlow class backs is checked to be asked of its module)."""
    code = textwrap.dedent("""
        import ast, importlib, inspect, sys
        import npuprof.integrations.tensorflow as nptf
        tree = ast.parse(inspect.getsource(nptf))
        block = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
        where = {a.name: importlib.import_module("." * i.level + i.module, nptf.__name__)
                 for i in block.body for a in i.names}
        assert sorted(where) == nptf.__all__, (sorted(where), nptf.__all__)
        lazy_in_module = []
        for name, module in where.items():
            if name in vars(module):
                assert getattr(nptf, name) is vars(module)[name], name
            else:       # the module's own __getattr__ hands it out, from TensorFlow: asked of that module?
                real, module.__getattr__ = module.__getattr__, lambda n, m=module.__name__: (m, n)
                assert getattr(nptf, name) == (module.__name__, name), name
                module.__getattr__ = real
                lazy_in_module.append(name)
        try:
            nptf.not_a_name
        except AttributeError as e:
            assert str(e) == "module 'npuprof.integrations.tensorflow' has no attribute 'not_a_name'", e
        else:
            raise AssertionError("no AttributeError")
        assert "tensorflow" not in sys.modules, "tensorflow was imported"
        print(len(where), sorted(lazy_in_module))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("20 ['DynamicProfilerCallback', 'NPUEstimator', 'NPURunConfig', 'ProfilerCallback', "
                                   "'ProfilingHook']"), proc.stdout
