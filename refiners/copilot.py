"""Reader for the GitHub Copilot CLI (`~/.copilot/session-state/<id>/events.jsonl`) into `Turn`s.

docs/formats.md (written by 1.0.102): one event a line, `{type, data, id, timestamp, parentId}`,
and `agentId` on a subagent's events. `session.start` (`data.context.cwd`, `copilotVersion`)
and `session.resume` open a run; `user.message` (`data.content`, the prompt as typed) opens a
turn; `assistant.message` is one model reply (`content`, `toolRequests`); `session.usage_record`
the usage of one model call; `tool.execution_complete` a call's result (`success`,
`result.content`, `error.message`, `shellExecution.exitCode`); `abort` a SIGINT; a main-agent
reply without tool requests ends the turn. A subagent (the `task` tool) writes its events into
the same file with its `agentId`: `subagent.started` names the call it runs for, its own
`user.message` is its prompt. `workspace.yaml` beside the log holds the same cwd.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .disk import head_records, subdirs
from .fields import field_dict, field_list, parse_time
from .lines import CallsBuilder, LogReader, Record, tool_call
from .model import Step, SubagentRun, Turn
from .sources import Discovery, SessionSource, SourceFile, register

SOURCE = "copilot"
# its names for the token counts, in `Turn.add_usage`'s order
USAGE = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
QUIET = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "session.model_change",
        "system.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "tool.execution_start",
        "subagent.configured",
        "subagent.completed",
    }
)
KNOWN = QUIET | {
    "user.message",
    "assistant.message",
    "session.usage_record",
    "tool.execution_complete",
    "subagent.started",
    "abort",
}


class CopilotTurnBuilder(CallsBuilder):
    def __init__(self, start_index: int = 0) -> None:
        super().__init__(start_index)
        self.agents: dict[str, Turn] = {}  # a running subagent's id -> its turn
        self.ran_by: dict[str, str] = {}  # a `task` call's id -> the subagent it runs

    def feed(self, record: Record) -> None:
        rec, end = record.data, record.end
        kind, data = str(rec.get("type")), field_dict(rec, "data")
        ts = parse_time(rec.get("timestamp"))
        agent = rec.get("agentId")
        if kind not in KNOWN:
            self.unknown_type(kind)
            return
        if kind == "session.start" and isinstance(data.get("copilotVersion"), str):
            self.version = data["copilotVersion"]
        if kind == "user.message" and agent is None:
            self.open(str(data.get("content") or ""), ts, record)
            return
        main = self.turns[-1] if self.turns else None
        if main is None or kind in QUIET:
            return
        main.byte_end, main.last_at = end, ts if ts is not None else main.last_at
        turn = self.agents.get(str(agent), main) if agent is not None else main
        if kind == "subagent.started":
            self._subagent(main, str(agent), data, ts)
        elif kind == "assistant.message":
            self._reply(turn, data, ts, is_main=agent is None)
        elif kind == "session.usage_record":
            turn.add_usage(*map(field_dict(data, "usage").get, USAGE))
        elif kind == "tool.execution_complete":
            self._result(data, ts)
        elif kind == "abort":
            main.end, main.reason, main.ended_at = "ended", "interrupted", ts

    def _subagent(self, main: Turn, agent: str, data: dict[str, Any], ts: float | None) -> None:
        call_id = str(data.get("toolCallId") or "")
        call = self.calls.get(call_id)
        prompt = call.args.get("prompt") if call is not None else None
        turn = Turn(index=0, started_at=ts, user_text=str(prompt or ""), last_at=ts, legacy=True)
        kind = data.get("agentType") or data.get("agentName")
        run = SubagentRun(agent, kind if isinstance(kind, str) else None, call_id)
        run.turns.append(turn)
        main.subagents[agent] = run
        self.agents[agent] = turn
        self.ran_by[call_id] = agent

    def _reply(self, turn: Turn, data: dict[str, Any], ts: float | None, is_main: bool) -> None:
        step = Step(n=len(turn.steps) + 1, text=str(data.get("content") or ""))
        step.think = str(data.get("reasoningText") or "")
        for req in field_list(data, "toolRequests"):
            if not isinstance(req, dict):
                continue
            part = {"id": req.get("toolCallId"), "name": req.get("name")}
            call = tool_call(part, req.get("arguments"), ts)
            step.tool_calls.append(call)
            self.calls[call.id] = call
        turn.steps.append(step)
        if is_main and not step.tool_calls:
            turn.end, turn.reason, turn.ended_at = "ended", "completed", ts

    def _result(self, data: dict[str, Any], ts: float | None) -> None:
        call = self.calls.get(str(data.get("toolCallId") or ""))
        if call is None:
            return
        code = field_dict(data, "shellExecution").get("exitCode")
        failed = data.get("success") is not True or (isinstance(code, int) and code != 0)
        output = field_dict(data, "result").get("content")
        call.result = {
            "is_error": failed,
            "message": str(field_dict(data, "error").get("message") or ""),
            "output": output if isinstance(output, str) else "",
        }
        call.result_at = ts
        sub = self.agents.pop(self.ran_by.pop(call.id, ""), None)  # the subagent it ran, done
        if sub is not None:
            sub.end, sub.reason, sub.ended_at = "ended", "failed" if failed else "completed", ts


# --- discovery ---------------------------------------------------------------------------------


def _start(path: Path) -> dict[str, Any] | None:
    head = head_records(path, limit=1, max_bytes=1 << 16)
    return field_dict(head[0], "data") if head and head[0].get("type") == "session.start" else None


def _session(events: Path, data: dict[str, Any]) -> SessionSource:
    cwd = field_dict(data, "context").get("cwd")
    branch = field_dict(data, "context").get("branch")
    return SessionSource(
        SOURCE,
        str(data.get("sessionId") or events.parent.name),
        events.parent.name,
        [cwd] if isinstance(cwd, str) and cwd else [],
        None,
        events.parent,
        [SourceFile("main", events.name, events)],
        branch=branch if isinstance(branch, str) else None,
    )


def discover(path: Path) -> Discovery | None:
    """Copilot CLI sessions under `path` (a `~/.copilot`, its `session-state/`, one session
    folder or its `events.jsonl`), or None when `path` is not shaped like one."""
    if path.is_file():
        data = _start(path) if path.name == "events.jsonl" else None
        return Discovery([_session(path, data)]) if data is not None else None
    if (path / "session-state").is_dir():
        folders = sorted(subdirs(path / "session-state"))
    elif (path / "events.jsonl").is_file():
        folders = [path]
    elif path.name == "session-state":
        folders = sorted(subdirs(path))
    else:
        return None
    found = Discovery()
    for folder in folders:
        events = folder / "events.jsonl"
        data = _start(events) if events.is_file() else None
        if data is not None:
            found.sessions.append(_session(events, data))
        elif events.is_file():
            found.skipped.append((str(events), "not a Copilot CLI log (no session.start)"))
    return found if found.sessions else None


READER = register(
    LogReader(
        SOURCE,
        "GitHub Copilot CLI",
        lambda path, index, protocol: CopilotTurnBuilder(index),
        discover,
        27,
    )
)
parse_wire = READER.parse
