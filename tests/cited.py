"""The turn references an agent reads in `search_context`'s text: a session line (its short id,
`[source]`, `(workspace NAME)`, a date), then one `:TURN [agent] HH:MM …` line a hit."""

from __future__ import annotations

import re

SESSION_LINE = re.compile(
    r"^(?P<sid>[\w-]+)(?: \[[\w-]+\])?(?: \(workspace (?P<ws>[\w-]+)\))?(?: \d{4}-\d\d-\d\d)?$"
)
HIT_LINE = re.compile(r"^:(?P<turn>\d+)(?P<agent> \[[^\]]+\])? ")


def cited(text: str) -> list[tuple[str, str | None]]:
    """`(SESSION:TURN[ [agent]], workspace name or None)` for every hit line, in order."""
    out: list[tuple[str, str | None]] = []
    sid, ws = "", None
    for line in text.splitlines():
        if hit := HIT_LINE.match(line):
            out.append((f"{sid}:{hit['turn']}{hit['agent'] or ''}", ws))
        elif session := SESSION_LINE.match(line):
            sid, ws = session["sid"], session["ws"]
    return out


def refs(text: str) -> list[str]:
    return [ref for ref, _ in cited(text)]
