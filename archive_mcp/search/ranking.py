"""Fusion and the second look: how per-signal scores become one ranking.

- `fuse`: per-signal scores normalised (z-scores by default, reciprocal ranks for comparison)
  and summed with weights.
- `common_terms`: query words so frequent in a workspace that they only blur its vector (the two
  speakers' names in a chat, the project's name in a coding log); they leave the semantic query.
- `with_context`: a share of the neighbouring turns' and the session's best score lifts each
  turn (an answer often spans two turns; a session is about one thing).
- `best_sentence`: the top candidates' sentences are embedded, and a turn's semantic score
  becomes the mean of its whole-text and best-sentence cosine.

Every choice is measured in bench/RESULTS.md ("Retrieval on real conversations").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.refiners.text import is_cjk, sentences

DEPTH = 100  # candidates each signal contributes to the fusion
# Noise (refiners/kinds.py): a turn only of these kinds carries no topic of its own (a slash
# command or its output, a mode toggle, an interruption marker, an API error); a compaction
# recap restates older turns. Their score is scaled by NOISE_SHARE so that a substantive turn
# with the same evidence ranks above them (chosen on bonkbot and pai, bench/agent_proxy.py).
NOISE_KINDS = frozenset({"command", "compaction", "continuation", "api_error", "interrupted"})
NOISE_SHARE = 0.5
RRF_K = 60


@dataclass(frozen=True)
class Tuning:
    """The ranking knobs; the defaults are the measured choice (bench/RESULTS.md)."""

    fusion: str = "zsum"
    semantic_weight: float = 1.0
    fuzzy_weight: float = 1.0
    fuzzy_known: bool = (
        True  # also expand query terms the workspace already has (False: only unknown ones)
    )
    common_share: float = (
        0.1  # query words in more than this share of turns leave the semantic query
    )
    neighbour: float = 0.5  # share of the best neighbouring turn's score added
    session: float = 0.5  # share of the session's best score added
    sentence_depth: int = 40  # top candidates re-scored by their best sentence (0 = off)
    context: str = "sum"  # how shares join (see `with_context`): "lift", "sum" or "max"
    query_stopwords: bool = True  # stopwords stay in the lexical query (False: only content words)
    # a path or dotted name asked (`locales/en.ts`) counts whole: its pieces score only where it is
    # (False: each piece alone, `ts` anywhere)
    paths_whole: bool = True
    rerank: str | None = (
        None  # "minilm" or "e5": a second stage re-scores the top candidates (search/rerank.py)
    )
    rerank_depth: int | None = (
        None  # candidates it re-scores (None: the model's own, 30 MiniLM / 20 e5)
    )
    rerank_weight: float = 1.0


STRIDE = 16  # `top` takes a first threshold from every STRIDE-th doc


def top(scores: np.ndarray, ok: np.ndarray, depth: int = DEPTH) -> list[int]:
    """Indices of the `depth` best positive scores among `ok`, best first (ties: lower index
    first). Only the positive scores are partitioned: at 1M turns a lexical query matches a
    fraction of them, and partitioning them all cost 5 ms. Where many are positive (the fused
    score of a hybrid query is positive almost everywhere), those below the `depth`-th best of
    every `STRIDE`-th doc are left out first: that score is at most the `depth`-th best of all,
    so what is kept holds the whole answer, ties included."""
    pick = ok & (scores > 0)
    if scores.size >= STRIDE * depth * 4:
        sample = scores[::STRIDE][pick[::STRIDE]]
        if sample.size > depth:
            pick &= scores >= np.partition(sample, sample.size - depth)[sample.size - depth]
    cand = np.flatnonzero(pick)
    if cand.size == 0:
        return []
    k = min(depth, cand.size)
    vals = scores[cand]
    kth = vals[np.argpartition(-vals, k - 1)[k - 1]]  # the k-th best score
    above = np.flatnonzero(vals > kth)
    head = np.sort(np.concatenate([above, np.flatnonzero(vals == kth)[: k - above.size]]))
    return [int(cand[i]) for i in head[np.argsort(-vals[head], kind="stable")]]


def rrf(rankings: dict[str, list[int]], k: int = RRF_K) -> list[tuple[int, float, list[str]]]:
    """Reciprocal-rank fusion: sum of 1/(k + rank) over the signals that ranked a doc."""
    fused: dict[int, float] = {}
    signals: dict[int, list[str]] = {}
    for name, ranked in rankings.items():
        for rank, doc in enumerate(ranked):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank + 1)
            signals.setdefault(doc, []).append(name)
    order = sorted(fused, key=lambda d: (-fused[d], d))
    return [(d, fused[d], signals[d]) for d in order]


def normalised(name: str, x: np.ndarray, ok: np.ndarray, depth: int) -> np.ndarray:
    """Scores on [0, 1]: BM25 divided by the best; cosine min-max scaled over the top `depth`."""
    x = np.where(ok, x, -np.inf if name == "semantic" else 0.0)
    if name != "semantic":
        best = float(x.max()) if x.size else 0.0
        return x / best if best > 0 else np.zeros_like(x)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return np.zeros(x.shape, np.float32)
    k = min(depth, finite.size)
    head = np.partition(finite, finite.size - k)[finite.size - k :]
    lo, hi = float(head.min()), float(head.max())
    if finite.size <= depth:  # every doc is a candidate: keep the weakest just above zero
        lo -= 1e-6
    return np.clip((np.where(np.isfinite(x), x, lo) - lo) / (hi - lo + 1e-9), 0.0, 1.0)


SPARSE = 4  # a signal matching fewer than 1 in SPARSE docs is z-scored from its matches alone


def zscored(name: str, x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Standard scores over the eligible docs, floored at zero: a signal adds only where a doc
    stands out from its distribution, so a weak signal's noise cannot outvote a confident one."""
    if name != "semantic" and np.count_nonzero(x) * SPARSE < x.size:
        return _zscored_sparse(x, ok)
    semantic = name == "semantic"
    valid = ok & (x > -1.0) if semantic else ok
    return _zscore(x, valid, _spread(x, valid, semantic), semantic)


def zscored_at(name: str, x: np.ndarray, ok: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`zscored(name, x, ok)[rows]`, equal to the bit, the statistics taken over every eligible
    doc and the scores computed for `rows` alone."""
    if name != "semantic" and np.count_nonzero(x) * SPARSE < x.size:
        return _zscored_sparse(x, ok)[rows]
    semantic = name == "semantic"
    valid = ok & (x > -1.0) if semantic else ok
    return _zscore(x[rows], valid[rows], _spread(x, valid, semantic), semantic)


def _spread(
    x: np.ndarray, valid: np.ndarray, semantic: bool
) -> tuple[float, float, float, float] | None:
    """The mean, spread, best and floor of the valid scores (None when fewer than 2)."""
    vals = x if valid.all() else x[valid]  # no copy of 1M scores when every doc is eligible
    if vals.size < 2:
        return None
    lo = float(vals.min()) if semantic else 0.0
    return float(vals.mean()), float(vals.std()), float(vals.max()), lo


def _zscore(
    x: np.ndarray,
    valid: np.ndarray,
    spread: tuple[float, float, float, float] | None,
    semantic: bool,
) -> np.ndarray:
    if spread is None:
        return np.where(valid & (x > 0), 1.0, 0.0).astype(np.float32)
    mu, sd, hi, lo = spread
    # a sliver of the min-max scaled score keeps every match ranked (and above zero) below the
    # mean; computed in place (the values of `1e-3 * (x - lo) / (hi - lo) + max((x - mu) / sd,
    # 0)` to the bit, without their temporaries: at 1M turns each costs a pass)
    if hi > lo:
        out = np.subtract(x, lo)
        out *= 1e-3
        out /= hi - lo
    else:
        out = np.full(x.shape, 1e-3, np.float32)
    if sd > 1e-9:
        z = np.subtract(x, mu)
        z /= sd
        np.maximum(z, 0.0, out=z)
        z += out
        out = z
    if out.dtype == np.float32 and hi > lo and _zero_below(x, valid, mu, sd, lo, semantic):
        # every doc left out already scores +0.0 (x == lo: no sliver, no z): skip the pass of
        # `np.where` (3 ms at 1M turns); an ineligible doc is set to zero alone
        if not valid.all():
            out[~valid] = 0.0
        return out
    keep = valid & (x > lo) if semantic else valid & (x > 0)
    return np.where(keep, out, 0.0).astype(np.float32, copy=False)


def _zero_below(
    x: np.ndarray, valid: np.ndarray, mu: float, sd: float, lo: float, semantic: bool
) -> bool:
    """Does `_zscore` already give +0.0 to every eligible doc it leaves out? Those are the docs
    at lo (the semantic signal's eligible minimum; 0 for another, whose scores are never below
    it), where the sliver is 0 and x - mu is below zero (its z floored at 0) or unused."""
    if not (sd <= 1e-9 or np.float32(mu) > lo):
        return False
    return semantic or (lo == 0.0 and float(x.min() if valid.all() else x[valid].min()) >= 0.0)


def _zscored_sparse(x: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """`zscored` of a signal that is zero where a doc does not match (BM25), from its nonzero
    scores alone: the mean and spread over every eligible doc are sums over the matches (a
    zero adds nothing to them), so the work follows the matches, not the archive (where most
    docs match, the dense pass is faster: `SPARSE`)."""
    n_valid = int(np.count_nonzero(ok))
    hit = np.flatnonzero(x)
    if n_valid < ok.size:
        hit = hit[ok[hit]]
    out = np.zeros(x.shape, np.float32)
    vals = x[hit]
    if n_valid < 2:
        out[hit[vals > 0]] = 1.0
        return out
    mu = float(vals.sum(dtype=np.float64)) / n_valid
    sd = float(np.sqrt(max(float(np.dot(vals, vals.astype(np.float64))) / n_valid - mu * mu, 0.0)))
    best = float(vals.max()) if vals.size else 0.0
    if best <= 0:
        return out
    # a sliver of the min-max scaled score keeps every match ranked (and above zero) below the mean
    part = vals * np.float32(1e-3 / best)
    if sd > 1e-9:
        part += np.maximum((vals - np.float32(mu)) / np.float32(sd), np.float32(0.0))
    out[hit] = np.where(vals > 0, part, np.float32(0.0))
    return out


def _rrf(name: str, x: np.ndarray, ok: np.ndarray, depth: int) -> np.ndarray:
    part = np.zeros(ok.shape, np.float32)
    ranked = top(x + (1.0 if name == "semantic" else 0.0), ok, depth)
    part[ranked] = 1.0 / (RRF_K + 1 + np.arange(len(ranked)))
    return part


# fusion name -> a signal's part of the fused score (name, scores, ok, depth); z-scores are the
# default, reciprocal ranks the comparison (a benchmark may add its own, e.g. bench/retrieval.py)
FUSIONS: dict[str, Callable[[str, np.ndarray, np.ndarray, int], np.ndarray]] = {
    "zsum": lambda name, x, ok, depth: zscored(name, x, ok),
    "rrf": _rrf,
}


def fuse(
    scores: dict[str, np.ndarray],
    ok: np.ndarray,
    weights: dict[str, float],
    fusion: str,
    depth: int = DEPTH,
    parts: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> np.ndarray:
    """One score per doc: the weighted sum of the normalised signals. `parts` keeps each
    signal's normalised part by its scores array: fusing again after one signal changed
    normalises only that one (the sum, in the same order, is the same to the bit)."""
    total = np.zeros(ok.shape, np.float32)
    part_of = FUSIONS.get(fusion, FUSIONS["zsum"])
    done: dict[int, np.ndarray] = {}  # one part per scores array (fuzzy may be lexical's own)
    for name, x in scores.items():
        kept = parts.get(name) if parts is not None else None
        if kept is not None and kept[0] is x:
            part = kept[1]
        else:
            # only the semantic part reads its name: another signal's array is normalised once
            found = done.get(id(x)) if name != "semantic" else None
            part = found if found is not None else part_of(name, x, ok, depth)
            if name != "semantic":
                done[id(x)] = part
            if parts is not None:
                parts[name] = (x, part)
        weight = weights.get(name, 1.0)
        total += part if weight == 1.0 else weight * part  # 1.0 * part is part, to the bit
    return total if ok.all() else np.where(ok, total, 0.0)  # no pass when every doc is eligible


def fuse_at(
    rows: np.ndarray,
    scores: dict[str, np.ndarray],
    ok: np.ndarray,
    weights: dict[str, float],
    parts: dict[str, tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """`fuse(scores, ok, weights, "zsum", parts=parts)[rows]`, equal to the bit: a signal whose
    part `parts` keeps is read there, any other is z-scored for `rows` alone (`zscored_at`)."""
    total = np.zeros(rows.shape, np.float32)
    for name, x in scores.items():
        kept = parts.get(name)
        part = kept[1][rows] if kept is not None and kept[0] is x else zscored_at(name, x, ok, rows)
        total += weights.get(name, 1.0) * part
    return np.where(ok[rows], total, 0.0)


def latin_share(text: str) -> float:
    """The share of a query's letters that are not CJK (1.0 for English, 0.0 for Chinese)."""
    letters = [ch for ch in text if ch.isalnum()]
    if not letters:
        return 1.0
    return sum(1 for ch in letters if not is_cjk(ch)) / len(letters)


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’-]*")
# a path or dotted name is one word: `ts` of `locales/en.ts` is common, the path is not
# Linear: a path is tried once per run of word characters, from its first (`(?<!...)`, the
# quotes or hyphens it opens with kept apart), not again from each later one (a long number
# would be tried from each digit), and a run never gives back what it took (it ends only where
# `.` or `/` may follow): what it matches is what it would without either.
_PATH_WORD = re.compile(
    r"(?<![A-Za-z0-9_'’-])(['’-]*+)([A-Za-z0-9_][A-Za-z0-9_'’-]*+(?:[./][A-Za-z0-9_'’-]++)+)|"
    + _WORD.pattern
)


def semantic_query(query: str, doc_share: Any, limit: float, paths_whole: bool = True) -> str:
    """The query without the words that occur in more than `limit` of the workspace's turns (a
    path or dotted name weighed whole with `paths_whole`, else by each of its pieces)."""
    if limit >= 1.0:
        return query
    word = _PATH_WORD if paths_whole else _WORD

    def keep(m: re.Match[str]) -> str:
        lead, found = (m.group(1), m.group(2)) if m.lastindex else ("", m.group(0))
        return lead + ("" if doc_share(found) > limit else found)

    kept = word.sub(keep, query)
    kept = " ".join(kept.split())
    return kept if any(ch.isalnum() for ch in kept) else query


@dataclass
class Neighbours:
    """For each doc: the previous and next turn of its session (-1 if none) and its session."""

    prev: np.ndarray
    next: np.ndarray
    group: np.ndarray
    n_groups: int
    # the docs by session (`members[starts[g]:starts[g + 1]]` are session g's); None: not known
    members: np.ndarray | None = None
    starts: np.ndarray | None = None

    @classmethod
    def of(cls, meta: pl.DataFrame) -> Neighbours:
        n = meta.height
        if n == 0:
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, empty, 0, empty, np.zeros(1, np.int64))
        keys = meta.select(
            pl.col("session_id").cast(pl.String) + "\x00" + pl.col("agent").cast(pl.String)
        ).to_series()
        group = keys.cast(pl.Categorical).to_physical().to_numpy().astype(np.int64)
        turn = meta["turn"].to_numpy().astype(np.int64)
        order = np.lexsort((turn, group))
        prev = np.full(n, -1, np.int64)
        nxt = np.full(n, -1, np.int64)
        same = group[order][1:] == group[order][:-1]
        prev[order[1:][same]] = order[:-1][same]
        nxt[order[:-1][same]] = order[1:][same]
        n_groups = int(group.max()) + 1
        starts = np.zeros(n_groups + 1, np.int64)
        np.cumsum(np.bincount(group, minlength=n_groups), out=starts[1:])
        return cls(prev, nxt, group, n_groups, order, starts)

    def sessions_of(self, docs: np.ndarray) -> np.ndarray:
        """Every doc of the sessions of `docs`, ascending (their neighbours among them)."""
        if self.members is None or self.starts is None:
            raise ValueError("these Neighbours were made without their sessions: use Neighbours.of")
        pieces = [
            self.members[self.starts[g] : self.starts[g + 1]]
            for g in set(self.group[docs].tolist())
        ]
        return np.sort(np.concatenate(pieces)) if pieces else np.zeros(0, np.int64)

    @functools.cached_property
    def member_groups(self) -> np.ndarray:
        """The session of each entry of `members` (int32: read at every query at 1M turns)."""
        assert self.starts is not None
        counts = np.diff(self.starts)
        return np.repeat(np.arange(counts.size, dtype=np.int32), counts)


def with_context(
    total: np.ndarray, nb: Neighbours, neighbour: float, session: float, how: str = "lift"
) -> np.ndarray:
    """Each doc's score with shares of its best neighbour's and its session's best score.

    `how="lift"` (the default) adds only what the shares exceed of the same shares of the doc's
    own score: a weak turn beside a strong one rises, while turns that match about equally (a
    run of templated turns) keep their order. `"sum"` adds the shares, `"max"` takes the larger
    of the own score and the shares."""
    if total.size == 0 or (neighbour <= 0 and session <= 0):
        return total
    if nb.members is not None and nb.starts is not None and nb.members.size == total.size:
        return _with_context_by_session(total, nb, neighbour, session, how)
    prev = nxt = best = total
    if neighbour > 0:
        padded = np.concatenate([total, np.zeros(1, total.dtype)])  # index -1 (no turn): 0
        prev, nxt = padded[nb.prev], padded[nb.next]
    if session > 0:
        best = np.zeros(nb.n_groups, np.float32)
        if nb.members is not None and nb.starts is not None and nb.members.size:
            # each session's best over its run of `members` (a third of `maximum.at`'s time)
            filled = nb.starts[:-1] < nb.starts[1:]
            best[filled] = np.maximum.reduceat(total[nb.members], nb.starts[:-1][filled])
            np.maximum(best, 0.0, out=best)
        else:
            np.maximum.at(best, nb.group, total)
        best = best[nb.group]
    return _lifted(total, prev, nxt, best, neighbour, session, how)


CONTEXT_BLOCK = 1 << 15  # docs lifted at once in session order: their temporaries stay in cache


def _with_context_by_session(
    total: np.ndarray, nb: Neighbours, neighbour: float, session: float, how: str
) -> np.ndarray:
    """`with_context` computed with the docs in session order (`Neighbours.members`, each
    session's turns in order), where a turn's neighbours are the entries beside it and its
    session's best a run: one gather and one scatter of the scores instead of four gathers,
    and the lift a block at a time, its temporaries in cache (at 1M turns each pass of a fresh
    array over memory cost about a millisecond). The same operations on the same values: the
    same bits."""
    members, starts, group = nb.members, nb.starts, nb.member_groups
    assert members is not None and starts is not None
    v = total[members]
    n = v.size
    top = np.zeros(starts.size - 1, np.float32)
    if session > 0:
        filled = starts[:-1] < starts[1:]
        top[filled] = np.maximum.reduceat(v, starts[:-1][filled])
        np.maximum(top, 0.0, out=top)
    zero = np.zeros(1, v.dtype)
    out = np.empty_like(total)
    for a in range(0, n, CONTEXT_BLOCK):
        b = min(a + CONTEXT_BLOCK, n)
        own, g = v[a:b], group[a:b]
        prev = nxt = best = own
        if neighbour > 0:  # the entry before and after in the same session, else 0
            prev = np.concatenate([v[a - 1 : a] if a else zero, own[:-1]])
            prev[g != np.concatenate([group[a - 1 : a] if a else [-1], g[:-1]])] = 0.0
            nxt = np.concatenate([own[1:], v[b : b + 1] if b < n else zero])
            nxt[g != np.concatenate([g[1:], group[b : b + 1] if b < n else [-1]])] = 0.0
        if session > 0:
            best = top[g]
        out[members[a:b]] = _lifted(own, prev, nxt, best, neighbour, session, how)
    return out


def with_context_at(
    docs: np.ndarray,
    rows: np.ndarray,
    own: np.ndarray,
    nb: Neighbours,
    neighbour: float,
    session: float,
    how: str = "lift",
) -> np.ndarray:
    """`with_context(total, ...)[docs]`, equal to the bit, from `own` = `total[rows]` alone, where
    `rows` (ascending) are every doc of the sessions of `docs` (`Neighbours.sessions_of`)."""
    total = own[np.searchsorted(rows, docs)]
    if total.size == 0 or (neighbour <= 0 and session <= 0):
        return total
    prev = nxt = best = total
    if neighbour > 0:
        p, n = nb.prev[docs], nb.next[docs]
        prev = np.where(p >= 0, own[np.searchsorted(rows, np.maximum(p, 0))], 0.0)
        nxt = np.where(n >= 0, own[np.searchsorted(rows, np.maximum(n, 0))], 0.0)
    if session > 0:
        groups, where = np.unique(nb.group[rows], return_inverse=True)
        top = np.zeros(groups.size, np.float32)
        np.maximum.at(top, where, own)
        best = top[np.searchsorted(groups, nb.group[docs])]
    return _lifted(total, prev, nxt, best, neighbour, session, how)


def _lifted(
    total: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    best: np.ndarray,
    neighbour: float,
    session: float,
    how: str,
) -> np.ndarray:
    """Scores with shares of the best neighbour's score (`prev`, `nxt`) and the session's best."""
    shares = np.zeros_like(total)
    if neighbour > 0:  # the same products and sums as `shares += neighbour * max(prev, nxt)`,
        part = np.maximum(prev, nxt)  # fewer temporaries (at 1M turns each costs page faults)
        part *= neighbour
        shares += part
    if session > 0:
        shares += np.multiply(best, session)
    if how == "lift":
        return total + np.maximum(shares - (neighbour + session) * total, 0.0)
    if how == "max":
        return np.maximum(total, shares, out=shares)
    return np.add(total, shares, out=shares)


def noise_weights(meta: pl.DataFrame) -> np.ndarray:
    """Per doc, the share of its score it keeps: NOISE_SHARE for a compaction recap and for a turn
    whose kinds are all noise kinds, 1.0 for any other."""
    if meta.height == 0 or "kinds" not in meta.columns:
        return np.ones(meta.height, np.float32)
    kinds = pl.col("kinds").fill_null([])
    noise = meta.select(
        kinds.list.contains("compaction")
        | (
            (kinds.list.len() > 0)
            & kinds.list.eval(pl.element().is_in(list(NOISE_KINDS))).list.all()
        )
    ).to_series()
    return np.where(noise.fill_null(False).to_numpy(), NOISE_SHARE, 1.0).astype(np.float32)


def split_sentences(text: str, cap: int = 24) -> list[str]:
    """A turn's sentences (lines first, then sentence ends), the first `cap` of them."""
    out: list[str] = []
    for line in text.splitlines():
        for s in sentences(line):
            if len(s) > 3:
                out.append(s[:400])
                if len(out) >= cap:
                    return out
    return out


def second_stage(
    first: np.ndarray,
    q: np.ndarray,
    texts: list[str],
    embed: Any,
    weight: float,
    sentences: bool = True,
    split: list[list[str]] | None = None,
) -> np.ndarray:
    """Candidates' new scores: their first-stage score (scaled to [0, 1]) plus `weight` times
    the model's cosine (scaled to [0, 1] over them): of the whole text, or with `sentences` the
    mean of whole-text and best-sentence cosine. `split`: the texts' sentences when known
    (`split_sentences` of each)."""
    whole = embed([t[:2000] for t in texts]) @ q.astype(np.float32)
    sem = whole
    if sentences:
        best = best_of_sentences(
            q, split if split is not None else [split_sentences(t) for t in texts], embed
        )
        sem = np.where(best > -1.0, (whole + best) / 2, whole)

    def scaled(x: np.ndarray) -> np.ndarray:
        lo, hi = float(x.min()), float(x.max())
        return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)

    return scaled(first.astype(np.float32)) + weight * scaled(sem.astype(np.float32))


def best_sentence(q: np.ndarray, texts: list[str], embed: Any) -> np.ndarray:
    """For each text, the best cosine between `q` and one of its sentences (-1 if none)."""
    return best_of_sentences(q, [split_sentences(t) for t in texts], embed)


def best_of_sentences(q: np.ndarray, split: list[list[str]], embed: Any) -> np.ndarray:
    """For each list of sentences, the best cosine between `q` and one of them (-1 if none)."""
    pieces: list[str] = []
    owner: list[int] = []
    for i, sents in enumerate(split):
        for s in sents:
            pieces.append(s)
            owner.append(i)
    out = np.full(len(split), -1.0, np.float32)
    if pieces:
        # each distinct sentence embedded once (turns repeat lines: "Done.", a tool's output)
        distinct = {s: None for s in pieces}
        where = {s: i for i, s in enumerate(distinct)}
        sims = embed(list(distinct)) @ q.astype(np.float32)
        at = np.fromiter((where[s] for s in pieces), np.int64, len(pieces))
        np.maximum.at(out, np.asarray(owner), sims.astype(np.float32)[at])
    return out
