"""Reader for Goose (`~/.local/share/goose/sessions/`: JSONL logs, newer builds `sessions.db`).

No Goose build runs here (its CLI is a GitHub-release binary, on neither PyPI nor npm): this
reader follows block/goose's own session code (`crates/goose/src/session/legacy.rs`,
`session_manager.rs`, `conversation/message.rs`) and docs/formats.md says so.

* A JSONL log, `<name>.jsonl`: the first line is the session's metadata (`working_dir`,
  `description`, `message_count`, `total_tokens`, `input_tokens`, `output_tokens` and their
  `accumulated_*`), then one message a line: `{id, role, created (epoch s), content,
  metadata {userVisible, agentVisible}}`. `content` items are tagged by `type`: `text`, `image`,
  `thinking`, `redactedThinking`, `toolRequest {id, toolCall: {status: "success", value: {name,
  arguments}} | {status: "error", error}}`, `toolResponse {id, toolResult: {status: "success",
  value: {content, isError} | [content]} | {status: "error", error}}`, `actionRequired`,
  `toolConfirmationRequest`, `frontendToolRequest`, `systemNotification`, and in older builds
  `summarizationRequested` / `contextLengthExceeded` / `conversationCompacted`.
* `sessions.db` (SQLite, WAL): `sessions (id, name, description, working_dir, session_type,
  created_at, … token totals)` and `messages (session_id, role, content_json, created_timestamp,
  metadata_json, …)`. Read read-only in one short transaction, each session exported to a JSONL
  of the shape above in a private temp folder, which is what is archived (as OpenCode's).

A turn is a user message with text the user sees (an agent-only one is the summary a compaction
leaves: a compaction of the running turn, its text kept as synthetic); a user message of `toolResponse`s carries results; an assistant message without tool
requests ends the turn. The log holds no usage per call: each turn's usage is 0, the session's
totals are in the metadata line. A call the user declined ("The user has declined to run this
tool…") is a rejected call, as the other readers' (answers.py).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from . import answers
from .disk import head_records, is_dir, is_file
from .fields import field_dict, field_list, json_value
from .lines import CallsBuilder, LogReader, Record
from .model import Step, ToolCall, epoch, output_to_text
from .sources import Discovery, SessionSource, jsonl_sessions, log_session, register
from .stores import Store, columns, read_only, store_session, with_messages

SOURCE = "goose"
DB = "sessions.db"
COMPACTION = frozenset({"summarizationRequested", "contextLengthExceeded", "conversationCompacted"})
QUIET = frozenset(
    {"image", "redactedThinking", "toolConfirmationRequest", "systemNotification", "actionRequired"}
)
_DECLINED = "declined to run this tool"


def _result(item: dict[str, Any]) -> tuple[str, bool]:
    """A `toolResponse`'s text and whether it failed."""
    result = field_dict(item, "toolResult")
    if result.get("status") != "success":
        return str(result.get("error") or ""), True
    value = result.get("value")
    if isinstance(value, dict):
        content, failed = value.get("content"), value.get("isError") is True
    else:
        content, failed = value, False
    parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    # Goose sends a result twice, for the model and for the user (`annotations.audience`)
    for_model = [
        p for p in parts if "user" not in (field_dict(p, "annotations").get("audience") or [])
    ]
    return output_to_text(for_model or parts), failed


class GooseTurnBuilder(CallsBuilder):
    def feed(self, record: Record) -> None:
        rec = record.data
        if "role" not in rec:  # the metadata line
            if "working_dir" in rec:
                self.version = "jsonl"
                return
            self.unknown_type("no role")
            return
        items = [c for c in field_list(rec, "content") if isinstance(c, dict)]
        ts = epoch(rec.get("created"))
        seen = field_dict(rec, "metadata").get("userVisible") is not False
        if rec.get("role") == "user":
            self._user(items, ts, seen, record)
        elif rec.get("role") == "assistant" and self.turns:
            self._assistant(items, ts)
        else:
            self.unknown_type(f"role {rec.get('role')}")

    def _user(
        self, items: list[dict[str, Any]], ts: float | None, seen: bool, record: Record
    ) -> None:
        text = "\n".join(str(c.get("text") or "") for c in items if c.get("type") == "text")
        for item in items:
            if item.get("type") == "toolResponse" and (call := self.calls.get(str(item.get("id")))):
                output, failed = _result(item)
                call.finish(failed, "", output, ts)
                if _DECLINED in output.lower():
                    self.turns[-1].answers += answers.refused(call)
            elif item.get("type") == "actionRequired" and self.turns:
                data = field_dict(item, "data")
                if data.get("actionType") == "elicitationResponse":
                    reply = json.dumps(data.get("user_data"), ensure_ascii=False)
                    self.turns[-1].answers.append(answers.answered(reply))
        if text.strip() and seen:
            self.open(text, ts, record)
        elif text.strip() and self.turns:  # agent-only: the summary a compaction leaves
            self.turns[-1].synthetic_text = text
            self.turns[-1].compactions += 1

    def _assistant(self, items: list[dict[str, Any]], ts: float | None) -> None:
        cur = self.turns[-1]
        step = Step(n=len(cur.steps) + 1)
        texts, thoughts = [], []
        for item in items:
            kind = str(item.get("type"))
            if kind == "text":
                texts.append(str(item.get("text") or ""))
            elif kind == "thinking":
                thoughts.append(str(item.get("thinking") or ""))
            elif kind in ("toolRequest", "frontendToolRequest"):
                step.tool_calls.append(self._call(item, ts))
            elif kind in COMPACTION:
                cur.compactions += 1
            elif kind not in QUIET:
                self.unknown_type(kind)
        step.text, step.think = "\n".join(texts), "\n".join(thoughts)
        cur.steps.append(step)
        cur.last_at = ts if ts is not None else cur.last_at
        if not step.tool_calls and step.text:
            cur.end, cur.reason = "ended", "completed"

    def _call(self, item: dict[str, Any], ts: float | None) -> ToolCall:
        request = field_dict(item, "toolCall")
        value = field_dict(request, "value")
        call = ToolCall(
            id=str(item.get("id") or ""),
            name=str(value.get("name") or ""),
            arguments=json.dumps(value.get("arguments") or {}, ensure_ascii=False),
            called_at=ts,
        )
        if request.get("status") == "error":  # the model's call could not be read
            call.result = {"is_error": True, "message": "", "output": str(request.get("error"))}
        self.calls[call.id] = call
        return call


# --- discovery ----------------------------------------------------------------------------------


def _header(path: Path) -> dict[str, Any] | None:
    head = head_records(path, limit=1, max_bytes=1 << 16)
    ok = head and "working_dir" in head[0] and "role" not in head[0]
    return head[0] if ok else None


def _session(path: Path, header: dict[str, Any]) -> SessionSource:
    title = header.get("description") or header.get("name")
    sid = str(header.get("id") or path.stem)
    return log_session(SOURCE, sid, SOURCE, header.get("working_dir"), title, path)


def read_db(db: Path) -> list[dict[str, Any]] | None:
    """Every session of a Goose `sessions.db` with its messages, read-only in one transaction;
    None when the database is not Goose's (another agent's `sessions.db`: Cline's)."""
    with read_only(db) as con:
        if "content_json" not in columns(con, "messages"):
            return None
        sessions = with_messages(con, "sessions", MESSAGES)
    for m in (m for s in sessions for m in s["messages"]):  # JSON read, as the export holds it
        m["content"], m["metadata"] = json_value(m["content"], []), json_value(m["metadata"], {})
    return sessions


MESSAGES = (
    "SELECT session_id, role, created_timestamp AS created, content_json AS content,"
    " metadata_json AS metadata FROM messages ORDER BY session_id, id"
)


def export_lines(session: dict[str, Any]) -> bytes:
    """A database session as the JSONL Goose wrote before its database: metadata, messages."""
    head = {k: v for k, v in session.items() if k != "messages"}
    lines = [json.dumps(head, sort_keys=True, ensure_ascii=False, default=str)]
    lines += [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in session["messages"]]
    return ("\n".join(lines) + "\n").encode("utf-8")


STORE = Store("goose", "the Goose database", read_db, export_lines)  # no sub-sessions


def _db_session(db: Path, sid: str, s: dict[str, Any], export: Path) -> SessionSource:
    title = s.get("description") or s.get("name")
    return store_session(SOURCE, sid, SOURCE, s.get("working_dir"), title, db, export)


def _db_sessions(db: Path, found: Discovery) -> set[str]:
    """The sessions of `db`, exported, added to `found`; their ids (a JSONL log with one of them
    was imported). None of another agent's `sessions.db` (Cline's)."""
    stored = STORE.sessions(db, partial(_db_session, db))
    found.add(stored)
    return {s.session_id for s in stored.sessions} if stored is not None else set()


def discover(path: Path) -> Discovery | None:
    """Goose sessions under `path` (its data folder, `sessions/`, `sessions.db` or one JSONL
    log), or None when `path` is not shaped like one."""
    if is_file(path):
        if path.name == DB:
            found = Discovery()
            _db_sessions(path, found)
            return found if found.sessions or found.skipped else None
        header = _header(path) if path.suffix == ".jsonl" else None
        return Discovery([_session(path, header)]) if header is not None else None
    folder = path / "sessions" if is_dir(path / "sessions") else path
    found = Discovery()
    ids = _db_sessions(folder / DB, found) if is_file(folder / DB) else set()
    logs = Discovery()
    jsonl_sessions(folder, logs, _header, _session)
    found.sessions += [s for s in logs.sessions if s.session_id not in ids]
    return found if found.sessions or found.skipped else None


READER = register(
    LogReader(SOURCE, "Goose", lambda path, index, protocol: GooseTurnBuilder(index), discover, 30)
)
parse_wire = READER.parse
