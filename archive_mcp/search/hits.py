"""Search hits: what one found turn carries, and the list of them with how it was answered."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl

from archive_mcp.refiners.answers import PICKED
from archive_mcp.refiners.summary import PROPOSED
from archive_mcp.refiners.text import clip
from archive_mcp.search.confidence import Evidence, verdict
from archive_mcp.search.highlight import (
    DECISION,
    answer_words,
    asked_words,
    mark,
    snippet,
    split_answers,
)
from archive_mcp.search.texts import TurnText
from archive_mcp.workspaces import Workspace


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
    source: str | None = (
        None  # the agent that wrote the session: kimi, kimi-code, claude-code, codex, gemini
    )
    confidence: str = "weak"  # "strong" or "weak" (search/confidence.py)
    evidence: dict[str, Any] | None = None  # cover, lift and the query words the turn holds
    asked: str = ""  # the user's own words (the sentences holding the query's terms when long)
    answer: str = ""  # the assistant's passage that best answers the query
    decisions: list[str] = field(default_factory=list)  # the user's answers given as tool results
    marks: list[str] = field(default_factory=list)  # "rejected by the user", "recap" (`marks`)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SearchResults(list[Hit]):
    """The hits, best first, plus how the query was actually answered."""

    def __init__(
        self, hits: list[Hit], realized_mode: str, fallback_reason: str | None, query: str = ""
    ) -> None:
        super().__init__(hits)
        self.realized_mode = realized_mode
        self.fallback_reason = fallback_reason
        self.query = query
        self.note = verdict(echo(query), hits)  # "no strong match for ...; closest: ..." or None

    def headline(self, shown: int | None = None, quoted: bool = True) -> str:
        """ "3 hits for 'query' (mode hybrid)": the query echo capped (left out unless `quoted`:
        one query's asker knows it), hits cut for size counted."""
        shown = len(self) if shown is None else shown
        count = f"{len(self)} hits" if shown >= len(self) else f"{len(self)} hits ({shown} shown)"
        head = f"{count}{f' for {echo(self.query)}' if quoted else ''} (mode {self.realized_mode}"
        return head + (f"; fell back: {self.fallback_reason})" if self.fallback_reason else ")")

    def to_json(self) -> dict[str, Any]:
        return {
            "hits": [h.to_json() for h in self],
            "realized_mode": self.realized_mode,
            "fallback_reason": self.fallback_reason,
            "strong": any(h.confidence == "strong" for h in self),
            "note": self.note,
        }


ECHO = 120


def echo(query: str, cap: int = ECHO) -> str:
    """The query quoted for a reply, cut to `cap` characters (a pasted log must not eat the budget)."""
    flat = " ".join(query.split())
    if len(flat) <= cap:
        return repr(flat)
    return repr(flat[:cap]) + f"… ({len(query):,} chars)"


def marks(summary: str, kinds: list[str]) -> list[str]:
    """What a turn is beyond its kinds: a proposal the user rejected (its summary says so), a
    compaction recap (the `compaction` kind, as the ranking's noise weights and the pages read
    it)."""
    out = []
    if PROPOSED in summary:
        out.append("rejected by the user")
    if "compaction" in kinds:
        out.append("recap")
    return out


def build_hits(
    ws: Workspace,
    meta: pl.DataFrame,
    fused: list[tuple[int, float, list[str]]],
    highlight: set[str],
    evidences: list[Evidence] | None,
    texts: list[TurnText],
) -> list[Hit]:
    """Hits for fused docs, with their texts as the index keeps them (`texts`, one per doc)."""
    if not fused:
        return []
    rows = meta[[d for d, _, _ in fused]]
    hits = []
    for i, ((_doc, score, signals), r, t) in enumerate(
        zip(fused, rows.iter_rows(named=True), texts, strict=True)
    ):
        ev = evidences[i] if evidences else None
        if ev is not None and not ev.terms:  # only stopwords or feedback terms matched
            signals = [n for n in signals if n != "lexical"]
        started = r["started_at"]
        own, decisions = split_answers(t.user_text)
        picks = [d for d in decisions if d.startswith(PICKED)]  # beside the bare "3"
        own, decisions = " ".join([own, *picks]), [d for d in decisions if d not in picks]
        hits.append(
            Hit(
                workspace_id=ws.id,
                session_id=r["session_id"],
                agent=r["agent"],
                turn=int(r["turn"]),
                started_at=started.isoformat() if started else None,
                score=round(score, 6),
                summary=t.summary,
                snippet=snippet(t, highlight),
                matched=signals,
                status=r["status"],
                kinds=list(r["kinds"] or []),
                raw_ref=dict(r["raw_ref"] or {}),
                title=t.title,
                source=r.get("source"),
                confidence=ev.confidence if ev else "weak",
                evidence=({"cover": ev.cover, "lift": ev.lift, "terms": ev.terms} if ev else None),
                asked=asked_words(own, highlight),
                answer=answer_words(t, highlight),
                decisions=[mark(clip(d, DECISION), highlight) for d in decisions],
                marks=marks(t.summary, list(r["kinds"] or [])),
            )
        )
    return hits
