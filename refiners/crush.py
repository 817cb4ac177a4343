"""Reader for Crush (charmbracelet/crush) into `Turn`s: the sessions of a project's
`.crush/crush.db` (SQLite in WAL mode), and of each project Crush's global data folder lists in
`projects.json`; the work dir is the listed project folder, else the folder holding `.crush`.

The format, and the commit of Crush's code it follows (no Crush build runs here): docs/formats.md,
"Crush". The store is read as OpenCode's (stores.py), each session exported to a JSONL archived
whole. What to know here: times are epoch seconds though the schema says milliseconds; a bash
command that failed is stored with `is_error` false and its text ending "Exit code N"; a
sub-session (`<message id>$$<call id>`) is archived as an agent file of its top session.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from archive_mcp.workspaces.home import crush_data_dir

from . import answers, stores
from .disk import is_dir, is_file, load_object
from .fields import field_dict, field_list, json_object, json_value
from .lines import CallsBuilder, LogReader, Record, from_start, tool_call
from .model import Step, SubagentRun, Turn, epoch
from .sources import Discovery, SessionSource, register, with_next

SOURCE = "crush"
DB = "crush.db"
DATA_DIR = ".crush"  # Crush's default data folder, in the project folder
PROJECTS = "projects.json"
SUBAGENT_TOOLS = frozenset({"agent", "agentic_fetch"})  # each runs a sub-session
DENIED = "User denied permission"  # tools.NewPermissionDeniedResponse
CONTINUED = "The previous session was interrupted because it got too long"
_EXIT = re.compile(r"\nExit code (\d+)(?:\n\n<cwd>[^\n]*</cwd>)?\Z")
# a `finish` part's reason that ends the turn -> the turn's (`tool_use` goes on)
_REASONS = {"end_turn": "completed", "canceled": "cancelled", "error": "failed"}
_KEPT = ("max_tokens", "content_filter")  # these end it as they are


def _seconds(value: Any) -> float | None:
    """A Crush time in epoch seconds (milliseconds past 1e11); None when unset (0) or not a time."""
    ms = isinstance(value, int | float) and not isinstance(value, bool) and value > 1e11
    return epoch(value, 1000.0 if ms else 1.0) or None


# --- reading the store -------------------------------------------------------------------------


# each message whole (its `session_id` too), listed by its session's id as text
_MESSAGES = "SELECT CAST(session_id AS TEXT), * FROM messages ORDER BY created_at, rowid"


def read_sessions(db: Path) -> list[dict[str, Any]] | None:
    """Every session of a Crush `db` with its messages in the order Crush lists them (by
    `created_at`, then as written), read-only in one transaction; None when `db` is not Crush's."""
    with stores.read_only(db) as con:
        if not stores.has_table(con, "sessions") or "parts" not in stores.columns(con, "messages"):
            return None
        sessions = stores.with_messages(con, "sessions", _MESSAGES)
    for m in (m for s in sessions for m in s["messages"]):
        parts = json_value(m["parts"])
        if isinstance(parts, list):
            m["parts"] = parts
        else:  # kept as written: the parse reports it
            m["parts_text"] = m.pop("parts")
    return sessions


# each session exported as JSONL (`stores.session_lines`), a sub-session filed under its parent
STORE = stores.Store(SOURCE, "the Crush database", read_sessions, parent="parent_session_id")


# --- parsing the export ------------------------------------------------------------------------


Parts = dict[str, list[dict[str, Any]]]  # a message's parts' `data` by their `type`


def _grouped(rec: dict[str, Any]) -> Parts:
    out: Parts = {}
    for p in field_list(rec, "parts"):
        if isinstance(p, dict):
            out.setdefault(str(p.get("type")), []).append(field_dict(p, "data"))
    return out


def _text(parts: Parts, kind: str = "text", key: str = "text") -> str:
    return "".join(str(p.get(key) or "") for p in parts.get(kind, ()))


class CrushTurnBuilder(CallsBuilder):
    def feed(self, record: Record) -> None:
        rec = record.data
        if rec.get("type") == "session":
            self.version = "sqlite"
            return
        if "parts_text" in rec:
            raise ValueError(f"message {rec.get('id')}: parts are not a JSON list")
        role, ts, parts = rec.get("role"), _seconds(rec.get("created_at")), _grouped(rec)
        if role == "user":
            self._user(parts, ts, record)
        elif role == "assistant" and self.turns:
            self._assistant(rec, parts, ts, self.turns[-1])
            self.turns[-1].byte_end = record.end
        elif role == "tool" and self.turns:
            self._results(parts, ts, self.turns[-1])
            self.turns[-1].byte_end = record.end
        elif role not in ("assistant", "tool"):
            self.unknown_type(f"role {role}")

    def _user(self, parts: Parts, ts: float | None, record: Record) -> None:
        text = _text(parts)
        if text.startswith(CONTINUED) and self.turns:  # Crush's own prompt after a summary
            self.turns[-1].byte_end = record.end
            return
        # a `!` command the user ran, as Crush gives it to the model (Message.ToAIMessage)
        shell = [
            f"$ {p.get('command') or ''}\n{p.get('output') or ''}\n(exit code {p.get('exit_code')})"
            for p in parts.get("shell_command", ())
        ]
        media = [_media(p) for p in (*parts.get("binary", ()), *parts.get("image_url", ()))]
        if not (text or shell or media):
            return
        turn = self.open("\n\n".join([t for t in (text,) if t] + shell), ts, record)
        turn.user_media = media
        if shell and not text:
            turn.origin = "command_output"

    def _assistant(self, rec: dict[str, Any], parts: Parts, ts: float | None, cur: Turn) -> None:
        done = _seconds(rec.get("finished_at"))
        cur.last_at = done or ts or cur.last_at
        reason = next((str(p.get("reason") or "") for p in parts.get("finish", ())), "")
        if rec.get("is_summary_message"):  # a summary: the session compacted
            cur.compactions += 1
            cur.synthetic_text = _text(parts)
            return
        step = Step(
            n=len(cur.steps) + 1, text=_text(parts), think=_text(parts, "reasoning", "thinking")
        )
        for part in parts.get("tool_call", ()):
            call = tool_call(part, str(part.get("input") or ""), ts)
            step.tool_calls.append(call)
            self.calls[call.id] = call
            if call.name in SUBAGENT_TOOLS:
                child = f"{rec.get('id')}$${call.id}"  # session.CreateAgentToolSessionID
                cur.subagents[child] = SubagentRun(child, call.name, call.id)
        cur.steps.append(step)
        if reason == "error":
            cur.api_errors += 1
        if reason in _REASONS or reason in _KEPT:
            cur.end, cur.ended_at, cur.reason = "ended", cur.last_at, _REASONS.get(reason, reason)

    def _results(self, parts: Parts, ts: float | None, cur: Turn) -> None:
        for part in parts.get("tool_result", ()):
            call = self.calls.get(str(part.get("tool_call_id") or ""))
            if call is None:
                continue
            content = str(part.get("content") or "")
            failed = part.get("is_error") is True
            exit_code = _EXIT.search(content) if call.name == "bash" else None
            if exit_code is not None and int(exit_code.group(1)) != 0:
                failed = True
            meta = json_object(part.get("metadata"))  # JSON text
            call.finish(failed, "", content, _seconds(meta.get("end_time")) or ts)
            if failed and content == DENIED:
                cur.answers += answers.refused(call)


def _media(part: dict[str, Any]) -> dict[str, Any]:
    """A user's attachment: its type and size, not its bytes."""
    mime = str(part.get("MIMEType") or "")
    if "url" in part:
        url = str(part.get("url") or "")
        return {"type": "image", "url_prefix": url[:40], "bytes_b64": len(url)}
    kind = "image" if mime.startswith("image/") else "file"
    return {"type": kind, "url_prefix": mime[:40], "bytes_b64": len(str(part.get("Data") or ""))}


# --- discovery ---------------------------------------------------------------------------------


def project_stores(data_home: Path) -> list[tuple[Path, Path]]:
    """The projects Crush's global data folder lists (`projects.json`): (project folder, its
    `crush.db`), each database once, with the first project listing it (Crush lists the latest
    first; a project run in a subfolder shares the closest `.crush` above it); [] when
    `data_home` holds no such list."""
    projects = load_object(data_home / PROJECTS).get("projects")
    out: dict[Path, Path] = {}
    for p in projects if isinstance(projects, list) else []:
        path, data = (p.get("path"), p.get("data_dir")) if isinstance(p, dict) else (None, None)
        if isinstance(path, str) and path and isinstance(data, str) and data:
            # a relative data folder (Crush's default `.crush`) is the project's, not ours
            out.setdefault(Path(path) / data / DB, Path(path))
    return [(project, db) for db, project in out.items()]


def named_stores(root: Path) -> list[Path]:
    """The Crush databases (and their write-ahead logs) a followed folder names but does not
    hold: those of the projects its `projects.json` lists (a live follower watches them)."""
    return [p for _, db in project_stores(root) for p in (db, db.with_name(DB + "-wal"))]


def discover(path: Path) -> Discovery | None:
    """Crush sessions in `path`: a `crush.db`, a data folder holding one, a project folder
    holding `.crush/crush.db`, or Crush's global data folder (its `projects.json`); else None."""
    if is_file(path):
        if path.name != DB:
            return None
        return _store(path, _project(path.parent))
    if is_file(path / DB):
        return _store(path / DB, _project(path))
    if is_file(path / DATA_DIR / DB):
        return with_next(READER, path, _store(path / DATA_DIR / DB, path.resolve()))
    listed = project_stores(path) if is_file(path / PROJECTS) else []
    if not listed:
        return None
    found = Discovery()
    for project, db in listed:
        found.add(_store(db, project) if is_file(db) else None)
    return found


def _project(data_dir: Path) -> Path:
    """The project a data folder belongs to: the one Crush's `projects.json` names, else the
    folder holding it (`.crush` lives in the project folder)."""
    real = data_dir.resolve()
    for project, db in project_stores(crush_data_dir()):
        if is_dir(db.parent) and db.parent.resolve() == real:
            return project
    return real.parent


def _store(db: Path, project: Path) -> Discovery | None:
    """The sessions of the Crush database `db` of the folder `project`; None when `db` is another
    program's database."""
    return STORE.sessions(db, partial(_session, project, db))


def _session(project: Path, db: Path, sid: str, s: dict[str, Any], export: Path) -> SessionSource:
    """The session `sid` (row `s`, exported to `export`) of the Crush database `db`."""
    return stores.store_session(SOURCE, sid, SOURCE, str(project), s.get("title"), db, export)


READER = register(
    LogReader(SOURCE, "Crush", from_start(CrushTurnBuilder), discover, 36, whole=True)
)
parse_wire = READER.parse
