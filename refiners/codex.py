"""Reader for the OpenAI Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) into `Turn`s.

FORMATS.md §5. A turn opens at `event_msg/user_message`; the same text also arrives as a
`response_item` user message, and the assistant's words and reasoning twice (`response_item`
and `event_msg`): the `response_item`s are used, the events only when a turn has no item.
`token_count` repeats itself: a count whose cumulative total did not move is not added again.

Rollouts of 0.171 (docs/formats.md) write no `user_message` event: the turn opens at the
`event_msg/item_completed` whose item is a `UserMessage`; records carry an `ordinal`, and
`world_state` / `token_usage_record` lines are new (the usage still comes from `token_count`).
A shell call's exit code is in its `CommandExecution` item and in the output's
"Process exited with code N" line.

A compaction (`compacted`) can run before a turn's prompt is written (an automatic one, after
`task_started`): what comes between the last turn's end and the next prompt (the compaction's
model call, its usage, the `compacted` record) belongs to the turn that follows. The model's
summary is the assistant message just before `compacted` (its text is in the record's
`message`): no answer, it is kept as synthetic text. A subagent (`spawn_agent`, 0.171) runs in a
rollout of its own whose `session_meta.source.subagent.thread_spawn.parent_thread_id` names the
parent: archived with the parent as that agent's file, the call's output names its id. A
subagent's subagent joins the same session; one whose parent's rollout is not there is kept
under the parent thread's id all the same (a session with no main file until the parent comes).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .disk import cannot_read, head_records, is_dir, is_file, not_regular, unreadable
from .fields import arguments_text, as_int, field_dict, field_list, loads_valid, parse_time
from .lines import LogReader, Record, TurnBuilder, prompt_turn
from .model import Step, SubagentRun, ToolCall, Turn
from .sources import Discovery, SessionSource, SourceFile, register

SOURCE = "codex"
KNOWN_ITEMS = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)
_EXIT_LINE = re.compile(r"^Process exited with code (-?\d+)$", re.M)
_IDE_REQUEST = re.compile(r"^#+\s*My request for Codex:\s*$", re.M)
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")


def user_request(text: str) -> str:
    """The user's own words: the IDE-context preamble ("# Context from my IDE setup: …
    ## My request for Codex:") that the VS Code extension wraps around them is cut off."""
    match = _IDE_REQUEST.search(text)
    return text[match.end() :].strip() if match else text


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = [
        str(p.get("text") or "")
        for p in (content if isinstance(content, list) else [])
        if isinstance(p, dict) and p.get("type") in ("output_text", "input_text", "text")
    ]
    return "".join(parts)


def _output(value: Any) -> tuple[Any, bool]:
    """A tool output and whether it failed; old builds JSON-encode `{"output", "metadata"}`."""
    if isinstance(value, str):
        try:
            decoded = loads_valid(value)
        except ValueError:
            return value, False
        if isinstance(decoded, dict) and "output" in decoded:
            meta = field_dict(decoded, "metadata")
            code = meta.get("exit_code")
            return decoded["output"], isinstance(code, int) and code != 0
        code_line = _EXIT_LINE.search(value[:400])
        return value, code_line is not None and code_line.group(1) != "0"
    if isinstance(value, dict):
        return value.get("content", value), value.get("success") is False
    return value, False


class CodexTurnBuilder(TurnBuilder):
    def __init__(self, start_index: int = 0) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.cur: Turn | None = None
        self.calls: dict[str, ToolCall] = {}
        self.event_text: list[str] = []
        self.event_think: list[str] = []
        self.last_total: Any = None
        self.unknown: dict[str, int] = {}
        self.version: str | None = None
        self.exit_codes: dict[str, int] = {}  # call id -> exit code from a CommandExecution item
        self.by_event = False  # the current turn was opened by a `user_message` event
        self.before: Turn | None = None  # after `task_started`, before the next prompt

    def feed(self, record: Record) -> bool:
        rec, start, end = record.data, record.start, record.end
        kind = str(rec.get("type"))
        payload = field_dict(rec, "payload")
        ptype = str(payload.get("type") or "")
        ts = parse_time(rec.get("timestamp"))
        if kind not in KNOWN_ITEMS:
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
        if kind == "session_meta":
            self.version = str(payload.get("cli_version") or "") or self.version
            return False
        opened = kind == "event_msg" and self._opens(ptype, payload)
        if opened:
            self._open(_user_payload(payload), ts, start)
            self.by_event = ptype == "user_message"
        elif ptype == "task_started" and self.cur is not None and self.cur.end == "ended":
            self.before = Turn(index=-1, started_at=ts)  # a new task: its records, not the last's
        cur = self.before or self.cur
        if cur is None:
            return opened
        cur.byte_end = end
        if ts is not None:
            cur.last_at = ts
        if kind == "response_item":
            self._item(cur, ptype, payload, ts)
        elif kind == "event_msg" and not opened:
            self._event(cur, ptype, payload, ts)
        elif kind == "compacted":
            cur.compactions += 1
            _summary_out(cur, str(payload.get("message") or ""))
        return opened

    def _opens(self, ptype: str, payload: dict[str, Any]) -> bool:
        """A `user_message` event opens a turn; so does a completed `UserMessage` item (0.171),
        unless a `user_message` event already opened this turn with the same words."""
        if ptype == "user_message":
            return True
        item = field_dict(payload, "item")
        if ptype != "item_completed" or item.get("type") != "UserMessage":
            return False
        cur = self.cur
        text = user_request(_content_text(item.get("content")))
        return not (cur is not None and self.by_event and not cur.steps and cur.user_text == text)

    def _open(self, payload: dict[str, Any], ts: float | None, start: int) -> None:
        self.close()
        if self.cur is not None and self.cur.end == "open":
            self.cur.end = "superseded"
        before, self.before = self.before, None
        text = user_request(str(payload.get("message") or ""))
        media = [
            {"type": "image", "url_prefix": str(i)[:40], "bytes_b64": len(str(i))}
            for i in field_list(payload, "images")
        ]
        turn = prompt_turn(self.index, ts, text, start, media=media)
        self.index += 1
        self.turns.append(turn)
        self.cur, self.calls = turn, {}
        if before is not None:
            _merge(turn, before)

    def end(self) -> None:
        """The file ends: what came after the last task started belongs to the last turn."""
        self.close()
        if self.before is not None and self.cur is not None:
            _merge(self.cur, self.before, steps=True)
            self.before = None

    def close(self) -> None:
        """Use the event copies of the assistant's words when no response item carried them."""
        cur = self.cur
        if cur is not None and not cur.assistant_text and self.event_text:
            cur.add_step("\n\n".join(self.event_text))
        if cur is not None and not cur.thinking and self.event_think:
            if not cur.steps:
                cur.steps.append(Step(n=1))
            cur.steps[0].think = "\n\n".join(self.event_think)
        self.event_text, self.event_think = [], []

    def _step(self, cur: Turn, fresh: bool = False) -> Step:
        """The current step; a new one after tool calls (the model was called again)."""
        if not cur.steps or fresh or cur.steps[-1].tool_calls:
            cur.add_step()
        return cur.steps[-1]

    def _item(self, cur: Turn, ptype: str, p: dict[str, Any], ts: float | None) -> None:
        if ptype == "message" and p.get("role") == "assistant":
            step = self._step(cur)
            text = _content_text(p.get("content"))
            step.text += ("\n\n" if step.text and text else "") + text
        elif ptype == "reasoning":
            summary = [
                str(s.get("text") or "") for s in field_list(p, "summary") if isinstance(s, dict)
            ]
            if any(summary):
                self._step(cur).think += "\n".join(s for s in summary if s)
        elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            args = (
                p.get("arguments") if ptype == "function_call" else p.get("input", p.get("action"))
            )
            call = ToolCall(
                id=str(p.get("call_id") or p.get("id") or ""),
                name=str(p.get("name") or ("shell" if ptype == "local_shell_call" else "")),
                arguments=arguments_text(args),
                called_at=ts,
            )
            step = cur.steps[-1] if cur.steps else self._step(cur)
            step.tool_calls.append(call)
            self.calls[call.id] = call
        elif ptype in ("function_call_output", "custom_tool_call_output"):
            done = self.calls.get(str(p.get("call_id")))
            if done is not None:
                output, failed = _output(p.get("output"))
                code = self.exit_codes.get(done.id)
                failed = failed or (code is not None and code != 0)
                done.result = {"is_error": failed, "message": "", "output": output}
                done.result_at = ts
                if done.name == "spawn_agent":
                    _spawned(cur, done)

    def _event(self, cur: Turn, ptype: str, p: dict[str, Any], ts: float | None) -> None:
        if ptype == "agent_message":
            self.event_text.append(str(p.get("message") or ""))
        elif ptype == "agent_reasoning":
            self.event_think.append(str(p.get("text") or ""))
        elif ptype == "token_count":
            info = field_dict(p, "info")
            total, last = info.get("total_token_usage"), info.get("last_token_usage")
            if total is None or total == self.last_total:
                return
            self.last_total = total
            usage = last if isinstance(last, dict) else {}
            cached = as_int(usage.get("cached_input_tokens"))
            fresh = max(0, as_int(usage.get("input_tokens")) - cached)
            cur.add_usage(fresh, usage.get("output_tokens"), cached)
        elif ptype == "task_complete":
            cur.end, cur.ended_at, cur.reason = "ended", ts, "completed"
        elif ptype == "turn_aborted":
            cur.end, cur.ended_at = "ended", ts
            cur.reason = "interrupted" if p.get("reason") == "interrupted" else "cancelled"
        elif ptype in ("error", "stream_error"):
            cur.api_errors += 1
        elif ptype == "item_completed":
            self._completed(field_dict(p, "item"))

    def _completed(self, item: dict[str, Any]) -> None:
        """A `CommandExecution` item's exit code marks its call failed (whichever comes first)."""
        code = item.get("exit_code")
        if item.get("type") != "CommandExecution" or not isinstance(code, int):
            return
        call_id = str(item.get("id") or "")
        self.exit_codes[call_id] = code
        done = self.calls.get(call_id)
        if done is not None and done.result is not None and code != 0:
            done.result["is_error"] = True


def _summary_out(cur: Turn, message: str) -> None:
    """The assistant text just before a `compacted` record is the compaction's summary (the
    record's `message` holds it): synthetic text, not the turn's answer."""
    step = cur.steps[-1] if cur.steps else None
    if step is None or step.tool_calls or not step.text or step.text not in message:
        return
    cur.synthetic_text += step.text
    step.text = ""
    if not step.think:
        cur.steps.pop()


def _merge(turn: Turn, before: Turn, steps: bool = False) -> None:
    """What ran between two turns (a compaction) into `turn`: usage, compactions, errors and
    summaries (and, at the end of a file, its steps)."""
    for key, value in before.usage.items():
        turn.usage[key] += value
    turn.compactions += before.compactions
    turn.api_errors += before.api_errors
    turn.synthetic_text = before.synthetic_text + turn.synthetic_text
    if steps:
        for step in before.steps:
            step.n = len(turn.steps) + 1
            turn.steps.append(step)
    elif before.assistant_text:  # a model call of the task before its prompt: no answer
        turn.synthetic_text = before.assistant_text + turn.synthetic_text


def _spawned(cur: Turn, call: ToolCall) -> None:
    """A `spawn_agent` result names the subagent's thread (`agent_id`): its rollout."""
    output = call.result.get("output") if call.result else None
    try:
        named = loads_valid(output) if isinstance(output, str) else None
    except ValueError:
        return
    agent = named.get("agent_id") if isinstance(named, dict) else None
    if isinstance(agent, str) and agent:
        cur.subagents[agent] = SubagentRun(agent, None, call.id)


def _user_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A `user_message` payload, or one made from a `UserMessage` item's content (0.171)."""
    item = field_dict(payload, "item")
    if item.get("type") != "UserMessage":
        return payload
    content = item.get("content")
    images = [
        str(p.get("image_url") or p.get("url") or "")
        for p in (content if isinstance(content, list) else [])
        if isinstance(p, dict) and p.get("type") in ("image", "local_image", "input_image")
    ]
    return {"message": _content_text(content), "images": images}


def _builder(path: Path, start_index: int, protocol: str | None) -> CodexTurnBuilder:
    return CodexTurnBuilder(start_index)


# --- discovery ---------------------------------------------------------------------------------


def _session(path: Path, head: list[dict[str, Any]]) -> SessionSource:
    meta = next((r.get("payload") for r in head if r.get("type") == "session_meta"), None)
    meta = meta if isinstance(meta, dict) else {}
    tail = _UUID_TAIL.search(path.stem)
    sid = str(meta.get("id") or (tail.group(1) if tail else path.stem))
    cwd = meta.get("cwd")
    git = field_dict(meta, "git")
    return SessionSource(
        SOURCE,
        sid,
        "codex",
        [cwd] if isinstance(cwd, str) and cwd else [],
        None,
        path.parent,
        [SourceFile("main", path.name, path)],
        branch=git.get("branch") if isinstance(git.get("branch"), str) else None,
    )


def _is_rollout(head: list[dict[str, Any]]) -> bool:
    return bool(head) and head[0].get("type") == "session_meta"


def discover(path: Path) -> Discovery | None:
    """Codex rollouts under `path` (a Codex home, its `sessions/` or a date folder, or one
    rollout file), or None when `path` is not shaped like one."""
    if is_file(path):
        head = head_records(path, limit=3)
        if path.suffix != ".jsonl" or not _is_rollout(head):
            return None
        session, parent = _session(path, head), _parent_thread(head)
        found = Discovery([] if parent else [session])
        _attach([(parent, session)] if parent else [], found)  # a subagent: under its parent
        return found
    if is_dir(path / "sessions") or is_dir(path / "archived_sessions"):
        folders = [path / "sessions", path / "archived_sessions"]
    elif path.name in ("sessions", "archived_sessions") or (
        path.name.isdigit() and len(path.name) in (2, 4)
    ):
        folders = [path]
    else:
        return None
    found = Discovery()
    files = sorted(
        f for folder in folders if is_dir(folder) for f in folder.rglob("rollout-*.jsonl")
    )
    for folder in folders:  # rglob passes over a folder it may not list: say so
        for _ in os.walk(folder, onerror=lambda exc: _denied(exc, found)):
            pass
    if not files:
        return found if found.skipped else None
    children: list[tuple[str, SessionSource]] = []
    for f in files:
        why = not_regular(f)
        if why is not None:
            found.skipped.append((str(f), why))
            continue
        head = head_records(f, limit=3)
        if not _is_rollout(head):
            why = cannot_read(f) or "no session_meta first line: not a Codex rollout"
            found.skipped.append((str(f), why))
            continue
        session = _session(f, head)
        parent = _parent_thread(head)
        (children.append((parent, session)) if parent else found.sessions.append(session))
    _attach(children, found)
    return found


def _denied(exc: OSError, found: Discovery) -> None:
    if not isinstance(exc, FileNotFoundError):
        found.skipped.append((str(exc.filename), unreadable(exc)))


def _attach(children: list[tuple[str, SessionSource]], found: Discovery) -> None:
    """Each subagent's rollout as a file of its session (`subagents/<file>`, agent = its thread
    id): the session of the parent thread it names, or of that parent's parent when the parent
    is a subagent too. When no rollout of those threads is here (another day's folder, a file
    given alone, a deleted parent), it is kept under the top thread's id all the same, in a
    session with no main file, as Claude Code keeps an orphaned subagent log: the subagent is
    never archived as a session of its own, so its parent found later joins it."""
    by_id = {s.session_id: s for s in found.sessions}
    parent_of = {child.session_id: parent for parent, child in children}
    for parent, child in children:
        top, seen = parent, {child.session_id}
        while top not in by_id and top in parent_of and top not in seen:
            seen.add(top)
            top = parent_of[top]
        if top not in by_id:
            by_id[top] = SessionSource(
                SOURCE,
                top,
                child.bucket,
                child.work_dirs,
                None,
                child.session_dir,
                [],
                [],
                child.branch,
            )
            found.sessions.append(by_id[top])
        [main] = child.files
        by_id[top].files.append(SourceFile(child.session_id, f"subagents/{main.rel}", main.path))


def _parent_thread(head: list[dict[str, Any]]) -> str | None:
    """The parent thread of a subagent's rollout (`source.subagent.thread_spawn`), else None."""
    meta = field_dict(head[0], "payload")
    spawn = field_dict(field_dict(field_dict(meta, "source"), "subagent"), "thread_spawn")
    parent = spawn.get("parent_thread_id")
    return parent if isinstance(parent, str) and parent else None


READER = register(LogReader(SOURCE, "Codex CLI", _builder, discover, 40))
parse_wire = READER.parse
