"""The static model shipped in the package: its bytes, its licence, and that it runs without torch."""

from __future__ import annotations

import hashlib
import json
import random
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from archive_mcp.refiners.embed import (
    STATIC_MODEL,
    STATIC_SHA256,
    EmbedderUnavailable,
    StaticEmbedder,
    make_embedder,
)

TEXTS = [
    "npm test fails for the date formatting helper",
    "the unit test for formatISODate is failing",
    "add a dark mode toggle to the settings page",
]


def test_the_shipped_model_is_the_one_the_build_script_made() -> None:
    data = (STATIC_MODEL / "model.safetensors").read_bytes()
    assert hashlib.sha256(data).hexdigest() == STATIC_SHA256
    assert len(data) == 15_116_888
    config = json.loads((STATIC_MODEL / "config.json").read_text(encoding="utf-8"))
    assert config["tokenizer_name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert (config["hidden_dim"], config["normalize"], config["embedding_dtype"]) == (
        256,
        True,
        "float16",
    )
    assert "Apache License" in (STATIC_MODEL / "LICENSE").read_text(encoding="utf-8")
    assert "all-MiniLM-L6-v2" in (STATIC_MODEL / "NOTICE").read_text(encoding="utf-8")


def test_the_static_model_loads_and_embeds_without_torch() -> None:
    code = (
        "import sys, numpy as np\n"
        f"texts = {TEXTS!r}\n"
        "from archive_mcp.refiners.embed import StaticEmbedder\n"
        "v = StaticEmbedder().embed(texts)\n"
        "s = v @ v.T\n"
        "print(v.shape, bool(np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)),"
        " bool(s[0, 1] > s[0, 2] and s[0, 1] > s[1, 2]),"
        " sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'model2vec')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(3, 256) True True []"


def _varied_texts() -> list[str]:
    """Empty, blank, unknown-only, special-token, non-Latin, code, emoji, over-long and random texts."""
    rnd = random.Random(0)
    alphabet = string.printable + "éßж中文日本"
    words = ["fix", "bug", "the", "npm", "pytest", "refactor", "über", "数据", "formatISODate"]
    return [
        *TEXTS,
        "",
        " ",
        "\x00\x01",
        "[UNK] [CLS] [SEP] [PAD]",
        "日本語のテキスト と English",
        "def f(x):\n    return x**2  # ☃",
        "ẞtraße naïve café",
        "a" * 5000,
        " ".join(["token"] * 3000),
        "🙂🙃" * 50,
        *("".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 400))) for _ in range(1500)),
        *(" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 60))) for _ in range(1500)),
    ]


def test_the_static_model_gives_the_vectors_model2vec_gives() -> None:
    """refiners/static.py runs the shipped model as model2vec does: the same float16 rows, and
    the same unit float32 vectors out of the embedder."""
    model2vec = pytest.importorskip("model2vec")
    from archive_mcp.refiners.static import StaticModel

    texts = _varied_texts()
    reference = model2vec.StaticModel.from_pretrained(str(STATIC_MODEL))
    want = reference.encode(texts, batch_size=1024, show_progress_bar=False)
    got = StaticModel(STATIC_MODEL).encode(texts, batch_size=1024)
    assert got.dtype == want.dtype == np.float16 and got.shape == (len(texts), 256)
    assert np.array_equal(got, want)
    assert not got[TEXTS.__len__()].any()  # the empty text is a zero vector
    vectors = StaticEmbedder().embed(texts[:50])
    norms = np.linalg.norm(want[:50].astype(np.float32), axis=1, keepdims=True)
    assert np.array_equal(vectors, want[:50].astype(np.float32) / np.where(norms == 0, 1, norms))


def test_the_default_embedder_is_the_shipped_static_model() -> None:
    embedder = make_embedder("static")
    assert isinstance(embedder, StaticEmbedder) and embedder.path == STATIC_MODEL
    assert embedder.name == "minilm-static-256"  # the name stored embeddings were made under


def test_a_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="the static model is missing from .*nothing"):
        StaticEmbedder(tmp_path / "nothing").embed(TEXTS)


def test_ingest_and_hybrid_search_with_the_shipped_model(kimi_root: Path) -> None:
    from archive_mcp import Archive

    archive = Archive()
    report = archive.ingest(kimi_root)
    assert (report.embedded, report.embed_error) == (11, None)
    found = archive.search("formatISODate", workspace="webapp")
    assert found.realized_mode == "hybrid" and found.fallback_reason is None


@pytest.mark.slow  # CI runs it; the fast loop leaves it out
def test_discovery_with_the_static_model_recovers_planted_themes() -> None:
    from test_themes import SAMPLE, purity_recall

    from archive_mcp import Archive

    archive = Archive()
    archive.ingest(SAMPLE)
    found = archive.discover_themes("shop")
    assert found.method == "embeddings"
    scores = purity_recall(found.themes)
    assert sum(p for p, _ in scores.values()) / len(scores) >= 0.8
    assert sum(r for _, r in scores.values()) / len(scores) >= 0.8


@pytest.mark.model
def test_the_build_script_reproduces_the_shipped_model(tmp_path: Path) -> None:
    """Distilling again from the packaged MiniLM (torch, about 2 minutes) gives the same bytes."""
    pytest.importorskip("skeletoken")
    root = Path(__file__).parent.parent
    done = subprocess.run(
        [sys.executable, str(root / "tools" / "build_static_model.py"), str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (tmp_path / "m" / name).read_bytes() == (STATIC_MODEL / name).read_bytes(), name
    rebuilt = StaticEmbedder(tmp_path / "m").embed(TEXTS)
    assert np.array_equal(rebuilt, StaticEmbedder().embed(TEXTS))
