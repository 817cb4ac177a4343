"""`trace_theme`: a theme's members as a timeline, built in Polars.

Events in time order, buckets (day / week / session, auto by span), first and last seen, dormant
gaps, per-bucket distinctive keywords (vocabulary drift), decisions and the changes that undo
them (paired by meaning, chained into threads), where the theme stands now, files touched over
time, and memories that cite the theme or its turns. `story.py` renders it within a budget.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial
from typing import Any

import polars as pl

from archive_mcp.errors import InvalidArgument
from archive_mcp.themes.labels import class_tfidf_of
from archive_mcp.themes.store import Theme
from archive_mcp.themes.trace import story
from archive_mcp.themes.trace.decisions import UNDONE, Flag, claim, pair_changes
from archive_mcp.themes.trace.model import (
    Alternative,
    Bucket,
    Decision,
    DecisionBrief,
    DormantGap,
    Reversal,
    TimelineData,
    TimelineEvent,
    TouchedFile,
)
from archive_mcp.themes.trace.output import Told, TraceOutput
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules
from archive_mcp.themes.trace.standing import line, standing
from archive_mcp.themes.trace.turn_memo import TURNS


class Timeline(TimelineData):
    """A theme's timeline (`TimelineData`) with the story told from it, in budget."""

    def markdown(self, max_chars: int = 12_000, keep: TraceOutput | None = None) -> str:
        """The story first (where it stands, decision threads), then the first and the newest
        events, in budget; with `keep` (from `budgeted`), the very items it holds."""
        return story.markdown(self, max_chars, keep)

    def budgeted(self, max_chars: int = 12_000) -> TraceOutput:
        """The structured form within `max_chars` of JSON: decisions and the newest events first."""
        return story.budgeted(self, max_chars)

    def told(self, max_chars: int = 12_000) -> Told:
        """The trace told once within `max_chars`: its structure and the text of the same items."""
        return story.told(self, max_chars)


# The refined columns a timeline reads (sessions.py reads only these of each member session's file).
COLUMNS = [
    "session_id",
    "agent",
    "turn",
    "started_at",
    "summary",
    "kinds",
    "files",
    "keywords",
    "status",
    "user_text",
    "assistant_text",
    "source",
]


def choose_granularity(first: datetime | None, last: datetime | None, sessions: int) -> str:
    if first is None or last is None:
        return "session"
    span = last - first
    if span <= timedelta(days=2):
        return "session"
    return "day" if span <= timedelta(days=31) else "week"


def build_timeline(
    theme: Theme,
    workspace_id: str,
    turns: pl.LazyFrame,
    granularity: str = "auto",
    memories: list[str] | None = None,
    include_turn_content: bool = False,
    roots: list[str] | None = None,
    rules: TraceRules = TRACE_RULES,
) -> Timeline:
    """The theme's timeline; `roots` are the workspace's project paths (files are shown relative to
    them); `rules` pair the changes, say which may claim one and where the theme stands."""
    members = pl.DataFrame(
        {
            "session_id": [m.session_id for m in theme.members],
            "agent": [m.agent for m in theme.members],
            "turn": [m.turn for m in theme.members],
            "provenance": [m.provenance for m in theme.members],
            "probability": [m.probability for m in theme.members],
        },
        schema={
            "session_id": pl.String,
            "agent": pl.String,
            "turn": pl.Int64,
            "provenance": pl.String,
            "probability": pl.Float64,
        },
    )
    frame = (
        turns.select(COLUMNS)
        .join(members.lazy(), on=["session_id", "agent", "turn"], how="inner")
        .sort("started_at", "session_id", "turn", nulls_last=True)
        .collect()
    )
    first = frame["started_at"].min() if frame.height else None
    last = frame["started_at"].max() if frame.height else None
    gran = (
        choose_granularity(first, last, frame["session_id"].n_unique())
        if granularity == "auto"
        else granularity
    )
    if gran not in ("day", "week", "session"):
        raise InvalidArgument(
            f"granularity must be auto, day, week or session, not {granularity!r}"
        )
    bucket = {
        "day": pl.col("started_at").dt.strftime("%Y-%m-%d"),
        "week": pl.col("started_at").dt.truncate("1w").dt.strftime("week of %Y-%m-%d"),
        "session": pl.col("session_id"),
    }[gran]
    frame = frame.with_columns(bucket.alias("bucket"))
    order = (
        frame.group_by("bucket", maintain_order=True)
        .agg(pl.col("started_at").min().alias("t"), pl.len().alias("turns"))
        .sort("t")
    )
    # The refined keywords are already each turn's distinctive words: no re-tokenising here.
    words = class_tfidf_of(frame, "bucket", "keywords", top=5)
    buckets = [
        Bucket(b, t.isoformat() if t else None, n, words.get(b, []))
        for b, t, n in order.iter_rows()
    ]
    # the rows as dicts, for the story; the answers (the longest texts) only when they are shown
    every = list(
        (frame if include_turn_content else frame.drop("assistant_text")).iter_rows(named=True)
    )
    events = [
        TimelineEvent(
            r["session_id"],
            r["agent"],
            r["turn"],
            r["started_at"],
            r["summary"],
            list(r["kinds"]),
            r["bucket"],
            r["provenance"],
            {"user": r["user_text"], "assistant": r["assistant_text"]}
            if include_turn_content
            else None,
            r["source"],
        )
        for r in every
    ]
    gaps = _dormant(frame)
    decisions, reversals, threads = _decisions(frame, every, rules)
    now = standing(every, frame["assistant_text"].str.slice(0, 400).to_list(), rules)
    flagged = {(d.session_id, d.turn): d.flag for d in decisions}
    for e in events:
        e.flag = flagged.get((e.session_id, e.turn), "")
    file_rows = _files(frame, roots or [])
    frame = frame if include_turn_content else frame.drop("user_text", "assistant_text")
    return Timeline(
        theme.name,
        workspace_id,
        gran,
        events,
        frame,
        buckets,
        first,
        last,
        gaps,
        decisions,
        reversals,
        file_rows,
        memories or [],
        threads,
        line(now),
        now,
        claims_changes=rules.claim_changes,
    )


def _files(frame: pl.DataFrame, roots: list[str]) -> list[TouchedFile]:
    """Files the theme's turns touched, most turns first. A path under the workspace's project path
    is shown relative to it, and a bare name ("useAutopilotData.ts", as a tool call may give it)
    joins the one path it is the last part of, so one file is one row, counted once per turn."""
    rows = (
        frame.select("session_id", "turn", "files", "started_at")
        .explode("files")
        .drop_nulls("files")
    )
    if not rows.height:
        return []
    path = pl.col("files")
    shown = path
    for head in sorted(
        {r.rstrip("/\\") for r in roots if r.rstrip("/\\")}, key=len
    ):  # the longest root wins
        under = path.str.starts_with(head + "/") | path.str.starts_with(head + "\\")
        shown = pl.when(under).then(path.str.slice(len(head) + 1)).otherwise(shown)
    rows = rows.with_columns(shown.alias("file"))
    named = (
        rows.select("file")
        .unique()
        .filter(pl.col("file").str.contains(r"[/\\]"))
        .with_columns(pl.col("file").str.extract(r"([^/\\]+)$").alias("name"))
        .filter(pl.col("name").is_unique())
        .rename({"file": "full"})
    )
    rows = rows.join(named, left_on="file", right_on="name", how="left").with_columns(
        pl.coalesce("full", "file").alias("file")
    )
    files = (
        rows.unique(["session_id", "turn", "file"])
        .group_by("file")
        .agg(
            pl.len().alias("turns"),
            pl.col("started_at").min().alias("first"),
            pl.col("started_at").max().alias("last"),
        )
        .sort(["turns", "first", "file"], descending=[True, False, False])
    )
    return [
        TouchedFile(f, n, a.isoformat() if a else "", b.isoformat() if b else "")
        for f, n, a, b in files.iter_rows()
    ]


def _dormant(frame: pl.DataFrame) -> list[DormantGap]:
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
            out.append(DormantGap(a.isoformat(), b.isoformat(), (b - a).total_seconds() / 86400))
    return out


def _decisions(
    frame: pl.DataFrame, every: list[dict[str, Any]], rules: TraceRules
) -> tuple[list[Decision], list[Reversal], list[list[DecisionBrief]]]:
    """Flag the turns that set or change a course and, when `rules.claim_changes`, pair each change
    with the decision it undoes and chain the pairs into threads (decision -> change -> change ...).
    `every`: the frame's rows."""
    keys = TURNS.keys(frame)  # flags and gists are kept per turn for the next trace (turn_memo)
    flags = TURNS.flags(frame, keys)

    def described(k: int, f: Flag) -> Decision:
        return _decision(every[k], f, TURNS.gist(keys[k], every[k], f.by))

    decisions = {i: described(i, f) for i, f in enumerate(flags) if f is not None}
    paired: list[tuple[int, int, list[str], float, list[Alternative]]] = []
    parent: dict[int, int] = {}
    named: dict[int, Alternative] = {}  # the courses named as alternatives, each described once

    def alternative(k: int) -> Alternative:
        if k not in named:
            d = decisions.get(k) or described(k, UNDONE)  # described as it would be once undone
            named[k] = Alternative(d.ref, d.at, d.gist)
        return named[k]

    claims = partial(claim, rules=rules)
    pairs = pair_changes(every, flags, claims=claims, rules=rules) if rules.claim_changes else []
    for i, j, sim, shared, others in pairs:
        if (
            j not in decisions
        ):  # the undone course was set in a turn without a cue: it is a decision too
            decisions[j] = described(j, UNDONE)
        change = decisions[i]
        change.undoes = decisions[j].ref
        change.confidence = round(sim, 2)
        alternatives = [alternative(k) for k in others]
        change.alternatives = [a.ref for a in alternatives]
        if change.flag == "decision":
            change.flag = "change"
        parent[i] = j
        paired.append((i, j, shared, sim, alternatives))
    # A change of course is claimed only with its evidence, the earlier course it alters: a
    # correction or redirect that changes no course of the theme stays a flagged decision (with
    # `rules.claim_changes` off, every flagged turn: a decision candidate, no was/now link).
    for d in decisions.values():
        if d.flag != "decision" and d.undoes is None:
            d.flag = "decision"
    # from the final decisions: a later pair may still turn an undone course into a change
    briefs: dict[int, DecisionBrief] = {}  # each decision described once, shared where it is named

    def brief(k: int) -> DecisionBrief:
        if k not in briefs:
            briefs[k] = _brief(decisions[k])
        return briefs[k]

    reversals = [
        Reversal(brief(j), brief(i), shared, sim, alternatives)
        for i, j, shared, sim, alternatives in paired
    ]
    # Threads: follow each change back to the decision that started it; newest step last.
    chains: dict[int, list[int]] = {}
    for i in sorted(parent):
        root = i
        while root in parent:
            root = parent[root]
        chains.setdefault(root, [root]).append(i)
    threads = [[brief(k) for k in chain] for _, chain in sorted(chains.items())]
    return [decisions[i] for i in sorted(decisions)], reversals, threads


def _brief(d: Decision) -> DecisionBrief:
    return DecisionBrief(
        d.session_id, d.turn, d.ref, d.at, d.flag, d.by, d.gist, d.summary, d.alternatives
    )


def _decision(r: dict[str, Any], f: Flag, gist: str) -> Decision:
    """A flagged turn as the trace lists it (`undoes` and `alternatives` are filled by the pairing);
    `gist`: `decisions.gist(r, f.by)`."""
    return Decision(
        r["session_id"],
        r["agent"],
        r["source"],
        r["turn"],
        f"{r['session_id']}:{r['turn']}",
        r["started_at"].isoformat() if r["started_at"] else None,
        f.kind,
        f.by,
        f.cue,
        gist,
        r["summary"],
        list(r["kinds"]),
    )
