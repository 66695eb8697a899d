"""The compiled row renderer (core/export/_rowrender.c) against the cell renderer it replaces:
the same bytes for any pieces, the same files, and clear errors for bad pieces."""
import csv as csv_module
import io
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuprof.analysis.operators import kernel_details
from npuprof.compiled import compiled_status
from npuprof.export import csvfiles, textrows, trace_json
from npuprof.export.textrows import Pool, RowBuilder

from test_perf_trace import make_events

# the tests of the compiled renderer run where it is built (and loaded); elsewhere they say why not
STATUS = compiled_status("npuprof.export._rowrender")
needs_compiled = pytest.mark.skipif(not STATUS.loaded,
                                    reason=f"npuprof.export._rowrender is not in use: {STATUS.reason}")

TEXTS = ["", "a", 'q"uote', "ünïcode", "x" * 40, "comma,", "\\back"]
DTYPES = [np.int64, np.int32, np.uint8, np.int16, np.uint32]


@st.composite
def programs(draw):
    """``(n, build)``: random pieces over ``n`` rows, replayed on any RowBuilder."""
    n = draw(st.integers(min_value=0, max_value=60))
    steps = []
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        what = draw(st.sampled_from(["literal", "pooled", "pool", "integer", "fixed3"]))
        present = None
        if n and draw(st.booleans()):
            present = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        if what == "literal":
            steps.append(("literal", (draw(st.sampled_from(TEXTS)),)))
            continue
        if what in ("pooled", "pool"):
            m = draw(st.integers(min_value=1, max_value=len(TEXTS)))
            dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8]))
            codes = np.array(draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n)), dtype=dtype)
            texts = Pool(TEXTS[:m]) if what == "pool" else [t.encode() if i % 2 else t for i, t in enumerate(TEXTS[:m])]
            steps.append(("pooled", (codes, texts, present)))
            continue
        dtype = draw(st.sampled_from(DTYPES))
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -(2**63) + 1), int(info.max)
        values = np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=dtype)
        if draw(st.booleans()) and n:   # a strided view, as table columns sliced by step often are
            values = np.repeat(values, 2)[::2]
        if what == "integer":
            steps.append(("integer", (values, present)))
        else:
            steps.append(("fixed3", (values.astype(np.int64), present, draw(st.booleans()))))
    return n, steps


def _replay(n, steps, compiled):
    rows = RowBuilder(n)
    for name, args in steps:
        getattr(rows, name)(*args)
    rows.literal("\n")
    return rows.render(compiled=compiled)


@needs_compiled
def test_the_install_built_the_compiled_renderer():
    # `make venv` (pip install -e .) compiles core/export/_rowrender.c; a silent fallback would hide a broken build
    assert textrows._compiled is not None


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(programs())
def test_compiled_and_cell_renderers_give_the_same_bytes(program):
    n, steps = program
    assert _replay(n, steps, compiled=True) == _replay(n, steps, compiled=False)


@needs_compiled
def test_a_large_pool_for_few_rows_packs_only_what_they_use():
    pool = [f"s{i}" for i in range(300_000)]
    codes = np.array([299_999, 5, 299_999])
    piece = textrows._compiled_piece((textrows._POOLED, codes, pool, None))
    assert piece[2] == b"s5s299999" + bytes(16) and piece[1].tolist() == [1, 0, 1]
    assert _replay(3, [("pooled", (codes, pool, None))], True) == b"s299999\ns5\ns299999\n"


@needs_compiled
@pytest.mark.parametrize("chunk", [None, 97])
def test_trace_and_csv_files_are_byte_identical(monkeypatch, chunk):
    if chunk:   # many chunks, long rows done by hand at chunk edges
        monkeypatch.setattr(trace_json, "CHUNK", chunk)
        monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)
    monkeypatch.setattr(csvfiles, "VECTOR_MIN_ROWS", 1)
    events = make_events(4000, seed=3).sorted()
    kernels = kernel_details(events)
    outputs = {}
    for name, compiled in (("compiled", textrows._compiled), ("cells", None)):
        monkeypatch.setattr(textrows, "_compiled", compiled)
        trace, csv = io.BytesIO(), io.BytesIO()
        trace_json.write_trace_to(trace, events)
        csvfiles.write_csv_to(csv, kernels)
        outputs[name] = (trace.getvalue(), csv.getvalue())
    assert outputs["compiled"] == outputs["cells"]
    rows = list(csv_module.reader(io.StringIO(outputs["compiled"][1].decode())))   # names hold newlines
    assert len(rows) == len(kernels) + 1 > 100


@needs_compiled
def test_bad_pieces_are_refused_with_the_piece_named():
    render = textrows._compiled.render
    blob, offsets = textrows.pack(["a", "b"])
    codes = np.array([0, 1, 2])
    with pytest.raises(IndexError, match=r"piece 1: code 2 is out of range for 2 texts"):
        render(3, [(0, b"<"), (1, codes, blob, offsets, None)])
    with pytest.raises(ValueError, match=r"piece 0: values must be one-dimensional with 4 rows"):
        render(4, [(2, np.arange(3), None)])
    with pytest.raises(TypeError, match=r"piece 0: values must hold native integers"):
        render(2, [(2, np.array([1.5, 2.0]), None)])
    with pytest.raises(ValueError, match=r"piece 0: a pool's blob must hold its texts and 16 bytes"):
        render(1, [(1, np.array([0]), b"ab", np.array([0, 2]), None)])
    with pytest.raises(ValueError, match=r"piece 0: unknown tag 7"):
        render(1, [(7, b"x")])
    with pytest.raises(ValueError, match=r"n must be >= 0, not -1"):
        render(-1, [])
    # the cell renderer refuses the same out-of-range code
    rows = RowBuilder(3)
    rows.pooled(codes, ["a", "b"])
    with pytest.raises(IndexError):
        rows.render(compiled=False)


@pytest.mark.parametrize("value,compiled", [("1", False), pytest.param("0", True, marks=needs_compiled)])
def test_npuprof_pure_python_chooses_the_renderer(value, compiled):
    env = dict(os.environ, NPUPROF_PURE_PYTHON=value)
    out = subprocess.run([sys.executable, "-c",
                          "from npuprof.export import textrows; print(textrows._compiled is not None)"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == str(compiled), out.stderr


def test_a_compiled_module_that_is_not_built_loads_as_none():
    from npuprof.compiled import load_compiled

    assert load_compiled("npuprof.export._not_built_here") is None
    assert load_compiled("npuprof.export._rowrender") is textrows._compiled
