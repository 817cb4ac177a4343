"""What a turn did, read from its tool calls: the files edited, the commands run, the state
changes (committed, pushed, installed) and the failures — the `Did:` part of a turn's summary."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from .model import ToolCall
from .text import shorten

DID_MAX = 110
TOOLS_SHOWN = 3  # tools named in Did, most used first

EDIT_TOOLS = {
    "WriteFile",
    "StrReplaceFile",
    "Edit",
    "Write",
    "MultiEdit",
    "apply_patch",
    "write_file",
    "edit_file",
    "replace",
    "NotebookEdit",
}
PATH_KEYS = (
    "path",
    "file",
    "file_path",
    "filePath",
    "filepath",
    "directory",
    "dir",
    "cwd",
    "notebook_path",
)
_PATH_KEY_SET = frozenset(PATH_KEYS)


def describe_actions(calls: list[ToolCall], limit: int = DID_MAX) -> str:
    """The files edited (base names) or else the first command, the state changes (with the
    commits' hashes), failures;
    the tools by name only when nothing was edited or run (the row lists every call anyway)."""
    if not calls:
        return ""
    edited = ordered(
        _base(p)
        for c in calls
        for p in (call_paths(c) if c.name in EDIT_TOOLS else patched_paths(c))
    )
    failed = sum(1 for c in calls if c.status in ("error", "rejected"))
    bits = []
    if edited:
        bits.append(
            "edited " + ", ".join(edited[:4]) + (f" +{len(edited) - 4}" if len(edited) > 4 else "")
        )
    cmds = [command_of(c) for c in calls if c.args.get("command")]
    notable = ordered(_verb(m.group(0)) for cmd in cmds for m in _NOTABLE.finditer(cmd[:2000]))
    if cmds and not edited:
        bits.append("ran `" + shorten(cmds[0], 40 if notable else 60) + "`")
    if notable:
        hashes = ordered(
            m.group(1)
            for c in calls
            if "git commit" in str(c.args.get("command", ""))
            for m in _COMMITTED.finditer(c.output_text[:2000])
        )
        bits.append(
            ", ".join(
                f"committed {', '.join(hashes[:3])}" if n == "committed" and hashes else n
                for n in notable[:3]
            )
        )
    if not bits:
        bits.append(
            ", ".join(n for n, _k in Counter(c.name for c in calls).most_common(TOOLS_SHOWN))
        )
    if failed:
        bits.append(f"{failed} failed")
    return shorten("; ".join(bits), limit)


# Commands that change state, named in "Did" (the facts people look for: committed, pushed, installed).
_NOTABLE = re.compile(
    r"\bgit (?:commit|push|tag|merge|rebase|revert|reset|checkout -b|switch -c)\b|"
    r"\bgh (?:pr|release|issue) (?:create|merge)\b|"
    r"\b(?:npm|pnpm|yarn|bun|pip|pip3|uv|cargo|brew|apt|apt-get|winget|go) (?:install|add)\b(?: [\w@./-]+)?"
)
_COMMITTED = re.compile(
    r"^\[[\w./-]+(?: \(root-commit\))? ([0-9a-f]{7,12})\]", re.M
)  # git commit's output
_VERBS = {
    "commit": "committed",
    "push": "pushed",
    "tag": "tagged",
    "merge": "merged",
    "rebase": "rebased",
    "revert": "reverted",
    "reset": "reset",
    "checkout": "branched",
    "switch": "branched",
}


def _verb(command: str) -> str:
    words = command.split()
    if words[0] == "git":
        return _VERBS[words[1]]
    if words[0] == "gh":
        return f"{words[1]} {'created' if words[2] == 'create' else 'merged'}"
    return "installed " + words[2] if len(words) > 2 else "installed"


_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
_SHELL_WRAP = re.compile(r"^(?:ba|z)?sh\s+-l?c\s+")


def command_of(call: ToolCall) -> str:
    """A shell call's command as one string (Codex passes `["bash", "-lc", "…"]`)."""
    cmd = call.args.get("command", "")
    if isinstance(cmd, list):
        cmd = " ".join(str(x) for x in cmd)
    return _SHELL_WRAP.sub("", str(cmd)).strip()


def patched_paths(call: ToolCall) -> list[str]:
    """Files an `apply_patch` run through a shell touches (Codex)."""
    cmd = call.args.get("command")
    text = " ".join(str(x) for x in cmd) if isinstance(cmd, list) else str(cmd or "")
    return _PATCH_FILE.findall(text[:20_000]) if "*** " in text else []


def _base(path: str) -> str:
    parts = [p for p in re.split(r"[\\/]", path) if p]
    return parts[-1] if parts else path


def ordered(items: Any) -> list[str]:
    seen: dict[str, None] = {}
    for i in items:
        seen.setdefault(i, None)
    return list(seen)


def call_paths(call: ToolCall) -> list[str]:
    args = call.args
    named = _PATH_KEY_SET.intersection(args)  # many calls name none: no loop over PATH_KEYS
    out = (
        [str(v) for k in PATH_KEYS if k in named and isinstance(v := args[k], str) and v]
        if named
        else []
    )
    edits = args.get("edits")
    edits = edits if isinstance(edits, list) else []
    out += [str(e["path"]) for e in edits if isinstance(e, dict) and isinstance(e.get("path"), str)]
    return out
