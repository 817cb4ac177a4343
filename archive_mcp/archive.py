"""`Archive`: the Python API every CLI command and MCP tool calls.

A facade: each method resolves its workspaces and hands the call to the room of its noun —
`frames` (the Polars views), `ingest` (archive and refine), `search` (find turns, read them back),
`memory`, `themes` (store, tagging, discovery, trace). It holds no logic of its own."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl

from archive_mcp import frames
from archive_mcp.frames import Stats, WorkspaceArg
from archive_mcp.ingest import store
from archive_mcp.ingest.batch import RefineReport, run_ingest, run_refine
from archive_mcp.ingest.merge import MergeReport, merge_workspaces
from archive_mcp.ingest.pipeline import IngestReport, Progress
from archive_mcp.ingest.purge import PurgeReport, purge_session
from archive_mcp.ingest.purged import PurgedSession, PurgedSessions
from archive_mcp.memory import essence
from archive_mcp.memory.essence import (
    Bootstrap,
    ImportReport,
    MemoryStats,
    OrganizePrepare,
    OrganizeStored,
)
from archive_mcp.memory.links import canonical_sources
from archive_mcp.memory.store import MemoryEntry, MemoryStore
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable, make_embedder
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.refs import RefLike, TurnRef
from archive_mcp.search.context import canonical_ref, load_references
from archive_mcp.search.engine import Filters, SearchResults, run_search
from archive_mcp.search.grep import WHERE, GrepResult, grep_turns
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.ranking import Tuning
from archive_mcp.search.span import Span
from archive_mcp.search.turn_detail import TurnContext
from archive_mcp.themes.discover.discovery import (
    DiscoveryResult,
    discover_workspace,
    discovery_input,
)
from archive_mcp.themes.discover.graph import DiskRows
from archive_mcp.themes.discover.rules import DISCOVERY_RULES, DiscoveryRules
from archive_mcp.themes.store import TagResult, Theme, ThemeStore, member_keys
from archive_mcp.themes.tag import tagging
from archive_mcp.themes.tag.rules import TAG_RULES, TagRules
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules
from archive_mcp.themes.trace.sessions import trace_theme
from archive_mcp.themes.trace.timeline import Timeline
from archive_mcp.workspaces import Registry, Workspace, archive_home, private_tree, private_umask

__all__ = ["Archive", "RefineReport", "Stats", "WorkspaceArg"]


class Archive:
    """A multi-workspace archive of agent sessions under one home directory.

    Every method's `workspace` reads the same way: a path, id, unique id prefix or name; a
    `Workspace`; a list of them, or `"all"` where a method spans several; None (the default) is
    the current directory's workspace, never every workspace."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        embedder: Embedder | str | None = "static",
        summarizer: Summarizer | None = None,
    ) -> None:
        # Everything the archive writes is private (files 0600, folders 0700): the logs and what
        # is derived from them (the search cache's vocabulary included) hold secrets and paths.
        # The umask is the process's: an archive in a process makes that process's files private.
        private_umask()
        self.home = archive_home(home)
        self.registry = Registry(self.home)
        private_tree(self.home)
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not isinstance(embedder, str | None) else None
        self.summarizer = summarizer
        self._indexes: dict[str, WorkspaceIndex] = {}
        # The MCP server runs tools on worker threads: one index refresh or search at a time.
        self._index_lock = threading.RLock()
        self.last_report: IngestReport | None = None

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

    def _selected(self, workspace: WorkspaceArg, cwd: str | None = None) -> list[Workspace]:
        """`workspace` as every method reads it: None -> the current directory's (`cwd`, default
        the process's); "all" -> every workspace; a string or Workspace -> that one; a list ->
        those listed."""
        if workspace is None:
            return [self.workspace(cwd=cwd)]
        if workspace == "all":
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
        """Refined turns (one row per turn) of the workspace(s); `"all"` for every workspace."""
        return frames.turns(self._selected(workspace))

    def sessions(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per session: title, span, turns, tokens, status counts."""
        return frames.sessions(self.turns(workspace))

    def tool_calls(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per tool call: name, status, duration, files, with its turn."""
        return frames.tool_calls(self.turns(workspace))

    def themes(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per theme member: theme, status, turn and provenance."""
        return frames.themes(self._selected(workspace))

    def stats(self, workspace: WorkspaceArg = None) -> Stats:
        """How many workspaces, sessions, turns, raw bytes and embeddings; the span; turns per status."""
        return frames.stats(self._selected(workspace))

    # --- embedder (lazy: nothing heavy is imported until a vector is needed) ---------------
    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is None and isinstance(self._embedder_spec, str):
            self._embedder = make_embedder(self._embedder_spec)
        return self._embedder

    def _model_name(self) -> str | None:
        if isinstance(self._embedder_spec, str):
            from archive_mcp.refiners.embed import EMBEDDERS

            return str(cast(Any, EMBEDDERS[self._embedder_spec]).name)
        return str(self._embedder_spec.name) if self._embedder_spec is not None else None

    def _embedder_if_any(self) -> Embedder | None:
        """The embedder, None when it cannot be loaded (search falls back to lexical+fuzzy)."""
        try:
            return self.embedder
        except EmbedderUnavailable:
            return None

    # --- ingest and refine -----------------------------------------------------------------
    def ingest(
        self,
        *paths: str | os.PathLike[str],
        embed: bool = True,
        progress: Progress | None = None,
        workers: int | None = None,
        engine: str = "local",
        address: str | None = None,
        exclude: Sequence[str] | None = None,
        include_purged: bool = False,
    ) -> IngestReport:
        """Archive and refine sessions under `paths` (default: every agent's home that exists:
        Kimi CLI, Kimi Code, Claude Code, Codex CLI, Gemini CLI, Qwen Code, OpenCode;
        `report.roots` says which). Sessions whose work dir is under an `exclude` path or glob
        (default: the `exclude` setting) are skipped and counted (`report.excluded`); so are
        sessions purged before (`report.purged`) unless `include_purged` re-admits them.

        Raw logs are copied here; parse, refine and embed run on `engine`: "local" (large
        batches in `workers` processes, default up to 4 cores) or "ray" (the cluster at
        `address`, default: a local Ray instance or $RAY_ADDRESS).
        """
        return run_ingest(
            self.registry,
            paths,
            embedder=lambda: self.embedder if embed else None,
            summarizer=self.summarizer,
            embedder_spec=self._embedder_spec,
            progress=progress,
            workers=workers,
            engine=engine,
            address=address,
            exclude=exclude,
            include_purged=include_purged,
        )

    def refine(
        self,
        workspace: WorkspaceArg = None,
        *,
        session: str | None = None,
        since: datetime | None = None,
        force: bool = False,
        embed: bool = True,
        progress: Progress | None = None,
        engine: str = "local",
        address: str | None = None,
        workers: int | None = None,
    ) -> RefineReport:
        """Batch-refine archived sessions from their raw logs, on `engine` ("local" or "ray").

        A session is refined again when it has no refined file, an older refiner wrote it, or
        `force`; turns are embedded when their content changed since the last embedding. A
        summary the client's model wrote (refiner `…+sampling@1`) is kept while its turn's content
        is unchanged. `rows_changed` counts rows whose summary, kinds, keywords or files changed.
        A full or read-only disk stops it with `DiskFull`; what was refined before stays.
        """
        return run_refine(
            self._selected(workspace),
            session=session,
            since=since,
            force=force,
            embedder=(lambda: self.embedder) if embed else None,
            summarizer=self.summarizer,
            embedder_spec=self._embedder_spec,
            progress=progress,
            engine=engine,
            address=address,
            workers=workers,
        )

    def raw_files(self, ws: Workspace) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Archived raw logs per session: session id -> [(archive-relative path, ingest state)]."""
        return store.raw_files(ws)

    def set_summaries(
        self, ws: Workspace, session_id: str, summaries: dict[tuple[str, int], str], *, refiner: str
    ) -> int:
        """Replace the summaries of some turns (e.g. written by the client's model)."""
        return store.set_summaries(ws, session_id, summaries, refiner)

    # --- search and read -------------------------------------------------------------------
    def index(self, ws: Workspace) -> WorkspaceIndex:
        """The (lazily loaded, automatically refreshed) search index of one workspace."""
        with self._index_lock:
            if ws.id not in self._indexes:
                self._indexes[ws.id] = WorkspaceIndex(ws, self._model_name())
            return self._indexes[ws.id]

    def search(
        self,
        query: str,
        workspace: WorkspaceArg = None,
        *,
        filters: Filters | None = None,
        limit: int = 10,
        mode: str = "hybrid",
        rerank: str | None = None,
        cwd: str | None = None,
        fusion: str | None = None,
        tuning: Tuning | None = None,
        span: Span | None = None,
    ) -> SearchResults:
        """Hybrid search over one workspace (default: the current directory's), or several
        listed, or "all", keeping the turns `filters` keeps (`Filters(session=…, since=…,
        source=…)`; every face passes the same one).

        Returns the hits best first; `.realized_mode` and `.fallback_reason` say which signals
        answered (e.g. `lexical+fuzzy` when no embedding model is available). `fusion` (`zsum`,
        the default, or `rrf`) and `tuning` (the ranking knobs) are for measuring.
        `rerank="minilm"` (opt-in) re-scores the top 30 with the full MiniLM, `rerank="e5"` the
        top 20 with multilingual-e5-small (the `e5` extra): better on conversational questions,
        but each embeds its candidates at query time (MiniLM loads torch once; e5 about 2 s of
        CPU a query on chat turns, more on long coding turns). See bench/RESULTS.md.
        `span` (`search.span.SPAN`, what a time-ordered search passes) puts the earliest and the
        latest strong candidates below the top `limit` in place of the weakest of them.
        """
        return run_search(
            query,
            lambda: self._selected(workspace, cwd),
            embedder=self._embedder_if_any,
            index=self.index,
            lock=self._index_lock,
            limit=limit,
            mode=mode,
            filters=replace(filters or Filters(), theme_members=member_keys),
            fusion=fusion,
            tuning=tuning,
            rerank=rerank,
            span=span,
        )

    def load_turn_context(
        self,
        references: Sequence[RefLike],
        workspace: str | Workspace | None = None,
        *,
        before: int = 0,
        after: int = 0,
        include_tools: bool = True,
        include_thinking: bool = False,
        max_chars: int = 6000,
        cwd: str | None = None,
        anywhere: bool = False,
        full_tools: bool = False,
        matching: Sequence[str] = (),
    ) -> TurnContext:
        """Turns read from the archived raw log by byte range, their text within `max_chars`:
        the user's and the assistant's words first, each tool call as a one-line digest (whole
        with `full_tools`); with `matching`, only the passages holding one of those words.

        A reference is `session:turn` (a unique session-id prefix will do), `session:first-last`
        (a range), `{session_id, turn, agent?, last?}` or a TurnRef. With `anywhere`, a session
        not in the workspace (or when there is no workspace) is looked up in every workspace and
        read where it is unique. Unknown references are reported beside the turns found; when
        none is found, `NotFound`."""
        return load_references(
            references,
            lambda: self._ws(workspace, cwd),
            workspace is not None,
            self.workspaces,
            before,
            after,
            include_tools,
            include_thinking,
            max_chars,
            anywhere,
            full_tools,
            matching,
        )

    def grep_turns(
        self,
        pattern: str,
        workspace: str | Workspace | None = None,
        *,
        sessions: Sequence[str] = (),
        where: Sequence[str] = WHERE,
        cwd: str | None = None,
    ) -> GrepResult:
        """The turns whose user words, answer, thinking, tool inputs or outputs (`where`) hold a
        line matching the regular expression `pattern` (case-insensitive), oldest first, each
        with its matching lines; `sessions` (ids or prefixes, or turns `SESSION:TURN`,
        `SESSION:A-B`, whose every line is shown) narrows the search."""
        ws = self._ws(workspace, cwd)
        return grep_turns(ws, self.turns(ws.id), pattern, sessions, where)

    def canonical_ref(self, ws: Workspace, r: RefLike) -> TurnRef:
        """`r` parsed, its session prefix expanded when it names one session of `ws`."""
        return canonical_ref(ws, r)

    def canonical_sources(self, ws: Workspace, sources: Sequence[str] | None) -> list[str] | None:
        """Memory sources with their turn references written in full (`session:turn`), so that a
        memory citing `5dd5f56a:2` links to the theme and trace holding that turn."""
        return canonical_sources(ws, sources)

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
        *,
        workspace: str | Workspace | None = None,
        key: str | None = None,
    ) -> MemoryEntry:
        """A correction that must not be repeated, stored under memory/lessons/."""
        return essence.save_lesson(self.memory(workspace), situation, mistake, correction, key)

    def organize_memories(
        self,
        content: str | None = None,
        sources: list[str] | None = None,
        workspace: str | Workspace | None = None,
    ) -> OrganizePrepare | OrganizeStored:
        return essence.organize_memories(self._ws(workspace), content, sources)

    def sync_workspace_index(
        self, remarks: dict[str, str] | None = None, workspace: str | Workspace | None = None
    ) -> dict[str, Any]:
        return essence.sync_workspace_index(self._ws(workspace), remarks)

    def bootstrap_workspace(
        self, workspace: str | Workspace | None = None, recent: int = 8, budget: int = 12_000
    ) -> Bootstrap:
        """Essence, memory tree ([new] since the last bootstrap), recent turns, notes, themes."""
        ws = self._ws(workspace)
        recent_rows = essence.recent_requests(self.turns(ws.id), recent)
        return essence.bootstrap_workspace(ws, recent_rows, ThemeStore(ws).names(), budget)

    def memory_stats(self, workspace: str | Workspace | None = None) -> MemoryStats:
        ws = self._ws(workspace)
        st = self.stats(ws.id)
        themes = len(ThemeStore(ws).names())
        return essence.memory_stats(ws, st.turns, st.oldest, st.newest, themes)

    def export_memory(
        self,
        include_turns: bool = False,
        filename: str | None = None,
        workspace: str | Workspace | None = None,
    ) -> Path:
        ws = self._ws(workspace)
        turns = essence.export_turns(self.turns(ws.id)) if include_turns else None
        return essence.export_memory(ws, include_turns, filename, turns)

    def import_memory(
        self,
        path: str | os.PathLike[str],
        workspace: str | Workspace | None = None,
        allow_path: bool = False,
    ) -> ImportReport:
        """Import an export: a file name in the workspace's `exports/`, or the path export_memory
        returned (`exports/NAME`, relative to the workspace); any other path only with
        `allow_path` (the CLI user naming a file explicitly, never MCP)."""
        return essence.import_memory(self._ws(workspace), path, allow_path)

    def purge_session(
        self, session_id: str, workspace: str | Workspace | None = None
    ) -> PurgeReport:
        """Delete a session's raw copies (which keep its secrets), refined rows, embeddings, state
        and theme memberships, and remember it: no later ingest, follower or session-end hook
        archives it again until `unpurge_session` (or `ingest(include_purged=True)`)."""
        ws = self._ws(workspace)
        # A copy purged from one workspace while another still holds the session (before a
        # merge) is not gone: it is not remembered, so the other copy keeps following its log.
        elsewhere = any(
            session_id in store.raw_files(w) or store.refined_path(w, session_id).exists()
            for w in self.workspaces()
            if w.id != ws.id
        )
        return purge_session(
            ws,
            session_id,
            forget=ThemeStore(ws).drop_session,
            purged=None if elsewhere else PurgedSessions(self.home),
        )

    def purged_sessions(self) -> list[PurgedSession]:
        """The sessions purged and kept out of every ingest, oldest purge first."""
        return PurgedSessions(self.home).all()

    def unpurge_session(self, session_id: str) -> list[PurgedSession]:
        """Re-admit a purged session (its id or a unique prefix): the next ingest archives it
        again from the agent's log if that still holds it."""
        return PurgedSessions(self.home).forget(session_id)

    def merge_workspaces(self, src: str, into: str) -> MergeReport:
        """Move workspace `src` (its paths, sessions, ingest state and themes) into `into`, and
        remove `src`; a later ingest of its paths lands in `into`."""
        self._indexes.clear()
        return merge_workspaces(self.registry, src, into)

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
        *,
        references: Sequence[TurnRef | dict[str, Any] | str] | None = None,
        seeds: Sequence[str] | None = None,
        remove: Sequence[TurnRef | dict[str, Any] | str] | None = None,
        description: str | None = None,
        min_score: float = 0.5,
        who: str = "api",
        rules: TagRules = TAG_RULES,
    ) -> TagResult:
        """Attach confirmed turns, or search from 1-3 seeds and attach the topic's hits: `min_score`
        scales the shares of each seed's best hit that make the theme's core and the weaker hits
        that join it when close to that core (see `themes/tag/tagging.py`); returns what was
        attached and the near misses to confirm. `rules` (tag/rules.py) are for measuring."""
        ws = self._ws(workspace)
        return tagging.tag_theme(
            ws,
            theme,
            references,
            seeds,
            remove,
            description,
            min_score,
            who,
            turns=lambda: self.turns(ws.id),
            refine=lambda s: self.refine(ws.id, session=s, embed=False),
            search=lambda q, n: self.search(q, ws.id, limit=n, tuning=tagging.SEED_TUNING),
            index=lambda: self.index(ws).refresh(),
            rules=rules,
        )

    def discover_themes(
        self,
        workspace: str | Workspace | None = None,
        min_size: int = 3,
        *,
        threshold: float | None = None,
        rules: DiscoveryRules = DISCOVERY_RULES,
    ) -> DiscoveryResult:
        """Cluster the workspace's main-agent turns into suggested themes (k is not chosen).
        `rules` (discover/rules.py) are for measuring."""
        ws = self._ws(workspace)
        return discover_workspace(
            ws, self.index(ws).refresh(), min_size, threshold, self._model_name(), rules=rules
        )

    def discovery_input(
        self, workspace: str | Workspace | None = None
    ) -> tuple[Workspace, pl.DataFrame, np.ndarray | DiskRows | None]:
        """What `discover_themes` clusters (see `themes.discover.discovery.discovery_input`)."""
        ws = self._ws(workspace)
        return ws, *discovery_input(ws, self.index(ws).refresh())

    def trace_theme(
        self,
        theme: str,
        workspace: WorkspaceArg = None,
        *,
        granularity: str = "auto",
        include_turn_content: bool = False,
        rules: TraceRules = TRACE_RULES,
    ) -> Timeline:
        """The theme as a timeline (Polars frame, events, buckets, reversals, files, memories).
        Several workspaces only when listed explicitly (the theme is read from each). `rules`
        (pairing, claims, where it stands) are for measuring."""
        if isinstance(workspace, list | tuple):
            targets = self._selected(workspace)
        else:
            targets = [self._ws(workspace)]  # type: ignore[arg-type]
        return trace_theme(theme, targets, granularity, include_turn_content, rules)
