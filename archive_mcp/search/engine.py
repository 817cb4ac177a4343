"""Hybrid retrieval: BM25 + fuzzy (rapidfuzz term expansion) + semantic cosine, fused by the sum
of each signal's z-scores (`zsum`, the default; reciprocal-rank fusion stays available for
comparison)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.errors import InvalidArgument, NotFound
from archive_mcp.refiners import READERS, SOURCES
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable
from archive_mcp.search.confidence import Evidence, evidence, term_weights
from archive_mcp.search.highlight import highlight_terms
from archive_mcp.search.hits import Hit, SearchResults, build_hits
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.lexical import QueryTerms, analyse, bm25
from archive_mcp.search.ranking import (
    DEPTH,
    FUSIONS,
    Neighbours,
    Tuning,
    best_of_sentences,
    fuse,
    fuse_at,
    latin_share,
    noise_weights,
    rrf,
    second_stage,
    semantic_query,
    top,
    with_context,
    with_context_at,
)
from archive_mcp.search.rerank import SPECS, RerankerUnavailable, reranker
from archive_mcp.search.sentences import Tokens, best_of_ids
from archive_mcp.search.span import Span, spanned
from archive_mcp.workspaces import Workspace

MODES = ("hybrid", "lexical", "fuzzy", "semantic")


class SearchError(InvalidArgument, ValueError):
    """A search argument the caller can fix; the message says how."""


class UnknownFilter(SearchError, NotFound):
    """A filter names a session, kind, tool or agent that no searched workspace holds."""


def _filter(text: str) -> Any:
    """A filter field: None (no filter) unless given; `text` is its help on every face."""
    return field(default=None, metadata={"help": text})


@dataclass(kw_only=True)
class Filters:
    """Which turns a search keeps: the one filter contract every face (Python, CLI, MCP) passes
    whole. Each field's `help` is the text the CLI and the MCP tool show for it."""

    session: str | None = _filter("A session id or a prefix of one.")
    agent: str | None = _filter('"main" or a subagent id.')
    since: datetime | None = _filter("Started at or after this time.")
    until: datetime | None = _filter("Started at or before this time.")
    tool: str | None = _filter("A tool the turn called, e.g. Shell (any case).")
    file: str | None = _filter("Part of a path the turn touched.")
    theme: str | None = _filter("Only turns tagged with this theme.")
    kind: str | None = _filter("decision, fix, question, change, plan, reversal, test, ...")
    source: str | None = _filter(
        "One agent product: " + ", ".join(READERS) + "."  # the registered readers
    )
    # a theme's member keys in a workspace (None: no such theme); the Archive sets it from the
    # theme store above, no face does
    theme_members: Callable[[Workspace, str], set[tuple[str, str, int]] | None] | None = field(
        default=None, repr=False, compare=False
    )

    def validate(self, indexes: list[WorkspaceIndex]) -> None:
        """Refuse filters that cannot match anything, saying what exists instead."""
        if self.since and self.until and _utc(self.since) > _utc(self.until):
            raise SearchError(
                f"since ({self.since.isoformat()}) is after until ({self.until.isoformat()}): "
                "no turn can match; swap them"
            )
        if not (self.session or self.kind or self.tool or self.agent):
            return  # nothing below to check: no copy of the live rows (21 ms a query at 50k)
        metas = [ix.meta.filter(pl.Series(ix.alive)) for ix in indexes if ix.meta.height]
        where = ", ".join(ix.ws.name for ix in indexes)
        if self.session:
            sessions = _values(metas, pl.col("session_id"))
            if not any(v.startswith(self.session) for v in sessions):
                raise UnknownFilter(
                    f"no session starting with {self.session!r} in {where}; "
                    f"sessions there: {_listing(sessions)} (list the sessions to see them all)"
                )
        for name, expr, wanted in (
            ("kind", pl.col("kinds").explode(), self.kind),
            (
                "tool",
                pl.col("tools").explode().str.to_lowercase(),
                self.tool.lower() if self.tool else None,
            ),
            ("agent", pl.col("agent"), self.agent),
        ):
            if wanted:
                present = _values(metas, expr)
                if wanted not in present:
                    raise UnknownFilter(
                        f"no turn in {where} has {name} {wanted!r}; "
                        f"{name}s there: {_listing(present)}"
                    )

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
            conds.append(
                pl.col("tools")
                .list.eval(pl.element().str.to_lowercase())
                .list.contains(self.tool.lower())
            )
        if self.file:
            conds.append(
                pl.col("files")
                .list.eval(pl.element().str.contains(self.file, literal=True))
                .list.any()
            )
        if self.kind:
            conds.append(pl.col("kinds").list.contains(self.kind))
        if self.source:
            conds.append(pl.col("source") == self.source)
        out = None
        if conds and meta.height:
            out = meta.select(pl.all_horizontal(conds).fill_null(False)).to_series().to_numpy()
        if self.theme:
            members = self.theme_members(ws, self.theme) if self.theme_members else None
            if members is None:
                raise SearchError(
                    f"no theme named {self.theme!r} in workspace {ws.name}; list the themes to see them"
                )
            keys = meta.select("session_id", "agent", "turn").rows()
            in_theme = np.fromiter(
                ((k[0], k[1], int(k[2])) in members for k in keys), bool, len(keys)
            )
            out = in_theme if out is None else out & in_theme
        return out


def _values(metas: list[pl.DataFrame], expr: pl.Expr) -> list[str]:
    """Distinct values of `expr` over the frames, most frequent first."""
    counts: dict[str, int] = {}
    for m in metas:
        for v in m.select(expr.alias("v")).to_series().drop_nulls().to_list():
            counts[v] = counts.get(v, 0) + 1
    return sorted(counts, key=lambda v: (-counts[v], v))


def _listing(values: list[str], n: int = 12) -> str:
    if not values:
        return "none"
    more = f" and {len(values) - n} more" if len(values) > n else ""
    return ", ".join(values[:n]) + more


def _utc(d: datetime) -> datetime:
    return d if d.tzinfo else d.replace(tzinfo=UTC)


Ranked = list[tuple[int, float, list[str]]]


class Searcher:
    """Runs one query over one workspace's index."""

    def __init__(
        self, index: WorkspaceIndex, embedder: Embedder | None, tuning: Tuning | None = None
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.tuning = tuning or Tuning()
        self._own = np.zeros(
            0, np.float32
        )  # the last fused score before the neighbour/session lift
        self._background: tuple[dict[str, float], np.ndarray | None, np.ndarray] | None = None
        # each signal's fused part, by its scores array (`fuse`): the sentence re-score fuses
        # again with only the semantic scores changed
        self._parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def rank(
        self, query: str, mode: str, filters: Filters, depth: int = DEPTH, fusion: str | None = None
    ) -> tuple[Ranked, set[str], str | None, dict[str, Any]]:
        tuning = self.tuning
        self._parts = {}
        idx = self.index.refresh()
        ok = idx.alive.copy()
        mask = filters.mask(idx.ws, idx.meta)
        if mask is not None:
            ok &= mask
        analysed = QueryTerms.of(query)  # the query's only analysis on its way
        q_terms = analysed.terms
        if not tuning.query_stopwords:
            q_terms = analysed.content or q_terms
        parts = [s.postings for s in idx.segments]
        alive_parts = np.split(idx.alive, [idx.segments[0].meta.height])
        together = analysed.together() if tuning.paths_whole else {}
        scores: dict[str, np.ndarray] = {}
        reason = None
        fuzzy_terms: list[tuple[str, float]] = []
        q_vec: np.ndarray | None = None
        if mode in ("hybrid", "lexical"):
            scores["lexical"] = np.concatenate(
                bm25(parts, [(t, 1.0) for t in q_terms], alive_parts, together)
            )
        if mode in ("hybrid", "fuzzy"):
            fuzzy_terms = self._fuzzy_terms(q_terms, parts, together)
            if "lexical" in scores and fuzzy_terms == [(t, 1.0) for t in q_terms]:
                # no term a few edits away: the fuzzy signal is the lexical one (the same
                # array: `fuse` normalises it once)
                scores["fuzzy"] = scores["lexical"]
            else:
                scores["fuzzy"] = np.concatenate(bm25(parts, fuzzy_terms, alive_parts, together))
        if mode in ("hybrid", "semantic"):
            reason, q_vec = self._semantic(query, scores)
            if reason and mode == "semantic":  # fall back to what still works
                scores["lexical"] = np.concatenate(
                    bm25(parts, [(t, 1.0) for t in q_terms], alive_parts, together)
                )
        # The packaged model is English-only: its cosine says little about a Chinese query.
        hybrid = mode == "hybrid"
        weights = (
            {"semantic": latin_share(query) * tuning.semantic_weight, "fuzzy": tuning.fuzzy_weight}
            if hybrid
            else {}
        )
        fusion = fusion or tuning.fusion
        if fusion not in FUSIONS:
            raise SearchError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
        total = self._fused(scores, ok, weights, fusion, depth, hybrid)
        order = top(total, ok, depth)
        if q_vec is not None and tuning.sentence_depth and order and mode == "hybrid":
            order = self._by_sentence(q_vec, order, scores, ok, weights, fusion, depth, total)
        if tuning.rerank and order and mode == "hybrid":
            order = self._rerank(query, order, total)
        content = analysed.content or q_terms
        self._background = (
            term_weights(content, parts, max(1, int(idx.alive.sum()))),
            scores.get("semantic"),
            ok,
        )
        fused = [
            (d, float(total[d]), [n for n, v in scores.items() if _counts(n, v[d])]) for d in order
        ]
        return fused, set(scores), reason, {"highlight": highlight_terms(analysed, fuzzy_terms)}

    def evidence(self, docs: list[int]) -> list[Evidence]:
        """Each doc's evidence for the last query ranked (`rank` first)."""
        assert self._background is not None
        weights, semantic, ok = self._background
        segments = self.index.segments
        bounds = [0]
        for seg in segments:
            bounds.append(bounds[-1] + seg.meta.height)
        return evidence(docs, weights, [s.postings for s in segments], bounds, semantic, ok)

    def _fused(
        self,
        scores: dict[str, np.ndarray],
        ok: np.ndarray,
        weights: dict[str, float],
        fusion: str,
        depth: int,
        hybrid: bool,
    ) -> np.ndarray:
        total = self._own = fuse(scores, ok, weights, fusion, depth, self._parts)
        if hybrid:
            t = self.tuning
            total = with_context(total, self._neighbours(), t.neighbour, t.session, t.context)
            if not ok.all():  # else no pass (3 ms at 1M turns)
                total = np.where(ok, total, 0.0)
        return total * self._noise()

    def _neighbours(self) -> Neighbours:
        return self._of_meta("_neighbours", Neighbours.of)

    def _noise(self) -> np.ndarray:
        return self._of_meta("_noise", noise_weights)

    def _of_meta(self, name: str, make: Callable[[pl.DataFrame], Any]) -> Any:
        """`make(meta)`, kept on the index until its meta is swapped (built once per index)."""
        idx = self.index
        cached = getattr(idx, name, None)
        if cached is None or cached[0] is not idx.meta:
            cached = (idx.meta, make(idx.meta))
            setattr(idx, name, cached)
        return cached[1]

    def _by_sentence(
        self,
        q_vec: np.ndarray,
        order: list[int],
        scores: dict[str, np.ndarray],
        ok: np.ndarray,
        weights: dict[str, float],
        fusion: str,
        depth: int,
        total: np.ndarray,
    ) -> list[int]:
        """Re-score the top candidates with mean(whole-text, best-sentence) cosine."""
        assert self.embedder is not None
        head = order[: self.tuning.sentence_depth]
        ids = self.index.sentence_ids(head, self.embedder)
        if ids is not None and isinstance(self.embedder, Tokens):  # stored: no tokenizer, no text
            best = best_of_ids(q_vec, ids, self.embedder)
        else:
            split = [t.sentences for t in self.index.texts(head)]
            best = best_of_sentences(q_vec, split, self.embedder.embed)
        sem = scores["semantic"].copy()
        cand = np.asarray(head)
        if any(s.projection for s in self.index.segments):  # most cosines were estimated
            has = sem[cand] > -1.0
            sem[cand] = np.where(has, self.index.exact_cosine(q_vec, head), sem[cand])
        sem[cand] = np.where(best > -1.0, (sem[cand] + best) / 2, sem[cand])
        again = self._fused_at(cand, {**scores, "semantic": sem}, ok, weights, fusion, depth)
        total[cand] = again
        by_doc = dict(zip(head, again.tolist(), strict=True))
        return sorted(head, key=lambda d: -by_doc[d]) + order[len(head) :]

    def _fused_at(
        self,
        docs: np.ndarray,
        scores: dict[str, np.ndarray],
        ok: np.ndarray,
        weights: dict[str, float],
        fusion: str,
        depth: int,
    ) -> np.ndarray:
        """`_fused(scores, ok, weights, fusion, depth, True)[docs]`, equal to the bit. The
        z-scored fusion is computed for the docs' sessions alone (what their neighbour and
        session shares read), not for every turn: at 1M turns the second pass over every row
        cost about 30 ms a query."""
        if fusion != "zsum":
            return self._fused(scores, ok, weights, fusion, depth, True)[docs]
        nb = self._neighbours()
        rows = nb.sessions_of(docs)
        own = fuse_at(rows, scores, ok, weights, self._parts)
        t = self.tuning
        lifted = with_context_at(docs, rows, own, nb, t.neighbour, t.session, t.context)
        return np.where(ok[docs], lifted, 0.0) * self._noise()[docs]

    def _rerank(self, query: str, order: list[int], total: np.ndarray) -> list[int]:
        """Second stage: a larger model re-scores the top candidates (opt-in, costs a model)."""
        name = self.tuning.rerank or ""
        spec = SPECS[name]
        if not spec.multilingual and latin_share(query) <= 0.5:  # MiniLM reads English only
            return order
        head = order[: self.tuning.rerank_depth or spec.depth]
        texts = self.index.texts(head)
        try:
            model = reranker(name)
            q = model.query(
                semantic_query(
                    query, self._doc_share, self.tuning.common_share, self.tuning.paths_whole
                )
            )
            new = second_stage(
                total[head],
                q,
                [t.head for t in texts],
                model.passages,
                self.tuning.rerank_weight,
                spec.sentences,
                [t.sentences for t in texts],
            )
        except RerankerUnavailable as exc:
            raise SearchError(str(exc)) from exc
        top_first = float(total[head[0]])
        for d, v in zip(head, new, strict=True):  # keep scores comparable across workspaces
            total[d] = top_first * float(v) / 2
        return sorted(head, key=lambda d: -float(total[d])) + order[len(head) :]

    def _fuzzy_terms(
        self, q_terms: list[str], parts: list[Any], pieces: Collection[str] = ()
    ) -> list[tuple[str, float]]:
        """The query's terms (weight 1) plus vocabulary terms a few edits away (weight sim²);
        a path's `pieces` are not expanded (`locales` is no typo of `locale` there: the path
        whole is expanded instead)."""
        out: dict[str, float] = {t: 1.0 for t in q_terms}
        if not self.tuning.fuzzy_known:  # a term the workspace has is no typo
            q_terms = [t for t in q_terms if not any(p.df(t) for p in parts)]
        for tok in [t for t in q_terms if t not in pieces][:8]:
            for part in parts:
                for term, score in part.similar_terms(tok):
                    out[term] = max(out.get(term, 0.0), (score / 100.0) ** 2)
        return sorted(out.items(), key=lambda kv: -kv[1])[:32]

    def _doc_share(self, word: str) -> float:
        idx = self.index
        n = max(1, int(idx.alive.sum()))
        terms = analyse(word)  # the word itself first (an identifier whole), then its parts
        return sum(s.postings.df(terms[0]) for s in idx.segments) / n if terms else 0.0

    def _semantic(
        self, query: str, scores: dict[str, np.ndarray]
    ) -> tuple[str | None, np.ndarray | None]:
        if self.embedder is None:
            return "no embedding model is configured", None
        if not self.index.has_vectors():
            return (
                "no turn in this workspace has an embedding yet: run `archive-mcp refine` "
                "(or ingest without --no-embed)"
            ), None
        try:
            q = self.embedder.embed(
                [
                    semantic_query(
                        query, self._doc_share, self.tuning.common_share, self.tuning.paths_whole
                    )
                ]
            )[0]
        except EmbedderUnavailable as exc:
            return str(exc), None
        sims, has = self.index.cosine(q)
        scores["semantic"] = np.where(has, sims, -1.0)
        return None, q


def _counts(name: str, value: float) -> bool:
    return bool(value > (-1.0 if name == "semantic" else 0.0))


def meta_rows(meta: pl.DataFrame, docs: list[int]) -> pl.DataFrame:
    """The rows of these docs, in this order: one slice each. (A gather of a frame read from
    many row groups took 35-260 ms for 10 rows at 1M turns, 13 chunks; making it one chunk at
    load costs a copy of the frame, +210 MB of peak RSS at 1M.)"""
    return pl.concat([meta.slice(d, 1) for d in docs]) if docs else meta.clear()


def spanned_heads(
    ranked: list[tuple[Workspace, Searcher, Ranked, dict[str, Any]]], limit: int, span: Span
) -> list[Ranked]:
    """Each workspace's candidates that `spanned` keeps over all of them, best first. Only the
    candidates' start times are read here (one value each): hits are built for the kept ones."""
    pool: list[tuple[float, int, int, datetime | None]] = []  # score, workspace, position, time
    for k, (_, searcher, head, _) in enumerate(ranked):
        times = start_times(searcher.index.meta, [d for d, _, _ in head])
        pool += [
            (score, k, j, at) for j, ((_, score, _), at) in enumerate(zip(head, times, strict=True))
        ]
    pool.sort(key=lambda c: (-c[0], c[1], c[2]))
    kept = sorted(
        (pool[i][1], pool[i][2])
        for i in spanned([c[0] for c in pool], [c[3] for c in pool], limit, span)
    )
    return [[head[j] for k2, j in kept if k2 == k] for k, (_, _, head, _) in enumerate(ranked)]


def start_times(meta: pl.DataFrame, docs: list[int]) -> list[datetime | None]:
    column = meta.get_column("started_at")
    return [column[d] for d in docs]


def realized(mode: str, used: set[str], reason: str | None) -> str:
    if mode == "semantic" and reason:
        return "lexical"
    if mode == "hybrid" and "semantic" not in used:
        return "lexical+fuzzy"
    return mode


def search_workspaces(
    workspaces: list[Workspace],
    indexes: dict[str, WorkspaceIndex],
    embedder: Embedder | None,
    *,
    query: str,
    limit: int,
    mode: str,
    filters: Filters,
    fusion: str | None = None,
    tuning: Tuning | None = None,
    span: Span | None = None,
) -> SearchResults:
    """The best `limit` hits over `workspaces`; with `span` (a time-ordered search), the earliest
    and the latest strong candidates below them replace the weakest (`span.spanned`)."""
    if mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if fusion is not None and fusion not in FUSIONS:
        raise SearchError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
    if not query.strip():
        raise SearchError("the query is empty: give keywords, an identifier or a question")
    if limit < 1:
        raise SearchError("limit must be at least 1")
    if tuning is not None and tuning.rerank is not None and tuning.rerank not in SPECS:
        raise SearchError(
            f"rerank must be one of {', '.join(SPECS)} or None, not {tuning.rerank!r}"
        )
    filters.validate([indexes[ws.id].refresh() for ws in workspaces])
    all_hits: list[Hit] = []
    reasons: list[str] = []
    realized_modes: set[str] = set()
    ranked: list[tuple[Workspace, Searcher, Ranked, dict[str, Any]]] = []
    for ws in workspaces:
        searcher = Searcher(indexes[ws.id], embedder, tuning)
        fused, used, reason, extra = searcher.rank(query, mode, filters, fusion=fusion)
        realized_modes.add(realized(mode, used, reason))
        for why in (reason, searcher.index.behind):
            if why:
                reasons.append(why if len(workspaces) == 1 else f"{ws.name}: {why}")
        ranked.append((ws, searcher, fused[: limit * (span.depth if span else 1)], extra))
    heads = spanned_heads(ranked, limit, span) if span else [f for _, _, f, _ in ranked]
    for (ws, searcher, _, extra), head in zip(ranked, heads, strict=True):
        docs = [d for d, _, _ in head]
        evidences = searcher.evidence(docs) if head else None
        all_hits += build_hits(
            ws,
            meta_rows(searcher.index.meta, docs),  # the head's rows, numbered as they come
            [(i, score, signals) for i, (_, score, signals) in enumerate(head)],
            extra["highlight"],
            evidences,
            searcher.index.texts(docs),
        )
    all_hits.sort(key=lambda h: (-h.score, h.started_at or ""))
    realized_mode = realized_modes.pop() if len(realized_modes) == 1 else "mixed"
    return SearchResults(all_hits[:limit], realized_mode, "; ".join(reasons) or None, query)


def run_search(
    query: str,
    workspaces: Callable[[], list[Workspace]],
    *,
    embedder: Callable[[], Embedder | None],
    index: Callable[[Workspace], WorkspaceIndex],
    lock: AbstractContextManager[Any],
    limit: int,
    mode: str,
    filters: Filters,
    fusion: str | None = None,
    tuning: Tuning | None = None,
    rerank: str | None = None,
    span: Span | None = None,
) -> SearchResults:
    """A search as the Archive runs it: the source checked, then the workspaces resolved, the
    embedder loaded for the modes that use one (None when it cannot be), every index loaded
    under `lock` (one index refresh or search at a time), then `search_workspaces`."""
    if filters.source is not None and filters.source not in SOURCES:
        raise SearchError(f"unknown source {filters.source!r}: use one of {', '.join(SOURCES)}")
    targets = workspaces()
    vectors = embedder() if mode in ("hybrid", "semantic") else None
    if rerank is not None:
        tuning = replace(tuning or Tuning(), rerank=rerank)
    with lock:
        indexes = {ws.id: index(ws) for ws in targets}
        return search_workspaces(
            targets,
            indexes,
            vectors,
            query=query,
            limit=limit,
            mode=mode,
            filters=filters,
            fusion=fusion,
            tuning=tuning,
            span=span,
        )


# Each filter every face exposes, with its help (the CLI option's and the MCP parameter's).
FILTER_HELP = {f.name: str(f.metadata["help"]) for f in fields(Filters) if "help" in f.metadata}

__all__ = [
    "FILTER_HELP",
    "MODES",
    "Filters",
    "rrf",
    "Hit",
    "SearchError",
    "SearchResults",
    "search_workspaces",
]
