"""Seed tagging's walk on the graph of turns: personalized PageRank, the local turns around the
seed hits, and the turns a walk from the core keeps out or brings in."""

from __future__ import annotations

import numpy as np
import polars as pl
import scipy.sparse as sp

from archive_mcp.themes.tag.tagging import Candidate, by_walk
from archive_mcp.themes.tag.walk import local_turns, personalized_pagerank, walk


def _runs() -> tuple[list[tuple[str, str, int]], np.ndarray]:
    """Two runs of six turns each: session `a` about one thing, session `b` about another (their
    vectors share nothing, so the graph links each turn only to its own run)."""
    keys = [("a", "main", t) for t in range(6)] + [("b", "main", t) for t in range(6)]
    x = np.zeros((12, 20))
    for i in range(12):
        x[i, 0 if i < 6 else 1] = 1.0
        x[i, 2 + i] = 0.1
    return keys, x / np.linalg.norm(x, axis=1, keepdims=True)


def test_personalized_pagerank_is_the_fixed_point_of_the_walk_with_restarts() -> None:
    w = sp.csr_matrix(
        np.array([[0, 2, 0, 0], [2, 0, 1, 0], [0, 1, 0, 3], [0, 0, 3, 0]], dtype=float)
    )
    restart = np.array([1.0, 0, 0, 0])
    p = personalized_pagerank(w, restart, alpha=0.2)
    step = w.toarray() / w.toarray().sum(axis=1, keepdims=True)
    want = np.linalg.solve(np.eye(4) - 0.8 * step.T, 0.2 * restart)
    assert np.allclose(p, want, atol=1e-8) and abs(p.sum() - 1) < 1e-8
    assert p[0] > p[1] > p[3]  # mass decays away from where the walk restarts


def test_local_turns_are_those_near_a_hit_in_its_session_and_the_attached_ones() -> None:
    turns = [("s", "main", t) for t in range(12)] + [("r", "main", t) for t in range(3)]
    got = local_turns(turns, {("s", "main", 5)}, {("r", "main", 2)}, window=2)
    assert got == [("s", "main", t) for t in range(3, 8)] + [("r", "main", 2)]


def test_the_walk_drops_an_attached_turn_of_another_run_and_adds_the_rest_of_the_cores_run() -> (
    None
):
    keys, x = _runs()
    core = {keys[0]: 1.0, keys[2]: 0.8}
    attached = {keys[0], keys[2], keys[3], keys[8]}  # keys[8]: run b, matched a seed word only
    drop, add = walk(keys, x, core, attached)
    assert drop == {keys[8]}
    assert add == {keys[1], keys[4], keys[5]}


def test_no_core_on_the_graph_changes_nothing() -> None:
    keys, x = _runs()
    assert walk(keys, x, {("z", "main", 0): 1.0}, {keys[8]}) == (set(), set())
    assert walk(keys[:2], x[:2], {keys[0]: 1.0}, {keys[1]}) == (set(), set())


def test_by_walk_keeps_the_cores_run_and_marks_what_the_walk_added() -> None:
    keys, x = _runs()
    frame = pl.DataFrame(
        {"session_id": [k[0] for k in keys], "agent": ["main"] * 12, "turn": [k[2] for k in keys]}
    )
    pos = {k: i for i, k in enumerate(keys)}
    attach = [
        Candidate(keys[0], 2.0, "seed:x"),
        Candidate(keys[2], 1.6, "seed:x"),
        Candidate(keys[8], 1.0, "seed:y"),
    ]
    out = by_walk(
        attach,
        frame,
        {keys[5]},
        x,
        pos,
        {keys[0], keys[2], keys[8]},
        {keys[0]: 1.0, keys[2]: 0.8},
        ["x", "y"],
    )
    assert [(c.key, c.provenance) for c in out] == [
        (keys[0], "seed:x"),
        (keys[2], "seed:x"),
        (keys[1], "walk:x | y"),
        (keys[3], "walk:x | y"),
        (keys[4], "walk:x | y"),
    ]  # keys[5] is noise
    assert {c.score for c in out[2:]} == {1.0}
