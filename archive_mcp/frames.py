"""`Frames`: the archive's workspaces and its Polars views (turns, sessions, tool calls, themes,
stats). The base of `Archive`; everything here only reads."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeAlias

import polars as pl

from archive_mcp.schema import REFINED, SESSIONS, THEME_SCHEMA, TOOL_CALLS, empty_refined
from archive_mcp.themes.store import ThemeStore
from archive_mcp.workspaces import PRIVATE_MARKER, Registry, Workspace, archive_home

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


PRIVATE_UMASK = 0o077


def private_tree(home: Path) -> None:
    """Folders 0700 and files 0600 under the archive home, once: an archive written before the
    umask was set (0755/0644) is made private the first time it is opened. A marker file records
    that it was done."""
    marker = home / PRIVATE_MARKER
    if not home.is_dir() or marker.exists():
        return
    for path in [home, *home.rglob("*")]:
        try:
            if path.is_symlink():
                continue
            path.chmod(0o700 if path.is_dir() else 0o600)
        except OSError:
            continue
    marker.touch(0o600)


class Frames:
    """Workspaces of one archive home, and the frames an analyst reads."""

    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        # Everything the archive writes is private (files 0600, folders 0700): the logs and what
        # is derived from them (the search cache's vocabulary included) hold secrets and paths.
        # The umask is the process's: an archive in a process makes that process's files private.
        os.umask(os.umask(PRIVATE_UMASK) | PRIVATE_UMASK)
        self.home = archive_home(home)
        self.registry = Registry(self.home)
        private_tree(self.home)

    # --- workspaces ------------------------------------------------------------------------
    def workspaces(self) -> list[Workspace]:
        return self.registry.all()

    def workspace(
        self, ref: str | None = None, cwd: str | None = None, roots: Iterable[str] = ()
    ) -> Workspace:
        """Resolve a workspace argument (path, id, id prefix or name), else the roots, else cwd."""
        return self.registry.resolve(ref, cwd=cwd, roots=roots)

    def link(self, path: str, into: str) -> Workspace:
        return self.registry.link(path, into)

    def _selected(self, workspace: WorkspaceArg) -> list[Workspace]:
        """None or "all" -> every workspace; a string -> one; a list -> those listed."""
        if workspace is None or workspace == "all":
            return self.workspaces()
        if isinstance(workspace, Workspace):
            return [workspace]
        if isinstance(workspace, str):
            return [self.workspace(workspace)]
        return [self.workspace(w) for w in workspace]

    def _ws(self, workspace: str | Workspace | None, cwd: str | None = None) -> Workspace:
        return workspace if isinstance(workspace, Workspace) else self.workspace(workspace, cwd=cwd)

    # --- frames ----------------------------------------------------------------------------
    def turns(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """Refined turns (one row per turn) across workspaces unless one is given."""
        files = [
            str(p)
            for ws in self._selected(workspace)
            for p in sorted(ws.refined_dir.glob("*.parquet"))
        ]
        if not files:
            return empty_refined().lazy()
        return pl.scan_parquet(files).select(list(REFINED))

    def sessions(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per session: title, span, turns, tokens, status counts."""
        return (
            self.turns(workspace)
            .group_by("workspace_id", "source", "session_id")
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

    def tool_calls(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per tool call: name, status, duration, files, with its turn."""
        return (
            self.turns(workspace)
            .select("workspace_id", "session_id", "agent", "turn", "started_at", "tool_calls")
            .with_columns(pl.int_ranges(pl.col("tool_calls").list.len()).alias("call"))
            .explode("tool_calls", "call")
            .drop_nulls("tool_calls")
            .unnest("tool_calls")
            .select(list(TOOL_CALLS))
        )

    def themes(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
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
            for ws in self._selected(workspace)
            for t in ThemeStore(ws).list()
            for m in t.members
        ]
        return pl.DataFrame(rows, schema=THEME_SCHEMA).lazy()

    def stats(self, workspace: WorkspaceArg = None) -> Stats:
        """How many workspaces, sessions, turns, raw bytes and embeddings; the span; turns per status."""
        selected = self._selected(workspace)
        df = (
            self.turns([w.id for w in selected])
            .select("session_id", "started_at", "status")
            .collect()
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
