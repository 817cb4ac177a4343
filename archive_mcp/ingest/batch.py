"""Batch refinement of archived sessions, one picklable job per session, on a chosen engine.

`refine_batch` (behind `Archive.refine`) is the driver: it holds the workspace locks and sends
one `RefineJob` per session to an engine (`LocalEngine`: this machine's processes; `RayEngine`: a
Ray cluster). A job reads the session's archived raw logs, refines every turn again when the
session is stale (no refined file, an older refiner, or `force`), writes the session's Parquet
atomically and returns what to embed; the engine embeds it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archive_mcp.errors import (
    REFINE_AGAIN,
    DiskFull,
    InvalidArgument,
    NotFound,
    disk_full,
    stop_if_full,
)
from archive_mcp.ingest import jobs as _jobs
from archive_mcp.ingest import store
from archive_mcp.ingest import workers as _workers
from archive_mcp.ingest.jobs import EmbedItem, Progress, embed_item, reason
from archive_mcp.ingest.pipeline import Ingestor, IngestReport, Skip
from archive_mcp.ingest.runners import Engine, LocalEngine
from archive_mcp.ingest.titles import NOT_A_REQUEST, request_title
from archive_mcp.refiners import PARSERS
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import REFINER, Summarizer
from archive_mcp.settings import exclude_setting
from archive_mcp.workspaces import Registry, Workspace, default_source_roots, locked, read_json

ENGINES = ("local", "ray")


@dataclass
class RefineReport:
    sessions: int = 0
    turns: int = 0
    rows_changed: int = (
        0  # refined rows whose summary, kinds, keywords or files changed (or are new)
    )
    embedded: int = 0
    skipped: list[Skip] = field(default_factory=list)
    embed_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def make_engine(
    kind: str,
    address: str | None,
    workers: int | None,
    *,
    embedder: Embedder | None,
    progress: Progress | None,
    summarizer: Summarizer | None,
    embedder_spec: Embedder | str | None,
) -> Engine:
    """`local` (the default: spawned processes on this machine) or `ray` (imported only here)."""
    progress = progress or (lambda label, done, total: None)
    if kind == "local":
        return LocalEngine(workers, embedder, progress)
    if kind == "ray":
        if summarizer is not None:
            raise InvalidArgument(
                "a summarizer runs in this process; the ray engine refines with the "
                "extractive summary only (use the local engine)"
            )
        from archive_mcp.ingest.ray_engine import RayEngine

        # Workers build a named model themselves (cached per machine); an object is shipped.
        spec = (
            None
            if embedder is None
            else embedder_spec
            if isinstance(embedder_spec, str)
            else embedder
        )
        return RayEngine(address, spec, progress, workers=workers)
    raise InvalidArgument(f"unknown engine {kind!r}; choose one of: {', '.join(ENGINES)}")


def refine_batch(
    plan: Sequence[tuple[Workspace, str, list[tuple[str, dict[str, Any]]]]],
    engine: Engine,
    report: RefineReport,
    *,
    force: bool = False,
    embed: bool = True,
    summarizer: Summarizer | None = None,
) -> RefineReport:
    """Refine and embed the planned (workspace, session, raw files) on `engine`, into `report`.
    A full or read-only disk stops the batch with `DiskFull` (no later session could be written
    either): what was refined and embedded before stays, and a run after the fix completes."""
    spaces = {ws.id: ws for ws, _, _ in plan}
    titles = {ws_id: _session_meta(ws) for ws_id, ws in spaces.items()}  # read once per workspace
    jobs = [
        RefineJob(
            ws.id,
            ws.name,
            str(ws.root),
            sid,
            files,
            titles[ws.id].get(sid, {}).get("title"),
            force,
            embed,
        )
        for ws, sid, files in plan
    ]
    size = sum(int(e.get("archived", 0)) for _, _, files in plan for _, e in files)
    big = size >= _workers.PARALLEL_BYTES
    with ExitStack() as held:  # the driver alone locks; jobs write only their session's files
        for ws_id in sorted(spaces):
            held.enter_context(locked(spaces[ws_id].root))
        held.callback(engine.close)  # on any exit, remote work stops before the locks are released
        outcomes = (
            engine.run(guarded_refine_job, jobs, big, _turns, _failed)
            if summarizer is None
            else engine.run(
                lambda job: guarded_refine_job(job, summarizer), jobs, False, _turns, _failed
            )
        )
        try:
            for job, res in zip(jobs, outcomes, strict=True):
                if res.full is not None:
                    raise DiskFull(res.full)
                report.skipped += res.skipped
                report.rows_changed += res.rows_changed
                if res.turns:
                    report.turns += res.turns
                    report.sessions += 1
                if res.embed_items:
                    engine.embed(
                        spaces[job.ws_id], [(job.session_id, res.embed_items)], force=force
                    )
            report.embedded, error = engine.finish()
        except Exception as exc:
            stop_if_full(exc, REFINE_AGAIN)  # an embedding's write too
            raise
    report.embed_error = report.embed_error or error
    return report


def _session_meta(ws: Workspace) -> dict[str, Any]:
    return (read_json(ws.state_dir / "ingest.json", {}) or {}).get("sessions", {})


def _turns(outcome: RefineOutcome) -> int:
    return outcome.turns


def _failed(job: RefineJob, exc: BaseException) -> RefineOutcome:
    """A job that failed (also in a worker lost for good): its session is skipped, or, on a full
    disk, the outcome carries the line the batch stops with."""
    full = disk_full(exc, REFINE_AGAIN)
    skip = Skip(job.session_id, f"session skipped: {reason(exc)}")
    return RefineOutcome(0, [], [skip], full=str(full) if full else None)


@dataclass
class RefineJob:
    ws_id: str
    ws_name: str
    ws_root: str
    session_id: str
    files: list[tuple[str, dict[str, Any]]]  # (archive-relative raw path, its ingest state)
    title: str | None
    force: bool
    embed: bool

    def workspace(self) -> Workspace:
        return Workspace(self.ws_id, self.ws_name, root=Path(self.ws_root))


@dataclass
class RefineOutcome:
    turns: int  # rows written; 0 when the session was up to date
    embed_items: list[EmbedItem]
    skipped: list[Skip] = field(default_factory=list)
    rows_changed: int = 0
    full: str | None = None  # it failed for want of disk space: the batch stops (`DiskFull`)


def guarded_refine_job(job: RefineJob, summarizer: Summarizer | None = None) -> RefineOutcome:
    """`run_refine_job`, with a fault in one session reported and that session skipped."""
    try:
        return run_refine_job(job, summarizer)
    except Exception as exc:  # noqa: BLE001 - a fault stays inside its session
        return _failed(job, exc)


def run_refine_job(job: RefineJob, summarizer: Summarizer | None = None) -> RefineOutcome:
    """A summary the client's model wrote (refiner `…+sampling@1`) is kept while its turn's
    content is unchanged (`store.carry_over`)."""
    ws = job.workspace()
    current = store.read_refined(ws, job.session_id)
    stale = (
        job.force
        or current.height == 0
        or (current["refiner"].str.split("+").list.first() != REFINER).any()
    )
    skipped: list[Skip] = []
    changed = 0
    if stale:
        rows = refine_session(
            ws, job.session_id, job.files, title=job.title, skipped=skipped, summarizer=summarizer
        )
        if rows:
            changed = store.carry_over(current.to_dicts(), rows)
            store.merge_refined(ws, job.session_id, rows, replace_all=True)
    else:
        rows = current.to_dicts()
    items = [embed_item(r) for r in rows] if job.embed else []
    return RefineOutcome(len(rows) if stale and rows else 0, items, skipped, changed)


def refine_session(
    ws: Workspace,
    sid: str,
    files: list[tuple[str, dict[str, Any]]],
    *,
    title: str | None,
    skipped: list[Skip],
    summarizer: Summarizer | None = None,
) -> list[dict[str, Any]]:
    """Every turn of a session, refined from its archived raw logs."""
    title = redact(title)[0] if title else None
    own = {e["agent"] for _, e in files}
    rows: list[dict[str, Any]] = []
    for raw_rel, entry in files:
        path = ws.root / raw_rel
        if not path.exists():
            skipped.append(Skip(raw_rel, "archived raw log is missing"))
            continue
        result = PARSERS[entry["source"]](path, stop=entry["archived"])
        rows += _jobs.turn_rows(
            ws.id, entry["source"], sid, entry["agent"], raw_rel, result.turns, own, summarizer
        )
        if entry["agent"] == "main" and (not title or title.lstrip().startswith(NOT_A_REQUEST)):
            title = request_title(result.turns) or title  # an old "/clear" title heals here
    for r in rows:
        r["title"] = title
    return rows


def run_ingest(
    registry: Registry,
    paths: Sequence[str | os.PathLike[str]],
    *,
    embedder: Callable[[], Embedder | None],
    summarizer: Summarizer | None,
    embedder_spec: Embedder | str | None,
    progress: Progress | None,
    workers: int | None,
    engine: str,
    address: str | None,
    exclude: Sequence[str] | None = None,
    include_purged: bool = False,
) -> IngestReport:
    """Archive and refine the sessions under `paths` (default: every agent's home that exists)
    on the engine `engine` names; `report.roots` says which homes were looked at. Sessions whose
    work dir is under an `exclude` path or glob (default: the `exclude` setting) are skipped and
    counted (`report.excluded`); so are purged sessions (`report.purged`) unless
    `include_purged`, which archives them again and forgets that they were purged."""
    _workers.freeze_imports()  # parsing makes many small objects: collections cost less
    looked = [] if paths else default_source_roots()
    roots = [Path(p).expanduser() for p in paths] or [p for p in looked if p.exists()]
    vectors = embedder()
    runner = make_engine(
        engine,
        address,
        workers,
        embedder=vectors,
        progress=progress,
        summarizer=summarizer,
        embedder_spec=embedder_spec,
    )
    try:
        report = Ingestor(
            registry,
            vectors,
            summarizer,
            progress,
            workers,
            runner,
            exclude=exclude_setting()[0] if exclude is None else exclude,
            include_purged=include_purged,
        ).ingest(roots)
    finally:
        runner.close()
    report.roots = [{"path": str(p), "found": p.exists()} for p in looked]
    return report


def run_refine(
    selected: Sequence[Workspace],
    *,
    session: str | None,
    since: datetime | None,
    force: bool,
    embedder: Callable[[], Embedder | None] | None,
    summarizer: Summarizer | None,
    embedder_spec: Embedder | str | None,
    progress: Progress | None,
    engine: str,
    address: str | None,
    workers: int | None,
) -> RefineReport:
    """Refine the archived sessions of `selected` (only `session` when given, `NotFound` when none
    of them holds it; only those active since `since`) on `engine`; embed them when an `embedder` is given and can be loaded (else
    `report.embed_error` says why)."""
    _workers.freeze_imports()  # parsing makes many small objects: collections cost less
    report = RefineReport()
    plan = [
        (ws, sid, files)
        for ws in selected
        for sid, files in store.raw_files(ws).items()
        if session in (None, sid)
    ]
    if session is not None and not plan:  # every face says so the same way
        where = f"workspace {selected[0].name}" if len(selected) == 1 else "the archive"
        raise NotFound(f"no session {session!r} in {where}; list the sessions")
    if since is not None:
        cutoff = since if since.tzinfo else since.replace(tzinfo=UTC)
        plan = [p for p in plan if _last_activity(p[0], p[1], p[2]) >= cutoff]
    vectors = None
    if embedder is not None:
        try:
            vectors = embedder()
        except EmbedderUnavailable as exc:
            report.embed_error = str(exc)
    runner = make_engine(
        engine,
        address,
        workers,
        embedder=vectors,
        progress=progress,
        summarizer=summarizer,
        embedder_spec=embedder_spec,
    )
    try:
        refine_batch(
            plan, runner, report, force=force, embed=vectors is not None, summarizer=summarizer
        )
    finally:
        runner.close()
    return report


def _last_activity(ws: Workspace, sid: str, files: list[tuple[str, dict]]) -> datetime:
    df = store.read_refined(ws, sid)
    latest = df["started_at"].max() if df.height else None
    if isinstance(latest, datetime):
        return latest
    mtimes = [(ws.root / rel).stat().st_mtime for rel, _ in files if (ws.root / rel).exists()]
    return datetime.fromtimestamp(max(mtimes, default=0), UTC)
