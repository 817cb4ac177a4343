"""The real packaged model (slow: imports torch once to distil the static model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from archive_mcp.refiners.embed import MiniLMEmbedder, StaticEmbedder

pytestmark = pytest.mark.model

TEXTS = [
    "npm test fails for the date formatting helper",
    "the unit test for formatISODate is failing",
    "add a dark mode toggle to the settings page",
]


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


def _closest_pair_is_the_paraphrase(vectors: np.ndarray) -> None:
    assert vectors.shape[0] == 3
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[1, 2]


def test_static_model_is_distilled_offline_from_the_packaged_minilm(models_dir: Path) -> None:
    embedder = StaticEmbedder(models_dir)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (3, 256)
    _closest_pair_is_the_paraphrase(vectors)
    assert (models_dir / "minilm-static-256" / "model.safetensors").exists()
    # A second instance loads the distilled files instead of distilling again.
    again = StaticEmbedder(models_dir).embed(TEXTS)
    assert np.allclose(again, vectors, atol=1e-5)


def test_packaged_minilm_embeds_offline() -> None:
    vectors = MiniLMEmbedder().embed(TEXTS)
    assert vectors.shape == (3, 384)
    _closest_pair_is_the_paraphrase(vectors)


def test_ingest_with_the_real_static_model(
    kimi_root: Path, models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archive_mcp import Archive

    monkeypatch.setenv("ARCHIVE_MCP_MODELS", str(models_dir))
    report = Archive().ingest(kimi_root)
    assert (report.embedded, report.embed_error) == (11, None)


def test_discovery_with_the_static_model_recovers_planted_themes(
    models_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_themes import SAMPLE, purity_recall

    from archive_mcp import Archive

    monkeypatch.setenv("ARCHIVE_MCP_MODELS", str(models_dir))
    archive = Archive()
    archive.ingest(SAMPLE)
    found = archive.discover_themes("shop")
    assert found.method == "embeddings"
    scores = purity_recall(found.themes)
    assert sum(p for p, _ in scores.values()) / len(scores) >= 0.8
    assert sum(r for _, r in scores.values()) / len(scores) >= 0.8


def test_a_failed_distillation_is_a_clear_error_and_leaves_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import archive_mcp.refiners.embed as embed
    from archive_mcp.refiners.embed import EmbedderUnavailable

    monkeypatch.setattr(embed, "_packaged_model_path", lambda: tmp_path / "no-model")
    with pytest.raises(
        EmbedderUnavailable,
        match="could not distil the static model: no packaged model at .*no-model",
    ):
        StaticEmbedder(tmp_path / "models").embed(TEXTS)
    assert not (tmp_path / "models").exists()
