"""With MindSpore imported, the pyACL backend leaves CANN to MindSpore (no double driver)."""
import subprocess
import sys
import textwrap

import pytest

from acl_support import DOUBLE_DIR

CODE = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(DOUBLE_DIR)!r})
    import acl
    assert acl.init() == 0
    {{extra}}
    from npuprof import Profiler
    p = Profiler(output_path=sys.argv[1], activities=["CPU", "NPU"], start_profile=False)
    print("pyacl" in p._active_plugins)
""")


@pytest.mark.slow
@pytest.mark.parametrize("extra,expected", [("", "True"), ("import mindspore", "False")])
def test_pyacl_backend_steps_aside_for_mindspore(tmp_path, extra, expected):
    out = subprocess.run([sys.executable, "-c", CODE.replace("{extra}", extra), str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected
