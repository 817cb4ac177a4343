"""Reader for Cursor's CLI (`cursor-agent`: `~/.cursor/chats/<md5 of the work dir>/<id>/store.db`)
into `Turn`s.

docs/formats.md (built from the documented format, not recorded): one SQLite store a session,
in WAL mode. `meta` key `0` holds hex-encoded JSON (`agentId`, `name`, `createdAt` in ms,
`mode`, `lastUsedModel`, `latestRootBlobId`); `blobs` (`id`: the hex SHA-256 of `data`) is a
tree from that root: a blob starting with `{` is one message, any other links its children as
repeated `0x0A 0x20 <32-byte id>` (with a message after them, when there is one). The messages
in tree order are the conversation, in the AI SDK's shape: `user` (`content` text; the typed
prompt inside `<user_query>`, beside injected context such as `<user_info>` that names the
`Workspace Path`), `assistant` (`text`, `reasoning`, `tool-call {toolCallId, toolName, args}`
parts), `tool` (`tool-result {toolCallId, result, isError}` parts), `system`. No times but the
session's creation, no usage.

The store is read read-only in one short transaction (`stores.read_only`) and exported to a
JSONL (a `meta` line, then a `message` line each) archived whole; a blob the tree names but the
store lacks is reported and skipped. The folder's name is md5(work dir), the archive's own
workspace id, so a session lands in its project's workspace even when no message names it.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from archive_mcp.workspaces.ids import is_workspace_id, workspace_id

from .disk import is_dir, is_file
from .fields import field_dict, field_list, json_value
from .lines import CallsBuilder, LogReader, Record, from_start, tool_call
from .model import Step, ToolCall, epoch
from .sources import Discovery, listing, register
from .stores import (
    export_bytes,
    export_dir,
    export_path,
    read_only,
    read_reported,
    store_session,
    write_export,
)

SOURCE = "cursor-cli"
DB = "store.db"
QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
WORKSPACE = re.compile(r"^Workspace Path: (.+?)\s*$", re.M)
LINK = b"\x0a\x20"


def messages(blobs: dict[str, bytes], root: str) -> list[tuple[str, Any]]:
    """(blob id, message) in tree order from `root`; a message None for a blob that is missing or
    whose JSON does not parse."""
    out: list[tuple[str, Any]] = []
    stack, seen = [root], set()
    while stack:
        bid = stack.pop()
        if bid in seen:
            continue
        seen.add(bid)
        data = blobs.get(bid)
        if data is None or data[:1] == b"{":
            out.append((bid, None if data is None else json_value(data)))
            continue
        at, children = 0, []
        while data[at : at + 2] == LINK and at + 34 <= len(data):
            children.append(data[at + 2 : at + 34].hex())
            at += 34
        stack += reversed(children)
        if (brace := data.find(b"{", at)) >= 0:  # a message stored after the links
            stack.insert(len(stack) - len(children), f"{bid}#{brace}")
            blobs[f"{bid}#{brace}"] = data[brace:]
    return out


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def read_store(db: Path) -> dict[str, Any]:
    """The session of one `store.db`: its meta and its messages, read-only in one transaction."""
    with read_only(db) as con:
        row = con.execute("SELECT value FROM meta WHERE key = '0'").fetchone()
        blobs = {str(i): _bytes(d) for i, d in con.execute("SELECT id, data FROM blobs")}
    try:
        meta = json_value(bytes.fromhex(_bytes(row[0] if row else b"").decode("ascii")))
    except ValueError:  # not hex (UnicodeDecodeError is one)
        meta = None
    if not isinstance(meta, dict):
        raise sqlite3.DatabaseError("no session metadata (meta key 0)")
    root = meta.get("latestRootBlobId")
    return {"meta": meta, "messages": messages(blobs, root) if isinstance(root, str) else []}


def export_lines(session: dict[str, Any]) -> bytes:
    lines: list[dict[str, Any]] = [{"type": "meta", "meta": session["meta"]}]
    lines += [{"type": "message", "blob": b, "message": m} for b, m in session["messages"]]
    return export_bytes(lines)


# --- turns -------------------------------------------------------------------------------------


def _content(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text") or "") for p in field_list(msg, "content") if isinstance(p, dict)
    )


def prompt(text: str) -> str | None:
    """The typed prompt of a user message: its `<user_query>`; None for injected context only."""
    queries = QUERY.findall(text)
    if queries:
        return "\n".join(queries)
    return None if text.lstrip().startswith("<") else text


class CursorCliTurnBuilder(CallsBuilder):
    def __init__(self) -> None:
        super().__init__()
        self.created: float | None = None

    def feed(self, record: Record) -> None:
        rec = record.data
        if rec.get("type") == "meta":
            self.created = epoch(field_dict(rec, "meta").get("createdAt"), 1000.0)
            return
        msg = rec.get("message")
        if not isinstance(msg, dict):
            raise ValueError(f"blob {rec.get('blob')} is missing or not JSON")
        role = msg.get("role")
        if role == "user":
            text = prompt(_content(msg))
            if text is not None:
                self.open(text, None if self.turns else self.created, record)
        elif role == "assistant" and self.turns:
            turn = self.turns[-1]
            step = Step(n=len(turn.steps) + 1)
            for part in (
                field_list(msg, "content")
                if isinstance(msg.get("content"), list)
                else [{"type": "text", "text": msg.get("content")}]
            ):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text":
                    step.text += str(part.get("text") or "")
                elif kind == "reasoning":
                    step.think += str(part.get("text") or "")
                elif kind == "tool-call":
                    step.tool_calls.append(self._call(part))
            turn.steps.append(step)
            turn.byte_end = record.end
            if not step.tool_calls:
                turn.end, turn.reason = "ended", "completed"
        elif role == "tool":
            for part in field_list(msg, "content"):
                call = self.calls.get(str(field_dict({"p": part}, "p").get("toolCallId")))
                if call is not None:
                    call.finish(part.get("isError") is True, "", part.get("result"), None)
        elif role != "system":
            self.unknown_type(f"role {role}")

    def _call(self, part: dict[str, Any]) -> ToolCall:
        call = tool_call(
            {"id": part.get("toolCallId"), "name": part.get("toolName")}, part.get("args"), None
        )
        self.calls[call.id] = call
        return call


# --- discovery ---------------------------------------------------------------------------------


def _work_dir(session: dict[str, Any], bucket: str) -> str | None:
    """The `Workspace Path` a user message names, when its md5 is the session's folder."""
    for _bid, msg in session["messages"]:
        if isinstance(msg, dict) and msg.get("role") == "user":
            for path in WORKSPACE.findall(_content(msg)):
                if workspace_id(path) == bucket:
                    return str(path)
    return None


def _store(db: Path, found: Discovery) -> None:
    session = read_reported(read_store, db, "the Cursor CLI store", found)
    if session is None:
        return
    sid = str(session["meta"].get("agentId") or db.parent.name)
    export = export_path(export_dir(db, SOURCE), sid)
    write_export(export, export_lines(session))
    bucket, name = db.parent.parent.name, session["meta"].get("name")
    work_dir = _work_dir(session, bucket)
    found.sessions.append(
        store_session(SOURCE, sid, bucket, work_dir, name, db, export, "store.jsonl")
    )


def discover(path: Path) -> Discovery | None:
    """Cursor CLI sessions under `path` (`~/.cursor`, its `chats/`, one `chats/<hash>`, one
    session folder or its `store.db`), or None when `path` is not one."""
    found = Discovery()
    if path.name == DB and is_file(path):
        _store(path, found)
    elif is_file(path / DB):
        _store(path / DB, found)
    elif is_workspace_id(path.name) and path.parent.name == "chats":
        for s in listing(path, found):
            if is_file(s / DB):
                _store(s / DB, found)
    else:
        chats = path / "chats" if is_dir(path / "chats") else path
        if chats.name != "chats":
            return None
        for ws in listing(chats, found):
            for s in listing(ws, found) if is_workspace_id(ws.name) else []:
                if is_file(s / DB):
                    _store(s / DB, found)
    return found if found.sessions or found.skipped else None


READER = register(
    LogReader(SOURCE, "Cursor CLI", from_start(CursorCliTurnBuilder), discover, 28, whole=True)
)
parse_wire = READER.parse
