"""The vectorised analysis (grouping, analyzers, lazy kernel_details, vectorised CSV,
memory-frugal concat/sort) against naive per-event Python references."""
import csv
import io
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuprof import events as EV
from npuprof.analysis import host_statistics as HS, operators as OPS, rows as ROWS, step_breakdown as SB, steps as ST
from npuprof.analysis import grouping
from npuprof.analysis.grouping import group_by, small_unique
from npuprof.events import EventKind, EventTable
from npuprof.export import csvfiles


def random_events(n=2000, seed=0, sorted_ts=True, kinds=None):
    rng = np.random.default_rng(seed)
    kinds = kinds or [EventKind.OP, EventKind.KERNEL, EventKind.API, EventKind.RANGE, EventKind.COUNTER,
                      EventKind.MARK, EventKind.COMM]
    n_steps = 20
    steps = EventTable.from_records(ts=np.arange(n_steps) * 10_000, dur=[9_000] * n_steps, kind=EventKind.STEP,
                                    name=[f"ProfilerStep#{i}" for i in range(n_steps)], type="ProfilerStep")
    ts = rng.integers(-5_000, n_steps * 10_000 + 5_000, n)
    if sorted_ts:
        ts = np.sort(ts)
    kind = rng.choice([int(k) for k in kinds], n)
    dev = np.where(kind == int(EventKind.KERNEL), rng.integers(0, 2, n), -1)   # only kernels run on a device
    other = EventTable.from_records(
        ts=ts, dur=rng.integers(0, 3_000, n), kind=kind,
        pid=7, tid=rng.choice([11, 12, 13], n), device=dev, stream=np.where(dev >= 0, rng.integers(0, 4, n), -1),
        value=rng.random(n) * 100, name=[f"n{i}, \"q\"" for i in rng.integers(0, 9, n)],
        type=[f"T{i}" for i in rng.integers(0, 5, n)])
    return SB.assign_steps(EventTable.concat([steps, other]).sorted())


def naive_groups(events, rows, cols):
    d = defaultdict(list)
    for i in rows:
        d[tuple(int(events[c][i]) for c in cols)].append(int(events["dur"][i]))
    return d


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 2**40)), min_size=1, max_size=300), st.booleans())
def test_group_by_matches_unique(pairs, dense):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] if not dense else p[1] % 7 for p in pairs])
    g = group_by(a, b)
    keys, inv, cnt = np.unique(np.stack([a, b], 1), axis=0, return_inverse=True, return_counts=True)
    assert g.keys.tolist() == keys.tolist() and g.inverse.tolist() == inv.reshape(-1).tolist()
    assert g.count.tolist() == cnt.tolist()


def test_group_by_sparse_keys_fall_back_to_sort(monkeypatch):
    monkeypatch.setattr(grouping, "DENSE_LIMIT", 4)
    g = group_by(np.array([10**12, 5, 10**12]))
    assert g.keys[:, 0].tolist() == [5, 10**12] and g.inverse.tolist() == [1, 0, 1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=400), st.integers(1, 80))
def test_small_unique(values, block):
    v = np.array(values, dtype=np.int64)
    old = grouping.BLOCK
    grouping.BLOCK = block
    try:
        assert small_unique(v).tolist() == sorted(set(values))
        mask = v % 2 == 0
        assert small_unique(v, mask).tolist() == sorted({x for x in values if x % 2 == 0})
    finally:
        grouping.BLOCK = old


@pytest.mark.parametrize("sorted_ts", [True, False])
@pytest.mark.parametrize("dense", [True, False])
def test_statistics_match_naive(monkeypatch, sorted_ts, dense):
    monkeypatch.setattr(grouping, "BLOCK", 101)
    if not dense:
        monkeypatch.setattr(grouping, "DENSE_STATS", 0)
    ev = random_events(sorted_ts=sorted_ts)
    s = ev.strings
    # device kernels (there are some): their core type is what their args name, here nothing ("N/A")
    rows = np.flatnonzero(ev["kind"] == int(EventKind.KERNEL))
    want = {(s[k[0]], "N/A", str(k[1])): (len(d), round(sum(d) / 1e3, 3), round(min(d) / 1e3, 3),
                                           round(max(d) / 1e3, 3))
            for k, d in naive_groups(ev, rows, ("type", "device")).items()}
    got = {(r["OP Type"], r["Core Type"], r["Device_id"]): (r["Count"], r["Total Time(us)"], r["Min Time(us)"],
                                                            r["Max Time(us)"]) for r in OPS.op_statistic(ev).records()}
    assert got == want
    totals = [r["Total Time(us)"] for r in OPS.op_statistic(ev).records()]
    assert totals == sorted(totals, reverse=True)
    rows = np.flatnonzero(ev["kind"] == int(EventKind.API))
    naive = naive_groups(ev, rows, ("type", "name", "device"))
    got = {(r["Level"], r["API Name"]): (r["Count"], r["Variance"]) for r in HS.api_statistic(ev).records()}
    assert got == {(s[k[0]], s[k[1]]): (len(d), round(float(np.var(np.array(d) / 1e3)), 3)) for k, d in naive.items()}
    rows = np.flatnonzero(ev["kind"] == int(EventKind.RANGE))
    got = {(r["Name"], r["Domain"]): r["Count"] for r in HS.range_statistic(ev).records()}
    assert got == {(s[k[0]], s[k[1]] or "default"): len(d) for k, d in naive_groups(ev, rows, ("name", "type")).items()}


@pytest.mark.parametrize("sorted_ts", [True, False])
@pytest.mark.parametrize("block", [None, 89])
def test_step_assignment_and_step_trace_match_naive(monkeypatch, sorted_ts, block):
    if block:
        from npuprof.analysis import intervals

        monkeypatch.setattr(intervals, "BLOCK", block)
        monkeypatch.setattr(SB, "BLOCK", block)
    ev = random_events(sorted_ts=sorted_ts)
    numbers, starts, ends = ST.step_spans(ev)
    for i in range(len(ev)):
        t = int(ev["ts"][i])
        inside = [int(n) for n, a, b in zip(numbers, starts, ends) if a <= t < b]
        assert int(ev["step"][i]) == (inside[-1] if inside else -1)
    comp = ev["kind"] == int(EventKind.KERNEL)
    comm = ev["kind"] == int(EventKind.COMM)
    rows = SB.step_trace(ev).records()

    def covered(mask, a, b):
        out = set()
        for i in np.flatnonzero(mask):
            t0, t1 = int(ev["ts"][i]), int(ev["ts"][i] + ev["dur"][i])
            if a <= t0 < b:
                out.update(range(t0, min(t1, b)))
        return out

    next_starts = list(starts[1:]) + [2**62]
    busy = comp | comm
    for r, a, b, nxt in zip(rows, starts, ends, next_starts):
        # a step with device work (kernels; the random COMM events are host-side) is measured over the
        # first start .. last end of the compute and communication events starting in it
        mine = [i for i in np.flatnonzero(busy) if a <= int(ev["ts"][i]) < b]
        on_device = any(comp[i] for i in mine)
        wa = min(int(ev["ts"][i]) for i in mine) if on_device else a
        wb = min(max(int(ev["ts"][i] + ev["dur"][i]) for i in mine), nxt) if on_device else b
        c, m = covered(comp, wa, wb), covered(comm, wa, wb)
        assert r["Computing"] == round(len(c) / 1e3, 3)
        assert r["Communication"] == round(len(m) / 1e3, 3)
        assert r["Overlapped"] == round(len(c & m) / 1e3, 3)
        assert r["Stage"] == round((wb - wa) / 1e3, 3)
        assert r["Free"] == round((wb - wa - len(c | m)) / 1e3, 3)
        assert r["Preparing"] == round(((wa if on_device else (min(c) if c else b)) - a) / 1e3, 3)


@pytest.mark.parametrize("sorted_ts", [True, False])
@pytest.mark.parametrize("few_queues", [True, False])
@pytest.mark.parametrize("block", [None, 97])
def test_kernel_details_rows_and_wait_times(monkeypatch, sorted_ts, few_queues, block):
    if not few_queues:
        monkeypatch.setattr(OPS, "FEW_QUEUES", 0)   # the radix-sort path
    if block:
        monkeypatch.setattr(OPS, "BLOCK", block)    # queue state carried across blocks
        monkeypatch.setattr(ROWS, "BLOCK", block)
    ev = random_events(sorted_ts=sorted_ts)
    table = OPS.kernel_details(ev)
    kern = [i for i in range(len(ev)) if ev["kind"][i] == EventKind.KERNEL]
    kern.sort(key=lambda i: int(ev["ts"][i]))
    assert len(table) == len(kern)
    last_end = {}
    want = []
    for i in kern:
        q = int(ev["stream"][i])
        t, e = int(ev["ts"][i]), int(ev["ts"][i] + ev["dur"][i])
        wait = max(t - last_end[q], 0) if q in last_end else 0
        last_end[q] = e
        want.append([int(ev["step"][i]), int(ev["device"][i]), "N/A", "N/A", q, ev.strings[ev["name"][i]],
                     ev.strings[ev["type"][i]], "N/A", ("-" if t < 0 else "") + f"{abs(t) // 1000}.{abs(t) % 1000:03d}",
                     (e - t) / 1e3, wait / 1e3, "N/A"])
    got = table.rows()
    assert table.head(5) == got[:5]
    assert [r[:9] for r in got] == [w[:9] for w in want]
    assert [r[9:] for r in got] == [[round(w[9], 3), round(w[10], 3), "N/A"] for w in want]


@pytest.mark.parametrize("block_rows", [97, 1 << 20])
def test_kernel_details_csv_equals_csv_module(monkeypatch, block_rows):
    """Block after block (the run's pool laid out once), and as one block (only the strings its rows use)."""
    monkeypatch.setattr(csvfiles, "VECTOR_MIN_ROWS", 0)
    monkeypatch.setattr(csvfiles, "BLOCK_ROWS", block_rows)
    ev = random_events(5000, seed=3, kinds=[EventKind.OP, EventKind.RANGE])
    table = OPS.kernel_details(ev)
    fast = io.BytesIO()
    csvfiles.write_csv_to(fast, table)
    ref = io.StringIO()
    w = csv.writer(ref, lineterminator="\n")
    w.writerow(table.columns)
    w.writerows(table.rows())
    assert fast.getvalue().decode() == ref.getvalue()
    parsed = list(csv.reader(io.StringIO(fast.getvalue().decode())))
    assert len(parsed) == len(table) + 1 and parsed[1][table.columns.index("Name")].startswith("n")


def test_small_tables_keep_csv_module_output():
    t = OPS.op_statistic(random_events())
    ref = io.StringIO()
    csv.writer(ref, lineterminator="\n").writerows([t.columns] + t.rows())
    out = io.BytesIO()
    csvfiles.write_csv_to(out, t)
    assert out.getvalue().decode() == ref.getvalue()


def test_concat_consume_and_sorted_release():
    a = random_events(300, seed=1, sorted_ts=False)
    b = EventTable.from_records(ts=[5, 1], name=["zz", "n1, \"q\""], kind=EventKind.MARK)
    plain = EventTable.concat([a, b])
    a2 = random_events(300, seed=1, sorted_ts=False)
    b2 = EventTable.from_records(ts=[5, 1], name=["zz", "n1, \"q\""], kind=EventKind.MARK)
    consumed = EventTable.concat([a2, b2], consume=True)
    assert a2.cols == {} and b2.cols == {}
    for k in plain.cols:
        assert np.array_equal(plain.cols[k], consumed.cols[k])
    assert plain.column_strings("name") == consumed.column_strings("name")
    want = plain.sorted()
    assert want is not plain
    got = consumed.sorted(release=True)
    assert got is consumed and np.all(np.diff(got["ts"]) >= 0)
    for k in want.cols:
        assert np.array_equal(want.cols[k], got.cols[k])
    assert got.sorted() is got   # already in order: no copy


def test_sorted_release_takes_fresh_memory_for_its_first_column_only():
    """Widest first, each column after the first is gathered into memory a column before it
    left, whatever its item size (8-byte columns' memory takes the 4- and 1-byte ones)."""
    ev = random_events(400, seed=4, sorted_ts=False)
    cols = {k: np.array(v) for k, v in ev.cols.items()}
    cols["ts"] = np.random.default_rng(4).permutation(cols["ts"])
    before = dict(cols)
    want = EventTable({k: np.array(v) for k, v in cols.items()}, list(ev.strings)).sorted()
    got = EventTable(cols, list(ev.strings)).sorted(release=True)
    fresh = [k for k, c in got.cols.items() if not any(np.shares_memory(c, b) for b in before.values())]
    assert len(fresh) == 1 and got.cols[fresh[0]].dtype.itemsize == 8
    assert {c.dtype.itemsize for c in got.cols.values()} >= {1, 4, 8}
    for k in want.cols:
        assert np.array_equal(want.cols[k], got.cols[k]), k


def test_sorted_release_reuses_no_memory_two_columns_share():
    """sorted(release=True) gathers each column into the memory an earlier column left, but
    never into memory another column still holds."""
    ev = random_events(500, seed=3, sorted_ts=False)
    shared = np.array(ev.cols["name"])
    cols = {"ts": np.random.default_rng(3).permutation(ev.cols["ts"]),   # out of order: sorting gathers
            "type": shared}                                    # "type" first: its memory is the first spare
    cols.update({k: np.array(v) for k, v in ev.cols.items() if k not in cols})
    cols["args"] = shared[:]                                   # the same memory as "type", gathered last
    want = EventTable({k: np.array(v) for k, v in cols.items()}, list(ev.strings)).sorted()
    got = EventTable(cols, list(ev.strings)).sorted(release=True)
    for k in want.cols:
        assert np.array_equal(want.cols[k], got.cols[k]), k


def _with_tensor_args(ev, seed=5):
    """The same events, kernels given op_summary tensor fields in their args (some none, one unparsable)."""
    import json as _json
    rng = np.random.default_rng(seed)
    texts = ["", _json.dumps({"Input Shapes": "8,64;128,64", "Input Data Types": "FLOAT16;FLOAT16",
                              "Output Shapes": "8,128", "Output Formats": "ND"}),
             _json.dumps({"Input Shapes": "\"1\"", "Output Data Types": "FLOAT"}), "{not json \"Input ", '{"x": 1}']
    pick = rng.integers(0, len(texts), len(ev))
    args = [texts[p] if k == EventKind.KERNEL else "" for p, k in zip(pick.tolist(), ev["kind"].tolist())]
    cols = {c: ev[c] for c in ("ts", "dur", "kind", "pid", "tid", "device", "stream", "value", "step")}
    return EventTable.from_records(**cols, name=ev.column_strings("name"), type=ev.column_strings("type"),
                                   args=args), texts, pick


def test_kernel_details_gets_the_tensor_columns_its_kernels_carry(monkeypatch):
    import json as _json
    monkeypatch.setattr(csvfiles, "VECTOR_MIN_ROWS", 0)
    monkeypatch.setattr(csvfiles, "BLOCK_ROWS", 97)
    ev, texts, _ = _with_tensor_args(random_events(5000, seed=4))
    table = OPS.kernel_details(ev)
    assert table.columns[-6:] == list(EV.KERNEL_TENSOR_COLUMNS)
    kern = sorted((i for i in range(len(ev)) if ev["kind"][i] == EventKind.KERNEL), key=lambda i: int(ev["ts"][i]))
    rows = table.rows()
    for i, row in zip(kern, rows):
        text = ev.strings[ev["args"][i]]
        try:
            obj = _json.loads(text) if text else {}
        except ValueError:
            obj = {}
        assert row[-6:] == [obj.get(c, "N/A") for c in EV.KERNEL_TENSOR_COLUMNS]
    fast = io.BytesIO()
    csvfiles.write_csv_to(fast, table)
    ref = io.StringIO()
    csv.writer(ref, lineterminator="\n").writerows([table.columns] + rows)
    assert fast.getvalue().decode() == ref.getvalue()   # quoting of "8,64;128,64" and of quotes


def test_kernel_details_without_tensor_fields_keeps_its_columns():
    table = OPS.kernel_details(random_events(3000, seed=6))
    assert table.columns == OPS.KERNEL_DETAILS_COLUMNS


def test_assign_steps_sorted_path_equals_the_general_path():
    """The run-length path for a sorted table gives every event the step the bucket path gives it, on
    random steps (gaps, touching and repeated starts) and events (before, between, inside, after)."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        n_steps = int(rng.integers(1, 12))
        starts = np.sort(rng.integers(0, 10_000, n_steps))
        durs = rng.integers(0, 1_500, n_steps)
        ts = np.sort(rng.integers(-500, 12_000, int(rng.integers(1, 400))))
        kinds = [int(EventKind.STEP)] * n_steps + [int(EventKind.OP)] * len(ts)
        names = [f"ProfilerStep#{i}" for i in range(n_steps)] + ["op"] * len(ts)
        all_ts = np.concatenate([starts, ts])
        all_dur = np.concatenate([durs, np.ones(len(ts), np.int64)])
        order = np.argsort(all_ts, kind="stable")
        ev = EventTable.from_records(ts=all_ts[order], dur=all_dur[order], kind=np.array(kinds)[order],
                                     name=[names[i] for i in order.tolist()])
        shuffled = ev.select(rng.permutation(len(ev)))          # unsorted: the general path
        general = SB.assign_steps(shuffled).sorted()
        assert SB.assign_steps(ev)["step"].tolist() == general["step"].tolist()
