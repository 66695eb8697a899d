"""Structured args: the event table parses each distinct args text once, for itself and every table
derived from it, and the analyzers and exporters read that one parse (no regex over JSON text)."""
from __future__ import annotations

import numpy as np

import npuprof.events as events_mod
from npuprof.analysis.analyzer import registered_analyzers
from npuprof.analysis.operators import input_shapes_text

ANALYZERS = {r.analyzer.table: r.analyzer.compute for r in registered_analyzers()}
from npuprof.events import EventKind, EventTable, parse_args_text


def _table() -> EventTable:
    k = int(EventKind.KERNEL)
    return EventTable.from_records(
        ts=[0, 10, 20, 30], dur=[5, 5, 5, 5], kind=[k, k, k, int(EventKind.OP)], name=["a", "a", "b", "op"],
        type=["MatMul", "MatMul", "Add", "MatMul"],
        args=['{"Accelerator Core": "AI_CORE", "Input Shapes": "8,64;64,8"}'] * 2
        + ['{"Accelerator Core": "AI_VECTOR_CORE"}', '{"Input Dims": [[8, 64], [[2, 2], [3]]]}'])


def test_each_distinct_args_text_is_parsed_once_across_derived_tables(monkeypatch):
    calls = []
    real = events_mod.parse_args_text
    monkeypatch.setattr(events_mod, "parse_args_text", lambda text: calls.append(text) or real(text))
    t = _table()
    derived = [t, t.select(np.array([1, 0])), t.of_kind(EventKind.KERNEL), t.with_column("step", t["step"]),
               t.sorted()]
    for table in derived:
        table.args_objects(table["args"])
    assert sorted(calls) == sorted(set(t.column_strings("args")))      # 3 distinct texts, 3 parses
    for name in ("kernel_details", "op_statistic", "operator_details", "op_shape_statistic"):
        ANALYZERS[name](t)
    assert len(calls) == 3                                               # the analyzers reuse them


def test_args_become_the_columns_that_name_them():
    t = _table()
    kd = ANALYZERS["kernel_details"](t).records()
    assert [r["Accelerator Core"] for r in kd] == ["AI_CORE", "AI_CORE", "AI_VECTOR_CORE"]
    details = ANALYZERS["operator_details"](t).records()
    assert details == [{"Name": "op", "Input Shapes": "8,64;2,2;3"}]


def test_args_parse_never_raises():
    assert parse_args_text('{"x": NaN}')["x"] != parse_args_text('{"x": NaN}')["x"]   # Python json's NaN
    for text in ("", "[1, 2]", "{broken", '"str"', "{}"):
        assert parse_args_text(text) == {}
    assert input_shapes_text('{"Input Shapes": "1,2"}') == "1,2" and input_shapes_text("x") is None


def test_rows_sharing_one_args_text_get_no_per_row_index():
    """10M host operators with no args cost no per-row args index in kernel_details / op_statistic
    (a per-row int64 copy per args column is 80 MB per column at 10M rows; not an RSS measurement)."""
    n = 1000
    t = EventTable.from_records(ts=np.arange(n) * 10, dur=[5] * n, kind=[int(EventKind.OP)] * n,
                                name=["op"] * n, type=["MatMul", "Add"] * (n // 2))
    kd = ANALYZERS["kernel_details"](t)
    assert kd.texts.which.strides == (0,)                       # a broadcast view, not n indices
    assert {r["Accelerator Core"] for r in kd.records()} == {"HOST_CPU"}
    stats = ANALYZERS["op_statistic"](t).records()
    assert sorted((r["OP Type"], r["Core Type"], r["Count"]) for r in stats) == [("Add", "HOST_CPU", 500),
                                                                                  ("MatMul", "HOST_CPU", 500)]
