"""Ingest: copy raw logs into the archive by byte offset, then refine and embed new turns.

The archived copy in `raw/` is the source of truth that byte ranges point into; it only ever
grows by whole lines. Per raw file, `state/ingest.json` keeps the source's size, mtime and head
hash (to spot an unchanged or rewritten source), the archived high-water mark, and where parsing
resumes (the start of the turn that may still change).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Set
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from archive_mcp.ingest import store
from archive_mcp.ingest.raw import DIR_MODE, archive_file, snapshot_file
from archive_mcp.ingest.workers import JobPool
from archive_mcp.refiners import PARSERS, RefineContext, SessionSource, Turn, discover, refine_turn
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.refiners.text import shorten
from archive_mcp.workspaces import (
    Registry,
    Workspace,
    atomic_write_json,
    clean_orphans,
    locked,
    read_json,
    safe_id,
    workspace_id,
)

EMBED_BATCH = 2048
EMBED_FLUSH = 8 * EMBED_BATCH  # embed and drop pending payloads once this many have arrived

Progress = Callable[[str, int, int], None]  # (label, done, total)


@dataclass
class Skip:
    path: str
    reason: str
    line: int | None = None


@dataclass
class IngestReport:
    files: int = 0
    files_changed: int = 0
    bytes_archived: int = 0
    sessions: int = 0
    turns_added: int = 0
    turns_updated: int = 0
    embedded: int = 0
    workspaces: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    unknown_types: dict[str, int] = field(default_factory=dict)
    embed_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def embed_text(row: dict[str, Any]) -> str:
    """What a turn is embedded as: the request, the answer and the keywords.

    Not the summary: its fixed labels (Asked/Did/Outcome) pull every mean-pooled vector the same
    way; measured in bench/RESULTS.md (semantic R@5 0.58 -> 0.64 with the static model).
    """
    return f"{shorten(row['user_text'], 300)}\n{shorten(row['assistant_text'], 300)}\n{' '.join(row['keywords'])}"


class Ingestor:
    def __init__(self, registry: Registry, embedder: Embedder | None,
                 summarizer: Summarizer | None = None, progress: Progress | None = None,
                 workers: int | None = None) -> None:
        self.registry = registry
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        self.pool = JobPool(guarded_session_job, self.workers)
        self._total = self._done = 0
        self.embedder = embedder
        self.summarizer = summarizer
        self.progress = progress or (lambda label, done, total: None)

    # --- discovery -------------------------------------------------------------------------
    def ingest(self, paths: Iterable[Path]) -> IngestReport:
        """Archive every session under `paths`. A fault in one session (discovery, parsing,
        refining) is reported and skips that session only, without advancing its state, so the
        rest is archived and a later run retries it. Each workspace is locked only while its own
        sessions are archived and its state saved."""
        report = IngestReport()
        by_ws: dict[str, tuple[str | None, list[SessionSource]]] = {}
        for path in paths:
            try:
                found = discover(Path(path))
            except Exception as exc:  # noqa: BLE001 - one unreadable root must not stop the others
                report.skipped.append(Skip(str(path), f"could not look for sessions: {_reason(exc)}"))
                continue
            report.skipped += [Skip(p, r) for p, r in found.skipped]
            for session in found.sessions:
                ws_id, work_dir = self._identify(session)
                by_ws.setdefault(ws_id, (work_dir, []))[1].append(session)
        self._total = sum(len(s.files) for _, ss in by_ws.values() for s in ss)
        self._done = 0
        try:
            for ws_id, (work_dir, sessions) in sorted(by_ws.items()):
                try:
                    ws = self.registry.ensure(ws_id, path=work_dir, source=sessions[0].source)
                except OSError as exc:
                    report.skipped += [Skip(str(s.session_dir), f"workspace {ws_id}: {_reason(exc)}")
                                       for s in sessions]
                    continue
                report.workspaces.append(ws.id)
                with locked(ws.root):  # released as soon as this workspace's state is saved
                    self._ingest_workspace(ws, sessions, report)
        finally:
            self.pool.close()
        return report

    def _ingest_workspace(self, ws: Workspace, sessions: list[SessionSource], report: IngestReport) -> None:
        clean_orphans(ws.root)
        if ws.raw_dir.is_dir():
            ws.raw_dir.chmod(DIR_MODE)
        state = read_json(ws.state_dir / "ingest.json", {}) or {}
        state.setdefault("files", {})
        state.setdefault("sessions", {})
        jobs: list[SessionJob] = []
        for session in sessions:
            try:
                job = self._archive_session(ws, session, state, report)
            except Exception as exc:  # noqa: BLE001 - a fault stays inside its session
                report.skipped.append(Skip(str(session.session_dir), f"session skipped: {_reason(exc)}"))
                job = None
            if job is not None:
                jobs.append(job)
            self._done += len(session.files)
            self.progress("archive", self._done, self._total)
        # Outcomes stream in job order; embedding payloads are flushed in batches, so memory
        # stays bounded however many turns arrive (a 1M-turn ingest held them all before).
        pending: list[tuple[str, list[EmbedItem]]] = []
        waiting = 0
        size = sum(f.entry["archived"] - f.entry["parse_offset"] for j in jobs for f in j.files)
        for job, res in zip(jobs, self.pool.run(jobs, self.summarizer, size, self.progress), strict=True):
            self._apply(job, res, state, report)
            if res.embed_items:
                pending.append((job.session_id, res.embed_items))
            waiting += len(res.embed_items)
            if waiting >= EMBED_FLUSH:
                self._embed(ws, pending, report)
                pending, waiting = [], 0
        self._embed(ws, pending, report)
        atomic_write_json(ws.state_dir / "ingest.json", state)

    def _identify(self, session: SessionSource) -> tuple[str, str | None]:
        """Workspace id and work dir: Python-Kimi buckets are already md5(work dir); a bucket
        name outside the safe alphabet gets a safe id derived from it."""
        for wd in session.work_dirs:
            if session.source == "kimi-code" or workspace_id(wd) == session.bucket:
                return workspace_id(wd), wd
        return safe_id(session.bucket), None

    # --- one session: copy new bytes, then parse and refine what changed --------------------
    def _archive_session(self, ws: Workspace, session: SessionSource, state: dict[str, Any],
                         report: IngestReport) -> SessionJob | None:
        prefix = f"raw/{session.source}/{store.session_file_stem(session.session_id)}"
        for snap in session.snapshots:
            try:
                snapshot_file(snap.path, ws.root / f"{prefix}/{snap.rel}", ws.raw_dir)
            except OSError as exc:
                report.skipped.append(Skip(str(snap.path), _os_reason(exc)))
        meta = state["sessions"].setdefault(session.session_id, {"source": session.source})
        if session.title:
            meta["title"] = redact(session.title)[0]
        own_agents = frozenset(f.agent for f in session.files)
        files: list[FileJob] = []
        for f in session.files:
            raw_rel = f"{prefix}/{f.rel}"
            entry = state["files"].setdefault(raw_rel, {
                "source_path": str(f.path), "session": session.session_id, "agent": f.agent,
                "source": session.source, "archived": 0, "parse_offset": 0, "parse_line": 1,
                "next_index": 0, "protocol": None, "open_turn": None})
            before = dict(entry)
            report.files += 1
            try:
                added = archive_file(f.path, ws.root / raw_rel, ws.raw_dir, entry,
                                     lambda reason, src=f.path: report.skipped.append(Skip(str(src), reason)))
            except OSError as exc:
                report.skipped.append(Skip(str(f.path), _os_reason(exc)))
                continue
            report.bytes_archived += added
            if added:
                report.files_changed += 1
                files.append(FileJob(f.agent, raw_rel, dict(entry), before))
        if not files:
            return None
        return SessionJob(ws.id, ws.name, str(ws.root), session.source, session.session_id,
                          meta.get("title"), files, own_agents, self.embedder is not None)

    def _apply(self, job: SessionJob, res: SessionOutcome, state: dict[str, Any], report: IngestReport) -> None:
        """Record what a session's job did in the ingest state and the report."""
        if res.error is not None:  # nothing of this session advances: the next run retries it
            for fjob in job.files:
                state["files"][fjob.raw_rel] = fjob.before
            report.skipped.append(Skip(job.files[0].entry["source_path"], f"session skipped: {res.error}"))
            return
        for fjob, fres in zip(job.files, res.files, strict=True):
            entry = state["files"][fjob.raw_rel]
            for line, kind, error in fres.problems:
                report.skipped.append(Skip(entry["source_path"], f"{kind}: {error}", line))
            for kind, n in fres.unknown_types.items():
                report.unknown_types[kind] = report.unknown_types.get(kind, 0) + n
            was_open = entry.get("open_turn")
            for agent, turn in fres.keys:
                if agent == fjob.agent and turn == was_open:
                    report.turns_updated += 1
                else:
                    report.turns_added += 1
            entry.update(fres.entry_update)
        if res.title and "title" not in state["sessions"][job.session_id]:
            state["sessions"][job.session_id]["title"] = redact(res.title)[0]
        if res.rows:
            report.sessions += 1

    # --- embeddings ------------------------------------------------------------------------
    def _embed(self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]],
               report: IngestReport) -> None:
        if self.embedder is None or not pending or report.embed_error:
            return
        try:
            report.embedded += embed_rows(ws, self.embedder, pending, self.progress)
        except EmbedderUnavailable as exc:
            report.embed_error = str(exc)


@dataclass
class FileJob:
    agent: str
    raw_rel: str
    entry: dict[str, Any]  # a copy of the file's ingest state: where parsing resumes
    before: dict[str, Any]  # the state before this run's bytes were archived (restored on failure)


@dataclass
class SessionJob:
    """One session's changed files (picklable: worker processes run these)."""

    ws_id: str
    ws_name: str
    ws_root: str
    source: str
    session_id: str
    title: str | None
    files: list[FileJob]
    own_agents: frozenset[str]
    embed: bool


@dataclass
class FileOutcome:
    keys: list[tuple[str, int]]
    entry_update: dict[str, Any]
    problems: list[tuple[int, str, str]]
    unknown_types: dict[str, int]


@dataclass
class SessionOutcome:
    files: list[FileOutcome]
    title: str | None
    rows: int
    embed_items: list[EmbedItem]
    error: str | None = None  # the session failed: nothing of it was written


def guarded_session_job(job: SessionJob, summarizer: Summarizer | None = None) -> SessionOutcome:
    """`run_session_job`, with any fault turned into an outcome that names it (the session is
    then skipped and retried by the next ingest)."""
    try:
        return run_session_job(job, summarizer)
    except Exception as exc:  # noqa: BLE001 - a fault stays inside its session
        return SessionOutcome([], None, 0, [], _reason(exc))


EmbedItem = tuple[str, int, str, str]  # agent, turn, content hash, text to embed


def run_session_job(job: SessionJob, summarizer: Summarizer | None = None) -> SessionOutcome:
    """Parse each changed file from its resume point, refine the turns, write the session's Parquet."""
    rows: list[dict[str, Any]] = []
    files: list[FileOutcome] = []
    title = job.title
    for f in job.files:
        e = f.entry
        result = PARSERS[job.source](Path(job.ws_root) / f.raw_rel, start=e["parse_offset"],
                                     first_line=e["parse_line"], start_index=e["next_index"],
                                     protocol=e["protocol"], stop=e["archived"])
        new = turn_rows(job.ws_id, job.source, job.session_id, f.agent, f.raw_rel, result.turns,
                        job.own_agents, summarizer)
        rows += new
        first = result.turns[0] if result.turns else None
        if title is None and first is not None and first.index == 0 and f.agent == "main":
            title = shorten(first.user_text, 60)
        files.append(FileOutcome(
            keys=[(r["agent"], r["turn"]) for r in new],
            entry_update={"parse_offset": result.resume_offset, "parse_line": result.resume_line,
                          "next_index": result.resume_index, "protocol": result.protocol_version,
                          "open_turn": next((t.index for t in result.turns if t.end == "open"), None)},
            problems=[(p.line, p.kind, p.error) for p in result.problems],
            unknown_types=result.unknown_types))
    shown = redact(title)[0] if title else None
    for r in rows:
        r["title"] = shown
    if rows:
        ws = Workspace(job.ws_id, job.ws_name, root=Path(job.ws_root))
        store.merge_refined(ws, job.session_id, rows)
    items = [embed_item(r) for r in rows] if job.embed else []
    return SessionOutcome(files, title, len(rows), items)


def embed_item(row: dict[str, Any]) -> EmbedItem:
    return (row["agent"], row["turn"], row["content_hash"], embed_text(row))


def turn_rows(ws_id: str, source: str, session_id: str, agent: str, raw_rel: str,
              turns: list[Turn], own_agents: Set[str],
              summarizer: Summarizer | None) -> list[dict[str, Any]]:
    """Refined rows for parsed turns, plus subagent turns seen only inside the parent's log."""
    ctx = RefineContext(ws_id, source, session_id, agent, raw_rel)
    rows = [refine_turn(t, ctx, summarizer) for t in turns]
    for t in turns:
        for agent_id, run in t.subagents.items():
            if agent_id in own_agents:
                continue  # its own wire.jsonl is archived: never count it twice
            sub_ctx = RefineContext(ws_id, source, session_id, agent_id, raw_rel)
            rows += [refine_turn(st, sub_ctx, summarizer) for st in run.turns]
    return rows


def embed_rows(ws: Workspace, embedder: Embedder, pending: list[tuple[str, list[EmbedItem]]],
               progress: Progress | None = None, force: bool = False) -> int:
    """Embed turns whose content changed since they were last embedded; returns how many."""
    todo: list[tuple[str, EmbedItem]] = []
    for session_id, items in pending:
        have = {} if force else store.embedded_hashes(ws, session_id, embedder.name)
        todo += [(session_id, it) for it in items if have.get((it[0], it[1])) != it[2]]
    done = 0
    for i in range(0, len(todo), EMBED_BATCH):
        batch = todo[i:i + EMBED_BATCH]
        vectors = embedder.embed([it[3] for _, it in batch])
        by_session: dict[str, list[int]] = {}
        for j, (sid, _) in enumerate(batch):
            by_session.setdefault(sid, []).append(j)
        for sid, idx in by_session.items():
            keys = [batch[j][1][:3] for j in idx]
            store.write_embeddings(ws, sid, embedder.name, keys, vectors[idx])
        done += len(batch)
        if progress:
            progress("embed", done, len(todo))
    return done


def _reason(exc: BaseException) -> str:
    """A one-line reason for a fault: its type and message, cut short."""
    if isinstance(exc, OSError):
        return _os_reason(exc)
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "source disappeared before it could be read; nothing archived from it this time"
    if isinstance(exc, PermissionError):
        return "permission denied; fix the file's permissions and ingest again"
    return f"could not read: {exc}"
