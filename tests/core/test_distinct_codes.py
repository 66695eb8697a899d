"""events.distinct_codes: np.unique(return_inverse=True) of non-negative codes, counted or sorted."""
from __future__ import annotations

import numpy as np
import pytest

from npuprof.events import distinct_codes


@pytest.mark.parametrize("size, top", [(None, 50), (3000, 3000), (None, 1 << 40), (5 << 20, 5 << 20)])
def test_distinct_codes_are_np_uniques(size, top):
    """Counted into slots (a pool's size, or the largest code) and sorted (codes far sparser than the rows):
    the distinct codes in order and each row's place, as np.unique gives them."""
    codes = np.random.default_rng(4).integers(0, top, 2000)
    uniq, at = distinct_codes(codes, size)
    want, want_at = np.unique(codes, return_inverse=True)
    assert uniq.tolist() == want.tolist() and at.tolist() == want_at.reshape(-1).tolist()
    assert at.dtype == np.int64
    empty, none = distinct_codes(codes[:0], size)
    assert len(empty) == 0 and len(none) == 0
