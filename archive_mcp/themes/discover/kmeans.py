"""Mini-batch k-means (Sculley 2010) in numpy and scipy, as scikit-learn 1.9's `MiniBatchKMeans`
runs it with `n_init=1` and its other defaults: the cells of discovery's broad level
(`graph.micro_clusters`) and of its approximate neighbours past `graph.EXACT_UP_TO` turns.

1. k-means++ seeding on `3 x batch` rows drawn at random: each next centre is the best (lowest
   total squared distance) of 2 + ln k candidates drawn in proportion to their squared distance;
2. `100 x n / batch` steps: a batch of rows drawn with replacement moves each centre to the mean
   of every row it has ever been given; a centre that has gathered under 1% of the largest count
   is moved onto a row of the batch (checked every 10 x k rows seen, or while one has none);
3. stop after 10 steps without a lower smoothed (exponentially weighted) batch inertia;
4. each row's cell: its nearest centre, ties to the lower one.

Same random stream (`numpy.random.RandomState(seed)`), same floating-point operations in the same
order and the same BLAS routine for the distances, so the cells are those scikit-learn finds
(tests/test_vectors.py compares them when it is installed). One thing can differ on a machine
with more than two cores: scikit-learn sums a batch's inertia on OpenMP threads, and with three or
more the order its partial sums are added in varies from run to run there; a last-bit difference
changes a result only if it flips one step's "lower than the best so far" test.
"""

from __future__ import annotations

import math
import os

import numpy as np

CHUNK = 256  # rows whose distances to every centre are one BLAS call (scikit-learn's CHUNK_SIZE)


def mini_batch_kmeans(
    x: np.ndarray,
    k: int,
    seed: int = 0,
    batch_size: int = 1024,
    max_iter: int = 100,
    max_no_improvement: int = 10,
    reassignment_ratio: float = 0.01,
) -> tuple[np.ndarray, np.ndarray]:
    """(each row's cell as int32, the `k` centres) of the rows of `x` (float32 stays float32,
    other types are computed in float64). Raises ValueError when `x` has fewer than `k` rows."""
    from threadpoolctl import threadpool_limits  # here: the MCP server imports graph at start-up

    x = np.ascontiguousarray(x, x.dtype if x.dtype in (np.float32, np.float64) else np.float64)
    n = x.shape[0]
    if n < k:
        raise ValueError(f"{n} rows for {k} cells")
    rng = np.random.RandomState(seed)
    batch = min(batch_size, n)
    init_size = min(3 * k if 3 * batch < k else 3 * batch, n)
    rng.randint(0, n, init_size)  # scikit-learn's validation rows (they only rank several inits)
    seeding = x[rng.randint(0, n, init_size)] if init_size < n else x
    centres = _plus_plus(seeding, k, np.ones(init_size, x.dtype), rng)
    with threadpool_limits(limits=1, user_api="blas"):  # small gemms: threads only wait
        return _steps(x, centres, batch, rng, max_iter, max_no_improvement, reassignment_ratio)


def _steps(
    x: np.ndarray,
    centres: np.ndarray,
    batch: int,
    rng: np.random.RandomState,
    max_iter: int,
    max_no_improvement: int,
    reassignment_ratio: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Steps 2 to 4 of the module's docstring from the seeded centres."""
    n, k = x.shape[0], centres.shape[0]
    counts = np.zeros(k, x.dtype)
    progress = _Progress(batch, n, max_no_improvement)
    since_reassign = 0
    ones = np.ones(n, x.dtype)
    p = ones / np.sum(ones)
    for step in range(max_iter * n // batch):
        rows = x[rng.choice(n, batch, p=p, replace=True)]
        since_reassign += batch
        reassign = bool((counts == 0).any()) or since_reassign >= 10 * k
        if reassign:
            since_reassign = 0
        labels = nearest(rows, centres)
        inertia = _inertia(rows, centres, labels)
        centres = _moved(rows, labels, centres, counts)
        if reassign and reassignment_ratio > 0:
            _reassign(rows, centres, counts, reassignment_ratio, rng)
        if progress.stop(step, inertia):
            break
    return nearest(x, centres), centres


def nearest(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Each row's nearest centre (int32) by |c|^2 - 2 x.c, the first on a tie: `CHUNK` rows at a
    time, |c|^2 and the product in one gemm call of scipy's BLAS (C = -2 X C^T + C, with the
    operands laid out as scikit-learn passes them, which fixes the order of the sums)."""
    from scipy.linalg import blas

    gemm = blas.sgemm if x.dtype == np.float32 else blas.dgemm
    centres = np.ascontiguousarray(centres, x.dtype)
    norms = np.einsum("ij,ij->i", centres, centres)
    labels = np.empty(x.shape[0], np.int32)
    for start in range(0, x.shape[0], CHUNK):
        chunk = x[start : start + CHUNK]
        d = np.empty((chunk.shape[0], centres.shape[0]), x.dtype)
        d[:] = norms
        d = gemm(-2.0, centres.T, chunk.T, beta=1.0, c=d.T, trans_a=1, overwrite_c=1).T
        labels[start : start + CHUNK] = np.argmin(d, axis=1)
    return labels


def _plus_plus(x: np.ndarray, k: int, weight: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """k-means++ centres among the rows of `x` (greedy: the best of 2 + ln k candidates each)."""
    trials = 2 + int(np.log(k))
    centres = np.empty((k, x.shape[1]), x.dtype)
    centres[0] = x[rng.choice(x.shape[0], p=weight / weight.sum())]
    closest = _sq_distances(centres[0, np.newaxis], x)
    potential = closest @ weight
    for c in range(1, k):
        draws = rng.uniform(size=trials) * potential
        candidates = np.searchsorted(np.cumsum(weight * closest), draws)
        np.clip(candidates, None, closest.size - 1, out=candidates)
        dist = _sq_distances(x[candidates], x)
        np.minimum(closest, dist, out=dist)
        potentials = dist @ weight.reshape(-1, 1)
        best = np.argmin(potentials)
        potential, closest = potentials[best], dist[best]
        centres[c] = x[candidates[best]]
    return centres


def _sq_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of a's rows to b's, >= 0, as scikit-learn's
    `euclidean_distances` computes them: float32 rows in float64 blocks (sized to about a tenth
    of the inputs' and result's memory, at least 10 MiB), float64 ones at once."""
    if a.dtype != np.float32:
        out = -2 * (a @ b.T)
        out += np.einsum("ij,ij->i", a, a)[:, np.newaxis]
        out += np.einsum("ij,ij->i", b, b)[np.newaxis, :]
        return np.maximum(out, 0, out=out)
    m, n, d = a.shape[0], b.shape[0], a.shape[1]
    memory = max(((m + n) * d + m * n) / 10, 10 * 2**17)
    size = max(int((-2 * d + math.sqrt((2 * d) ** 2 + 4 * memory)) / 2), 1)
    out = np.empty((m, n), np.float32)
    for i in range(0, m, size):
        a64 = a[i : i + size].astype(np.float64)
        aa = np.einsum("ij,ij->i", a64, a64)[:, np.newaxis]
        for j in range(0, n, size):
            b64 = b[j : j + size].astype(np.float64)
            block = -2 * (a64 @ b64.T)
            block += aa
            block += np.einsum("ij,ij->i", b64, b64)[np.newaxis, :]
            out[i : i + size, j : j + size] = block.astype(np.float32, copy=False)
    return np.maximum(out, 0, out=out)


def _inertia(x: np.ndarray, centres: np.ndarray, labels: np.ndarray) -> float:
    """Sum of each row's squared distance to its centre, in x's precision: per row, the squares
    summed four at a time ((s0 + s1) + s2) + s3 into a running total; then the rows split in
    contiguous runs, one an OpenMP thread of scikit-learn (statically scheduled), summed in order
    and the runs' totals added."""
    diff = x - centres[labels]
    sq = diff * diff
    whole = sq.shape[1] // 4 * 4
    fours = sq[:, :whole].reshape(sq.shape[0], -1, 4)
    terms = np.concatenate(
        [((fours[..., 0] + fours[..., 1]) + fours[..., 2]) + fours[..., 3], sq[:, whole:]], axis=1
    )
    per_row = np.cumsum(terms, axis=1)[:, -1] if terms.shape[1] else np.zeros(len(x), x.dtype)
    threads = _threads()
    size, extra = divmod(len(x), threads)
    total, start = x.dtype.type(0), 0
    for t in range(threads):
        end = start + size + (t < extra)
        if end > start:
            total += np.cumsum(per_row[start:end])[-1]
        start = end
    return float(total)


def _threads() -> int:
    """The OpenMP threads scikit-learn would use: OMP_NUM_THREADS, else the usable cores."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def _moved(
    rows: np.ndarray, labels: np.ndarray, centres: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """The centres after a batch: a centre given rows becomes (centre x count + its rows, added
    in order) x (1 / new count), its count grows; the others stay. `counts` is updated in place."""
    got = np.bincount(labels, minlength=len(centres)).astype(rows.dtype)
    new = centres * counts[:, np.newaxis]
    np.add.at(new, labels, rows)
    has = got > 0
    counts[has] += got[has]
    new[has] *= (1 / counts[has])[:, np.newaxis]
    new[~has] = centres[~has]
    return new


def _reassign(
    rows: np.ndarray,
    centres: np.ndarray,
    counts: np.ndarray,
    ratio: float,
    rng: np.random.RandomState,
) -> None:
    """Move the centres whose count is under `ratio` x the largest (at most half a batch of
    them, the smallest counts) onto distinct rows of the batch; their counts become the
    smallest count of the others (so they are not moved again at once). In place."""
    low = counts < ratio * counts.max()
    if low.sum() > 0.5 * rows.shape[0]:
        low[np.argsort(counts)[int(0.5 * rows.shape[0]) :]] = False
    moved = low.sum()
    if moved:
        centres[low] = rows[rng.choice(rows.shape[0], replace=False, size=moved)]
    counts[low] = np.min(counts[~low])


class _Progress:
    """Early stopping: the exponentially weighted average of the batches' mean inertia (the
    first batch's, measured on the seeding, left out) and the steps since it last fell."""

    def __init__(self, batch: int, n: int, patience: int) -> None:
        self.batch, self.alpha, self.patience = batch, min(batch * 2.0 / (n + 1), 1), patience
        self.ewa: float | None = None
        self.best: float | None = None
        self.stale = 0

    def stop(self, step: int, inertia: float) -> bool:
        mean = inertia / self.batch
        if step == 0:
            return False
        self.ewa = mean if self.ewa is None else self.ewa * (1 - self.alpha) + mean * self.alpha
        if self.best is None or self.ewa < self.best:
            self.stale, self.best = 0, self.ewa
        else:
            self.stale += 1
        return self.stale >= self.patience
