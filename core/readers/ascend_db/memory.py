"""The memory tables: ``MEMORY_RECORD``, ``OP_MEMORY``, ``NPU_MEM`` and ``NPU_MODULE_MEM``, as the
framework's memory CSVs carry them.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from npuprof.clock import ns_to_us_text
from npuprof.events import EventKind
from npuprof.readers.event_rows import args_text
from .schema import MB, MODULES
from .tables import _ints, _npu, _numeric_rows, _ptr, _TableAccess


_OP_MEMORY_TOTALS = (("allocationTotalAllocated", "Allocation Total Allocated(MB)"),
                     ("allocationTotalReserved", "Allocation Total Reserved(MB)"),
                     ("allocationTotalActive", "Allocation Total Active(MB)"),
                     ("releaseTotalAllocated", "Release Total Allocated(MB)"),
                     ("releaseTotalReserved", "Release Total Reserved(MB)"),
                     ("releaseTotalActive", "Release Total Active(MB)"))


_OP_MEMORY_TIMES = (("activeReleaseTime", "Active Release Time(us)"), ("duration", "Duration(us)"),
                    ("activeDuration", "Active Duration(us)"))


_OP_MEMORY_OPTIONAL = ("releaseTime", "deviceId", "streamPtr") + tuple(col for col, _ in _OP_MEMORY_TIMES) + \
    tuple(col for col, _ in _OP_MEMORY_TOTALS)


class _MemoryTables(_TableAccess):
    """The reader of the memory tables (see the module doc)."""

    def read_memory_record(self) -> None:
        """MEMORY_RECORD -> COUNTER series in MB, named as memory_record.csv names them; args the row's
        identity (``Component``, ``Device Type``, ``Stream Ptr``) as the text reader keeps it."""
        rows = self.select("MEMORY_RECORD", ("timestamp",),
                           ("component", "totalAllocated", "totalReserved", "totalActive", "streamPtr", "deviceId"))
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("timestamp"), "timestamp")
        ok = self.skip_bad(rows, bad_ts)
        comps = self.texts(rows.get("component"))
        devs = rows.get("deviceId")
        who = [f"{c} NPU:{d}".strip() if type(d) is int and d >= 0 else c for c, d in zip(comps, devs)]
        args = [args_text({k: v for k, v in (("Component", c), ("Device Type", _npu(d)), ("Stream Ptr", _ptr(p)))
                            if v}) for c, d, p in zip(comps, devs, rows.get("streamPtr"))]
        for col, series in (("totalAllocated", "Total Allocated(MB)"), ("totalReserved", "Total Reserved(MB)"),
                            ("totalActive", "Total Active(MB)")):
            if col in rows.cols:
                self._add_series(ts, ok, rows.cols[col], lambda i: f"{who[i]} {series}", "memory", args, MB)

    def read_op_memory(self) -> None:
        """OP_MEMORY -> one MEMORY event per allocation, as operator_memory.csv rows are read
        (``dur`` the lifetime, 0 with no release; the row's other cells in args under the csv's
        names: times in exact µs text, totals in MB)."""
        rows = self.select("OP_MEMORY", ("name", "size", "allocationTime"), _OP_MEMORY_OPTIONAL)
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("allocationTime"), "allocationTime")
        ok = self.skip_bad(rows, bad_ts)
        idx = _numeric_rows(ok, rows.cols["size"])
        if not idx:
            return
        names = self.texts(rows.get("name"))
        released = rows.get("releaseTime")
        devices = rows.cols.get("deviceId") or [-1] * rows.n
        streams = rows.get("streamPtr")
        cells = {col: rows.get(col) for col, _ in _OP_MEMORY_TIMES + _OP_MEMORY_TOTALS}
        args, dur = [], []
        for i in idx:
            a: dict[str, Any] = {}
            rel = released[i]
            if type(rel) is int and rel >= ts[i]:
                a["Release Time(us)"] = ns_to_us_text(rel)
            for col, csv_name in _OP_MEMORY_TIMES:
                v = cells[col][i]
                if type(v) is int and v >= 0:
                    a[csv_name] = ns_to_us_text(v)
            for col, csv_name in _OP_MEMORY_TOTALS:
                v = cells[col][i]
                if isinstance(v, (int, float)):
                    a[csv_name] = str(v / MB)
            for csv_name, v in (("Stream Ptr", _ptr(streams[i])), ("Device Type", _npu(devices[i]))):
                if v:
                    a[csv_name] = v
            dur.append(rel - int(ts[i]) if "Release Time(us)" in a else 0)
            args.append(args_text(a))
        sel = np.array(idx, dtype=np.int64)
        self.out.add(EventKind.MEMORY, ts[sel], np.array(dur, np.int64), [names[i] for i in idx], "operator_memory",
                     device=np.array([d if type(d) is int and d >= 0 else -1 for d in (devices[i] for i in idx)],
                                     np.int16),
                     value=np.array([float(rows.cols["size"][i]) for i in idx], np.float64), args=args)

    def read_npu_mem(self) -> None:
        """NPU_MEM -> COUNTER series ``<type> NPU:<d> ddr(B)`` / ``hbm(B)`` (type ``npu_mem``; the
        sample's type and device in args, as memory_record.csv's ``APP`` rows come from its app rows)."""
        rows = self.select("NPU_MEM", ("timestampNs",), ("type", "ddr", "hbm", "deviceId"))
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("timestampNs"), "timestampNs")
        ok = self.skip_bad(rows, bad_ts)
        kinds = self.texts(rows.get("type"))
        devs = rows.get("deviceId")
        who = [f"{k} {_npu(d)}".strip() for k, d in zip(kinds, devs)]
        args = [args_text({k: v for k, v in (("Component", c), ("Device", _npu(d))) if v})
                for c, d in zip(kinds, devs)]
        for col in ("ddr", "hbm"):
            self._add_series(ts, ok, rows.get(col), lambda i: f"{who[i]} {col}(B)", "npu_mem", args)

    def read_npu_module_mem(self) -> None:
        """NPU_MODULE_MEM -> COUNTER series ``<module> NPU:<d> Total Reserved(MB)`` (type
        ``npu_module_mem``), as npu_module_mem.csv rows are read."""
        rows = self.select("NPU_MODULE_MEM", ("timestampNs", "totalReserved"), ("moduleId", "deviceId"))
        if rows is None:
            return
        ts, bad_ts = _ints(rows.get("timestampNs"), "timestampNs")
        ok = self.skip_bad(rows, bad_ts)
        modules = self.enum("ENUM_MODULE", MODULES)
        names = [modules.get(m, "" if m is None else str(m)) for m in rows.get("moduleId")]
        devs = rows.get("deviceId")
        args = [args_text({k: v for k, v in (("Component", m), ("Device", _npu(d))) if v}) for m, d in zip(names, devs)]
        self._add_series(ts, ok, rows.get("totalReserved"),
                         lambda i: f"{names[i]} {_npu(devs[i])}".strip() + " Total Reserved(MB)", "npu_module_mem",
                         args, MB)

    def _add_series(self, ts: np.ndarray, ok: np.ndarray, values: Sequence, name_of: Callable[[int], str],
                    type_: str, args: Sequence[str], scale: float = 1.0) -> None:
        """One COUNTER event per readable row whose ``values`` cell is a number (divided by ``scale``)."""
        idx = _numeric_rows(ok, values)
        self.out.add(EventKind.COUNTER, ts[np.array(idx, dtype=np.int64)], np.zeros(len(idx), np.int64),
                     [name_of(i) for i in idx], type_, value=np.array([values[i] / scale for i in idx], np.float64),
                     args=[args[i] for i in idx])
