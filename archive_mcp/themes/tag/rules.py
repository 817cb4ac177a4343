"""Tagging's rules, one frozen value passed in (`TAG_RULES` the shipped one).

With vectors, topic seeds join by the learned score (`Score`, membership.py); the hand-set rules
stay for question seeds and for workspaces without vectors (tagging.py says how each works). A
bench tries another value with `dataclasses.replace(TAG_RULES, ...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Score:
    """The learned membership score: a logistic model over `features` (standardised by `mean` and
    `scale`, weighed by `weights` and `bias`); a turn joins at `cut` or more (at `min_score` 0.5).
    Fitted by `bench/members_learned.py --fit` on bonkbot, pai, mthisness and openprintkit (all
    topics); the cut is the one whose mean recall and precision over the projects do best."""

    features: tuple[str, ...] = ("rank", "walk", "session")
    mean: tuple[float, ...] = (4.0806, -1.8322, 0.057)
    scale: tuple[float, ...] = (1.0886, 0.7677, 0.138)
    weights: tuple[float, ...] = (-0.9918, 1.3919, 0.3134)
    bias: float = -4.4326
    cut: float = 0.125
    # the candidates: the turns within this many places of a hit in their session
    window: int = 3
    # Given every candidate and its row of `membership.SIGNALS` as tagging computes them (the
    # benches fit the score on these: `bench/members_learned.py`); no part of the score.
    record: Callable[[Sequence[tuple[str, str, int]], np.ndarray], None] | None = field(
        default=None, compare=False, repr=False
    )


@dataclass(frozen=True)
class TagRules:
    # Topic seeds with vectors join by `score` (tagging.by_score); False: by the rules below, as
    # question seeds and workspaces without vectors always do.
    scored: bool = True
    score: Score = field(default_factory=Score)
    # a word in more than this share of a workspace's turns says nothing about a topic
    common_share: float = 0.3
    # the hits asked of each seed (the score's rank signal counts in them)
    depth: int = 150
    near_misses: int = 10
    # Tuned on the labelled coding set (bench/RESULTS.md, Themes): with the default min_score 0.5
    # a hit at 0.65 of a seed's best is core, one from 0.3 joins when as close to the core's
    # centroid as 70% of the core (0.6 fell under precision 0.6 with main's refiner and ranking at
    # d5e5013), one from 0.4 when it touches the topic's files.
    core: float = 1.3
    low: float = 0.6
    file_low: float = 0.8
    file_min: int = 3
    file_share: float = 0.02
    core_quantile: float = 0.7
    # A topic seed's best `topic_core` hits are core whatever their share (0: none): when one hit
    # outscores the rest (it names every seed word), the rest of a small topic still makes the
    # core. Held out by project (bench/results/themes-heldout.md): membership alone chooses 5
    # (recall 0.77 -> 0.81 at precision 0.71 -> 0.66), but the harness's objective (members,
    # changes, claims and Now together) chooses 0 in two folds of three: at 5, Now falls from 40%
    # to 33% (mthisness 7 -> 4 of 14) as the core takes in late turns of other topics. So 0, until
    # Now stops paying.
    topic_core: int = 0
    gap: int = 3
    # A question seed ("What activities does X do?") asks for everything that answers it, spread
    # over a conversation: its best `question_core` hits are core, and the turns next to the
    # theme's turns join when as close to the core's centroid as the furthest core turn (for other
    # seeds: as the `neighbour_quantile` of the core). Tuned on LoCoMo-dev and the coding set
    # (bench/RESULTS.md).
    question_core: int = 20
    neighbour_quantile: float = 0.3
    # a turn in a gap is at most this much further from the core's centroid than the core
    gap_margin: float = 0.2


TAG_RULES = TagRules()
