"""Digit groups when every value of a piece has the same number of digits (or none reaches a group):
the one-lookup paths of ``uint_cells`` print what ``str`` prints."""
import numpy as np
import pytest

from npuprof.export.textrows import RowBuilder


pytestmark = pytest.mark.usefixtures("both_renderers")   # each test: compiled, then cells

def _render_ints(values: np.ndarray) -> list[str]:
    rows = RowBuilder(len(values))
    rows.integer(values)
    rows.literal("\n")
    return rows.render().decode().splitlines()


def _render_fixed3(values: np.ndarray, strip: bool) -> list[str]:
    rows = RowBuilder(len(values))
    rows.fixed3(values, strip=strip)
    rows.literal("\n")
    return rows.render().decode().splitlines()


@pytest.mark.parametrize("lo,hi", [(10**4, 10**5), (10**8, 10**9), (10**8, 10**12), (10**11, 10**13),
                                   (0, 10**9), (10**7, 10**8), (10**15, 10**18), (9999, 10001),
                                   (99_999_999, 100_000_002)])
def test_bands_match_str(lo, hi):
    rng = np.random.default_rng(lo % 97)
    values = rng.integers(lo, hi, 5000, dtype=np.int64)
    values[:2] = (lo, hi - 1)
    assert _render_ints(values) == [str(v) for v in values.tolist()]
    assert _render_ints(-values) == [str(-v) for v in values.tolist()]
    assert _render_fixed3(values, False) == [f"{v // 1000}.{v % 1000:03d}" for v in values.tolist()]
    assert _render_fixed3(values, True) == [repr(round(v / 1000, 3)) if v < 10**15 else
                                             f"{v // 1000}.{(f'{v % 1000:03d}'.rstrip('0') or '0')}"
                                             for v in values.tolist()]
