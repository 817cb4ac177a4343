"""The full packaged MiniLM through sentence-transformers (slow: imports torch; the `minilm` extra)."""

from __future__ import annotations

import numpy as np
import pytest
from archive_mcp.refiners.embed import MiniLMEmbedder

pytestmark = pytest.mark.model

TEXTS = [
    "npm test fails for the date formatting helper",
    "the unit test for formatISODate is failing",
    "add a dark mode toggle to the settings page",
]


def _closest_pair_is_the_paraphrase(vectors: np.ndarray) -> None:
    assert vectors.shape[0] == 3
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[1, 2]


def test_packaged_minilm_embeds_offline() -> None:
    vectors = MiniLMEmbedder().embed(TEXTS)
    assert vectors.shape == (3, 384)
    _closest_pair_is_the_paraphrase(vectors)
