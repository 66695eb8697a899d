"""`npuprof collect --via env` hands GE a PROFILING_OPTIONS it accepts."""
import json

import pytest

from npuprof.config import build_config
from npuprof.integrations.pyacl.acl_json import section_from_config
from npuprof.integrations.pyacl.collect import profiling_env
from npuprof.integrations.cann.profiling_options import parse_profiling_options


@pytest.mark.parametrize("level", ["Level0", "Level1", "Level2"])
def test_profiling_env_options_pass_the_profiling_options_validator(tmp_path, level):
    section = section_from_config(build_config(output_path=tmp_path, profiler_level=level, host_sys=["cpu"]),
                                  str(tmp_path / "prof"))
    env = profiling_env(section)
    options = json.loads(env["PROFILING_OPTIONS"])
    assert env["PROFILING_MODE"] == "true"
    assert "switch" not in options and "ascendcl" not in options
    assert options["output"] == str(tmp_path / "prof")
    parse_profiling_options(env["PROFILING_OPTIONS"])  # raises on any key GE would reject
