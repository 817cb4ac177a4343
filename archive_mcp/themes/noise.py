"""Turns that carry no topic of their own: slash commands that did no work, compaction summaries,
continuation stubs, API errors and interrupted requests.

The refiner marks them as kinds; turns refined before it did (or by another reader) are
recognised here from their text, so discovery and seed expansion can leave them out either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

from archive_mcp.refiners.kinds import notified_only

NOISE_KINDS = ("command", "compaction", "continuation", "api_error", "interrupted")

_LOCAL_COMMAND = re.compile(
    r"^\s*(?:<command-name>\s*/?[\w:.-]+\s*</command-name>|<local-command-\w+>|/[\w:.-]+(?:\s|$))"
)
_COMPACTION = (
    "this session is being continued from a previous conversation",
    "this conversation was compacted",
    "<compact-summary>",
    "[compacted]",
)
_CONTINUATION = re.compile(
    r"^\s*(?:please\s+)?(?:continue|go on|keep going|resume|proceed|继续)\W{0,3}$", re.IGNORECASE
)
_INTERRUPTED = re.compile(r"^\s*\[request interrupted by user[^\]]*\]\s*$", re.IGNORECASE)
_API_ERROR = re.compile(
    r"^\s*(?:api error\b|prompt is too long|request timed out|overloaded_error|"
    r"invalid api key|credit balance is too low)",
    re.IGNORECASE,
)


def noise_kind(
    user: str, assistant: str, kinds: Iterable[str] = (), worked: bool = False
) -> str | None:
    """Which noise a turn is, or None. `worked`: the turn called tools (a command that runs a plan
    is real work, so it is not noise)."""
    have = set(kinds)
    head = user.lstrip()[:400].lower()
    if "compaction" in have or any(c in head for c in _COMPACTION):
        return "compaction"
    if "interrupted" in have and not assistant.strip() or _INTERRUPTED.match(user):
        return "interrupted"
    if "api_error" in have or (_API_ERROR.match(assistant) and len(assistant) < 400):
        return "api_error"
    if (
        not worked
        and ("command" in have or _LOCAL_COMMAND.match(user))
        and len(assistant.strip()) < 400
    ):
        return "command"
    if notified_only(user):
        # Claude Code's task notifications (and a bare "continue"), the refiner's rule, read from
        # the text whatever the kinds say: alone, noise; when the agent then worked, its answer
        # may carry a topic (the labels count such turns as members: themes_heldout.md)
        return None if worked else "continuation"
    if "continuation" in have or (not worked and _CONTINUATION.match(user)):
        return "continuation"
    return None


def noise_mask(frame: pl.DataFrame) -> list[bool]:
    """True for each row of a refined frame (user_text, assistant_text, kinds, tool_calls) that is noise."""
    calls = (
        frame["tool_calls"].list.len().fill_null(0).to_list()
        if "tool_calls" in frame.columns
        else [0] * frame.height
    )
    return [
        noise_kind(u or "", a or "", k or [], bool(c)) is not None
        for u, a, k, c in zip(
            frame["user_text"].to_list(),
            frame["assistant_text"].to_list(),
            frame["kinds"].to_list(),
            calls,
            strict=True,
        )
    ]
