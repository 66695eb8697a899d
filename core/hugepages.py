"""Analysis allocates its arrays in ordinary pages, not numpy's huge pages.

On Linux, numpy advises the kernel to back every array of 4 MB and more with
transparent huge pages (``madvise(MADV_HUGEPAGE)``; see "madvise hugepage on
Linux" in numpy's global-state docs). Analysis allocates its event table and
temporaries once per run and streams through them, so huge pages spare it few
TLB misses, while each one is zeroed 2 MB at a time on first touch. On the
bench machine (a 2-core VM, THP in "madvise" mode) that zeroing was the
largest kernel cost of a 10M-event analysis: 2.9-3.3 s of kernel time per pass
with the advice, 1.2-1.4 s without, and the whole pass 7.0-7.2 s against
4.5-5.5 s (alternated runs, docs/performance.md).

:func:`ordinary_pages` turns numpy's advice off while a run is loaded,
analysed and written, and restores it afterwards. numpy's switch is
process-wide: arrays another thread allocates meanwhile are not advised
either; nothing else changes for them. Where numpy has no such switch (a
future numpy that drops it), this does nothing.

Example::

    with ordinary_pages():
        events = load_events(run_dir)
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Optional

__all__ = ["ordinary_pages"]


def _numpy_switch() -> Optional[Callable[[bool], bool]]:
    """numpy's ``_set_madvise_hugepage(enabled) -> previous``, if this numpy has it."""
    try:
        from numpy._core import multiarray
    except ImportError:   # numpy < 2
        from numpy.core import multiarray
    return getattr(multiarray, "_set_madvise_hugepage", None)


@contextmanager
def ordinary_pages() -> Iterator[None]:
    """numpy's huge-page advice off inside the block, as it was after it (nests)."""
    switch = _numpy_switch()
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)
