"""Operators and HCCL tasks as the Ascend tools name and describe them: a device task's op type from its
name (:func:`op_type_of`, :func:`comm_op_type`) and an HCCL task's args in npuprof's convention
(:func:`hccl_task_args`), shared by the readers of the tools' text, timeline and database outputs.

Example::

    >>> op_type_of("Default/network/MatMul-op3"), comm_op_type("hcom_allReduce__586_0_1")
    ('MatMul', 'hcom_allReduce_')
"""
from __future__ import annotations

import re
from typing import Any

COMM_CORES = {"HCCL", "COMMUNICATION"}
_OP_SUFFIX_RE = re.compile(r"-op\d+$")
_HCOM_INSTANCE_RE = re.compile(r"(_\d+)+$")         # hcom_allReduce__586_0_1 -> hcom_allReduce_
INVALID_RANK = 4294967295                            # msprof's "no peer" (uint32 max)


def op_type_of(full_name: str) -> str:
    """The op type of a device task named without a type: the leaf of a
    scoped name without its ``-opN`` suffix (MindSpore's naming).

    Example::

        >>> op_type_of("Gradients/Default/fc1-Dense/gradMatMul/MatMul-op12")
        'MatMul'
    """
    leaf = full_name.rsplit("/", 1)[-1]
    return _OP_SUFFIX_RE.sub("", leaf) or leaf


def comm_op_type(name: str) -> str:
    """The op type of an HCCL operator instance, as kernel_details names it.

    Example::

        >>> comm_op_type("hcom_allReduce__586_0_1")
        'hcom_allReduce_'
    """
    return _HCOM_INSTANCE_RE.sub("", name) or name


def int_or(text: Any, default: int) -> int:
    """An integer the tools wrote as a number or as decimal text; ``default`` for None or anything else.

    Example::

        >>> int_or(" 7", -1), int_or(3, -1), int_or("x", -1), int_or(None, 0)
        (7, 3, -1, 0)
    """
    if text is None:
        return default
    if isinstance(text, int):
        return text
    try:
        return int(str(text).strip())
    except ValueError:
        return default


def is_comm_task(args: dict) -> bool:
    """An HCCL task (Notify, Memcpy, Reduce ...) rather than an operator."""
    return "task type" in args or "src rank" in args or "dst rank" in args


def hccl_task_args(raw: dict, group: str) -> dict:
    """An HCCL task's args in :mod:`npuprof.analysis.rank_communication`'s convention (plus the tool's own keys)."""
    src, dst = int_or(raw.get("src rank"), -1), int_or(raw.get("dst rank"), -1)
    out: dict = {"group": group, "task_type": str(raw.get("task type", "")),
                 "Task ID": raw.get("task id"), "notify_id": raw.get("notify_id")}
    transport = str(raw.get("transport type", ""))
    link = str(raw.get("link type", ""))
    if src >= 0:      # kept as recorded, 0xFFFFFFFF ("no peer") included: the analysis needs every transfer
        out.update({"src_rank": src, "dst_rank": dst, "size": int_or(raw.get("size(Byte)"), 0),
                    "link_type": link, "transport_type": transport})
        if 0 <= src < INVALID_RANK and 0 <= dst < INVALID_RANK:
            out["transport"] = "RDMA" if transport == "RDMA" else ("LOCAL" if src == dst else (link or transport))
    if raw.get("rdma type"):
        out["rdma_type"] = str(raw["rdma type"])
    return {k: v for k, v in out.items() if v is not None}
