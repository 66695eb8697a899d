"""The device's tables: ``TASK`` joined with ``COMPUTE_TASK_INFO``, ``COMMUNICATION_TASK_INFO`` and
``COMMUNICATION_SCHEDULE_TASK_INFO`` (kernels, communication tasks, other device activity), and
``COMMUNICATION_OP`` (communication operators).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npuprof.events import EventKind
from npuprof.readers.ascend_ops import comm_op_type, op_type_of
from npuprof.readers.event_rows import args_text
from .files import group_id
from .schema import AscendDbFacts, INVALID_U32, _MAX_DEVICE
from .tables import _id_text, _ints, _link, _only, _plain, _TableAccess


@dataclass
class _Tasks:
    """What the TASK table told the later tables."""

    devices_of_op: dict = field(default_factory=dict)     # COMMUNICATION_TASK_INFO.opId -> devices
    devices_of_link: dict = field(default_factory=dict)   # connectionId -> devices
    links: set = field(default_factory=set)               # connectionIds of the tasks


class _TaskTables(_TableAccess):
    """The reader of the device tables (see the module doc)."""

    # -- device tasks -----------------------------------------------------------------------------
    def read_tasks(self, facts: AscendDbFacts) -> "_Tasks":
        """TASK joined in Python with its info tables (each optional)."""
        rows = self.select("TASK", ("startNs", "endNs"),
                           ("deviceId", "connectionId", "globalTaskId", "globalPid", "taskType", "contextId",
                            "streamId", "taskId", "modelId"))
        tasks = _Tasks()
        if rows is None:
            return tasks
        ts, dur, bad_span = self.span(rows)
        one_device = facts.devices[0] if len(facts.devices) == 1 else -1
        device, bad_dev = _ints(rows.get("deviceId"), "device", default=one_device, lo=-1, hi=_MAX_DEVICE)
        stream, bad_stream = _ints(rows.get("streamId"), "streamId", default=-1, lo=-1, hi=INVALID_U32)
        gid, bad_gid = _ints(rows.get("globalTaskId"), "globalTaskId", default=-1)
        ok = self.skip_bad(rows, bad_span, bad_dev, bad_stream, bad_gid)
        stream = np.where(stream >= (1 << 31), -1, stream).astype(np.int32)
        corr = np.array([_link(v) for v in rows.get("connectionId")], dtype=np.int64)
        pid = np.array([v if type(v) is int and 0 <= v < 1 << 62 else 0 for v in rows.get("globalPid")], np.int64)
        task_type = self.texts(rows.get("taskType"))
        compute = self.compute_info()
        comm = self.comm_task_info()
        schedule = self.schedule_info()
        gids = gid.tolist()
        kinds = np.zeros(rows.n, dtype=np.int8)      # 0 other, 1 kernel, 2 comm task, 3 scheduled comm
        for i, g in enumerate(gids):
            if not ok[i]:
                kinds[i] = -1
            elif g in compute:
                kinds[i] = 1
            elif g in comm:
                kinds[i] = 2
            elif g in schedule:
                kinds[i] = 3
        model, task_id, context = rows.get("modelId"), rows.get("taskId"), rows.get("contextId")
        for c, d, k in zip(corr.tolist(), device.tolist(), ok.tolist()):
            if k and c >= 0:
                tasks.devices_of_link.setdefault(c, set()).add(d)
        tasks.links = {c for c, k in zip(corr.tolist(), ok.tolist()) if k and c >= 0}

        # kernels
        sel = np.flatnonzero(kinds == 1)
        names, types, args = [], [], []
        for i in sel.tolist():
            info = dict(compute[gids[i]])
            name = info.pop("_name")
            op_type = info.pop("_op_type") or op_type_of(name)
            a = {"Model ID": _id_text(model[i]), "Task ID": _id_text(task_id[i])}
            a.update(info)
            a.setdefault("Accelerator Core", task_type[i])
            if task_type[i]:
                a["device_task_type"] = task_type[i]    # TASK's own type (KERNEL_AIVEC ...), for writers
            a["Context ID"] = _id_text(context[i])
            names.append(name)
            types.append(op_type)
            args.append(args_text({k: v for k, v in a.items() if v is not None}))
        self.out.add(EventKind.KERNEL, ts[sel], dur[sel], names, types, pid=pid[sel], tid=np.maximum(stream[sel], 0),
                     device=device[sel], stream=stream[sel], args=args, corr=corr[sel])

        # communication tasks: the group and op type of their operator (by opId), else their own
        op_of = self.comm_op_types()
        sel = np.flatnonzero(kinds == 2)
        names, types, args = [], [], []
        for i in sel.tolist():
            info = dict(comm[gids[i]])
            op_id = info.pop("_op_id")
            op_name = info.pop("_op_name")
            names.append(info.get("task_type") or task_type[i])
            types.append(op_of.get(op_id) or comm_op_type(op_name) or "hcom")
            info["Task ID"] = _id_text(task_id[i])
            args.append(args_text({k: v for k, v in info.items() if v is not None}))
            if op_id is not None:
                tasks.devices_of_op.setdefault(op_id, set()).add(int(device[i]))
        self.out.add(EventKind.COMM, ts[sel], dur[sel], names, types, pid=pid[sel], tid=np.maximum(stream[sel], 0),
                     device=device[sel], stream=stream[sel], args=args, corr=corr[sel])

        sel = np.flatnonzero(kinds == 3)
        names, types, args = [], [], []
        for i in sel.tolist():
            name, op_type, ttype = schedule[gids[i]]
            names.append(name)
            types.append(op_type or comm_op_type(name))
            args.append(args_text({"task_type": ttype or task_type[i], "Task ID": _id_text(task_id[i])}))
        self.out.add(EventKind.COMM, ts[sel], dur[sel], names, types, pid=pid[sel], tid=np.maximum(stream[sel], 0),
                     device=device[sel], stream=stream[sel], args=args, corr=corr[sel])

        sel = np.flatnonzero(kinds == 0)
        args = [args_text({"Task Type": task_type[i], "Task ID": _id_text(task_id[i])}) for i in sel.tolist()]
        self.out.add(EventKind.RANGE, ts[sel], dur[sel], [task_type[i] for i in sel.tolist()], "device_task",
                     pid=pid[sel], tid=np.maximum(stream[sel], 0), device=device[sel], stream=stream[sel], args=args,
                     corr=corr[sel])
        return tasks

    def compute_info(self) -> dict:
        """globalTaskId -> kernel_details columns of COMPUTE_TASK_INFO (plus ``_name``, ``_op_type``)."""
        rows = self.select("COMPUTE_TASK_INFO", ("globalTaskId",),
                           ("name", "opType", "taskType", ("blockDim", "block_dim", "blockNum"), "mixBlockDim",
                            "opState", "hf32Eligible", "inputShapes", "inputDataTypes", "inputFormats",
                            "outputShapes", "outputDataTypes", "outputFormats", "waitNs"))
        if rows is None:
            return {}
        g, bad = _ints(rows.get("globalTaskId"), "globalTaskId")
        ok = self.skip_bad(rows, bad)
        has = set(rows.cols)
        text_cols = [(c, col) for c, col in (("OP State", "opState"), ("HF32 Eligible", "hf32Eligible"),
                                             ("Input Shapes", "inputShapes"), ("Input Data Types", "inputDataTypes"),
                                             ("Input Formats", "inputFormats"), ("Output Shapes", "outputShapes"),
                                             ("Output Data Types", "outputDataTypes"),
                                             ("Output Formats", "outputFormats")) if col in has]
        names, op_types, cores = (self.texts(rows.get(c)) for c in ("name", "opType", "taskType"))
        block, mix, wait = rows.get("blockDim"), rows.get("mixBlockDim"), rows.get("waitNs")
        texts = {col: self.texts(rows.get(col)) for _, col in text_cols}
        out = {}
        for i, gid in enumerate(g.tolist()):
            if not ok[i]:
                continue
            info: dict = {"_name": names[i], "_op_type": op_types[i]}
            if cores[i]:
                info["Accelerator Core"] = cores[i]
            if "blockDim" in has:
                info["Block Dim"] = _id_text(block[i])
            if "mixBlockDim" in has:
                info["Mix Block Dim"] = _id_text(mix[i])
            if "waitNs" in has and type(wait[i]) in (int, float) and wait[i] >= 0:
                info["Wait Time(us)"] = f"{wait[i] / 1000.0:.3f}"
            for column, col in text_cols:
                value = texts[col][i]
                info[column] = value if value != "" else "N/A"
            out[gid] = info
        return out

    def comm_task_info(self) -> dict:
        """globalTaskId -> communication-task args (the npuprof.analysis.rank_communication convention, plus ``_op_*``)."""
        rows = self.select("COMMUNICATION_TASK_INFO", ("globalTaskId",),
                           ("name", "taskType", "groupName", "opId", "srcRank", "dstRank", "transportType",
                            "linkType", "size", "notifyId", "planeId", "rdmaType", "dataType", "isMaster"))
        if rows is None:
            return {}
        g, bad = _ints(rows.get("globalTaskId"), "globalTaskId")
        ok = self.skip_bad(rows, bad)
        transports = self.enum("ENUM_HCCL_TRANSPORT_TYPE", {})
        links = self.enum("ENUM_HCCL_LINK_TYPE", {})
        rdma_types = self.enum("ENUM_HCCL_RDMA_TYPE", {})
        rdma, master = rows.get("rdmaType"), rows.get("isMaster")
        names, ttypes, groups = (self.texts(rows.get(c)) for c in ("name", "taskType", "groupName"))
        src, dst, size, op_id = rows.get("srcRank"), rows.get("dstRank"), rows.get("size"), rows.get("opId")
        tt, lt, notify, plane = rows.get("transportType"), rows.get("linkType"), rows.get("notifyId"), \
            rows.get("planeId")
        out = {}
        for i, gid in enumerate(g.tolist()):
            if not ok[i]:
                continue
            info: dict = {"_op_id": op_id[i] if type(op_id[i]) is int else None, "_op_name": names[i],
                          "task_type": ttypes[i], "notify_id": _plain(notify[i]),
                          "plane_id": plane[i] if type(plane[i]) is int else None}
            if groups[i]:
                info["group"] = group_id(groups[i])
                info["group_name"] = groups[i]
            s, d = src[i], dst[i]
            if type(s) is int and type(d) is int and 0 <= s and 0 <= d:   # as recorded, 0xFFFFFFFF included
                transport = transports.get(tt[i], "") if type(tt[i]) is int else self.text(tt[i])
                link = links.get(lt[i], "") if type(lt[i]) is int else self.text(lt[i])
                link = "" if link in ("N/A", "INVALID_TYPE") else link
                info.update({"src_rank": s, "dst_rank": d, "size": size[i] if type(size[i]) is int else 0,
                             "link_type": link, "transport_type": transport})
                if s < INVALID_U32 and d < INVALID_U32:
                    info["transport"] = "RDMA" if transport == "RDMA" else ("LOCAL" if s == d else (link or transport))
            kind = rdma_types.get(rdma[i], "") if type(rdma[i]) is int else self.text(rdma[i])
            if kind and kind not in ("N/A", "INVALID_TYPE"):
                info["rdma_type"] = kind
            if type(master[i]) is int:
                info["is_master"] = master[i]
            out[gid] = info
        return out

    def schedule_info(self) -> dict:
        """globalTaskId -> (name, op type, task type) of COMMUNICATION_SCHEDULE_TASK_INFO."""
        rows = self.select("COMMUNICATION_SCHEDULE_TASK_INFO", ("globalTaskId",), ("name", "opType", "taskType"))
        if rows is None:
            return {}
        g, bad = _ints(rows.get("globalTaskId"), "globalTaskId")
        ok = self.skip_bad(rows, bad)
        names, ops, ttypes = (self.texts(rows.get(c)) for c in ("name", "opType", "taskType"))
        return {gid: (names[i], ops[i], ttypes[i]) for i, gid in enumerate(g.tolist()) if ok[i]}

    def comm_op_types(self) -> dict:
        """opId -> op type of COMMUNICATION_OP (for its tasks)."""
        if "COMMUNICATION_OP" not in self.tables or not {"opId", "opName"} <= set(self.columns("COMMUNICATION_OP")):
            return {}
        cols = self.columns("COMMUNICATION_OP")
        sql = 'SELECT "opId", "opName"' + (', "opType"' if "opType" in cols else ", NULL") + ' FROM "COMMUNICATION_OP"'
        out = {}
        for op_id, name, op_type in self.con.execute(sql):
            if type(op_id) is int:
                out[op_id] = self.text(op_type) or comm_op_type(self.text(name))
        return out

    def read_comm_ops(self, tasks: "_Tasks", facts: AscendDbFacts) -> None:
        """COMMUNICATION_OP -> COMM operators on the device their tasks ran on."""
        rows = self.select("COMMUNICATION_OP", ("startNs", "endNs", "opName"),
                           ("opType", "groupName", "opId", "connectionId", "deviceId", "algType", "dataType",
                            "count", "waitNs", "relay", "retry"))
        if rows is None:
            return
        ts, dur, bad_span = self.span(rows)
        has_device = "deviceId" in rows.cols
        device_col, bad_dev = _ints(rows.get("deviceId"), "device", default=-1, lo=-1, hi=_MAX_DEVICE)
        ok = self.skip_bad(rows, bad_span, bad_dev if has_device else [None] * rows.n)
        names, op_types, groups, algs = (self.texts(rows.get(c)) for c in ("opName", "opType", "groupName",
                                                                            "algType"))
        data_types = self.enum("ENUM_HCCL_DATA_TYPE", {})
        dtypes = [data_types.get(v, str(v)) if type(v) is int else self.text(v) for v in rows.get("dataType")]
        corr = np.array([_link(v) for v in rows.get("connectionId")], dtype=np.int64)
        op_ids, counts, waits = rows.get("opId"), rows.get("count"), rows.get("waitNs")
        one_device = facts.devices[0] if len(facts.devices) == 1 else -1
        device = np.full(rows.n, -1, dtype=np.int64)
        unplaced = 0
        for i in range(rows.n):
            if not ok[i]:
                continue
            d = int(device_col[i]) if has_device else -1
            if d < 0:
                d = _only(tasks.devices_of_op.get(op_ids[i])) if type(op_ids[i]) is int else -1
            if d < 0 and corr[i] >= 0:
                d = _only(tasks.devices_of_link.get(int(corr[i])))
            if d < 0:
                d = one_device
            unplaced += d < 0
            device[i] = d
        if unplaced:
            self.note(f"{self.path}: {unplaced} communication operator(s) of table COMMUNICATION_OP have no device "
                      "(no deviceId column, no task on one device); read as host events")
        sel = np.flatnonzero(ok)
        args, types = [], []
        for i in sel.tolist():
            a: dict = {"Accelerator Core": "HCCL"}
            if groups[i]:
                a["group"] = group_id(groups[i])
                a["group_name"] = groups[i]
            if algs[i]:
                a["alg_type"] = algs[i]
            if dtypes[i]:
                a["data_type"] = dtypes[i]
            if counts[i] is not None:
                a["count"] = _plain(counts[i])
            if type(waits[i]) in (int, float) and waits[i] >= 0:
                a["Wait Time(us)"] = f"{waits[i] / 1000.0:.3f}"
            if corr[i] >= 0:
                a["connection_id"] = int(corr[i])
            args.append(args_text(a))
            types.append(op_types[i] or comm_op_type(names[i]))
        self.out.add(EventKind.COMM, ts[sel], dur[sel], [names[i] for i in sel.tolist()], types,
                     device=device[sel], args=args, corr=corr[sel])
