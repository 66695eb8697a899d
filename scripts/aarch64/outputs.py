"""Every output npuprof writes for one synthetic run, through the CLI, listed with sizes and md5s: the
same input analysed here and on another platform (aarch64 under qemu) must give the same bytes.

``make-input DIR`` writes the synthetic host run (benchmarks/synth.py, fixed seed) once; ``run INPUT WORK``
copies it into WORK, runs each command there with this interpreter and prints, as JSON, each output
file's path (under WORK), byte count and md5. A command that fails stops the run (exit 1). Paths written
into outputs are WORK's: compare runs made in the same WORK. Three fields say when a command ran (the
report's "generated" minute, the cluster summary's seconds and driver timings): those, and nothing else, are replaced
before hashing (CLOCK_FIELDS).

Example::

    python scripts/aarch64/outputs.py make-input /tmp/in
    python scripts/aarch64/outputs.py run /tmp/in/synth_run /tmp/work > x86.json
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 20_000

# (name, arguments after `npuprof`; RUN and WORK are replaced): analysis to every format there is
COMMANDS = [
    ("analyse", ["analyse", "RUN", "--export-type", "text", "db", "--quiet"]),
    ("timeline", ["timeline", "RUN", "-o", "WORK/timeline/trace.json.gz", "--gzip"]),
    ("xplane", ["xplane", "RUN", "--logdir", "WORK/xplane", "--run", "synth"]),
    ("export db", ["export", "db", "RUN", "-o", "WORK/export_db"]),
    ("export summary", ["export", "summary", "RUN", "-o", "WORK/export_summary"]),
    ("report", ["report", "RUN", "-o", "WORK/report.html", "--quiet"]),
    ("advise", ["advise", "RUN", "--json", "-o", "WORK/advice.json"]),
    ("show", ["show", "RUN", "--width", "120"]),
]


# the only bytes that depend on when a command ran, replaced before hashing (file name, what, replacement)
CLOCK_FIELDS = [
    ("report.html", re.compile(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC"), b"generated <time> UTC"),
    ("cluster_summary.json", re.compile(rb'"seconds": ?[0-9.e+-]+'), b'"seconds": null'),
    ("cluster_summary.json", re.compile(rb'"driver": ?\{[^{}]*\}'), b'"driver": null'),   # the driver's timings
]


def content(path: Path) -> bytes:
    """The file's bytes, its clock fields (CLOCK_FIELDS) replaced."""
    data = path.read_bytes()
    for name, field, replacement in CLOCK_FIELDS:
        if path.name == name:
            data, n = field.subn(replacement, data)
            if n == 0:
                raise SystemExit(f"{path}: no clock field {field.pattern!r}; update CLOCK_FIELDS")
    return data


def make_input(parent: Path) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from synth import make_run

    return make_run(parent, EVENTS, events_per_step=500, chunk_events=5_000, seed=7)


def run_all(source: Path, work: Path) -> dict[str, list]:
    run = work / "input" / source.name
    shutil.copytree(source, run)
    before = {p for p in run.rglob("*") if p.is_file()}
    env = dict(os.environ, COLUMNS="120")
    for name, args in COMMANDS:
        argv = [a.replace("RUN", str(run)).replace("WORK", str(work)) for a in args]
        done = subprocess.run([sys.executable, "-m", "npuprof", *argv], env=env, capture_output=True, timeout=1800)
        if done.returncode != 0:
            sys.stderr.write(f"npuprof {' '.join(argv)}: exit {done.returncode}\n{done.stderr.decode()[-3000:]}\n")
            raise SystemExit(1)
        if name == "show":
            (work / "show.txt").write_bytes(done.stdout)
    files = sorted(p for p in work.rglob("*") if p.is_file() and p not in before)
    return {str(p.relative_to(work)): [len(data), hashlib.md5(data).hexdigest()]
            for p, data in ((p, content(p)) for p in files)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["make-input"] and len(argv) == 2:
        print(make_input(Path(argv[1])))
        return 0
    if argv[:1] == ["run"] and len(argv) == 3:
        print(json.dumps(run_all(Path(argv[1]), Path(argv[2])), indent=1, sort_keys=True))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
