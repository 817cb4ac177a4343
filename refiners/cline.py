"""Reader for Cline (its CLI 3 and VS Code extension), Roo Code and Kilo Code's VS Code extension.

Two formats, both JSON documents rewritten whole (archived as snapshots, parsed whole):

* **Sessions** (Cline's SDK: the CLI 3 and the extensions built on it; docs/formats.md, "Cline
  CLI"): `sessions/<id>/` holds the manifest `<id>.json` (the work dir: `cwd`, else
  `workspace_root`), `<id>.messages.json` (Anthropic-shaped messages), an
  `agent_<id>.messages.json` for each subagent `spawn_agent` started and `<id>.compaction.json`,
  the last compaction (a compaction turn where its messages replace the transcript's).
* **Tasks** (the VS Code extensions before the SDK, and Roo Code and Kilo Code's, which kept
  Cline's format): read by `cline_tasks.py`.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from . import cline_tasks, vscode
from .cline_turns import ClineTurns, between, text_parts, tool_uses, unpacked
from .disk import SNAPSHOT_MAX, is_dir, is_file, load_object, load_snapshot
from .fields import field_dict, json_value, parse_time
from .model import ParseResult, SubagentRun, Turn, output_to_text
from .sources import Discovery, SnapshotReader, SourceFile, listing, log_session, register

SOURCE = "cline"
LABELS = {"cline": "Cline", "roo-code": "Roo Code", "kilo-code": "Kilo Code (VS Code)"}
MESSAGES = ".messages.json"
_USER_INPUT = re.compile(r"^\s*<user_input[^>]*>(.*)</user_input>\s*$", re.S)


# --- sessions (Cline's SDK: the CLI 3) ----------------------------------------------------------


def _sdk_output(content: Any) -> tuple[str, bool]:
    """A `tool_result`'s text and whether it failed: `[{query, result, success, error}]`, that
    list as JSON text, or plain text."""
    if isinstance(content, str):
        parsed = json_value(content)
        if not isinstance(parsed, list | dict):
            return content, False
        content = parsed
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


def sdk_compaction(path: Path) -> tuple[int, str, float | None] | None:
    """The last compaction of a session (`<id>.compaction.json` beside its messages): how many
    messages it replaced, its summary (agentic compaction's `metadata.summary`, else basic
    compaction's `<SYSTEM_NOTICE>`) and when (`updated_at`); None without one."""
    sid = path.name.removesuffix(MESSAGES)
    state = load_object(path.with_name(f"{sid}.compaction.json"), SNAPSHOT_MAX)
    count = state.get("source_message_count")
    if not isinstance(count, int) or isinstance(count, bool):
        return None
    for msg in state.get("messages") or []:
        meta = field_dict(msg, "metadata") if isinstance(msg, dict) else {}
        at = parse_time(state.get("updated_at"))
        if meta.get("kind") == "compaction_summary" and isinstance(meta.get("summary"), str):
            return count, meta["summary"], at
        if meta.get("kind") == "compaction":
            text = "\n".join(text_parts(msg.get("content")))
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
        ts, blocks = unpacked(msg)
        if msg.get("role") == "user":
            results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
            for b in results:
                call = built.calls.get(str(b.get("tool_use_id")))
                if call is not None:
                    output, failed = _sdk_output(b.get("content"))
                    built.result(call, output, failed or b.get("is_error") is True, ts)
            if not results:
                text = "\n".join(text_parts(blocks))
                inner = _USER_INPUT.match(text)
                built.open(inner.group(1) if inner else text, ts)
        elif msg.get("role") == "assistant" and built.turns:
            text = "\n".join(text_parts(blocks))
            think = "\n".join(
                str(b.get("thinking") or b.get("text") or "")
                for b in blocks
                if isinstance(b, dict) and b.get("type") in ("thinking", "reasoning")
            )
            step = built.reply(text, think, tool_uses(blocks, ts), ts, field_dict(msg, "metrics"))
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


def read(path: Path) -> ParseResult:
    """Parse a whole Cline session or task."""
    data = load_snapshot(path)
    if isinstance(data, ParseResult):
        return data
    if path.name == cline_tasks.API_HISTORY or isinstance(data, list):
        if not isinstance(data, list):
            why = "not a list of messages: not a Cline task"
            return ParseResult.malformed(why, "json", path.stat().st_size)
        built, version = cline_tasks.turns(path, data), "task"
    else:
        messages = data.get("messages") if isinstance(data, dict) else None
        if not isinstance(messages, list):
            why = "no `messages` list: not a Cline session"
            return ParseResult.malformed(why, "json", path.stat().st_size)
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


# --- discovery ----------------------------------------------------------------------------------


def _source_of(path: Path) -> str:
    """The extension whose globalStorage holds `path` (Cline for `~/.cline` and anything else)."""
    return vscode.extension_of(path) or SOURCE


def _session(folder: Path, source: str, found: Discovery) -> None:
    """One session folder of the SDK format: `<id>.json`, `<id>.messages.json`, subagents."""
    sid = folder.name
    main = folder / f"{sid}{MESSAGES}"
    if not is_file(main):
        found.skipped.append((str(folder), f"no {sid}{MESSAGES}: not a Cline session"))
        return
    manifest = load_object(folder / f"{sid}.json")
    cwd = manifest.get("cwd") or manifest.get("workspace_root")
    title = field_dict(manifest, "metadata").get("title") or manifest.get("prompt")
    session = log_session(source, sid, source, cwd, title, main, whole=True)
    for sub in listing(folder, found):
        if sub.name.startswith("agent_") and sub.name.endswith(MESSAGES):
            agent = sub.name.removesuffix(MESSAGES)
            session.files.append(SourceFile(agent, sub.name, sub, whole=True))
    # the manifest, the last compaction
    session.keep(folder, (f"{sid}.json", f"{sid}.compaction.json"))
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
        if path.name == cline_tasks.API_HISTORY:
            _task(path.parent, source, path.parent.parent.parent, found)
        elif path.name.endswith(MESSAGES) and path.name == f"{path.parent.name}{MESSAGES}":
            _session(path.parent, source, found)
        return found if found.sessions else None
    if is_file(path / cline_tasks.API_HISTORY):
        _task(path, source, path.parent.parent, found)
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
    history = cline_tasks.task_history(root)
    for folder in listing(tasks, found) if tasks is not None else []:
        if is_dir(folder):
            cline_tasks.task(folder, source, LABELS[source], history, found)
    return found if found.sessions else None


def _task(task: Path, source: str, root: Path, found: Discovery) -> None:
    """The one task `task` of `source`, its work dir from the task history of `root`."""
    cline_tasks.task(task, source, LABELS[source], cline_tasks.task_history(root), found)


READERS = {
    source: register(
        SnapshotReader(source, LABELS[source], read, partial(discover_as, source), order=28)
    )
    for source in LABELS
}
parse_wire = READERS[SOURCE].parse
