"""How a turn's tool calls read when a turn is loaded back: as a one-line digest (tool, target,
status, the result's first words) or whole, their input as `key: value` lines, paths under the
project's folder relative to it (with `matching`, the lines that hold the words: matching.py)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from archive_mcp.refiners.actions import call_paths, command_of
from archive_mcp.refiners.model import ToolCall
from archive_mcp.refiners.redact import redact
from archive_mcp.refiners.refine import args_summary
from archive_mcp.refiners.text import clip


@dataclass
class ToolDetail:
    """A tool call as a loaded turn shows it, or (`calls` > 1) the calls of one tool grouped: its
    targets, `×n` where one repeats, and how many ended how."""

    name: str
    arguments: str
    status: str
    result: str
    digest: bool = False  # one line: the call's target and its result's first words
    calls: int = 1  # the calls this line stands for


TARGET_MAX = 100  # a digest's target (the call's path, command or query)
FIRST_WORDS = 80  # a digest's first words of the result
# `cat -n`'s right-aligned line numbers ("    70→" as Claude Code's Read shows a file): the padding
_NUMBERED = re.compile(r"(?m)^ +(?=\d+(?:→|\t))")


# the notes an agent's harness appends to a tool's result (Claude Code's "<system-reminder>
# Whenever you read a file, you should consider whether it would be considered malware…"): not
# what the tool returned
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)


def tool_output(text: str) -> str:
    """A tool's result as the tool returned it: the harness's reminders left out."""
    return _REMINDER.sub("\n", text).strip("\n") if "<system-reminder>" in text else text


def relative(text: str, roots: Sequence[str]) -> str:
    """`text` with each project folder of `roots` left out before the paths under it (`/home/a/
    proj/src/x.py` -> `src/x.py`), the longest folder first; a root of one component (`/`,
    `/home`) is kept: paths under it would read as relative to nothing the agent knows."""
    for root in sorted(roots, key=len, reverse=True):
        folder = root.rstrip("/\\")
        if folder.count("/") + folder.count("\\") < 2 or folder not in text:
            continue
        sep = "\\" if "\\" in folder and "/" not in folder else "/"
        # only where a path starts: not inside a longer one (`/mnt/backup/home/a/proj/`, a URL)
        # and only before a name: the folder itself (`cd /home/a/proj/`) stays as it is
        text = re.sub(_NOT_AFTER_PATH + re.escape(folder + sep) + _NAME_NEXT, "", text)
    return text


def relative_word(word: str, roots: Sequence[str]) -> str:
    """A path asked as `relative` shows it: under a project folder (`/home/a/local-api/src/x.py`,
    `C:\\a\\local-api\\src\\x.py`) as `relative` makes it, or, from the folder's last parts
    down (`local-api/src/x.py`), the rest (`src/x.py`), with the word's own separators; any
    other word as it is."""
    shown = relative(word, roots)
    if shown != word:
        return shown
    seps = [m.end() for m in re.finditer(r"[/\\]", word)]  # where each part after the first starts
    parts = re.split(r"[/\\]", word)
    for root in sorted(roots, key=len, reverse=True):
        folder = [p for p in re.split(r"[/\\]", root) if p]
        if len(folder) < 2:  # as `relative`: paths under `/home` stay whole
            continue
        for k in range(min(len(folder), len(parts) - 1), 0, -1):
            if parts[:k] == folder[-k:] and (rest := word[seps[k - 1] :].strip("/\\")):
                return rest
    return word


_NOT_AFTER_PATH = r"(?<![\w.~/\\-])"  # what a path's first character does not follow
_NAME_NEXT = r"(?![\s\"'`,;:)\]}>]|$)"  # what a name under the folder does not start with


def _empty(value: object) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def plain_arguments(arguments: str) -> str:
    """A call's JSON input as an agent reads it best: an object's fields as `key: value` lines (a
    text value's own lines as they are), fields that are false, null or empty left out, and a
    lone text field as its value alone; anything else as given."""
    try:
        obj = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(obj, dict):
        return arguments
    kept = {k: v for k, v in obj.items() if not _empty(v)}
    if len(kept) == 1 and isinstance(only := next(iter(kept.values())), str):
        return only
    return "\n".join(
        f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for k, v in kept.items()
    )


def redacted_input(arguments: str, known: frozenset[str]) -> str:
    """A call's input with its secrets masked where they are read: a JSON input's string values
    one by one (a JSON escape, `\\u00e4` or `\\/`, hides a secret from the text as written) and
    written back as JSON when one held a secret, so `plain_arguments` never shows one in clear;
    the text itself masked too (as written when nothing else was found)."""
    try:
        obj = json.loads(arguments)
    except ValueError:
        return redact(arguments, known)[0]
    masked, found = _masked(obj, known)
    shown = json.dumps(masked, ensure_ascii=False) if found else arguments
    return redact(shown, known)[0]


def _masked(value: object, known: frozenset[str]) -> tuple[object, int]:
    """`value` (parsed JSON) with each string redacted, and how many secrets that masked."""
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, list | dict):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        done = {k: _masked(v, known) for k, v in items}
        found = sum(n for _, n in done.values())
        masked = [v for v, _ in done.values()]
        return (dict(zip(done, masked, strict=True)) if isinstance(value, dict) else masked), found
    return value, 0


def plain_output(text: str) -> str:
    """A tool's output with `cat -n`'s line-number padding left out."""
    return _NUMBERED.sub("", text) if "→" in text or "\t" in text else text


def digest_line(
    call: ToolCall, output: str, known: frozenset[str], roots: Sequence[str]
) -> tuple[str, str]:
    """A call's digest: its target (path, command or query; relative to the project) and its
    result's first words. The paths are made relative before the summary cuts each value, so
    that a long path under the project keeps its tail."""
    near = replace(call, arguments=relative(call.arguments, roots)) if roots else call
    # again on the summary: a path JSON escapes (a Windows one's `\\`) is plain only there
    target = clip(relative(redact(args_summary(near), known)[0], roots), TARGET_MAX)
    first = next((ln.strip() for ln in output.splitlines() if ln.strip()), "")
    return target, clip(relative(first, roots), FIRST_WORDS)


def digest(call: ToolCall, output: str, known: frozenset[str], roots: Sequence[str]) -> ToolDetail:
    """A call as one line: tool, target, status and the result's first words."""
    target, first = digest_line(call, output, known, roots)
    return ToolDetail(call.name, target, call.status, first, True)


GROUP_TARGET = 70  # a grouped call's target
GROUP_MAX = 400  # a tool's grouped targets
OTHER_TARGETS = ("pattern", "query", "url", "prompt")  # what a call without command or path is on


def _target(call: ToolCall, known: frozenset[str], roots: Sequence[str]) -> str:
    """What a call acted on, as a group lists it: its command (`command_of`: Codex's lists too),
    else its first path (`call_paths`: every reader's path keys), else a pattern, query, URL or
    prompt."""
    value = (
        command_of(call)
        or next(iter(call_paths(call)), "")
        or next((v for k in OTHER_TARGETS if isinstance(v := call.args.get(k), str)), "")
    )
    return clip(relative(redact(" ".join(value.split()), known)[0], roots), GROUP_TARGET)


def grouped(
    calls: Sequence[ToolCall], outputs: Sequence[str], known: frozenset[str], roots: Sequence[str]
) -> list[ToolDetail]:
    """A turn's calls as one line per tool, in the order each was first used: a tool called once
    as its digest (`digest_line`), one called more as how many, the targets (a path, a command,
    a pattern; `×n` where one repeats; none for a tool without one), how the calls ended, and
    the first words of the first failure."""
    order: dict[str, list[int]] = {}
    for i, c in enumerate(calls):
        order.setdefault(c.name, []).append(i)
    out = []
    for name, idx in order.items():
        if len(idx) == 1:  # a lone call keeps its digest: target and the result's first words
            out.append(digest(calls[idx[0]], outputs[idx[0]], known, roots))
            continue
        targets = Counter(t for i in idx if (t := _target(calls[i], known, roots)))
        listed = ", ".join(f"{t} ×{n}" if n > 1 else t for t, n in targets.items())
        ends = Counter(calls[i].status for i in idx)
        status = (
            next(iter(ends))
            if len(ends) == 1
            else ", ".join(f"{n} {s}" for s, n in ends.most_common())
        )
        failed = next((i for i in idx if calls[i].status in ("error", "rejected")), None)
        first = (
            "" if failed is None else digest_line(calls[failed], outputs[failed], known, roots)[1]
        )
        label = f"{name} ×{len(idx)}"
        out.append(ToolDetail(label, clip(listed, GROUP_MAX), status, first, True, len(idx)))
    return out
