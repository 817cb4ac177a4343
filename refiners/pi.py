"""Reader for Pi, the coding agent (`~/.pi/agent/sessions/--<cwd>--/<ts>_<id>.jsonl`), into `Turn`s.

docs/formats.md (written by 0.73.1): a `session` header (`id`, `version` 3, `cwd`), then entries
(`id`, `parentId`, `timestamp`): `message` entries hold a `message` with a `role` — `user` opens a
turn; `assistant` holds `text`, `thinking` and `toolCall` blocks, its `usage` and `stopReason`
(`toolUse` goes on; `stop`/`length` end the turn, `error` fails it, `aborted` interrupts it);
`toolResult` carries a call's output and `isError`; `bashExecution` is a `!command` the user
ran (a turn of its own). `compaction` and `branch_summary` entries add a summary to the turn
they follow. `model_change`, `thinking_level_change`, `custom`, `label` and `session_info`
carry no conversation. Entries are read in file order (a `/tree` branch is not rebuilt).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .disk import head_records, subdirs
from .fields import field_dict, parse_time
from .lines import CallsBuilder, LogReader, Record, tool_call
from .model import Step, ToolCall, Turn
from .sources import Discovery, SessionSource, SourceFile, jsonl_sessions, register

SOURCE = "pi"
QUIET = frozenset(
    {"session", "model_change", "thinking_level_change", "custom", "label", "session_info"}
)
STOPS = {"stop": "completed", "length": "completed", "error": "failed", "aborted": "interrupted"}


def _text(content: Any, kind: str = "text") -> str:
    if isinstance(content, str):
        return content if kind == "text" else ""
    blocks = content if isinstance(content, list) else []
    return "\n".join(
        str(b.get(kind)) for b in blocks if isinstance(b, dict) and b.get("type") == kind
    )


class PiTurnBuilder(CallsBuilder):
    def feed(self, record: Record) -> None:
        rec, end = record.data, record.end
        kind = str(rec.get("type"))
        ts = parse_time(rec.get("timestamp"))
        if kind == "session" and rec.get("version") is not None:
            self.version = f"session-v{rec['version']}"
        if kind in QUIET:
            return
        msg = field_dict(rec, "message")
        role = msg.get("role")
        if kind == "message" and role in ("user", "bashExecution"):
            text = _text(msg.get("content"))
            if role == "bashExecution":
                text = f"!{msg.get('command') or ''}"
            origin = "command" if role == "bashExecution" else None
            turn = self.open(text, ts, record, origin)
            if role == "bashExecution":
                self._bash(turn, msg, ts)
            return
        cur = self.turns[-1] if self.turns else None
        if kind not in ("message", "compaction", "branch_summary"):
            self.unknown_type(kind)
            return
        if cur is None:
            return
        cur.byte_end, cur.last_at = end, ts if ts is not None else cur.last_at
        if kind in ("compaction", "branch_summary"):
            cur.compactions += kind == "compaction"
            cur.synthetic_text += str(rec.get("summary") or "")
        elif role == "assistant":
            self._assistant(cur, msg, ts)
        elif role == "toolResult":
            call = self.calls.get(str(msg.get("toolCallId") or ""))
            if call is not None:
                output = _text(msg.get("content"))
                call.result = {
                    "is_error": msg.get("isError") is True,
                    "message": "",
                    "output": output,
                }
                call.result_at = ts

    def _assistant(self, cur: Turn, msg: dict[str, Any], ts: float | None) -> None:
        content = msg.get("content")
        step = Step(n=len(cur.steps) + 1, text=_text(content), think=_text(content, "thinking"))
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                call = tool_call(block, block.get("arguments"), ts)
                step.tool_calls.append(call)
                self.calls[call.id] = call
        cur.steps.append(step)
        cur.add_usage(
            *map(field_dict(msg, "usage").get, ("input", "output", "cacheRead", "cacheWrite"))
        )
        reason = STOPS.get(str(msg.get("stopReason")))
        if reason is not None:
            cur.end, cur.reason, cur.ended_at = "ended", reason, ts
            if reason == "failed":
                cur.api_errors += 1
                step.text = step.text or str(msg.get("errorMessage") or "")

    def _bash(self, turn: Turn, msg: dict[str, Any], ts: float | None) -> None:
        code = msg.get("exitCode")
        call = ToolCall(
            id=f"bash-{turn.index}",
            name="bash",
            arguments=json.dumps({"command": msg.get("command")}, ensure_ascii=False),
            result={
                "is_error": msg.get("cancelled") is True or (isinstance(code, int) and code != 0),
                "message": "cancelled" if msg.get("cancelled") is True else "",
                "output": str(msg.get("output") or ""),
            },
            called_at=ts,
            result_at=ts,
        )
        turn.steps.append(Step(n=1, tool_calls=[call]))
        turn.end, turn.reason, turn.ended_at = "ended", "completed", ts


# --- discovery ---------------------------------------------------------------------------------


def _header(path: Path) -> dict[str, Any] | None:
    head = head_records(path, limit=1, max_bytes=1 << 16)
    ok = head and head[0].get("type") == "session" and "cwd" in head[0] and "version" in head[0]
    return head[0] if ok else None


def _session(path: Path, header: dict[str, Any]) -> SessionSource:
    cwd = header.get("cwd")
    return SessionSource(
        SOURCE,
        str(header.get("id") or path.stem),
        path.parent.name,
        [cwd] if isinstance(cwd, str) and cwd else [],
        None,
        path.parent,
        [SourceFile("main", path.name, path)],
    )


def _is_cwd_folder(path: Path) -> bool:
    return path.name.startswith("--") and path.name.endswith("--") and len(path.name) > 3


def discover(path: Path) -> Discovery | None:
    """Pi sessions under `path` (a `~/.pi`, its `agent/`, `sessions/`, one `--<cwd>--` folder or
    one session file), or None when `path` is not shaped like one."""
    if path.is_file():
        header = _header(path) if path.suffix == ".jsonl" else None
        return Discovery([_session(path, header)]) if header is not None else None
    for sessions in (path / "agent" / "sessions", path / "sessions", path):
        folders = [d for d in sorted(subdirs(sessions)) if _is_cwd_folder(d)]
        if folders:
            break
    else:
        folders = [path] if _is_cwd_folder(path) else []
    found = Discovery()
    for folder in folders:
        jsonl_sessions(folder, found, _header, _session, "not a Pi session (no session header)")
    return found if found.sessions else None


READER = register(
    LogReader(SOURCE, "Pi", lambda path, index, protocol: PiTurnBuilder(index), discover, 26)
)
parse_wire = READER.parse
