"""A theme's turns by a random walk on the graph of turns around its seed hits.

A topic of real work is a run of turns, and the graph of `graph.turn_graph` (each turn linked to
its nearest turns by vector and to the turns next to it in its session) already holds the runs.
A personalized PageRank (random walk that restarts at the theme's core, each core turn weighted by
its seed share) scores every turn of a local graph: the turns within `WINDOW` turns of a seed hit
in its session, and the turns tagging attached. A turn's score is its walk probability over its
degree; the reference is the `REF_QUANTILE` quantile of the core turns' scores. An attached turn
that scores under `DROP` x the reference sits in another run (a generic data-flow turn that shares
a seed's words) and is left out; a turn of the local graph from `ADD` x the reference joins. Tuned
on the 12 tuned topics of the labelled coding set (bench/RESULTS.md, Themes, tagging session 3).

The graph is built per call from the local turns only (a few hundred here; at most the seed hits
x (2 `WINDOW` + 1)), never from the whole workspace.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from archive_mcp.themes.discover.graph import turn_graph

Key = tuple[str, str, int]

ALPHA = 0.07  # restart probability of the walk
WINDOW = 3
DROP = 0.3
ADD = 0.45  # the most recall on the tuned 12 at precision >= 0.6 there (0.5: more precision, less recall)
REF_QUANTILE = 0.7
TOLERANCE = 1e-9
MAX_STEPS = 500


def personalized_pagerank(
    w: sp.csr_matrix, restart: np.ndarray, alpha: float = ALPHA
) -> np.ndarray:
    """Stationary probabilities of a walk on the weighted graph `w` that restarts with probability
    `alpha` at a node drawn from `restart` (non-negative, not all zero), iterated to convergence."""
    degree = np.asarray(w.sum(axis=1)).ravel()
    step = sp.diags(1.0 / np.where(degree > 0, degree, 1.0)) @ w
    start = restart / restart.sum()
    p = start.copy()
    for _ in range(MAX_STEPS):
        nxt = alpha * start + (1 - alpha) * (step.T @ p)
        if np.abs(nxt - p).sum() < TOLERANCE:
            return np.asarray(nxt)
        p = nxt
    return np.asarray(p)


def local_turns(
    turns: list[Key], hits: set[Key], attached: set[Key], window: int | None = None
) -> list[Key]:
    """The `turns` within `window` (default `WINDOW`) turns of a hit in their session, and the
    attached ones."""
    window = WINDOW if window is None else window
    near = {(k[0], k[2] + d) for k in hits for d in range(-window, window + 1)}
    return [k for k in turns if (k[0], k[2]) in near or k in attached]


def walk_scores(pool: list[Key], x: np.ndarray, core: Mapping[Key, float]) -> np.ndarray | None:
    """Each `pool` turn's walk score over the reference of the core's (`x`: the pool's unit
    vectors, one row each, in order; `core`: key -> restart weight); None when the pool is under
    3 turns or holds no core turn."""
    at = {k: i for i, k in enumerate(pool)}
    restart = np.zeros(len(pool))
    for k, weight in core.items():
        if k in at:
            restart[at[k]] = weight
    if len(pool) < 3 or restart.sum() <= 0:
        return None
    w = turn_graph(x, [k[0] for k in pool], [k[2] for k in pool])
    degree = np.asarray(w.sum(axis=1)).ravel()
    score = personalized_pagerank(w, restart) / np.where(degree > 0, degree, 1.0)
    ref = float(np.quantile(score[restart > 0], REF_QUANTILE))
    return np.asarray(score / ref) if ref > 0 else np.asarray(score)


def walk(
    pool: list[Key], x: np.ndarray, core: Mapping[Key, float], attached: set[Key]
) -> tuple[set[Key], set[Key]]:
    """(attached turns to leave out, pool turns to add) by the walk from `core` (key -> weight)
    over the graph of `pool` (`x`: the pool's unit vectors, one row each, in order)."""
    score = walk_scores(pool, x, core)
    if score is None:
        return set(), set()
    at = {k: i for i, k in enumerate(pool)}
    drop = {k for k in attached if k in at and k not in core and score[at[k]] < DROP}
    add = {pool[i] for i in np.flatnonzero(score >= ADD)} - attached - set(core)
    return drop, add
