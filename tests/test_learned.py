"""The learned last step of the ranking (search/learned.py): features, re-ordering, when it runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest

from archive_mcp import Archive
from archive_mcp.search import learned
from archive_mcp.search.engine import Filters, Searcher
from archive_mcp.search.lexical import Postings, analyse
from archive_mcp.search.ranking import Neighbours, Tuning

TEXTS = [
    "we adopted a puppy",
    "the puppy chewed my shoes",
    "work was busy",
    "a quiet weekend",
    "puppy training class on saturday",
    "nothing new",
]


def _stage(query: str, own: list[float], total: list[float]) -> learned.Stage:
    meta = pl.DataFrame(
        {
            "session_id": ["a", "a", "a", "b", "b", "b"],
            "agent": ["main"] * 6,
            "turn": [0, 1, 2, 0, 1, 2],
            "started_at": [datetime(2022, 10, 9, tzinfo=UTC)] * 3
            + [datetime(2023, 5, 8, tzinfo=UTC)] * 3,
        }
    )
    postings = Postings.build([analyse(t) for t in TEXTS])
    q_terms = analyse(query)
    lexical = np.array([1.0, 2.0, 0.0, 0.0, 4.0, 0.0], np.float32)
    scores = {
        "lexical": lexical + np.array([0, 0, 0, 0, 0, 1.0], np.float32),
        "fuzzy": lexical.copy(),
        "semantic": np.array([0.5, 0.4, 0.1, 0.2, 0.3, -1.0], np.float32),
    }
    return learned.Stage(
        query,
        q_terms,
        scores,
        lexical,
        np.array(own, np.float32),
        np.array(total, np.float32),
        np.ones(6, bool),
        Neighbours.of(meta),
        meta,
        [postings],
        [0],
    )


def test_features_describe_each_candidate() -> None:
    stage = _stage(
        "when did the puppy go to training on 9 October",
        [1, 2, 0, 0, 4, 0.5],
        [1.5, 2.2, 0.4, 0.4, 4, 0.9],
    )
    x = learned.features(stage, [4, 1, 0, 5])
    col = {name: x[:, i].tolist() for i, name in enumerate(learned.FEATURES)}
    assert x.shape == (4, len(learned.FEATURES))
    assert np.allclose(col["lexical_raw"], [1.0, 0.5, 0.25, 0.0])  # BM25 over the best
    assert np.allclose(
        col["feedback_raw"], [0.0, 0.0, 0.0, 1.0]
    )  # only turn 5 matched a feedback term
    assert np.allclose(col["lexical_rank"], np.log1p([0, 1, 2, 3]))
    assert np.allclose(col["first_rank"], np.log1p([0, 1, 2, 3]))
    assert np.allclose(col["own"], [4, 2, 1, 0.5]) and np.allclose(col["fused"], [4, 2.2, 1.5, 0.9])
    # the better neighbour's and the session's best own score: session a = rows 0-2, b = rows 3-5
    assert np.allclose(col["neighbour"], [0.5, 1, 2, 4]) and np.allclose(
        col["session"], [4, 2, 2, 4]
    )
    # lexical context as the excess over the turn's own value
    assert np.allclose(col["lexical_near"], [-4, -1, 1, 4]) and np.allclose(
        col["lexical_session"], [0, 0, 1, 4]
    )
    # query terms held: puppy, train, when, did, the, go, to, on, 9, october (stopwords count too)
    held = [
        sum(t in analyse(TEXTS[d]) for t in dict.fromkeys(stage.q_terms))
        / len(dict.fromkeys(stage.q_terms))
        for d in (4, 1, 0, 5)
    ]
    assert np.allclose(col["coverage"], held) and col["coverage"][0] > col["coverage"][3]
    # "9 October" names the day of session a (2022-10-09), not of session b; the query asks when
    assert col["date"] == [0.0, 2.0, 2.0, 0.0] and col["when_date"] == col["date"]
    assert (
        learned.features(_stage("puppy on 9 October", [0] * 6, [0] * 6), [0])[
            0, learned.FEATURES.index("when_date")
        ]
        == 0
    )


def test_the_learned_step_reorders_the_head_and_hands_the_scores_out_again() -> None:
    stage = _stage("puppy on 9 October", [1, 2, 0, 0, 4, 0.5], [1.5, 2.2, 0.4, 0.4, 4, 0.9])
    weights = np.zeros(len(learned.FEATURES) + 1, np.float32)
    weights[1 + learned.FEATURES.index("date")] = 1.0  # only the date counts
    weights[1 + learned.FEATURES.index("first_rank")] = -0.1  # ties by the first stage
    order, (head, x) = learned.apply(stage, [4, 1, 0, 5], weights)
    assert head == [4, 1, 0, 5] and x.shape == (4, len(learned.FEATURES))
    assert order == [1, 0, 4, 5]
    # the candidates' fused scores, handed out again in the new order: still best first
    assert stage.total[[1, 0, 4, 5]].tolist() == sorted(
        stage.total[[1, 0, 4, 5]].tolist(), reverse=True
    )
    assert np.allclose(stage.total[[1, 0, 4, 5]], [4, 2.2, 1.5, 0.9])
    assert learned.apply(stage, [4, 1], None)[0] == [4, 1]  # no weights: the first stage's order


def test_the_learned_step_runs_only_over_the_first_stage_it_was_fitted_on() -> None:
    assert learned.applies(Tuning(), "zsum")
    assert not learned.applies(Tuning(learned=False), "zsum")
    assert not learned.applies(
        Tuning(neighbour=0.0, session=0.0, prf_docs=0), "zsum"
    )  # a theme's seed search
    assert not learned.applies(Tuning(prf_docs=0), "zsum")
    assert not learned.applies(Tuning(), "rrf") and not learned.applies(Tuning(), "combsum")


def test_shipped_weights_fit_the_features_and_the_default_search_uses_them(
    archive: Archive,
) -> None:
    assert learned.WEIGHTS is not None and learned.WEIGHTS.shape == (len(learned.FEATURES) + 1,)
    ws = archive.workspace(archive.workspaces()[0].id)
    searcher = Searcher(archive.index(ws), archive.embedder, Tuning())
    fused, _, _, _ = searcher.rank("login handler", "hybrid", Filters())
    assert searcher.candidates is not None
    head, x = searcher.candidates
    assert x.shape == (len(head), len(learned.FEATURES)) and len(head) == min(
        len(fused), learned.DEPTH
    )
    scores = [s for _, s, _ in fused]
    assert scores == sorted(scores, reverse=True)
    expected = learned.reorder(head, x, learned.WEIGHTS)
    assert [d for d, _, _ in fused][: len(head)] == expected
    first = replace(
        Tuning(), learned=False
    )  # another fusion than the one it was fitted on: no learned step
    assert [
        (h.session_id, h.turn)
        for h in archive.search("login handler", workspace=ws.id, fusion="rrf")
    ] == [
        (h.session_id, h.turn)
        for h in archive.search("login handler", workspace=ws.id, fusion="rrf", tuning=first)
    ]
    off = Searcher(archive.index(ws), archive.embedder, first)
    off.rank("login handler", "hybrid", Filters())
    assert off.candidates is None


def test_e5_features_rank_the_embedded_candidates_and_put_the_rest_last() -> None:
    x = learned.e5_features(np.array([0.2, 0.8, 0.5], np.float32), 5)
    assert np.allclose(
        x[:, 0], [0.2, 0.8, 0.5, 0.2, 0.2]
    )  # not embedded: the lowest embedded cosine
    sd = float(np.std([0.2, 0.8, 0.5]))
    assert np.allclose(x[:3, 1], (np.array([0.2, 0.8, 0.5]) - 0.5) / sd)
    assert np.allclose(x[:, 2], np.log1p([2, 0, 1, 3, 4]))  # ties keep the first-stage order


def test_the_e5_stage_reorders_the_learned_head_by_its_own_weights(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    head = [7, 3, 5]
    x = np.zeros((3, len(learned.FEATURES)), np.float32)
    weights = np.zeros(len(learned.FEATURES) + len(learned.E5) + 1, np.float32)
    weights[1 + len(learned.FEATURES)] = 1.0  # e5's raw cosine alone
    monkeypatch.setattr(learned, "E5_WEIGHTS", weights)
    total = np.zeros(9, np.float32)
    total[[7, 3, 5]] = [3.0, 2.0, 1.0]
    order = learned.with_e5((head, x), np.array([0.1, 0.9], np.float32), total, [7, 3, 5, 8])
    assert order == [3, 7, 5, 8]  # 5 was not embedded: it counts as the lowest cosine
    assert total[[3, 7, 5]].tolist() == [3.0, 2.0, 1.0]
