"""The interface of ``npuprof.readers._tracescan`` (core/readers/_tracescan.c): the complete events of a
Kineto trace (:func:`scan`) and the events of a torch_npu/MindSpore trace_view.json (:func:`scan_array`)
scanned into columns, the twins of :mod:`npuprof.readers.trace_decode`'s structs; the tuples are described
in the C source.

Example::

    scanned = scan(b'{"traceEvents": [{"ph": "X", "name": "mm", "ts": 1, "dur": 2}]}', msgspec.json.decode)
    scanned[0]   # 1 complete event
    events = scan_array(b'[{"ph": "X", "name": "mm", "pid": 1, "tid": 1, "ts": "1.500"}]', msgspec.json.decode)
    events[1]    # 1 read event
"""
from typing import Any, Callable, Optional

def scan(source: Any, decode: Callable[[bytes], Any], /) -> Optional[tuple[Any, ...]]:
    """The columns of the trace ``source`` (a buffer of JSON), or None where the scanner does not take it."""

def scan_array(source: Any, decode: Callable[[bytes], Any], /) -> Optional[tuple[Any, ...]]:
    """The columns of the event array ``source`` (a trace_view.json), or None where the scanner does not take it."""
