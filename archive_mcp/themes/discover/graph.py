"""Topics as communities of a graph of turns.

A topic of real work is a run of turns in one or more sessions that keep touching the same
things. Each turn is linked to its `NEIGHBOURS` nearest turns (cosine of its vector joined with
its rare keywords and files, topics.py) and to the turns just before and after it in its session
(`ADJACENT`); Louvain modularity communities (`DiscoveryRules.resolution`) of that graph are the topics. The
number of topics comes from the data (no k), and the communities hardly move with the seed,
where k-means micro-clusters cut at one distance swung from 7 to 10 topics found by seed on the
labelled coding set. Tuned on that set (bench/RESULTS.md, Themes, discovery session 3).

Louvain, in short: start with every node alone; visit nodes and move each to the neighbouring
community that raises modularity most (the edge weight it gains inside, minus the resolution x
what a random graph with the same degrees would put there); when nothing moves, each community
becomes one node and the moves repeat on that smaller graph. A higher resolution makes smaller
communities. Unlike Leiden, nothing splits a community that lost its bridge, so a community can
in principle be two runs that a moved turn used to join (none of 440 was, on 20k generated turns).

The broad themes (`micro_clusters`) and the topics (`cluster_turns`) of a workspace are found
here. Past `SAMPLE` turns, the graph, Louvain and the k-means of the broad level would grow with
the workspace (about 1.2 GB at 100k turns), so `cluster_sampled` clusters a sample of whole
sessions and every other turn, read from the index's vector files a block at a time, joins the
broad theme of its k-means cell and the topic of its nearest sampled turns (bench/RESULTS.md,
Themes, discovery session 4).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator

import numpy as np
import polars as pl
import scipy.sparse as sp

from archive_mcp.search.ondisk import read_rows
from archive_mcp.themes.discover.kmeans import mini_batch_kmeans
from archive_mcp.themes.discover.rules import DISCOVERY_RULES, DiscoveryRules
from archive_mcp.themes.discover.topics import with_topic_terms

# The turn graph's defaults, as tagging's walk uses it (discovery's own are `DiscoveryRules`).
NEIGHBOURS = DISCOVERY_RULES.neighbours
ADJACENT = 3.0
EXACT_UP_TO = 8_000  # exact nearest neighbours up to here; past it, within nearby k-means cells
CELL = 400  # turns per cell for the approximate neighbours
BLOCK = 2_048  # rows whose similarities are held at once (BLOCK x pool floats)


def turn_graph(
    v: np.ndarray,
    sessions: list[str],
    turns: list[int],
    k: int = NEIGHBOURS,
    adjacent: float = ADJACENT,
    seed: int = 0,
) -> sp.csr_matrix:
    """Symmetric weighted adjacency: each row's `k` nearest rows by cosine (unit rows; a pair that
    is near both ways weighs twice) plus `adjacent` between consecutive turns of a session."""
    n = v.shape[0]
    rows, cols, sims = _nearest(v, k, seed)
    keep = sims > 0
    w = sp.coo_matrix((sims[keep], (rows[keep], cols[keep])), shape=(n, n)).tocsr()
    w = w + w.T
    if adjacent > 0:
        order = sorted(range(n), key=lambda i: (sessions[i], turns[i]))
        pairs = np.array(
            [(a, b) for a, b in zip(order, order[1:], strict=False) if sessions[a] == sessions[b]],
            dtype=np.int64,
        ).reshape(-1, 2)
        if len(pairs):
            chain = sp.coo_matrix(
                (np.full(len(pairs), adjacent, np.float32), (pairs[:, 0], pairs[:, 1])),
                shape=(n, n),
            )
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
        groups = _cells(*mini_batch_kmeans(v, max(2, n // CELL), seed=seed, batch_size=4096))
    out_r, out_c, out_s = [], [], []
    for who, pool in groups:
        if len(who) == 0:
            continue
        kk = min(k, len(pool) - 1)
        if kk <= 0:
            continue
        for start in range(0, len(who), BLOCK):
            part = who[start : start + BLOCK]
            s = v[part] @ v[pool].T
            s[pool[None, :] == part[:, None]] = -np.inf  # not its own neighbour
            top = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            out_r.append(np.repeat(part, kk))
            out_c.append(pool[top].ravel())
            out_s.append(np.take_along_axis(s, top, axis=1).ravel())
    if not out_r:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(out_r), np.concatenate(out_c), np.concatenate(out_s)


def _cells(
    cell: np.ndarray, centres: np.ndarray, near: int = 3
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows of the cell, rows its neighbours are looked for in) per k-means cell: the cell itself
    and the `near` - 1 cells whose centres are nearest by cosine. The centres are normalised: the
    mean of a loose cell's unit rows is short, and by dot product a cell next to it would rank
    above the cell itself and leave its own rows out of its pool."""
    norms = np.linalg.norm(centres, axis=1, keepdims=True)
    unit = centres / np.where(norms == 0, 1, norms)
    sims = unit @ unit.T
    np.fill_diagonal(sims, np.inf)
    nearest = np.argsort(-sims, axis=1, kind="stable")[:, :near]
    order = np.argsort(
        cell, kind="stable"
    )  # rows by cell, once (not one scan of every row per cell)
    members = np.split(order, np.searchsorted(cell[order], np.arange(1, len(centres))))
    return [
        (members[c], np.concatenate([members[d] for d in nearest[c]])) for c in range(len(centres))
    ]


def louvain(
    w: sp.csr_matrix,
    resolution: float = DISCOVERY_RULES.resolution,
    seed: int = 0,
    levels: int = 20,
) -> np.ndarray:
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
        p = sp.csr_matrix(
            (np.ones(len(part)), (np.arange(len(part)), part)), shape=(len(part), part.max() + 1)
        )
        g = sp.csr_matrix(p.T @ g @ p)
    _, labels = np.unique(labels, return_inverse=True)
    return labels


def _local_moves(
    g: sp.csr_matrix, resolution: float, total: float, rng: np.random.Generator
) -> tuple[np.ndarray, bool]:
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


# --- discovery's clusters: broad themes (k-means micro-clusters merged) and topics (communities) --


def micro_clusters(
    x: np.ndarray, threshold: float, micro: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Broad clusters of unit vectors without choosing k: k-means micro-clusters (about 4
    sqrt(n)), then average-linkage merging of their centroids up to cosine distance `threshold`.
    Returns each row's micro-cluster, the micro-clusters' k-means centres and each micro-cluster's
    broad cluster. A zero vector (a turn without a shared term) is unlike every other: cosine
    distance 1, not NaN."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist

    n = x.shape[0]
    if n < 3:
        return np.arange(n), x, np.zeros(n, int)
    k = micro or int(min(n, max(8, 4 * math.sqrt(n))))
    if k >= n:
        assign, centroids = np.arange(n), x
    else:
        assign, centroids = mini_batch_kmeans(x, k, seed=seed, batch_size=4096)
    norms = np.linalg.norm(centroids, axis=1, keepdims=True)
    if centroids.shape[0] < 3:
        return assign, centroids, np.zeros(centroids.shape[0], int)
    distances = np.nan_to_num(pdist(centroids / np.where(norms == 0, 1, norms), "cosine"), nan=1.0)
    return assign, centroids, fcluster(linkage(distances, method="average"), threshold, "distance")


# Topics inside themes are communities of a graph of turns; their ids start here.
TOPIC_IDS = 1_000_000


def cluster_turns(
    frame: pl.DataFrame,
    x: np.ndarray,
    cut: float,
    min_size: int = 3,
    seed: int = 0,
    rules: DiscoveryRules = DISCOVERY_RULES,
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """All clusters of the frame's rows (broad themes and topics), and those kept as themes."""
    sessions = frame["session_id"].to_list()
    assign, _, broad = micro_clusters(x, cut, seed=seed)
    coarse = broad[assign]
    clusters: dict[int, list[int]] = {}
    for i, c in enumerate(coarse):
        clusters.setdefault(int(c), []).append(i)
    clusters.update(_topics(frame, x, coarse, seed, rules)[1])
    # A cluster is a theme when it is big enough and recurs: spans two sessions, or holds
    # `rules.one_session` turns of one (a long session's thread).
    keep = {
        c: idx
        for c, idx in clusters.items()
        if min_size <= len(idx) <= 0.5 * len(sessions)
        and recurs(len(idx), len({sessions[i] for i in idx}), rules.one_session)
    }
    return clusters, keep


def recurs(turns: int, sessions: int, one_session: int = DISCOVERY_RULES.one_session) -> bool:
    """Does a cluster of `turns` turns over `sessions` sessions recur enough to be a theme: two
    sessions, or `one_session` turns of one (0: never)?"""
    return sessions >= 2 or (one_session > 0 and turns >= one_session)


def _topics(
    frame: pl.DataFrame, x: np.ndarray, coarse: np.ndarray, seed: int, rules: DiscoveryRules
) -> tuple[np.ndarray, dict[int, list[int]]]:
    """Each row's community, and the topics: the communities that do not repeat a broad theme.

    Communities of a graph that links each turn to its nearest turns (its vector joined with its
    rare keywords and files) and to the turns next to it in its session: a topic of real work is
    a run of turns. They find the topics inside the broad themes; a topic that repeats a theme is
    dropped."""
    files = (
        [list(f or []) for f in frame["files"].to_list()]
        if "files" in frame.columns
        else [[]] * frame.height
    )
    terms = with_topic_terms(x, frame["keywords"].to_list(), files, rules.term_weight)
    graph = turn_graph(
        terms,
        frame["session_id"].to_list(),
        frame["turn"].to_list(),
        k=rules.neighbours,
        adjacent=rules.topic_adjacent,
        seed=seed,
    )
    community = louvain(graph, rules.resolution, seed=seed)
    fine: dict[int, list[int]] = {}
    for i, c in enumerate(community):
        fine.setdefault(TOPIC_IDS + int(c), []).append(i)
    return community, new_topics(fine, coarse)


def new_topics(
    fine: dict[int, list[int]], coarse: np.ndarray, same: float = 0.8
) -> dict[int, list[int]]:
    """The topics that do not repeat a broad theme (Jaccard of their rows under `same` with every
    broad cluster; `coarse` is each row's broad cluster). Only the broad clusters a topic's rows
    fall in can overlap it, so this costs one pass over the rows, not topics x themes x rows."""
    sizes = np.bincount(coarse)
    out = {}
    for c, idx in fine.items():
        broad, inter = np.unique(coarse[idx], return_counts=True)
        if not (inter / (sizes[broad] + len(idx) - inter) >= same).any():
            out[c] = idx
    return out


# --- past SAMPLE turns: cluster a sample of whole sessions, the rest joins by its nearest turns --

SAMPLE = 40_000  # turns clustered at most (the graph and Louvain of 40k turns: about 250 MB)
READ = 16_384  # rows of a vector file read at once


def sample_rows(sessions: pl.Series, limit: int | None = None, seed: int = 0) -> np.ndarray:
    """Which rows discovery clusters: every row when there are at most `limit`, else the rows of
    whole sessions taken in a seeded random order while they fit in `limit` (a topic is runs of
    turns in sessions, and the graph links a turn to the turns next to it)."""
    n, limit = len(sessions), SAMPLE if limit is None else limit
    if n <= limit:
        return np.ones(n, bool)
    codes = sessions.rank("dense").to_numpy().astype(np.int64) - 1
    sizes = np.bincount(codes)
    order = np.random.default_rng(seed).permutation(len(sizes))
    take = np.zeros(len(sizes), bool)
    take[order[np.cumsum(sizes[order]) <= limit]] = True
    take[order[0]] = True  # one session of more than `limit` turns is the sample
    return take[codes]


class DiskRows:
    """Chosen rows of (float16) vector matrices, the index's memory-mapped vector files, read
    `READ` rows at a time (`read_rows`): neither the matrix nor its mapped pages stay in memory."""

    def __init__(self, parts: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.parts = parts  # (matrix, its increasing row numbers), in the frame's order
        self.shape = (sum(len(rows) for _, rows in parts), parts[0][0].shape[1] if parts else 0)

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first frame row, float32 vectors of the next rows), the whole frame in order."""
        at = 0
        for m, rows in self.parts:
            for lo in range(0, m.shape[0], READ):
                a, b = np.searchsorted(rows, [lo, lo + READ])
                if b > a:
                    yield (
                        at,
                        read_rows(m, lo, min(lo + READ, m.shape[0]))[rows[a:b] - lo].astype(
                            np.float32
                        ),
                    )
                    at += b - a

    def take(self, idx: np.ndarray) -> np.ndarray:
        """float32 vectors of these frame rows (increasing)."""
        out = np.zeros((len(idx), self.shape[1]), np.float32)
        for start, block in self.blocks():
            a, b = np.searchsorted(idx, [start, start + len(block)])
            out[a:b] = block[idx[a:b] - start]
        return out


def join_nearest(
    v: np.ndarray,
    sample: np.ndarray,
    community: np.ndarray,
    centres: np.ndarray,
    pools: list[np.ndarray],
    k: int = NEIGHBOURS,
) -> tuple[np.ndarray, np.ndarray]:
    """For unit rows `v` outside the sample: the k-means cell of the sample each falls in (nearest
    of the `centres` that have sampled rows, by what k-means minimises) and the community most of
    its `k` nearest sampled rows are in (by cosine, among `pools[cell]`: the cell's rows and its
    nearest cells'; each vote weighted by its similarity). `community`: each sampled row's."""
    score = v @ centres.T - 0.5 * (centres * centres).sum(1)
    score[:, np.array([len(p) == 0 for p in pools])] = -np.inf
    cell = np.argmax(score, axis=1)
    out = np.zeros(len(v), np.int64)
    for c in np.unique(cell):
        rows = np.flatnonzero(cell == c)
        pool = pools[c]
        kk = min(k, len(pool))
        s = v[rows] @ sample[pool].T
        top = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
        votes, w = community[pool[top]], np.take_along_axis(s, top, axis=1)
        tally = ((votes[:, :, None] == votes[:, None, :]) * w[:, None, :]).sum(2)
        out[rows] = votes[np.arange(len(rows)), np.argmax(tally, axis=1)]
    return cell, out


def cluster_sampled(
    frame: pl.DataFrame,
    rows: DiskRows,
    cut: float,
    min_size: int = 3,
    seed: int = 0,
    rules: DiscoveryRules = DISCOVERY_RULES,
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray], dict[int, np.ndarray], np.ndarray]:
    """`cluster_turns` past `SAMPLE` rows: the broad themes and topics of a sample of whole
    sessions (`sample_rows`), then every other row, streamed from disk, joins the broad theme of
    its k-means cell and the topic of its nearest sampled rows (`join_nearest`). Returns all
    clusters, those kept, each kept cluster's members' similarity to its mean (as `discover`
    scores them) and the sample (a bool per row: the frame's `sampled` when it has one)."""
    sample = (
        frame["sampled"].to_numpy()
        if "sampled" in frame.columns
        else sample_rows(frame["session_id"], seed=seed)
    )
    at = np.flatnonzero(sample)
    xs = rows.take(at)
    assign, centres, broad = micro_clusters(xs, cut, seed=seed)
    community, topics = _topics(frame.filter(pl.Series(sample)), xs, broad[assign], seed, rules)
    topic_of = np.full(int(community.max()) + 1, -1, np.int64)
    for c in topics:
        topic_of[c - TOPIC_IDS] = c
    pools = [pool for _, pool in _cells(assign, centres)]
    coarse, fine = np.zeros(frame.height, np.int64), np.full(frame.height, -1, np.int64)
    coarse[at], fine[at] = broad[assign], topic_of[community]
    sums = {
        "coarse": np.zeros((int(broad.max()) + 1, xs.shape[1])),
        "fine": np.zeros((len(topic_of), xs.shape[1])),
    }

    def add(labels: tuple[np.ndarray, np.ndarray], v: np.ndarray) -> None:
        for name, lab in (("coarse", labels[0]), ("fine", labels[1] - TOPIC_IDS)):
            ok = lab >= 0
            sums[name] += (
                sp.csr_matrix(
                    (np.ones(ok.sum()), (lab[ok], np.flatnonzero(ok))),
                    shape=(len(sums[name]), len(v)),
                )
                @ v
            )

    add((coarse[at], fine[at]), xs)
    for start, v in rows.blocks():
        rest = np.flatnonzero(~sample[start : start + len(v)])
        cell, joined = join_nearest(v[rest], xs, community, centres, pools, k=rules.neighbours)
        coarse[start + rest], fine[start + rest] = broad[cell], topic_of[joined]
        add((coarse[start + rest], fine[start + rest]), v[rest])
    del xs
    counts = {
        "coarse": np.bincount(coarse, minlength=len(sums["coarse"])),
        "fine": np.bincount(fine[fine >= 0] - TOPIC_IDS, minlength=len(topic_of)),
    }
    mean = {k: sums[k] / np.maximum(counts[k], 1)[:, None] for k in sums}
    sim = np.zeros((2, frame.height), np.float32)
    for start, v in rows.blocks():
        end = start + len(v)
        sim[0, start:end] = np.einsum("ij,ij->i", v, mean["coarse"][coarse[start:end]])
        sim[1, start:end] = np.einsum(
            "ij,ij->i", v, mean["fine"][np.maximum(fine[start:end] - TOPIC_IDS, 0)]
        )
    clusters = {**_groups(coarse), **_groups(fine[fine >= 0], np.flatnonzero(fine >= 0))}
    codes = frame["session_id"].rank("dense").to_numpy()
    keep = {
        c: idx
        for c, idx in clusters.items()
        if min_size <= len(idx) <= 0.5 * frame.height
        and recurs(len(idx), len(np.unique(codes[idx])), rules.one_session)
    }
    return clusters, keep, {c: sim[int(c >= TOPIC_IDS), idx] for c, idx in keep.items()}, sample


def _groups(labels: np.ndarray, rows: np.ndarray | None = None) -> dict[int, np.ndarray]:
    """label -> the (increasing) rows with it."""
    rows = np.arange(len(labels)) if rows is None else rows
    if len(labels) == 0:
        return {}
    order = np.argsort(labels, kind="stable")
    names, first = np.unique(labels[order], return_index=True)
    return {int(c): rows[idx] for c, idx in zip(names, np.split(order, first[1:]), strict=True)}


# --- stable ids: a new cluster takes the id of the previous run's it overlaps most ---------------


def match_rows(
    new: dict[int, np.ndarray],
    old: dict[int, tuple[np.ndarray, int]],
    n: int,
    min_overlap: float = 0.3,
) -> dict[int, int]:
    """New cluster -> stable id, greedy by Jaccard overlap (at least `min_overlap`) with the
    previous run's clusters; clusters as rows of a frame of `n` (the previous run's: its members'
    rows still in the frame, and how many it had), overlaps counted from each row's new clusters."""
    a_ids, b_ids = list(new), list(old)
    layers: list[
        np.ndarray
    ] = []  # a row's new clusters, one a layer (a row is in a theme and a topic)
    for i, a in enumerate(a_ids):
        rows, depth = np.asarray(new[a], np.int64), 0
        while len(rows):
            if depth == len(layers):
                layers.append(np.full(n, -1, np.int32))
            free = layers[depth][rows] < 0
            layers[depth][rows[free]] = i
            rows, depth = rows[~free], depth + 1
    sizes_a, pairs = [len(new[a]) for a in a_ids], []
    for b in b_ids:
        counts = np.zeros(len(a_ids), np.int64)
        for got in (layer[old[b][0]] for layer in layers):
            counts += np.bincount(got[got >= 0], minlength=len(a_ids))
        pairs += [
            (j, a_ids[i], b)
            for i in np.flatnonzero(counts)
            if (j := int(counts[i]) / max(1, sizes_a[i] + old[b][1] - int(counts[i])))
            >= min_overlap
        ]
    return greedy_ids(pairs, a_ids, b_ids)


def greedy_ids(
    pairs: list[tuple[float, int, int]], new: list[int], old: list[int]
) -> dict[int, int]:
    """New cluster -> stable id from (overlap, new, old) pairs: the largest overlaps first, each
    old id once; the rest get ids after every old one."""
    mapping: dict[int, int] = {}
    used: set[int] = set()
    for _, a, b in sorted(pairs, reverse=True):
        if a not in mapping and b not in used:
            mapping[a] = b
            used.add(b)
    next_id = max([*old, *used, -1]) + 1
    for a in sorted(new):
        if a not in mapping:
            mapping[a] = next_id
            next_id += 1
    return mapping
