"""Chunks holding long rows (torch_npu's operators with call stacks) are rendered in one compiled pass, a run
of chunks at a time: the same bytes as chunk by chunk, stretch by stretch with each long row formatted by hand,
on mixed kinds, devices, links, counter values and the real torch_npu trace, and whoever renders which chunks."""
from __future__ import annotations

import json

import numpy as np
import pytest

import npuprof.export.trace_json as tj
from npuprof.events import EventKind, EventTable
from npuprof.export.textrows import compiled_rows
from npuprof.readers.ascend_output import OUTPUT_DIR, AscendWriter, read_ascend_output
from realdata import realdata


def _both(events: EventTable, monkeypatch) -> tuple[bytes, bytes]:
    base = tj.base_time_ns(events)
    in_place = []
    render = tj._render_in_place
    monkeypatch.setattr(tj, "_render_in_place", lambda *a: in_place.append(1) or render(*a))
    fast = b"".join(tj.event_blocks(events, base))
    _both.in_place = len(in_place)
    monkeypatch.setattr(tj, "_renders_long_rows", lambda *a: False)
    by_hand = b"".join(tj.event_blocks(events, base))
    return fast, by_hand


def _mixed(n: int, seed: int) -> EventTable:
    rng = np.random.default_rng(seed)
    kinds = [EventKind.OP, EventKind.KERNEL, EventKind.MARK, EventKind.COUNTER, EventKind.MEMORY, EventKind.API,
             EventKind.STEP, EventKind.COMM]
    kind = rng.choice([int(k) for k in kinds], n)
    long_text = json.dumps({"Call stack": "frame.py(1): f\r\n" * 60})
    args = [long_text if rng.random() < 0.2 else (json.dumps({"k": int(rng.integers(9))}) if rng.random() < 0.5
                                                   else "") for _ in range(n)]
    device = np.where(kind == int(EventKind.KERNEL), rng.integers(0, 2, n), -1)
    corr = np.where(rng.random(n) < 0.3, rng.integers(0, 50, n), -1)
    return EventTable.from_records(
        ts=np.sort(rng.integers(1_700_000_000 * 10**9, 1_700_000_100 * 10**9, n)), dur=rng.integers(0, 10**7, n),
        kind=kind, name=[("op_" + "x" * int(rng.integers(0, 700))) if rng.random() < 0.1 else f"op{i % 7}"
                         for i in range(n)],
        type=[f"T{i % 5}" for i in range(n)], args=args, device=device, stream=np.where(device >= 0, 3, -1),
        value=rng.choice([0.0, 1.5, 1e300, float("nan"), 7.0], n), tid=rng.integers(1, 4, n), corr=corr)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chunks_with_long_rows_render_as_by_hand(monkeypatch, seed):
    if not compiled_rows():
        pytest.skip("the compiled row renderer is not built here")
    events = _mixed(5000, seed)
    fast, by_hand = _both(events, monkeypatch)
    assert fast == by_hand and fast.count(b"Call stack") > 500 and _both.in_place >= 1


@pytest.mark.parametrize("per_run", [1, 2, 4])
def test_a_run_of_chunks_renders_as_chunk_by_chunk(monkeypatch, per_run):
    """A render's text budget (BATCH_BYTES) fits one chunk, two chunks (the last run then one), all four."""
    if not compiled_rows():
        pytest.skip("the compiled row renderer is not built here")
    events = _mixed(6000, 5)
    base = tj.base_time_ns(events)
    renders = []
    render = tj._render_in_place
    monkeypatch.setattr(tj, "_render_in_place", lambda *a: renders.append(len(a[1]["kind"])) or render(*a))
    monkeypatch.setattr(tj, "BATCH_ROWS", 1)      # one chunk at a time
    one_by_one = b"".join(tj.event_blocks(events, base))
    chunks, renders[:] = list(renders), []
    assert len(chunks) == 4 and sum(chunks) == 6000
    monkeypatch.setattr(tj, "BATCH_ROWS", 4 * chunks[0])
    text, _ = tj._batch_text(events, tj._Pools(events.strings), 0, chunks[0], 4)
    budget = [int(text[:k * chunks[0]].sum()) + min(6000, k * chunks[0]) * tj.ROW_BYTES for k in (1, 2, 4)]
    monkeypatch.setattr(tj, "BATCH_BYTES", budget[(1, 2, 4).index(per_run)])
    batched = b"".join(tj.event_blocks(events, base))
    assert batched == one_by_one
    assert renders == {1: chunks, 2: [chunks[0] * 2, chunks[0] + chunks[-1]], 4: [6000]}[per_run]


def test_runs_end_where_the_sharing_process_stops(monkeypatch):
    """``stop`` is asked for every chunk of a run before it renders: the child's part ends at the chunk the
    parent took, and the two parts make the whole file."""
    events = _mixed(6000, 6)
    base = tj.base_time_ns(events)
    whole = b"".join(tj.event_blocks(events, base))
    for split in range(4):     # 4 chunks
        asked = []
        child = b"".join(tj.event_blocks(events, base, stop=lambda j, count: asked.append(j) or j >= split))
        parent = b"".join(tj.event_blocks(events, base, first_chunk=split))
        assert child + parent == whole and split in asked


def test_negative_zero_values_keep_the_grouped_rendering(monkeypatch):
    events = _mixed(500, 4)
    value = events["value"].copy()
    value[::3] = -0.0
    events = events.with_column("value", value)
    assert not tj._renders_long_rows({k: events[k] for k in ("ts", "dur", "value")}, np.arange(3), 0)
    fast, by_hand = _both(events, monkeypatch)
    assert fast == by_hand


def test_the_real_torch_npu_trace_renders_as_by_hand(monkeypatch):
    events, _ = read_ascend_output(realdata("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt") / OUTPUT_DIR,
                                   writer=AscendWriter.TORCH_NPU)
    events = events.sorted()
    fast, by_hand = _both(events, monkeypatch)
    # the one-pass rendering needs the compiled renderer; without it both ways are the grouped one
    assert fast == by_hand and len(fast) > 10**6 and (_both.in_place > 0) == bool(compiled_rows())


def test_value_texts_give_each_value_its_text_and_share_equal_ones():
    rng = np.random.default_rng(7)
    values = rng.choice([0.0, 0.875, 2160232.0, 1e300, float("nan"), float("inf"), -float("inf"), -3.5, 1e-7],
                        20000)
    texts, codes = tj._value_texts(values)
    assert [texts[c] for c in codes.tolist()] == [tj._value_json(v) for v in values.tolist()]
    numbers = ~np.isnan(values)
    assert len(set(codes[numbers].tolist())) == len(np.unique(values[numbers]))   # one text per distinct number
    assert tj._value_texts(np.zeros(0))[0] == []


def test_value_texts_with_negative_zero_are_np_uniques():
    """-0.0 among the values: np.unique's texts and codes, whichever of 0.0 and -0.0 it keeps (the grouped
    rendering's bytes as they always were); without it the same text for every value."""
    rng = np.random.default_rng(8)
    values = rng.choice([0.0, -0.0, 0.875, float("nan"), 2160232.0, -3.5], 5000)
    uniq, at = np.unique(values, return_inverse=True)
    texts, codes = tj._value_texts(values)
    assert texts == [tj._value_json(v) for v in uniq.tolist()] and codes.tolist() == at.reshape(-1).tolist()
    positive = np.abs(values)
    texts, codes = tj._value_texts(positive)
    uniq, at = np.unique(positive, return_inverse=True)
    assert [texts[c] for c in codes.tolist()] == [tj._value_json(v) for v in uniq[at.reshape(-1)].tolist()]
