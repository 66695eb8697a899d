"""docs/seed-conformance.md stays true: every test it names exists, and every capability it calls
implemented or partial names one."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "seed-conformance.md"
SEEDS = ("000", "001", "002", "003", "004")
STATUSES = {"implemented", "partial", "missing", "needs NPU"}
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _rows() -> list[tuple[str, list[str]]]:
    """(seed section, cells) of every table row below a seed heading."""
    rows, section = [], ""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"## (\d{3}) ", line)
        if heading:
            section = heading.group(1)
            continue
        if section and line.startswith("|") and not line.startswith("|---") and not line.startswith("| capability"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
            rows.append((section, cells))
    return rows


def test_every_seed_has_its_table():
    sections = {section for section, _ in _rows()}
    assert sections == set(SEEDS)


def test_every_row_has_a_status_and_its_tests():
    for section, cells in _rows():
        assert len(cells) == 4, (section, cells)
        capability, status, _, tests = cells
        assert status in STATUSES, (section, capability, status)
        refs = TEST_REF.findall(tests)
        if status in ("implemented", "partial"):
            assert refs, f"{section}: {capability!r} is {status} but names no test"
        else:
            assert refs or tests == "—", (section, capability, tests)


def test_every_named_test_exists():
    missing = []
    for section, cells in _rows():
        for path, name in TEST_REF.findall(cells[3]):
            source = ROOT / path
            if not source.is_file() or not re.search(rf"^def {name}\(", source.read_text(encoding="utf-8"), re.M):
                missing.append(f"{section}: {path}::{name}")
    assert missing == []
