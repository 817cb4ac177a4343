"""The frames an analyst reads, as functions of the workspaces given: the refined turns (Polars
LazyFrames, one row per turn), sessions, tool calls, theme members, and the archive's stats.
Everything here only reads."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeAlias

import polars as pl
from polars.io.plugins import register_io_source

from archive_mcp.schema import REFINED, SESSIONS, THEME_SCHEMA, TOOL_CALLS, empty_refined
from archive_mcp.themes.store import ThemeStore
from archive_mcp.workspaces import Workspace

WorkspaceArg: TypeAlias = str | Workspace | Sequence[str] | None
RETRIES = 5  # reads of the whole set before falling back to one file at a time
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
    """Refined turns (one row per turn) across workspaces unless one is given.

    Lazy, and safe against writers in other processes: the files are listed when the frame is
    collected, and a session purged or re-refined while it is read is read again from the new
    set (gone, or its new file), never half old and half new (`_read_refined`)."""
    dirs = [ws.refined_dir for ws in selected]

    def source(
        columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None, _batch: int | None
    ) -> Iterator[pl.DataFrame]:
        df = _read_refined(dirs, columns or list(REFINED), predicate)
        yield df if n_rows is None else df.head(n_rows)

    return register_io_source(source, schema=REFINED, explain_name="refined turns")


def _refined_files(dirs: Sequence[Path]) -> list[str]:
    return [str(p) for d in dirs for p in sorted(d.glob("*.parquet"))]


def _read_refined(
    dirs: Sequence[Path], columns: list[str], predicate: pl.Expr | None
) -> pl.DataFrame:
    """Every refined file's rows (the columns asked, filtered). Files are replaced whole
    (`os.replace`) or removed by a purge; one that changes between listing and reading fails the
    read, which is then tried again on a fresh listing. After `RETRIES` such races in a row, each
    file is read on its own, whole, and a file that has gone is left out."""
    for _ in range(RETRIES):
        files = _refined_files(dirs)
        if not files:
            return empty_refined().select(columns)
        try:
            lf = pl.scan_parquet(files).select(list(REFINED)).select(columns)
            return (lf if predicate is None else lf.filter(predicate)).collect()
        except (FileNotFoundError, pl.exceptions.ComputeError):
            continue
    parts = []
    for path in _refined_files(dirs):
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            continue
        part = pl.read_parquet(data).select(list(REFINED)).select(columns)
        parts.append(part if predicate is None else part.filter(predicate))
    return pl.concat(parts) if parts else empty_refined().select(columns)


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
            "probability": m.probability,
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
    raw = sum(tree_size(ws.raw_dir) for ws in selected)
    embedded = sum(_rows(p) for ws in selected for p in ws.embeddings_dir.glob("*.parquet"))
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


def tree_size(root: Path) -> int:
    """Bytes of the regular files under `root`; a folder or file a purge removes meanwhile counts
    as gone (`os.walk` skips what it cannot list)."""
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                st = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def _rows(path: Path) -> int:
    """Rows of one parquet file from its footer; 0 if a purge removed it since it was listed (a
    file replaced mid-read is read again)."""
    for _ in range(RETRIES):
        try:
            return int(pl.scan_parquet(path).select(pl.len()).collect().item())
        except FileNotFoundError:
            return 0
        except pl.exceptions.ComputeError:
            continue
    return 0
