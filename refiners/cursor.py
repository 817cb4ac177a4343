"""Reader for Cursor's editor (its agent, the "composer": `User/globalStorage/state.vscdb`) into
`Turn`s.

docs/formats.md (built from the documented format, not recorded): the global `state.vscdb` is
SQLite with a key-value table `cursorDiskKV`. `composerData:<composer id>` is a conversation
(`_v`, `name`, `createdAt`, `status`, `modelConfig`, `fullConversationHeadersOnly`: its bubbles'
ids and types in order; older builds keep the bubbles inline in `conversation`), and
`bubbleId:<composer id>:<bubble id>` one message: `type` 1 the user's (`text`), 2 the agent's
(`text`, `thinking.text`, `toolFormerData` {`toolCallId`, `name`, `rawArgs`/`params`, `result`,
`status` loading | completed | error | cancelled, `userDecision`}, `tokenCount` {inputTokens,
outputTokens}), `createdAt`. A turn is a user bubble and the agent's bubbles after it.

Each `workspaceStorage/<hash>/state.vscdb` lists its composers (`ItemTable` key
`composer.composerData`: `allComposers[].composerId`) and `workspace.json` names the folder:
that is the composer's work dir. The stores are read read-only in short transactions while
Cursor writes them (`stores.read_only`), each composer exported to a JSONL (a `composer` line,
then a `bubble` line each) that is archived whole; a bubble that is missing or not JSON is
reported and skipped. Cursor also keeps VS Code's `chatSessions/`: found with the composers.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from . import vscode_chat
from .disk import is_dir, is_file
from .fields import as_int, field_dict, parse_time
from .lines import CallsBuilder, LogReader, Record
from .model import Step, ToolCall
from .sources import Discovery, SessionSource, SourceFile, listing, register
from .stores import (
    export_bytes,
    export_dir,
    export_path,
    has_table,
    json_value,
    read_only,
    read_reported,
    write_export,
)

SOURCE = "cursor"
DB = "state.vscdb"
FAILED = {"error": "error", "cancelled": "cancelled", "aborted": "cancelled"}


def _json(value: Any) -> Any:
    return json_value(value) if isinstance(value, bytes | str) else None


def _range(con: sqlite3.Connection, prefix: str) -> list[tuple[str, Any]]:
    """The rows whose key starts with `prefix`, by key range (the key's index; LIKE scans all)."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return list(
        con.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?", (prefix, end))
    )


def read_composers(db: Path) -> list[dict[str, Any]] | None:
    """Every composer of a global `state.vscdb` with its bubbles (None in place of one missing
    or not JSON), read-only in one transaction; None when the store has no `cursorDiskKV`."""
    out = []
    with read_only(db) as con:
        if not has_table(con, "cursorDiskKV"):
            return None
        for key, value in _range(con, "composerData:"):
            head = _json(value)
            if not isinstance(head, dict):
                head = {"composerId": key.split(":", 1)[1], "error": "composerData is not JSON"}
            cid = str(head.get("composerId") or key.split(":", 1)[1])
            stored = {k.rsplit(":", 1)[1]: _json(v) for k, v in _range(con, f"bubbleId:{cid}:")}
            inline = [b for b in head.pop("conversation", None) or [] if isinstance(b, dict)]
            stored.update((str(b.get("bubbleId")), b) for b in inline)  # an older build's
            order = head.pop("fullConversationHeadersOnly", None) or inline
            bubbles = [
                (str(h.get("bubbleId")), stored.get(str(h.get("bubbleId"))))
                for h in order
                if isinstance(h, dict)
            ]
            out.append({"id": cid, "head": head, "bubbles": bubbles})
    return out


def export_lines(composer: dict[str, Any]) -> bytes:
    lines = [{"type": "composer", "composer": composer["head"]}]
    lines += [{"type": "bubble", "bubbleId": b, "bubble": v} for b, v in composer["bubbles"]]
    return export_bytes(lines)


# --- turns -------------------------------------------------------------------------------------


def _call(tool: dict[str, Any], at: float | None) -> ToolCall:
    args = tool.get("rawArgs") or tool.get("params") or {}
    call = ToolCall(
        id=str(tool.get("toolCallId") or ""),
        name=str(tool.get("name") or ""),
        arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
        called_at=at,
    )
    status = str(tool.get("status") or "")
    if tool.get("userDecision") == "rejected":
        call.approval = "reject"
    if status in ("completed", *FAILED) or call.approval:
        output = tool.get("result")  # a JSON text: {"output": …} for a shell command
        call.result = {
            "is_error": status in FAILED or call.approval == "reject",
            "message": FAILED.get(status, ""),
            "output": output if isinstance(output, str) else json.dumps(output),
        }
        call.result_at = at
    return call


class CursorTurnBuilder(CallsBuilder):
    def __init__(self) -> None:
        super().__init__()
        self.status: str | None = None

    def feed(self, record: Record) -> None:
        rec = record.data
        if rec.get("type") == "composer":
            head = field_dict(rec, "composer")
            self.version = f"v{head['_v']}" if isinstance(head.get("_v"), int) else None
            self.status = head.get("status") if isinstance(head.get("status"), str) else None
            if head.get("error"):
                raise ValueError(head["error"])
            return
        if rec.get("type") != "bubble":
            return self.unknown_type(str(rec.get("type")))
        bubble = rec.get("bubble")
        if not isinstance(bubble, dict):
            raise ValueError(f"bubble {rec.get('bubbleId')} is missing or not JSON")
        at = parse_time(bubble.get("createdAt"))
        if bubble.get("type") == 1:
            self.open(str(bubble.get("text") or ""), at, record)
        elif bubble.get("type") == 2 and self.turns:
            turn = self.turns[-1]
            turn.byte_end, turn.last_at = record.end, at or turn.last_at
            step = Step(
                n=len(turn.steps) + 1,
                text=str(bubble.get("text") or ""),
                think=str(field_dict(bubble, "thinking").get("text") or ""),
            )
            tool = field_dict(bubble, "toolFormerData")
            if tool.get("name"):
                step.tool_calls.append(_call(tool, at))
            turn.steps.append(step)
            tokens = field_dict(bubble, "tokenCount")
            turn.usage["input_other"] += as_int(tokens.get("inputTokens"))
            turn.usage["output"] += as_int(tokens.get("outputTokens"))
        else:
            self.unknown_type(f"bubble type {bubble.get('type')}")

    def end(self) -> None:
        """The last turn ends unless Cursor is still generating it (`status`)."""
        if self.turns and self.turns[-1].end == "open" and self.status != "generating":
            turn = self.turns[-1]
            turn.end, turn.ended_at = "ended", turn.last_at
            turn.reason = FAILED.get(self.status or "") or (
                "completed" if turn.final_text else "interrupted"
            )


# --- discovery ---------------------------------------------------------------------------------


def _listed(db: Path) -> Any:
    """The value of a workspace store's `composer.composerData` (None when it has none)."""
    with read_only(db) as con:
        row = con.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerData'")
        found = row.fetchone()
    return found[0] if found else None


def composer_folders(user: Path, found: Discovery) -> dict[str, tuple[str, str]]:
    """composer id -> (workspace hash, folder) from every `workspaceStorage/<hash>`."""
    out: dict[str, tuple[str, str]] = {}
    for ws in listing(user / "workspaceStorage", found):
        folder = vscode_chat.workspace_folder(ws)
        if folder is None or not is_file(ws / DB):
            continue
        value = read_reported(_listed, ws / DB, "Cursor's workspace store", found)
        data = _json(value) if value is not None else None
        for c in field_dict({"d": data}, "d").get("allComposers") or []:
            if isinstance(c, dict) and isinstance(c.get("composerId"), str):
                out[c["composerId"]] = (ws.name, folder)
    return out


def _user_dir(path: Path) -> Path | None:
    for user in (path, path.parent, path.parent.parent):
        if is_file(user / "globalStorage" / DB) and (
            is_dir(path) or path == user / "globalStorage" / DB
        ):
            return user
    return None


def discover(path: Path) -> Discovery | None:
    """Cursor's composers (and chat sessions) under its `User` folder, its `globalStorage` or
    that folder's `state.vscdb`; None when `path` is not one or the store holds no composers
    (VS Code's own `state.vscdb` has no `cursorDiskKV`)."""
    user = _user_dir(path)
    if user is None:
        return None
    db = user / "globalStorage" / DB
    found = Discovery()
    composers = read_reported(read_composers, db, "Cursor's store", found)
    if composers is None:
        return found if found.skipped else None
    folders = composer_folders(user, found)
    out = export_dir(db, SOURCE)
    for c in composers:
        if not c["bubbles"]:
            continue  # opened and closed without a message
        export = export_path(out, c["id"])
        write_export(export, export_lines(c))
        bucket, folder = folders.get(c["id"], (SOURCE, ""))
        name = c["head"].get("name")
        found.sessions.append(
            SessionSource(
                SOURCE,
                c["id"],
                bucket,
                [folder] if folder else [],
                name if isinstance(name, str) else None,
                db.parent,
                [SourceFile("main", "composer.jsonl", export, whole=True)],
            )
        )
    chats = vscode_chat.discover(user) if is_dir(path) else None
    if chats is not None:
        found.sessions += chats.sessions
        found.skipped += chats.skipped
    return found


READER = register(
    LogReader(SOURCE, "Cursor", lambda p, i, v: CursorTurnBuilder(), discover, 28, whole=True)
)
parse_wire = READER.parse
