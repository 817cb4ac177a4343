"""Cline's task format, which `cline.py` reads beside the sessions of Cline's SDK: the format of
the VS Code extensions before the SDK, and of Roo Code and Kilo Code's, which kept it
(docs/formats.md, "the task format").

A task is `tasks/<id>/api_conversation_history.json` (the messages sent to the model), with
`ui_messages.json` (each model call's tokens: `api_req_started`, in the order of the replies)
and `task_metadata.json` beside it. Tools are called as XML in a reply's text or as `tool_use`
blocks; a prompt comes as `<task>`, as feedback on `attempt_completion` (whose `result` is the
answer) or as a resumed task's `<user_message>`; an accepted `condense` or `summarize_task` call's
`context` is a compaction turn. The work dir: `taskHistory.json`, Roo Code's `history_item.json`,
else the first prompt's `<environment_details>`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .cline_turns import ClineTurns, between, text_parts, tool_uses, unpacked
from .disk import SNAPSHOT_MAX, is_file, load_json, load_object
from .fields import json_object
from .model import ToolCall, epoch, output_to_text
from .sources import Discovery, log_session

API_HISTORY = "api_conversation_history.json"
TASK_SNAPSHOTS = ("ui_messages.json", "task_metadata.json", "history_item.json")
_ENV = re.compile(r"<environment_details>.*?(?:</environment_details>|$)", re.S)
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_RESULT = re.compile(r"^\[(\w+)(?: for '.*?')?\] Result:\s*", re.S)
_THINKING = re.compile(r"<thinking>\s*(.*?)\s*</thinking>", re.S)
# the tools Cline, Roo Code and Kilo Code call as XML in a reply's text
XML_TOOLS = (
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "apply_diff",
    "insert_content",
    "search_and_replace",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "codebase_search",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "plan_mode_respond",
    "plan_mode_response",
    "new_task",
    "switch_mode",
    "update_todo_list",
    "web_fetch",
    "load_mcp_documentation",
    "condense",
    "summarize_task",
    "new_rule",
)
_XML_CALL = re.compile(r"<(" + "|".join(XML_TOOLS) + r")>(.*?)</\1>", re.S)
_PARAM = re.compile(r"<(\w+)>(.*?)</\1>", re.S)
ANSWER_TOOLS = {
    "attempt_completion": "result",
    "plan_mode_respond": "response",
    "plan_mode_response": "response",
}


def _prompt_of(text: str) -> str | None:
    """The user's words in a task message, or None when it holds none (a tool result, a resumed
    task's notice)."""
    body = _ENV.sub("", text).strip()
    for tag in ("task", "user_message", "feedback", "answer"):
        inner = between(tag, body)
        if inner is not None:
            return inner
    if _RESULT.match(body) or body.startswith("[TASK RESUMPTION]") or not body:
        return None
    return body


def _xml_calls(text: str, at: float | None, n: int) -> tuple[str, list[ToolCall]]:
    calls = []
    for k, found in enumerate(_XML_CALL.finditer(text)):
        params = {p.group(1): p.group(2).strip() for p in _PARAM.finditer(found.group(2))}
        calls.append(
            ToolCall(
                id=f"xml-{n}-{k}",
                name=found.group(1),
                arguments=json.dumps(params, ensure_ascii=False),
                called_at=at,
            )
        )
    return _XML_CALL.sub("", text).strip(), calls


def _task_result(built: ClineTurns, text: str, at: float | None) -> bool:
    """Fold a user message that is an XML tool's result ("[name for '…'] Result:"); True when
    it was one. Feedback on `attempt_completion` opens the user's next turn."""
    found = _RESULT.match(text)
    if not found:
        return False
    name, output = found.group(1), _ENV.sub("", text[found.end() :]).strip()
    if name in ANSWER_TOOLS:
        words = between("feedback", output)
        if words:
            built.open(words, at)
        return True
    call = next((c for c in reversed(list(built.calls.values())) if c.name == name), None)
    if call is not None and call.result is None:
        failed = output.lower().startswith(("the tool execution failed", "<error>", "error"))
        built.result(call, output, failed, at)
        built.compacted(call, output, at)
    return True


def _task_turns(messages: list[Any], usage: list[dict[str, Any]]) -> ClineTurns:
    built = ClineTurns()
    replies = iter(usage)
    for n, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue
        ts, blocks = unpacked(msg)
        texts = text_parts(blocks)
        if msg.get("role") == "user":
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    call = built.calls.get(str(b.get("tool_use_id")))
                    if call is not None:
                        out = output_to_text(b.get("content"))
                        built.result(call, out, b.get("is_error") is True, ts)
                        built.compacted(call, out, ts)
            joined = "\n".join(texts)
            if texts and not _task_result(built, joined, ts):
                words = _prompt_of(joined)
                if words is not None:
                    built.open(words, ts)
        elif msg.get("role") == "assistant" and built.turns:
            call_info = next(replies, {})
            ts = ts if ts is not None else call_info.get("ts")
            text, calls = _xml_calls("\n".join(texts), ts, n)
            think = "\n".join(t.group(1) for t in _THINKING.finditer(text))
            calls += tool_uses(blocks, ts)
            answer = next((c for c in calls if c.name in ANSWER_TOOLS), None)
            kept = [call for call in calls if call is not answer]
            step = built.reply(_THINKING.sub("", text).strip(), think, kept, ts, call_info)
            cur = built.turns[-1]
            if cur.started_at is None:
                cur.started_at = ts
            if answer is not None:
                step.text = "\n\n".join(
                    t
                    for t in (step.text, str(answer.args.get(ANSWER_TOOLS[answer.name]) or ""))
                    if t
                )
                built.finish()
    return built


def _api_requests(path: Path) -> list[dict[str, Any]]:
    """Each model call's tokens and time from `ui_messages.json` beside `path`, in order."""
    ui = load_json(path.with_name("ui_messages.json"), SNAPSHOT_MAX)
    out = []
    for m in ui if isinstance(ui, list) else []:
        if isinstance(m, dict) and m.get("say") == "api_req_started":
            info = json_object(m.get("text"))
            info["ts"] = epoch(m.get("ts"), 1000.0)
            out.append(info)
    return out


def turns(path: Path, messages: list[Any]) -> ClineTurns:
    """The turns of a task's `api_conversation_history.json` at `path` (`messages`), with each
    model call's tokens from `ui_messages.json` beside it."""
    built = _task_turns(messages, _api_requests(path))
    built.ended()
    return built


# --- discovery ----------------------------------------------------------------------------------


def _task_cwd(task: Path, history: dict[str, str]) -> str | None:
    if task.name in history:
        return history[task.name]
    workspace = load_object(task / "history_item.json").get("workspace")
    if isinstance(workspace, str) and workspace:
        return workspace
    try:
        with open(task / API_HISTORY, "rb") as fh:
            head = fh.read(256 << 10).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _CWD.search(head.replace("\\\\", "\\"))
    return found.group(1) if found else None


def task_history(root: Path) -> dict[str, str]:
    """Task id -> its work dir, from `state/taskHistory.json` (Cline's index of tasks)."""
    items = load_json(root / "state" / "taskHistory.json", SNAPSHOT_MAX)
    rows = items if isinstance(items, list) else []
    return {
        str(i.get("id")): str(i.get("cwdOnTaskInitialization"))
        for i in rows
        if isinstance(i, dict) and i.get("cwdOnTaskInitialization")
    }


def task(task: Path, source: str, label: str, history: dict[str, str], found: Discovery) -> None:
    """The task in the folder `task` of the extension archived as `source` (`label`, for people)."""
    main = task / API_HISTORY
    if not is_file(main):
        found.skipped.append((str(task), f"no {API_HISTORY}: not a {label} task"))
        return
    session = log_session(
        source, task.name, source, _task_cwd(task, history), None, main, whole=True
    )
    session.keep(task, TASK_SNAPSHOTS)
    found.sessions.append(session)
