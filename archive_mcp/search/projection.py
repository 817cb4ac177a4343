"""The semantic scan of a large index: every row's cosine estimated in a few principal
dimensions, then the exact int8 cosine of a shortlist.

Past `DENSE_MAX_BYTES` the vectors stream from disk as int8 (`quantize`), and scanning
them all costs a query about 120 ms at 1M turns on a quiet box (converting the int8 values is
the cost). Here each row also keeps its projection on the `RANK` principal directions of the
rows (centred on their mean), as int8 with a scale per row (`proj.q8`): an eighth of the
bytes, read into memory when the index loads (32 MB at 1M turns). A query:

1. Every row's estimated cosine: mean·q + projection·(basis q), one pass over `proj.q8`,
   its mean and spread set to those of the exact cosine of `SAMPLE` rows spread over the index.
2. The `SHORTLIST` rows with the best estimate get their exact int8 cosine (a gather).

The estimate keeps the whole distribution (the fusion's z-scores and the confidence's background
read its mean and spread) and the exact shortlist keeps the head. Chosen against a 1-bit sign
code with a Hamming shortlist, which found fewer of the exact top 100 at the same shortlist size
(bench/results/speed.md). Built once with the int8 copy (`write_projection`), read by `load`,
swapped whole with the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archive_mcp.search.ondisk import read_rows, take_rows

RANK = 32  # principal directions kept per row (bench/results/speed.md)
SHORTLIST = 4096  # rows re-scored by their exact int8 cosine per query
SAMPLE = 8192  # rows spread over the index whose exact cosine sets the estimates' mean and spread
FIT_ROWS = 65536  # rows (spread over the index) the directions are fitted on
READ_ROWS = 65536  # projected rows read at once by a query
BUILD_ROWS = 16384  # vector rows read at once while building


def write_projection(folder: Path, n: int, dim: int, has: np.ndarray) -> None:
    """`proj.q8` and `proj_scales.npy` (the rows' projections, int8 with a scale per row) and
    `proj_basis.npy` (the mean, then the directions) from the float16 vectors of `vectors.f16`."""
    m = np.memmap(folder / "vectors.f16", np.float16, "r", shape=(n, dim))
    with_vector = np.flatnonzero(has)
    fit = with_vector[:: max(1, with_vector.size // FIT_ROWS)]
    centred = take_rows(m, fit).astype(np.float64)
    mean = centred.mean(axis=0) if fit.size else np.zeros(dim)
    centred -= mean  # in place: the fit's rows are 134 MB as float64
    _, vecs = np.linalg.eigh(centred.T @ centred)
    basis = np.ascontiguousarray(vecs[:, ::-1][:, : min(RANK, dim)].T, np.float32)
    scales = np.zeros(n, np.float32)
    with (folder / "proj.q8").open("wb") as out:
        for a in range(0, n, BUILD_ROWS):
            b = min(a + BUILD_ROWS, n)
            block = read_rows(m, a, b).astype(np.float32) - mean.astype(np.float32)
            q, scales[a:b] = quantize(block @ basis.T)
            q.tofile(out)
    np.save(folder / "proj_scales.npy", scales)
    np.save(folder / "proj_basis.npy", np.vstack([mean.astype(np.float32), basis]))


def quantize(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and a float32 scale per row, row ≈ q × scale: the row's largest component maps
    to ±127 (a row of zeros keeps scale 1 and stays zero)."""
    top = np.abs(block).max(axis=1) / 127.0 if block.size else np.zeros(len(block), np.float32)
    scale = np.where(top > 0, top, 1.0).astype(np.float32)
    return np.clip(np.rint(block / scale[:, None]), -127, 127).astype(np.int8), scale


def write_int8(folder: Path, n: int, dim: int) -> None:
    """Write `vectors.q8` (int8) and `scales.npy` (float32, one per row) from the float16 vectors
    of `vectors.f16`, block by block (`quantize`)."""
    m = np.memmap(folder / "vectors.f16", np.float16, "r", shape=(n, dim))
    scales = np.zeros(n, np.float32)
    with (folder / "vectors.q8").open("wb") as out:
        for a in range(0, n, BUILD_ROWS):
            b = min(a + BUILD_ROWS, n)
            q, scales[a:b] = quantize(read_rows(m, a, b).astype(np.float32))
            q.tofile(out)
    np.save(folder / "scales.npy", scales)


@dataclass
class Projection:
    """One segment's rows in the principal directions (memory-mapped int8) and the directions."""

    rows: np.ndarray  # int8 (n, rank), held in memory by `load` (32 MB at 1M turns)
    scales: np.ndarray  # float32 (n,)
    mean: np.ndarray  # float32 (dim,)
    basis: np.ndarray  # float32 (rank, dim)
    # the int8 rows `cosine` reads, the sample's indices and rows (`_sample`)
    _sampled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @classmethod
    def load(cls, folder: Path, n: int, dim: int) -> Projection | None:
        """The segment's projection, or None when it has none (vectors scanned whole)."""
        path = folder / "proj.q8"
        if not path.exists():
            return None
        both = np.load(folder / "proj_basis.npy")
        scales = np.load(folder / "proj_scales.npy")
        rank = both.shape[0] - 1
        if both.shape[1:] != (dim,) or scales.shape != (n,) or path.stat().st_size != n * rank:
            raise ValueError(
                f"the search cache is damaged ({path.name} does not fit {n} rows of {dim}): "
                f"delete {folder.parent} and search again to rebuild it"
            )
        mapped = np.memmap(path, np.int8, "r", shape=(n, rank))
        # read whole (and the map's pages released): every query reads every row, and through
        # the map each query faulted the pages in again (`estimates` 24 ms CPU at 1M, 10 held)
        return cls(read_rows(mapped, 0, n), scales, both[0], both[1:])

    def estimates(self, query: np.ndarray) -> np.ndarray:
        """Every row's estimated cosine with the unit `query`."""
        q = query.astype(np.float32)
        n = self.rows.shape[0]
        out = np.empty(n, np.float32)
        toward = self.basis @ q
        with one_blas_thread():
            for a in range(0, n, READ_ROWS):  # block by block: a float32 copy of one block
                b = min(a + READ_ROWS, n)
                out[a:b] = self.rows[a:b].astype(np.float32) @ toward
        out *= self.scales
        out += float(self.mean @ q)
        return out

    def cosine(
        self, query: np.ndarray, rows: np.ndarray, scale: np.ndarray | None, has: np.ndarray
    ) -> np.ndarray:
        """Every row's cosine with the unit `query`: the exact one (int8 rows × scale, or float32
        rows in memory with `scale` None) for the `SHORTLIST` rows with a vector and the best
        estimate and for `SAMPLE` rows spread over the index, the estimate for the rest, its
        mean and spread made the sample's exact ones (the directions left out carry part of the
        spread: unmatched, the exact head would stand further above the estimated rest than it
        does)."""
        out = self.estimates(query)
        # rows without a vector are estimated as the mean (mean·q): never shortlisted, so every
        # exact cosine of the shortlist goes to a row that has one
        near = shortlist(out if has.all() else np.where(has, out, -np.inf), SHORTLIST)
        near = near[has[near]]
        sample, sample_rows = self._sample(rows, has)
        if sample.size > 1:
            q32 = query.astype(np.float32)
            exact = exact_of(sample_rows, None, q32, None if scale is None else scale[sample])
            estimated = out[sample]
            spread = float(estimated.std())
            if spread > 0:  # in place: (out - mean) * ratio + exact mean, in float32
                out -= np.float32(float(estimated.mean()))
                out *= np.float32(float(exact.std()) / spread)
                out += np.float32(float(exact.mean()))
            out[sample] = exact
        out[near] = exact_of(rows, near, query, None if scale is None else scale[near])
        return out

    def _sample(self, rows: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The `SAMPLE` rows spread over the index (those with a vector) and their int8 rows,
        gathered once (2 MB at 256 dimensions): every query reads the same ones, and gathering
        them from the map each time cost a 1M-turn query about 20 ms."""
        if self._sampled is None or self._sampled[0] is not rows:
            n = rows.shape[0]
            at = np.arange(0, n, max(1, n // SAMPLE))
            at = at[has[at]]
            self._sampled = (rows, at, take_rows(rows, at))
        return self._sampled[1], self._sampled[2]


_BLAS: list[Any] = []  # the threadpoolctl controller, made at the first query that needs it


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread while the block products run: a product of 65,536 x 32 starts
    OpenBLAS's threads, and on a busy box their waiting cost a 1M-turn query 128 ms CPU where
    one thread takes 10 (the controller is made once: a `threadpool_limits` each query scans
    the loaded libraries)."""
    if not _BLAS:
        from threadpoolctl import ThreadpoolController  # here: only large indexes need it

        _BLAS.append(ThreadpoolController())
    with _BLAS[0].limit(limits=1, user_api="blas"):
        yield


def scan(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`rows @ query` with BLAS on one thread (`one_blas_thread`): the whole-index scan of a
    small index (50k rows: its second thread's wait doubled the query's CPU on a busy box)."""
    with one_blas_thread():
        return rows @ query


def shortlist(scores: np.ndarray, k: int) -> np.ndarray:
    """The indices (ascending) of the `k` highest scores (all of them when there are fewer).
    Of many scores, those below the `k`-th best of every 16th are left out before the partition
    (that score is at most the `k`-th best of all; at 1M rows 3 ms less)."""
    if scores.size <= k:
        return np.arange(scores.size)
    if scores.size >= 64 * k:
        sample = scores[::16]
        cand = np.flatnonzero(scores >= np.partition(sample, sample.size - k)[sample.size - k])
        return np.sort(cand[np.argpartition(-scores[cand], k - 1)[:k]])
    return np.sort(np.argpartition(-scores, k - 1)[:k])


def exact_of(
    rows: np.ndarray, at: np.ndarray | None, query: np.ndarray, scale: np.ndarray | None
) -> np.ndarray:
    """The cosines with `query` of the rows at these ascending indices (all of them for None):
    of int8 rows, times their `scale`; of float32 rows in memory, `scale` None. Row by row
    (`einsum`): a row's cosine has the same bits whichever rows it is read with."""
    own = exact_rows(rows, at, query) if at is not None else np.einsum("ij,j->i", rows, query)
    return own if scale is None else own * scale


def exact_rows(rows: np.ndarray, at: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The dot products of the rows at these ascending indices with `query` (float32)."""
    # einsum, not `@`: a few thousand rows is where BLAS starts threads, and on a busy box
    # waiting for them cost 10-30 ms where the product itself takes 0.5 ms
    return np.einsum("ij,j->i", take_rows(rows, at), query.astype(np.float32))
