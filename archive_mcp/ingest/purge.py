"""Purge one session from a workspace: its raw copies, refined rows, embeddings, ingest state and
theme memberships. Raw copies keep every secret the agent logged; this is how they go."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from archive_mcp.errors import NotFound
from archive_mcp.ingest import store
from archive_mcp.ingest.purged import PurgedSession, PurgedSessions
from archive_mcp.workspaces import Workspace, atomic_write_json, locked, read_json


@dataclass
class PurgeReport:
    workspace: str
    session_id: str
    removed: list[str] = field(default_factory=list)  # archive-relative paths deleted
    themes: list[str] = field(default_factory=list)  # themes that lost members

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def purge_session(
    ws: Workspace,
    session_id: str,
    *,
    forget: Callable[[str], list[str]] | None = None,
    purged: PurgedSessions | None = None,
) -> PurgeReport:
    """Delete everything the archive holds for `session_id`, and remember in `purged` that it was
    purged (by source and id, and the source paths it came from), all under the workspace's lock:
    no later ingest archives it again until it is re-admitted (`PurgedSessions.forget`)."""
    report = PurgeReport(ws.id, session_id)
    with locked(ws.root):
        state = read_json(ws.state_dir / "ingest.json", {}) or {}
        files = state.get("files", {})
        sessions = state.get("sessions", {})
        mine = [rel for rel, e in files.items() if e.get("session") == session_id]
        if (
            not mine
            and session_id not in sessions
            and not store.refined_path(ws, session_id).exists()
        ):
            raise NotFound(
                f"no session {session_id!r} in workspace {ws.name}; list them with "
                "`archive-mcp sessions list`"
            )
        if purged is not None:  # first: a purge cut short leaves the session out, never back
            paths = sorted({str(files[rel].get("source_path")) for rel in mine} - {"None"})
            source = (sessions.get(session_id) or {}).get("source") or next(
                (files[rel].get("source") for rel in mine), None
            )
            purged.remember(PurgedSession(session_id, source, ws.id, paths))
        stem = store.session_file_stem(session_id)
        targets = {f"raw/{files[rel].get('source') or ''}/{stem}" for rel in mine}
        targets |= {f"raw/{src}/{stem}" for src in ("kimi", "kimi-code")}
        for rel in sorted(targets):
            path = ws.root / rel
            if path.is_dir():
                shutil.rmtree(path)
                report.removed.append(rel)
        for path in (store.refined_path(ws, session_id), store.embeddings_path(ws, session_id)):
            if path.exists():
                path.unlink()
                report.removed.append(str(path.relative_to(ws.root)))
        sessions.pop(session_id, None)
        for rel in mine:
            del files[rel]
            state.get("unrefined", {}).pop(rel, None)  # copied by a stopped ingest, not refined
        atomic_write_json(ws.state_dir / "ingest.json", state)
        if forget is not None:  # what the rooms above hold of it (the themes' members)
            report.themes += forget(session_id)
    return report
