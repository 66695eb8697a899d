"""What a worker sends the driver: a rank's summary packed as bytes (numpy arrays and JSON, no pickle),
unpacked to an equal summary, NaN (not measured) kept."""
from __future__ import annotations

import math

import numpy as np
import pytest

from realdata import realdata
from npuprof.cluster.packing import pack, unpack
from npuprof.cluster.ranks import discover_ranks
from npuprof.cluster.worker import RankSummary, RankTask, summarise_rank


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and \
            np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__"):
        return type(a) is type(b) and all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("series", [True, False])
def test_a_rank_summary_survives_packing(series):
    """A real torch_npu rank (Level1 text export: communication, memory CSVs, host series)."""
    dirs = discover_ranks(realdata("msinsight/test/data/pytorch/text/level1"))[1]
    s = summarise_rank(RankTask(rank=1, run_dirs=tuple(map(str, dirs)), series=series))
    s.steps["Free"][0] = math.nan                                     # a column the data did not measure
    s.comm_ops = [(*s.comm_ops[0][:5], math.nan)] + s.comm_ops[1:]     # a wait not measured
    blob = pack(s)
    assert isinstance(blob, bytes) and b"pickle" not in blob
    back = unpack(blob, RankSummary)
    for f in RankSummary.__dataclass_fields__:
        assert _same(getattr(s, f), getattr(back, f)), f
    assert (back.memory is not None) == series and bool(back.communication) and bool(back.communication_matrix)
    with pytest.raises(ValueError, match="not a packed rank summary"):
        unpack(b"\x80\x05" + blob[2:], RankSummary)


def test_without_series_a_rank_still_counts_its_memory_rows():
    """``series=False`` (``npuprof cluster``) leaves out the memory timeline, but the memory CSVs are still read:
    cluster_rank_summary's ``events`` counts every event of the rank, their rows included, and an unreadable
    row of theirs is a warning of the rank. Skipping those files would change both."""
    from npuprof.analysis.pipeline import load_run

    dirs = discover_ranks(realdata("msinsight/test/data/pytorch/text/level1"))[1]
    loaded = load_run(dirs[0])
    s = summarise_rank(RankTask(rank=1, run_dirs=tuple(map(str, dirs)), series=False))
    assert s.memory is None and s.host_series == {}
    assert s.events == len(loaded.events)
    types = set(loaded.events.string_array("type").tolist())
    assert {"memory", "npu_module_mem", "operator_memory"} <= types     # the three memory CSVs' events, counted
