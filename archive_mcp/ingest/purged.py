"""The sessions a user purged, remembered in the archive home so that no ingest, follower or
session-end hook archives them again from the agent's log (secrets included) until the user
re-admits them (`sessions unpurge`, or `ingest --include-purged`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archive_mcp.errors import NotFound
from archive_mcp.refiners import SessionSource
from archive_mcp.workspaces import atomic_write_json, locked, read_json

FILE = "purged.json"


@dataclass
class PurgedSession:
    session_id: str
    source: str | None  # the agent product; None when the archive no longer knew it
    workspace: str  # the workspace id it was purged from
    paths: list[str] = field(default_factory=list)  # the agent's log files it was copied from
    purged_at: str = ""


class PurgedSessions:
    """`<home>/state/purged.json`: every purged session, by source and session id and by the
    source paths it was archived from (either keeps it out)."""

    def __init__(self, home: Path) -> None:
        self.dir = Path(home) / "state"
        self.path = self.dir / FILE

    def all(self) -> list[PurgedSession]:
        data = read_json(self.path, {}) or {}
        return [PurgedSession(**row) for row in data.get("sessions", [])]

    def remember(self, session: PurgedSession) -> None:
        """Add `session` (stamped now), replacing an earlier record of the same session."""
        session.purged_at = session.purged_at or datetime.now(UTC).isoformat(timespec="seconds")
        with locked(self.dir):
            kept = [p for p in self.all() if _key(p) != _key(session)]
            self._save([*kept, session])

    def forget(self, session_id: str, *, exact: bool = False) -> list[PurgedSession]:
        """Re-admit the purged sessions whose id is `session_id` or (unless `exact`) starts with
        it, one id only; those re-admitted. Unless `exact`, `NotFound` naming those remembered
        when none matches."""
        with locked(self.dir):
            rows = self.all()
            if exact:
                self._save([p for p in rows if p.session_id != session_id])
                return [p for p in rows if p.session_id == session_id]
            ids = {p.session_id for p in rows if p.session_id.startswith(session_id)}
            exact_ids = {session_id} & ids
            if len(exact_ids or ids) != 1:
                listed = ", ".join(sorted(p.session_id for p in rows)[:20]) or "none"
                why = "matches several" if ids else "is not a purged session"
                raise NotFound(f"{session_id!r} {why}; purged sessions: {listed}")
            (sid,) = exact_ids or ids
            self._save([p for p in rows if p.session_id != sid])
            return [p for p in rows if p.session_id == sid]

    def matcher(self) -> Matcher:
        return Matcher(self.all())

    def _save(self, rows: list[PurgedSession]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path, {"sessions": [asdict(p) for p in rows]})


class Matcher:
    """Does a discovered session name a purged one? By (source, id), by id when the source was not
    known, or by any of its log files' paths."""

    def __init__(self, rows: list[PurgedSession]) -> None:
        self.rows = rows
        self.keys = {_key(p) for p in rows}
        self.paths = {path for p in rows for path in p.paths}

    def __bool__(self) -> bool:
        return bool(self.rows)

    def holds(self, session: SessionSource) -> bool:
        return (
            (session.source, session.session_id) in self.keys
            or (None, session.session_id) in self.keys
            or any(str(f.path) in self.paths for f in session.files)
        )


def _key(p: PurgedSession) -> tuple[Any, str]:
    return (p.source, p.session_id)
