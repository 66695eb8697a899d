"""Launch links read from the flow events of a Chrome trace.

msprof's timelines and MindSpore's ``trace_view.json`` join a host call to
the device task it launched with a flow: ``s`` on the call, ``f`` on the
task, each at its event's exact ``ts`` (``HostToDevice``: CANN node ->
hardware task; ``async_npu``: framework operator -> NPU task). Readers look
each complete event's (pid, tid, ts) up in :func:`flow_ends` to get its link
(the event table's ``corr``).

Example::

    >>> events = [{"ph": "s", "id": 7, "cat": "HostToDevice", "pid": 1, "tid": 2, "ts": "10.5"},
    ...           {"ph": "f", "id": 7, "cat": "HostToDevice", "pid": 9, "tid": 3, "ts": "12.0", "bp": "e"}]
    >>> flow_ends(events, ("HostToDevice",), lambda t: int(float(t) * 1000))
    {(1, 2, 10500): 7, (9, 3, 12000): 7}
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

# the flows that carry launch links, in the readers' order of preference: CANN node -> hardware task, then
# framework operator -> NPU task (the array-form writer writes both)
LAUNCH_FLOW_CATS = ("HostToDevice", "async_npu")


def hashable(value: Any) -> Any:
    """A dict key for a JSON value (lists and objects become their text)."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True)


def link_id(value: Any) -> int:
    """A connection id (int, or decimal text) -> ``corr``; -1 for anything else.

    Example::

        >>> link_id(17), link_id("17"), link_id(None), link_id("x"), link_id(-3), link_id(True)
        (17, 17, -1, -1, -1, -1)
    """
    if isinstance(value, bool):
        return -1
    if isinstance(value, int):
        return value if 0 <= value < 1 << 63 else -1
    if isinstance(value, float) and value.is_integer() and 0 <= value < 2.0 ** 63:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 19:
        return int(value.strip())
    return -1


def flow_ends(events: Sequence[Any], cats: Sequence[str], ts_ns: Callable[[Any], Optional[int]]) -> dict:
    """(pid, tid, ts ns) -> link id of both ends of every flow of the first category in ``cats`` the trace has.

    One category only, never a mix: a task reached by a ``HostToDevice`` and
    an ``async_npu`` flow would otherwise be tied to two calls. Flows that
    share an end share a link: a call with flows to three tasks gives all
    four events one id. A link keeps the smallest numeric flow id among its
    flows; links with none are numbered after the largest, in order of
    appearance. ``ts_ns`` turns a ``ts`` into ns (None when unreadable: that
    end is skipped).
    """
    present = {hashable(ev.get("cat")) for ev in events if isinstance(ev, dict) and ev.get("ph") in ("s", "f")}
    cat = next((c for c in cats if c in present), None)

    def ends() -> Iterator[tuple]:
        for ev in events:
            if isinstance(ev, dict) and ev.get("ph") in ("s", "f") and ev.get("cat") == cat:
                ts, fid = ts_ns(ev.get("ts")), hashable(ev.get("id"))
                if ts is not None and fid is not None:
                    yield fid, (hashable(ev.get("pid")), hashable(ev.get("tid")), ts)

    return _links(ends())


def _links(ends: Iterable[tuple]) -> dict:
    """end -> link id of the flows given as (flow id, end), flows sharing an end joined (see :func:`flow_ends`)."""
    parent: dict = {}   # flow id -> a flow id it shares an end with (union-find)

    def root(fid: Any) -> Any:
        while parent[fid] != fid:
            parent[fid] = parent[parent[fid]]
            fid = parent[fid]
        return fid

    flow_of: dict = {}   # end -> a flow id ending there
    for fid, end in ends:
        parent.setdefault(fid, fid)
        other = flow_of.setdefault(end, fid)
        parent[root(fid)] = root(other)
    numeric: dict = {}
    for fid in parent:
        n = link_id(fid)
        r = root(fid)
        if n >= 0 and (r not in numeric or n < numeric[r]):
            numeric[r] = n
    next_id = max(numeric.values(), default=-1) + 1
    link: dict = {}
    for fid in parent:   # in order of appearance
        r = root(fid)
        if r not in link:
            if r in numeric:
                link[r] = numeric[r]
            else:
                link[r], next_id = next_id, next_id + 1
    return {end: link[root(fid)] for end, fid in flow_of.items()}


def launch_category(cat: Sequence[Any], cats: Sequence[str]) -> Optional[str]:
    """The first category in ``cats`` that a flow event's ``cat`` (given as a column) has, else None: the one
    :func:`flow_ends_of_columns` reads.

    Example::

        >>> launch_category(["fwdbwd", "async_npu", "HostToDevice"], LAUNCH_FLOW_CATS)
        'HostToDevice'
    """
    try:
        present = set(cat)
    except TypeError:   # a list or an object among them (a damaged file): compared as their text
        present = set(map(hashable, cat))
    return next((c for c in cats if c in present), None)


def flow_ends_of_columns(cat: Sequence[Any], pid: Sequence[Any], tid: Sequence[Any], ts_ns: Sequence[Optional[int]],
                         ids: Sequence[Any], cats: Sequence[str]) -> dict:
    """:func:`flow_ends` of the flow events (``s``/``f`` only) given as columns, ``ts`` already in ns (None
    where unreadable): the same links, without a dict per event.

    Example::

        >>> flow_ends_of_columns(["HostToDevice"] * 2, [1, 9], [2, 3], [10500, 12000], [7, 7], ("HostToDevice",))
        {(1, 2, 10500): 7, (9, 3, 12000): 7}
    """
    chosen = launch_category(cat, cats)
    plain = (str, int)

    def ends() -> Iterator[tuple]:
        for c, p, t, ts, fid in zip(cat, pid, tid, ts_ns, ids):
            if c != chosen or ts is None:
                continue
            fid = fid if type(fid) in plain else hashable(fid)
            if fid is not None:
                yield fid, (p if type(p) in plain else hashable(p), t if type(t) in plain else hashable(t), ts)

    return _links(ends())
