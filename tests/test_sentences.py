"""The sentences' token ids an index stores (search/sentences.py), and the ranking passes that
must give main's scores to the bit (search/ranking.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from archive_mcp.refiners.embed import StaticEmbedder
from conftest import shuffled_sessions

from archive_mcp import Archive
from archive_mcp.search import ranking
from archive_mcp.search.ranking import Neighbours, best_of_sentences, with_context
from archive_mcp.search.sentences import SentenceIds, SentenceWriter, best_of_ids

SPLIT = [
    ["Done.", "The retry loop failed twice.", "done."],
    [],
    ["Retry now with backoff.", "Done.", "回退到默认值"],
    ["\u200b\u200b", "The retry loop failed twice."],  # no token at all: a zero vector
]


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder()


def _stored(folder: Path, tokens: StaticEmbedder, split: list[list[str]]) -> SentenceIds:
    folder.mkdir(parents=True, exist_ok=True)
    writer = SentenceWriter(folder, tokens)
    for sentences in split:
        writer.add(sentences)
    writer.close()
    ids = SentenceIds.load(folder, len(split))
    assert ids is not None
    return ids


def test_the_static_model_embeds_token_ids_as_the_texts_they_came_from_to_the_bit(
    static: StaticEmbedder,
) -> None:
    texts = [s for row in SPLIT for s in row] + ["", "x" * 400, "parse_config() -> dict"]
    ids = static.token_ids(texts)
    assert ids[texts.index("\u200b\u200b")] == []
    assert static.embed_ids(ids).tobytes() == static.embed(texts).tobytes()


def test_stored_sentence_ids_give_the_best_sentence_cosines_of_the_text_path_to_the_bit(
    tmp_path: Path, static: StaticEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.search.sentences as sentences

    monkeypatch.setattr(sentences, "BATCH", 3)  # rows wait for the tokenizer in several batches
    stored = _stored(tmp_path, static, SPLIT)
    assert stored.key == static.key
    rows = [stored.get(i) for i in range(len(SPLIT))]
    assert [len(r) for r in rows] == [3, 0, 3, 2]
    assert rows[0][0][1] == rows[2][1][1] and rows[0][0][0] == rows[2][1][0]  # "Done." twice
    assert rows[0][0][1] == rows[0][2][1] and rows[0][0][0] != rows[0][2][0]  # "done.": own crc
    q = static.embed(["why did the retry fail"])[0]
    want = best_of_sentences(q, SPLIT, static.embed)
    assert best_of_ids(q, rows, static).tobytes() == want.tobytes()
    assert want[1] == -1.0


def test_sentence_records_that_do_not_fit_the_rows_say_to_delete_the_cache(
    tmp_path: Path, static: StaticEmbedder
) -> None:
    _stored(tmp_path / "search" / "base", static, SPLIT)
    with pytest.raises(ValueError, match="delete .*search and search again to rebuild it"):
        SentenceIds.load(tmp_path / "search" / "base", len(SPLIT) + 1)
    assert SentenceIds.load(tmp_path / "elsewhere", 4) is None


def test_an_index_of_the_static_model_ranks_from_stored_ids_as_from_the_texts(
    kimi_root: Path, kimi_code_root: Path
) -> None:
    a = Archive(embedder=StaticEmbedder())
    a.ingest(kimi_root, kimi_code_root)
    ws = a.workspace("webapp")
    idx = a.index(ws).refresh()
    base, delta = idx.segments
    assert base.texts is not None and base.texts.sentences is not None
    assert delta.meta.height == 0 and delta.texts is not None and delta.texts.sentences is None
    docs = list(range(idx.n_docs))
    assert idx.sentence_ids(docs, a._embedder) is not None
    assert idx.sentence_ids(docs, object()) is None  # an embedder that reads text only

    def hits() -> list[tuple[str, int, float]]:
        return [
            (h.session_id, h.turn, h.score)
            for q in ("dark mode toggle", "why does the test fail", "parse config")
            for h in a.search(q, workspace="webapp")
        ]

    from_ids = hits()
    for s in idx.segments:
        assert s.texts is not None
        s.texts.sentences = None  # the same index, its sentences tokenized from the text
    assert hits() == from_ids and len(from_ids) > 3


def test_the_context_lift_in_session_order_equals_the_lift_by_neighbour_indices_to_the_bit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    rng = np.random.default_rng(5)
    n = 500
    meta = shuffled_sessions(rng, n)
    nb = Neighbours.of(meta)
    by_index = Neighbours(nb.prev, nb.next, nb.group, nb.n_groups)  # no members: doc order
    total = (rng.random(n) * (rng.random(n) > 0.3)).astype(np.float32)
    monkeypatch.setattr(ranking, "CONTEXT_BLOCK", 7)  # sessions cut across blocks
    for how in ("lift", "sum", "max"):
        for shares in ((0.5, 0.5), (0.0, 0.5), (0.5, 0.0)):
            got = with_context(total, nb, *shares, how)
            assert got.tobytes() == with_context(total, by_index, *shares, how).tobytes()


@pytest.mark.parametrize("name", ["lexical", "semantic"])
def test_z_scores_equal_the_formula_with_every_left_out_doc_at_zero(name: str) -> None:
    rng = np.random.default_rng(11)
    for trial in range(20):
        n = 2000
        ok = rng.random(n) > (0.2 if trial % 2 else 0.0)
        if name == "lexical":
            x = np.where(rng.random(n) > 0.4, rng.random(n) * 9, 0).astype(np.float32)
        else:
            x = np.where(rng.random(n) > 0.05 * (trial % 3), rng.random(n) - 0.3, -1.0)
            x = x.astype(np.float32)
        valid = ok & (x > -1.0) if name == "semantic" else ok
        vals = x[valid]
        mu, sd, hi = float(vals.mean()), float(vals.std()), float(vals.max())
        lo = float(vals.min()) if name == "semantic" else 0.0
        part = np.subtract(x, lo)
        part *= 1e-3
        part /= hi - lo
        z = np.subtract(x, mu)
        z /= sd
        np.maximum(z, 0.0, out=z)
        z += part
        keep = valid & (x > lo)
        want = np.where(keep, z, 0.0).astype(np.float32)
        assert ranking.zscored(name, x, ok).tobytes() == want.tobytes()
