"""export.json_text: the indented JSON text of orjson, made the same bytes as ``json.dumps(obj, indent=2,
default=str)`` (the cluster's JSON files keep their bytes), and json itself wherever they would differ."""
from __future__ import annotations

import json
import math
import random

import pytest

from npuprof.export.json_text import dumps_indented


def _python(obj: object) -> bytes:
    return json.dumps(obj, indent=2, default=str).encode("utf-8")


@pytest.mark.parametrize("obj", [
    {"a": [1, 2e-05, 1e-08, -3.5e-07, 0.0001, 9.99e-05, 1e16, 1.5e300, -0.0, 0.1, 123456.789]},
    {"Synchronization Time(ms)": 2e-05, "Wait Time Ratio": 0.00001, "nested": {"x": [], "y": {}, "z": [{}]}},
    [{"k 0.00001": "v 1e-05", "1e-5": "0.00002,"}, "2e-05", 3],
    {"nan": math.nan, "inf": math.inf},             # json writes NaN/Infinity; orjson null: json is used
    {"tuple": (1, 2.5e-06)},                         # read back a list: json is used
    {1: "int key", "b": 2**70},                      # keys that are not text, a big integer
    {"text": "caf\u00e9 \u4e2d \x7f \x00 \n \"q\" \\"},    # escapes: json's ensure_ascii
    {"obj": object.__new__(type("Odd", (), {"__str__": lambda self: "odd"}))},     # default=str
    [],
    {},
])
def test_same_bytes_as_json(obj: object) -> None:
    assert dumps_indented(obj) == _python(obj)


def test_random_documents_same_bytes_as_json() -> None:
    rng = random.Random(7)

    def value(depth: int) -> object:
        kind = rng.randrange(8) if depth < 4 else rng.randrange(6)
        if kind == 0:
            return rng.randint(-10**9, 10**9)
        if kind == 1:
            return rng.choice([1, -1]) * rng.random() * 10 ** rng.randint(-25, 25)
        if kind == 2:
            return round(rng.random() * 10 ** rng.randint(-8, 8), rng.randint(0, 8))
        if kind == 3:
            return "".join(chr(rng.choice([rng.randrange(32, 127), 10, 0xe9])) for _ in range(rng.randrange(8)))
        if kind == 4:
            return rng.choice([True, False, None, f"{rng.randint(0, 9)}e-{rng.randint(1, 9)}"])
        if kind == 5:
            return float(rng.randint(0, 10**9)) / 1000
        if kind == 6:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {f"{rng.choice(['k', 'Step 1', '0.00001', 'x: 1e-05'])}{i}": value(depth + 1)
                for i in range(rng.randrange(4))}

    for _ in range(3000):
        doc = {"a": value(0), "b": [value(0), value(0)]}
        assert dumps_indented(doc) == _python(doc), doc


@pytest.mark.parametrize("name", ["communication.json", "communication_matrix.json"])
def test_real_rank_files_same_bytes(name: str) -> None:
    """A real torch_npu rank's communication files (small floats in every operator's times)."""
    from realdata import realdata

    doc = json.loads(realdata(f"msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/{name}")
                     .read_text(encoding="utf-8"))
    assert dumps_indented(doc) == _python(doc)
