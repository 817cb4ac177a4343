"""`Archive`: the Python API every CLI command and MCP tool calls.

The class is layered by noun: `Frames` (workspaces and the Polars views), `Corpus` (ingest,
refine, search, turns read back from raw logs), and here memory and themes on top."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.corpus import Corpus, RefineReport
from archive_mcp.errors import InvalidArgument
from archive_mcp.frames import Stats, WorkspaceArg
from archive_mcp.ingest import store
from archive_mcp.ingest.purge import PurgeReport, purge_session
from archive_mcp.memory.essence import (
    Bootstrap,
    ImportReport,
    MemoryStats,
    OrganizePrepare,
    OrganizeStored,
    bootstrap_workspace,
    export_memory,
    import_memory,
    organize_memories,
    sync_workspace_index,
)
from archive_mcp.memory.store import FOLDERS as MEMORY_FOLDERS
from archive_mcp.memory.store import MemoryEntry, MemoryStore, slugify
from archive_mcp.schema import REFINED, empty_refined
from archive_mcp.search.context import TurnRef
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.ranking import Tuning
from archive_mcp.themes import graph
from archive_mcp.themes.graph import DiskRows, sample_rows
from archive_mcp.themes.noise import noise_mask
from archive_mcp.themes.store import Discovery as ThemeDiscovery
from archive_mcp.themes.store import (
    Member,
    TagResult,
    Theme,
    ThemeError,
    ThemeStore,
    discover,
    slug_of,
)
from archive_mcp.themes.tagging import seed_candidates
from archive_mcp.themes.timeline import Timeline, build_timeline
from archive_mcp.workspaces import Workspace, locked
from archive_mcp.workspaces.clock import now

__all__ = ["Archive", "RefineReport", "Stats", "WorkspaceArg"]


SEED_TUNING = Tuning(
    neighbour=0.0, session=0.0, sentence_depth=0
)  # a theme takes the turns that match a seed themselves


class Archive(Corpus):
    """A multi-workspace archive of agent sessions under one home directory."""

    # --- memory ----------------------------------------------------------------------------
    def memory(
        self, workspace: str | Workspace | None = None, cwd: str | None = None
    ) -> MemoryStore:
        """The memory of one workspace: remember, recall, search, recall_recent, forget, list."""
        return MemoryStore(self._ws(workspace, cwd))

    def save_lesson(
        self,
        situation: str,
        mistake: str,
        correction: str,
        workspace: str | Workspace | None = None,
        key: str | None = None,
    ) -> MemoryEntry:
        """A correction that must not be repeated, stored under memory/lessons/."""
        content = (
            f"## Situation\n{situation}\n\n## Mistake\n{mistake}\n\n## Correction\n{correction}\n"
        )
        return self.memory(workspace).remember(
            key or slugify(situation), content, "lessons", tags=["lesson"], title=situation[:80]
        )

    def organize_memories(
        self,
        content: str | None = None,
        sources: list[str] | None = None,
        workspace: str | Workspace | None = None,
    ) -> OrganizePrepare | OrganizeStored:
        return organize_memories(self._ws(workspace), content, sources)

    def sync_workspace_index(
        self, remarks: dict[str, str] | None = None, workspace: str | Workspace | None = None
    ) -> dict[str, Any]:
        return sync_workspace_index(self._ws(workspace), remarks)

    def bootstrap_workspace(
        self, workspace: str | Workspace | None = None, recent: int = 8, budget: int = 12_000
    ) -> Bootstrap:
        """Essence, memory tree ([new] since the last bootstrap), recent turns, notes, themes."""
        ws = self._ws(workspace)
        rows = (
            self.turns(ws.id)
            .filter(pl.col("agent") == "main")
            .filter(pl.col("origin") == "user")  # requests: no slash command, output or summary
            .sort("started_at", descending=True, nulls_last=True)
            .head(recent)
            .select("session_id", "turn", "started_at", "summary")
            .collect()
            .to_dicts()
        )
        recent_rows = [
            {
                "session_id": r["session_id"],
                "turn": r["turn"],
                "at": r["started_at"].isoformat() if r["started_at"] else None,
                "summary": r["summary"],
            }
            for r in reversed(rows)
        ]
        return bootstrap_workspace(ws, recent_rows, self._theme_names(ws), budget)

    def _theme_names(self, ws: Workspace) -> list[str]:
        return sorted(t.name for t in ThemeStore(ws).list())

    def memory_stats(self, workspace: str | Workspace | None = None) -> MemoryStats:
        ws = self._ws(workspace)
        counts = {f: len(list((ws.root / "memory" / f).glob("*.md"))) for f in MEMORY_FOLDERS}
        st = self.stats(ws.id)
        essence = ws.root / "essence" / "essence.md"
        size = sum(p.stat().st_size for p in ws.root.rglob("*") if p.is_file())
        return MemoryStats(
            counts,
            size,
            st.turns,
            st.oldest,
            st.newest,
            len(self._theme_names(ws)),
            essence.stat().st_size if essence.exists() else 0,
        )

    def export_memory(
        self,
        include_turns: bool = False,
        filename: str | None = None,
        workspace: str | Workspace | None = None,
    ) -> Path:
        ws = self._ws(workspace)
        turns = None
        if include_turns:
            turns = (
                self.turns(ws.id)
                .select("session_id", "agent", "turn", "started_at", "summary", "kinds")
                .collect()
                .to_dicts()
            )
        return export_memory(ws, include_turns, filename, turns)

    def import_memory(
        self,
        path: str | os.PathLike[str],
        workspace: str | Workspace | None = None,
        allow_path: bool = False,
    ) -> ImportReport:
        """Import an export: a file name in the workspace's `exports/`, or the path export_memory
        returned (`exports/NAME`, relative to the workspace); any other path only with
        `allow_path` (the CLI user naming a file explicitly, never MCP)."""
        ws = self._ws(workspace)
        p = Path(path).expanduser()
        if not p.is_absolute() and len(p.parts) > 1:
            p = ws.root / p
        return import_memory(ws, p, allow_path)

    def purge_session(
        self, session_id: str, workspace: str | Workspace | None = None
    ) -> PurgeReport:
        """Delete a session's raw copies (which keep its secrets), refined rows, embeddings, state
        and theme memberships; a later ingest archives it afresh if its source still exists."""
        return purge_session(self._ws(workspace), session_id)

    # --- themes ----------------------------------------------------------------------------
    def themes_store(self, workspace: str | Workspace | None = None) -> ThemeStore:
        return ThemeStore(self._ws(workspace))

    def list_themes(self, workspace: str | Workspace | None = None) -> list[Theme]:
        return self.themes_store(workspace).list()

    def delete_theme(self, theme: str, workspace: str | Workspace | None = None) -> Theme:
        return self.themes_store(workspace).delete(theme)

    def tag_theme(
        self,
        theme: str,
        workspace: str | Workspace | None = None,
        references: Sequence[TurnRef | dict[str, Any] | str] | None = None,
        seeds: Sequence[str] | None = None,
        remove: Sequence[TurnRef | dict[str, Any] | str] | None = None,
        description: str | None = None,
        min_score: float = 0.5,
        who: str = "api",
    ) -> TagResult:
        """Attach confirmed turns, or search from 1-3 seeds and attach the topic's hits: `min_score`
        scales the shares of each seed's best hit that make the theme's core and the weaker hits
        that join it when close to that core (see `themes/tagging.py`); returns what was attached
        and the near misses to confirm."""
        ws = self._ws(workspace)
        store = ThemeStore(ws)
        existing = store.get(theme)  # by slug, name, or a discovered theme's label
        slug = existing.slug if existing is not None else slug_of(theme)
        if seeds is not None and not 1 <= len(seeds) <= 3:
            raise ThemeError("give 1 to 3 seeds (keywords or a question)")
        if not references and not seeds and not remove and store.get(theme) is None:
            raise InvalidArgument(
                f"no theme named {theme!r} yet, and nothing to put in it: give references "
                "(turns found by a search, as session:turn) or 1-3 seeds"
            )
        refs = [self.canonical_ref(ws, r) for r in references or []]
        drop = {
            (r.session_id, r.agent, r.turn)
            for r in (self.canonical_ref(ws, x) for x in remove or [])
        }
        refined = self._ensure_refined(ws, {r.session_id for r in refs})
        known = self._turn_keys(ws, {r.session_id for r in refs})
        for r in refs:
            if (r.session_id, r.agent, r.turn) not in known:
                valid = sorted(t for s, a, t in known if s == r.session_id and a == r.agent)
                hint = (
                    f"valid turns: {valid[0]}..{valid[-1]}"
                    if valid
                    else "unknown session; search for its turns"
                )
                raise ThemeError(
                    f"no turn {r.session_id}:{r.turn} (agent {r.agent}) in workspace {ws.name}; {hint}"
                )
        when = now()
        candidates: list[Member] = [
            Member(r.session_id, r.agent, r.turn, "reference", who, when, None) for r in refs
        ]
        near: list[dict[str, Any]] = []
        if seeds:

            def turns_of(sessions: set[str]) -> pl.DataFrame:
                return (
                    self.turns(ws.id)
                    .filter(pl.col("session_id").is_in(list(sessions)))
                    .select(
                        "session_id",
                        "agent",
                        "turn",
                        "user_text",
                        "assistant_text",
                        "kinds",
                        "tool_calls",
                    )
                    .collect()
                )

            found, near = seed_candidates(
                lambda q, n: self.search(q, workspace=ws.id, limit=n, tuning=SEED_TUNING),
                self.index(ws).refresh(),
                turns_of,
                seeds,
                min_score,
            )
            candidates += [Member(*c.key, c.provenance, who, when, c.score) for c in found]
        with locked(ws.root):
            current = store.get(theme) or Theme(theme, slug)
            if current.status == "suggested":  # confirming a suggestion makes it the user's theme
                current.status = "tagged"
            have = {m.key for m in current.members}
            attached = []
            for m in candidates:
                if m.key not in have and m.key not in drop:
                    current.members.append(m)
                    have.add(m.key)
                    attached.append(m)
            removed = [asdict(m) for m in current.members if m.key in drop]
            current.members = [m for m in current.members if m.key not in drop]
            current.seeds = list(dict.fromkeys([*current.seeds, *(seeds or [])]))
            if description is not None:
                current.description = description
            store.save(current)
        near = [n for n in near if (n["session_id"], n["agent"], n["turn"]) not in have]
        return TagResult(
            current.name, current.slug, attached, near, removed, len(current.members), refined
        )

    def _turn_keys(self, ws: Workspace, sessions: set[str]) -> set[tuple[str, str, int]]:
        if not sessions:
            return set()
        df = (
            self.turns(ws.id)
            .filter(pl.col("session_id").is_in(list(sessions)))
            .select("session_id", "agent", "turn")
            .collect()
        )
        return set(df.iter_rows())

    def _ensure_refined(self, ws: Workspace, sessions: set[str]) -> int:
        """Refine archived sessions that have no refined rows yet (on the way to tagging)."""
        missing = [
            s for s in sessions if store.read_refined(ws, s).height == 0 and s in self.raw_files(ws)
        ]
        for s in missing:
            self.refine(ws.id, session=s, embed=False)
        return len(missing)

    def discover_themes(
        self,
        workspace: str | Workspace | None = None,
        min_size: int = 3,
        threshold: float | None = None,
    ) -> ThemeDiscovery:
        """Cluster the workspace's main-agent turns into suggested themes (k is not chosen)."""
        ws, frame, vectors = self.discovery_input(workspace)
        return discover(ws, frame, vectors, min_size, threshold, self._model_name())

    def discovery_input(
        self, workspace: str | Workspace | None = None
    ) -> tuple[Workspace, pl.DataFrame, np.ndarray | DiskRows | None]:
        """What `discover_themes` clusters: the main agent's turns that are not noise, with their
        keywords, files and texts cut to 600 characters, and their index vectors (None when any
        has none: discovery then uses TF-IDF of the texts). The refined files are read
        `READ_FILES` at a time. Past `graph.SAMPLE` main-agent turns (with vectors for all), the
        vectors stay on disk (`DiskRows`), a bool column `sampled` marks the whole sessions
        `sample_rows` picks, and only their rows carry keywords, files and the user's text."""
        ws = self._ws(workspace)
        idx = self.index(ws).refresh()
        meta = (
            idx.meta.select("session_id", "agent", "turn")
            .with_row_index("row")
            .filter(pl.Series(idx.alive))
            .filter(pl.col("agent") == "main")
        )
        on_disk = meta.height > graph.SAMPLE and _vectors(idx, meta["row"].to_numpy()) is not None
        wanted = (
            set(meta.filter(pl.Series(sample_rows(meta["session_id"])))["session_id"].to_list())
            if on_disk
            else None
        )
        files = sorted(ws.refined_dir.glob("*.parquet")) if ws.refined_dir.is_dir() else []
        parts = [
            _discovery_rows(files[i : i + READ_FILES], wanted)
            for i in range(0, len(files), READ_FILES)
        ]
        noise, rows = (
            pl.concat(p) for p in zip(*parts or [_discovery_rows([], wanted)], strict=True)
        )
        if wanted is None:
            frame = meta.join(rows, on=_KEYS, how="inner").sort("row")
        else:  # the keys of every turn are the index's, the rest only the sample's: joins whose
            # hash side is small (1M rows joined on three strings held 270 MB more at 1M turns)
            gone = meta.join(noise, on=_KEYS, how="inner")["row"].to_numpy()
            frame = meta.filter(~pl.Series(np.isin(meta["row"].to_numpy(), gone)))
            extra = meta.join(rows, on=_KEYS, how="inner").drop(_KEYS)
            frame = frame.join(extra, on="row", how="left").with_columns(
                sampled=pl.col("row").is_in(extra["row"].implode())
            )
            frame = frame if frame["row"].is_sorted() else frame.sort("row")
        vectors = _vectors(idx, frame["row"].to_numpy())
        if vectors is not None and wanted is None:
            return (
                ws,
                frame.drop("row"),
                vectors.take(np.arange(frame.height)),
            )  # in memory, as always
        return ws, frame.drop("row"), vectors

    def trace_theme(
        self,
        theme: str,
        workspace: WorkspaceArg = None,
        granularity: str = "auto",
        include_turn_content: bool = False,
    ) -> Timeline:
        """The theme as a timeline (Polars frame, events, buckets, reversals, files, memories).
        Several workspaces only when listed explicitly (the theme is read from each)."""
        if isinstance(workspace, list | tuple):
            targets = self._selected(workspace)
        else:
            targets = [self._ws(workspace)]  # type: ignore[arg-type]
        members: list[Member] = []
        found: Theme | None = None
        for ws in targets:
            t = ThemeStore(ws).get(theme)
            if t is not None:
                found = found or t
                members += t.members
        if found is None:
            ThemeStore(targets[0]).require(theme)
        assert found is not None
        merged = Theme(
            found.name, found.slug, found.description, found.seeds, found.status, members
        )
        refs = {f"{m.session_id}:{m.turn}" for m in members}
        linked = []
        for ws in targets:
            for e in MemoryStore(ws).list():
                if (
                    found.name in e.sources
                    or found.slug in e.sources
                    or refs & set(e.sources)
                    or found.name in e.tags
                ):
                    linked.append(e.ref)
        # Read only the member sessions' files: cost follows the theme, not the workspace.
        # Each file read whole (`read_refined`): a refine replacing one meanwhile cannot mix versions.
        parts = [
            df.select(list(REFINED))
            for ws in targets
            for sid in {m.session_id for m in members}
            if (df := store.read_refined(ws, sid)).height
        ]
        frame = pl.concat(parts, how="vertical_relaxed").lazy() if parts else empty_refined().lazy()
        return build_timeline(
            merged,
            ",".join(w.id for w in targets),
            frame,
            granularity,
            linked,
            include_turn_content,
            [p for ws in targets for p in ws.paths],
        )


READ_FILES = 256  # refined session files read at once by discovery
_KEYS = ["session_id", "agent", "turn"]


def _discovery_rows(
    files: list[Path], sessions: set[str] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The keys of the noise among the main agent's turns in these refined files (the noise rules
    read the whole texts), and the other turns' keywords, files and texts cut to 600 characters
    (of `sessions` only, and only the user's text, when they are given)."""
    cols = [*_KEYS, "user_text", "assistant_text", "keywords", "files", "kinds", "tool_calls"]
    frame = (
        pl.scan_parquet([str(f) for f in files])
        .select(cols)
        .filter(pl.col("agent") == "main")
        .collect()
        if files
        else empty_refined().select(cols)
    )
    noise = pl.Series(noise_mask(frame), dtype=pl.Boolean)
    kept = frame.filter(~noise)
    if sessions is not None:
        kept = kept.filter(
            pl.col("session_id").is_in(list(sessions & set(kept["session_id"].unique().to_list())))
        )
    texts = ["user_text"] if sessions is not None else ["user_text", "assistant_text"]
    return (
        frame.filter(noise).select(_KEYS),
        kept.select(*_KEYS, "keywords", "files", *(pl.col(c).str.slice(0, 600) for c in texts)),
    )


def _vectors(idx: WorkspaceIndex, rows: np.ndarray) -> DiskRows | None:
    """The index vectors of these (increasing) rows, None when one has none."""
    if not idx.has_vectors():
        return None
    at, parts = (
        0,
        list[tuple[np.ndarray, np.ndarray]](),
    )  # (a segment's vectors, its rows among these)
    for s in idx.segments:
        end = at + s.has_vector.shape[0]
        mine = rows[(rows >= at) & (rows < end)] - at
        if s.vectors is None and len(mine) or not s.has_vector[mine].all():
            return None
        if s.vectors is not None and len(mine):
            parts.append((s.vectors, mine))
        at = end
    return DiskRows(parts) if parts else None
