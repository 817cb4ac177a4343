"""A project's overview for `list_sessions(prompts=true)`: each session's turns, one line each
with the user's words, the routine turns (a `/clear`, a command's output, a compaction recap, an
interruption marker, a bare "continue", a task notification) left out and said once."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from archive_mcp.refiners.answers import MARKS
from archive_mcp.refiners.kinds import notified_only
from archive_mcp.refiners.notification import split
from archive_mcp.refiners.text import clip
from archive_mcp.search.ranking import NOISE_KINDS

PROMPT = 150  # characters of the user's words an overview shows a turn
# a turn of only these noise kinds (the ranking's) carries no request of the user's; an API-error
# turn does: the user's words were asked, the answer failed
ROUTINE = NOISE_KINDS - {"api_error"}
ROUTINE_NOTE = (
    "(routine turns are not listed: /clear, command output, compaction recaps, interruptions, "
    "bare continues, task notifications)"
)


@dataclass
class Prompt:
    """A turn of a session as an overview lists it: when, and the user's words (clipped)."""

    turn: int
    at: str | None
    said: str


def routine(kinds: list[str] | None, words: str) -> bool:
    """A turn the overview leaves out: only routine kinds, and no answer or feedback the user gave
    through a tool (`[answer] …`: a decision)."""
    if not kinds:
        return False
    return set(kinds) <= ROUTINE and not any(m in words for m in MARKS)


def prompts(turns: pl.LazyFrame, sessions: list[str]) -> tuple[dict[str, list[Prompt]], int]:
    """The main agent's turns of `sessions` that have user words and are not routine, in order
    (the words on one line, cut at PROMPT), and how many routine turns were left out."""
    rows = (
        turns.filter(pl.col("session_id").is_in(sessions) & (pl.col("agent") == "main"))
        .select("session_id", "turn", "started_at", "user_text", "kinds")
        .sort("session_id", "turn")
        .collect()
        .iter_rows(named=True)
    )
    out: dict[str, list[Prompt]] = {}
    left = 0
    for r in rows:
        text = r["user_text"] or ""
        # Claude Code's task notifications are not the user's words: alone, or with a bare
        # "continue" after them, routine. The refiner marks such a turn `continuation` when the
        # agent did no work after them, but the text is read here, by the refiner's own rule:
        # archives refined before it did not, and the overview lists the user's words, not work
        if notified_only(text):
            left += 1
            continue
        words = " ".join(split(text).said.split())
        if not words:
            continue
        if routine(r["kinds"], words):
            left += 1
            continue
        at = r["started_at"].isoformat() if r["started_at"] else None
        out.setdefault(r["session_id"], []).append(Prompt(r["turn"], at, clip(words, PROMPT)))
    return out, left


def when(at: str | None, day: str) -> str:
    """`HH:MM`, or `MM-DD HH:MM` when `at` is not on `day`."""
    if not at:
        return "--:--"
    return at[11:16] if at[:10] == day else f"{at[5:10]} {at[11:16]}"
