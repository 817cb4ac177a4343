"""The frames an analyst reads, as functions of the workspaces given: the refined turns (Polars
LazyFrames, one row per turn), sessions, tool calls, theme members, and the archive's stats.
Everything here only reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

import polars as pl

from archive_mcp.schema import REFINED, SESSIONS, THEME_SCHEMA, TOOL_CALLS, empty_refined
from archive_mcp.themes.store import ThemeStore
from archive_mcp.workspaces import Workspace

WorkspaceArg: TypeAlias = str | Workspace | Sequence[str] | None
LIVE = timedelta(hours=2)  # a session with an open turn is live while written to this recently


def _live_since() -> datetime:
    return datetime.now(UTC) - LIVE


@dataclass
class Stats:
    workspaces: int
    sessions: int
    turns: int
    raw_bytes: int
    embedded: int
    oldest: str | None
    newest: str | None
    by_status: dict[str, int]


def turns(selected: Sequence[Workspace]) -> pl.LazyFrame:
    """Refined turns (one row per turn) across workspaces unless one is given."""
    files = [str(p) for ws in selected for p in sorted(ws.refined_dir.glob("*.parquet"))]
    if not files:
        return empty_refined().lazy()
    return pl.scan_parquet(files).select(list(REFINED))


def sessions(turns: pl.LazyFrame) -> pl.LazyFrame:
    """One row per session: title, span, turns, tokens, status counts."""
    return (
        turns.group_by("workspace_id", "source", "session_id")
        .agg(
            pl.col("title").drop_nulls().first(),
            pl.col("started_at").min().alias("first_at"),
            pl.col("ended_at").max().alias("last_at"),
            (pl.col("agent") == "main").sum().alias("turns"),
            (pl.col("agent") != "main").sum().alias("subagent_turns"),
            pl.col("usage").struct.field("input").sum().alias("input_tokens"),
            pl.col("usage").struct.field("output").sum().alias("output_tokens"),
            (
                (pl.col("status") == "open").any()
                & (pl.col("ended_at").max().dt.replace_time_zone("UTC") >= _live_since())
            ).alias("live"),
            pl.col("status").unique().sort().alias("statuses"),
        )
        .sort("first_at", descending=True, nulls_last=True)
        .select(list(SESSIONS))
    )


def tool_calls(turns: pl.LazyFrame) -> pl.LazyFrame:
    """One row per tool call: name, status, duration, files, with its turn."""
    return (
        turns.select("workspace_id", "session_id", "agent", "turn", "started_at", "tool_calls")
        .with_columns(pl.int_ranges(pl.col("tool_calls").list.len()).alias("call"))
        .explode("tool_calls", "call")
        .drop_nulls("tool_calls")
        .unnest("tool_calls")
        .select(list(TOOL_CALLS))
    )


def themes(selected: Sequence[Workspace]) -> pl.LazyFrame:
    """One row per theme member: theme, status, turn and provenance."""
    rows = [
        {
            "workspace_id": ws.id,
            "theme": t.name,
            "slug": t.slug,
            "status": t.status,
            "session_id": m.session_id,
            "agent": m.agent,
            "turn": m.turn,
            "provenance": m.provenance,
            "who": m.who,
            "tagged_at": m.when,
            "score": m.score,
        }
        for ws in selected
        for t in ThemeStore(ws).list()
        for m in t.members
    ]
    return pl.DataFrame(rows, schema=THEME_SCHEMA).lazy()


def stats(selected: Sequence[Workspace]) -> Stats:
    """How many workspaces, sessions, turns, raw bytes and embeddings; the span; turns per status."""
    df = (
        turns(selected).select("session_id", "started_at", "status").collect()
        if selected
        else empty_refined()
    )
    raw = sum(p.stat().st_size for ws in selected for p in ws.raw_dir.rglob("*") if p.is_file())
    embedded = sum(
        pl.scan_parquet(str(p)).select(pl.len()).collect().item()
        for ws in selected
        for p in ws.embeddings_dir.glob("*.parquet")
    )
    times = df["started_at"].drop_nulls()
    return Stats(
        workspaces=len(selected),
        sessions=df["session_id"].n_unique(),
        turns=df.height,
        raw_bytes=raw,
        embedded=embedded,
        oldest=times.min().isoformat() if len(times) else None,  # type: ignore[union-attr]
        newest=times.max().isoformat() if len(times) else None,  # type: ignore[union-attr]
        by_status=dict(df["status"].value_counts().iter_rows()) if df.height else {},
    )
