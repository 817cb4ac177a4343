"""What a time-ordered search shows: the best hits by rank, and the ends of the story (issue 41).

An agent asking how a decision evolved searches with `order=time` and reads the hits oldest
first; the turn that started the story and the one that settled it are often not among the top
hits by rank. Among the ranked candidates down to `depth * limit`, the earliest and the latest
whose score is at least `share` of the best hit's replace the weakest of the top `limit`: the
count, hence the budget, stays the same, and the best hit always stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Span:
    depth: int  # candidates considered: the ranking's top depth * limit
    share: float  # an end's score is at least this share of the best hit's


# Chosen on bonkbot and pai, scored on mthisness and openprintkit (bench/results/agent.md,
# `bench/agent_span.py`): the first labelled decision of a topic reached 17 of 26 times held
# out against 14 (the same top 8 by rank), the last 17 against 17.
SPAN = Span(depth=3, share=0.6)


def spanned(
    scores: Sequence[float], times: Sequence[Any], limit: int, rule: Span = SPAN
) -> list[int]:
    """The positions of the ranked candidates (`scores` best first, `times` their start times,
    None when unknown) that a time-ordered search of `limit` hits keeps, in rank order."""
    n = min(len(scores), limit * rule.depth)
    keep = list(range(min(limit, n)))
    bar = rule.share * scores[0] if scores else 0.0
    strong = sorted(
        (i for i in range(n) if scores[i] >= bar and times[i] is not None),
        key=lambda i: (times[i], i),
    )
    if n <= limit or not strong:
        return keep
    ends = [strong[0], strong[-1]]
    for end in dict.fromkeys(ends):
        weaker = [i for i in keep[1:] if i not in ends]  # the best hit always stays
        if end not in keep and weaker:
            keep.remove(weaker[-1])
            keep.append(end)
    return sorted(keep)
