"""`Corpus`: the archived turns of an `Archive` — ingest, batch refinement, search and exact turns
read back from the raw logs. `Archive` adds memory and themes on top."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from archive_mcp.errors import ArchiveError, NotFound
from archive_mcp.frames import Frames, WorkspaceArg
from archive_mcp.ingest import store
from archive_mcp.ingest.batch import RefineReport, make_engine, refine_batch
from archive_mcp.ingest.pipeline import (
    Ingestor,
    IngestReport,
    Progress,
)
from archive_mcp.refiners import SOURCES
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable, make_embedder
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.refiners.summary import SUMMARY_MAX
from archive_mcp.refiners.text import shorten
from archive_mcp.refs import REF, RefLike, parse_ref, resolve_session
from archive_mcp.search.context import MissingTurn, TurnContext, TurnRef, load_turn_context
from archive_mcp.search.engine import Filters, SearchError, SearchResults, search_workspaces
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.ranking import Tuning
from archive_mcp.themes.store import member_keys
from archive_mcp.workspaces import Workspace, default_source_roots, locked, read_json


class Corpus(Frames):
    """The turns of every workspace under one home: archive them, refine them, find them, read them."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        embedder: Embedder | str | None = "static",
        summarizer: Summarizer | None = None,
    ) -> None:
        super().__init__(home)
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not isinstance(embedder, str | None) else None
        self.summarizer = summarizer
        self._indexes: dict[str, WorkspaceIndex] = {}
        # The MCP server runs tools on worker threads: one index refresh or search at a time.
        self._index_lock = threading.RLock()
        self.last_report: IngestReport | None = None

    # --- embedder (lazy: nothing heavy is imported until a vector is needed) ---------------
    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is None and isinstance(self._embedder_spec, str):
            self._embedder = make_embedder(self._embedder_spec)
        return self._embedder

    # --- ingest and refine -----------------------------------------------------------------
    def ingest(
        self,
        *paths: str | os.PathLike[str],
        embed: bool = True,
        progress: Progress | None = None,
        workers: int | None = None,
        engine: str = "local",
        address: str | None = None,
    ) -> IngestReport:
        """Archive and refine sessions under `paths` (default: every agent's home that exists:
        Kimi CLI, Kimi Code, Claude Code, Codex CLI, Gemini CLI, Qwen Code, OpenCode;
        `report.roots` says which).

        Raw logs are copied here; parse, refine and embed run on `engine`: "local" (large
        batches in `workers` processes, default up to 4 cores) or "ray" (the cluster at
        `address`, default: a local Ray instance or $RAY_ADDRESS).
        """
        looked = [] if paths else default_source_roots()
        roots = [Path(p).expanduser() for p in paths] or [p for p in looked if p.exists()]
        embedder = self.embedder if embed else None
        runner = make_engine(
            engine, address, workers, embedder, progress, self.summarizer, self._embedder_spec
        )
        try:
            report = Ingestor(
                self.registry, embedder, self.summarizer, progress, workers, runner
            ).ingest(roots)
        finally:
            runner.close()
        report.roots = [{"path": str(p), "found": p.exists()} for p in looked]
        return report

    def refine(
        self,
        workspace: WorkspaceArg = None,
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
        """
        report = RefineReport()
        plan = [
            (ws, sid, files)
            for ws in self._selected(workspace)
            for sid, files in self.raw_files(ws).items()
            if session in (None, sid)
        ]
        if since is not None:
            cutoff = since if since.tzinfo else since.replace(tzinfo=UTC)
            plan = [p for p in plan if self._last_activity(p[0], p[1], p[2]) >= cutoff]
        embedder = None
        if embed:
            try:
                embedder = self.embedder
            except EmbedderUnavailable as exc:
                report.embed_error = str(exc)
        runner = make_engine(
            engine, address, workers, embedder, progress, self.summarizer, self._embedder_spec
        )
        try:
            refine_batch(
                plan,
                runner,
                report,
                force=force,
                embed=embedder is not None,
                summarizer=self.summarizer,
            )
        finally:
            runner.close()
        return report

    def raw_files(self, ws: Workspace) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Archived raw logs per session: session id -> [(archive-relative path, ingest state)]."""
        state = read_json(ws.state_dir / "ingest.json", {}) or {}
        out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for raw_rel, entry in sorted(state.get("files", {}).items()):
            out.setdefault(entry["session"], []).append((raw_rel, entry))
        return out

    def _last_activity(self, ws: Workspace, sid: str, files: list[tuple[str, dict]]) -> datetime:
        df = store.read_refined(ws, sid)
        latest = df["started_at"].max() if df.height else None
        if isinstance(latest, datetime):
            return latest
        mtimes = [(ws.root / rel).stat().st_mtime for rel, _ in files if (ws.root / rel).exists()]
        return datetime.fromtimestamp(max(mtimes, default=0), UTC)

    # --- search ----------------------------------------------------------------------------
    def _model_name(self) -> str | None:
        if isinstance(self._embedder_spec, str):
            from archive_mcp.refiners.embed import EMBEDDERS

            return str(cast(Any, EMBEDDERS[self._embedder_spec]).name)
        return str(self._embedder_spec.name) if self._embedder_spec is not None else None

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
        limit: int = 10,
        mode: str = "hybrid",
        session: str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        tool: str | None = None,
        file: str | None = None,
        theme: str | None = None,
        kind: str | None = None,
        cwd: str | None = None,
        fusion: str | None = None,
        tuning: Tuning | None = None,
        rerank: str | None = None,
        source: str | None = None,
    ) -> SearchResults:
        """Hybrid search over one workspace (default: the cwd's), or several listed, or "all".

        Returns the hits best first; `.realized_mode` and `.fallback_reason` say which signals
        answered (e.g. `lexical+fuzzy` when no embedding model is available). `fusion` (`zsum`,
        the default, `combsum` or `rrf`) and `tuning` (the ranking knobs) are for measuring.
        `rerank="minilm"` (opt-in) re-scores the top 30 with the full MiniLM, `rerank="e5"` the
        top 20 with multilingual-e5-small (the `e5` extra): better on conversational questions,
        but each embeds its candidates at query time (MiniLM loads torch once; e5 about 2 s of
        CPU a query on chat turns, more on long coding turns). See bench/RESULTS.md.
        `source` keeps one agent's sessions: kimi, kimi-code, claude-code, codex or gemini.
        """
        if source is not None and source not in SOURCES:
            raise SearchError(f"unknown source {source!r}: use one of {', '.join(SOURCES)}")
        targets = self._selected(workspace) if workspace is not None else [self.workspace(cwd=cwd)]
        embedder = None
        if mode in ("hybrid", "semantic"):
            try:
                embedder = self.embedder
            except EmbedderUnavailable:
                embedder = None
        filters = Filters(
            session, agent, since, until, tool, file, theme, kind, source, member_keys
        )
        if rerank is not None:
            tuning = replace(tuning or Tuning(), rerank=rerank)
        with self._index_lock:
            for ws in targets:
                self.index(ws)
            return search_workspaces(
                targets, self._indexes, embedder, query, limit, mode, filters, fusion, tuning
            )

    def load_turn_context(
        self,
        references: Sequence[RefLike],
        workspace: str | Workspace | None = None,
        before: int = 0,
        after: int = 0,
        include_tools: bool = True,
        include_thinking: bool = False,
        max_chars: int = 6000,
        cwd: str | None = None,
        anywhere: bool = False,
    ) -> TurnContext:
        """Full turns read from the archived raw log by byte range, their text within `max_chars`.

        A reference is `session:turn` (a unique session-id prefix will do), `{session_id, turn,
        agent?}` or a TurnRef. With `anywhere`, a session not in the workspace (or when there is
        no workspace) is looked up in every workspace and read where it is unique. Unknown
        references are reported beside the turns found; when none is found, `NotFound`."""
        try:
            ws: Workspace | None = self._ws(workspace, cwd)
        except ArchiveError:
            if not anywhere or workspace is not None:
                raise
            ws = None
        groups: dict[str, tuple[Workspace, list[TurnRef]]] = {}
        missing: list[MissingTurn] = []
        order: dict[tuple[str, str, str], int] = {}  # the turns come back in the references' order
        asked: dict[tuple[str, int, str], int] = {}  # and so do the references not found
        for raw in references:
            ref = parse_ref(raw)
            where, sid, why = self._locate(ref.session_id, ws, anywhere)
            asked.setdefault((sid, ref.turn, ref.agent), len(asked))
            if where is None:
                missing.append(MissingTurn(ref.session_id, ref.turn, ref.agent, why))
                continue
            groups.setdefault(where.id, (where, []))[1].append(replace(ref, session_id=sid))
            order.setdefault((where.id, sid, ref.agent), len(order))
        turns, total = [], max(1, sum(len(r) for _, r in groups.values()))
        for where, refs in groups.values():
            part = load_turn_context(
                where,
                refs,
                before,
                after,
                include_tools,
                include_thinking,
                max_chars * len(refs) // total,
            )
            turns += part.turns
            missing += part.not_found
        if missing and not turns:
            raise NotFound("; ".join(dict.fromkeys(n.reason for n in missing)))
        turns.sort(key=lambda t: order.get((t.workspace_id, t.session_id, t.agent), 0))
        missing.sort(key=lambda n: asked.get((n.session_id, n.turn, n.agent), 0))
        return TurnContext(turns, missing)

    def canonical_ref(self, ws: Workspace, r: RefLike) -> TurnRef:
        """`r` parsed, its session prefix expanded when it names one session of `ws`."""
        ref = parse_ref(r)
        found = resolve_session(self.raw_files(ws), ref.session_id)
        return replace(ref, session_id=found[0]) if len(found) == 1 else ref

    def canonical_sources(self, ws: Workspace, sources: Sequence[str] | None) -> list[str] | None:
        """Memory sources with their turn references written in full (`session:turn`), so that a
        memory citing `5dd5f56a:2` links to the theme and trace holding that turn."""
        if sources is None:
            return None
        out = []
        for s in sources:
            if REF.match(s) and not s.startswith("memory/"):
                ref = self.canonical_ref(ws, s)
                s = f"{ref.session_id}:{ref.turn}" + (
                    "" if ref.agent == "main" else f" [{ref.agent}]"
                )
            out.append(s)
        return out

    def _locate(
        self, sid: str, ws: Workspace | None, anywhere: bool
    ) -> tuple[Workspace | None, str, str]:
        """The workspace and full id of the session `sid` names (an id or a unique prefix), else
        (None, sid, why): in `ws`, then (with `anywhere`) in every workspace."""
        pools: list[Workspace | None] = [ws] if ws is not None else []
        if anywhere:
            pools.append(None)  # None: every workspace
        for pool in pools:
            spaces = [pool] if pool is not None else self.workspaces()
            found = [(w, s) for w in spaces for s in resolve_session(self.raw_files(w), sid)]
            if len(found) == 1:
                return found[0][0], found[0][1], ""
            if len(found) > 1:
                names = ", ".join(f"{s} ({w.name})" for w, s in found[:5])
                return None, sid, f"session {sid!r} is ambiguous: {names}; give more of the id"
        where = f"workspace {ws.name}" if ws is not None and not anywhere else "any workspace"
        return (
            None,
            sid,
            f"no session {sid!r} in {where}; search for its turns or list the sessions",
        )

    def set_summaries(
        self, ws: Workspace, session_id: str, summaries: dict[tuple[str, int], str], refiner: str
    ) -> int:
        """Replace the summaries of some turns (e.g. written by the client's model)."""
        with locked(ws.root):
            df = store.read_refined(ws, session_id)
            rows = [
                {
                    **r,
                    "summary": shorten(redact(summaries[(r["agent"], r["turn"])])[0], SUMMARY_MAX),
                    "refiner": refiner,
                }
                for r in df.iter_rows(named=True)
                if (r["agent"], r["turn"]) in summaries
            ]
            for r in rows:
                for col in ("started_at", "ended_at"):
                    r[col] = int(r[col].timestamp() * 1_000_000) if r[col] else None
            if rows:
                store.merge_refined(ws, session_id, rows)
        return len(rows)
