"""A real TensorFlow GPU XSpace (8 GPU planes, BERT; ../shared/realdata/xprof): on device planes only what
ran on the device is a kernel (the ``Stream #N`` lines), counted against the protobuf directly; the
annotation lines (TensorFlow Ops, Name Scope, Steps) are ranges, never kernels."""
from __future__ import annotations

from collections import Counter

import pytest

from npuprof.events import EventKind
from realdata import realdata, tree_digest

XSPACE_DIR = "xprof/commit_d6853e0c/demo/plugins/profile/GPU-multi-worker"


@pytest.fixture(scope="module")
def spaces():
    pytest.importorskip("tensorflow", reason="the XSpace proto comes with TensorFlow")
    from npuprof.integrations.tensorflow.xplane import load_xspace, xspace_to_table

    folder = realdata(XSPACE_DIR)
    before = tree_digest(folder)
    out = []
    for path in sorted(folder.glob("*.xplane.pb")):
        space = load_xspace(path)
        out.append((space, xspace_to_table(space, warn=lambda msg: None)))
    assert out and tree_digest(folder) == before
    return out


def test_kernels_are_the_stream_events_counted_once(spaces):
    for space, table in spaces:
        stream_events = sum(len(line.events) for plane in space.planes if plane.name.startswith("/device:")
                            for line in plane.lines if line.name.startswith("Stream #"))
        every_line = sum(len(line.events) for plane in space.planes if plane.name.startswith("/device:")
                         for line in plane.lines)
        kernels = int((table["kind"] == int(EventKind.KERNEL)).sum())
        assert kernels == stream_events
        if every_line > stream_events:
            on_device = table.select(table["device"] >= 0)
            ranges = Counter(on_device.select(on_device["kind"] == int(EventKind.RANGE)).column_strings("type"))
            assert sum(ranges.values()) == every_line - stream_events
            assert {"TensorFlow Ops", "TensorFlow Name Scope"} <= set(ranges)


def test_kernel_types_are_op_types_not_whole_names(spaces):
    for _, table in spaces:
        kernels = table.select(table["kind"] == int(EventKind.KERNEL))
        assert all(len(t) < 200 and "(" not in t for t in kernels.column_strings("type"))
