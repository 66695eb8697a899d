"""Vectorised text rendering (npuprof.export.textrows) against Python's own formatting."""
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuprof.export.textrows import BackgroundWriter, CellRows, RowBuilder

pytestmark = pytest.mark.usefixtures("both_renderers")   # each test: compiled, then cells

INT64 = st.integers(min_value=-(2**62), max_value=2**62)


def render_lines(build, n):
    rows = RowBuilder(n)
    build(rows)
    rows.literal("\n")
    return rows.render().decode().split("\n")[:-1]


@settings(max_examples=60, deadline=None)
@given(st.lists(INT64, min_size=1, max_size=200))
def test_integers_match_str(values):
    v = np.array(values, dtype=np.int64)
    assert render_lines(lambda r: r.integer(v), len(v)) == [str(x) for x in values]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=-(10**17), max_value=10**17), min_size=1, max_size=200))
def test_fixed3_is_exact_thousandths(values):
    v = np.array(values, dtype=np.int64)
    want = [("-" if x < 0 else "") + f"{abs(x) // 1000}.{abs(x) % 1000:03d}" for x in values]
    assert render_lines(lambda r: r.fixed3(v), len(v)) == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=-(10**14), max_value=10**14), min_size=1, max_size=200))
def test_fixed3_strip_matches_repr_of_rounded_float(values):
    # what the csv module writes for np.round(ns / 1e3, 3)
    v = np.array(values, dtype=np.int64)
    assert render_lines(lambda r: r.fixed3(v, strip=True), len(v)) == [repr(round(x / 1e3, 3)) for x in values]


def test_boundaries_of_digit_groups():
    edges = [0, 1, 9, 10, 99, 999, 1000, 9999, 10000, 99999999, 100000000, 10**16, 2**63 - 1, -1, -9999, -10000,
             -(2**63 - 1)]
    v = np.array(edges, dtype=np.int64)
    assert render_lines(lambda r: r.integer(v), len(v)) == [str(x) for x in edges]


def test_pooled_literal_and_present_mask():
    codes = np.array([2, 0, 1, 2])
    present = np.array([True, True, False, True])
    lines = render_lines(lambda r: (r.literal("<"), r.pooled(codes, ["a", 'b"c', "ünï"], present),
                                    r.literal(">"), r.integer(np.array([1, 2, 3, 4]), present)), 4)
    assert lines == ["<ünï>1", "<a>2", "<>", "<ünï>4"]


def test_single_value_pieces_become_literals():
    cells = CellRows(3)
    cells.pooled(np.array([1, 1, 1]), ["x", "same"])
    cells.integer(np.array([7, 7, 7]))
    cells.literal("\n")
    assert cells.parts == [] and cells.render() == b"same7\n" * 3
    rows = RowBuilder(3)
    rows.pooled(np.array([1, 1, 1]), ["x", "same"])
    rows.integer(np.array([7, 7, 7]))
    rows.literal("\n")
    assert rows.render() == b"same7\n" * 3


def test_pooled_large_pool_uses_only_rows_strings():
    pool = [f"s{i}" for i in range(100_000)]
    codes = np.array([99_999, 5, 99_999])
    assert render_lines(lambda r: r.pooled(codes, pool), 3) == ["s99999", "s5", "s99999"]


def test_background_writer_keeps_order_and_reports_errors():
    buf = io.BytesIO()
    with BackgroundWriter(buf, depth=2) as w:
        for i in range(200):
            w.write(b"%d," % i)
    assert buf.getvalue() == b"".join(b"%d," % i for i in range(200))

    class Broken(io.RawIOBase):
        def write(self, b):
            raise OSError(28, "No space left on device")

    w = BackgroundWriter(Broken())
    with pytest.raises(OSError, match="No space"):
        for _ in range(10):
            w.write(b"x" * 10)
        w.close()


def test_a_kernel_table_with_stream_ids_is_rendered_vectorised_and_equal_to_the_csv_module(tmp_path):
    """kernel_details' Stream ID column ("N/A" where a kernel has no stream) stays on the vectorised
    path (it fell back to the csv module: 8x slower on 1M events) and renders the same text."""
    import csv
    import io

    import numpy as np

    from npuprof.analysis.operators import kernel_details
    from npuprof.events import EventKind, EventTable
    from npuprof.export import csvfiles

    n = csvfiles.VECTOR_MIN_ROWS + 5
    rng = np.random.default_rng(1)
    events = EventTable.from_records(ts=np.arange(n) * 1000, dur=rng.integers(1, 5000, n), kind=EventKind.KERNEL,
                                     name=[f"k{i % 7}" for i in range(n)], type="MatMul", device=0,
                                     stream=rng.choice([-1, 3, 12, 70000], n))
    table = kernel_details(events)
    block = table.block(0, len(table))
    assert csvfiles._render_block(table.columns, block, len(table), {}) is not None   # no fallback
    out = io.BytesIO()
    csvfiles.write_csv_to(out, table)
    expected = io.StringIO()
    w = csv.writer(expected, lineterminator="\n")
    w.writerow(table.columns)
    w.writerows(table.rows())
    assert out.getvalue().decode() == expected.getvalue()


def test_digit_group_tables_are_the_formatted_texts():
    """The 4-digit group tables, built from digits with numpy, are the texts Python formats, cell for cell."""
    from npuprof.export import textrows as t

    texts = t._lut        # the texts as cells, the reference
    assert np.array_equal(t.LUT_FULL, texts([f"{i:04d}" for i in range(10000)]))
    assert np.array_equal(t.LUT_LEAD, texts([f"{i:>4d}".replace(" ", "\0") if i else "\0\0\0\0" for i in range(10000)]))
    assert np.array_equal(t.LUT_ONLY, texts([f"{i:>4d}".replace(" ", "\0") for i in range(10000)]))
    assert t.LUT_FULL.dtype == np.uint32 and t.LUT_FULL.flags["C_CONTIGUOUS"]
