"""Hybrid retrieval: BM25 + fuzzy (rapidfuzz term expansion) + semantic cosine, fused by CombSUM
(normalised score sum; reciprocal-rank fusion stays available for comparison)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.errors import ArchiveError
from archive_mcp.ingest import store
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable
from archive_mcp.refiners.text import is_cjk, tokens
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.lexical import bm25
from archive_mcp.themes.store import ThemeError, ThemeStore
from archive_mcp.workspaces import Workspace

MODES = ("hybrid", "lexical", "fuzzy", "semantic")
FUSIONS = ("combsum", "rrf")
RRF_K = 60
DEPTH = 100  # candidates each signal contributes to the fusion
SNIPPET = 220


class SearchError(ArchiveError, ValueError):
    """A search argument the caller can fix; the message says how."""


@dataclass
class Hit:
    workspace_id: str
    session_id: str
    agent: str
    turn: int
    started_at: str | None
    score: float
    summary: str
    snippet: str
    matched: list[str]
    status: str
    kinds: list[str]
    raw_ref: dict[str, Any]
    title: str | None = None
    source: str | None = None  # the agent that wrote the session: kimi, kimi-code, claude-code, codex, gemini

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SearchResults(list[Hit]):
    """The hits, best first, plus how the query was actually answered."""

    def __init__(self, hits: list[Hit], realized_mode: str, fallback_reason: str | None) -> None:
        super().__init__(hits)
        self.realized_mode = realized_mode
        self.fallback_reason = fallback_reason

    def to_json(self) -> dict[str, Any]:
        return {"hits": [h.to_json() for h in self], "realized_mode": self.realized_mode,
                "fallback_reason": self.fallback_reason}


@dataclass
class Filters:
    session: str | None = None
    agent: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    tool: str | None = None
    file: str | None = None
    theme: str | None = None
    kind: str | None = None
    source: str | None = None

    def mask(self, ws: Workspace, meta: pl.DataFrame) -> np.ndarray | None:
        conds: list[pl.Expr] = []
        if self.session:
            conds.append(pl.col("session_id").str.starts_with(self.session))
        if self.agent:
            conds.append(pl.col("agent") == self.agent)
        if self.since:
            conds.append(pl.col("started_at") >= _utc(self.since))
        if self.until:
            conds.append(pl.col("started_at") <= _utc(self.until))
        if self.tool:
            conds.append(pl.col("tools").list.eval(pl.element().str.to_lowercase()).list.contains(self.tool.lower()))
        if self.file:
            conds.append(pl.col("files").list.eval(pl.element().str.contains(self.file, literal=True)).list.any())
        if self.kind:
            conds.append(pl.col("kinds").list.contains(self.kind))
        if self.source:
            conds.append(pl.col("source") == self.source)
        out = None
        if conds and meta.height:
            out = meta.select(pl.all_horizontal(conds).fill_null(False)).to_series().to_numpy()
        if self.theme:
            try:
                theme = ThemeStore(ws).get(self.theme)
            except ThemeError:
                theme = None
            members = {m.key for m in theme.members} if theme else None
            if members is None:
                raise SearchError(f"no theme named {self.theme!r} in workspace {ws.name}; list them with list_themes")
            keys = meta.select("session_id", "agent", "turn").rows()
            in_theme = np.fromiter(((k[0], k[1], int(k[2])) in members for k in keys), bool, len(keys))
            out = in_theme if out is None else out & in_theme
        return out


def _utc(d: datetime) -> datetime:
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _top(scores: np.ndarray, ok: np.ndarray, depth: int = DEPTH) -> list[int]:
    scores = np.where(ok & (scores > 0), scores, 0.0)
    n = int(np.count_nonzero(scores))
    if n == 0:
        return []
    k = min(depth, n)
    idx = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in idx[np.argsort(-scores[idx], kind="stable")]]


def rrf(rankings: dict[str, list[int]], k: int = RRF_K) -> list[tuple[int, float, list[str]]]:
    """Reciprocal-rank fusion: sum of 1/(k + rank) over the signals that ranked a doc."""
    fused: dict[int, float] = {}
    signals: dict[int, list[str]] = {}
    for name, ranked in rankings.items():
        for rank, doc in enumerate(ranked):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank + 1)
            signals.setdefault(doc, []).append(name)
    order = sorted(fused, key=lambda d: (-fused[d], d))
    return [(d, fused[d], signals[d]) for d in order]


def _normalised(name: str, x: np.ndarray, ok: np.ndarray, depth: int) -> np.ndarray:
    """Scores on [0, 1]: BM25 divided by the best; cosine min-max scaled over the top `depth`."""
    x = np.where(ok, x, -np.inf if name == "semantic" else 0.0)
    if name != "semantic":
        best = float(x.max()) if x.size else 0.0
        return x / best if best > 0 else np.zeros_like(x)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return np.zeros(x.shape, np.float32)
    k = min(depth, finite.size)
    top = np.partition(finite, finite.size - k)[finite.size - k:]
    lo, hi = float(top.min()), float(top.max())
    if finite.size <= depth:  # every doc is a candidate: keep the weakest just above zero
        lo -= 1e-6
    return np.clip((np.where(np.isfinite(x), x, lo) - lo) / (hi - lo + 1e-9), 0.0, 1.0)


def combsum(scores: dict[str, np.ndarray], ok: np.ndarray, depth: int = DEPTH,
            weights: dict[str, float] | None = None) -> list[tuple[int, float, list[str]]]:
    """Sum of per-signal scores normalised to [0, 1] (CombSUM); keeps how confident each was.

    Measured against RRF on bench/retrieval.py: RRF discards the margin between a confident
    identifier match and the rest, CombSUM keeps it (see bench/RESULTS.md).
    """
    if not scores:
        return []
    weights = weights or {}
    norm = {n: weights.get(n, 1.0) * _normalised(n, v, ok, depth) for n, v in scores.items()}
    total = sum(norm.values())
    assert isinstance(total, np.ndarray)
    order = _top(total, ok, depth)
    return [(d, float(total[d]), [n for n, v in norm.items() if v[d] > 0]) for d in order]


def latin_share(text: str) -> float:
    """The share of a query's letters that are not CJK (1.0 for English, 0.0 for Chinese)."""
    letters = [ch for ch in text if ch.isalnum()]
    if not letters:
        return 1.0
    return sum(1 for ch in letters if not is_cjk(ch)) / len(letters)


class Searcher:
    """Runs one query over one workspace's index."""

    def __init__(self, index: WorkspaceIndex, embedder: Embedder | None) -> None:
        self.index = index
        self.embedder = embedder

    def rank(self, query: str, mode: str, filters: Filters, depth: int = DEPTH, fusion: str = "combsum"
             ) -> tuple[list[tuple[int, float, list[str]]], set[str], str | None, dict[str, Any]]:
        idx = self.index.refresh()
        ok = idx.alive.copy()
        mask = filters.mask(idx.ws, idx.meta)
        if mask is not None:
            ok &= mask
        q_tokens = list(dict.fromkeys(tokens(query)))
        parts = [s.postings for s in idx.segments]
        alive_parts = np.split(idx.alive, [idx.segments[0].meta.height])
        scores: dict[str, np.ndarray] = {}
        reason = None
        fuzzy_terms: list[tuple[str, float]] = []
        if mode in ("hybrid", "lexical"):
            scores["lexical"] = np.concatenate(bm25(parts, [(t, 1.0) for t in q_tokens], alive_parts))
        if mode in ("hybrid", "fuzzy"):
            fuzzy_terms = self._fuzzy_terms(q_tokens, parts)
            scores["fuzzy"] = np.concatenate(bm25(parts, fuzzy_terms, alive_parts))
        if mode in ("hybrid", "semantic"):
            reason = self._semantic(query, ok, scores, depth)
            if reason and mode == "semantic":  # fall back to what still works
                scores["lexical"] = np.concatenate(bm25(parts, [(t, 1.0) for t in q_tokens], alive_parts))
        # The packaged model is English-only: its cosine says little about a Chinese query.
        weights = {"semantic": latin_share(query)} if mode == "hybrid" else None
        fused = (rrf({n: _top(v, ok, depth) for n, v in scores.items()}) if fusion == "rrf"
                 else combsum(scores, ok, depth, weights))
        highlight = set(q_tokens) | {t for t, _ in fuzzy_terms}
        return fused, set(scores), reason, {"highlight": highlight}

    def _fuzzy_terms(self, q_tokens: list[str], parts: list[Any]) -> list[tuple[str, float]]:
        """The query's terms (weight 1) plus vocabulary terms a few edits away (weight sim²)."""
        out: dict[str, float] = {t: 1.0 for t in q_tokens}
        for tok in q_tokens[:8]:
            for part in parts:
                for term, score in part.similar_terms(tok):
                    out[term] = max(out.get(term, 0.0), (score / 100.0) ** 2)
        return sorted(out.items(), key=lambda kv: -kv[1])[:32]

    def _semantic(self, query: str, ok: np.ndarray, scores: dict[str, np.ndarray], depth: int) -> str | None:
        if self.embedder is None:
            return "no embedding model is configured"
        if not self.index.has_vectors():
            return ("no turn in this workspace has an embedding yet: run `archive-mcp refine` "
                    "(or ingest without --no-embed)")
        try:
            q = self.embedder.embed([query])[0]
        except EmbedderUnavailable as exc:
            return str(exc)
        sims, has = self.index.cosine(q)
        scores["semantic"] = np.where(has, sims, -1.0)
        return None


def realized(mode: str, used: set[str], reason: str | None) -> str:
    if mode == "semantic" and reason:
        return "lexical"
    if mode == "hybrid" and "semantic" not in used:
        return "lexical+fuzzy"
    return mode


# --- hits ----------------------------------------------------------------------------------

def build_hits(ws: Workspace, meta: pl.DataFrame, fused: list[tuple[int, float, list[str]]],
               highlight: set[str]) -> list[Hit]:
    """Hits for fused docs, with texts read from the refined Parquet of their sessions only."""
    if not fused:
        return []
    rows = meta[[d for d, _, _ in fused]]
    files = [str(store.refined_path(ws, sid)) for sid in rows["session_id"].unique().to_list()]
    wanted = rows.select("session_id", "agent", "turn").lazy()
    df = (pl.scan_parquet(files)  # one scan over the hit sessions' files only
          .select("session_id", "agent", "turn", "summary", "user_text", "assistant_text", "tool_calls", "title")
          .join(wanted, on=["session_id", "agent", "turn"], how="semi").collect())
    texts = {(r["session_id"], r["agent"], r["turn"]): r for r in df.iter_rows(named=True)}
    hits = []
    for (_doc, score, signals), r in zip(fused, rows.iter_rows(named=True), strict=True):
        t = texts.get((r["session_id"], r["agent"], r["turn"]), {})
        started = r["started_at"]
        hits.append(Hit(
            workspace_id=ws.id, session_id=r["session_id"], agent=r["agent"], turn=int(r["turn"]),
            started_at=started.isoformat() if started else None, score=round(score, 6),
            summary=t.get("summary") or "", snippet=snippet(t, highlight), matched=signals,
            status=r["status"], kinds=list(r["kinds"] or []), raw_ref=dict(r["raw_ref"] or {}),
            title=t.get("title"), source=r.get("source")))
    return hits


_SPLIT = re.compile(r"(?<=[.!?。！？])\s*|\n+")


def snippet(row: dict[str, Any], terms: set[str], width: int = SNIPPET) -> str:
    """The passage with the most query terms, cut to `width`, matches marked **like this**."""
    passages = []
    for field_name in ("user_text", "assistant_text"):
        text = (row.get(field_name) or "")[:20000]
        passages += [p.strip() for p in _SPLIT.split(text) if p and p.strip()]
    passages += [f"{c['name']}: {c['args_summary']} → {c['result_summary']}" for c in row.get("tool_calls") or []]
    if not passages:
        return ""
    lowered = {t.lower() for t in terms}

    def score(p: str) -> int:
        toks = set(tokens(p))
        return len(toks & lowered)

    best = max(passages, key=score)
    if len(best) > width:
        first = _first_match(best, lowered)
        start = max(0, min(first - width // 3, len(best) - width))
        best = ("…" if start else "") + best[start:start + width] + ("…" if start + width < len(best) else "")
    return _mark(best, lowered)


def _first_match(text: str, terms: set[str]) -> int:
    low = text.lower()
    hits = [low.find(t) for t in terms if t and low.find(t) >= 0]
    return min(hits) if hits else 0


def _mark(text: str, terms: set[str]) -> str:
    whole = sorted((t for t in terms if len(t) > 1), key=len, reverse=True)
    if not whole:
        return text
    pattern = re.compile("|".join(re.escape(t) for t in whole), re.IGNORECASE)
    return pattern.sub(lambda m: f"**{m.group(0)}**", text)


def search_workspaces(workspaces: list[Workspace], indexes: dict[str, WorkspaceIndex],
                      embedder: Embedder | None, query: str, limit: int, mode: str,
                      filters: Filters, fusion: str = "combsum") -> SearchResults:
    if mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if fusion not in FUSIONS:
        raise SearchError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
    if not query.strip():
        raise SearchError("the query is empty: give keywords, an identifier or a question")
    if limit < 1:
        raise SearchError("limit must be at least 1")
    all_hits: list[Hit] = []
    reasons: list[str] = []
    realized_modes: set[str] = set()
    for ws in workspaces:
        searcher = Searcher(indexes[ws.id], embedder)
        fused, used, reason, extra = searcher.rank(query, mode, filters, fusion=fusion)
        realized_modes.add(realized(mode, used, reason))
        if reason:
            reasons.append(reason if len(workspaces) == 1 else f"{ws.name}: {reason}")
        all_hits += build_hits(ws, searcher.index.meta, fused[:limit], extra["highlight"])
    all_hits.sort(key=lambda h: (-h.score, h.started_at or ""))
    realized_mode = realized_modes.pop() if len(realized_modes) == 1 else "mixed"
    return SearchResults(all_hits[:limit], realized_mode, "; ".join(reasons) or None)


__all__ = ["MODES", "Filters", "Hit", "SearchError", "SearchResults", "search_workspaces"]
