"""A learned last step: the first stage's top 50 candidates re-ordered by a linear model.

Each candidate gets a feature vector (`FEATURES`): every signal's raw value, standard score, rank
among the candidates and how much its better neighbouring turn and its session's best exceed it
(BM25 of the query, BM25 of the feedback terms, fuzzy BM25, static cosine); the fused score before
and after the neighbour/session lift, the first-stage rank, the better neighbour's and the
session's best fused score; the turn's length; the share of query terms it holds; how many of
the query's words name its date ("9 October 2022"), also when the query asks when. Its score is
a dot product with `WEIGHTS` (an intercept, then one weight per feature), fitted by
bench/ltr.py on LoCoMo-dev with a pairwise logistic loss (bench/RESULTS.md has how it was
validated). Cost: a few numpy gathers over 50 candidates, one postings look-up per query term.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.search.index import date_text
from archive_mcp.search.ranking import Neighbours

DEPTH = 50  # candidates re-ordered

SIGNALS = ("lexical", "feedback", "fuzzy", "semantic")
FEATURES = (
    *(f"{s}_{k}" for s in SIGNALS for k in ("raw", "z", "rank", "near", "session")),
    "own",
    "fused",
    "first_rank",
    "neighbour",
    "session",
    "length",
    "coverage",
    "date",
    "when_date",
    "session_above",
    "adjacent_above",
)

_WORDS = re.compile(r"[a-z0-9]+")
_WHEN = frozenset(
    {"when", "date", "day", "month", "year", "week", "ago", "last", "before", "after"}
)


@dataclass
class Stage:
    """What the first stage computed for one query (full-length arrays over the workspace)."""

    query: str
    q_terms: list[str]
    scores: dict[str, np.ndarray]  # lexical (with feedback terms), fuzzy, semantic
    lexical: np.ndarray  # BM25 of the query alone
    own: np.ndarray  # fused score before the neighbour/session lift
    total: np.ndarray  # fused score after it
    ok: np.ndarray
    neighbours: Neighbours
    meta: pl.DataFrame
    postings: list[Any]  # per segment
    offsets: list[int]  # first global doc id of each segment


def _rank(x: np.ndarray) -> np.ndarray:
    """log(1 + rank) of each value among `x` (0 for the best)."""
    order = np.argsort(-x, kind="stable")
    ranks = np.empty(x.size, np.float32)
    ranks[order] = np.arange(x.size, dtype=np.float32)
    return np.log1p(ranks)


def _context(
    x: np.ndarray, ok: np.ndarray, low: float, nb: Neighbours, d: np.ndarray, members: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The better neighbour's and the session's best value of `x` for the docs `d` (`members`:
    every doc of their sessions; a doc outside `ok` counts as `low`, a missing neighbour as 0)."""

    def at(idx: np.ndarray) -> np.ndarray:
        safe = np.maximum(idx, 0)
        return np.where(idx >= 0, np.where(ok[safe], x[safe], low), 0.0)

    best = np.full(nb.n_groups, -np.inf, np.float32)
    np.maximum.at(best, nb.group[members], at(members).astype(np.float32))
    return np.maximum(at(nb.prev[d]), at(nb.next[d])), best[nb.group[d]]


def _above(nb: Neighbours, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each candidate: log(1 + the candidates of its session ranked above it), and whether
    its previous or next turn is ranked above it (a multi-hop answer spreads over sessions)."""
    group = nb.group[d]
    same = np.tril(group[:, None] == group[None, :], -1).sum(axis=1)
    pos = {int(doc): i for i, doc in enumerate(d)}
    adjacent = [
        any(pos.get(int(n), d.size) < i for n in (nb.prev[doc], nb.next[doc]) if n >= 0)
        for i, doc in enumerate(d)
    ]
    return np.log1p(same).astype(np.float32), np.array(adjacent, np.float32)


def _coverage(stage: Stage, docs: np.ndarray) -> np.ndarray:
    """The share of the query's distinct terms each doc holds (a term's doc ids are sorted: a
    binary search per candidate, not a pass over a long postings list)."""
    terms = list(dict.fromkeys(stage.q_terms))
    held = np.zeros(docs.size, np.float32)
    for part, start in zip(stage.postings, stage.offsets, strict=True):
        local = docs - start
        mine = (local >= 0) & (local < part.n_docs)
        for term in terms:
            i = part.term_id.get(term)
            if i is None:
                continue
            # a view of the mapping: the binary search touches a few pages, not the whole list
            found = part.doc_ids[int(part.offsets[i]) : int(part.offsets[i + 1])]
            at = np.minimum(np.searchsorted(found, local), len(found) - 1)
            held += mine & (np.asarray(found[at]) == local)
    return held / max(1, len(terms))


def features(stage: Stage, docs: list[int]) -> np.ndarray:
    """The (len(docs), len(FEATURES)) matrix of the candidates `docs` (first-stage order)."""
    d = np.asarray(docs, np.int64)
    cols: list[np.ndarray] = []
    marked = np.zeros(stage.neighbours.n_groups, bool)
    marked[stage.neighbours.group[d]] = True
    members = np.flatnonzero(marked[stage.neighbours.group])
    lexical = stage.scores.get("lexical", stage.lexical)
    signals = {
        "lexical": stage.lexical,
        "feedback": lexical - stage.lexical,
        "fuzzy": stage.scores.get("fuzzy", np.zeros_like(stage.lexical)),
        "semantic": stage.scores.get("semantic", np.full(stage.lexical.shape, -1.0, np.float32)),
    }
    for name in SIGNALS:
        x = signals[name]
        ok = stage.ok & (x > -1.0) if name == "semantic" else stage.ok
        vals = x[ok]  # one pass over the workspace per signal; the rest is over the candidates
        low, high = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 0.0)
        mean, sd = (float(vals.mean()), float(vals.std())) if vals.size > 1 else (0.0, 0.0)
        mine = x[d].astype(np.float32)
        raw = mine if name == "semantic" else mine / max(high, 1e-9)
        z = (mine - mean) / sd if sd > 1e-9 else np.zeros(d.size, np.float32)
        near, best = _context(x, ok, low, stage.neighbours, d, members)
        cols += [raw, z, _rank(mine), near - mine, best - mine]
    near, best = _context(stage.own, stage.ok, 0.0, stage.neighbours, d, members)
    seg = np.searchsorted(np.asarray(stage.offsets), d, side="right") - 1
    length = np.array(
        [stage.postings[s].doc_len[i - stage.offsets[s]] for s, i in zip(seg, d, strict=True)],
        np.float32,
    )
    cols += [
        stage.own[d],
        stage.total[d],
        np.log1p(np.arange(d.size, dtype=np.float32)),
        near,
        best,
        np.log1p(length),
        _coverage(stage, d),
    ]
    q_words = set(_WORDS.findall(stage.query.lower()))
    days = (
        stage.meta["started_at"].gather(d.tolist()).to_list()
        if "started_at" in stage.meta.columns
        else []
    )
    date = np.array(
        [len(q_words & set(date_text(day).lower().split())) for day in days]
        if days
        else np.zeros(d.size),
        np.float32,
    )
    cols += [date, date * float(bool(q_words & _WHEN)), *_above(stage.neighbours, d)]
    return np.stack([np.asarray(c, np.float32) for c in cols], axis=1)


def applies(tuning: Any, fusion: str) -> bool:
    """Whether the learned step runs: asked for, over the first stage it was fitted on (z-score
    fusion, the neighbour/session lift and the feedback terms on; a theme's seed search has them off)."""
    return bool(
        tuning.learned
        and fusion == "zsum"
        and tuning.neighbour > 0
        and tuning.session > 0
        and tuning.prf_docs > 0
    )


# `python bench/ltr.py --locomo LOCOMO_DEV --agents-dev AGENTS_DEV --nested --write`: a pairwise
# logistic model (RankNet-like, C=0.01) over the fused scores, the first-stage rank, the context,
# the date words and the query's own BM25 and fuzzy BM25 (the other features weigh 0), fitted on
# all 760 LoCoMo-dev questions (categories 1-4) in units of the raw features, intercept first.
# Out of fold (leave one conversation out) it lifts R@5 0.722 -> 0.735; bench/RESULTS.md.
WEIGHTS: np.ndarray | None = np.array(
    [
        -0.237509,
        0.931257,
        -0.0382479,
        0.0446581,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        -1.23637,
        -0.0709435,
        0.0969711,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0.165402,
        0.157927,
        -0.568722,
        0.0868822,
        -0.0332193,
        0,
        0,
        2.00552,
        0,
        0,
        0,
    ],
    np.float32,
)


def reorder(docs: list[int], x: np.ndarray, weights: np.ndarray) -> list[int]:
    """`docs` by the linear model's score, best first (ties keep the first-stage order)."""
    s = x[:, : weights.size - 1] @ weights[1:] + weights[0]
    return [docs[i] for i in np.argsort(-s, kind="stable")]


def apply(
    stage: Stage, order: list[int], weights: np.ndarray | None
) -> tuple[list[int], tuple[list[int], np.ndarray]]:
    """The first `DEPTH` of `order` re-ordered by `weights` (an intercept, then one per feature);
    their fused scores are handed out again in the new order, so scores stay comparable across
    workspaces. Also returns the candidates and their features (for bench/ltr.py)."""
    head = order[:DEPTH]
    x = features(stage, head)
    if weights is None:
        return order, (head, x)
    new = reorder(head, x, weights)
    _hand_out(stage.total, new)
    return new + order[DEPTH:], (head, x)


def _hand_out(total: np.ndarray, new: list[int]) -> None:
    """The candidates' fused scores, best first, given to `new` in its order (in place): the
    scores stay comparable across workspaces and still fall down the list."""
    values = sorted((float(total[d]) for d in new), reverse=True)
    for d, v in zip(new, values, strict=True):
        total[d] = v


E5 = ("e5_raw", "e5_z", "e5_rank")  # appended to `FEATURES` by the opt-in e5 stage
# `python bench/ltr.py --locomo LOCOMO_DEV --e5 --nested --write`: the opt-in `rerank="e5"` stage,
# the same pairwise fit over the fused scores, rank, context, date words and e5's cosine of the
# first stage's top 20 (raw, z-score, rank), on all 760 LoCoMo-dev questions. Out of fold it
# lifts the e5 stage's R@5 0.746 (the scaled sum of `ranking.second_stage`) -> 0.763.
E5_WEIGHTS: np.ndarray | None = np.array(
    [
        -12.5776,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0.0901625,
        0.147027,
        0.0699487,
        0.0969974,
        -0.0187468,
        0,
        0,
        1.89987,
        0,
        0,
        0,
        15.2393,
        -0.071253,
        -0.389659,
    ],
    np.float32,
)


def e5_features(sims: np.ndarray, n: int) -> np.ndarray:
    """e5's cosine of the first `len(sims)` of `n` candidates (the rest count as the lowest):
    raw, standard score over the embedded ones, log rank."""
    full = np.full(n, float(sims.min()) if sims.size else 0.0, np.float32)
    full[: sims.size] = sims
    sd = float(sims.std()) if sims.size > 1 else 0.0
    z = (full - float(sims.mean())) / sd if sd > 1e-9 else np.zeros(n, np.float32)
    return np.stack([full, z, _rank(full)], axis=1).astype(np.float32)


def with_e5(
    candidates: tuple[list[int], np.ndarray], sims: np.ndarray, total: np.ndarray, order: list[int]
) -> list[int]:
    """`order` with its learned head re-ordered by `E5_WEIGHTS` over the candidates' features
    (first-stage order, as fitted) and e5's cosine `sims` of the first of them."""
    head, x = candidates
    assert E5_WEIGHTS is not None
    new = reorder(
        head,
        np.concatenate([x, e5_features(np.asarray(sims, np.float32), len(head))], axis=1),
        E5_WEIGHTS,
    )
    _hand_out(total, new)
    return new + order[len(head) :]


__all__ = [
    "E5",
    "E5_WEIGHTS",
    "e5_features",
    "with_e5",
    "DEPTH",
    "applies",
    "apply",
    "FEATURES",
    "SIGNALS",
    "WEIGHTS",
    "Stage",
    "features",
    "reorder",
]
