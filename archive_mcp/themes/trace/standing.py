"""Where a theme stands now: the turn(s) an agent should quote first.

The theme stands at its latest course that no later change undid (a decision, or the change that
replaced one). When substantive work on the theme carries on after that course (more than
`TraceRules.open_after` turns that ask or do something), the theme ends open: it stands at its latest
substantive turn ("open: last asked …"), with the standing course named after it. A follow-up
("yes, proceed", "works great"), an approval ("option 2"), a status table and noise (a slash
command, a compaction summary) are never where a theme stands: they only confirm what came
before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from archive_mcp.refiners.text import clip
from archive_mcp.themes.noise import noise_kind
from archive_mcp.themes.trace.decisions import APPROVAL, FOLLOW_UP
from archive_mcp.themes.trace.model import Decision, Standing
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules

_TABLE = re.compile(r"^\s*\|.*\|\s*$", re.M)
_ASKED = re.compile(r"Asked:\s*(.*?)(?:\s+Did:|\s+Outcome:|$)", re.S)


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


def standing(
    rows: list[dict[str, Any]],
    decisions: Sequence[Decision],
    answers: list[str] | None = None,
    rules: TraceRules = TRACE_RULES,
) -> list[Standing]:
    """Where the theme stands: the latest course no later change undid, or, when more than
    `rules.open_after` substantive turns follow it (turns under `rules.now_min` are none), the latest
    substantive turn (state `open`) and then that course. `rows`: the theme's turns in time order;
    `decisions`: the flagged ones, as the timeline lists them (with `undoes` set on the changes
    that were paired); `answers`: the head of each turn's answer."""
    if not rows:
        return []
    keys = [(r["session_id"], r["turn"]) for r in rows]
    at = {k: i for i, k in enumerate(keys)}
    answers = answers if answers is not None else [""] * len(rows)
    real = [
        substantive(r, a) and sure(r, rules.now_min) for r, a in zip(rows, answers, strict=True)
    ]
    undone = {d.undoes for d in decisions if d.undoes}
    courses = [
        d
        for d in decisions
        if d.ref not in undone and d.cue != "approval" and real[at[(d.session_id, d.turn)]]
    ]
    decided = _decided(courses[-1]) if courses else None
    if decided is not None:
        after = sum(real[at[(decided.session_id, decided.turn)] + 1 :])
        if after <= rules.open_after:
            return [decided]
    latest = next((i for i in range(len(rows) - 1, -1, -1) if real[i]), len(rows) - 1)
    last = rows[latest]
    opened = Standing(
        last["session_id"],
        last["turn"],
        _iso(last.get("started_at")),
        _asked(last),
        "open",
    )
    return [opened] + ([decided] if decided is not None else [])


def _decided(d: Decision) -> Standing:
    return Standing(d.session_id, d.turn, d.at, d.gist, "decided")


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


def line(now: list[Standing]) -> str:
    """The **Now:** line: where the theme stands, citing each turn as `load_turn_context` takes it."""
    if not now:
        return "no turns in this theme"
    parts = []
    for s in now:
        day = (s.at or "?")[:10]
        if s.state == "open":
            parts.append(f"open: last asked {day} ({s.ref}): {s.gist}")
        else:
            lead = "standing course" if parts else "decided"
            parts.append(f"{lead} {day} ({s.ref}): {s.gist}")
    return "; ".join(parts)


def short_line(now: list[Standing]) -> str:
    """The **Now:** line without the quotes: what state, when, which turn."""
    return "; ".join(f"{s.state} {(s.at or '?')[:10]} ({s.ref})" for s in now)
