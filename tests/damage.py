"""The damage matrix of the data-quality contract (tests/quality/test_quality_damage.py).

For one intact run (a real sample, or one of npuprof's own), :func:`variants` generates damaged copies:
each kind of file removed, emptied, cut at two points; each column of each CSV dropped; each raw segment
zeroed. :func:`run_verbs` runs the read and write verbs on a copy in-process and keeps what each exits
with and every number it shows or writes. The property (:func:`violations`): a verb either exits 0
with exactly the intact run's numbers, or flags the damage (exit 3 with a data quality section, or 1);
never exit 0 with a changed number, never a crash (exit 2 or a traceback).

Example::

    base = run_verbs(copy_of(sample, tmp / "base"), VERBS, tmp / "out-base")
    for v in variants(sample):
        run = v.apply(copy_of(sample, tmp / v.name))
        assert not violations(base, run_verbs(run, VERBS, tmp / ("out-" + v.name)))
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

VERBS = ("analyse", "show", "memory")
BINARY_SUFFIXES = (".npr", ".pb", ".db", ".gz")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Variant:
    """One damaged copy: ``name`` says what was done to which file."""

    name: str
    apply_to: Callable[[Path], None]

    def apply(self, run: Path) -> Path:
        self.apply_to(run)
        return run


@dataclass(frozen=True)
class VerbOutcome:
    code: int
    numbers: object          # what the verb wrote or printed, made comparable
    said_quality: bool       # its output had a data quality section


def copy_of(sample: Path, place: Path) -> Path:
    """A writable copy of ``sample`` at ``place/<sample name>``."""
    target = place / sample.name
    if sample.is_dir():
        shutil.copytree(sample, target)
    else:
        place.mkdir(parents=True, exist_ok=True)
        shutil.copy2(sample, target)
    for p in [target, *target.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return target


def _kinds(root: Path) -> list[Path]:
    """One file of each kind below ``root`` (its path with digits taken out), so that a CANN run's
    ten ``msprof_0_2_N.json`` are one kind."""
    seen: dict[str, Path] = {}
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for p in files:
        seen.setdefault(_DIGITS.sub("#", str(p.relative_to(root.parent))), p)
    return list(seen.values())


def _at(rel: str, fn: Callable[[Path], None]) -> Callable[[Path], None]:
    return lambda run: fn(run.parent / rel)


def _cut(fraction: float) -> Callable[[Path], None]:
    def cut(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[:int(len(data) * fraction)])
    return cut


def _drop_column(column: int) -> Callable[[Path], None]:
    def drop(path: Path) -> None:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.reader(fh))
        with open(path, "w", encoding="utf-8", newline="") as fh:
            csv.writer(fh, lineterminator="\r\n").writerows(r[:column] + r[column + 1:] for r in rows)
    return drop


def variants(sample: Path, columns: bool = True) -> list[Variant]:
    """The damaged copies of ``sample`` (see the module doc)."""
    out = []
    for path in _kinds(sample):
        rel = str(path.relative_to(sample.parent))
        out.append(Variant(f"removed {rel}", _at(rel, Path.unlink)))
        out.append(Variant(f"emptied {rel}", _at(rel, lambda p: p.write_bytes(b""))))
        for fraction in (0.37, 0.81):
            out.append(Variant(f"cut {rel} at {fraction:.0%}", _at(rel, _cut(fraction))))
        if path.suffix in BINARY_SUFFIXES:
            out.append(Variant(f"zeroed {rel}", _at(rel, lambda p: p.write_bytes(bytes(p.stat().st_size)))))
        if columns and path.suffix == ".csv":
            with open(path, encoding="utf-8-sig", newline="") as fh:
                header = next(csv.reader(fh), [])
            for i, name in enumerate(header):
                out.append(Variant(f"dropped column {name!r} of {rel}", _at(rel, _drop_column(i))))
    return out


def _cli(argv: list[str]) -> tuple[int, str, str]:
    from npuprof.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except Exception as e:   # a crash is a finding, not a test error
            code, err = -1, io.StringIO(f"crash: {type(e).__name__}: {e}")
    return code, out.getvalue(), err.getvalue()


def _tree(root: Path) -> dict[str, bytes]:
    skip = {"npuprof_analysis.json"}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in skip} if root.exists() else {}


def run_verbs(run: Path, verbs: tuple[str, ...], out: Path) -> dict[str, VerbOutcome]:
    """Each verb on ``run`` in-process: its exit code and its numbers, with the run's own path taken out."""
    results = {}
    where = str(run.parent)
    for verb in verbs:
        if verb == "analyse":
            code, _, err = _cli(["analyse", str(run), "-o", str(out / "analysed"), "--quiet"])
            numbers: object = _tree(out / "analysed")
        elif verb == "show":
            code, text, err = _cli(["show", "-dir", str(run)])
            numbers = text.replace(where, "<run>")
        elif verb == "memory":
            code, text, err = _cli(["memory", "-dir", str(run), "--json"])
            try:
                numbers = [{k: v for k, v in r.items() if k not in ("run", "data_quality")} for r in json.loads(text)]
            except ValueError:
                numbers = text
        elif verb == "cluster":
            code, _, err = _cli(["cluster", str(run), "-o", str(out / "cluster"), "--quiet", "--no-parquet"])
            numbers = {k: v for k, v in _tree(out / "cluster").items() if k != "cluster_summary.json"}
        else:
            raise ValueError(verb)
        results[verb] = VerbOutcome(code, numbers, "data quality" in err)
    return results


NOT_MEASURED = (None, "", "N/A")     # how outputs say "not measured": what a damage may turn a value into


def changed(intact: object, damaged: object, where: str = "") -> list[str]:
    """Where ``damaged`` holds a number or text the intact run's output does not: a value that differs, a
    list of another length, a key or CSV column the intact output lacks. A key or column the damaged output
    lacks, or a value it gives as not measured (empty, N/A, null), is what the damage touched, not a
    change."""
    if isinstance(intact, dict) and isinstance(damaged, dict):
        if set(damaged) - set(intact):
            return [f"{where}: keys {sorted(set(damaged) - set(intact))[:3]} not in the intact output"]
        return [c for k in damaged for c in changed(intact[k], damaged[k], f"{where}/{k}")][:5]
    if isinstance(intact, list) and isinstance(damaged, list):
        if len(intact) != len(damaged):
            return [f"{where}: {len(damaged)} items, intact {len(intact)}"]
        return [c for i, (a, b) in enumerate(zip(intact, damaged)) for c in changed(a, b, f"{where}[{i}]")][:5]
    if isinstance(intact, bytes) and isinstance(damaged, bytes):
        return changed(_parsed(where, intact), _parsed(where, damaged), where) if intact != damaged else []
    if intact == damaged or damaged in NOT_MEASURED:
        return []
    return [f"{where}: {str(damaged)[:60]!r}, intact {str(intact)[:60]!r}"]


def _parsed(name: str, data: bytes) -> object:
    """An output file as data: a CSV as {column: values}, JSON as itself, anything else as its bytes."""
    try:
        if name.endswith(".csv"):
            rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
            return {c: [r[i] if i < len(r) else None for r in rows[1:]] for i, c in enumerate(rows[0] if rows else [])}
        if name.endswith(".json"):
            return json.loads(data)
    except (ValueError, UnicodeError):
        pass
    return data.decode("utf-8", "replace")


def violations(base: dict[str, VerbOutcome], damaged: dict[str, VerbOutcome]) -> list[str]:
    """What breaks the contract in ``damaged`` against the intact ``base`` (empty: none)."""
    found = []
    for verb, got in damaged.items():
        diff = changed(base[verb].numbers, got.numbers, verb) if got.code == 0 else []
        if diff:
            found.append(f"{verb}: exit 0 with numbers that differ from the intact run's: {diff[0]}")
        elif got.code == 3 and not got.said_quality:
            found.append(f"{verb}: exit 3 without a data quality section")
        elif got.code not in (0, 1, 3):
            found.append(f"{verb}: exit {got.code}")
    return found


def damaged_json(data, raw: bytes, empty: bytes) -> bytes:
    """``raw`` (a JSON text) damaged 1-4 times as a file is: a byte changed (to a JSON delimiter, a control or
    invalid UTF-8 byte, or any byte), the text cut, a few bytes deleted, or a piece of JSON syntax inserted
    (a quote, an escape, a huge number, a lone surrogate); ``empty`` stands in for a text damaged to nothing.
    ``data`` is hypothesis's ``st.data()``.

    Example::

        @given(st.data())
        def test_scanner(data):
            raw = damaged_json(data, b'[{"ph": "X"}]', empty=b"[")
    """
    from hypothesis import strategies as st

    out = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        how = data.draw(st.sampled_from(["byte", "cut", "delete", "insert"]))
        at = data.draw(st.integers(0, len(out) - 1))
        if how == "byte":
            any_byte = data.draw(st.integers(0, 255))
            out[at] = data.draw(st.sampled_from(list(b'{}[]",:\\ 0-.eE\x00\x7f\x80\xc3\xff') + [any_byte]))
        elif how == "cut":
            del out[at:]
        elif how == "delete":
            del out[at:at + data.draw(st.integers(1, 8))]
        else:
            out[at:at] = data.draw(st.sampled_from([b'"', b"\\", b"{", b"]", b",", b"\\u", b"1e999", b"\xed\xa0\x80"]))
        if not out:
            out = bytearray(empty)
    return bytes(out)
