"""How sure a hit is: `strong` or `weak`, from evidence that means the same in every workspace.

Two pieces of evidence, both relative to the workspace rather than raw scores (a BM25 score of
12 is a lot in one workspace and little in another):

- `cover`: the idf-weighted share of the query's content words (stemmed, stopwords out) that
  the turn holds. A word the workspace never saw weighs most: a question about what a project
  never did names things its turns do not hold.
- `lift`: how many standard deviations the turn's semantic cosine stands above the workspace's
  cosines for this query (its background).

A hit is strong when it holds most of the query (`cover >= COVER`), or holds part of it and
stands well above the semantic background (`cover >= PART` and `lift >= LIFT`). The thresholds
were chosen on one project's labelled and nonsense/off-topic queries (PAI) and scored on the
others (bench/confidence.py, bench/results/s7-searchbase.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

COVER = 0.5
PART = 0.2
LIFT = 3.5


@dataclass(frozen=True)
class Evidence:
    cover: float  # idf-weighted share of the query's content words in the turn
    lift: float  # z-score of the turn's cosine over the workspace's cosines (0 without vectors)
    terms: list[str]  # the query words the turn holds

    @property
    def confidence(self) -> str:
        strong = self.cover >= COVER or (self.cover >= PART and self.lift >= LIFT)
        return "strong" if strong else "weak"


def term_weights(terms: list[str], parts: list[Any], n_docs: int) -> dict[str, float]:
    """idf of each content word over the workspace (a word it never saw weighs the most)."""
    out = {}
    for t in dict.fromkeys(terms):
        df = sum(p.df(t) for p in parts)
        out[t] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    return out


def evidence(
    docs: list[int],
    weights: dict[str, float],
    parts: list[Any],
    bounds: list[int],
    semantic: np.ndarray | None,
    ok: np.ndarray,
) -> list[Evidence]:
    """The evidence of each of `docs` (indices over the segments, `bounds` their first doc and
    the end)."""
    total = sum(weights.values())
    held: dict[int, list[str]] = {d: [] for d in docs}
    wanted = np.asarray(docs, np.int64)
    for term in weights:
        for part, start, end in zip(parts, bounds, bounds[1:], strict=False):
            inside = np.flatnonzero((wanted >= start) & (wanted < end))
            if inside.size == 0:
                continue
            # a term's doc ids ascend: a binary search per wanted doc (`Postings.holds`)
            for d in wanted[inside[part.holds(term, wanted[inside] - start)]]:
                held[int(d)].append(term)
    mu = sd = 0.0
    if semantic is not None:
        valid = semantic[ok & (semantic > -1.0)]
        if valid.size > 1:
            mu, sd = float(valid.mean()), float(valid.std())
    out = []
    for d in docs:
        terms = list(dict.fromkeys(held[d]))
        cover = sum(weights[t] for t in terms) / total if total > 0 else 0.0
        lift = 0.0
        if semantic is not None and sd > 1e-9 and semantic[d] > -1.0:
            lift = (float(semantic[d]) - mu) / sd
        out.append(Evidence(round(cover, 4), round(lift, 3), terms))
    return out


def verdict(quoted: str, hits: list[Any]) -> str | None:
    """The line a response carries when no hit is strong (None when one is); `quoted` is the
    query as the response echoes it."""
    if any(h.confidence == "strong" for h in hits):
        return None
    if not hits:
        return f"no match for {quoted}"
    best = hits[0]
    return f"no strong match for {quoted}; closest: {best.session_id}:{best.turn}"
