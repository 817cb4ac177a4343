"""Reader for VS Code's chat (GitHub Copilot Chat) into `Turn`s: the sessions VS Code, its
Insiders build, VSCodium and Cursor keep in `User/workspaceStorage/<hash>/chatSessions/` (and
`globalStorage/emptyWindowChatSessions/`), the work dir named by `workspace.json` beside them.

The format: docs/formats.md, "VS Code's chat" (built from the documented format, not recorded).
A session is one `.json` document rewritten whole or, in newer builds, a `.jsonl` log of changes
to it (`vscode.replay`): either is parsed whole. A change log's last line with no newline that
does not decode is being written: it is a `truncated_tail`, the session is what the lines before
it make, and the next read (once the line is whole) takes it in. A request is a turn; the calls
of a `runSubagent` call (marked with its `subAgentInvocationId`) are a subagent run of that turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import vscode
from .disk import SNAPSHOT_MAX, is_dir, is_file, read_bounded
from .fields import as_int, field_dict, field_list, loads_valid
from .lines import prompt_turn
from .model import ParseResult, Problem, Step, SubagentRun, ToolCall, Turn, epoch
from .sources import Discovery, SnapshotReader, listing, log_session, register

SOURCE = "copilot-chat"
CHATS = "chatSessions"
STATE = {1: "completed", 2: "cancelled", 3: "failed"}  # modelState.value; 0 pending, 4 input


# --- turns -------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return str(value.get("value") or "") if isinstance(value, dict) else str(value or "")


def _call(part: dict[str, Any], meta: dict[str, Any], rounds: dict[str, Any]) -> ToolCall:
    cid = str(part.get("toolCallId") or "")
    data = field_dict(part, "toolSpecificData")
    sent = field_dict(rounds, cid)
    args = sent.get("arguments")
    if args is None and data.get("kind") == "terminal":
        line = data.get("commandLine")
        args = {"command": _text(line.get("original")) if isinstance(line, dict) else line}
    call = ToolCall(
        id=cid,
        name=str(part.get("toolId") or sent.get("name") or ""),
        arguments=args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False),
    )
    if part.get("isConfirmed") is False:
        call.approval = "reject"
    if not part.get("isComplete") and call.approval is None:
        return call  # still running, or stopped before it ran
    exit_code = field_dict(data, "terminalCommandState").get("exitCode")
    details = field_dict(part, "resultDetails")
    out = field_dict(field_dict(meta, "toolCallResults"), cid)
    output = "\n".join(_text(c) for c in field_list(out, "content")) or _text(
        field_dict(data, "terminalCommandOutput").get("text")
    )
    failed = details.get("isError") is True or (isinstance(exit_code, int) and exit_code != 0)
    rejected = call.approval == "reject"
    call.finish(failed or rejected, _text(part.get("pastTenseMessage")), output, None)
    return call


def subagent_run(
    cid: str, call: ToolCall | None, data: dict[str, Any], calls: list[ToolCall], at: float | None
) -> SubagentRun:
    """The subagent the `runSubagent` call `cid` ran (its `toolSpecificData`: `data`) as one turn:
    its prompt, its `calls`, its result the answer (and the call's output when the request's
    results do not hold it). Calls whose `runSubagent` call is not in the request still make its
    run (`call` None)."""
    prompt = data.get("prompt") or data.get("description")
    sub = prompt_turn(0, at, prompt if isinstance(prompt, str) else "", 0, legacy=False)
    if calls:
        sub.steps.append(Step(n=1, tool_calls=calls))
    answer = data.get("result")
    if isinstance(answer, str) and answer:
        sub.add_step(answer)
        if call is not None and call.result is not None and not call.output_text:
            call.result["output"] = answer
    if call is not None and call.result is not None:
        sub.end, sub.reason = "ended", "failed" if call.result["is_error"] else "completed"
    agent = data.get("agentName")
    return SubagentRun(cid, agent if isinstance(agent, str) else None, cid, [sub])


def request_turn(index: int, req: dict[str, Any]) -> Turn:
    at = epoch(req.get("timestamp"), 1000.0)
    turn = prompt_turn(index, at, _text(field_dict(req, "message").get("text")), 0, legacy=False)
    result = field_dict(req, "result")
    meta = field_dict(result, "metadata")
    rounds = {
        str(c.get("id")): c
        for r in field_list(meta, "toolCallRounds")
        for c in field_list(r, "toolCalls")
        if isinstance(c, dict)
    }
    step = Step(n=1)
    runs: dict[str, tuple[ToolCall, dict[str, Any]]] = {}  # a `runSubagent` call's id -> it
    inside: dict[str, list[ToolCall]] = {}  # a subagent's calls, by the call that runs it
    for part in field_list(req, "response"):
        if not isinstance(part, dict):
            continue
        kind = part.get("kind")
        parent = part.get("subAgentInvocationId")
        if kind == "toolInvocationSerialized" and isinstance(parent, str) and parent:
            inside.setdefault(parent, []).append(_call(part, meta, rounds))
        elif kind == "toolInvocationSerialized":
            call = _call(part, meta, rounds)
            step.tool_calls.append(call)
            data = field_dict(part, "toolSpecificData")
            if data.get("kind") == "subagent" or call.name == "runSubagent":
                runs[call.id] = (call, data)
        elif kind == "thinking":
            step.think += _text(part.get("value"))
        elif kind in (None, "markdownContent") and (
            text := _text(part.get("value") or part.get("content"))
        ):
            if step.tool_calls:  # text after a call: the model's next step
                turn.steps.append(step)
                step = Step(n=len(turn.steps) + 1)
            step.text += text
    if step.text or step.think or step.tool_calls:
        turn.steps.append(step)
    for cid in dict.fromkeys([*runs, *inside]):
        spawn, data = runs.get(cid) or (None, {})
        turn.subagents[cid] = subagent_run(cid, spawn, data, inside.get(cid, []), at)
    for usage in (field_dict(req, "usage"), field_dict(result, "usage"), meta):
        turn.usage["input_other"] += as_int(usage.get("promptTokens"))
        turn.usage["output"] += as_int(usage.get("completionTokens") or usage.get("outputTokens"))
    state = field_dict(req, "modelState")
    value = state.get("value")
    reason = STATE.get(value) if isinstance(value, int) else None
    if reason is None and result:
        reason = "failed" if result.get("errorDetails") else "completed"
    if reason is not None:
        elapsed = field_dict(result, "timings").get("totalElapsed")
        done = epoch(state.get("completedAt"), 1000.0)
        if done is None and at is not None and isinstance(elapsed, int | float):
            done = at + elapsed / 1000.0
        turn.end, turn.reason, turn.ended_at = "ended", reason, done
        turn.last_at = done or at
        for run in turn.subagents.values():  # one its request ended before it did: stopped
            for sub in (t for t in run.turns if t.end == "open"):
                sub.end, sub.reason = "ended", "interrupted"
    return turn


def read(path: Path) -> ParseResult:
    """Parse a whole chat session, `.json` or `.jsonl` (a change log's last line still being
    written left for the next read: `vscode.replay`)."""
    problems: list[Problem] = []
    try:
        raw = read_bounded(path, SNAPSHOT_MAX)
        doc, done = (
            vscode.replay(raw, problems)
            if path.suffix == ".jsonl"
            else (loads_valid(raw.decode("utf-8", errors="replace")), len(raw))
        )
    except (OSError, ValueError, RecursionError) as exc:
        return ParseResult.malformed(str(exc)[:200], "unknown")
    version = doc.get("version") if isinstance(doc, dict) else None
    protocol = f"v{version}" if isinstance(version, int) else "unknown"
    requests = doc.get("requests") if isinstance(doc, dict) else None
    if doc is None and done < len(raw):  # the first change is still being written
        return ParseResult(protocol, [], problems, complete_offset=done)
    if not isinstance(requests, list):
        why = "no `requests` list: not a VS Code chat session"
        return ParseResult.malformed(why, protocol, len(raw), problems)
    turns = [request_turn(i, r) for i, r in enumerate(r for r in requests if isinstance(r, dict))]
    return ParseResult(protocol, turns, problems, complete_offset=done)


# --- discovery ---------------------------------------------------------------------------------


def _chat_files(folder: Path, found: Discovery) -> list[Path]:
    return [p for p in listing(folder, found) if p.suffix in (".json", ".jsonl") and is_file(p)]


def _sessions(storage: Path, found: Discovery) -> None:
    """The chat sessions of one `workspaceStorage/<hash>` folder (or `emptyWindowChatSessions`)."""
    chats = storage / CHATS if is_dir(storage / CHATS) else storage
    folder = vscode.workspace_folder(storage)
    for f in _chat_files(chats, found):
        found.sessions.append(
            log_session(SOURCE, f.stem, storage.name, folder, None, f, whole=True)
        )


def discover(path: Path) -> Discovery | None:
    """Chat sessions under `path`: an editor's `User` folder (with its extensions' sessions), its
    `workspaceStorage`, one `workspaceStorage/<hash>`, a `chatSessions` folder or one session
    file; None otherwise."""
    found = Discovery()
    if is_file(path):
        if path.parent.name != CHATS or path.suffix not in (".json", ".jsonl"):
            return None
        _sessions(path.parent.parent, found)
        found.sessions = [s for s in found.sessions if s.files[0].path == path]
        return found
    if path.name == CHATS:
        _sessions(path.parent, found)
    elif is_dir(path / CHATS):
        _sessions(path, found)
    else:
        storage = path / "workspaceStorage" if is_dir(path / "workspaceStorage") else path
        for ws in listing(storage, found):
            if is_dir(ws / CHATS):
                _sessions(ws, found)
        empty = path / "globalStorage" / "emptyWindowChatSessions"
        if is_dir(empty):
            _sessions(empty, found)
        vscode.extension_sessions(path, found)
    return found if found.sessions else None


READER = register(SnapshotReader(SOURCE, "VS Code Copilot Chat", read, discover, order=29))
parse_wire = READER.parse
