"""The analysis database beside the Ascend profiler database: ``StepTraceTime`` and ``CommAnalyzer*``.

torch_npu writes it as ``analysis.db`` next to ``ascend_pytorch_profiler_{rank}.db``;
msprof-analyze looks for it as ``communication_analyzer.db`` in a MindSpore
layout run, so the name follows :func:`npuprof.export.ascend_db_writer.db_framework`.
Contents, as torch_npu's files have them:

* ``StepTraceTime``: npuprof's ``step_trace_time`` table (µs), one row per step;
* ``CommAnalyzerTime`` / ``CommAnalyzerBandwidth`` / ``CommAnalyzerMatrix``:
  the rank's ``communication.json`` / ``communication_matrix.json`` contents
  (same definitions, :mod:`npuprof.analysis.rank_communication`) in rows; ``group_name``
  is the group's id as torch_npu writes it (:func:`npuprof.readers.ascend_db.group_id`:
  the hash of the group's name; an id is kept as it is), times in ms, sizes in MB, bandwidths in GB/s. Written only when the run has communication.

Example::

    path = write_analysis_db(result, out_dir)     # out_dir/communication_analyzer.db
"""
from __future__ import annotations

from pathlib import Path

from ..analysis.result import AnalysisResult
from ..analysis.table import python_values
from ..readers.ascend_db import group_id
from .ascend_db_writer import db_framework
from .sqlite_db import building_db, create_table, insert_rows

STEP_TRACE_TIME = [("step", "TEXT"), ("computing", "NUMERIC"), ("communication_not_overlapped", "NUMERIC"),
                   ("overlapped", "NUMERIC"), ("communication", "NUMERIC"), ("free", "NUMERIC"), ("stage", "NUMERIC"),
                   ("bubble", "NUMERIC"), ("communication_not_overlapped_and_exclude_receive", "NUMERIC"),
                   ("preparing", "NUMERIC")]
STEP_TRACE_SOURCE = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                     "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
COMM_TIME = [("hccl_op_name", "TEXT"), ("group_name", "TEXT"), ("start_timestamp", "NUMERIC"),
             ("elapse_time", "NUMERIC"), ("transit_time", "NUMERIC"), ("wait_time", "NUMERIC"),
             ("synchronization_time", "NUMERIC"), ("idle_time", "NUMERIC"), ("step", "TEXT"), ("type", "TEXT")]
COMM_BANDWIDTH = [("hccl_op_name", "TEXT"), ("group_name", "TEXT"), ("transport_type", "TEXT"),
                  ("transit_size", "NUMERIC"), ("transit_time", "NUMERIC"), ("bandwidth", "NUMERIC"),
                  ("large_packet_ratio", "NUMERIC"), ("package_size", "NUMERIC"), ("count", "NUMERIC"),
                  ("total_duration", "NUMERIC"), ("step", "TEXT"), ("type", "TEXT")]
COMM_MATRIX = [("hccl_op_name", "TEXT"), ("group_name", "TEXT"), ("src_rank", "TEXT"), ("dst_rank", "TEXT"),
               ("transport_type", "TEXT"), ("transit_size", "NUMERIC"), ("transit_time", "NUMERIC"),
               ("bandwidth", "NUMERIC"), ("step", "TEXT"), ("type", "TEXT"), ("op_name", "TEXT")]
TOTAL = "Total Op Info"


def analysis_db_name(result: AnalysisResult) -> str:
    return "analysis.db" if db_framework(result) == "pytorch" else "communication_analyzer.db"


def _split(op_key: str) -> tuple[str, str]:
    name, _, group = op_key.rpartition("@")
    return (name, group) if name else (op_key, "")


def write_analysis_db(result: AnalysisResult, out_dir: Path) -> Path:
    """Write ``out_dir/{analysis|communication_analyzer}.db`` (temporary name, then renamed); its path."""
    path = Path(out_dir) / analysis_db_name(result)
    with building_db(path) as con:
        create_table(con, "StepTraceTime", STEP_TRACE_TIME)
        steps = result.tables.get("step_trace_time")
        if steps is not None and len(steps):
            cols = [python_values(steps.block(0, len(steps))[c]) for c in STEP_TRACE_SOURCE]
            insert_rows(con, "StepTraceTime", len(STEP_TRACE_TIME),
                        [(str(r[0]), *r[1:]) for r in zip(*cols)])
        _write_communication(con, result)
    return path


def _matrix_per_op(comm) -> list:
    """CommAnalyzerMatrix rows of the MindSpore layout: links summed per operator instance and src-dst."""
    from ..analysis.rank_communication import MB, is_p2p, link_owners, op_instance_names, step_key

    owner = link_owners(comm)
    names = op_instance_names(comm)
    agg: dict = {}
    for i in range(len(comm.links["ts"])):
        o = int(owner[i])
        if o < 0:
            continue
        name, group = _split(names[o])
        kind = "p2p" if is_p2p(str(comm.ops["type"][o])) else "collective"
        key = (step_key(int(comm.ops["step"][o])), kind, name, group, int(comm.links["src"][i]),
               int(comm.links["dst"][i]))
        a = agg.setdefault(key, [str(comm.links["transport"][i]), 0.0, 0.0])
        a[1] += float(comm.links["size"][i]) / MB
        a[2] += float(comm.links["dur"][i]) / 1e6
    return [(name, group_id(group), str(src), str(dst), tr, round(s_mb, 6), round(t_ms, 6),
             round(s_mb / t_ms, 4) if t_ms > 0 else 0, step, kind)   # GB/s = MB / ms (MB of 10^6)
            for (step, kind, name, group, src, dst), (tr, s_mb, t_ms) in agg.items()]


def _write_communication(con, result: AnalysisResult) -> None:
    # the same definitions as the rank's communication.json (the cluster layer owns them; imported here, not copied)
    from ..analysis.rank_communication import comm_events, communication_json, communication_matrix_json

    pytorch_layout = db_framework(result) == "pytorch"

    comm = comm_events(result.events)
    if not comm.has_ops:
        return
    times, bandwidths, matrix = [], [], []
    for step, kinds in communication_json(comm).items():
        for kind, ops in kinds.items():
            for key, op in ops.items():
                if key == TOTAL:
                    continue
                name, group = _split(key)
                t = op["Communication Time Info"]
                gid = group_id(group)
                times.append((name, gid, t["Start Timestamp(us)"], t["Elapse Time(ms)"], t["Transit Time(ms)"],
                              t["Wait Time(ms)"], t["Synchronization Time(ms)"], t["Idle Time(ms)"], step, kind))
                for transport, bw in op["Communication Bandwidth Info"].items():
                    if not bw["Transit Size(MB)"] and not bw["Size Distribution"]:
                        continue     # torch_npu writes no row for a transport the operator did not use
                    sizes = bw["Size Distribution"].items() or [("0", (0, 0))]
                    for size, (count, duration) in sizes:
                        bandwidths.append((name, gid, transport, bw["Transit Size(MB)"], bw["Transit Time(ms)"],
                                           bw["Bandwidth(GB/s)"], bw["Large Packet Ratio"], float(size), count,
                                           duration, step, kind))
    if pytorch_layout:   # torch_npu: per op type, the link's task in op_name
        for step, kinds in communication_matrix_json(comm).items():
            for kind, ops in kinds.items():
                for key, links in ops.items():
                    name, group = _split(key)
                    for link, v in links.items():
                        src, _, dst = link.partition("-")
                        matrix.append((name, group_id(group), src, dst, v["Transport Type"], v["Transit Size(MB)"],
                                       v["Transit Time(ms)"], v["Bandwidth(GB/s)"], step, kind, v.get("Op Name", "")))
    else:                # MindSpore/msprof: per operator instance, no op_name column
        matrix = _matrix_per_op(comm)
    matrix_columns = COMM_MATRIX if pytorch_layout else COMM_MATRIX[:-1]
    for table, columns, rows in (("CommAnalyzerTime", COMM_TIME, times),
                                 ("CommAnalyzerBandwidth", COMM_BANDWIDTH, bandwidths),
                                 ("CommAnalyzerMatrix", matrix_columns, matrix)):
        create_table(con, table, columns)
        insert_rows(con, table, len(columns), rows)
