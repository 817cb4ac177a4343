"""Reader for Factory Droid (`~/.factory/sessions/<cwd, / as ->/<id>.jsonl`) into `Turn`s.

docs/formats.md (written by 0.225.2): a `session_start` line (`id`, `title`, `version` 2,
`cwd`), then `message` lines (`id`, `parentId`, `timestamp`, `message` in Anthropic's shape:
`role`, `content` blocks `text`, `thinking`, `tool_use`, `tool_result` with `is_error`) and
`agent_turn_outcome` lines (`turnId`: the prompt's message id, `reason`) that end a turn. A user
message whose id starts with `context-` carries the `<system-reminder>` blocks Droid sends
before the prompt: not a turn. The log holds no per-call usage: the session's token totals
are in `<id>.settings.json` beside it (`tokenUsage`), archived as a snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .disk import head_records, subdirs
from .fields import field_dict, parse_time
from .lines import CallsBuilder, LogReader, Record, tool_call
from .model import Step
from .sources import Discovery, SessionSource, SourceFile, jsonl_sessions, register

SOURCE = "droid"
OUTCOMES = {"completed": "completed", "error": "failed", "cancelled": "cancelled"}


def _blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _joined(blocks: list[dict[str, Any]], kind: str, key: str) -> str:
    return "\n".join(str(b.get(key) or "") for b in blocks if b.get("type") == kind)


class DroidTurnBuilder(CallsBuilder):
    def feed(self, record: Record) -> None:
        rec, end = record.data, record.end
        kind = str(rec.get("type"))
        ts = parse_time(rec.get("timestamp"))
        if kind == "session_start":
            self.version = f"session-v{rec.get('version')}"
            return
        if kind not in ("message", "agent_turn_outcome"):
            self.unknown_type(kind)
            return
        msg = field_dict(rec, "message")
        blocks = _blocks(msg)
        prompt = msg.get("role") == "user" and not any(
            b.get("type") == "tool_result" for b in blocks
        )
        if prompt and not str(rec.get("id") or "").startswith("context-"):
            self.open(_joined(blocks, "text", "text"), ts, record)
            return
        cur = self.turns[-1] if self.turns else None
        if cur is None or prompt:
            return
        cur.byte_end, cur.last_at = end, ts if ts is not None else cur.last_at
        if kind == "agent_turn_outcome":
            reason = OUTCOMES.get(str(rec.get("reason")), "completed")
            cur.end, cur.reason, cur.ended_at = "ended", reason, cur.last_at
        elif msg.get("role") == "assistant":
            step = Step(n=len(cur.steps) + 1, text=_joined(blocks, "text", "text"))
            step.think = _joined(blocks, "thinking", "thinking")
            for b in blocks:
                if b.get("type") == "tool_use":
                    call = tool_call(b, b.get("input"), ts)
                    step.tool_calls.append(call)
                    self.calls[call.id] = call
            cur.steps.append(step)
        else:
            for b in blocks:
                done = self.calls.get(str(b.get("tool_use_id") or ""))
                if b.get("type") == "tool_result" and done is not None:
                    out = b.get("content")
                    text = out if isinstance(out, str) else _joined(_blocks(b), "text", "text")
                    done.result = {
                        "is_error": b.get("is_error") is True,
                        "message": "",
                        "output": text,
                    }
                    done.result_at = ts


# --- discovery ---------------------------------------------------------------------------------


def _header(path: Path) -> dict[str, Any] | None:
    head = head_records(path, limit=1, max_bytes=1 << 16)
    return head[0] if head and head[0].get("type") == "session_start" and "cwd" in head[0] else None


def _session(path: Path, header: dict[str, Any]) -> SessionSource:
    cwd, title = header.get("cwd"), header.get("title")
    settings = path.with_name(f"{path.stem}.settings.json")
    return SessionSource(
        SOURCE,
        str(header.get("id") or path.stem),
        path.parent.name,
        [cwd] if isinstance(cwd, str) and cwd else [],
        title if isinstance(title, str) else None,
        path.parent,
        [SourceFile("main", path.name, path)],
        [SourceFile("main", settings.name, settings, whole=True)] if settings.is_file() else [],
    )


def discover(path: Path) -> Discovery | None:
    """Droid sessions under `path` (a `~/.factory`, its `sessions/`, one project folder or one
    session file), or None when `path` is not shaped like one."""
    if path.is_file():
        header = _header(path) if path.suffix == ".jsonl" else None
        return Discovery([_session(path, header)]) if header is not None else None
    if (path / "sessions").is_dir():
        folders = sorted(subdirs(path / "sessions"))
    elif path.name == "sessions":
        folders = sorted(subdirs(path))
    else:
        folders = [path]
    found = Discovery()
    for folder in folders:
        jsonl_sessions(folder, found, _header, _session)
    return found if found.sessions else None


READER = register(
    LogReader(
        SOURCE, "Factory Droid", lambda path, index, protocol: DroidTurnBuilder(index), discover, 28
    )
)
parse_wire = READER.parse
