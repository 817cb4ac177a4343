"""Ingest: copy raw logs into the archive by byte offset, then refine and embed new turns.

The archived copy in `raw/` is the source of truth that byte ranges point into; it only ever
grows by whole lines. Per raw file, `state/ingest.json` keeps the source's size, mtime and head
hash (to spot an unchanged or rewritten source), the archived high-water mark, and where parsing
resumes (the start of the turn that may still change).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from archive_mcp.errors import ArchiveError, DiskFull, stop_if_full
from archive_mcp.ingest import store
from archive_mcp.ingest import workers as _workers
from archive_mcp.ingest.exclude import Excluder
from archive_mcp.ingest.jobs import (
    EMBED_BATCH,
    EmbedItem,
    FileJob,
    Progress,
    SessionJob,
    SessionOutcome,
    failed_session,
    guarded_session_job,
)
from archive_mcp.ingest.jobs import os_reason as _os_reason
from archive_mcp.ingest.jobs import reason as _reason
from archive_mcp.ingest.merge import finish_merges
from archive_mcp.ingest.purged import PurgedSessions
from archive_mcp.ingest.raw import DIR_MODE, NotWhole, Parse, archive_file, snapshot_file
from archive_mcp.ingest.runners import Engine, LocalEngine
from archive_mcp.refiners import PARSERS, SessionSource, discover
from archive_mcp.refiners.embed import Embedder
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.refiners.sources import printable
from archive_mcp.workspaces import (
    Registry,
    Workspace,
    atomic_write_json,
    canonical_path,
    clean_orphans,
    locked,
    merge_command,
    read_json,
    safe_id,
    workspace_id,
    worktree_home,
)

EMBED_FLUSH = 8 * EMBED_BATCH  # embed and drop pending payloads once this many have arrived

_clock = time.monotonic  # the run's wall time; tests pin it
_tick = time.monotonic  # when checkpoints are due; tests pin it
STOP = threading.Event()  # set by SIGTERM during `stop_on_sigterm`: ingests stop at a session's end


class Stopped(ArchiveError):
    """An ingest stopped on request (SIGTERM) after saving its state."""


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """While inside, SIGTERM asks a running ingest to stop: it saves its state at the end of the
    session it is on and raises `Stopped` (a second SIGTERM ends the process at once). Only from
    the main thread (elsewhere this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def ask(signum: int, frame: object) -> None:
        if STOP.is_set():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
        STOP.set()

    previous = signal.signal(signal.SIGTERM, ask)
    STOP.clear()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        STOP.clear()


@dataclass
class Skip:
    path: str  # printable: bytes of a file name that are not UTF-8 as `\xNN`
    reason: str
    line: int | None = None

    def __post_init__(self) -> None:
        self.path = printable(self.path)


@dataclass
class IngestReport:
    files: int = 0
    files_changed: int = 0
    bytes_archived: int = 0
    sessions: int = 0
    turns_added: int = 0
    turns_updated: int = 0
    embedded: int = 0
    excluded: int = 0  # sessions not archived: their work dir is under an excluded path
    purged: int = 0  # sessions not archived again: the user purged them (`sessions unpurge`)
    workspaces: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)  # workspaces this run made, by name
    seconds: float = 0.0  # wall time of the run
    skipped: list[Skip] = field(default_factory=list)
    unknown_types: dict[str, int] = field(default_factory=dict)
    embed_error: str | None = None
    roots: list[dict[str, Any]] = field(
        default_factory=list
    )  # default roots looked at: path, found
    suggestions: list[str] = field(
        default_factory=list
    )  # worktrees to link into their repo's workspace

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Ingestor:
    def __init__(
        self,
        registry: Registry,
        embedder: Embedder | None,
        summarizer: Summarizer | None = None,
        progress: Progress | None = None,
        workers: int | None = None,
        engine: Engine | None = None,
        exclude: Sequence[str] = (),
        include_purged: bool = False,
    ) -> None:
        self.registry = registry
        self.exclude = Excluder(exclude)
        self.purged = PurgedSessions(registry.home)
        self.include_purged = include_purged  # archive purged sessions and re-admit them
        self._total = self._done = 0
        self.embedder = embedder
        self.summarizer = summarizer
        self.progress = progress or (lambda label, done, total: None)
        self.engine = engine or LocalEngine(workers, embedder, self.progress)
        self._linked: dict[str, str] = {}  # canonical path -> workspace id it is linked into

    # --- discovery -------------------------------------------------------------------------
    def ingest(self, paths: Iterable[Path]) -> IngestReport:
        """Archive every session under `paths`. A fault in one session (discovery, parsing,
        refining) is reported and skips that session only, without advancing its state, so the
        rest is archived and a later run retries it. A full or read-only disk is no fault of a
        session: the ingest stops with `DiskFull`, its state as last saved. Each workspace is
        locked only while its own sessions are archived and its state saved."""
        report, start = IngestReport(), _clock()
        finish_merges(self.registry)  # a merge cut short is finished before anything lands
        by_ws: dict[str, tuple[str | None, list[SessionSource]]] = {}
        purged = self.purged.matcher()
        self._linked = {p: ws.id for ws in self.registry.all() for p in ws.paths}
        seen: set[tuple[str, str]] = set()  # a session reached through two homes (a link): once
        for path in paths:
            try:
                found = discover(Path(path))
            except Exception as exc:  # noqa: BLE001 - one unreadable root must not stop the others
                report.skipped.append(
                    Skip(str(path), f"could not look for sessions: {_reason(exc)}")
                )
                continue
            report.skipped += [Skip(p, r) for p, r in found.skipped]
            for session in found.sessions:
                if (key := _seen_as(session)) in seen:
                    continue
                seen.add(key)
                ws_id, work_dir = self._identify(session)
                if self.exclude.match(work_dir):
                    report.excluded += 1  # never copied into raw/, no workspace made for it
                    continue
                if purged.holds(session) and not self._readmit(session):
                    report.purged += 1
                    continue
                by_ws.setdefault(ws_id, (work_dir, []))[1].append(session)
        report.suggestions = self._suggest_links(by_ws)
        self._total = sum(len(s.files) for _, ss in by_ws.values() for s in ss)
        self._done = 0
        try:
            for ws_id, (work_dir, sessions) in sorted(by_ws.items()):
                try:
                    new = self.registry.get(ws_id) is None
                    ws = self.registry.ensure(ws_id, path=work_dir, source=sessions[0].source)
                    for source in sorted({s.source for s in sessions} - set(ws.sources)):
                        ws = self.registry.ensure(ws_id, source=source)
                except OSError as exc:
                    _stop_if_full(exc)
                    report.skipped += [
                        Skip(str(s.session_dir), f"workspace {ws_id}: {_reason(exc)}")
                        for s in sessions
                    ]
                    continue
                report.workspaces.append(ws.id)
                if new:
                    report.created.append(ws.name)
                try:
                    with locked(ws.root):  # released as soon as this workspace's state is saved
                        try:
                            self._ingest_workspace(ws, sessions, report)
                        except BaseException:
                            self.engine.close()  # remote work stops before the lock is released
                            raise
                except Exception as exc:  # noqa: BLE001 - a folder gone: the next still run
                    _stop_if_full(exc)  # but none of them could be written on a full disk
                    if not isinstance(exc, OSError):
                        raise
                    report.skipped.append(Skip(str(ws.root), f"workspace {ws_id}: {_reason(exc)}"))
        finally:
            self.engine.close()
            report.seconds = round(_clock() - start, 1)
        return report

    def _ingest_workspace(
        self, ws: Workspace, sessions: list[SessionSource], report: IngestReport
    ) -> None:
        clean_orphans(ws.root)
        if ws.raw_dir.is_dir():
            ws.raw_dir.chmod(DIR_MODE)
        state = read_json(ws.state_dir / "ingest.json", {}) or {}
        state.setdefault("files", {})
        state.setdefault("sessions", {})
        saved = json.dumps(state, sort_keys=True)  # the state as read, to skip an unchanged write
        # Files a stopped run copied but did not refine: raw path -> their entry before that copy.
        unrefined: dict[str, Any] = state.setdefault("unrefined", {})
        resumed = dict(unrefined)
        mark = Checkpoint(ws.state_dir / "ingest.json", state)
        jobs: list[SessionJob] = []
        purged = self.purged.matcher()  # again under the lock: a purge may have landed since
        for session in sessions:
            if purged.holds(session) and not self._readmit(session):
                report.purged += 1
                continue
            try:
                job = self._archive_session(ws, session, state, report, resumed)
            except Exception as exc:  # noqa: BLE001 - a fault stays inside its session
                _stop_if_full(exc)
                report.skipped.append(
                    Skip(str(session.session_dir), f"session skipped: {_reason(exc)}")
                )
                job = None
            if job is not None:
                jobs.append(job)
                unrefined.update((f.raw_rel, f.before) for f in job.files)
            self._done += len(session.files)
            self.progress("archive", self._done, self._total)
            mark.now_and_then()
            if STOP.is_set():
                mark.stop()
        # Outcomes stream in job order; embedding payloads are flushed in batches, so memory
        # stays bounded however many turns arrive (a 1M-turn ingest held them all before).
        pending: list[tuple[str, list[EmbedItem]]] = []
        waiting = 0
        size = sum(f.entry["archived"] - f.entry["parse_offset"] for j in jobs for f in j.files)
        for job, res in zip(jobs, self._run_jobs(jobs, size), strict=True):
            self._apply(job, res, state, report)
            for f in job.files:
                unrefined.pop(f.raw_rel, None)
            if res.embed_items:
                pending.append((job.session_id, res.embed_items))
            waiting += len(res.embed_items)
            if waiting >= EMBED_FLUSH:
                self._embed(ws, pending, report)
                pending, waiting = [], 0
            if mark.due() or STOP.is_set():  # what the saved state says is refined is embedded
                self._embed(ws, pending, report)
                pending, waiting = [], 0
                self._finish_embeddings(report)
                mark.save()
                if STOP.is_set():
                    mark.stop()
        self._embed(ws, pending, report)
        self._finish_embeddings(report)  # every embedding of this workspace, before unlocking
        if not unrefined:
            del state["unrefined"]
        if json.dumps(state, sort_keys=True) != saved:  # a no-op run writes nothing
            mark.save()

    def _readmit(self, session: SessionSource) -> bool:
        """With `include_purged`, forget that `session` was purged (True): it is archived again."""
        if self.include_purged:
            self.purged.forget(session.session_id, exact=True)
        return self.include_purged

    def _finish_embeddings(self, report: IngestReport) -> None:
        embedded, error = self.engine.finish()
        report.embedded += embedded
        report.embed_error = report.embed_error or error

    def _identify(self, session: SessionSource) -> tuple[str, str | None]:
        """Workspace id and work dir: md5 of the canonical work dir.

        Python-Kimi buckets are already md5(work dir) and Gemini's hash buckets sha256(work dir):
        a candidate is kept only when it reproduces the bucket (for Gemini, any path already
        archived may). A session whose work dir is unknown is archived under its bucket.
        """
        for wd in session.work_dirs:
            if session.source == "kimi" and workspace_id(wd) != session.bucket:
                continue
            if (
                session.source == "gemini"
                and _is_sha256(session.bucket)
                and _sha256(wd) != session.bucket
            ):
                continue
            # A path linked into another workspace (a worktree into its repo's) goes there.
            return self._linked.get(canonical_path(wd), workspace_id(wd)), wd
        if session.source == "gemini" and _is_sha256(session.bucket):
            for ws in self.registry.all():
                for wd in ws.paths:
                    if _sha256(wd) == session.bucket:  # a merged-in path goes where it went
                        return ws.id, wd
        return safe_id(
            session.bucket
        ), None  # a bucket name outside the safe alphabet: a derived id

    def _suggest_links(self, by_ws: dict[str, tuple[str | None, list[SessionSource]]]) -> list[str]:
        """Work dirs that look like a worktree or branch checkout of another archived path."""
        known = {p: ws_id for p, ws_id in self._linked.items()}
        known.update({wd: ws_id for ws_id, (wd, _) in by_ws.items() if wd})
        out: list[str] = []
        paired: set[frozenset[str]] = set()
        for ws_id, (wd, _) in sorted(by_ws.items()):
            home = (
                worktree_home(wd, known)
                if wd and self._linked.get(canonical_path(wd)) is None
                else None
            )
            if home is None:
                continue
            pair = frozenset((ws_id, known[home]))
            if known[home] != ws_id and pair not in paired:  # one hint per pair
                paired.add(pair)
                out.append(
                    f"{wd} looks like a worktree or branch of {home}: "
                    f"`{merge_command(ws_id, known[home])}` joins their sessions"
                )
        return out

    # --- one session: copy new bytes, then parse and refine what changed --------------------
    def _archive_session(
        self,
        ws: Workspace,
        session: SessionSource,
        state: dict[str, Any],
        report: IngestReport,
        resumed: dict[str, Any],
    ) -> SessionJob | None:
        """Copy the session's new bytes; its job when there is something to refine: bytes copied
        now, or by a stopped run whose checkpoint lists them in `resumed` (not copied again)."""
        prefix = f"raw/{session.source}/{store.session_file_stem(session.session_id)}"
        snaps = state.setdefault("snapshots", {})
        for snap in session.snapshots:
            self._snapshot(ws, snap.path, f"{prefix}/{snap.rel}", snaps, report)
        meta = state["sessions"].setdefault(session.session_id, {"source": session.source})
        if session.title:
            meta["title"] = redact(session.title)[0]
        own_agents = frozenset(f.agent for f in session.files)
        files: list[FileJob] = []
        for f in session.files:
            raw_rel = f"{prefix}/{f.rel}"
            entry = state["files"].setdefault(
                raw_rel,
                {
                    "source_path": str(f.path),
                    "session": session.session_id,
                    "agent": f.agent,
                    "source": session.source,
                    "archived": 0,
                    "parse_offset": 0,
                    "parse_line": 1,
                    "next_index": 0,
                    "protocol": None,
                    "open_turn": None,
                },
            )
            before = dict(entry)
            report.files += 1
            if f.whole:  # rewritten in place: copy it whole and parse it from the start
                parse = PARSERS[session.source]  # a copy caught mid-rewrite keeps the last good one
                changed = self._snapshot(ws, f.path, raw_rel, snaps, report, parse)
                dst = ws.root / raw_rel
                # A copy whose refine failed last time (state restored) is refined again too.
                if dst.exists() and (changed or entry["archived"] != dst.stat().st_size):
                    size = dst.stat().st_size
                    report.bytes_archived += size
                    entry.update(archived=size, parse_offset=0, parse_line=1, next_index=0)
                    report.files_changed += 1
                    files.append(FileJob(f.agent, raw_rel, dict(entry), before))
                elif dst.exists() and raw_rel in resumed:
                    files.append(FileJob(f.agent, raw_rel, dict(entry), resumed[raw_rel]))
                continue
            try:
                added = archive_file(
                    f.path, ws.root / raw_rel, ws.raw_dir, entry, _skipper(report, f.path)
                )
            except OSError as exc:
                _stop_if_full(exc)
                report.skipped.append(Skip(str(f.path), _os_reason(exc)))
                continue
            report.bytes_archived += added
            if added:
                report.files_changed += 1
            if added or raw_rel in resumed:
                files.append(FileJob(f.agent, raw_rel, dict(entry), resumed.get(raw_rel, before)))
        if not files:
            return None
        return SessionJob(
            ws.id,
            ws.name,
            str(ws.root),
            session.source,
            session.session_id,
            meta.get("title"),
            files,
            own_agents,
            self.embedder is not None,
        )

    def _run_jobs(self, jobs: list[SessionJob], size: int) -> Iterator[SessionOutcome]:
        """Parse, refine and write each changed session on the engine, outcomes in job order; a
        fault (also a worker lost for good) is an outcome with `error`."""
        if self.summarizer is not None:  # the summarizer lives in this process
            summarizer = self.summarizer
            return self.engine.run(
                lambda job: guarded_session_job(job, summarizer), jobs, False, _rows, _failed
            )
        return self.engine.run(
            guarded_session_job, jobs, size >= _workers.PARALLEL_BYTES, _rows, _failed
        )

    def _apply(
        self, job: SessionJob, res: SessionOutcome, state: dict[str, Any], report: IngestReport
    ) -> None:
        """Record what a session's job did in the ingest state and the report."""
        if res.full is not None:  # the state is left as saved: the next run redoes this one
            raise DiskFull(res.full)
        if res.error is not None:  # nothing of this session advances: the next run retries it
            for fjob in job.files:
                state["files"][fjob.raw_rel] = fjob.before
                if fjob.raw_rel in state.get(
                    "snapshots", {}
                ):  # a whole-file copy: copy and refine again
                    del state["snapshots"][fjob.raw_rel]
                    state["files"][fjob.raw_rel] = {**fjob.before, "archived": 0}
            report.skipped.append(
                Skip(job.files[0].entry["source_path"], f"session skipped: {res.error}")
            )
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

    def _snapshot(
        self,
        ws: Workspace,
        src: Path,
        rel: str,
        seen: dict[str, list[int]],
        report: IngestReport,
        parse: Parse | None = None,
    ) -> bool:
        """Whole-file copies (state.json, meta.json, offloaded tool outputs, Gemini's rewritten
        JSON chats); rewritten atomically (0600) when changed. True when the copy changed. A
        session file (`parse`) caught mid-rewrite keeps its archived copy and is not marked
        seen: the next run reads it again."""
        try:
            st = os.stat(src)
            if seen.get(rel) == [st.st_size, st.st_mtime_ns] and (ws.root / rel).exists():
                return False
            changed = snapshot_file(src, ws.root / rel, ws.raw_dir, durable=False, parse=parse)
        except OSError as exc:
            _stop_if_full(exc)
            line = exc.line if isinstance(exc, NotWhole) else None
            report.skipped.append(Skip(str(src), _os_reason(exc), line))
            return False
        seen[rel] = [st.st_size, st.st_mtime_ns]
        return changed

    # --- embeddings ------------------------------------------------------------------------
    def _embed(
        self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]], report: IngestReport
    ) -> None:
        if self.embedder is not None and pending:
            self.engine.embed(ws, pending)


CHECKPOINT_S = 15.0  # a large workspace's state is saved at least this often while it ingests
CHECKPOINT_SHARE = 0.1  # and saving takes at most this share of the time (the state grows)


class Checkpoint:
    """Saves a workspace's ingest state now and then while it ingests, so a stopped run (SIGKILL,
    power loss) resumes where the last save left off: what was copied is not copied again, and
    what was copied but not refined (`unrefined`) is refined. Each save rewrites the whole state
    (atomically), so saves are spaced by `CHECKPOINT_S`, or by `1 / CHECKPOINT_SHARE` times the
    last save's duration when that is longer: their cost stays a flat share of the run's."""

    def __init__(self, path: Path, state: dict[str, Any]) -> None:
        self.path, self.state = path, state
        self.last = _tick()
        self.gap = CHECKPOINT_S

    def due(self) -> bool:
        return _tick() - self.last >= self.gap

    def now_and_then(self) -> None:
        if self.due():
            self.save()

    def stop(self) -> None:
        self.save()
        raise Stopped(
            "ingest stopped (SIGTERM) with its state saved; run it again to resume where it stopped"
        )

    def save(self) -> None:
        t = _tick()
        atomic_write_json(self.path, self.state)
        self.last = _tick()
        self.gap = max(CHECKPOINT_S, (self.last - t) / CHECKPOINT_SHARE)


def _stop_if_full(exc: BaseException) -> None:
    """A full (or read-only) disk stops the ingest: it is no fault of the session being written.
    Nothing more is saved; a run after space is freed resumes from the last saved state, as
    after a kill (`Checkpoint`), and ends equal to a clean ingest."""
    stop_if_full(exc)


def _sha256(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _skipper(report: IngestReport, src: Path) -> Callable[[str], None]:
    """Report a reason for skipping (part of) `src`."""
    return lambda why: report.skipped.append(Skip(str(src), why))


def _rows(res: SessionOutcome) -> int:
    return res.rows


def _failed(job: SessionJob, exc: BaseException) -> SessionOutcome:
    return failed_session(exc)


def _seen_as(session: SessionSource) -> tuple[str, str]:
    """A session's identity across homes: its source and the real path of its first file (the
    same log seen through `~/.claude` and a `~/.config/claude` linked to it is one session)."""
    first = session.files[0].path if session.files else session.session_dir
    return session.source, os.path.realpath(first)
