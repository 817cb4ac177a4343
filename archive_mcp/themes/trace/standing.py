"""Where a theme stands now: its latest substantive turns, newest first, the ones an agent should
read first.

No single state is asserted (issue 41: a Now that named one course was right for 24 of 54
held-out themes): the trace names up to `MOST` of the theme's latest turns that ask or do
something of their own, each with its date, its `session:turn` and a short quote of what was asked
and what came of it. A follow-up ("yes, proceed", "works great"), an approval ("option 2"), a
status table, noise (an interruption, a slash command, an API error, a compaction recap) and a
member tagging attached with little confidence (`TraceRules.now_min`) are never among them.
"""

from __future__ import annotations

import re
from typing import Any

from archive_mcp.refiners.text import clip
from archive_mcp.themes.noise import noise_kind
from archive_mcp.themes.trace.decisions import APPROVAL, FOLLOW_UP
from archive_mcp.themes.trace.model import Standing
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules

_TABLE = re.compile(r"^\s*\|.*\|\s*$", re.M)
_ASKED = re.compile(r"Asked:\s*(.*?)(?:\s+Did:|\s+Outcome:|$)", re.S)
_DID = re.compile(r"Did:\s*(.*?)(?:\s+Outcome:|$)", re.S)
_OUTCOME = re.compile(r"Outcome:\s*(.*)", re.S)


def sure(row: dict[str, Any], now_min: float = TRACE_RULES.now_min) -> bool:
    """Is the turn surely the theme's: not a member the learned score attached under `now_min`?"""
    chance = row.get("probability")
    return chance is None or chance >= now_min


def substantive(row: dict[str, Any], answer: str = "") -> bool:
    """Does this turn ask for or do something of its own (not a follow-up, table or noise)?
    `answer`: the head of the assistant's answer (a command that only printed is noise)."""
    user = (row.get("user_text") or "").strip()
    if noise_kind(user, answer, row.get("kinds") or []) is not None:
        return False
    if FOLLOW_UP.match(user[:200]) or APPROVAL.match(user[:200]):
        return False
    lines = [x for x in user.splitlines() if x.strip()]
    return not (lines and sum(bool(_TABLE.match(x)) for x in lines) > len(lines) / 2)


MOST = 3  # the latest substantive turns Now names
BOTH = 100  # a quote narrower than this gives what came of the turn only


def standing(
    rows: list[dict[str, Any]],
    answers: list[str] | None = None,
    rules: TraceRules = TRACE_RULES,
    most: int = MOST,
) -> list[Standing]:
    """The theme's latest `most` substantive turns, newest first (turns under `rules.now_min` are
    none). `rows`: the theme's turns in time order; `answers`: the head of each turn's answer."""
    answers = answers if answers is not None else [""] * len(rows)
    out: list[Standing] = []
    for row, answer in zip(reversed(rows), reversed(answers), strict=True):
        if len(out) == most:
            break
        if substantive(row, answer) and sure(row, rules.now_min):
            at = _iso(row.get("started_at"))
            out.append(Standing(row["session_id"], row["turn"], at, _asked(row), _done(row)))
    return out


def _done(row: dict[str, Any], width: int = 160) -> str:
    """What came of the turn: the refined summary's `Outcome:` part, else its `Did:` part."""
    summary = row.get("summary") or ""
    for m in (_OUTCOME.search(summary), _DID.search(summary)):
        if m and m.group(1).strip():
            return clip(" ".join(m.group(1).split()), width)
    return ""


def quote(s: Standing, width: int = 160) -> str:
    """The turn in `width` characters: what it asked → what came of it (the asking gets at most
    half when both are there); under `BOTH` characters only what came of it (else what it asked)."""
    if not s.done or s.done == s.asked:
        return clip(s.asked, width)
    if width < BOTH:
        return clip(s.done, width)
    return clip(f"{clip(s.asked, width // 2)} → {s.done}", width)


def _asked(row: dict[str, Any], width: int = 160) -> str:
    """What an open turn asked: the refined summary's `Asked:` part, else the user's words."""
    m = _ASKED.search(row.get("summary") or "")
    text = (
        m.group(1)
        if m and m.group(1).strip()
        else (row.get("user_text") or row.get("summary") or "")
    )
    return clip(" ".join(text.split()), width)


def _iso(x: Any) -> str | None:
    return x.isoformat() if hasattr(x, "isoformat") else (str(x) if x else None)


LEAD = "latest substantive turns, newest first"


def line(now: list[Standing]) -> str:
    """The **Now:** line: the latest substantive turns, each cited as `load_turn_context` takes it."""
    if not now:
        return "no substantive turn in this theme (only follow-ups, approvals or noise)"
    return f"{LEAD}: " + "; ".join(f"{(s.at or '?')[:10]} ({s.ref}): {quote(s)}" for s in now)


def short_line(now: list[Standing]) -> str:
    """The **Now:** line without its turns (the structured form lists them in `now`)."""
    return f"{LEAD} (in `now`)" if now else line(now)
