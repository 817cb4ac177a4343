"""One session's ingest job (parse from the resume point, refine, write its Parquet) and the
embedding of refined turns. Jobs are picklable: large batches run them in worker processes."""

from __future__ import annotations

import errno
from collections.abc import Callable, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive_mcp.errors import disk_full
from archive_mcp.ingest import store
from archive_mcp.ingest.titles import request_title
from archive_mcp.refiners import PARSERS, RefineContext, Turn, refine_turn
from archive_mcp.refiners.answers import bare_number, picked
from archive_mcp.refiners.disk import Refused
from archive_mcp.refiners.embed import Embedder
from archive_mcp.refiners.model import ParseResult
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import Summarizer
from archive_mcp.refiners.text import shorten
from archive_mcp.workspaces import Workspace

EMBED_BATCH = 2048
Progress = Callable[[str, int, int], None]  # (label, done, total)


def embed_text(row: dict[str, Any]) -> str:
    """What a turn is embedded as: the request, the answer and the keywords.

    Not the summary: its fixed labels (Asked/Did/Outcome) pull every mean-pooled vector the same
    way; measured in bench/RESULTS.md (semantic R@5 0.58 -> 0.64 with the static model).
    """
    return f"{shorten(row['user_text'], 300)}\n{shorten(row['assistant_text'], 300)}\n{' '.join(row['keywords'])}"


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
    full: str | None = None  # it failed for want of disk space: the ingest stops (`DiskFull`)


EmbedItem = tuple[str, int, str, str]  # agent, turn, content hash, text to embed


def run_session_job(job: SessionJob, summarizer: Summarizer | None = None) -> SessionOutcome:
    """Parse each changed file from its resume point, refine the turns, write the session's Parquet."""
    rows: list[dict[str, Any]] = []
    files: list[FileOutcome] = []
    title = job.title
    for f in job.files:
        e = f.entry
        result = PARSERS[job.source](
            Path(job.ws_root) / f.raw_rel,
            start=e["parse_offset"],
            first_line=e["parse_line"],
            start_index=e["next_index"],
            protocol=e["protocol"],
            stop=e["archived"],
        )
        new = turn_rows(
            job.ws_id,
            job.source,
            job.session_id,
            f.agent,
            f.raw_rel,
            result.turns,
            job.own_agents,
            summarizer,
        )
        rows += new
        if title is None and f.agent == "main":
            title = request_title(result.turns)
        files.append(
            FileOutcome(
                keys=[(r["agent"], r["turn"]) for r in new],
                entry_update={
                    "parse_offset": result.resume_offset,
                    "parse_line": result.resume_line,
                    "next_index": result.resume_index,
                    "protocol": result.protocol_version,
                    "open_turn": again(result),
                },
                problems=[(p.line, p.kind, p.error) for p in result.problems],
                unknown_types=result.unknown_types,
            )
        )
    shown = redact(title)[0] if title else None
    for r in rows:
        r["title"] = shown
    if rows:
        ws = Workspace(job.ws_id, job.ws_name, root=Path(job.ws_root))
        # Every file of the session parsed from its start (a first ingest, or a whole-file
        # source such as a Gemini chat that a rewind can shorten): the rows replace the old ones.
        whole = {f.agent for f in job.files} == job.own_agents and all(
            f.entry["parse_offset"] == 0 for f in job.files
        )
        store.merge_refined(ws, job.session_id, rows, replace_all=whole)
    items = [embed_item(r) for r in rows] if job.embed else []
    return SessionOutcome(files, title, len(rows), items)


def again(result: ParseResult) -> int | None:
    """The turn the next read of the file starts with, when this read had it: its open turn, or a
    complete last turn read again with the next one (`lines._resume`). That turn is then updated,
    not added."""
    read = {t.index: t for t in result.turns}
    turn = read.get(result.resume_index)
    return turn.index if turn is not None and turn.byte_start == result.resume_offset else None


def guarded_session_job(job: SessionJob, summarizer: Summarizer | None = None) -> SessionOutcome:
    """`run_session_job`, with any fault turned into an outcome that names it (the session is
    then skipped and retried by the next ingest)."""
    try:
        return run_session_job(job, summarizer)
    except Exception as exc:  # noqa: BLE001 - a fault stays inside its session
        return failed_session(exc)


def failed_session(exc: BaseException) -> SessionOutcome:
    """The outcome of a session whose job failed with `exc` (also in a worker lost for good):
    skipped with its reason, or, on a full disk, the line the ingest stops with."""
    full = disk_full(exc)
    return SessionOutcome([], None, 0, [], reason(exc), str(full) if full else None)


def reason(exc: BaseException) -> str:
    """A one-line reason for a fault: its type and message, cut short."""
    if isinstance(exc, OSError):
        return os_reason(exc)
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def os_reason(exc: OSError) -> str:
    if isinstance(exc, Refused):
        return exc.why
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full; nothing of it was saved: free some space and ingest again"
    if isinstance(exc, FileNotFoundError):
        return "source disappeared before it could be read; nothing archived from it this time"
    if isinstance(exc, PermissionError):
        return "permission denied; fix the file's permissions and ingest again"
    return f"could not read: {exc}"


def embed_item(row: dict[str, Any]) -> EmbedItem:
    return (row["agent"], row["turn"], row["content_hash"], embed_text(row))


def turn_rows(
    ws_id: str,
    source: str,
    session_id: str,
    agent: str,
    raw_rel: str,
    turns: list[Turn],
    own_agents: Set[str],
    summarizer: Summarizer | None,
) -> list[dict[str, Any]]:
    """Refined rows for parsed turns, plus subagent turns seen only inside the parent's log."""
    ctx = RefineContext(ws_id, source, session_id, agent, raw_rel)
    add_picks(turns)
    after = [*turns[1:], None][: len(turns)]  # each turn's next, None for the last
    rows = [refine_turn(t, ctx, summarizer, n) for t, n in zip(turns, after, strict=True)]
    for t in turns:
        for agent_id, run in t.subagents.items():
            if agent_id in own_agents:
                continue  # its own wire.jsonl is archived: never count it twice
            sub_ctx = RefineContext(ws_id, source, session_id, agent_id, raw_rel)
            add_picks(run.turns)
            nexts = [*run.turns[1:], None][: len(run.turns)]
            rows += [
                refine_turn(st, sub_ctx, summarizer, n)
                for st, n in zip(run.turns, nexts, strict=True)
            ]
    return rows


def add_picks(turns: list[Turn]) -> None:
    """Each bare "3" answering the previous turn's numbered menu gets the option it picks among
    its answers (`answers.picked`), once."""
    for prev, turn in zip(turns, turns[1:], strict=False):
        if bare_number(turn.user_text) is None:
            continue  # most turns: the previous answer's text is not built for them
        turn.answers += [
            p for p in picked(turn.user_text, prev.assistant_text) if p not in turn.answers
        ]


def embed_rows(
    ws: Workspace,
    embedder: Embedder,
    pending: list[tuple[str, list[EmbedItem]]],
    progress: Progress | None = None,
    force: bool = False,
) -> int:
    """Embed turns whose content changed since they were last embedded; returns how many."""
    todo: list[tuple[str, EmbedItem]] = []
    for session_id, items in pending:
        have = {} if force else store.embedded_hashes(ws, session_id, embedder.name)
        todo += [(session_id, it) for it in items if have.get((it[0], it[1])) != it[2]]
    done = 0
    for i in range(0, len(todo), EMBED_BATCH):
        batch = todo[i : i + EMBED_BATCH]
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


__all__ = [
    "EMBED_BATCH",
    "EmbedItem",
    "FileJob",
    "Progress",
    "SessionJob",
    "SessionOutcome",
    "embed_item",
    "embed_rows",
    "embed_text",
    "guarded_session_job",
    "os_reason",
    "reason",
    "run_session_job",
    "turn_rows",
]
