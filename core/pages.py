"""How analysis takes memory from the kernel: ordinary pages, faulted in ahead where it helps.

**Ordinary pages.** On Linux, numpy advises the kernel to back every array
of 4 MB and more with transparent huge pages (``madvise(MADV_HUGEPAGE)``;
see "madvise hugepage on Linux" in numpy's global-state docs). Analysis
allocates its event table and temporaries once per run and streams through
them, so huge pages spare it few TLB misses, while each one is zeroed 2 MB at
a time on first touch. Where THP is in "madvise" mode, that zeroing can be
the largest kernel cost of a large analysis, paid on the critical path of
every pass (``make bench`` measures it: docs/performance.md). :func:`ordinary_pages` turns numpy's advice off while a
run is loaded, analysed and written, and restores it afterwards. numpy's
switch is process-wide: arrays another thread allocates meanwhile are not
advised either; nothing else changes for them. Where numpy has no such
switch (a future numpy that drops it), this does nothing.

**Faulted in ahead.** The first touch of a page costs a fault (in a VM a
host fault as well when the host took that memory back), and the loader
would otherwise take every one of them itself. :func:`populate`
faults in a range of an array without changing its content
(``MADV_POPULATE_WRITE``, Linux 5.14+), so a helper thread can take the
faults of rows the loader will fill next (``rawstore.read_raw_dir``). Where
the call is missing or refused it does nothing: the rows then fault in as
they are written, as before. The first call checks once, on a small mapping of
its own, that the advice really faults pages in (``mincore``): an emulator
such as qemu-user accepts advice it does not emulate and does nothing, and
there too populate declines. The page size is the one the process runs with
(4 KiB, or 64 KiB on many aarch64 kernels).

Example::

    with ordinary_pages():
        events = load_events(run_dir)
"""
from __future__ import annotations

import mmap
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

import numpy as np

from .libc import libc_function
from .private_api import numpy_hugepage_switch

__all__ = ["ordinary_pages", "populate"]


@contextmanager
def ordinary_pages() -> Iterator[None]:
    """numpy's huge-page advice off inside the block, as it was after it (nests)."""
    switch = numpy_hugepage_switch()
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)


MADV_POPULATE_WRITE = 23   # <linux/mman.h>, Linux 5.14+
_PAGE = mmap.PAGESIZE


def populate(array: np.ndarray, lo: int, hi: int) -> bool:
    """Fault in the whole pages of ``array[lo:hi]`` (a contiguous 1-D array) without changing
    its content; False where the kernel cannot (not Linux, older than 5.14, refused), and from
    then on without asking again. Safe while another thread writes those rows.

    Example::

        populate(column, n, n + rows_next_segment)
    """
    global _refused
    madvise = None if _refused or not sys.platform.startswith("linux") else \
        libc_function("madvise", "c_void_p", "c_size_t", "c_int")
    if madvise is None or array.ndim != 1 or not array.flags.c_contiguous or array.strides[0] == 0:
        return False
    if not _honoured(madvise):
        _refused = True
        return False
    lo, hi = max(0, lo), min(len(array), hi)
    if hi <= lo:
        return True
    start = array.ctypes.data + lo * array.itemsize
    end = array.ctypes.data + hi * array.itemsize
    start, end = -(-start // _PAGE) * _PAGE, end // _PAGE * _PAGE   # pages wholly inside the range only
    if end > start and madvise(start, end - start, MADV_POPULATE_WRITE) != 0:
        _refused = True
        return False
    return True


_refused = False   # the kernel refused once (too old, or not allowed): not asked again
_checked = False   # _honoured's answer was True once: not checked again


def _honoured(madvise: Callable[[int, int, int], int]) -> bool:
    """Whether ``MADV_POPULATE_WRITE`` faults pages in here, checked once on a fresh mapping of a
    few pages: resident after the call (``mincore``). False where the call fails or succeeds without
    effect; True where ``mincore`` is missing or fails (the call's own result is all there is)."""
    global _checked
    if _checked:
        return True
    import ctypes

    mincore = libc_function("mincore", "c_void_p", "c_size_t", "c_char_p")
    pages = 4
    probe = mmap.mmap(-1, pages * _PAGE)
    try:
        view = ctypes.c_char.from_buffer(probe)
        try:
            address = ctypes.addressof(view)
            if madvise(address, pages * _PAGE, MADV_POPULATE_WRITE) != 0:
                return False
            # one entry per page of the smallest size there is (4 KiB), however large this process's
            # pages are: an emulator may answer in the host's smaller pages
            residency = ctypes.create_string_buffer(pages * _PAGE // 4096 + 1)
            if mincore is None or mincore(address, pages * _PAGE, residency) != 0:
                _checked = True
                return True
            _checked = all(entry & 1 for entry in residency.raw[:pages])
            return _checked
        finally:
            del view
    finally:
        probe.close()
