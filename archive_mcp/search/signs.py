"""The semantic scan of a large index: a 1-bit code per vector, then int8 for a shortlist.

Past `DENSE_MAX_BYTES` the vectors stream from disk as int8 (`index.quantize`), and scanning
them all costs a query about 120 ms at 1M turns (converting 384M int8 values is the cost). Here
each row also keeps one bit per dimension: the sign of the row minus the rows' mean (centred,
so that a dimension every row leans the same way on still splits them). A query:

1. The Hamming distance of every row's code to the query's: bit planes stored column by column
   (`signs.u64`, plane j holds dimensions 64j..64j+63 of every row), so each plane is one XOR
   and one popcount over contiguous words: a few ms at 1M rows.
2. The `SHORTLIST` rows nearest by that distance get their exact int8 cosine (a gather).
3. Every other row gets an estimate: the cosine fitted as a line of the distance on `SAMPLE`
   rows spread over the index, whose exact int8 cosine is read too. The fusion's z-scores and
   the confidence's background read the whole distribution, so it must keep its mean and spread;
   the estimate keeps each row's place on that line.

Built once with the int8 copy (`write`), memory-mapped by `load`, swapped whole with the index.
How near the shortlist comes to the exact scan (recall of the exact top) is measured in
bench/results/speed.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archive_mcp.search.ondisk import read_rows, take_rows

SHORTLIST = 4096  # rows re-scored by their exact int8 cosine per query (bench/results/speed.md)
SAMPLE = 8192  # rows spread over the index whose exact cosine fits the others' estimate
READ_ROWS = 16384  # vector rows read at once while building


def planes_of(rows: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """The codes of float32 rows (n, dim) as bit planes (words, n) of uint64: bit k of plane j
    is set when dimension 64j+k of the row lies above the mean."""
    bits = np.packbits(rows > mean, axis=1)
    words = -(-rows.shape[1] // 64)
    padded = np.zeros((rows.shape[0], 8 * words), np.uint8)
    padded[:, : bits.shape[1]] = bits
    return np.ascontiguousarray(padded.view(np.uint64).T)


def write(folder: Path, n: int, dim: int, has: np.ndarray) -> None:
    """`signs.u64` (the codes' bit planes) and `signs_mean.npy` from the float16 vectors of
    `vectors.f16`, block by block: the mean of the rows with a vector, then the codes."""
    m = np.memmap(folder / "vectors.f16", np.float16, "r", shape=(n, dim))
    total = np.zeros(dim, np.float64)
    for a in range(0, n, READ_ROWS):
        b = min(a + READ_ROWS, n)
        total += read_rows(m, a, b)[has[a:b]].astype(np.float64).sum(axis=0)
    mean = (total / max(1, int(has.sum()))).astype(np.float32)
    out = np.memmap(folder / "signs.u64", np.uint64, "w+", shape=(-(-dim // 64), n))
    for a in range(0, n, READ_ROWS):
        b = min(a + READ_ROWS, n)
        out[:, a:b] = planes_of(read_rows(m, a, b).astype(np.float32), mean)
    out.flush()
    del out
    np.save(folder / "signs_mean.npy", mean)


@dataclass
class Signs:
    """The codes of one segment's rows (memory-mapped) and the mean they are centred on."""

    planes: np.ndarray  # uint64 (words, n)
    mean: np.ndarray  # float32 (dim,)

    @classmethod
    def load(cls, folder: Path, n: int, dim: int) -> Signs | None:
        """The segment's codes, or None when it has none (vectors small enough to scan whole)."""
        path = folder / "signs.u64"
        if not path.exists():
            return None
        words = -(-dim // 64)
        mean = np.load(folder / "signs_mean.npy")
        if path.stat().st_size != 8 * words * n or mean.shape != (dim,):
            raise ValueError(
                f"the search cache is damaged ({path.name} does not fit {n} rows of {dim}): "
                f"delete {folder.parent} and search again to rebuild it"
            )
        return cls(np.memmap(path, np.uint64, "r", shape=(words, n)), mean)

    def distances(self, query: np.ndarray) -> np.ndarray:
        """Hamming distance (uint16) of every row's code to the query's."""
        code = planes_of(query[None, :].astype(np.float32), self.mean)[:, 0]
        out = np.zeros(self.planes.shape[1], np.uint16)
        for j in range(self.planes.shape[0]):  # one plane at a time, its pages released
            plane = read_rows(self.planes, j, j + 1)[0]
            np.bitwise_xor(plane, code[j], out=plane)
            out += np.bitwise_count(plane)
        return out

    def cosine(
        self, query: np.ndarray, rows: np.ndarray, scale: np.ndarray, has: np.ndarray
    ) -> np.ndarray:
        """Every row's cosine with the unit `query`: exact (int8 × scale) for the `SHORTLIST`
        rows nearest by code and for the sample, the fitted estimate for the rest."""
        n = rows.shape[0]
        dist = self.distances(query)
        sample = np.arange(0, n, max(1, n // SAMPLE))
        sample = sample[has[sample]]
        out = np.zeros(n, np.float32)
        if sample.size:
            exact = exact_rows(rows, sample, query) * scale[sample]
            h = dist[sample].astype(np.float32)
            slope, icept = np.polyfit(h, exact, 1) if np.ptp(h) > 0 else (0.0, exact.mean())
            out = (icept + slope * dist.astype(np.float32)).astype(np.float32)
            out[sample] = exact
        near = shortlist(dist, SHORTLIST)
        out[near] = exact_rows(rows, near, query) * scale[near]
        return out


def exact_rows(rows: np.ndarray, at: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The dot products of the rows at these ascending indices with `query` (float32)."""
    # einsum, not `@`: a few thousand rows is where BLAS starts threads, and on a busy box
    # waiting for them cost 10-30 ms where the product itself takes 0.5 ms
    return np.einsum("ij,j->i", take_rows(rows, at), query.astype(np.float32))


def shortlist(dist: np.ndarray, k: int) -> np.ndarray:
    """The indices (ascending) of the `k` smallest distances; ties at the cut by index."""
    if dist.size <= k:
        return np.arange(dist.size)
    counts = np.cumsum(np.bincount(dist))
    cut = int(np.searchsorted(counts, k))  # the distance whose rows complete k
    below = np.flatnonzero(dist < cut)
    at = np.flatnonzero(dist == cut)[: k - below.size]
    return np.sort(np.concatenate([below, at]))
