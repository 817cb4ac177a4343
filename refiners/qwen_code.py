"""Reader for Qwen Code (`~/.qwen/projects/<cwd, / as ->/chats/<session id>.jsonl`) into `Turn`s.

Qwen Code is a Gemini CLI fork whose chat log is a JSONL of records (docs/formats.md, written
by 0.15.10): each carries `uuid`, `parentUuid`, `sessionId`, `timestamp`, `type`, `cwd` and
`version`. `user` records (`message.parts` of `{text}`) open turns; `assistant` records hold
the model's `text`, `thought` and `functionCall` parts and the call's `usageMetadata`;
`tool_result` records bring a `functionResponse` and `toolCallResult.status`; `system`
records (`attribution_snapshot`, `ui_telemetry`, …) carry no conversation. The log is
append-only: read from a turn boundary like the other JSONL readers. A shell call whose
output says "Exit Code: N" with N != 0 failed.

A subagent (the `agent` tool) leaves no log of its own in 0.15.10: only `ui_telemetry`
events (`qwen-code.api_response`, `qwen-code.tool_call`) between the `agent` call and its
result. The subagent's turn is rebuilt from them: its prompt, its tool calls (name, args,
success, duration; no output) and usage, as agent `agent-<call id>`.

`/compress` in prompt mode (`qwen -p /compress`) writes neither the command nor a
`chat_compression` record: only the `ui_telemetry` of its model call (`prompt_id`
`compress-<ms>`, the summary in `response_text`). It counts as a compaction of the last turn.
A tool call the user cancelled (SIGINT: `toolCallResult.status: "cancelled"`, "[Operation
Cancelled] Reason: User cancelled tool execution.") fails and interrupts its turn, unless the
model is called again after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .disk import cannot_read, head_records, is_file, subdirs, unreadable
from .fields import EXIT_CODE, as_int, field_dict, field_list, parse_time
from .lines import LogReader, Record, TurnBuilder, prompt_turn, tool_call
from .model import Step, SubagentRun, ToolCall, Turn
from .sources import Discovery, SessionSource, SourceFile, listing, register

SOURCE = "qwen-code"
KNOWN_TYPES = frozenset({"user", "assistant", "tool_result", "system"})


def _parts(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in field_list(field_dict(rec, "message"), "parts") if isinstance(p, dict)]


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(
        str(p["text"]) for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
    )


def _compression_call(event: dict[str, Any]) -> bool:
    """The model call of a `/compress` (its `prompt_id` is `compress-<ms>`)."""
    prompt_id = event.get("prompt_id")
    return (
        event.get("event.name") == "qwen-code.api_response"
        and isinstance(prompt_id, str)
        and prompt_id.startswith("compress-")
    )


def _compressed(cur: Turn, event: dict[str, Any]) -> None:
    """A compression in prompt mode writes no `chat_compression` record, only the telemetry of
    its model call: a compaction of the turn it follows, with the call's usage and summary."""
    cur.compactions += 1
    cur.synthetic_text += str(event.get("response_text") or "")
    _event_usage(cur, event)


def _event_usage(turn: Turn, event: dict[str, Any]) -> None:
    """The usage an `api_response` telemetry event reports, added to `turn`."""
    cached = as_int(event.get("cached_content_token_count"))
    output = as_int(event.get("output_token_count")) + as_int(event.get("thoughts_token_count"))
    turn.add_usage(max(0, as_int(event.get("input_token_count")) - cached), output, cached)


class QwenTurnBuilder(TurnBuilder):
    def __init__(self, start_index: int = 0) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.calls: dict[str, ToolCall] = {}
        self.unknown: dict[str, int] = {}
        self.version: str | None = None
        self.agents: dict[str, Turn] = {}  # `agent` call id -> the subagent's turn, while it runs

    @property
    def cur(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def feed(self, record: Record) -> bool:
        rec, start, end = record.data, record.start, record.end
        kind = str(rec.get("type"))
        ts = parse_time(rec.get("timestamp"))
        if kind not in KNOWN_TYPES:
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
            return False
        if isinstance(rec.get("version"), str):
            self.version = rec["version"]
        parts = _parts(rec)
        if kind == "user" and not any("functionResponse" in p for p in parts):
            self._open(_text(parts), ts, start, end)
            return True
        cur = self.cur
        if cur is None:
            return False
        cur.byte_end = end
        cur.last_at = ts if ts is not None else cur.last_at
        if kind == "assistant":
            self._assistant(cur, rec, parts, ts)
        elif kind in ("tool_result", "user"):
            self._results(rec, parts, ts)
        elif kind == "system" and rec.get("subtype") == "chat_compression":
            cur.compactions += 1
        elif kind == "system" and rec.get("subtype") == "ui_telemetry":
            event = field_dict(field_dict(rec, "systemPayload"), "uiEvent")
            if _compression_call(event):
                _compressed(cur, event)
            elif self.agents:
                self._telemetry(event, ts)
        return False

    def _subagent(self, cur: Turn, call: ToolCall, args: dict[str, Any], ts: float | None) -> None:
        kind = args.get("subagent_type")
        prompt = str(args.get("prompt") or "")
        turn = Turn(index=0, started_at=ts, user_text=prompt, last_at=ts, legacy=True)
        run = SubagentRun(f"agent-{call.id}", kind if isinstance(kind, str) else None, call.id)
        run.turns.append(turn)
        cur.subagents[run.agent_id] = run
        self.agents[call.id] = turn

    def _telemetry(self, event: dict[str, Any], ts: float | None) -> None:
        """A running subagent's model call or tool call (the latest subagent started)."""
        turn = list(self.agents.values())[-1]
        name = event.get("event.name")
        if name == "qwen-code.api_response":
            _event_usage(turn, event)
        elif name == "qwen-code.tool_call" and event.get("function_name") != "agent":
            args = event.get("function_args")
            took = as_int(event.get("duration_ms")) / 1000.0
            call = ToolCall(
                id=f"{event.get('prompt_id') or ''}-{len(turn.tool_calls)}",
                name=str(event.get("function_name") or ""),
                arguments=json.dumps(args, ensure_ascii=False),
                result={
                    "is_error": event.get("success") is False,
                    "message": str(event.get("status") or ""),
                    "output": "",
                },
                called_at=None if ts is None else ts - took,
                result_at=ts,
            )
            turn.add_step(calls=[call])
            turn.last_at = ts

    def _open(self, text: str, ts: float | None, start: int, end: int) -> None:
        if self.cur is not None and self.cur.end == "open":
            self.cur.end = "superseded"
        self.turns.append(prompt_turn(self.index, ts, text, start, end))
        self.index += 1
        self.calls = {}

    def _assistant(
        self, cur: Turn, rec: dict[str, Any], parts: list[dict[str, Any]], ts: float | None
    ) -> None:
        cur.reason = None  # the work went on after a cancelled call
        step = Step(n=len(cur.steps) + 1, text=_text(parts))
        step.think = "\n".join(
            str(p["text"]) for p in parts if p.get("thought") and isinstance(p.get("text"), str)
        )
        for p in parts:
            fc = p.get("functionCall")
            if not isinstance(fc, dict):
                continue
            args = fc.get("args")
            call = tool_call(fc, args, ts)
            step.tool_calls.append(call)
            self.calls[call.id] = call
            if call.name == "agent" and isinstance(args, dict):
                self._subagent(cur, call, args, ts)
        cur.steps.append(step)
        usage = field_dict(rec, "usageMetadata")
        cached = as_int(usage.get("cachedContentTokenCount"))
        output = as_int(usage.get("candidatesTokenCount")) + as_int(usage.get("thoughtsTokenCount"))
        cur.add_usage(max(0, as_int(usage.get("promptTokenCount")) - cached), output, cached)

    def _results(self, rec: dict[str, Any], parts: list[dict[str, Any]], ts: float | None) -> None:
        status = str(field_dict(rec, "toolCallResult").get("status") or "")
        for p in parts:
            resp = p.get("functionResponse")
            if not isinstance(resp, dict):
                continue
            call = self.calls.get(str(resp.get("id") or ""))
            if call is None:
                continue
            body = resp.get("response")
            output = body.get("output", body) if isinstance(body, dict) else body
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            code = EXIT_CODE.search(text)
            failed = status in ("error", "cancelled") or (code is not None and code.group(1) != "0")
            call.result = {
                "is_error": failed,
                "message": status if status not in ("", "success") else "",
                "output": text,
            }
            call.result_at = ts
            if status == "cancelled" and self.cur is not None:  # cancelled by the user (SIGINT)
                self.cur.reason = "interrupted"
            sub = self.agents.pop(call.id, None)
            if sub is not None:  # the subagent's answer is the call's output
                sub.add_step(text)
                sub.end, sub.ended_at, sub.last_at = "ended", ts, ts
                sub.reason = "failed" if failed else "completed"


def _builder(path: Path, start_index: int, protocol: str | None) -> QwenTurnBuilder:
    return QwenTurnBuilder(start_index)


# --- discovery ---------------------------------------------------------------------------------


def _qwen_shaped(head: list[dict[str, Any]]) -> bool:
    """Qwen's records: a `message` of Gemini-style `parts` (Claude Code's hold `content`)."""
    return any(
        r.get("type") in KNOWN_TYPES
        and "sessionId" in r
        and isinstance(field_dict(r, "message").get("parts"), list)
        for r in head
    )


def _session(path: Path, head: list[dict[str, Any]]) -> SessionSource:
    cwd = next((r["cwd"] for r in head if isinstance(r.get("cwd"), str) and r["cwd"]), None)
    sid = next((str(r["sessionId"]) for r in head if r.get("sessionId")), path.stem)
    chats = path.parent
    bucket = chats.parent.name if chats.name == "chats" else "qwen-code"
    return SessionSource(
        SOURCE,
        sid,
        bucket,
        [cwd] if cwd else [],
        None,
        chats,
        [SourceFile("main", path.name, path)],
    )


def _chat_files(chats: Path, found: Discovery) -> None:
    files = [p for p in listing(chats, found) if p.suffix == ".jsonl" and is_file(p)]
    for f in files:
        head = head_records(f, limit=20, max_bytes=1 << 16)
        if _qwen_shaped(head):
            found.sessions.append(_session(f, head))
        elif head:
            found.skipped.append((str(f), "not a Qwen Code chat"))
        elif (why := cannot_read(f)) is not None:
            found.skipped.append((str(f), why))


def discover(path: Path) -> Discovery | None:
    """Qwen Code chats under `path` (a Qwen home, its `projects/`, a project folder, its `chats/`
    or one chat file), or None when `path` is not shaped like one."""
    if path.is_file():
        head = head_records(path, limit=20, max_bytes=1 << 16)
        if path.suffix != ".jsonl" or not _qwen_shaped(head):
            return None
        return Discovery([_session(path, head)])
    if (path / "projects").is_dir():
        chat_dirs = [p / "chats" for p in sorted(subdirs(path / "projects"))]
    elif path.name == "projects":
        chat_dirs = [p / "chats" for p in sorted(subdirs(path))]
    elif (path / "chats").is_dir():
        chat_dirs = [path / "chats"]
    elif path.name == "chats":
        chat_dirs = [path]
    else:
        return None
    found = Discovery()
    for chats in chat_dirs:
        try:
            if chats.is_dir():
                _chat_files(chats, found)
        except OSError as exc:  # one unreadable project folder: skip and report it, read the rest
            found.skipped.append((str(chats.parent), unreadable(exc)))
    return found if found.sessions else None


# Before Claude Code (order 30): its project folders look alike, and its reader would take these.
READER = register(LogReader(SOURCE, "Qwen Code", _builder, discover, 25))
parse_wire = READER.parse
