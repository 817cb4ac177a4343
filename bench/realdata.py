"""Real labelled sets for bench/retrieval.py: LoCoMo (locomo-dev layout) and the coding queries.

The data is read at run time from paths given on the command line; nothing of it is copied
into the repository. Measures follow the set's README: per question, R@k is the share of its
evidence turns among the top k hits; MRR is 1 / rank of the first evidence turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from archive_mcp.search.lexical import Postings, analyse, bm25

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class LabelledQuery:
    qid: str
    workspace: str
    text: str
    category: str
    evidence: set[tuple[str, int]]


def locomo_queries(root: Path) -> list[LabelledQuery]:
    """Questions of categories 1-4 that have evidence turns."""
    out = []
    for line in (root / "qrels.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["category"] not in CATEGORIES or not q["evidence_turns"]:
            continue
        ev = {(s, int(t)) for s, t in (e.split("#") for e in q["evidence_turns"])}
        out.append(
            LabelledQuery(q["qid"], q["work_dir"], q["question"], CATEGORIES[q["category"]], ev)
        )
    return out


def coding_queries(archive: Any, labels: Path) -> tuple[list[LabelledQuery], int]:
    """The labelled developer questions over an archive holding the agents-dev corpus; each is
    searched in its `cwd`'s workspace. Returns the queries and how many references did not resolve."""
    from agents_dev import resolve_refs

    records = [
        json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    refs = [r for rec in records for r in rec["relevant"]]
    files = {r: rec.get("files") or [] for rec in records for r in rec["relevant"]}
    resolved = resolve_refs(archive, refs, files)
    out = []
    for rec in records:
        ev = {(resolved[r][1], resolved[r][3]) for r in rec["relevant"] if r in resolved}
        if ev:  # the workspace holding the evidence: the cwd's (Gemini logs carry no cwd)
            ws = next(resolved[r][0] for r in rec["relevant"] if r in resolved)
            out.append(LabelledQuery(rec["qid"], ws, rec["query"], rec["category"], ev))
    return out, len(set(refs) - set(resolved))


Ranker = Callable[[LabelledQuery], list[tuple[str, int]]]


def score(queries: list[LabelledQuery], ranker: Ranker) -> dict[str, dict[str, float]]:
    """R@5, R@10 and MRR per category and over all queries."""
    per: dict[str, list[tuple[float, float, float, float]]] = {}
    for q in queries:
        ranked = ranker(q)[:10]
        r5 = len(q.evidence & set(ranked[:5])) / len(q.evidence)
        r10 = len(q.evidence & set(ranked)) / len(q.evidence)
        first = next((i for i, key in enumerate(ranked) if key in q.evidence), None)
        mrr = 0.0 if first is None else 1 / (first + 1)
        hit5 = float(first is not None and first < 5)
        for key in ("all", q.category):
            per.setdefault(key, []).append((r5, r10, mrr, hit5))
    return {
        k: {
            "recall@5": float(np.mean([v[0] for v in vals])),
            "recall@10": float(np.mean([v[1] for v in vals])),
            "mrr": float(np.mean([v[2] for v in vals])),
            "hit@5": float(np.mean([v[3] for v in vals])),
            "n": len(vals),
        }
        for k, vals in per.items()
    }


def archive_ranker(archive: Any, **kwargs: Any) -> Ranker:
    def rank(q: LabelledQuery) -> list[tuple[str, int]]:
        return [
            (h.session_id, h.turn)
            for h in archive.search(q.text, workspace=q.workspace, limit=10, **kwargs)
        ]

    return rank


def word_share(archive: Any, ws: str) -> Callable[[str], float]:
    """The share of the workspace's turns holding a word (what the engine's semantic query reads)."""
    segments = archive.index(archive.workspace(ws)).refresh().segments
    n = max(1, sum(s.meta.height for s in segments))

    def share(word: str) -> float:
        terms = analyse(word)
        return sum(s.postings.df(terms[0]) for s in segments) / n if terms else 0.0

    return share


def cached_second_stage(
    archive: Any,
    workspaces: list[str],
    name: str = "minilm",
    weight: float = 1.0,
    cache: Path | None = None,
) -> Ranker:
    """The opt-in second stage (`search(..., rerank=name)`: `ranking.second_stage` over the
    model's top `SPECS[name].depth`) with every turn's (and, for MiniLM, sentence's) vector
    computed once for the whole set instead of once per query: the same scores, at a fraction of
    the time of a full run. `cache` (a .npz) keeps the vectors between runs."""
    from archive_mcp.search.ranking import Tuning, second_stage, semantic_query, split_sentences
    from archive_mcp.search.rerank import SPECS, reranker

    spec, model = SPECS[name], reranker(name)
    texts: list[str] = []
    shares: dict[str, Callable[[str], float]] = {}
    turn_text: dict[tuple[str, int], str] = {}
    for ws in workspaces:
        df = (
            archive.turns(archive.workspace(ws).id)
            .select("session_id", "turn", "user_text", "assistant_text")
            .collect()
        )
        for sid, turn, u, a in df.iter_rows():
            text = turn_text[(sid, int(turn))] = f"{u or ''}\n{a or ''}"
            texts += [text[:2000], *(split_sentences(text) if spec.sentences else [])]
        shares[ws] = word_share(archive, ws)
    unique = list(dict.fromkeys(texts))
    vectors: dict[str, np.ndarray] = {}
    if cache is not None and cache.exists():
        saved = np.load(cache, allow_pickle=False)
        vectors = dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))
    todo = [t for t in unique if t not in vectors]
    if todo:
        vectors.update(zip(todo, model.passages(todo), strict=True))
        if cache is not None:
            np.savez(cache, texts=np.array(list(vectors)), vectors=np.stack(list(vectors.values())))

    def embed(batch: list[str]) -> np.ndarray:
        return np.stack([vectors[t] for t in batch]) if batch else np.zeros((0, 384), np.float32)

    def rank(q: LabelledQuery) -> list[tuple[str, int]]:
        hits = archive.search(q.text, workspace=q.workspace, limit=max(spec.depth, 10))
        if not hits:
            return []
        keys = [(h.session_id, h.turn) for h in hits]
        head = keys[: spec.depth]
        qv = model.query(semantic_query(q.text, shares[q.workspace], Tuning().common_share))
        new = second_stage(
            np.array([h.score for h in hits[: spec.depth]], np.float32),
            qv,
            [turn_text[k] for k in head],
            embed,
            weight,
            spec.sentences,
        )
        return [head[i] for i in np.argsort(-new, kind="stable")] + keys[spec.depth :]

    return rank


_WORD = re.compile(r"[a-z0-9]+")


def tuned_bm25(archive: Any, workspaces: list[str], stem: bool = True, date: bool = True) -> Ranker:
    """The reference: BM25 over Snowball-stemmed words without English stopwords, the turn's
    date prepended to its text (request + answer). Built from the refined turns, independent
    of the engine. `stem=False, date=False` is plain BM25 over lowercase alphanumeric words."""
    import snowballstemmer

    from archive_mcp.search.lexical import ENGLISH_STOPWORDS

    stemmer = snowballstemmer.stemmer("english").stemWords

    def reference_terms(text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        return stemmer([w for w in words if w not in ENGLISH_STOPWORDS]) if stem else words

    built: dict[str, tuple[Postings, list[tuple[str, int]]]] = {}
    for ws in workspaces:
        df = (
            archive.turns(archive.workspace(ws).id)
            .select("session_id", "turn", "started_at", "user_text", "assistant_text")
            .collect()
        )
        docs, keys = [], []
        for r in df.iter_rows(named=True):
            day = r["started_at"].strftime("%-d %B %Y") if r["started_at"] and date else ""
            docs.append(
                reference_terms(f"{day}\n{r['user_text'] or ''}\n{r['assistant_text'] or ''}")
            )
            keys.append((r["session_id"], int(r["turn"])))
        built[ws] = (Postings.build(docs), keys)

    def rank(q: LabelledQuery) -> list[tuple[str, int]]:
        postings, keys = built[q.workspace]
        s = bm25(
            [postings],
            [(t, 1.0) for t in dict.fromkeys(reference_terms(q.text))],
            [np.ones(len(keys), bool)],
        )[0]
        top = np.argsort(-s, kind="stable")[:10]
        return [keys[i] for i in top if s[i] > 0]

    return rank


def table(rows: dict[str, dict[str, dict[str, float]]], kinds: list[str], hit: bool = False) -> str:
    what = "R@5 / R@10 / MRR" + (" / hit@5" if hit else "")
    lines = [
        "| run | " + " | ".join(f"{k} {what}" for k in kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]

    def cell(r: dict[str, float]) -> str:
        out = f"{r['recall@5']:.3f} / {r['recall@10']:.3f} / {r['mrr']:.3f}"
        return out + (f" / {r['hit@5']:.3f}" if hit else "")

    for name, res in rows.items():
        cells = [cell(res[k]) if k in res else "-" for k in kinds]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = [
    "CATEGORIES",
    "LabelledQuery",
    "archive_ranker",
    "cached_second_stage",
    "coding_queries",
    "locomo_queries",
    "score",
    "table",
    "tuned_bm25",
]
