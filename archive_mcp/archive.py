"""`Archive`: the Python API every CLI command and MCP tool calls."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.ingest import store
from archive_mcp.ingest.batch import RefineReport, make_engine, refine_batch
from archive_mcp.ingest.pipeline import Ingestor, IngestReport, Progress
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
from archive_mcp.memory.store import MemoryEntry, MemoryError, MemoryStore, slugify
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable, make_embedder
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.schema import REFINED, SESSIONS, THEME_SCHEMA, TOOL_CALLS, empty_refined
from archive_mcp.search.context import TurnContext, TurnRef, load_turn_context
from archive_mcp.search.engine import Filters, SearchError, SearchResults, search_workspaces
from archive_mcp.search.index import WorkspaceIndex
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
from archive_mcp.themes.timeline import Timeline, build_timeline
from archive_mcp.workspaces import (
    Registry,
    Workspace,
    WorkspaceError,
    archive_home,
    default_source_roots,
    locked,
    model_dir,
    read_json,
)

WorkspaceArg = str | Workspace | Sequence[str] | None


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Archive:
    """A multi-workspace archive of agent sessions under one home directory."""

    def __init__(self, home: str | os.PathLike[str] | None = None,
                 embedder: Embedder | str | None = "static",
                 summarizer: Summarizer | None = None) -> None:
        self.home = archive_home(home)
        self.registry = Registry(self.home)
        self._embedder_spec = embedder
        self._embedder: Embedder | None = embedder if not isinstance(embedder, str | None) else None
        self.summarizer = summarizer
        self._indexes: dict[str, WorkspaceIndex] = {}
        self.last_report: IngestReport | None = None

    # --- embedder (lazy: nothing heavy is imported until a vector is needed) ---------------
    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is None and isinstance(self._embedder_spec, str):
            self._embedder = make_embedder(self._embedder_spec, model_dir())
        return self._embedder

    # --- workspaces ------------------------------------------------------------------------
    def workspaces(self) -> list[Workspace]:
        return self.registry.all()

    def workspace(self, ref: str | None = None, cwd: str | None = None,
                  roots: Iterable[str] = ()) -> Workspace:
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

    # --- ingest and refine -----------------------------------------------------------------
    def ingest(self, *paths: str | os.PathLike[str], embed: bool = True,
               progress: Progress | None = None, workers: int | None = None,
               engine: str = "local", address: str | None = None) -> IngestReport:
        """Archive and refine sessions under `paths` (default: both Kimi roots that exist).

        Raw logs are copied here; parse, refine and embed run on `engine`: "local" (large
        batches in `workers` processes, default up to 4 cores) or "ray" (the cluster at
        `address`, default: a local Ray instance or $RAY_ADDRESS).
        """
        roots = [Path(p).expanduser() for p in paths] or [p for p in default_source_roots() if p.exists()]
        embedder = self.embedder if embed else None
        runner = make_engine(engine, address, workers, embedder, progress, self.summarizer,
                             self._embedder_spec)
        try:
            return Ingestor(self.registry, embedder, self.summarizer, progress, workers, runner).ingest(roots)
        finally:
            runner.close()

    def refine(self, workspace: WorkspaceArg = None, session: str | None = None,
               since: datetime | None = None, force: bool = False, embed: bool = True,
               progress: Progress | None = None, engine: str = "local",
               address: str | None = None, workers: int | None = None) -> RefineReport:
        """Batch-refine archived sessions from their raw logs, on `engine` ("local" or "ray").

        A session is refined again when it has no refined file, an older refiner wrote it, or
        `force`; turns are embedded when their content changed since the last embedding.
        """
        report = RefineReport()
        plan = [(ws, sid, files) for ws in self._selected(workspace)
                for sid, files in self.raw_files(ws).items() if session in (None, sid)]
        if since is not None:
            cutoff = since if since.tzinfo else since.replace(tzinfo=UTC)
            plan = [p for p in plan if self._last_activity(p[0], p[1], p[2]) >= cutoff]
        embedder = None
        if embed:
            try:
                embedder = self.embedder
            except EmbedderUnavailable as exc:
                report.embed_error = str(exc)
        runner = make_engine(engine, address, workers, embedder, progress, self.summarizer,
                             self._embedder_spec)
        try:
            refine_batch(plan, runner, report, force=force, embed=embedder is not None,
                         summarizer=self.summarizer)
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
        if df.height and df["started_at"].max() is not None:
            return df["started_at"].max()
        mtimes = [(ws.root / rel).stat().st_mtime for rel, _ in files if (ws.root / rel).exists()]
        return datetime.fromtimestamp(max(mtimes, default=0), UTC)

    # --- search ----------------------------------------------------------------------------
    def _model_name(self) -> str | None:
        if isinstance(self._embedder_spec, str):
            from archive_mcp.refiners.embed import EMBEDDERS
            return EMBEDDERS[self._embedder_spec].name
        return self._embedder_spec.name if self._embedder_spec is not None else None

    def index(self, ws: Workspace) -> WorkspaceIndex:
        """The (lazily loaded, automatically refreshed) search index of one workspace."""
        if ws.id not in self._indexes:
            self._indexes[ws.id] = WorkspaceIndex(ws, self._model_name())
        return self._indexes[ws.id]

    def search(self, query: str, workspace: WorkspaceArg = None, limit: int = 10,
               mode: str = "hybrid", session: str | None = None, agent: str | None = None,
               since: datetime | None = None, until: datetime | None = None, tool: str | None = None,
               file: str | None = None, theme: str | None = None, kind: str | None = None,
               cwd: str | None = None, fusion: str = "combsum") -> SearchResults:
        """Hybrid search over one workspace (default: the cwd's), or several listed, or "all".

        Returns the hits best first; `.realized_mode` and `.fallback_reason` say which signals
        answered (e.g. `lexical+fuzzy` when no embedding model is available). `fusion` is
        `combsum` (normalised score sum, the default) or `rrf` (reciprocal rank), for comparison.
        """
        targets = (self._selected(workspace) if workspace is not None
                   else [self.workspace(cwd=cwd)])
        embedder = None
        if mode in ("hybrid", "semantic"):
            try:
                embedder = self.embedder
            except EmbedderUnavailable:
                embedder = None
        for ws in targets:
            self.index(ws)
        filters = Filters(session, agent, since, until, tool, file, theme, kind)
        return search_workspaces(targets, self._indexes, embedder, query, limit, mode, filters, fusion)

    def load_turn_context(self, references: Sequence[TurnRef | dict[str, Any]],
                          workspace: str | Workspace | None = None, before: int = 0, after: int = 0,
                          include_tools: bool = True, include_thinking: bool = False,
                          max_chars: int = 6000, cwd: str | None = None) -> TurnContext:
        """Full turns read from the archived raw log by byte range; unknown references reported."""
        ws = workspace if isinstance(workspace, Workspace) else self.workspace(workspace, cwd=cwd)
        refs = [r if isinstance(r, TurnRef) else TurnRef(str(r["session_id"]), int(r["turn"]),
                                                         str(r.get("agent") or "main"))
                for r in references]
        return load_turn_context(ws, refs, before, after, include_tools, include_thinking, max_chars)

    def set_summaries(self, ws: Workspace, session_id: str, summaries: dict[tuple[str, int], str],
                      refiner: str) -> int:
        """Replace the summaries of some turns (e.g. written by the client's model)."""
        with locked(ws.root):
            df = store.read_refined(ws, session_id)
            rows = [{**r, "summary": redact(summaries[(r["agent"], r["turn"])])[0][:400], "refiner": refiner}
                    for r in df.iter_rows(named=True) if (r["agent"], r["turn"]) in summaries]
            for r in rows:
                for col in ("started_at", "ended_at"):
                    r[col] = int(r[col].timestamp() * 1_000_000) if r[col] else None
            if rows:
                store.merge_refined(ws, session_id, rows)
        return len(rows)

    # --- memory ----------------------------------------------------------------------------
    def _ws(self, workspace: str | Workspace | None, cwd: str | None = None) -> Workspace:
        return workspace if isinstance(workspace, Workspace) else self.workspace(workspace, cwd=cwd)

    def memory(self, workspace: str | Workspace | None = None, cwd: str | None = None) -> MemoryStore:
        """The memory of one workspace: remember, recall, search, recall_recent, forget, list."""
        return MemoryStore(self._ws(workspace, cwd))

    def save_lesson(self, situation: str, mistake: str, correction: str,
                    workspace: str | Workspace | None = None, key: str | None = None) -> MemoryEntry:
        """A correction that must not be repeated, stored under memory/lessons/."""
        content = f"## Situation\n{situation}\n\n## Mistake\n{mistake}\n\n## Correction\n{correction}\n"
        return self.memory(workspace).remember(key or slugify(situation), content, "lessons",
                                               tags=["lesson"], title=situation[:80])

    def organize_memories(self, content: str | None = None, sources: list[str] | None = None,
                          workspace: str | Workspace | None = None) -> OrganizePrepare | OrganizeStored:
        return organize_memories(self._ws(workspace), content, sources)

    def sync_workspace_index(self, remarks: dict[str, str] | None = None,
                             workspace: str | Workspace | None = None) -> dict[str, Any]:
        return sync_workspace_index(self._ws(workspace), remarks)

    def bootstrap_workspace(self, workspace: str | Workspace | None = None, recent: int = 8,
                            budget: int = 12_000) -> Bootstrap:
        """Essence, memory tree ([new] since the last bootstrap), recent turns, notes, themes."""
        ws = self._ws(workspace)
        rows = (self.turns(ws.id).filter(pl.col("agent") == "main")
                .sort("started_at", descending=True, nulls_last=True).head(recent)
                .select("session_id", "turn", "started_at", "summary").collect().to_dicts())
        recent_rows = [{"session_id": r["session_id"], "turn": r["turn"],
                        "at": r["started_at"].isoformat() if r["started_at"] else None,
                        "summary": r["summary"]} for r in reversed(rows)]
        return bootstrap_workspace(ws, recent_rows, self._theme_names(ws), budget)

    def _theme_names(self, ws: Workspace) -> list[str]:
        folder = ws.root / "themes"
        return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []

    def memory_stats(self, workspace: str | Workspace | None = None) -> MemoryStats:
        ws = self._ws(workspace)
        counts = {f: len(list((ws.root / "memory" / f).glob("*.md"))) for f in MEMORY_FOLDERS}
        st = self.stats(ws.id)
        essence = ws.root / "essence" / "essence.md"
        size = sum(p.stat().st_size for p in ws.root.rglob("*") if p.is_file())
        return MemoryStats(counts, size, st.turns, st.oldest, st.newest, len(self._theme_names(ws)),
                           essence.stat().st_size if essence.exists() else 0)

    def export_memory(self, include_turns: bool = False, filename: str | None = None,
                      workspace: str | Workspace | None = None) -> Path:
        ws = self._ws(workspace)
        turns = None
        if include_turns:
            turns = (self.turns(ws.id).select("session_id", "agent", "turn", "started_at", "summary", "kinds")
                     .collect().to_dicts())
        return export_memory(ws, include_turns, filename, turns)

    def import_memory(self, path: str | os.PathLike[str], workspace: str | Workspace | None = None) -> ImportReport:
        return import_memory(self._ws(workspace), Path(path))

    # --- themes ----------------------------------------------------------------------------
    def themes_store(self, workspace: str | Workspace | None = None) -> ThemeStore:
        return ThemeStore(self._ws(workspace))

    def list_themes(self, workspace: str | Workspace | None = None) -> list[Theme]:
        return self.themes_store(workspace).list()

    def delete_theme(self, theme: str, workspace: str | Workspace | None = None) -> Theme:
        return self.themes_store(workspace).delete(theme)

    def tag_theme(self, theme: str, workspace: str | Workspace | None = None,
                  references: Sequence[TurnRef | dict[str, Any]] | None = None,
                  seeds: Sequence[str] | None = None, remove: Sequence[TurnRef | dict[str, Any]] | None = None,
                  description: str | None = None, min_score: float = 0.5, who: str = "api") -> TagResult:
        """Attach confirmed turns, or search from 1-3 seeds and attach hits scoring at least
        `min_score` x the best hit; returns what was attached and the near misses to confirm."""
        ws = self._ws(workspace)
        store = ThemeStore(ws)
        slug = slug_of(theme)
        if seeds is not None and not 1 <= len(seeds) <= 3:
            raise ThemeError("give 1 to 3 seeds (keywords or a question)")
        refs = [_ref(r) for r in references or []]
        drop = {(r.session_id, r.agent, r.turn) for r in (_ref(x) for x in remove or [])}
        refined = self._ensure_refined(ws, {r.session_id for r in refs})
        known = self._turn_keys(ws, {r.session_id for r in refs})
        for r in refs:
            if (r.session_id, r.agent, r.turn) not in known:
                valid = sorted(t for s, a, t in known if s == r.session_id and a == r.agent)
                hint = f"valid turns: {valid[0]}..{valid[-1]}" if valid else "unknown session; find turns with search_context"
                raise ThemeError(f"no turn {r.session_id}:{r.turn} (agent {r.agent}) in workspace {ws.name}; {hint}")
        when = datetime.now(UTC).isoformat(timespec="seconds")
        candidates: list[Member] = [Member(r.session_id, r.agent, r.turn, "reference", who, when, None) for r in refs]
        near: list[dict[str, Any]] = []
        for seed in seeds or []:
            hits = self.search(seed, workspace=ws.id, limit=40)
            if not hits:
                continue
            best = hits[0].score
            for h in hits:
                if h.score >= min_score * best:
                    candidates.append(Member(h.session_id, h.agent, h.turn, f"seed:{seed}", who, when, h.score))
                elif len(near) < 10:
                    near.append({"session_id": h.session_id, "agent": h.agent, "turn": h.turn, "score": h.score,
                                 "seed": seed, "summary": h.summary})
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
        return TagResult(current.name, current.slug, attached, near, removed, len(current.members), refined)

    def _turn_keys(self, ws: Workspace, sessions: set[str]) -> set[tuple[str, str, int]]:
        if not sessions:
            return set()
        df = self.turns(ws.id).filter(pl.col("session_id").is_in(list(sessions))).select("session_id", "agent", "turn").collect()
        return set(df.iter_rows())

    def _ensure_refined(self, ws: Workspace, sessions: set[str]) -> int:
        """Refine archived sessions that have no refined rows yet (on the way to tagging)."""
        missing = [s for s in sessions if store.read_refined(ws, s).height == 0 and s in self.raw_files(ws)]
        for s in missing:
            self.refine(ws.id, session=s, embed=False)
        return len(missing)

    def discover_themes(self, workspace: str | Workspace | None = None, min_size: int = 3,
                        threshold: float | None = None) -> ThemeDiscovery:
        """Cluster the workspace's main-agent turns into suggested themes (k is not chosen)."""
        ws = self._ws(workspace)
        idx = self.index(ws).refresh()
        meta = idx.meta.with_row_index("row").filter(pl.Series(idx.alive)).filter(pl.col("agent") == "main")
        frame = (self.turns(ws.id).filter(pl.col("agent") == "main")
                 .select("session_id", "agent", "turn", "user_text", "assistant_text", "keywords").collect())
        frame = meta.select("row", "session_id", "agent", "turn").join(frame, on=["session_id", "agent", "turn"], how="inner")
        vectors = None
        if idx.has_vectors():
            sims_rows = frame["row"].to_numpy()
            dense = np.concatenate([s.dense() if s.dense() is not None else np.asarray(s.vectors, np.float32)
                                    for s in idx.segments if s.vectors is not None and s.meta.height])
            has = np.concatenate([s.has_vector for s in idx.segments])
            if dense.shape[0] == has.shape[0] and has[sims_rows].all():
                vectors = dense[sims_rows]
        return discover(ws, frame.drop("row"), vectors, min_size, threshold, self._model_name())

    def trace_theme(self, theme: str, workspace: WorkspaceArg = None, granularity: str = "auto",
                    include_turn_content: bool = False) -> Timeline:
        """The theme as a timeline (Polars frame, events, buckets, reversals, files, memories).
        Several workspaces only when listed explicitly (the theme is read from each)."""
        targets = self._selected(workspace) if isinstance(workspace, list) else [self._ws(workspace)]
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
        merged = Theme(found.name, found.slug, found.description, found.seeds, found.status, members)
        refs = {f"{m.session_id}:{m.turn}" for m in members}
        linked = []
        for ws in targets:
            for e in MemoryStore(ws).list():
                if found.name in e.sources or found.slug in e.sources or refs & set(e.sources) or found.name in e.tags:
                    linked.append(e.ref)
        # Read only the member sessions' files: cost follows the theme, not the workspace.
        files = [str(p) for ws in targets for sid in {m.session_id for m in members}
                 if (p := store.refined_path(ws, sid)).exists()]
        frame = pl.scan_parquet(files).select(list(REFINED)) if files else empty_refined().lazy()
        return build_timeline(merged, ",".join(w.id for w in targets), frame, granularity, linked,
                              include_turn_content)

    def themes(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per theme member: theme, status, turn and provenance."""
        rows = [{"workspace_id": ws.id, "theme": t.name, "slug": t.slug, "status": t.status,
                 "session_id": m.session_id, "agent": m.agent, "turn": m.turn, "provenance": m.provenance,
                 "who": m.who, "tagged_at": m.when, "score": m.score}
                for ws in self._selected(workspace) for t in ThemeStore(ws).list() for m in t.members]
        return pl.DataFrame(rows, schema=THEME_SCHEMA).lazy()

    # --- frames ----------------------------------------------------------------------------
    def turns(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """Refined turns (one row per turn) across workspaces unless one is given."""
        files = [str(p) for ws in self._selected(workspace)
                 for p in sorted(ws.refined_dir.glob("*.parquet"))]
        if not files:
            return empty_refined().lazy()
        return pl.scan_parquet(files).select(list(REFINED))

    def sessions(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per session: title, span, turns, tokens, status counts."""
        return (self.turns(workspace)
                .group_by("workspace_id", "source", "session_id")
                .agg(pl.col("title").first(), pl.col("started_at").min().alias("first_at"),
                     pl.col("ended_at").max().alias("last_at"),
                     (pl.col("agent") == "main").sum().alias("turns"),
                     (pl.col("agent") != "main").sum().alias("subagent_turns"),
                     pl.col("usage").struct.field("input").sum().alias("input_tokens"),
                     pl.col("usage").struct.field("output").sum().alias("output_tokens"),
                     (pl.col("status") == "open").any().alias("live"),
                     pl.col("status").unique().sort().alias("statuses"))
                .sort("first_at", descending=True, nulls_last=True)
                .select(list(SESSIONS)))

    def tool_calls(self, workspace: WorkspaceArg = None) -> pl.LazyFrame:
        """One row per tool call: name, status, duration, files, with its turn."""
        return (self.turns(workspace)
                .select("workspace_id", "session_id", "agent", "turn", "started_at", "tool_calls")
                .with_columns(pl.int_ranges(pl.col("tool_calls").list.len()).alias("call"))
                .explode("tool_calls", "call")
                .drop_nulls("tool_calls")
                .unnest("tool_calls")
                .select(list(TOOL_CALLS)))

    def stats(self, workspace: WorkspaceArg = None) -> Stats:
        selected = self._selected(workspace)
        df = (self.turns([w.id for w in selected]).select("session_id", "started_at", "status").collect()
              if selected else empty_refined())
        raw = sum(p.stat().st_size for ws in selected for p in ws.raw_dir.rglob("*") if p.is_file())
        embedded = sum(pl.scan_parquet(str(p)).select(pl.len()).collect().item()
                       for ws in selected for p in ws.embeddings_dir.glob("*.parquet"))
        times = df["started_at"].drop_nulls()
        return Stats(workspaces=len(selected), sessions=df["session_id"].n_unique(),
                     turns=df.height, raw_bytes=raw, embedded=embedded,
                     oldest=times.min().isoformat() if len(times) else None,
                     newest=times.max().isoformat() if len(times) else None,
                     by_status=dict(df["status"].value_counts().iter_rows()) if df.height else {})


def _ref(r: TurnRef | dict[str, Any]) -> TurnRef:
    if isinstance(r, TurnRef):
        return r
    try:
        return TurnRef(str(r["session_id"]), int(r["turn"]), str(r.get("agent") or "main"))
    except (KeyError, TypeError, ValueError) as exc:
        raise ThemeError(f"a reference needs session_id and turn, got {r!r}") from exc


# Mistakes a caller can fix; the CLI turns them into exit code 1, the MCP server into tool errors.
USER_ERRORS: tuple[type[Exception], ...] = (WorkspaceError, MemoryError, ThemeError, SearchError)
