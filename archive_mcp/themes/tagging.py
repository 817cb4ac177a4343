"""Seed tagging: from 1-3 seed phrases to the turns of a theme, plus near misses to confirm.

Each seed is searched with the words that most of the workspace shares taken out (a project's
name, the two speakers of a chat: they match everything and point the query vector nowhere).
Hits that are noise (commands that did no work, compaction summaries, continuation stubs, API
errors, interruptions) are never attached. A hit scoring at least `min_score` x the seed's best is
attached, and so are the turns next to it that sit as close to the attached turns' centroid;
the next hits come back as near misses with a one-line summary each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.refiners.text import tokens
from archive_mcp.render import clip
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.themes.noise import noise_mask

COMMON_SHARE = 0.3  # a word in more than this share of a workspace's turns says nothing about a topic
DEPTH = 60
NEAR_MISSES = 10
NEIGHBOUR_QUANTILE = 0.3

Key = tuple[str, str, int]


@dataclass
class Candidate:
    key: Key
    score: float
    provenance: str


def focus(seed: str, index: WorkspaceIndex) -> str:
    """The seed without the words most of the workspace shares (kept whole if nothing is left)."""
    n = max(1, index.n_docs)
    if n < 20:
        return seed

    def common(word: str) -> bool:
        toks = tokens(word)
        return bool(toks) and all(sum(s.postings.df(t) for s in index.segments) / n > COMMON_SHARE for t in toks)

    kept = [w for w in seed.split() if not common(w)]
    return " ".join(kept) if kept and len(kept) < len(seed.split()) else seed


def seed_candidates(search: Callable[[str, int], Sequence[Any]], index: WorkspaceIndex,
                    turns: Callable[[set[str]], pl.DataFrame], seeds: Sequence[str],
                    min_score: float) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Candidates to attach and near misses, from each seed's hits (noise left out)."""
    runs = []
    for seed in seeds:
        hits = list(search(focus(seed, index), DEPTH))
        runs.append((seed, hits))
    sessions = {h.session_id for _, hits in runs for h in hits}
    noisy = _noise(turns(sessions)) if sessions else set()
    attach: list[Candidate] = []
    near: list[dict[str, Any]] = []
    for seed, hits in runs:
        good = [h for h in hits if (h.session_id, h.agent, h.turn) not in noisy]
        if not good:
            continue
        best = good[0].score
        for h in good:
            key = (h.session_id, h.agent, h.turn)
            if h.score >= min_score * best:
                attach.append(Candidate(key, h.score, f"seed:{seed}"))
            elif len(near) < NEAR_MISSES * len(seeds):
                near.append({"session_id": h.session_id, "agent": h.agent, "turn": h.turn,
                             "ref": f"{h.session_id}:{h.turn}", "score": h.score, "share": round(h.score / best, 3),
                             "seed": seed,
                             "at": h.started_at, "summary": clip(" ".join((h.summary or "").split()), 160)})
    attach += neighbours(index, attach, noisy)
    taken = {c.key for c in attach}
    seen: set[Key] = set()
    near_out = []
    for n in sorted(near, key=lambda n: -n["share"]):
        k = (n["session_id"], n["agent"], n["turn"])
        if k not in taken and k not in seen:
            seen.add(k)
            near_out.append(n)
    return attach, near_out[:NEAR_MISSES]


def neighbours(index: WorkspaceIndex, attach: list[Candidate], noisy: set[Key],
               quantile: float = NEIGHBOUR_QUANTILE) -> list[Candidate]:
    """The turns right before and after an attached turn, when they are as close to the attached
    turns' centroid as most attached turns are: a topic runs over a few turns of a conversation,
    and the short turns of that run ("yes", "still broken") rarely match a seed themselves."""
    if not attach or not index.has_vectors():
        return []
    parts = [s.dense() for s in index.segments if s.meta.height]
    dense: list[np.ndarray] = [d for d in parts if d is not None]
    if len(dense) != len(parts):
        return []
    x: np.ndarray = np.concatenate(dense)
    meta = index.meta
    pos = {k: i for i, k in enumerate(zip(meta["session_id"].to_list(), meta["agent"].to_list(),
                                          meta["turn"].to_list(), strict=True)) if index.alive[i]}
    core = {c.key: c for c in attach}
    rows = [pos[k] for k in core if k in pos]
    if len(rows) < 2:
        return []
    centre = x[rows].mean(0)
    centre /= np.linalg.norm(centre) or 1.0
    floor = float(np.quantile(x[rows] @ centre, quantile))
    out: dict[Key, Candidate] = {}
    for (s, a, t), c in core.items():
        for k in ((s, a, t - 1), (s, a, t + 1)):
            if k in core or k in out or k in noisy or k not in pos:
                continue
            if float(x[pos[k]] @ centre) >= floor:
                out[k] = Candidate(k, c.score * 0.5, c.provenance.replace("seed:", "neighbour:", 1))
    return list(out.values())


def _noise(frame: pl.DataFrame) -> set[Key]:
    if not frame.height:
        return set()
    keys = frame.select("session_id", "agent", "turn").iter_rows()
    return {k for k, bad in zip(keys, noise_mask(frame), strict=True) if bad}
