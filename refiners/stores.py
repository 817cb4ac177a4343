"""Agents' SQLite stores, read while the agent writes them, and the JSONL exports made from them.

OpenCode, Kilo Code, Goose (`sessions.db`), Cursor (the IDE's `state.vscdb`) and Cursor's CLI
(`store.db`) keep their sessions in SQLite, often in WAL mode (the main file lags far behind its
`-wal`). A store is
opened read-only (`file:…?mode=ro`, `query_only`) and read in one short transaction: a WAL
reader never blocks the agent's writer, nor it the reader, and the store is never written.

The archive copies files, so a reader exports each session to a JSONL file in a private folder
of the temp dir (the same rows give the same bytes, so an unchanged session keeps its mtime and
is not re-read); the export is what is archived, whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
from archive_mcp.workspaces.atomic import atomic_write_bytes

from .sources import Discovery, SessionSource, SourceFile, log_session

T = TypeVar("T")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


@contextmanager
def read_only(db: Path) -> Iterator[sqlite3.Connection]:
    """`db` opened read-only, inside one transaction for the `with` block (text that is not
    UTF-8 is read with replacement characters, never stops the read)."""
    con = sqlite3.connect(f"file:{_uri_path(db)}?mode=ro", uri=True, timeout=5)
    con.text_factory = _text
    try:
        con.execute("PRAGMA query_only = 1")
        con.execute("BEGIN")
        yield con
        con.execute("COMMIT")
    finally:
        con.close()


def _uri_path(db: Path) -> str:
    """`db` for a SQLite `file:` URI: `%`, `?` and `#` escaped (unescaped, a `#` in a folder's
    name cut the URI there, dropping `mode=ro`, and SQLite created an empty store there)."""
    return str(db).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def read_reported(read: Callable[[Path], T], db: Path, what: str, found: Discovery) -> T | None:
    """`read(db)`; None when the store cannot be read (locked, corrupt, not SQLite), the reason
    reported in `found` (the next ingest tries it again)."""
    try:
        return read(db)
    except sqlite3.Error as exc:
        found.skipped.append((str(db), f"could not read {what}: {exc}"))
        return None


def has_table(con: sqlite3.Connection, name: str) -> bool:
    row = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return row.fetchone() is not None


def columns(con: sqlite3.Connection, table: str) -> list[str]:
    """The names of the columns of `table`, in order; none when there is no such table."""
    return [d[1] for d in con.execute(f"PRAGMA table_info({table})")]


def table_rows(con: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    """Every row of `table` as a dict of its columns."""
    cols = columns(con, table)
    return [dict(zip(cols, row, strict=True)) for row in con.execute(f"SELECT * FROM {table}")]


def by_session(con: sqlite3.Connection, sql: str) -> dict[Any, list[dict[str, Any]]]:
    """The rows of `sql` as dicts of their columns (named as the query names them), listed by
    their first column, a session's id (not in the dicts), in the rows' order."""
    rows = con.execute(sql)
    names = [d[0] for d in rows.description[1:]]
    out: dict[Any, list[dict[str, Any]]] = {}
    for sid, *columns in rows:
        out.setdefault(sid, []).append(dict(zip(names, columns, strict=True)))
    return out


def with_messages(con: sqlite3.Connection, table: str, sql: str) -> list[dict[str, Any]]:
    """Every row of `table` (a session) with its `messages`: the rows of `sql` (as `by_session`
    lists them) whose first column is the session's `id` as text, in their order."""
    sessions = table_rows(con, table)
    messages = by_session(con, sql)
    for s in sessions:
        s["messages"] = messages.get(str(s.get("id")), [])
    return sessions


def sub_sessions(sessions: list[dict[str, Any]], key: str) -> dict[str, str]:
    """Sub-session id -> its parent's, for each session whose parent (its column `key`) is one of
    `sessions`: what `file_sessions` files under a top session."""
    ids = {str(s.get("id")) for s in sessions if s.get("id")}
    return {
        str(s["id"]): str(s[key])
        for s in sessions
        if s.get("id") and s.get(key) and str(s[key]) in ids
    }


def session_records(session: dict[str, Any]) -> list[dict[str, Any]]:
    """A session's export, as `with_messages` reads it: a `session` record (its row), then a
    `message` record each (its row and `"type": "message"`)."""
    head = {k: v for k, v in session.items() if k != "messages"}
    return [
        {"type": "session", "session": head},
        *({"type": "message", **m} for m in session["messages"]),
    ]


def session_lines(session: dict[str, Any]) -> bytes:
    """A session's export (`session_records`) as JSONL (`export_bytes`)."""
    return export_bytes(session_records(session))


def export_bytes(records: list[dict[str, Any]]) -> bytes:
    """`records` as JSONL, keys sorted: the same rows give the same bytes."""
    return b"".join(_line(r) + b"\n" for r in records)


def _line(record: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer past 64 bits (read by the careful path)
        return json.dumps(record, sort_keys=True, ensure_ascii=False).encode()


def export_dir(db: Path, kind: str) -> Path:
    """A private folder of the temp dir for the exports of the `kind` store `db`."""
    key = hashlib.sha1(str(db.resolve()).encode()).hexdigest()[:16]
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    private = Path(tempfile.gettempdir()) / f"archive-mcp-{user}"
    private.mkdir(exist_ok=True, mode=0o700)  # only this user may read the exports
    _keep_private(private)
    folder = private / kind / key
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _keep_private(folder: Path) -> None:
    """`folder` made this user's alone (mode 0700); an error when it is a link or another user's
    (made there before: the exports would be theirs to read)."""
    if not hasattr(os, "getuid"):
        return
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise PermissionError(
            f"{folder} is not a folder of this user's (a link, or another user's): remove it "
            "and ingest again"
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        folder.chmod(0o700)


def export_path(folder: Path, session_id: str) -> Path:
    return folder / f"{hashlib.sha1(session_id.encode()).hexdigest()[:20]}.jsonl"


def exported(
    db: Path, kind: str, sessions: list[dict[str, Any]], lines: Callable[[dict[str, Any]], bytes]
) -> Iterator[tuple[str, dict[str, Any], Path]]:
    """Each session of the `kind` store `db` that has an `id`, exported (`lines(session)`) to its
    JSONL in `export_dir`: its id, the session and the export."""
    folder = export_dir(db, kind)
    for session in sessions:
        sid = str(session.get("id") or "")
        if sid:
            export = export_path(folder, sid)
            write_export(export, lines(session))
            yield sid, session, export


@dataclass(frozen=True)
class Store:
    """An agent's store and how its sessions are archived: `read` gives its sessions (each row
    with its `messages`; None when the store is another program's), `lines` a session's export,
    and `parent` names the column holding a sub-session's parent (None: no sub-sessions)."""

    kind: str  # the exports' folder (`export_dir`)
    what: str  # the store, for a report: "the Crush database"
    read: Callable[[Path], list[dict[str, Any]] | None]
    lines: Callable[[dict[str, Any]], bytes] = session_lines
    parent: str | None = None

    def sessions(
        self, db: Path, session: Callable[[str, dict[str, Any], Path], SessionSource]
    ) -> Discovery | None:
        """The sessions of the store `db`, each exported and made by `session(id, row, export)`,
        a sub-session filed under its top session (`file_sessions`); None when `read` finds the
        store is another program's. One that cannot be read is reported (tried again next time)."""
        found = Discovery()
        rows = read_reported(self.read, db, self.what, found)
        if rows is None:
            return found if found.skipped else None
        parent = sub_sessions(rows, self.parent) if self.parent is not None else {}
        file_sessions(exported(db, self.kind, rows, self.lines), parent, session, found, db)
        return found


def store_session(
    source: str,
    sid: str,
    bucket: str,
    work_dir: Any,
    title: Any,
    db: Path,
    export: Path,
    name: str = "session.jsonl",
) -> SessionSource:
    """The session `sid` of the store `db`, archived as its export (`export`, one file named
    `name`, made again whole from the store); its work dir and title kept when they are text."""
    return log_session(
        source, sid, bucket, work_dir, title, export, whole=True, rel=name, folder=db.parent
    )


def file_sessions(
    exports: Iterable[tuple[str, dict[str, Any], Path]],
    parent: dict[str, str],
    session: Callable[[str, dict[str, Any], Path], SessionSource],
    found: Discovery,
    where: Path,
) -> None:
    """The sessions `exported` from the store `where`, added to `found` in their order as
    `session(id, row, export)` makes them, each sub-session (a subagent's own session: its id in
    `parent`, which maps it to its parent's) filed instead as a subagent file
    (`subagents/<id>.jsonl`) of its top session; one whose parents loop stands alone (reported)."""
    rows = list(exports)
    tops = {sid for sid, _, _ in rows if sid not in parent}
    made: dict[str, SessionSource] = {}
    filed: list[tuple[str, str, Path]] = []  # (top session, sub-session, its export)
    for sid, row, export in rows:
        top = top_session(sid, parent, tops) if sid in parent else sid
        if top is None:
            found.skipped.append(
                (
                    str(where),
                    f"sub-session {sid}: its parents never reach a top-level session (they loop); "
                    "archived as a session of its own",
                )
            )
        if top is None or top == sid:
            made[sid] = session(sid, row, export)
            found.sessions.append(made[sid])
        else:
            filed.append((top, sid, export))
    for top, sid, export in filed:
        made[top].files.append(SourceFile(sid, f"subagents/{sid}.jsonl", export, whole=True))


def top_session(sid: str, parent: dict[str, str], tops: Container[str]) -> str | None:
    """The first of the parents of the sub-session `sid` (its parent, that one's, …) that is one
    of `tops`; None when they loop or end before one."""
    seen = {sid}
    while sid not in tops:
        if sid not in parent or parent[sid] in seen:
            return None
        sid = parent[sid]
        seen.add(sid)
    return sid


def write_export(path: Path, data: bytes) -> None:
    """`data` written to `path` atomically, unless it holds those bytes already (its mtime kept).
    Each writer has its own temporary file (a follower and a hook may export one session at the
    same moment: with one shared name, one renamed the other's half-written file into place)."""
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    atomic_write_bytes(path, data, durable=False)  # made again from the store after a crash
