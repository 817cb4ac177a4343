"""Reading parts of the index's memory-mapped arrays without keeping their pages resident.

A page of a memory map that was read stays in the process's RSS until the kernel needs it back.
A query scans every vector and touches the postings of its terms, so over a server's life the
mapped pages of a 1M-turn index would add up to more than a gigabyte. `read_rows` copies the rows
through the map and then tells the kernel it may drop those pages (`MADV_DONTNEED`: they stay in
the page cache, not in this process). A map made by `open_rows` or `open_npy` keeps a descriptor
of its file beside it, and its rows are read with `preadv` instead: no page of the map is
touched, and a read costs no page faults. Reading through the map or that descriptor, not by the
file's name, matters: another process may rebuild the index and rename a new folder into place,
and this process must go on reading the files it loaded.
"""

from __future__ import annotations

import mmap
import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np

# a map made by `open_rows` (by its id) -> a descriptor of the file it maps, closed with the map
_FILES: dict[int, int] = {}


def read_rows(m: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Rows lo:hi of an array (1-d or 2-d) as a copy; of a map made by `open_rows` or
    `open_npy`, read from its file (one `preadv`, no page of the map touched: the postings of a
    1M-turn query's terms 101 -> 21 ms CPU); of another memory-mapped one, its pages are released
    afterwards. (A view of a mapping, or an array in memory, is sliced as it is.)"""
    fd = _FILES.get(id(m))
    if fd is not None and isinstance(m, np.memmap) and _readable(m):
        out = np.empty((max(0, min(hi, len(m)) - lo), *m.shape[1:]), m.dtype)
        at = m.offset + lo * m.strides[0]
        if out.size and os.preadv(fd, [out.data.cast("B")], at) != out.nbytes:
            raise ValueError(f"rows {lo}:{hi} are past the end of their file: the index is damaged")
        return out
    out = np.array(m[lo:hi])
    if isinstance(m, np.memmap):
        _release(m, lo, hi)
    return out


def release(m: np.ndarray, lo: int, hi: int) -> None:
    """Of a memory-mapped array, let the kernel drop the pages of rows lo:hi this process read
    through the map (nothing for an array in memory)."""
    if isinstance(m, np.memmap):
        _release(m, lo, hi)


def _release(m: np.memmap, lo: int, hi: int) -> None:
    """Tell the kernel this process may drop the mapped pages of rows lo:hi."""
    if isinstance(m.base, mmap.mmap) and hi > lo and hasattr(mmap, "MADV_DONTNEED"):
        start = (
            m.offset % mmap.ALLOCATIONGRANULARITY + lo * m.strides[0]
        )  # where the rows sit in the map
        page = start - start % mmap.PAGESIZE
        m.base.madvise(mmap.MADV_DONTNEED, page, start + (hi - lo) * m.strides[0] - page)


TAKE = 512  # rows gathered between two releases


def open_rows(path: Path, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only memory map of the file at `path`, and beside it, until the map is collected,
    a descriptor of the same file (opened first, the map made from it: a rebuild renaming a new
    folder into place cannot come between them), through which `read_rows` and `take_rows`
    read."""
    return _open(path, lambda f: np.memmap(f, dtype, "r", shape=shape))


def open_npy(path: Path) -> np.ndarray:
    """The array of a .npy file as `open_rows` maps a raw one (an empty array in memory: a map
    cannot be empty)."""

    def mapped(f: Any) -> np.ndarray:
        version = np.lib.format.read_magic(f)
        header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = header(f)
        if not int(np.prod(shape)):
            return np.zeros(shape, dtype)
        return np.memmap(f, dtype, "r", shape=shape, offset=f.tell(), order="F" if fortran else "C")

    return _open(path, mapped)


def _open(path: Path, make: Any) -> np.ndarray:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        with open(fd, "rb", closefd=False) as f:
            m = make(f)
    except BaseException:
        os.close(fd)
        raise
    if not isinstance(m, np.memmap):
        os.close(fd)
        return m
    _FILES[id(m)] = fd
    weakref.finalize(m, _close, id(m), fd)
    return m


def _readable(m: np.memmap) -> bool:
    """Can rows of this map be read from its file by offset (C order, `preadv` present)?"""
    return hasattr(os, "preadv") and bool(m.flags.c_contiguous)


def _close(key: int, fd: int) -> None:
    _FILES.pop(key, None)
    os.close(fd)


def take_rows(m: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The rows at these ascending indices (of an array's first axis) as a copy. Of a map made
    by `open_rows`, read from its file row by row (`preadv`: no page of the map is touched; a
    page fault per row cost 4,096 rows 18 ms CPU where the reads take 9). Of another
    memory-mapped array, `TAKE` rows at a time, the pages between the first and the last
    released after each: a page fault maps the cached pages around it too, so a gather spread
    over a whole file would otherwise hold all of it in the process at once (+256 MB at 1M)."""
    if not isinstance(m, np.memmap):
        return np.asarray(m[rows])
    fd = _FILES.get(id(m))
    if fd is not None and _readable(m):
        out = np.empty((rows.size, *m.shape[1:]), m.dtype)
        if out.size == 0:
            return out
        size = m.strides[0]
        view = out.data.cast("B")
        for i, r in enumerate(rows.tolist()):
            if os.preadv(fd, [view[i * size : (i + 1) * size]], m.offset + r * size) != size:
                raise ValueError(f"row {r} is past the end of its file: the index is damaged")
        return out
    out = np.empty((rows.size, *m.shape[1:]), m.dtype)
    for a in range(0, rows.size, TAKE):
        part = rows[a : a + TAKE]
        out[a : a + part.size] = m[part]
        _release(m, int(part[0]), int(part[-1]) + 1)
    return out
