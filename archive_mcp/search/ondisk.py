"""Reading parts of the index's memory-mapped arrays without keeping their pages mapped.

A page of a memory map that was read stays in the process's RSS until the kernel needs it back.
A query scans every vector and touches the postings of its terms, so over a server's life the
mapped pages of a 1M-turn index would add up to more than a gigabyte. Reading the same bytes with
`np.fromfile` costs about as much and leaves nothing behind.
"""

from __future__ import annotations

import mmap

import numpy as np


def read_rows(m: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Rows lo:hi of an array (1-d or 2-d); of a memory-mapped one by reading its file."""
    if isinstance(m, np.memmap) and isinstance(m.base, mmap.mmap) and m.filename is not None:  # not a view
        row = int(np.prod(m.shape[1:], dtype=np.int64))
        out = np.fromfile(m.filename, m.dtype, (hi - lo) * row, offset=m.offset + lo * row * m.dtype.itemsize)
        return out.reshape((hi - lo, *m.shape[1:]))
    return np.asarray(m[lo:hi])
