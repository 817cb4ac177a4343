"""A session's title when its agent wrote none: its first substantive request, never a slash
command, a command's output, a compaction summary or an interruption marker."""

from __future__ import annotations

from collections.abc import Iterable

from archive_mcp.refiners import Turn
from archive_mcp.refiners.text import shorten

TITLE = 60
NOT_A_REQUEST = ("/", "<", "[Request interrupted", "Caveat:")  # commands, their markup, markers


def substantive(turn: Turn) -> bool:
    """A turn the user opened with a request of their own."""
    text = (turn.user_text or "").lstrip()
    return turn.origin == "user" and bool(text) and not text.startswith(NOT_A_REQUEST)


def request_title(turns: Iterable[Turn]) -> str | None:
    """The first substantive request, shortened to a title; None when there is none yet."""
    first = next((t for t in turns if substantive(t)), None)
    return shorten(first.user_text, TITLE) if first is not None else None
