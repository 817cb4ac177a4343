"""The trace's model: a theme's timeline and its parts, as `timeline.build_timeline` makes them.

Plain dataclasses (each part serialises by `to_json`): the events, buckets, dormant gaps, touched
files, decisions, reversals and their briefs, where the theme stands (`Standing`), and the
timeline that holds them (`TimelineData`). The builder (`timeline.py`), where it stands
(`standing.py`) and the story (`story.py`) all read these; none of them is imported here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, is_dataclass
from datetime import datetime
from typing import Any

import polars as pl


@dataclass
class TimelineEvent:
    session_id: str
    agent: str
    turn: int
    at: datetime | None
    summary: str
    kinds: list[str]
    bucket: str = ""
    provenance: str = ""
    content: dict[str, Any] | None = None
    source: str = ""  # the agent the turn came from: kimi, kimi-code, claude-code, codex, gemini
    flag: str = ""  # decision | change | reversal, when the turn sets or changes a course

    @property
    def ref(self) -> str:
        return f"{self.session_id}:{self.turn}"


@dataclass(frozen=True)
class Bucket:
    """One period of the timeline (a day, a week or a session): its turns and distinctive words."""

    name: str  # "2026-01-08", "week of 2026-01-05" or a session id
    start: str | None  # the first turn's time, ISO
    turns: int
    keywords: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "bucket": self.name,
            "start": self.start,
            "turns": self.turns,
            "keywords": list(self.keywords),
        }


@dataclass(frozen=True)
class DormantGap:
    """A quiet spell between two consecutive turns (JSON: `from`, `to`, `days`)."""

    start: str  # the turn before the gap, ISO
    end: str  # the turn after it, ISO
    days: float

    def to_json(self) -> dict[str, Any]:
        return {"from": self.start, "to": self.end, "days": self.days}


@dataclass(frozen=True)
class TouchedFile:
    """A file the theme's turns touched: in how many turns, first and last (ISO, "" if unknown)."""

    path: str  # relative to the workspace's project path when under it
    turns: int
    first: str
    last: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "turns": self.turns, "first": self.first, "last": self.last}


@dataclass
class Decision:
    """A turn that sets or changes a course; the pairing fills `undoes`, `confidence`, `alternatives`."""

    session_id: str
    agent: str
    source: str
    turn: int
    ref: str  # session_id:turn
    at: str | None  # ISO
    flag: str  # decision | change | reversal
    by: str  # user | assistant
    cue: str
    gist: str
    summary: str
    kinds: list[str]
    undoes: str | None = None  # the ref of the course a change undoes
    confidence: float | None = None  # a change's pair score (similarity + recency), when claimed
    alternatives: list[str] = field(default_factory=list)  # refs it may undo instead

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DecisionBrief:
    """A decision as a reversal or a thread cites it (`alternatives` in JSON only when some)."""

    session_id: str
    turn: int
    ref: str
    at: str | None
    flag: str
    by: str
    gist: str
    summary: str
    alternatives: list[str] = field(default_factory=list)  # what a change may undo instead

    def to_json(self) -> dict[str, Any]:
        return json_without(self, "alternatives")


@dataclass(frozen=True)
class Alternative:
    """A course a change may undo instead of its pair."""

    ref: str
    at: str | None
    gist: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Reversal:
    """A change paired with the earlier decision it undoes."""

    decision: DecisionBrief  # the earlier decision
    reversed_by: DecisionBrief  # the change that undoes it
    shared_terms: list[str]
    similarity: float = 0.0
    alternatives: list[Alternative] = field(default_factory=list)  # other courses it may undo

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision.to_json(),
            "reversed_by": self.reversed_by.to_json(),
            "shared_terms": list(self.shared_terms),
            "similarity": self.similarity,
            "alternatives": [a.to_json() for a in self.alternatives],
        }


@dataclass
class Standing:
    """One of the theme's latest substantive turns, as Now names it: when, what it asked and what
    came of it (`standing.quote` joins the two in a width)."""

    session_id: str
    turn: int
    at: str | None
    asked: str
    done: str  # the refined summary's outcome, "" when it has none

    @property
    def ref(self) -> str:
        return f"{self.session_id}:{self.turn}"


@dataclass
class TimelineData:
    """A theme's timeline as built: its parts (`timeline.Timeline` adds the story's rendering)."""

    theme: str
    workspace_id: str
    granularity: str
    events: list[TimelineEvent]
    frame: pl.DataFrame = field(repr=False)
    buckets: list[Bucket] = field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    dormant_gaps: list[DormantGap] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    reversals: list[Reversal] = field(default_factory=list)
    files: list[TouchedFile] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    threads: list[list[DecisionBrief]] = field(
        default_factory=list
    )  # decision -> change -> ..., oldest first
    current_state: str = ""  # the **Now:** line, made from `now`
    now: list[Standing] = field(default_factory=list)  # the latest substantive turns (standing.py)
    # Were changes of course claimed (`TraceRules.claim_changes`)? Off, `decisions` are candidates
    # with no was/now link and `threads` / `reversals` stay empty.
    claims_changes: bool = False

    def to_json(self) -> dict[str, Any]:
        """Every field but the frame, as the JSON faces print it (the parts by their `to_json`)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "frame"}


def json_without(value: Any, *keys: str) -> dict[str, Any]:
    """A dataclass as JSON (`asdict`) without those of `keys` whose value is empty or None."""
    out = asdict(value)
    for key in keys:
        if not out[key]:
            del out[key]
    return out


def _plain(value: Any) -> Any:
    """A field's value as plain data: a part by its `to_json`, another dataclass by `asdict`."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "to_json"):
        return value.to_json()
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else value
