"""Discovery's topic level: the graph of turns (nearest turns + session neighbours), Louvain
communities of it, and the topics `cluster_turns` keeps."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp
from archive_mcp.workspaces import Workspace

from archive_mcp.themes.discover import graph
from archive_mcp.themes.discover.discovery import discover
from archive_mcp.themes.discover.graph import (
    TOPIC_IDS,
    cluster_turns,
    louvain,
    micro_clusters,
    new_topics,
    turn_graph,
)
from archive_mcp.themes.discover.rules import DISCOVERY_RULES, DiscoveryRules
from archive_mcp.themes.labels import unique_label


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _blobs(
    sizes: list[int], dims: int = 16, spread: float = 0.05, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.eye(dims)[: len(sizes)]
    truth = np.repeat(np.arange(len(sizes)), sizes)
    return _unit(centres[truth] + spread * rng.standard_normal((len(truth), dims))), truth


def test_the_graph_links_nearest_turns_both_ways_and_consecutive_turns_of_a_session() -> None:
    x = _unit(np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99]], dtype=np.float32))
    w = turn_graph(x, ["a", "a", "b", "b"], [1, 2, 1, 2], k=1, adjacent=0.0)
    assert (w != w.T).nnz == 0
    cos = float(x[0] @ x[1])
    assert w[0, 1] == pytest.approx(2 * cos)  # each is the other's nearest: counted both ways
    assert w[0, 2] == 0 and w[1, 3] == 0
    chained = turn_graph(x, ["a", "b", "a", "b"], [1, 1, 2, 2], k=1, adjacent=3.0)
    assert chained[0, 2] == pytest.approx(3.0)  # turns 1 and 2 of session a
    assert chained[1, 3] == pytest.approx(3.0)
    assert chained[0, 3] == 0  # different sessions, not near


def test_turns_that_are_not_consecutive_in_their_session_get_no_chain_edge() -> None:
    x = _unit(np.eye(3, dtype=np.float32) + 0.01)
    w = turn_graph(x, ["s", "s", "t"], [3, 1, 1], k=1, adjacent=2.0)
    assert w[0, 1] >= 2.0  # turns 1 and 3 are consecutive among the frame's turns of s
    assert w[0, 2] < 2.0 and w[1, 2] < 2.0


def test_louvain_finds_two_cliques_joined_by_one_weak_edge_at_every_seed() -> None:
    n = 12
    a = np.zeros((n, n))
    a[:6, :6] = 1
    a[6:, 6:] = 1
    np.fill_diagonal(a, 0)
    a[5, 6] = a[6, 5] = 0.1
    for seed in range(4):
        labels = louvain(sp.csr_matrix(a), resolution=1.0, seed=seed)
        assert len(set(labels[:6])) == 1 and len(set(labels[6:])) == 1 and labels[0] != labels[6]


def test_a_higher_resolution_splits_into_smaller_communities() -> None:
    x, _ = _blobs([40, 40])
    w = turn_graph(x, [str(i) for i in range(80)], list(range(80)), k=5, adjacent=0.0)
    coarse, fine = louvain(w, resolution=0.2), louvain(w, resolution=8.0)
    assert len(set(coarse)) == 2
    assert len(set(fine)) > len(set(coarse))


def test_louvain_leaves_isolated_nodes_alone_and_an_empty_graph_as_is() -> None:
    a = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    labels = louvain(a, resolution=1.0)
    assert labels[0] == labels[1] != labels[2]
    assert list(louvain(sp.csr_matrix((3, 3)))) == [0, 1, 2]


def test_approximate_neighbours_past_the_exact_size_stay_within_the_topic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x, truth = _blobs([60, 60, 60, 60])
    monkeypatch.setattr(graph, "EXACT_UP_TO", 50)
    monkeypatch.setattr(graph, "CELL", 40)
    rows, cols, sims = graph._nearest(x, 5, seed=0)
    assert len(rows) == 5 * len(x)
    assert (rows != cols).all()
    assert (truth[rows] == truth[cols]).mean() > 0.99
    assert np.allclose(sims, np.einsum("ij,ij->i", x[rows], x[cols]), atol=1e-5)


def test_runs_of_work_across_sessions_come_back_as_topics_inside_one_broad_theme() -> None:
    # Two close topics (one broad theme at the cut) and an unrelated one; each topic is worked on
    # in runs of 5 turns in three sessions that also hold the other.
    rng = np.random.default_rng(1)
    centres = _unit(np.array([[1.0, 0.3, 0, 0], [1.0, -0.3, 0, 0], [0, 0, 1.0, 0]]))
    truth = np.repeat([0, 1, 2], 15)
    x = _unit(
        np.hstack([centres[truth], np.zeros((45, 28))]) + 0.01 * rng.standard_normal((45, 32))
    )
    sessions = [f"s{i % 15 // 5}" if t < 2 else f"u{i % 15 // 5}" for i, t in enumerate(truth)]
    turns = [int(t) * 10 + i % 5 for i, t in enumerate(truth)]
    frame = pl.DataFrame(
        {
            "session_id": sessions,
            "turn": turns,
            "keywords": [[] for _ in truth],
            "files": [[] for _ in truth],
        }
    )
    clusters, keep = cluster_turns(frame, x, cut=0.35)
    broad = [set(idx) for c, idx in clusters.items() if c < TOPIC_IDS]
    assert set(range(30)) in broad  # the two topics are one broad theme
    topics = [set(idx) for c, idx in keep.items() if c >= TOPIC_IDS]
    assert topics
    assert all(len({int(truth[i]) for i in got}) == 1 for got in topics)  # never across the two
    # At this small size the default resolution cuts them into pieces; at a low one the
    # communities of the same graph are exactly the topics.
    w = turn_graph(x, sessions, turns, seed=0)
    labels = louvain(w, resolution=0.5)
    assert sorted(sorted(np.flatnonzero(labels == c).tolist()) for c in set(labels)) == [
        list(range(15)),
        list(range(15, 30)),
        list(range(30, 45)),
    ]


def test_discovered_labels_never_repeat_within_a_run() -> None:
    taken: set[str] = set()
    assert unique_label(["api", "deploy", "vercel", "slack"], taken, 1) == "api / deploy / vercel"
    assert unique_label(["api", "deploy", "vercel", "slack"], taken, 2) == "api / deploy / slack"
    assert (
        unique_label(["api", "deploy", "vercel", "slack"], taken, 3)
        == "api / deploy / vercel / slack"
    )
    assert (
        unique_label(["API", "deploy", "vercel", "slack"], taken, 4) == "API / deploy / vercel (4)"
    )
    assert unique_label(["nats"], taken, 5) == "nats"
    assert unique_label(["nats"], taken, 6) == "nats (6)"
    assert unique_label([], taken, 7) == "cluster 7"


def test_approximate_neighbours_always_look_in_the_rows_own_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cell 0 is loose (its centre is short); by dot product cells 1, 2 and 4 all rank above it,
    # so its two rows, each the other's nearest, were looked for only in the other cells.
    x = _unit(
        np.array(
            [
                [1, 0, 0.05],
                [1, 0, -0.05],
                [0.9, 0.3, 0],
                [0.9, 0.3, 0.01],
                [0.9, -0.3, 0],
                [0.9, -0.3, 0.01],
                [0, 0, 1],
                [0, 0.01, 1],
                [0.9, 0, 0.3],
                [0.9, 0.01, 0.3],
            ],
            dtype=np.float32,
        )
    )
    cells = np.repeat(np.arange(5), 2)
    centres = np.array([[0.3, 0, 0], [0.9, 0.3, 0], [0.9, -0.3, 0], [0, 0, 1], [0.9, 0, 0.3]])
    monkeypatch.setattr(graph, "mini_batch_kmeans", lambda *_, **__: (cells, centres))
    monkeypatch.setattr(graph, "EXACT_UP_TO", 5)
    monkeypatch.setattr(graph, "CELL", 2)
    rows, cols, _ = graph._nearest(x, 1, seed=0)
    assert dict(zip(rows.tolist(), cols.tolist(), strict=True)) == {
        0: 1,
        1: 0,
        2: 3,
        3: 2,
        4: 5,
        5: 4,
        6: 7,
        7: 6,
        8: 9,
        9: 8,
    }


def test_a_topic_that_repeats_a_broad_theme_is_dropped() -> None:
    coarse = np.array([1, 1, 1, 1, 1, 2, 2, 2, 2, 2])
    fine = {
        10: [0, 1, 2, 3, 4],  # the whole of theme 1: Jaccard 1
        11: [5, 6, 7, 8],  # 4 of theme 2's 5: Jaccard 0.8, still the theme
        12: [0, 1, 2],  # 3 of 5: 0.6, a topic inside theme 1
        13: [4, 5, 6, 7, 8, 9],
    }  # theme 2 and one row of theme 1: 5 / 6 = 0.83
    assert new_topics(fine, coarse) == {12: [0, 1, 2]}
    assert new_topics(fine, coarse, same=0.9) == {
        11: [5, 6, 7, 8],
        12: [0, 1, 2],
        13: [4, 5, 6, 7, 8, 9],
    }
    assert new_topics({}, np.zeros(0, int)) == {}


def _frame(users: list[str], sessions: list[str]) -> pl.DataFrame:
    n = len(users)
    return pl.DataFrame(
        {
            "session_id": sessions,
            "agent": ["main"] * n,
            "turn": list(range(n)),
            "user_text": users,
            "assistant_text": [""] * n,
            "keywords": [[] for _ in users],
            "files": [[] for _ in users],
        },
        schema_overrides={"keywords": pl.List(pl.String), "files": pl.List(pl.String)},
    )


@pytest.mark.parametrize(
    "users",
    [
        [],
        ["deploy the api"],
        ["alpha", "beta", "gamma", "delta"],
        [
            "cache the sessions",
            "cache the sessions in redis",
            "cache sessions",
            "unrelated words only here",
        ],
    ],
)
def test_discovery_without_vectors_on_tiny_workspaces_finds_nothing_rather_than_failing(
    tmp_path: Path, users: list[str]
) -> None:
    # No term shared by two turns (or a turn that shares none) gives an all-zero TF-IDF row; its
    # cosine distance is NaN, which the dendrogram refused.
    ws = Workspace("w", "w", root=tmp_path)
    found = discover(ws, _frame(users, [f"s{i % 2}" for i in range(len(users))]), None)
    assert (found.turns, found.themes, found.method) == (len(users), [], "tfidf")


def test_a_zero_vector_is_its_own_cluster() -> None:
    x = np.vstack(
        [np.zeros((1, 4)), _unit(np.array([[1, 0, 0, 0], [0.99, 0.1, 0, 0], [0, 0, 1, 0]]))]
    )
    assign, _, broad = micro_clusters(x, 0.5)
    assert broad[assign].tolist() == [2, 1, 1, 3]


# --- past graph.SAMPLE turns: a sample of whole sessions is clustered, the rest joins it ---------


def test_the_sample_is_whole_sessions_up_to_the_limit_and_everything_below_it() -> None:
    sessions = pl.Series([f"s{i // 10:02d}" for i in range(200)])  # 20 sessions of 10 turns
    assert graph.sample_rows(sessions, limit=200).all()
    picked = graph.sample_rows(sessions, limit=55)
    assert picked.sum() == 50  # five whole sessions; a sixth would not fit
    chosen = set(sessions.filter(pl.Series(picked)).to_list())
    assert len(chosen) == 5 and all(picked[np.array([s in chosen for s in sessions])])
    assert (graph.sample_rows(sessions, limit=55) == picked).all()  # seeded
    assert (graph.sample_rows(sessions, limit=55, seed=1) != picked).any()
    assert graph.sample_rows(
        pl.Series(["one"] * 30), limit=10
    ).all()  # one session too big is the sample


@pytest.mark.parametrize("read", [3, 16_384])
def test_vectors_on_disk_are_read_by_rows_without_mapping_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: int
) -> None:
    monkeypatch.setattr(graph, "READ", read)
    m = np.arange(40_000, dtype=np.float16).reshape(10_000, 4)
    np.save(tmp_path / "v.npy", m)
    mapped = np.load(tmp_path / "v.npy", mmap_mode="r")
    rows = np.array([0, 5, 16_000 % 10_000, 9_999])
    source = graph.DiskRows([(mapped, np.sort(rows)), (m[:10], np.array([2, 3]))])
    assert source.shape == (6, 4)
    whole = np.vstack([m[np.sort(rows)], m[[2, 3]]]).astype(np.float32)
    assert np.array_equal(np.vstack([b for _, b in source.blocks()]), whole)
    assert [s for s, _ in source.blocks()][-1] == 4 + (
        read == 3
    )  # each window with rows of it in order
    assert np.array_equal(source.take(np.array([1, 4, 5])), whole[[1, 4, 5]])
    assert np.array_equal(
        graph.read_rows(mapped[3:], 0, 2), m[3:5]
    )  # a view of a mapping: sliced, not read from the file


def test_rows_outside_the_sample_join_the_cell_and_community_of_their_nearest_sampled_rows() -> (
    None
):
    sample = _unit(
        np.array(
            [[1, 0, 0], [1, 0.1, 0], [0, 1, 0], [0.1, 1, 0], [0, 0, 1], [0, 0.1, 1]],
            dtype=np.float32,
        )
    )
    community = np.array([7, 7, 8, 8, 9, 9])
    centres = np.array([[1, 0.05, 0], [0.05, 1, 0], [0, 0.05, 1]], dtype=np.float32)
    pools = [
        np.array([0, 1]),
        np.array([2, 3]),
        np.array([], dtype=np.int64),
    ]  # the last cell has no sampled rows
    v = _unit(np.array([[0.9, 0.2, 0], [0.2, 0.9, 0.1], [0.1, 0, 1]], dtype=np.float32))
    cell, joined = graph.join_nearest(v, sample, community, centres, pools, k=2)
    assert cell.tolist() == [0, 1, 0] and joined.tolist() == [7, 8, 7]
    pools[2] = np.array([4, 5])
    cell, joined = graph.join_nearest(v, sample, community, centres, pools, k=2)
    assert cell.tolist() == [0, 1, 2] and joined.tolist() == [7, 8, 9]


def test_a_clustered_sample_finds_what_clustering_everything_finds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Four blobs worked on in sessions of 6 turns; 40% of the sessions are sampled.
    x, truth = _blobs([120, 120, 120, 120], spread=0.05, seed=2)
    order = np.random.default_rng(3).permutation(len(x))
    x, truth = x[order], truth[order]
    sessions = [f"s{truth[i]}-{i // 24:02d}" for i in range(len(x))]
    frame = pl.DataFrame(
        {
            "session_id": sessions,
            "agent": ["main"] * len(x),
            "turn": list(range(len(x))),
            "keywords": [[] for _ in truth],
            "files": [[] for _ in truth],
        }
    )
    np.save(tmp_path / "v.npy", x.astype(np.float16))
    rows = graph.DiskRows([(np.load(tmp_path / "v.npy", mmap_mode="r"), np.arange(len(x)))])
    monkeypatch.setattr(graph, "SAMPLE", 200)
    clusters, keep, sims, sampled = graph.cluster_sampled(frame, rows, cut=0.35)
    assert 150 <= sampled.sum() <= 200
    broad = {c: idx for c, idx in clusters.items() if c < graph.TOPIC_IDS}
    assert sorted(sorted(idx.tolist()) for idx in broad.values()) == sorted(
        np.flatnonzero(truth == t).tolist() for t in range(4)
    )  # every row, in its blob's theme
    assert all(
        len(set(truth[idx].tolist())) == 1 for c, idx in clusters.items() if c >= graph.TOPIC_IDS
    )
    assert set(keep) <= set(clusters) and broad.keys() <= keep.keys()
    xf = rows.take(np.arange(len(x)))
    for c, idx in keep.items():
        assert np.allclose(sims[c], xf[idx] @ xf[idx].mean(0), atol=1e-4)


# --- the space discovery clusters: the static model's vectors joined with the texts' TF-IDF -----


def test_the_static_models_vectors_are_joined_with_the_texts_tfidf_and_cut_there() -> None:
    from archive_mcp.themes.discover import discovery

    users = ["deploy the api", "deploy the api again", "fix the chart", "fix the chart colours"]
    frame = _frame(users, ["s0", "s1", "s0", "s1"])
    x = _unit(np.eye(4, 3, dtype=np.float32) + 0.1)
    z, cut = discovery.discovery_space(frame, x, "minilm-static-256")
    assert z.shape[0] == 4 and z.shape[1] > 3 and cut == 0.5  # DiscoveryRules.mixed_cuts
    assert np.allclose(np.linalg.norm(z, axis=1), 1.0, atol=1e-5)
    # the first columns are the vectors, scaled down by the joined TF-IDF part
    assert np.allclose(z[:, :3] / np.linalg.norm(z[:, :3], axis=1, keepdims=True), x, atol=1e-5)
    # the two deploy turns share words the two chart turns do not: closer in the joined space
    assert z[0] @ z[1] - x[0] @ x[1] > z[0] @ z[2] - x[0] @ x[2]


def test_other_models_and_a_zero_share_keep_the_vectors_and_their_cut() -> None:
    from archive_mcp.themes.discover import discovery

    frame = _frame(["a b", "a c", "b c"], ["s0", "s1", "s0"])
    x = _unit(np.eye(3, dtype=np.float32) + 0.1)
    z, cut = discovery.discovery_space(frame, x, "all-minilm-l6-v2")
    assert z is x and cut == 0.6  # DiscoveryRules.cuts
    no_share = replace(DISCOVERY_RULES, tfidf_share=0.0)
    z, cut = discovery.discovery_space(frame, x, "minilm-static-256", rules=no_share)
    assert z is x and cut == 0.35


def test_discoverys_topics_chain_a_sessions_turns_at_the_topic_weight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[float] = []
    real = graph.turn_graph

    def spy(*a: object, **k: object) -> sp.csr_matrix:
        seen.append(float(k["adjacent"]))  # type: ignore[arg-type]
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(graph, "turn_graph", spy)
    x, _ = _blobs([6, 6])
    frame = _frame([f"t{i}" for i in range(12)], [f"s{i % 3}" for i in range(12)])
    cluster_turns(frame, x, 0.35)
    assert seen == [DISCOVERY_RULES.topic_adjacent] == [1.0] and graph.ADJACENT == 3.0


@pytest.mark.parametrize("sampled", [False, True])
def test_a_theme_recurs_over_two_sessions_or_holds_a_long_thread_of_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sampled: bool
) -> None:
    one_session = DISCOVERY_RULES.one_session
    assert graph.recurs(3, 2) and graph.recurs(one_session, 1)
    assert not graph.recurs(one_session - 1, 1) and not graph.recurs(50, 1, one_session=0)
    # Three topics far apart: 12 turns of one long session, 4 of another, 12 over two sessions.
    x, _ = _blobs([12, 4, 12])
    sessions = ["long"] * 12 + ["short"] * 4 + [f"s{i % 2}" for i in range(12)]
    frame = _frame([f"t{i}" for i in range(28)], sessions)

    def kept(rules: DiscoveryRules = DISCOVERY_RULES) -> list[set[int]]:
        if not sampled:
            return [set(i) for i in cluster_turns(frame, x, cut=0.35, rules=rules)[1].values()]
        np.save(tmp_path / "v.npy", x.astype(np.float16))
        rows = graph.DiskRows([(np.load(tmp_path / "v.npy", mmap_mode="r"), np.arange(len(x)))])
        found = graph.cluster_sampled(frame, rows, cut=0.35, rules=rules)[1]
        return [set(idx.tolist()) for idx in found.values()]

    got = kept()
    assert any(g <= set(range(12)) and len(g) >= one_session for g in got)
    assert not any(g & set(range(12, 16)) for g in got)  # 4 turns of one session: no theme
    assert any(g <= set(range(16, 28)) for g in got)
    # the rule before: two sessions or nothing
    assert not any(g & set(range(16)) for g in kept(replace(DISCOVERY_RULES, one_session=0)))
