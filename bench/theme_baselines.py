"""Standard baselines and plain measures for the held-out themes benchmark (themes_heldout.py).

Nothing here calls archive-mcp's theme rules; the baselines are the textbook recipes:

* `rank_turns`: BM25 (Snowball stemming, English stopwords; `textbook.TERMS`) of the joined seeds,
  and its 0.5 / 0.5 z-score fusion with the MiniLM cosine of each turn to the mean of the seeds'
  vectors (plain standard scores, not floored). A topic's baseline members are the top n turns,
  n being the member count `tag_theme` returned for it.
* `bertopic_clusters`: BERTopic over the packaged MiniLM vectors with KMeans(k) as its cluster
  model (UMAP with BERTopic's default settings and a fixed random_state, computed once per
  project and handed in, which is what BERTopic does inside `fit` with that random_state).
* `recovered` (best-matching cluster by Jaccard of turn sets) and `noise_like`, the turns a
  person would call noise, decided from the text alone (not archive-mcp's filter).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from archive_mcp.search.lexical import Postings, bm25

Key = tuple[str, str, int]  # session_id, agent, turn

_COMMAND = re.compile(r"^\s*(?:<command-name>|<command-message>|<local-command-|/[\w:.-]+(?:\s|$))")


def noise_like(user: str, assistant: str, tool_calls: int) -> bool:
    """A slash command that did no work (no tool call), command output, or an empty turn."""
    if not (user or "").strip() and not (assistant or "").strip():
        return True
    return bool(_COMMAND.match(user or "")) and tool_calls == 0


def zscore(x: np.ndarray) -> np.ndarray:
    sd = float(x.std())
    return (x - float(x.mean())) / sd if sd > 1e-12 else np.zeros_like(x)


class SeedRanker:
    """BM25 and BM25 z+ MiniLM rankings of one project's candidate turns for seed phrases."""

    def __init__(self, docs: Sequence[list[str]], vectors: np.ndarray) -> None:
        self.postings = Postings.build(docs)
        self.vectors = vectors  # unit-length MiniLM vectors, one per doc
        self.alive = np.ones(len(docs), bool)

    def bm25(self, terms: Iterable[str]) -> np.ndarray:
        weighted = [(t, 1.0) for t in dict.fromkeys(terms)]
        return bm25([self.postings], weighted, [self.alive])[0].astype(np.float64)

    def rankings(self, terms: Iterable[str], seed_vectors: np.ndarray) -> dict[str, np.ndarray]:
        """Doc indices best first: `bm25` alone and `fusion` (0.5 z(BM25) + 0.5 z(cosine))."""
        lexical = self.bm25(terms)
        q = seed_vectors.mean(0)
        q = q / (np.linalg.norm(q) or 1.0)
        cosine = self.vectors @ q
        fused = 0.5 * zscore(lexical) + 0.5 * zscore(cosine.astype(np.float64))
        return {
            "bm25": np.argsort(-lexical, kind="stable"),
            "fusion": np.argsort(-fused, kind="stable"),
        }


def recall_precision(got: set[Key], want: set[Key]) -> tuple[float, float]:
    hit = len(got & want)
    return hit / max(1, len(want)), hit / max(1, len(got))


def recovered(
    topics: Mapping[str, set[Key]], clusters: Mapping[str, set[Key]], at: float = 0.3
) -> dict[str, dict[str, Any]]:
    """Per labelled topic: the best cluster by Jaccard of turn sets, and whether it reaches `at`."""
    out = {}
    for name, members in topics.items():
        best, label = 0.0, ""
        for c, turns in clusters.items():
            j = len(members & turns) / max(1, len(members | turns))
            if j > best:
                best, label = j, c
        out[name] = {"jaccard": round(best, 3), "cluster": label, "found": best >= at}
    return out


def mostly(clusters: Mapping[str, set[Key]], flagged: set[Key], share: float = 0.5) -> list[str]:
    """The clusters more than `share` of whose turns are in `flagged`."""
    return [c for c, t in clusters.items() if t and len(t & flagged) / len(t) > share]


def umap_reduce(vectors: np.ndarray, seed: int = 42) -> np.ndarray:
    """BERTopic's default UMAP (15 neighbours, 5 dimensions, min_dist 0, cosine), seeded."""
    from umap import UMAP

    model = UMAP(
        n_neighbors=15,
        n_components=5,
        min_dist=0.0,
        metric="cosine",
        low_memory=False,
        random_state=seed,
    )
    return np.asarray(model.fit_transform(vectors), np.float32)


def bertopic_clusters(
    docs: list[str], keys: list[Key], reduced: np.ndarray, k: int
) -> tuple[dict[str, set[Key]], dict[str, list[str]]]:
    """BERTopic with KMeans(k) over UMAP-reduced MiniLM vectors: clusters by label, and each
    cluster's top c-TF-IDF words (English stopwords left out of the vocabulary)."""
    from bertopic import BERTopic
    from bertopic.dimensionality import BaseDimensionalityReduction
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import CountVectorizer

    model = BERTopic(
        embedding_model=None,  # the vectors are given: nothing is loaded
        umap_model=BaseDimensionalityReduction(),
        hdbscan_model=KMeans(n_clusters=k, random_state=0, n_init=10),
        vectorizer_model=CountVectorizer(stop_words="english"),
        calculate_probabilities=False,
        verbose=False,
    )
    labels, _ = model.fit_transform(docs, embeddings=reduced)
    clusters: dict[str, set[Key]] = {}
    for key, label in zip(keys, labels, strict=True):
        clusters.setdefault(f"k{k}-{int(label)}", set()).add(key)
    words = {
        f"k{k}-{int(t)}": [w for w, _ in (model.get_topic(t) or [])[:4]]
        for t in sorted(set(int(x) for x in labels))
    }
    return clusters, words
