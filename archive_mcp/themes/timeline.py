"""`trace_theme`: a theme's members as a timeline, built in Polars.

Events in time order, buckets (day / week / session, auto by span), first and last seen, dormant
gaps, per-bucket distinctive keywords (vocabulary drift), decisions and the reversals that undo
them, files touched over time, and memories that cite the theme or its turns.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from archive_mcp.errors import InvalidArgument
from archive_mcp.refiners.text import tokens
from archive_mcp.themes.store import Theme, class_tfidf

REVERSAL_CUES = ("revert", "reverted", "reversed", "roll back", "rolled back", "go back", "goes back",
                 "switch back", "no longer", "instead", "back to", "undo", "回滚", "改回", "放弃", "撤销")


@dataclass
class TimelineEvent:
    session_id: str
    agent: str
    turn: int
    at: datetime | None
    summary: str
    kinds: list[str]
    bucket: str = ""
    provenance: str = ""
    content: dict[str, Any] | None = None


@dataclass
class Reversal:
    decision: dict[str, Any]  # the earlier decision (session_id, turn, at, summary)
    reversed_by: dict[str, Any]
    shared_terms: list[str]


@dataclass
class Timeline:
    theme: str
    workspace_id: str
    granularity: str
    events: list[TimelineEvent]
    frame: pl.DataFrame = field(repr=False)
    buckets: list[dict[str, Any]] = field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    dormant_gaps: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    reversals: list[Reversal] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "frame"}
        return d

    def markdown(self, max_chars: int = 12_000) -> str:
        """A narrative: span, decisions and reversals, then bucket by bucket."""
        lines = [f"# Theme: {self.theme}",
                 f"{len(self.events)} turns, {_d(self.first_seen)} → {_d(self.last_seen)} (by {self.granularity})"]
        if self.reversals:
            lines.append("\n## Reversals")
            for r in self.reversals:
                lines.append(f"- {_d(r.reversed_by['at'])} {r.reversed_by['session_id']}:{r.reversed_by['turn']} reversed "
                             f"the decision of {_d(r.decision['at'])} ({r.decision['session_id']}:{r.decision['turn']}): "
                             f"{r.reversed_by['summary'][:160]}")
        if self.dormant_gaps:
            lines.append("\n## Dormant")
            lines += [f"- {g['from'][:10]} → {g['to'][:10]} ({g['days']:.0f} days quiet)" for g in self.dormant_gaps]
        lines.append("\n## Timeline")
        for b in self.buckets:
            lines.append(f"\n### {b['bucket']} — {b['turns']} turns; words: {', '.join(b['keywords'])}")
            for e in self.events:
                if e.bucket == b["bucket"]:
                    mark = " **decision**" if "decision" in e.kinds else ""
                    mark += " **reversal**" if "reversal" in e.kinds else ""
                    lines.append(f"- {_d(e.at, True)} {e.session_id}:{e.turn}{mark} {e.summary}")
        if self.files:
            lines.append("\n## Files")
            lines += [f"- {f['file']}: {f['turns']} turns, {f['first'][:10]} → {f['last'][:10]}" for f in self.files[:15]]
        if self.memories:
            lines.append("\n## Linked memories\n" + "\n".join(f"- {m}" for m in self.memories))
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 60] + "\n[… cut; raise max_output_chars]"


def _d(x: Any, with_time: bool = False) -> str:
    if x is None:
        return "?"
    if isinstance(x, str):
        return x[:16] if with_time else x[:10]
    return x.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")


def choose_granularity(first: datetime | None, last: datetime | None, sessions: int) -> str:
    if first is None or last is None:
        return "session"
    span = last - first
    if span <= timedelta(days=2):
        return "session"
    return "day" if span <= timedelta(days=31) else "week"


def build_timeline(theme: Theme, workspace_id: str, turns: pl.LazyFrame, granularity: str = "auto",
                   memories: list[str] | None = None, include_turn_content: bool = False) -> Timeline:
    members = pl.DataFrame(
        {"session_id": [m.session_id for m in theme.members], "agent": [m.agent for m in theme.members],
         "turn": [m.turn for m in theme.members], "provenance": [m.provenance for m in theme.members]},
        schema={"session_id": pl.String, "agent": pl.String, "turn": pl.Int64, "provenance": pl.String})
    cols = ["session_id", "agent", "turn", "started_at", "summary", "kinds", "files", "keywords", "status"]
    if include_turn_content:
        cols += ["user_text", "assistant_text"]
    frame = (turns.select(cols)
             .join(members.lazy(), on=["session_id", "agent", "turn"], how="inner")
             .sort("started_at", "session_id", "turn", nulls_last=True)
             .collect())
    first = frame["started_at"].min() if frame.height else None
    last = frame["started_at"].max() if frame.height else None
    gran = choose_granularity(first, last, frame["session_id"].n_unique()) if granularity == "auto" else granularity
    if gran not in ("day", "week", "session"):
        raise InvalidArgument(f"granularity must be auto, day, week or session, not {granularity!r}")
    bucket = {"day": pl.col("started_at").dt.strftime("%Y-%m-%d"),
              "week": pl.col("started_at").dt.truncate("1w").dt.strftime("week of %Y-%m-%d"),
              "session": pl.col("session_id")}[gran]
    frame = frame.with_columns(bucket.alias("bucket"))
    order = frame.group_by("bucket", maintain_order=True).agg(pl.col("started_at").min().alias("t"), pl.len().alias("turns")).sort("t")
    # The refined keywords are already each turn's distinctive words: no re-tokenising here.
    words = class_tfidf({b: [[w.lower() for w in k] for k in g["keywords"]]
                         for (b,), g in frame.group_by("bucket")}, top=5)
    buckets = [{"bucket": b, "start": t.isoformat() if t else None, "turns": n, "keywords": words.get(b, [])}
               for b, t, n in order.iter_rows()]
    events = [TimelineEvent(r["session_id"], r["agent"], r["turn"], r["started_at"], r["summary"], list(r["kinds"]),
                            r["bucket"], r["provenance"],
                            {"user": r["user_text"], "assistant": r["assistant_text"]} if include_turn_content else None)
              for r in frame.iter_rows(named=True)]
    gaps = _dormant(frame)
    decisions, reversals = _decisions(frame)
    files = (frame.select("files", "started_at").explode("files").drop_nulls("files")
             .group_by("files").agg(pl.len().alias("turns"), pl.col("started_at").min().alias("first"),
                                    pl.col("started_at").max().alias("last"))
             .sort("turns", "first", descending=[True, False]))
    file_rows = [{"file": f, "turns": n, "first": a.isoformat() if a else "", "last": b.isoformat() if b else ""}
                 for f, n, a, b in files.iter_rows()]
    return Timeline(theme.name, workspace_id, gran, events, frame, buckets, first, last, gaps,
                    decisions, reversals, file_rows, memories or [])


def _dormant(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """Gaps between consecutive events longer than 3x the median gap and at least 3 days."""
    times = frame["started_at"].drop_nulls().sort()
    if len(times) < 3:
        return []
    diffs = times.diff().drop_nulls()
    median = diffs.median()
    limit = max(timedelta(days=3), 3 * median) if median is not None else timedelta(days=3)
    out = []
    for a, b in zip(times[:-1], times[1:], strict=True):
        if b - a > limit:
            out.append({"from": a.isoformat(), "to": b.isoformat(), "days": (b - a).total_seconds() / 86400})
    return out


def _decisions(frame: pl.DataFrame) -> tuple[list[dict[str, Any]], list[Reversal]]:
    """Decisions in order; a later decision that undoes an earlier one on shared terms is a reversal."""
    rows = [r for r in frame.iter_rows(named=True) if {"decision", "reversal"} & set(r["kinds"])]
    decisions = [{"session_id": r["session_id"], "turn": r["turn"], "at": r["started_at"].isoformat() if r["started_at"] else None,
                  "summary": r["summary"], "kinds": list(r["kinds"])} for r in rows]
    reversals: list[Reversal] = []
    for i, later in enumerate(rows):
        text = later["summary"].lower()
        if "reversal" not in later["kinds"] and not any(c in text for c in REVERSAL_CUES):
            continue
        later_terms = _terms(later)
        for earlier in reversed(rows[:i]):
            shared = sorted(_terms(earlier) & later_terms)
            if shared:
                reversals.append(Reversal(decisions[rows.index(earlier)], decisions[i], shared[:8]))
                break
    return decisions, reversals


def _terms(row: dict[str, Any]) -> set[str]:
    words = tokens(" ".join(row["keywords"]))
    return {t for t in words if len(t) > 3 or not t.isascii()} - {"decision", "edited"}
