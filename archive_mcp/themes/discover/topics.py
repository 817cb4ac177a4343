"""What a topic of real work is made of besides its words: the files and identifiers it keeps
coming back to. Discovery's finer level clusters each turn's vector joined with these.

A file or keyword that few turns share (at most `RARE` of the workspace or two, in at least two) is a
topic's own; TF-IDF over them, reduced to `DIMS` dimensions, is appended to the turn's vector
at `DiscoveryRules.term_weight`. Tuned on the labelled coding set (bench/RESULTS.md, Themes).
"""

from __future__ import annotations

import numpy as np

from archive_mcp.themes.discover.rules import DISCOVERY_RULES
from archive_mcp.themes.discover.vectors import tfidf, truncated_svd

RARE = 0.02
DIMS = 64


def with_topic_terms(
    x: np.ndarray,
    keywords: list[list[str]],
    files: list[list[str]],
    weight: float = DISCOVERY_RULES.term_weight,
) -> np.ndarray:
    """`x` (unit rows) joined with `weight` x the rows' rare keywords and files (unit), renormalised."""
    docs = [[w.lower() for w in k] + f for k, f in zip(keywords, files, strict=True)]
    if weight <= 0 or len(docs) < 3:
        return x
    try:
        m = tfidf(docs, min_df=2, max_df=max(2, int(RARE * len(docs))), sublinear_tf=True)
    except ValueError:  # no term is shared by two turns and rare enough
        return x
    terms = truncated_svd(m, DIMS, seed=0) if m.shape[1] > DIMS + 1 else m.toarray()
    norms = np.linalg.norm(terms, axis=1, keepdims=True)
    z = np.hstack([x, weight * terms / np.where(norms == 0, 1, norms)]).astype(np.float32)
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return z / np.where(norms == 0, 1, norms)
