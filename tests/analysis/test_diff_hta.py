"""``npuprof diff`` against HTA's own ``TraceDiff.compare_traces`` on HTA's trace_diff pair (real GPU Kineto
traces), run for real in .venv-interop: per-name counts, total durations and count-change categories equal,
CPU operator rows (cpu_op, cuda_runtime, user_annotation) and GPU kernel rows both, for the same iterations."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import npuprof
from cluster_support import interop_python
from realdata import realdata

pytestmark = pytest.mark.slow

PAIR = "hta/tests/data/trace_diff"
HTA_DIFF = r'''
import json, sys
from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff
root, iterations = sys.argv[1], [int(i) for i in sys.argv[2].split(",")]
control = LabeledTrace(label="control", trace_dir=root + "/control")
test = LabeledTrace(label="test", trace_dir=root + "/test")
out = {}
for device in (DeviceType.CPU, DeviceType.GPU):
    df = TraceDiff.compare_traces(control, test, control_iteration=iterations, test_iteration=iterations,
                                  device_type=device)
    out[device.name] = {name: [int(r.control_counts), float(r.control_total_duration), int(r.test_counts),
                               float(r.test_total_duration), r.counts_change_categories] for name, r in df.iterrows()}
print("HTA-RESULT " + json.dumps(out))
'''
# HTA's CPU rows are the events without a stream: npuprof's op (cpu_op), api (cuda_runtime) and range
# (user_annotation) rows; its GPU rows are kernels, memcpy/memset (npuprof's kernel rows) and collective
# kernels (npuprof's communication rows, labelled "name [group]").
CPU_KINDS, GPU_KINDS = ("op", "api", "range"), ("kernel", "communication")


def _hta_compare(root: Path, iterations: list[int], cwd: Path) -> dict:
    script = cwd / "hta_diff.py"
    script.write_text(HTA_DIFF)
    done = subprocess.run([str(interop_python()), str(script), str(root), ",".join(map(str, iterations))],
                          capture_output=True, text=True, timeout=900, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("HTA-RESULT ")][-1]
    return json.loads(line[len("HTA-RESULT "):])


def _ours(result, kinds: tuple) -> dict:
    out = {}
    for r in result.rows:
        if r.by not in kinds:
            continue
        assert r.match in ("exact", "base only", "new only"), r.match       # --exact-names: as HTA's full names
        name = (r.base_names or r.new_names)[0]
        if r.by == "communication":
            name = name.rsplit(" [", 1)[0]
        assert name not in out, name
        out[name] = [r.base_count, r.base_total_us, r.new_count, r.new_total_us, r.change]
    return out


@pytest.mark.parametrize("iterations", [[1009], [1010, 1011]])
def test_per_name_counts_and_totals_equal_htas_trace_diff(iterations, tmp_path):
    root = realdata(PAIR)
    hta = _hta_compare(root, iterations, tmp_path)
    steps = f"{iterations[0]}-{iterations[-1]}"
    result = npuprof.diff(root / "control" / "control.json.gz", root / "test" / "test.json.gz", steps=steps,
                          normalise=False)
    for device, kinds in (("CPU", CPU_KINDS), ("GPU", GPU_KINDS)):
        theirs = dict(hta[device])
        if device == "CPU":     # HTA lists the ProfilerStep annotations among CPU ops; npuprof has step rows
            steps_rows = {n: theirs.pop(n) for n in list(theirs) if n.startswith("ProfilerStep#")}
            assert sorted(steps_rows) == [f"ProfilerStep#{i}" for i in iterations]
        ours = _ours(result, kinds)
        assert set(ours) == set(theirs), (device, sorted(set(ours) ^ set(theirs))[:5])
        assert len(theirs) > 100
        problems = []
        for name, (c0, t0, c1, t1, change) in theirs.items():
            o = ours[name]
            # HTA's durations are the trace's µs; npuprof holds whole ns: sums agree to 1 ns per event
            if (o[0], o[2], o[4]) != (c0, c1, change) or abs(o[1] - t0) > 1e-3 * max(c0, 1) \
                    or abs(o[3] - t1) > 1e-3 * max(c1, 1):
                problems.append((name[:80], [c0, t0, c1, t1, change], o))
        assert not problems, (device, problems[:5])
