"""Topics as communities of a graph of turns.

A topic of real work is a run of turns in one or more sessions that keep touching the same
things. Each turn is linked to its `NEIGHBOURS` nearest turns (cosine of its vector joined with
its rare keywords and files, topics.py) and to the turns just before and after it in its session
(`ADJACENT`); Louvain modularity communities (`RESOLUTION`) of that graph are the topics. The
number of topics comes from the data (no k), and the communities hardly move with the seed,
where k-means micro-clusters cut at one distance swung from 7 to 10 topics found by seed on the
labelled coding set. Tuned on that set (bench/RESULTS.md, Themes, discovery session 3).

Louvain, in short: start with every node alone; visit nodes and move each to the neighbouring
community that raises modularity most (the edge weight it gains inside, minus `RESOLUTION` x
what a random graph with the same degrees would put there); when nothing moves, each community
becomes one node and the moves repeat on that smaller graph. A higher resolution makes smaller
communities. Unlike Leiden, nothing splits a community that lost its bridge, so a community can
in principle be two runs that a moved turn used to join (none of 440 was, on 20k generated turns).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import scipy.sparse as sp

NEIGHBOURS = 5
ADJACENT = 3.0
RESOLUTION = 4.0
EXACT_UP_TO = 8_000  # exact nearest neighbours up to here; past it, within nearby k-means cells
CELL = 400  # turns per cell for the approximate neighbours
BLOCK = 2_048  # rows whose similarities are held at once (BLOCK x pool floats)


def turn_graph(v: np.ndarray, sessions: list[str], turns: list[int], k: int = NEIGHBOURS,
               adjacent: float = ADJACENT, seed: int = 0) -> sp.csr_matrix:
    """Symmetric weighted adjacency: each row's `k` nearest rows by cosine (unit rows; a pair that
    is near both ways weighs twice) plus `adjacent` between consecutive turns of a session."""
    n = v.shape[0]
    rows, cols, sims = _nearest(v, k, seed)
    keep = sims > 0
    w = sp.coo_matrix((sims[keep], (rows[keep], cols[keep])), shape=(n, n)).tocsr()
    w = w + w.T
    if adjacent > 0:
        order = sorted(range(n), key=lambda i: (sessions[i], turns[i]))
        pairs = np.array([(a, b) for a, b in zip(order, order[1:], strict=False) if sessions[a] == sessions[b]],
                         dtype=np.int64).reshape(-1, 2)
        if len(pairs):
            chain = sp.coo_matrix((np.full(len(pairs), adjacent, np.float32), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
            w = w + chain + chain.T
    return sp.csr_matrix(w, dtype=np.float64)


def _nearest(v: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, neighbour, cosine) for each row's `k` nearest other rows: exact in blocks up to
    EXACT_UP_TO rows, past that among the rows of its k-means cell and the two cells nearest it."""
    n = v.shape[0]
    k = min(k, n - 1)
    v = np.ascontiguousarray(v, dtype=np.float32)
    if n <= EXACT_UP_TO:
        groups = [(np.arange(n), np.arange(n))]
    else:
        from sklearn.cluster import MiniBatchKMeans

        km = MiniBatchKMeans(n_clusters=max(2, n // CELL), random_state=seed, n_init=1, batch_size=4096)
        groups = _cells(km.fit_predict(v), km.cluster_centers_)
    out_r, out_c, out_s = [], [], []
    for who, pool in groups:
        if len(who) == 0:
            continue
        kk = min(k, len(pool) - 1)
        if kk <= 0:
            continue
        for start in range(0, len(who), BLOCK):
            part = who[start:start + BLOCK]
            s = v[part] @ v[pool].T
            s[pool[None, :] == part[:, None]] = -np.inf  # not its own neighbour
            top = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            out_r.append(np.repeat(part, kk))
            out_c.append(pool[top].ravel())
            out_s.append(np.take_along_axis(s, top, axis=1).ravel())
    if not out_r:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(out_r), np.concatenate(out_c), np.concatenate(out_s)


def _cells(cell: np.ndarray, centres: np.ndarray, near: int = 3) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows of the cell, rows its neighbours are looked for in) per k-means cell: the cell itself
    and the `near` - 1 cells whose centres are nearest by cosine. The centres are normalised: the
    mean of a loose cell's unit rows is short, and by dot product a cell next to it would rank
    above the cell itself and leave its own rows out of its pool."""
    norms = np.linalg.norm(centres, axis=1, keepdims=True)
    unit = centres / np.where(norms == 0, 1, norms)
    sims = unit @ unit.T
    np.fill_diagonal(sims, np.inf)
    nearest = np.argsort(-sims, axis=1, kind="stable")[:, :near]
    order = np.argsort(cell, kind="stable")  # rows by cell, once (not one scan of every row per cell)
    members = np.split(order, np.searchsorted(cell[order], np.arange(1, len(centres))))
    return [(members[c], np.concatenate([members[d] for d in nearest[c]])) for c in range(len(centres))]


def louvain(w: sp.csr_matrix, resolution: float = RESOLUTION, seed: int = 0, levels: int = 20) -> np.ndarray:
    """Community of each node of a symmetric weighted graph by Louvain modularity optimisation
    (local moves in a seeded random order, then the communities become nodes, until no move)."""
    n = w.shape[0]
    labels = np.arange(n)
    total = float(w.sum())
    if n == 0 or total <= 0:
        return labels
    rng = np.random.default_rng(seed)
    g = w
    for _ in range(levels):
        part, moved = _local_moves(g, resolution, total, rng)
        if not moved:
            break
        _, part = np.unique(part, return_inverse=True)
        labels = part[labels]
        p = sp.csr_matrix((np.ones(len(part)), (np.arange(len(part)), part)), shape=(len(part), part.max() + 1))
        g = sp.csr_matrix(p.T @ g @ p)
    _, labels = np.unique(labels, return_inverse=True)
    return labels


def _local_moves(g: sp.csr_matrix, resolution: float, total: float, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Move nodes to the neighbouring community that gains the most modularity. Every node is
    visited once in a random order; a node is visited again only when a neighbour of it moved
    to another community (the fast local move of Leiden), until none would move."""
    n = g.shape[0]
    indptr, indices, data = g.indptr.tolist(), g.indices.tolist(), g.data.tolist()
    degree = np.asarray(g.sum(axis=1)).ravel().tolist()
    comm = list(range(n))
    tot = list(degree)
    scale = resolution / total
    queue = deque(rng.permutation(n).tolist())
    queued = [True] * n
    moved = False
    while queue:
        i = queue.popleft()
        queued[i] = False
        lo, hi = indptr[i], indptr[i + 1]
        mine, k = comm[i], degree[i]
        # links[c]: i's edge weight into community c; moving i into c gains links[c] - scale x tot[c] x k
        # (tot[c]: the degrees in c without i), in units of modularity x total / 2
        links: dict[int, float] = {}
        for j, x in zip(indices[lo:hi], data[lo:hi], strict=True):
            if j != i:
                c = comm[j]
                links[c] = links.get(c, 0.0) + x
        tot[mine] -= k
        best, gain = mine, links.get(mine, 0.0) - scale * tot[mine] * k
        for c, x in links.items():
            score = x - scale * tot[c] * k
            if score > gain + 1e-12:
                best, gain = c, score
        tot[best] += k
        if best != mine:
            comm[i] = best
            moved = True
            for j in indices[lo:hi]:
                if not queued[j] and comm[j] != best:
                    queued[j] = True
                    queue.append(j)
    return np.asarray(comm), moved
