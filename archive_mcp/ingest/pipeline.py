"""Ingest: copy raw logs into the archive by byte offset, then refine and embed new turns.

The archived copy in `raw/` is the source of truth that byte ranges point into; it only ever
grows by whole lines. Per raw file, `state/ingest.json` keeps the source's size, mtime and head
hash (to spot an unchanged or rewritten source), the archived high-water mark, and where parsing
resumes (the start of the turn that may still change).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Protocol, TypeVar

from archive_mcp.ingest import store
from archive_mcp.refiners import PARSERS, RefineContext, SessionSource, Turn, discover, refine_turn
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable
from archive_mcp.refiners.lines import complete_prefix
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.refiners.text import shorten
from archive_mcp.workspaces import (
    Registry,
    Workspace,
    atomic_write_bytes,
    atomic_write_json,
    locked,
    read_json,
    workspace_id,
)

HEAD = 4096
CHUNK = 1 << 20
EMBED_BATCH = 2048
EMBED_FLUSH = 8 * EMBED_BATCH  # embed and drop pending payloads once this many have arrived
PARALLEL_BYTES = 32 << 20  # below this, starting worker processes costs more than it saves

Progress = Callable[[str, int, int], None]  # (label, done, total)
J = TypeVar("J")
R = TypeVar("R")


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
                 workers: int | None = None, engine: Engine | None = None) -> None:
        self.registry = registry
        self.embedder = embedder
        self.summarizer = summarizer
        self.progress = progress or (lambda label, done, total: None)
        self.engine = engine or LocalEngine(workers, embedder, self.progress)

    # --- discovery -------------------------------------------------------------------------
    def ingest(self, paths: Iterable[Path]) -> IngestReport:
        report = IngestReport()
        by_ws: dict[str, tuple[str | None, list[SessionSource]]] = {}
        for path in paths:
            found = discover(Path(path))
            report.skipped += [Skip(p, r) for p, r in found.skipped]
            for session in found.sessions:
                ws_id, work_dir = self._identify(session)
                by_ws.setdefault(ws_id, (work_dir, []))[1].append(session)
        total = sum(len(s.files) for _, ss in by_ws.values() for s in ss)
        done = 0
        with ExitStack() as held:  # every touched workspace stays locked until its state is saved
            plan: list[tuple[Workspace, dict[str, Any], list[SessionJob]]] = []
            for ws_id, (work_dir, sessions) in sorted(by_ws.items()):
                ws = self.registry.ensure(ws_id, path=work_dir, source=sessions[0].source)
                report.workspaces.append(ws.id)
                held.enter_context(locked(ws.root))
                state = read_json(ws.state_dir / "ingest.json", {}) or {}
                state.setdefault("files", {})
                state.setdefault("sessions", {})
                jobs: list[SessionJob] = []
                for session in sessions:
                    job = self._archive_session(ws, session, state, report)
                    if job is not None:
                        jobs.append(job)
                    done += len(session.files)
                    self.progress("archive", done, total)
                plan.append((ws, state, jobs))
            # Outcomes stream in job order; embedding payloads are flushed in batches, so memory
            # stays bounded however many turns arrive (a 1M-turn ingest held them all before).
            held.callback(self.engine.close)  # unwinds first: remote work stops before any unlock
            outcomes = self._run_jobs([j for _, _, jobs in plan for j in jobs])
            for ws, state, jobs in plan:
                pending: list[tuple[str, list[EmbedItem]]] = []
                waiting = 0
                for job in jobs:
                    res = next(outcomes)
                    self._apply(job, res, state, report)
                    if res.embed_items:
                        pending.append((job.session_id, res.embed_items))
                    waiting += len(res.embed_items)
                    if waiting >= EMBED_FLUSH:
                        self._embed(ws, pending, report)
                        pending, waiting = [], 0
                self._embed(ws, pending, report)
                atomic_write_json(ws.state_dir / "ingest.json", state)
            report.embedded, report.embed_error = self.engine.finish()  # waits for every embedding
        return report

    def _identify(self, session: SessionSource) -> tuple[str, str | None]:
        """Workspace id and work dir: Python-Kimi buckets are already md5(work dir)."""
        for wd in session.work_dirs:
            if session.source == "kimi-code" or workspace_id(wd) == session.bucket:
                return workspace_id(wd), wd
        return session.bucket, None

    # --- one session: copy new bytes, then parse and refine what changed --------------------
    def _archive_session(self, ws: Workspace, session: SessionSource, state: dict[str, Any],
                         report: IngestReport) -> SessionJob | None:
        prefix = f"raw/{session.source}/{store.session_file_stem(session.session_id)}"
        for snap in session.snapshots:
            self._snapshot(ws, snap.path, f"{prefix}/{snap.rel}", report)
        meta = state["sessions"].setdefault(session.session_id, {"source": session.source})
        if session.title:
            meta["title"] = session.title
        own_agents = frozenset(f.agent for f in session.files)
        files: list[FileJob] = []
        for f in session.files:
            raw_rel = f"{prefix}/{f.rel}"
            entry = state["files"].setdefault(raw_rel, {
                "source_path": str(f.path), "session": session.session_id, "agent": f.agent,
                "source": session.source, "archived": 0, "parse_offset": 0, "parse_line": 1,
                "next_index": 0, "protocol": None, "open_turn": None})
            report.files += 1
            try:
                changed = self._archive(f.path, ws.root / raw_rel, entry, report)
            except OSError as exc:
                report.skipped.append(Skip(str(f.path), _os_reason(exc)))
                continue
            if changed:
                report.files_changed += 1
                files.append(FileJob(f.agent, raw_rel, dict(entry)))
        if not files:
            return None
        return SessionJob(ws.id, ws.name, str(ws.root), session.source, session.session_id,
                          meta.get("title"), files, own_agents, self.embedder is not None)

    def _run_jobs(self, jobs: list[SessionJob]) -> Iterator[SessionOutcome]:
        """Parse, refine and write each changed session, yielding outcomes in job order; in
        worker processes (or on a cluster) when there is a lot to do."""
        new_bytes = sum(f.entry["archived"] - f.entry["parse_offset"] for j in jobs for f in j.files)
        if self.summarizer is not None:  # the summarizer lives in this process
            return self.engine.run(lambda job: run_session_job(job, self.summarizer), jobs, False,
                                   lambda res: res.rows)
        return self.engine.run(run_session_job, jobs, new_bytes >= PARALLEL_BYTES, lambda res: res.rows)

    def _apply(self, job: SessionJob, res: SessionOutcome, state: dict[str, Any], report: IngestReport) -> None:
        """Record what a session's job did in the ingest state and the report."""
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
            state["sessions"][job.session_id]["title"] = res.title
        if res.rows:
            report.sessions += 1

    def _archive(self, src: Path, dst: Path, entry: dict[str, Any], report: IngestReport) -> bool:
        """Append the source's new whole lines to the archived copy; True when bytes were added."""
        st = os.stat(src)
        if st.st_size == entry.get("size") and st.st_mtime_ns == entry.get("mtime_ns"):
            return False
        archived = int(entry["archived"])
        if dst.exists() and dst.stat().st_size > archived:  # a crash after append, before state
            os.truncate(dst, archived)
        with open(src, "rb") as fh:
            if archived:
                head = fh.read(int(entry["head_len"]))
                if hashlib.sha1(head).hexdigest() != entry["head"] or st.st_size < archived:
                    report.skipped.append(Skip(str(src), "source was rewritten or truncated since it "
                                               "was archived; the archived copy is kept unchanged"))
                    entry["size"], entry["mtime_ns"] = st.st_size, st.st_mtime_ns
                    return False
            end = complete_prefix(src, archived, st.st_size)
            if end > archived:
                dst.parent.mkdir(parents=True, exist_ok=True)
                fh.seek(archived)
                try:
                    with open(dst, "ab") as out:
                        left = end - archived
                        while left:
                            chunk = fh.read(min(CHUNK, left))
                            if not chunk:
                                raise OSError(f"{src} shrank while it was being archived")
                            out.write(chunk)
                            left -= len(chunk)
                        out.flush()
                        os.fsync(out.fileno())
                except BaseException:
                    if dst.exists():
                        os.truncate(dst, archived)
                    raise
            if archived < HEAD and end > archived:
                fh.seek(0)
                head = fh.read(min(HEAD, end))
                entry["head"], entry["head_len"] = hashlib.sha1(head).hexdigest(), len(head)
        entry["size"], entry["mtime_ns"] = st.st_size, st.st_mtime_ns
        if end < st.st_size:
            report.skipped.append(Skip(str(src), "last line is incomplete (the session is still being "
                                       "written); it is archived once it is complete"))
        report.bytes_archived += end - archived
        entry["archived"] = end
        return end > archived

    def _snapshot(self, ws: Workspace, src: Path, rel: str, report: IngestReport) -> None:
        """Small whole-file copies (state.json, meta.json); rewritten atomically when changed."""
        try:
            data = src.read_bytes()
        except OSError as exc:
            report.skipped.append(Skip(str(src), _os_reason(exc)))
            return
        dst = ws.root / rel
        if not dst.exists() or dst.read_bytes() != data:
            atomic_write_bytes(dst, data)

    # --- embeddings ------------------------------------------------------------------------
    def _embed(self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]],
               report: IngestReport) -> None:
        if self.embedder is not None and pending:
            self.engine.embed(ws, pending)


class Engine(Protocol):
    """Where session jobs run and turns are embedded: `LocalEngine` (this machine's processes)
    or `archive_mcp.ingest.ray_engine.RayEngine` (a Ray cluster). The caller (the driver) keeps
    the workspace locks and the ingest state; jobs write their session's Parquet files."""

    def run(self, fn: Callable[[J], R], jobs: Sequence[J], parallel: bool,
            turns: Callable[[R], int]) -> Iterator[R]:
        """Results of `fn(job)` in job order; `parallel` says the batch is worth spreading out."""
        ...

    def embed(self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]], force: bool = False) -> None:
        """Embed (possibly later, elsewhere) turns whose content changed since their last vector."""
        ...

    def finish(self) -> tuple[int, str | None]:
        """Wait for every embedding asked for; (turns embedded, the first embedding error)."""
        ...

    def close(self) -> None:
        """Release what the engine started (worker pools, a Ray instance it started itself)."""
        ...


class LocalEngine:
    """Jobs in spawned worker processes on this machine (inline when small); embeddings inline."""

    def __init__(self, workers: int | None, embedder: Embedder | None, progress: Progress) -> None:
        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        self.embedder = embedder
        self.progress = progress
        self.embedded = 0
        self.error: str | None = None

    def run(self, fn: Callable[[J], R], jobs: Sequence[J], parallel: bool,
            turns: Callable[[R], int]) -> Iterator[R]:
        meter = Meter(self.progress, "refine", len(jobs))
        if parallel and len(jobs) > 1 and self.workers > 1:
            with ProcessPoolExecutor(self.workers, mp_context=get_context("spawn")) as pool:
                for res in pool.map(fn, jobs, chunksize=4):
                    meter.tick(turns(res))
                    yield res
            return
        for job in jobs:
            res = fn(job)
            meter.tick(turns(res))
            yield res

    def embed(self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]], force: bool = False) -> None:
        if self.embedder is None or not pending or self.error:
            return
        try:
            self.embedded += embed_rows(ws, self.embedder, pending, self.progress, force=force)
        except EmbedderUnavailable as exc:
            self.error = str(exc)

    def finish(self) -> tuple[int, str | None]:
        done, self.embedded, error, self.error = self.embedded, 0, self.error, None
        return done, error

    def close(self) -> None:
        return None


class Meter:
    """Progress in sessions done / total, with the turns per second so far in the label."""

    def __init__(self, progress: Progress, label: str, total: int) -> None:
        self.progress, self.label, self.total = progress, label, total
        self.done = self.turns = 0
        self.start = time.monotonic()

    def tick(self, turns: int) -> None:
        self.done += 1
        self.turns += turns
        rate = self.turns / max(time.monotonic() - self.start, 1e-3)
        self.progress(f"{self.label} · {rate:,.0f} turns/s", self.done, self.total)


@dataclass
class FileJob:
    agent: str
    raw_rel: str
    entry: dict[str, Any]  # a copy of the file's ingest state: where parsing resumes


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


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "source disappeared before it could be read; nothing archived from it this time"
    if isinstance(exc, PermissionError):
        return "permission denied; fix the file's permissions and ingest again"
    return f"could not read: {exc}"
