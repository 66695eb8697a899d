"""The md5 of every file ``npuprof analyse`` writes for each real sample of another tool's JSON traces
(Kineto, torch_npu/MindSpore ``trace_view.json``, CANN ``msprof_*.json`` timelines) under
../shared/realdata, so that a change to the readers can show its outputs are byte for byte today's.

Example::

    python benchmarks/foreign_md5.py /tmp/before.json             # on the old code
    python benchmarks/foreign_md5.py /tmp/after.json              # on the new code
    python benchmarks/foreign_md5.py --compare /tmp/before.json /tmp/after.json

Extra inputs (the large synthetic traces of :mod:`foreign_traces`) can be added with ``--extra PATH``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REALDATA = REPO.parent / "shared" / "realdata"
SAMPLES = (
    "hta/tests/data/trace_diff/test/test.json.gz",
    "hta/tests/data/trace_diff/control/control.json.gz",
    "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
    "hta/tests/data/trace_filter/sampled_rank-1.json.gz",
    "hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt",
    "msinsight/test/data/pytorch/text/level1/rank1_ascend_pt",
    "msprof-analyze/test/ut/advisor/timeline_advice",
    "msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice",
    "mindinsight/tests/utils/resource/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC",
)


def _digests(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _as_run(trace_view: Path, tmp: Path) -> Path:
    """A torch_npu run directory around a lone ``trace_view.json`` (a link to it, the sample untouched)."""
    out_dir = tmp / "lone_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out_dir.mkdir(parents=True)
    (out_dir / "trace_view.json").symlink_to(trace_view)
    return out_dir.parent


def manifest(inputs: list[Path]) -> dict:
    """input -> {"exit": code, "files": {relative path: md5}} of ``npuprof analyse -o`` on it."""
    out = {}
    for src in inputs:
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as run_tmp:
            run = src
            if src.is_dir() and (src / "trace_view.json").is_file() and not (src / "ASCEND_PROFILER_OUTPUT").exists():
                run = _as_run(src / "trace_view.json", Path(run_tmp))
            done = subprocess.run([sys.executable, "-m", "npuprof", "analyse", "--quiet", "-o", tmp, str(run)],
                                  capture_output=True, text=True)
            out[str(src)] = {"exit": done.returncode, "files": _digests(Path(tmp))}
        print(f"{src}: exit {done.returncode}, {len(out[str(src)]['files'])} files", file=sys.stderr)
    return out


def compare(before: dict, after: dict) -> list[str]:
    """The differences between two manifests (empty: identical)."""
    diffs = []
    for src in sorted(set(before) | set(after)):
        a, b = before.get(src), after.get(src)
        if a is None or b is None:
            diffs.append(f"{src}: only in {'after' if a is None else 'before'}")
            continue
        if a["exit"] != b["exit"]:
            diffs.append(f"{src}: exit {a['exit']} -> {b['exit']}")
        for name in sorted(set(a["files"]) | set(b["files"])):
            if a["files"].get(name) != b["files"].get(name):
                diffs.append(f"{src}: {name} {a['files'].get(name)} -> {b['files'].get(name)}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", nargs="+", help="where to write the manifest, or (--compare) the two to compare")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--extra", action="append", default=[], help="another input to analyse")
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.manifest[:2])
        diffs = compare(before, after)
        files = sum(len(v["files"]) for v in after.values())
        print("\n".join(diffs) if diffs else f"identical: {len(after)} inputs, {files} files")
        return 1 if diffs else 0
    inputs = [REALDATA / s for s in SAMPLES if (REALDATA / s).exists()] + [Path(p) for p in args.extra]
    Path(args.manifest[0]).write_text(json.dumps(manifest(inputs), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
