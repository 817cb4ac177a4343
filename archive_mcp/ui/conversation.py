"""A turn as a person reads it: what the user said (answers given through a tool included),
what the assistant answered, each tool call as one line that opens, an edit as a diff.

Everything here returns plain data (strings, dataclasses); the templates escape it. Nothing from
a log is ever marked safe."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

# tools through which the agent asks the user and the result is the user's answer
ASKS = re.compile(r"(?i)^(askuserquestion|ask_?user|request_user_input|askfollowupquestion)$")
FEEDBACK = re.compile(r"(?i)\bthe user (?:said|provided the following (?:reason|feedback)[^:]*):")
# (old, new) argument pairs the agents' edit tools use
EDIT_PAIRS = (("old_string", "new_string"), ("old_str", "new_str"), ("old", "new"))
DIFF_LIMIT = 400  # lines of one diff shown; the rest is counted
TEXT_LIMIT = 200_000  # characters of one text shown on a page; the rest is counted


@dataclass
class Diff:
    path: str
    lines: list[tuple[str, str]]  # (kind: add | del | ctx | hunk, text)
    more: int = 0


@dataclass
class ToolView:
    name: str
    status: str
    line: str  # the one line shown closed
    arguments: str = ""
    result: str = ""
    diffs: list[Diff] = field(default_factory=list)
    answer: str = ""  # the user's answer when the tool asked the user


def clip(text: str | None, limit: int = TEXT_LIMIT) -> tuple[str, int]:
    """`text` cut to `limit` characters and how many were cut (a 5 MB prompt stays a page)."""
    text = text or ""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def _diff(path: str, old: str, new: str) -> Diff:
    lines: list[tuple[str, str]] = []
    for ln in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2):
        if ln.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(ln[:1], "ctx")
        lines.append((kind, ln))
    return Diff(path, lines[:DIFF_LIMIT], max(0, len(lines) - DIFF_LIMIT))


def _patch(text: str) -> list[Diff]:
    """A Codex `apply_patch` body (`*** Update File: p` then +/- lines) as diffs."""
    out: list[Diff] = []
    for ln in text.splitlines():
        head = re.match(r"\*\*\* (?:Update|Add|Delete) File: (.+)", ln)
        if head:
            out.append(Diff(head[1], []))
        elif out and ln[:1] in "+-@ " and not ln.startswith("***"):
            kind = {"+": "add", "-": "del", "@": "hunk"}.get(ln[:1], "ctx")
            if len(out[-1].lines) < DIFF_LIMIT:
                out[-1].lines.append((kind, ln))
            else:
                out[-1].more += 1
    return out


def diffs_of(name: str, arguments: str) -> list[Diff]:
    """The edits a tool call made, as diffs (none when it is not an edit)."""
    args = _args(arguments)
    path = str(args.get("file_path") or args.get("path") or args.get("filename") or "")
    for old_key, new_key in EDIT_PAIRS:
        if isinstance(args.get(old_key), str) and isinstance(args.get(new_key), str):
            return [_diff(path, args[old_key], args[new_key])]
    edits = args.get("edits") or args.get("edit")  # Claude's MultiEdit, Kimi's StrReplaceFile
    if isinstance(edits, dict):
        edits = [edits]
    if isinstance(edits, list):
        return [
            _diff(path, str(e.get(old, "")), str(e.get(new, "")))
            for e in edits
            if isinstance(e, dict)
            for old, new in EDIT_PAIRS
            if old in e or new in e
        ]
    patch = (
        args.get("patch")
        or args.get("input")
        or (arguments if "*** Begin Patch" in arguments else "")
    )
    if isinstance(patch, str) and "*** Begin Patch" in patch:
        return _patch(patch)
    if name.lower() in ("write", "writefile", "write_file", "create") and isinstance(
        args.get("content"), str
    ):
        return [_diff(path, "", args["content"])]
    return []


def tool_view(name: str, status: str, arguments: str, result: str) -> ToolView:
    """One tool call: its closed line, and opened its arguments, result, diffs or the answer."""
    args = _args(arguments)
    brief = (
        " ".join(
            str(args.get(k))
            for k in ("command", "file_path", "path", "pattern", "query", "description", "url")
            if args.get(k)
        )
        or arguments
    )
    line = f"{name} {' '.join(brief.split())}"[:160]
    shown_args, _ = clip(arguments, 20_000)
    shown_result, cut = clip(result, 20_000)
    if cut:
        shown_result += f"\n… {cut} more characters"
    return ToolView(
        name,
        status or "",
        line,
        shown_args,
        shown_result,
        diffs_of(name, arguments),
        user_words(name, shown_result),
    )


def user_words(name: str, result: str) -> str:
    """What the user said through a tool: the answer to a question the agent asked, or the
    feedback given when refusing a call (Claude Code: "... the user said: ...")."""
    if ASKS.match(name or ""):
        return result
    m = FEEDBACK.search(result or "")
    return result[m.end() :].strip() if m else ""


def refined_tool(call: dict[str, Any]) -> ToolView:
    """A tool call from the refined row (its summaries): the line shown before it is opened, and
    the user's words it carries."""
    name = call.get("name") or "tool"
    line = f"{name} {' '.join((call.get('args_summary') or '').split())}"[:160]
    answer = user_words(name, call.get("result_summary") or "")
    return ToolView(name, call.get("status") or "", line, answer=answer)


def marks(row: dict[str, Any]) -> list[str]:
    """What a turn is besides a plain exchange: a subagent's, a compaction recap, a command."""
    kinds = row.get("kinds") or []
    out = []
    if row.get("agent") not in (None, "main"):
        out.append("subagent")
    if "compaction" in kinds or row.get("origin") == "compaction":
        out.append("compaction recap")
    if row.get("origin") in ("command", "command_output"):
        out.append("command")
    if "interrupted" in kinds or row.get("origin") == "interrupt":
        out.append("interrupted")
    return out
