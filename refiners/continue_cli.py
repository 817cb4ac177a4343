"""Reader for Continue (`cn` CLI and IDE: `~/.continue/sessions/<id>.json`) into `Turn`s.

docs/formats.md (written by `cn` 1.5.47): one JSON document a session, rewritten whole on every
update (archived as a snapshot, parsed whole): `sessionId`, `title`, `workspaceDirectory` (the
work dir), `history` (items of `message` — `role` `user`, `assistant` with `toolCalls` and
`usage` {prompt_tokens, completion_tokens}, or `tool` — and, on an assistant item,
`toolCallStates`: each call's `status` (`done`, `errored`, `canceled`) and `output` blocks) and
the session's total `usage`. `sessions.json` beside them lists the sessions. A turn is a user
item and what follows it; the file holds no times but the session's creation (`sessions.json`
`dateCreated`), so turns have none. A turn is ended once an assistant item without tool calls
follows it (the document is written after each reply).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .disk import SNAPSHOT_MAX, load_json, load_snapshot
from .fields import field_dict, field_list
from .lines import prompt_turn, tool_call
from .model import ParseResult, Step, ToolCall, Turn
from .sources import Discovery, SessionSource, SnapshotReader, SourceFile, register

SOURCE = "continue"
FAILED = frozenset({"errored", "canceled", "cancelled"})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text")) for p in parts if isinstance(p, dict) and "text" in p)


def _calls(item: dict[str, Any], msg: dict[str, Any]) -> list[ToolCall]:
    states = {
        str(s.get("toolCallId")): s
        for s in field_list(item, "toolCallStates")
        if isinstance(s, dict)
    }
    out = []
    for tc in field_list(msg, "toolCalls"):
        if not isinstance(tc, dict):
            continue
        fn = field_dict(tc, "function")
        call = tool_call({"id": tc.get("id"), "name": fn.get("name")}, fn.get("arguments"), None)
        state = states.get(call.id)
        if state is not None and state.get("status") in FAILED | {"done"}:
            outputs = [o for o in field_list(state, "output") if isinstance(o, dict)]
            call.result = {
                "is_error": state.get("status") in FAILED,
                "message": "" if state.get("status") == "done" else str(state.get("status")),
                "output": "\n".join(str(o.get("content") or "") for o in outputs),
            }
        out.append(call)
    return out


def build_turns(history: list[Any]) -> list[Turn]:
    turns: list[Turn] = []
    for item in history:
        msg = field_dict(item, "message") if isinstance(item, dict) else {}
        role = msg.get("role")
        if role == "user":
            if turns and turns[-1].end == "open":
                turns[-1].end = "superseded"
            turns.append(prompt_turn(len(turns), None, _text(msg.get("content")), 0))
        elif role == "assistant" and turns:
            cur = turns[-1]
            step = Step(
                n=len(cur.steps) + 1, text=_text(msg.get("content")), tool_calls=_calls(item, msg)
            )
            cur.steps.append(step)
            usage = field_dict(msg, "usage")
            cur.add_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))
            if not step.tool_calls:
                cur.end, cur.reason = "ended", "completed"
    return turns


def read(path: Path) -> ParseResult:
    """Parse a whole Continue session."""
    data = load_snapshot(path)
    if isinstance(data, ParseResult):
        return data
    history = data.get("history") if isinstance(data, dict) else None
    size = path.stat().st_size
    if not isinstance(history, list):
        return ParseResult.malformed("no `history` list: not a Continue session", "json", size)
    return ParseResult("json", build_turns(history), complete_offset=size)


# --- discovery ---------------------------------------------------------------------------------


def _session(path: Path, data: dict[str, Any]) -> SessionSource:
    cwd, title = data.get("workspaceDirectory"), data.get("title")
    return SessionSource(
        SOURCE,
        str(data.get("sessionId") or path.stem),
        SOURCE,  # one folder for every project: no per-project bucket
        [cwd] if isinstance(cwd, str) and cwd else [],
        title if isinstance(title, str) else None,
        path.parent,
        [SourceFile("main", path.name, path, whole=True)],
    )


def _load(path: Path) -> dict[str, Any] | None:
    data = load_json(path, SNAPSHOT_MAX) if path.suffix == ".json" else None
    ok = isinstance(data, dict) and "sessionId" in data and isinstance(data.get("history"), list)
    return data if ok else None


def discover(path: Path) -> Discovery | None:
    """Continue sessions under `path` (a `~/.continue`, its `sessions/` or one session file), or
    None when `path` is not shaped like one. `sessions.json` (the index) is not a session."""
    if path.is_file():
        data = _load(path)
        return Discovery([_session(path, data)]) if data is not None else None
    folder = path / "sessions" if (path / "sessions" / "sessions.json").is_file() else path
    if not (folder / "sessions.json").is_file():
        return None
    found = Discovery()
    for f in sorted(folder.glob("*.json")):
        data = _load(f) if f.name != "sessions.json" else None
        if data is not None:
            found.sessions.append(_session(f, data))
        elif f.name != "sessions.json":
            found.skipped.append((str(f), "not a Continue session (no sessionId and history)"))
    return found if found.sessions else None


READER = register(SnapshotReader(SOURCE, "Continue", read, discover, order=29))
parse_wire = READER.parse
