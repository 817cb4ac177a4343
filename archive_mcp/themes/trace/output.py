"""The trace as told within a budget: what `story.budgeted` keeps of a timeline, typed.

One value serves every face: the MCP tool's structured output is it (its JSON by `to_jsonable`),
and `story.markdown(..., keep=it)` tells the very threads, decisions and events it holds
(`story.told` makes both at once: `Told`). Field names are the JSON keys (the MCP output schema
is made from these classes); a part that leaves out an empty or absent key has a `to_json` that
does so. The timeline's own parts (`model.py`)
name some things otherwise (a bucket's `name` is `bucket` here, a file's `path` is `file`, a gap's
`start` is `from`), so the told parts are their own small classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict  # pydantic reads it on Python < 3.12 (the MCP schema)

from archive_mcp.themes.trace.model import json_without

# A quiet spell as the JSON names it (`from` is a Python keyword: no dataclass field can be it).
Quiet = TypedDict("Quiet", {"from": str, "to": str, "days": float})


@dataclass(frozen=True)
class NowTurn:
    """One of Now's turns: `ref` is the citation `load_turn_context` takes."""

    ref: str
    at: str | None
    quote: str


@dataclass(frozen=True)
class Counts:
    """How many of each part the whole timeline has (what the budget kept is in the lists)."""

    events: int
    decisions: int
    threads: int
    files: int
    buckets: int


@dataclass(frozen=True)
class NotShown:
    """How many threads, decisions and events the budget left out."""

    threads: int = 0
    decisions: int = 0
    events: int = 0


@dataclass(frozen=True)
class ThreadStep:
    """A decision as a thread shows it, its gist clipped to the budget's width; `alternatives`
    (in JSON only when some) are the courses a change may undo instead."""

    ref: str
    at: str | None
    flag: str
    by: str
    gist: str
    alternatives: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return json_without(self, "alternatives")


@dataclass(frozen=True)
class Claimed(ThreadStep):
    """A decision outside any thread when changes of course are claimed: `undoes` always says
    (None: it undoes nothing claimed)."""

    undoes: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "undoes": self.undoes}


@dataclass(frozen=True)
class Candidate:
    """A decision candidate when changes of course are not claimed: no flag, no was/now link."""

    ref: str
    at: str | None
    by: str
    gist: str


@dataclass(frozen=True)
class TurnText:
    """A turn's request and answer, each clipped (with `include_turn_content`)."""

    user: str
    assistant: str


@dataclass(frozen=True)
class EventLine:
    """One event: its summary clipped to the budget's width; `agent` only for a subagent's turn,
    `content` only when asked for."""

    ref: str
    session_id: str
    turn: int
    at: str | None
    flag: str
    summary: str
    agent: str | None = None
    content: TurnText | None = None

    def to_json(self) -> dict[str, Any]:
        return json_without(self, "agent", "content")


@dataclass(frozen=True)
class BucketLine:
    """One period (a day, a week or a session): its first turn's time, turns and words."""

    bucket: str
    start: str | None
    turns: int
    keywords: list[str]


@dataclass(frozen=True)
class FileLine:
    """A file the theme's turns touched: in how many turns, first and last (ISO, "" if unknown)."""

    file: str
    turns: int
    first: str
    last: str


@dataclass
class TraceOutput:
    """The story first (current state, decision threads), then the newest events; within the
    budget it was told in (`truncated` and `not_shown` say what it left out)."""

    theme: str
    granularity: str
    first_seen: str | None
    last_seen: str | None
    current_state: str  # what Now lists (the turns are in `now`), or the whole line when none
    now: list[NowTurn]
    claims_changes: bool
    counts: Counts
    threads: list[list[ThreadStep]] = field(default_factory=list)
    decisions: list[Claimed | Candidate] = field(default_factory=list)
    events: list[EventLine] = field(default_factory=list)
    buckets: list[BucketLine] = field(default_factory=list)
    dormant_gaps: list[Quiet] = field(default_factory=list)
    files: list[FileLine] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    truncated: bool = False
    not_shown: NotShown = field(default_factory=NotShown)


@dataclass(frozen=True)
class Told:
    """A trace told once within a budget: its structure and the text that tells the same items."""

    text: str
    output: TraceOutput
