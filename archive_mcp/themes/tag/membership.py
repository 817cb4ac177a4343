"""Which turns join a theme tagged from topic seeds: one logistic score over three signals.

The candidates are the turns around the seeds' hits (`around`: within `Score.window` places of a hit
in its session, noise and subagent turns left out). Tagging computes `SIGNALS` for each, none of
them from the labels, and the score weighs three (`Score.features`, tag/rules.py):

- `rank`: log(1 + its best rank in a seed's hits), `TagRules.depth` for a turn no seed found;
- `walk`: log of its score in the random walk from the core (`walk.walk_scores`), over the core's
  reference: a topic of real work is a run of turns, and the walk follows the runs;
- `session`: the share of its session's candidates that are core (a session mostly about the topic).

The other three are computed for the benches, which cache every signal: `seeds` (the share of the
seeds whose hits hold the turn) was weighed until a fourth labelled project, a small one, was held
out: there every seed's hits hold nearly every turn (mean 0.88), and the score took half the
project into some themes. Neither `strong` (the share of seeds under which the turn scores at
least `STRONG` of their best hit: `seeds` without the workspace's size in it) nor `share` (its
best score over a seed's best) won held out.

`probability` weighs them with `Score.weights` (on features standardised by its `mean` and `scale`); a turn
joins at its `cut` or more (scaled by `min_score` / 0.5), the next best come back as near misses.

Why a learned score and not hand-set rules: the rules before it (core by share, centroid test,
gap filling, neighbours, walk drops and adds), each tuned on one labelled project, reach member
recall 0.77 at precision 0.72 held out over four labelled projects; this score, fitted on three
and scored on the fourth, 0.85 at 0.65, beside the BM25 z+ MiniLM cut at the same sizes at
0.80 / 0.61 (bench/results/themes-heldout.md, `bench/members_learned.py`). The shipped constants
are the fit on all four, written by `bench/members_learned.py --fit`; the cut is the one whose
mean recall and precision over the projects do best (the target is stated on the mean). Question
seeds ("What did X do?") keep the rules in tagging.py: their answers are spread over a
conversation, and no labelled question topic was there to fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from archive_mcp.refiners.text import clip
from archive_mcp.themes.tag.rules import TAG_RULES, Score
from archive_mcp.themes.tag.walk import walk_scores

Key = tuple[str, str, int]

# Every signal tagging computes for a candidate (`signals`; the benches cache them all); the ones
# the score weighs are its `Score.features`.
SIGNALS = ("seeds", "rank", "walk", "session", "share", "strong")
STRONG = 0.5  # `strong`: the share of seeds under which the turn scores this much of their best hit
WALK_FLOOR = 1e-3  # walk scores (over the core's reference) are clipped here before the log
# The rank of a turn no seed's hits hold: the hits tagging asks of each seed (`TagRules.depth`).
DEPTH = TAG_RULES.depth


def signals(
    candidates: Sequence[Key],
    ranks: Mapping[Key, int],
    shares: Mapping[Key, Sequence[float]],
    walk: Mapping[Key, float],
    core: set[Key],
    depth: int = DEPTH,
) -> np.ndarray:
    """One row of `SIGNALS` per candidate: `ranks` a turn's best rank in a seed's hits, `shares`
    its score over each seed's best hit (0 where that seed did not find it), `walk` its walk
    score over the core's reference, `core` the core turns."""
    by_session: dict[str, list[Key]] = {}
    for k in candidates:
        by_session.setdefault(k[0], []).append(k)
    in_core = {s: sum(1 for k in ks if k in core) / len(ks) for s, ks in by_session.items()}
    rows = np.zeros((len(candidates), len(SIGNALS)))
    for i, k in enumerate(candidates):
        mine = list(shares.get(k, ())) or [0.0]
        rows[i] = (
            sum(1 for x in mine if x > 0) / len(mine),
            math.log1p(ranks.get(k, depth)),
            math.log(max(walk.get(k, 0.0), WALK_FLOOR)),
            in_core[k[0]],
            max(mine),
            sum(1 for x in mine if x >= STRONG) / len(mine),
        )
    return rows


def features(rows: np.ndarray, score: Score = TAG_RULES.score) -> np.ndarray:
    """The `score.features` columns of `signals` rows, in `SIGNALS` order (the constants' order)."""
    return rows[:, [i for i, name in enumerate(SIGNALS) if name in score.features]]


def probability(rows: np.ndarray, score: Score = TAG_RULES.score) -> np.ndarray:
    """The chance that each candidate (a row of `features`) is a member of the topic."""
    if not len(rows):
        return np.zeros(0)
    z = ((rows - np.array(score.mean)) / np.array(score.scale)) @ np.array(score.weights)
    z = z + score.bias
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def cut(min_score: float, score: Score = TAG_RULES.score) -> float:
    """The least probability that joins: `score.cut` at the default `min_score` 0.5, scaled with it."""
    return min(0.99, score.cut * min_score / 0.5)


def around(turns: list[Key], hits: set[Key], window: int = TAG_RULES.score.window) -> list[Key]:
    """The `turns` (noise already left out) within `window` places of a hit in
    their session's order, in that order: counted in places, not turn numbers, so that the noise
    between two turns of a topic does not push one out of reach."""
    by_session: dict[str, list[Key]] = {}
    for k in sorted(turns):
        by_session.setdefault(k[0], []).append(k)
    out: list[Key] = []
    for ks in by_session.values():
        at = [i for i, k in enumerate(ks) if k in hits]
        keep = {j for i in at for j in range(max(0, i - window), min(len(ks), i + window + 1))}
        out += [ks[j] for j in sorted(keep)]
    return out


def choose(
    runs: Sequence[tuple[str, Sequence[Any]]],
    turns: list[Key],
    noisy: set[Key],
    x: np.ndarray,
    pos: Mapping[Key, int],
    core: Mapping[Key, float],
    min_score: float,
    score: Score = TAG_RULES.score,
    depth: int = DEPTH,
) -> tuple[list[tuple[Key, float, str, float]], list[dict[str, Any]]]:
    """The members, as (key, score, provenance, probability), among `turns` (main-agent turns
    of the hits' sessions with a vector at `pos` in `x`, noise left out) around the hits of
    `runs` (each seed with its search hits), and the hits under the cut as near misses, most
    likely first. `core`: the core turns (key -> share of their seed's best hit)."""
    ranks: dict[Key, int] = {}
    shares: dict[Key, list[float]] = {}  # key -> its score over each seed's best hit
    found: dict[Key, tuple[Any, str]] = {}  # key -> (its best-ranked hit, that hit's seed)
    for j, (seed, hits) in enumerate(runs):
        # the seed's best hit as tagging's core counts it: a main-agent turn that is not noise
        top = max((h.score for h in hits if usable(h, noisy)), default=0.0)
        for rank, h in enumerate(hits):
            k = (h.session_id, h.agent, h.turn)
            if not usable(h, noisy):
                continue
            mine = shares.setdefault(k, [0.0] * len(runs))
            mine[j] = max(mine[j], h.score / top if top > 0 else 0.0)
            if rank < ranks.get(k, depth):
                ranks[k] = rank
                found[k] = (h, seed)
    pool = around(turns, set(found) | set(core), score.window)
    scores = walk_scores(pool, x[[pos[k] for k in pool]], core) if pool else None
    walked = dict(zip(pool, scores.tolist(), strict=True)) if scores is not None else {}
    every_signal = signals(pool, ranks, shares, walked, set(core), depth)
    if score.record is not None:
        score.record(pool, every_signal)
    rows = features(every_signal, score)
    prob = dict(zip(pool, probability(rows, score).tolist(), strict=True))
    least = cut(min_score, score)
    best = max((h.score for h, _ in found.values()), default=0.0)
    every = " | ".join(seed for seed, _ in runs)
    chosen = [
        (k, found[k][0].score if k in found else best * p, _how(k, found, every), round(p, 3))
        for k, p in prob.items()
        if p >= least
    ]
    under = sorted((k for k in found if prob.get(k, 0.0) < least), key=lambda k: -prob.get(k, 0.0))
    return chosen, [_near(*found[k], best, prob.get(k, 0.0)) for k in under]


def usable(h: Any, noisy: set[Key]) -> bool:
    """Can this search hit join a theme: a main-agent turn that is not noise?"""
    return h.agent == "main" and (h.session_id, h.agent, h.turn) not in noisy


def _how(k: Key, found: Mapping[Key, tuple[Any, str]], every: str) -> str:
    """A member's provenance: the seed whose hits hold it best, else the walk from all seeds."""
    return f"seed:{found[k][1]}" if k in found else f"walk:{every}"


def _near(h: Any, seed: str, best: float, chance: float) -> dict[str, Any]:
    """A hit that did not join, as a near miss to confirm (with its chance of being a member)."""
    return {
        "session_id": h.session_id,
        "agent": h.agent,
        "turn": h.turn,
        "ref": f"{h.session_id}:{h.turn}",
        "score": h.score,
        "share": round(h.score / best, 3) if best > 0 else 0.0,
        "probability": round(chance, 3),
        "seed": seed,
        "at": h.started_at,
        "summary": clip(" ".join((h.summary or "").split()), 160),
    }
