"""JSON text indented by two spaces, byte for byte what ``json.dumps(obj, indent=2, default=str)`` writes, made
by orjson (in C) where the checks below find the same text, else by :mod:`json`.

Python's :mod:`json` encodes an indented document in Python (its C encoder writes compact text only): for a
cluster's ``cluster_communication.json`` and ``cluster_communication_matrix.json`` (0.7 MB for 32 ranks) that
was 40 ms of the driver's serial end. orjson writes the same layout (two-space indent, ``": "`` and a
line per member, ``{}``/``[]`` when empty) and differs in only these, each checked:

* a float of magnitude under 1e-4 or of 1e16 and over: orjson writes ``0.00002``/``1e-8``, Python
  ``2e-05``/``1e-08``: such numbers (a line that ends with one) are rewritten with Python's ``repr``;
* NaN and infinities (Python ``NaN``, orjson ``null``), tuples, keys that are not text, integers over 64
  bits, anything ``default=str`` would turn into text (orjson encodes dataclasses, dates, numpy numbers
  itself): the text read back must equal the object, else :mod:`json` writes it;
* characters outside printable ASCII (Python escapes them as ``\\uXXXX``), a bare number or text (no line of
  its own): :mod:`json` writes it.

Example::

    >>> dumps_indented({"a": [1, 2e-05], "b": {}}) == json.dumps({"a": [1, 2e-05], "b": {}}, indent=2).encode()
    True
"""
from __future__ import annotations

import json
import re
from typing import Any

import orjson

# where a line ends with a float that orjson and Python's repr may write apart: under 1e-4 (orjson spells
# it out, 0.0000...) or with an exponent (orjson writes its sign: e-8, e+16). The last token of a line is a value
# (a string cannot hold a raw newline, and it ends with a quote), preceded by a space (``": "`` or the indent).
_APART = re.compile(rb"(?:0\.0000[0-9]*|e[-+][0-9]+)(?=,?\n)")


def dumps_indented(obj: Any) -> bytes:
    """``json.dumps(obj, indent=2, default=str)`` as UTF-8 bytes (see the module doc)."""
    same = False
    if isinstance(obj, (dict, list)):       # a bare number has no line of its own to rewrite
        try:
            text = orjson.dumps(obj, option=orjson.OPT_INDENT_2)
            same = text.isascii() and b"\x7f" not in text and orjson.loads(text) == obj
        except (TypeError, ValueError, RecursionError):
            pass
    if not same:
        return json.dumps(obj, indent=2, default=str).encode("utf-8")
    return _as_python_floats(text)


def _as_python_floats(text: bytes) -> bytes:
    """orjson's text with each float that ends a line and may differ written as Python's ``repr`` writes it
    (the same for a float that did not differ: the rewrite is safe on any float)."""
    parts, pos = [], 0
    for m in _APART.finditer(text):
        start = text.rfind(b" ", 0, m.start()) + 1
        parts += [text[pos:start], repr(float(text[start:m.end()])).encode()]
        pos = m.end()
    parts.append(text[pos:])
    return b"".join(parts)
