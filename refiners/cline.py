"""Reader for Cline (its CLI 3 and VS Code extension), Roo Code and Kilo Code's VS Code extension.

Two formats, both JSON documents rewritten whole (archived as snapshots, parsed whole):

* **Sessions** (Cline's SDK: CLI 3 and the extensions built on it; docs/formats.md, written by the
  CLI 3.0.65): `~/.cline/data/sessions/<id>/<id>.json` (the manifest: `cwd`, `workspace_root`,
  `status`, `metadata.title`, the session's usage), `<id>.messages.json` (`messages`: Anthropic-
  shaped `{id, role, content, ts}`; a prompt is `<user_input mode="act">…</user_input>`, a tool's
  result a `tool_result` block whose content is `[{query, result, success, error}]` or that list
  as JSON text; an assistant message carries `metrics` {inputTokens, outputTokens,
  cacheReadTokens, cacheWriteTokens} for its model call) and `agent_<id>.messages.json` for each
  subagent `spawn_agent` started. `<id>.compaction.json` holds the last compaction (the messages
  that replace the first `source_message_count`): its summary is a compaction turn there.
* **Tasks** (the VS Code extensions before the SDK, and Roo Code and Kilo Code's, which kept
  Cline's format): `tasks/<id>/api_conversation_history.json` (the messages sent to the model:
  Anthropic `MessageParam`s; tools called in the text as XML, `<execute_command><command>…`, or as
  `tool_use` blocks; each result a user message "[execute_command for 'ls'] Result:" or a
  `tool_result` block), `ui_messages.json` (what the panel showed: `say: "api_req_started"` holds
  each model call's tokens, in the order of the assistant messages) and `task_metadata.json`. The
  first prompt is `<task>…</task>`; a later one comes as the user's feedback on
  `attempt_completion` ("<feedback>…</feedback>") or as a resumed task's `<user_message>`. The
  answer is `attempt_completion`'s `result`. A `condense` (`/smol`) or `summarize_task`
  (auto-compaction) call's `context` is the summary that replaced the history: a compaction turn.

The work dir: the manifest's `cwd`; for a task, `state/taskHistory.json`'s
`cwdOnTaskInitialization` (Cline), `history_item.json`'s `workspace` (Roo Code), else the
"Current Working Directory (…)" line of the first prompt's `<environment_details>`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import vscode
from .cline_turns import ClineTurns, add_usage, between
from .disk import SNAPSHOT_MAX, is_dir, is_file, load_json, load_snapshot
from .fields import field_dict, loads_valid, parse_time
from .model import ParseResult, Problem, SubagentRun, ToolCall, Turn, output_to_text
from .sources import Discovery, SessionSource, SnapshotReader, SourceFile, listing, register

SOURCE = "cline"
# the VS Code extensions that keep Cline's task format, by their globalStorage folder
EXTENSIONS = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo-code",
    "kilocode.kilo-code": "kilo-code",
}
LABELS = {"cline": "Cline", "roo-code": "Roo Code", "kilo-code": "Kilo Code (VS Code)"}
API_HISTORY = "api_conversation_history.json"
TASK_SNAPSHOTS = ("ui_messages.json", "task_metadata.json", "history_item.json")
MESSAGES = ".messages.json"

_USER_INPUT = re.compile(r"^\s*<user_input[^>]*>(.*)</user_input>\s*$", re.S)
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


def _text_parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    return [
        str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    ]


# --- sessions (Cline's SDK: the CLI 3) ----------------------------------------------------------


def _sdk_output(content: Any) -> tuple[str, bool]:
    """A `tool_result`'s text and whether it failed: `[{query, result, success, error}]`, that
    list as JSON text, or plain text."""
    if isinstance(content, str):
        try:
            parsed = loads_valid(content)
        except (ValueError, RecursionError):
            return content, False
        content = parsed if isinstance(parsed, (list, dict)) else content
        if isinstance(content, str):
            return content, False
    items = content if isinstance(content, list) else [content]
    texts, failed = [], False
    for item in items:
        if not isinstance(item, dict):
            texts.append(str(item))
            continue
        failed = (
            failed
            or item.get("success") is False
            or ("error" in item and "result" not in item and "success" not in item)
        )
        body = item.get("result") or item.get("error") or item.get("text")
        texts.append(str(body) if body else output_to_text([item]) if "type" in item else "")
    return "\n".join(texts), failed


def _unpacked(msg: dict[str, Any]) -> tuple[float | None, list[Any]]:
    """A message's time (`ts`, epoch ms) in seconds and its content as blocks."""
    at = msg.get("ts")
    ts = at / 1000.0 if isinstance(at, (int, float)) and not isinstance(at, bool) else None
    content = msg.get("content")
    return ts, content if isinstance(content, list) else [{"type": "text", "text": str(content)}]


def _tool_uses(blocks: list[Any], ts: float | None) -> list[ToolCall]:
    return [
        ToolCall(
            id=str(b.get("id") or ""),
            name=str(b.get("name") or ""),
            arguments=json.dumps(b.get("input"), ensure_ascii=False),
            called_at=ts,
        )
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def sdk_compaction(path: Path) -> tuple[int, str, float | None] | None:
    """The last compaction of a session (`<id>.compaction.json` beside its messages: `{version,
    source_message_count, messages}`, the messages that replace the first
    `source_message_count`): how many it replaced and its summary, the `metadata.summary` of a
    `compaction_summary` message (agentic compaction) or the `<SYSTEM_NOTICE>` of a `compaction`
    one (basic: the first prompt and the actions after it), and when (`updated_at`). None
    without one."""
    sid = path.name.removesuffix(MESSAGES)
    state = load_json(path.with_name(f"{sid}.compaction.json"), SNAPSHOT_MAX)
    count = state.get("source_message_count") if isinstance(state, dict) else None
    if not isinstance(state, dict) or not isinstance(count, int) or isinstance(count, bool):
        return None
    for msg in state.get("messages") or []:
        meta = field_dict(msg, "metadata") if isinstance(msg, dict) else {}
        at = parse_time(state.get("updated_at"))
        if meta.get("kind") == "compaction_summary" and isinstance(meta.get("summary"), str):
            return count, meta["summary"], at
        if meta.get("kind") == "compaction":
            text = "\n".join(_text_parts(msg.get("content")))
            notice = between("SYSTEM_NOTICE", text)
            return count, notice if notice is not None else text, at
    return None


def _sdk_turns(
    messages: list[Any], compaction: tuple[int, str, float | None] | None = None
) -> ClineTurns:
    built = ClineTurns()
    for n, msg in enumerate(messages):
        if compaction and n == compaction[0]:  # the first message after those it replaced
            built.compaction(compaction[1], compaction[2])
        if not isinstance(msg, dict):
            continue
        ts, blocks = _unpacked(msg)
        if msg.get("role") == "user":
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            for b in results:
                call = built.calls.get(str(b.get("tool_use_id")))
                if call is not None:
                    output, failed = _sdk_output(b.get("content"))
                    built.result(call, output, failed or b.get("is_error") is True, ts)
            if not results:
                text = "\n".join(_text_parts(blocks))
                inner = _USER_INPUT.match(text)
                built.open(inner.group(1) if inner else text, ts)
        elif msg.get("role") == "assistant" and built.turns:
            text = "\n".join(_text_parts(blocks))
            think = "\n".join(
                str(b.get("thinking") or b.get("text") or "")
                for b in blocks
                if isinstance(b, dict) and b.get("type") in ("thinking", "reasoning")
            )
            step = built.step(text, think)
            assert step is not None
            for call in _tool_uses(blocks, ts):
                step.tool_calls.append(call)
                built.calls[call.id] = call
            cur = built.turns[-1]
            add_usage(cur, field_dict(msg, "metrics"))
            cur.last_at = ts if ts is not None else cur.last_at
            if not step.tool_calls:
                built.finish()
    if compaction and compaction[0] >= len(messages):  # it replaced them all: nothing after yet
        built.compaction(compaction[1], compaction[2])
    built.ended()
    return built


def _link_subagents(turns: list[Turn], agents: list[str]) -> None:
    """Each `spawn_agent` call runs the next subagent file, in the order they were started."""
    calls = [c for t in turns for c in t.tool_calls if c.name == "spawn_agent"]
    owner = {id(c): t for t in turns for c in t.tool_calls}
    for call, agent in zip(calls, sorted(agents), strict=False):  # a file never written: unlinked
        owner[id(call)].subagents[agent] = SubagentRun(agent, "spawn_agent", call.id)


# --- tasks (the VS Code extensions' format) -----------------------------------------------------


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
        ts, blocks = _unpacked(msg)
        texts = _text_parts(blocks)
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
            step = built.step(_THINKING.sub("", text).strip(), think)
            assert step is not None
            calls += _tool_uses(blocks, ts)
            answer = next((c for c in calls if c.name in ANSWER_TOOLS), None)
            for call in calls:
                if call is answer:
                    continue
                step.tool_calls.append(call)
                built.calls[call.id] = call
            cur = built.turns[-1]
            if cur.started_at is None:
                cur.started_at = ts
            cur.last_at = ts if ts is not None else cur.last_at
            add_usage(cur, call_info)
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
            try:
                info = loads_valid(str(m.get("text") or "{}"))
            except (ValueError, RecursionError):
                info = {}
            info = info if isinstance(info, dict) else {}
            ts = m.get("ts")
            info["ts"] = ts / 1000.0 if isinstance(ts, (int, float)) else None
            out.append(info)
    return out


def read(path: Path) -> ParseResult:
    """Parse a whole Cline session or task."""
    data = load_snapshot(path)
    if isinstance(data, ParseResult):
        return data
    if path.name == API_HISTORY or isinstance(data, list):
        if not isinstance(data, list):
            return _bad(path, "not a list of messages: not a Cline task")
        built = _task_turns(data, _api_requests(path))
        built.ended()
        version = "task"
    else:
        messages = data.get("messages") if isinstance(data, dict) else None
        if not isinstance(messages, list):
            return _bad(path, "no `messages` list: not a Cline session")
        built = _sdk_turns(
            messages, None if path.name.startswith("agent_") else sdk_compaction(path)
        )
        origin = field_dict(data, "origin")
        version = str(origin.get("version") or "session")
        agents = [
            p.name.removesuffix(MESSAGES)
            for p in sorted(path.parent.glob("agent_*" + MESSAGES))
            if not path.name.startswith("agent_")
        ]
        _link_subagents(built.turns, agents)
    result = ParseResult(version, built.turns, problems=built.problems)
    result.complete_offset = path.stat().st_size
    return result


def _bad(path: Path, why: str) -> ParseResult:
    result = ParseResult("json", [], problems=[Problem(1, "malformed", why)])
    result.complete_offset = path.stat().st_size
    return result


# --- discovery ----------------------------------------------------------------------------------


def _source_of(path: Path) -> str:
    """The extension whose globalStorage holds `path` (Cline for `~/.cline` and anything else)."""
    return vscode.extension_of(path, EXTENSIONS) or SOURCE


def _session(folder: Path, source: str, found: Discovery) -> None:
    """One session folder of the SDK format: `<id>.json`, `<id>.messages.json`, subagents."""
    sid = folder.name
    main = folder / f"{sid}{MESSAGES}"
    if not is_file(main):
        found.skipped.append((str(folder), f"no {sid}{MESSAGES}: not a Cline session"))
        return
    manifest = load_json(folder / f"{sid}.json")
    manifest = manifest if isinstance(manifest, dict) else {}
    cwd = manifest.get("cwd") or manifest.get("workspace_root")
    title = field_dict(manifest, "metadata").get("title") or manifest.get("prompt")
    session = SessionSource(
        source,
        sid,
        source,
        [cwd] if isinstance(cwd, str) and cwd else [],
        title if isinstance(title, str) else None,
        folder,
        [SourceFile("main", main.name, main, whole=True)],
    )
    for sub in listing(folder, found):
        if sub.name.startswith("agent_") and sub.name.endswith(MESSAGES):
            agent = sub.name.removesuffix(MESSAGES)
            session.files.append(SourceFile(agent, sub.name, sub, whole=True))
    for name in (f"{sid}.json", f"{sid}.compaction.json"):  # the manifest, the last compaction
        if is_file(folder / name):
            session.snapshots.append(SourceFile("main", name, folder / name, whole=True))
    found.sessions.append(session)


def _task_cwd(task: Path, history: dict[str, str]) -> str | None:
    if task.name in history:
        return history[task.name]
    item = load_json(task / "history_item.json")
    if isinstance(item, dict) and isinstance(item.get("workspace"), str) and item["workspace"]:
        return str(item["workspace"])
    try:
        with open(task / API_HISTORY, "rb") as fh:
            head = fh.read(256 << 10).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _CWD.search(head.replace("\\\\", "\\"))
    return found.group(1) if found else None


def _history(root: Path) -> dict[str, str]:
    """Task id -> its work dir, from `state/taskHistory.json` (Cline's index of tasks)."""
    items = load_json(root / "state" / "taskHistory.json", SNAPSHOT_MAX)
    rows = items if isinstance(items, list) else []
    return {
        str(i.get("id")): str(i.get("cwdOnTaskInitialization"))
        for i in rows
        if isinstance(i, dict) and i.get("cwdOnTaskInitialization")
    }


def _task(task: Path, source: str, history: dict[str, str], found: Discovery) -> None:
    main = task / API_HISTORY
    if not is_file(main):
        found.skipped.append((str(task), f"no {API_HISTORY}: not a {LABELS[source]} task"))
        return
    cwd = _task_cwd(task, history)
    session = SessionSource(
        source,
        task.name,
        source,
        [cwd] if cwd else [],
        None,
        task,
        [SourceFile("main", API_HISTORY, main, whole=True)],
    )
    for name in TASK_SNAPSHOTS:
        if is_file(task / name):
            session.snapshots.append(SourceFile("main", name, task / name, whole=True))
    found.sessions.append(session)


def _folders(path: Path) -> tuple[Path | None, Path | None, Path]:
    """(the sessions folder, the tasks folder, the root holding `state/`) of a home, its
    `data/`, a globalStorage folder, or a `sessions/` or `tasks/` folder itself."""
    for root in (path / "data", path):
        sessions, tasks = root / "sessions", root / "tasks"
        if is_dir(sessions) or is_dir(tasks):
            return (
                (sessions if is_dir(sessions) else None),
                (tasks if is_dir(tasks) else None),
                root,
            )
    if path.name == "sessions":
        return path, None, path.parent
    if path.name == "tasks":
        return None, path, path.parent
    return None, None, path


def discover_as(source: str, path: Path) -> Discovery | None:
    """`source`'s sessions under `path` (a home, a globalStorage folder, its `sessions/` or
    `tasks/`, one session or task folder, or one of their files), or None when `path` is not
    shaped like one or belongs to another of the extensions."""
    if _source_of(path) != source:
        return None
    found = Discovery()
    if is_file(path):
        if path.name == API_HISTORY:
            _task(path.parent, source, _history(path.parent.parent.parent), found)
        elif path.name.endswith(MESSAGES) and path.name == f"{path.parent.name}{MESSAGES}":
            _session(path.parent, source, found)
        return found if found.sessions else None
    if is_file(path / API_HISTORY):
        _task(path, source, _history(path.parent.parent), found)
        return found
    if is_file(path / f"{path.name}{MESSAGES}"):
        _session(path, source, found)
        return found
    sessions, tasks, root = _folders(path)
    if sessions is None and tasks is None:
        return None
    for folder in listing(sessions, found) if sessions is not None else []:
        if is_dir(folder):
            _session(folder, source, found)
    history = _history(root)
    for folder in listing(tasks, found) if tasks is not None else []:
        if is_dir(folder):
            _task(folder, source, history, found)
    return found if found.sessions else None


def _discover(source: str) -> Callable[[Path], Discovery | None]:
    return lambda path: discover_as(source, path)


READERS = {
    source: register(SnapshotReader(source, LABELS[source], read, _discover(source), order=28))
    for source in LABELS
}
parse_wire = READERS[SOURCE].parse
