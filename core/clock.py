"""The clock anchor that puts monotonic timestamps on the epoch base.

Example::

    >>> anchor = ClockAnchor(monotonic_ns=1_000, realtime_ns=1_700_000_000_000_001_000)
    >>> anchor.to_epoch_ns(2_000)
    1700000000000002000
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ClockAnchor:
    """A simultaneous reading of the monotonic and the wall clock.

    Host events are timed with ``time.perf_counter_ns()`` (CLOCK_MONOTONIC on
    Linux) and stored on the wall-clock (epoch ns) base: ``epoch = mono +
    offset``. Native profilers that stamp with the wall clock (TF XSpace,
    MindSpore's CPU ops) line up with no conversion; ones that stamp with
    CLOCK_MONOTONIC use :meth:`to_epoch_ns`.
    """

    monotonic_ns: int
    realtime_ns: int
    uncertainty_ns: int = 0   # width of the monotonic bracket around the wall-clock read

    @property
    def offset_ns(self) -> int:
        return self.realtime_ns - self.monotonic_ns

    def to_epoch_ns(self, monotonic_ns: Any) -> Any:
        return monotonic_ns + self.offset_ns

    @classmethod
    def now(cls) -> "ClockAnchor":
        import time

        # Bracket the wall-clock read with two monotonic reads, keep the midpoint.
        m0 = time.perf_counter_ns()
        r = time.time_ns()
        m1 = time.perf_counter_ns()
        return cls(monotonic_ns=(m0 + m1) // 2, realtime_ns=r, uncertainty_ns=m1 - m0)


def ns_to_us_text(ns: int) -> str:
    """Integer ns -> microseconds with three decimals, exactly (a float loses the ns at epoch magnitudes).

    Example::

        >>> ns_to_us_text(1795306209649981618)
        '1795306209649981.618'
        >>> ns_to_us_text(-1500)
        '-1.500'
    """
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"
