"""The host's tables: ``CANN_API``, ``STEP_TIME``, the framework's ``PYTORCH_API`` with its
``CONNECTION_IDS`` (which launch each framework op links to), and ``MSTX_EVENTS``.
"""
from __future__ import annotations


import numpy as np

from npuprof.events import EventKind
from npuprof.readers.event_rows import args_text
from .schema import MSTX_TYPES, _STEP_RE
from .tables import _ints, _link, _pid_tid, _TableAccess
from .tasks import _Tasks


class _ApiTables(_TableAccess):
    """The reader of the host tables (see the module doc)."""

    # -- host and communication operators ---------------------------------------------------------
    def read_cann_api(self) -> set:
        """CANN_API -> API events; returns the connection ids they carry."""
        rows = self.select("CANN_API", ("startNs", "endNs", "name"), ("type", "globalTid", "connectionId"))
        if rows is None:
            return set()
        ts, dur, bad_span = self.span(rows)
        ok = self.skip_bad(rows, bad_span)
        sel = np.flatnonzero(ok)
        names = self.texts(rows.get("name"))
        levels = [self.api_types.get(t, str(t)) if type(t) is int else self.text(t) for t in rows.get("type")]
        pid, tid = _pid_tid(rows.get("globalTid"))
        corr = np.array([_link(v) for v in rows.get("connectionId")], dtype=np.int64)
        self.out.add(EventKind.API, ts[sel], dur[sel], [names[i] for i in sel.tolist()],
                     [levels[i] for i in sel.tolist()], pid=pid[sel], tid=tid[sel], corr=corr[sel])
        return {int(c) for c in corr[sel].tolist() if c >= 0}

    def read_step_time(self) -> bool:
        """STEP_TIME -> STEP events; True when the table gave steps."""
        rows = self.select("STEP_TIME", ("id", "startNs", "endNs"))
        if rows is None or not rows.n:
            return False
        ts, dur, bad_span = self.span(rows)
        ids, bad_id = _ints(rows.get("id"), "id", lo=-(1 << 31), hi=(1 << 31) - 1)
        ok = self.skip_bad(rows, bad_span, bad_id)
        sel = np.flatnonzero(ok)
        self.out.add(EventKind.STEP, ts[sel], dur[sel], [f"ProfilerStep#{i}" for i in ids[sel].tolist()],
                     "ProfilerStep", step=ids[sel].astype(np.int32))
        return bool(len(sel))

    def read_framework_api(self, tasks: "_Tasks", cann_links: set, steps_given: bool) -> None:
        """PYTORCH_API -> OP / RANGE / STACK / MARK (and STEP without STEP_TIME)."""
        rows = self.select("PYTORCH_API", ("startNs", "endNs", "name"), ("type", "globalTid", "connectionId"))
        if rows is None:
            return
        ts, dur, bad_span = self.span(rows)
        ok = self.skip_bad(rows, bad_span)
        names = self.texts(rows.get("name"))
        kinds = [self.api_types.get(t, "") if type(t) is int else self.text(t) for t in rows.get("type")]
        pid, tid = _pid_tid(rows.get("globalTid"))
        links_of = self.connection_links(rows.get("connectionId"))
        launches = self.op_launches(links_of, tasks.links - cann_links)
        groups: dict[tuple, list[int]] = {}
        steps: list[int] = []
        for i in np.flatnonzero(ok).tolist():
            step = _STEP_RE.match(names[i])
            if step:
                if not steps_given:
                    steps.append(i)
                continue
            kind = kinds[i]
            if kind == "trace":
                key = (EventKind.STACK, "python_function")
            elif kind == "queue":
                key = (EventKind.RANGE, names[i].split("@", 1)[0].lower() or "queue")
            elif kind == "mstx":
                key = (EventKind.RANGE if dur[i] > 0 else EventKind.MARK, "mstx")
            elif kind == "op" or not kind:
                key = (EventKind.OP, "")
            else:
                key = (EventKind.RANGE, kind)
            groups.setdefault(key, []).append(i)
        for (kind, type_), idx in groups.items():
            sel = np.array(idx, dtype=np.int64)
            chosen = [names[i] for i in idx]
            corr = [launches.get(i, -1) for i in idx] if kind == EventKind.OP else [-1] * len(idx)
            # the links the event's corr does not hold (launches a CANN API carries): kept for writers
            extra = [[c for c in links_of.get(i, ()) if c != own] for i, own in zip(idx, corr)]
            self.out.add(kind, ts[sel], dur[sel], chosen, chosen if kind == EventKind.OP else type_,
                         pid=pid[sel], tid=tid[sel], corr=np.array(corr, np.int64),
                         args=[args_text({"connection_ids": e}) if e else "" for e in extra])
        if steps:
            sel = np.array(steps, dtype=np.int64)
            numbers = [int(_STEP_RE.match(names[i]).group(1)) for i in steps]   # type: ignore[union-attr]
            self.out.add(EventKind.STEP, ts[sel], dur[sel], [f"ProfilerStep#{n}" for n in numbers], "ProfilerStep",
                         pid=pid[sel], tid=tid[sel], step=np.array(numbers, np.int32))

    def connection_links(self, connection_refs: list) -> dict[int, list[int]]:
        """Row -> every connectionId its CONNECTION_IDS reference lists, in table order."""
        if not any(v is not None for v in connection_refs):
            return {}
        rows = self.select("CONNECTION_IDS", ("id", "connectionId"))
        if rows is None:
            return {}
        by_ref: dict = {}
        for ref, link in zip(rows.cols["id"], rows.cols["connectionId"]):
            if type(ref) is int and type(link) is int and link >= 0:
                by_ref.setdefault(ref, []).append(link)
        return {i: by_ref[ref] for i, ref in enumerate(connection_refs) if ref in by_ref}

    @staticmethod
    def op_launches(links_of: dict[int, list[int]], launch_links: set) -> dict[int, int]:
        """Row -> the first of its CONNECTION_IDS links that a task carries and no CANN API does."""
        out = {}
        for row, links in links_of.items():
            chosen = next((c for c in links if c in launch_links), None)
            if chosen is not None:
                out[row] = chosen
        return out

    def read_mstx(self) -> None:
        """MSTX_EVENTS -> MARK (markers) and RANGE events, type ``mstx``."""
        rows = self.select("MSTX_EVENTS", ("startNs",), ("endNs", "eventType", "message", "globalTid", "domainId"))
        if rows is None:
            return
        ts, dur, bad_span = self.span(rows, end_optional=True)
        ok = self.skip_bad(rows, bad_span)
        types = self.enum("ENUM_MSTX_EVENT_TYPE", MSTX_TYPES)
        messages = self.texts(rows.get("message"))
        domains = self.texts(rows.get("domainId")) if "domainId" in rows.cols else [""] * rows.n
        pid, tid = _pid_tid(rows.get("globalTid"))
        etype = rows.get("eventType")
        is_mark = np.array([types.get(t, "") in ("marker", "marker_ex") if type(t) is int else False
                            for t in etype], dtype=bool)
        for mark, kind in ((True, EventKind.MARK), (False, EventKind.RANGE)):
            sel = np.flatnonzero(ok & (is_mark == mark))
            self.out.add(kind, ts[sel], dur[sel] if not mark else np.zeros(len(sel), np.int64),
                         [messages[i] for i in sel.tolist()], "mstx", pid=pid[sel], tid=tid[sel],
                         args=[args_text({"domain": domains[i]}) if domains[i] else "" for i in sel.tolist()])
