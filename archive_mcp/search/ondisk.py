"""Reading parts of the index's memory-mapped arrays without keeping their pages resident.

A page of a memory map that was read stays in the process's RSS until the kernel needs it back.
A query scans every vector and touches the postings of its terms, so over a server's life the
mapped pages of a 1M-turn index would add up to more than a gigabyte. `read_rows` copies the rows
through the map and then tells the kernel it may drop those pages (`MADV_DONTNEED`: they stay in
the page cache, not in this process). Reading through the map, not by the file's name, matters:
another process may rebuild the index and rename a new folder into place, and this process must
go on reading the files it loaded.
"""

from __future__ import annotations

import mmap

import numpy as np


def read_rows(m: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Rows lo:hi of an array (1-d or 2-d) as a copy; of a memory-mapped one, its pages are
    released afterwards. (A view of a mapping, or an array in memory, is sliced as it is.)"""
    out = np.array(m[lo:hi])
    if isinstance(m, np.memmap):
        _release(m, lo, hi)
    return out


def _release(m: np.memmap, lo: int, hi: int) -> None:
    """Tell the kernel this process may drop the mapped pages of rows lo:hi."""
    if isinstance(m.base, mmap.mmap) and hi > lo and hasattr(mmap, "MADV_DONTNEED"):
        start = (
            m.offset % mmap.ALLOCATIONGRANULARITY + lo * m.strides[0]
        )  # where the rows sit in the map
        page = start - start % mmap.PAGESIZE
        m.base.madvise(mmap.MADV_DONTNEED, page, start + (hi - lo) * m.strides[0] - page)


TAKE = 512  # rows gathered between two releases


def take_rows(m: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows at these ascending indices (of an array's first axis) as a copy; of a
    memory-mapped array, `TAKE` rows at a time, the pages between the first and the last
    released after each: a page fault maps the cached pages around it too, so a gather spread
    over a whole file would otherwise hold all of it in the process at once (+256 MB at 1M)."""
    if not isinstance(m, np.memmap):
        return np.asarray(m[rows])
    out = np.empty((rows.size, *m.shape[1:]), m.dtype)
    for a in range(0, rows.size, TAKE):
        part = rows[a : a + TAKE]
        out[a : a + part.size] = m[part]
        _release(m, int(part[0]), int(part[-1]) + 1)
    return out
