"""csvfiles.rows_text: the csv module's text of any rows, by either of its two paths."""
from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from npuprof.export.csvfiles import LONG_CELL, csv_cell, rows_text

_cells = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                   st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
                   st.sampled_from(["a,b", 'say "x"', "line\nbreak", "cr\r", "", " lead", "(0, 1, 2)"]),
                   st.tuples(st.integers(), st.integers()))
_long = st.text(alphabet=st.sampled_from('0123456789, ()"\n'), min_size=LONG_CELL, max_size=LONG_CELL + 40)


def _csv_module(rows: list) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(width=st.integers(2, 6), data=st.data())
def test_rows_with_long_strings_render_as_the_csv_module_does(width, data):
    longs = data.draw(st.lists(_long, min_size=1, max_size=3))
    row = st.lists(st.one_of(_cells, st.sampled_from(longs)), min_size=width, max_size=width)
    first = data.draw(row.filter(lambda r: any(isinstance(v, str) and len(v) >= LONG_CELL for v in r)))
    rows = [first] + data.draw(st.lists(row, max_size=20))
    assert rows_text(rows) == _csv_module(rows)


@given(st.lists(st.lists(_cells, min_size=1, max_size=4), max_size=10))
def test_other_rows_render_as_the_csv_module_does(rows):
    assert rows_text(rows) == _csv_module(rows)


def test_a_rank_set_in_every_row_is_quoted_once_per_distinct_value(monkeypatch):
    from npuprof.export import csvfiles

    quoted = []
    monkeypatch.setattr(csvfiles, "csv_cell", lambda text: quoted.append(text) or csv_cell(text))
    group = "(" + ", ".join(map(str, range(256))) + ")"
    rows = [[group, step, "hcom_allReduce_1", src, (src + 1) % 256, "HCCS", 0.125, 12.5, 3.5]
            for step in range(3) for src in range(256)]
    assert rows_text(rows) == _csv_module(rows)
    assert sorted(quoted) == sorted([group, "hcom_allReduce_1", "HCCS"])


def test_numpy_scalars_in_rows_with_long_strings_render_as_the_csv_module_does():
    """A list column may hold numpy scalars: numpy's float64 is a float whose repr names its type
    (np.float64(0.5)), which the csv module does not print."""
    import numpy as np

    group = "(" + ", ".join(map(str, range(100))) + ")"
    rows = [[group, np.float64(0.5), np.float64(-1e-300), np.float32(0.25), np.int64(-3), np.bool_(True),
             np.float64("nan"), np.float64("inf")]] * 3
    assert len(group) >= LONG_CELL
    assert rows_text(rows) == _csv_module(rows)
