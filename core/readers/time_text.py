"""The Ascend tools' times as text (microseconds with three decimals: exact ns) as integer ns, one value
(:func:`us_text_to_ns`) or a whole column at once (:func:`us_texts_to_ns`, :func:`us_texts_to_ns_array`).

Example::

    >>> us_texts_to_ns(["1795306209649981.618", "12.5"])
    [1795306209649981618, 12500]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

INT64_BOUNDS = (-(1 << 63), 1 << 63)      # lo <= v < hi: an int64


def us_text_to_ns(value: Any) -> int:
    """Microseconds as the Ascend tools write them -> integer ns, exactly.

    Strings keep their three decimals exactly (a float would lose the ns at
    epoch magnitudes); numbers are rounded; a trailing tab is ignored.

    Example::

        >>> us_text_to_ns("1795306209649981.618\\t")
        1795306209649981618
        >>> us_text_to_ns(12.5)
        12500
    """
    if isinstance(value, str):
        text = value.strip()
        neg = text.startswith("-")
        if neg:
            text = text[1:]
        whole, _, frac = text.partition(".")
        if not whole.isdigit() or (frac and not frac.isdigit()):
            # scientific notation and the like: fall back to float
            return int(round(float(value) * 1000))
        ns = int(whole) * 1000 + int((frac + "000")[:3])
        if len(frac) > 3 and frac[3] >= "5":
            ns += 1
        return -ns if neg else ns
    return int(round(float(value) * 1000))


def us_texts_to_ns(values: list) -> list:
    """:func:`us_text_to_ns` of every value, None where it raises; the tools' usual forms (texts of digits
    with three decimals, plain numbers) are converted in bulk, exactly as one by one.

    Example::

        >>> us_texts_to_ns(["1795306209649981.618", "12.5", None])
        [1795306209649981618, 12500, None]
    """
    ns, ok = us_texts_to_ns_array(values)
    out = ns.tolist()
    for i in np.flatnonzero(~ok).tolist():
        out[i] = us_text_to_ns_or_none(values[i])
    return out


def us_texts_to_ns_array(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(ns, ok): :func:`us_text_to_ns` of every value as int64, ``ok`` False where it raises or its result
    is beyond int64 (those values are 0).

    Example::

        >>> ns, ok = us_texts_to_ns_array(["1.5", 2, None])
        >>> ns.tolist(), ok.tolist()
        ([1500, 2000, 0], [True, True, False])
    """
    n = len(values)
    kinds = set(map(type, values))
    if kinds == {str}:
        ns, ok = _digit_texts_to_ns(values)
    elif kinds <= {int, float} and n:
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.array(values, dtype=np.float64) * 1000.0
            ok = np.abs(x) < 2.0 ** 62            # nan and inf compare False: done one by one below
        ns = np.where(ok, np.rint(np.where(ok, x, 0.0)), 0).astype(np.int64)
    else:
        ns, ok = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    lo, hi = INT64_BOUNDS
    for i in np.flatnonzero(~ok).tolist():
        v = us_text_to_ns_or_none(values[i])
        if v is not None and lo <= v < hi:
            ns[i], ok[i] = v, True
    return ns, ok


def _digit_texts_to_ns(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(ns, ok): ``int(whole) * 1000 + int(three decimals)`` of each text of that form (up to 19 digits);
    ``ok`` False (ns 0) for any other text."""
    n = len(texts)
    ns = np.zeros(n, dtype=np.int64)
    good = np.zeros(n, dtype=bool)
    try:
        arr = np.array(texts, dtype=np.bytes_)
    except UnicodeEncodeError:
        return ns, good
    width = arr.dtype.itemsize
    if not n or not width:
        return ns, good
    mat = arr.view(np.uint8).reshape(n, width)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    shortest, longest = int(lengths.min()), int(lengths.max())
    for length in [shortest] if shortest == longest else np.unique(lengths).tolist():
        if not 5 <= length <= 20:
            continue
        rows = slice(None) if shortest == longest else np.flatnonzero(lengths == length)
        block = mat[rows, :length]
        digits = np.delete(block, length - 4, axis=1) - np.uint8(48)     # a non-digit wraps past 9
        ok = (block[:, length - 4] == ord(".")) & (digits <= 9).all(axis=1)
        # sum of digit * 10**k in uint64: wraps only past 2**64, which 19 digits never reach
        value = digits.astype(np.uint64) @ _POWERS_OF_TEN[length - 2::-1]
        ok &= value < np.uint64(2 ** 63)
        ns[rows] = np.where(ok, value, 0).astype(np.int64)
        good[rows] = ok
    return ns, good


_POWERS_OF_TEN = np.array([10 ** k for k in range(20)], dtype=np.uint64)


def us_text_to_ns_or_none(value: Any) -> Optional[int]:
    """:func:`us_text_to_ns` of ``value``, None where it raises.

    Example::

        >>> us_text_to_ns_or_none("12.5"), us_text_to_ns_or_none("n/a")
        (12500, None)
    """
    try:
        return us_text_to_ns(value)
    except (TypeError, ValueError, OverflowError):
        return None
