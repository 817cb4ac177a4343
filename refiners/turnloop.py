"""The one JSONL loop of the newer readers (Pi, Copilot CLI, Factory Droid): records in, turns out.

A reader gives a `TurnBuilder` (what each record does to the turns) and its discovery; this
module reads the lines from a turn boundary, feeds them to the builder and says where to resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from .lines import LineReader, finish
from .model import ParseResult, Turn


class TurnBuilder(Protocol):
    turns: list[Turn]
    unknown: dict[str, int]  # record types the reader does not know, counted
    version: str | None  # the agent's version, when a record names it

    def feed(self, rec: dict[str, Any], start: int, end: int) -> bool:
        """Apply one record (bytes [start, end) of the file); True when it opened a turn."""
        ...


def parse_jsonl(
    builder: TurnBuilder,
    path: Path,
    start: int = 0,
    first_line: int = 1,
    start_index: int = 0,
    protocol: str | None = None,
    stop: int | None = None,
) -> ParseResult:
    """`path` from byte `start` (a turn boundary) to `stop`, through `builder`."""
    reader = LineReader(path, start=start, first_line=first_line, stop=stop)
    line_of_turn: dict[int, int] = {}
    for rec in reader:
        if builder.feed(rec.data, rec.start, rec.end):
            line_of_turn[builder.turns[-1].index] = rec.line
    version = builder.version or protocol or "unknown"
    return finish(
        builder.turns,
        version,
        reader,
        builder.unknown,
        line_of_turn,
        start,
        first_line,
        start_index,
    )


def open_turn(
    turns: list[Turn], index: int, text: str, ts: float | None, start: int, end: int
) -> Turn:
    """A new turn at `index` after `turns` (an open one before it is superseded)."""
    if turns and turns[-1].end == "open":
        turns[-1].end = "superseded"
    turn = Turn(
        index=index,
        started_at=ts,
        user_text=text,
        byte_start=start,
        byte_end=end,
        last_at=ts,
        legacy=True,
        origin="command" if text.startswith("/") else "user",
    )
    turns.append(turn)
    return turn


def end_turn(turn: Turn, reason: str, ts: float | None) -> None:
    """The agent said the turn is over (`reason`: completed, failed, interrupted)."""
    turn.end, turn.reason, turn.ended_at = "ended", reason, ts
