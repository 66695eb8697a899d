"""The interface of ``npuprof.readers._tracescan`` (core/readers/_tracescan.c): the complete events of a
Kineto trace scanned into columns, the twin of :mod:`npuprof.readers.trace_decode`'s structs; the tuple is
described in the C source.

Example::

    scanned = scan(b'{"traceEvents": [{"ph": "X", "name": "mm", "ts": 1, "dur": 2}]}', msgspec.json.decode)
    scanned[0]   # 1 complete event
"""
from typing import Any, Callable, Optional

def scan(source: Any, decode: Callable[[bytes], Any], /) -> Optional[tuple[Any, ...]]:
    """The columns of the trace ``source`` (a buffer of JSON), or None where the scanner does not take it."""
