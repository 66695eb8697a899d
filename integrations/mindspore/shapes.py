"""Operator input shapes from MindSpore's ``cpu_framework_{rank}.txt``.

MindSpore 2.10's CPU profiler writes this file next to the op timestamps,
with or without ``record_shapes`` (the flag only changes what MindSpore
collects on Ascend), one line per operator launch, in launch order::

    MatMul;MatMul-op0;2394893719;input_1:[8, 64];input_2:[128, 64];input_3:NoShape;input_4:NoShape;
    ;;2568957335;

i.e. ``op type;op name;graph id;input_<i>:<shape>;...``. A shape is
``[d0, d1]`` (a tensor; ``[]`` a 0-d tensor), ``NoShape`` (an input that is
not a tensor, such as MatMul's transpose flags) or ``TupleShape(a, b)``.
PyNative operators run through MindSpore's "pyboost" path (``MatMul``,
``ReLU`` without an ``-opN`` suffix) get an empty line: MindSpore records no
shapes for them.

Each line becomes the ``args`` of the launch it describes, under two keys:

``"Input Dims"``
    the torch.profiler / Kineto form (also MindSpore's own trace key):
    one entry per input, in order, ``[]`` for a non-tensor input, a list of
    entries for a tuple: ``[[8, 64], [128, 64], [], []]``;
``"Input Shapes"``
    the Ascend form of ``op_summary``/``kernel_details``/``operator_details``:
    tensor inputs only, dims joined by ``,``, tensors by ``;`` (a 0-d tensor
    is empty): ``"8,64;128,64"``.

Example::

    >>> shapes_args("MatMul;MatMul-op0;1;input_1:[8, 64];input_2:[128, 64];input_3:NoShape;")
    ('MatMul-op0', '{"Input Dims": [[8, 64], [128, 64], []], "Input Shapes": "8,64;128,64"}')
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import numpy as np

from npuprof.events import EventTable, StringPool
from npuprof.fileio import check_input_file

SHAPES_GLOB = "cpu_framework_*.txt"
INPUT_DIMS = "Input Dims"
INPUT_SHAPES = "Input Shapes"


class _Bad(ValueError):
    pass


def _parse_shape(text: str, pos: int) -> tuple[Any, list, int]:
    """One shape at ``text[pos:]`` -> (Input Dims entry, tensor shapes in it, end position)."""
    if text.startswith("[", pos):
        end = text.index("]", pos)
        body = text[pos + 1:end].strip()
        dims = [int(d) for d in body.split(",")] if body else []
        return dims, [dims], end + 1
    if text.startswith("NoShape", pos):
        return [], [], pos + len("NoShape")
    paren = text.find("(", pos)
    if paren > pos and text[pos:paren].isidentifier() and text[pos:paren].endswith("Shape"):
        items: list = []
        tensors: list = []
        pos = paren + 1
        while True:
            while pos < len(text) and text[pos] == " ":
                pos += 1
            if text.startswith(")", pos):
                return items, tensors, pos + 1
            item, ts, pos = _parse_shape(text, pos)
            items.append(item)
            tensors.extend(ts)
            if text.startswith(",", pos):
                pos += 1
    raise _Bad(text[pos:pos + 40])


def shapes_args(line: str) -> Optional[tuple[str, str]]:
    """``(op name, args JSON)`` of one ``cpu_framework`` line; ``("", "")`` for a
    line without shapes; None when the line is damaged (see module doc)."""
    fields = line.rstrip("\n").split(";")
    if len(fields) < 3:
        return None
    op_name = fields[1]
    dims: list = []
    tensors: list = []
    for field in fields[3:]:
        if not field:
            continue
        key, sep, shape = field.partition(":")
        if not sep or not key.startswith("input_"):
            return None
        try:
            item, ts, end = _parse_shape(shape, 0)
        except (_Bad, ValueError):
            return None
        if shape[end:].strip():
            return None
        dims.append(item)
        tensors.extend(ts)
    if not op_name or not dims:
        return op_name, ""
    text = ";".join(",".join(str(d) for d in t) for t in tensors)
    return op_name, json.dumps({INPUT_DIMS: dims, INPUT_SHAPES: text})


def _leaf(full_name: str) -> str:
    return full_name.rsplit("/", 1)[-1]


def attach_shapes(table: EventTable, path: Path, problems: list[str]) -> EventTable:
    """``table`` (the OP events of one ``cpu_op_execute_timestamp`` file) with
    the input shapes of ``path`` in its ``args`` column.

    The file has one line per launch in launch order, so line *i* belongs to
    the *i*-th event by start time; that is checked (each line's op name must
    be the last component of its event's full name). Launches are matched
    from the first one up to the first disagreement (a file cut short by a
    crash, a torn line); the launches after it get no shapes and the problem
    is reported. Guessing by op name would be wrong: in GRAPH mode the
    forward and the backward MatMul are both ``MatMul-op0``.
    """
    check_input_file(path)
    cache: dict[str, Optional[tuple[str, str]]] = {}
    ops: list[str] = []
    args: list[str] = []
    damaged = 0
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            parsed = cache.get(line)
            if parsed is None and line not in cache:
                parsed = cache[line] = shapes_args(line)
            if parsed is None:
                damaged += 1
                parsed = ("\0", "")   # keeps the line's place; matches no op
            ops.append(parsed[0])
            args.append(parsed[1])
    if damaged:
        problems.append(f"{path}: {damaged} damaged line(s) without usable shapes")
    n = len(table)
    if not n or not any(args):
        return table
    pool = StringPool(table.strings)
    strings, code = pool.strings, pool.code

    # op names (leaf of each event's full name, op name of each line) as shared integer ids
    ids: dict[str, int] = {"": 0}
    name_codes = table["name"]
    uniq, inv = np.unique(name_codes, return_inverse=True)
    leaf_ids = np.array([ids.setdefault(_leaf(strings[c]), len(ids)) for c in uniq.tolist()], dtype=np.int64)
    ev_leaf = leaf_ids[inv.reshape(-1)]
    line_op = np.array([ids.get(op, -1) for op in ops], dtype=np.int64)
    line_args = np.array([code(a) for a in args], dtype=np.int32)
    out = np.array(table["args"], copy=True)
    order = np.argsort(table["ts"], kind="stable")
    m = min(len(ops), n)
    agree = (line_op[:m] == 0) | (line_op[:m] == ev_leaf[order[:m]])
    k = m if bool(agree.all()) else int(np.argmin(agree))   # launches lined up from the start
    has = line_args[:k] != 0
    out[order[:k][has]] = line_args[:k][has]
    if k < n or len(ops) != n:
        problems.append(f"{path}: {len(ops)} shape line(s) for {n} operator launch(es); the first {k} line up, "
                        f"the other {n - k} launch(es) get no shapes")
    return EventTable(dict(table.cols, args=out), strings)
