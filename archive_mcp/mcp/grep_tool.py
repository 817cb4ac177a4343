"""The `grep_turns` MCP tool: the lines of past turns matching a regular expression, as grep over
the raw logs would find them, each under its turn, oldest first (`search/grep.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from archive_mcp.mcp.toolkit import (
    MORE_ROOM,
    READ,
    TEXT,
    Budget,
    Roots,
    Spec,
    WorkspaceParam,
    citing,
    fit,
    json_len,
    state,
    workspace_of,
)
from archive_mcp.refs import Citing
from archive_mcp.render import grep_text, to_jsonable
from archive_mcp.search.grep import WHERE, GrepResult, GrepTurn, Where


@dataclass
class GrepOutput:
    pattern: str
    turns: list[GrepTurn]
    searched: int
    total: int
    truncated: bool = False
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, found: GrepResult, kept: list[GrepTurn], cut: bool = False) -> GrepOutput:
        """The structured content of `kept`, the turns shown of `found`."""
        return cls(found.pattern, kept, found.searched, found.total, cut, found.skipped)


def grep_turns(
    ctx: Context,
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=TEXT,
            description="A regular expression (case-insensitive): `tree clean|git push`.",
        ),
    ],
    workspace: WorkspaceParam = None,
    sessions: Annotated[
        list[str] | None,
        Field(max_length=100, description="Session ids or prefixes, or SESSION:TURN."),
    ] = None,
    where: Annotated[
        list[Where] | None,
        Field(description="Default all; input: commands, files written, edits."),
    ] = None,
    max_output_chars: Budget = 4000,
    roots: Roots = None,
) -> Annotated[CallToolResult, GrepOutput]:
    """Lines of past turns matching a regular expression (grep -i), oldest first, under each
    SESSION:TURN, labelled by part. For a detail search does not rank: a command, a commit, a
    file's content, an error."""
    ws = workspace_of(ctx, workspace, roots)
    found = state(ctx).archive.grep_turns(
        pattern, ws, sessions=sessions or (), where=tuple(where or WHERE)
    )
    cite = citing(ctx, [ws])
    turns = found.turns
    first = _first_cut(found, max_output_chars, cite)
    if first is not None:  # the first turn is over the budget alone: its first lines, no other
        found = replace(found, turns=[first, *found.turns[1:]])
        turns = [first]
    return fit(
        turns,
        lambda kept, cut: grep_text(found, kept, cite),
        lambda kept, cut: GrepOutput.of(found, kept, cut),
        max_output_chars,
        noun="turns",
        how="narrow with sessions or where, or raise max_output_chars",
        total=len(found.turns),
    )


def _first_cut(found: GrepResult, budget: int, cite: Citing) -> GrepTurn | None:
    """The first turn with as many of its lines as fit `budget` alone (the rest counted in its
    `more`) when all of them do not (a turn asked by reference shows every line); None when they
    do. The lines counted are those the text prints: a `user` line that is the turn's header is
    not, and is kept with the line after it. Room is left for the line saying the later turns
    are not shown (their "as above" would count lines this cut left out, so none is)."""
    if not found.turns:
        return None
    head = found.turns[0]
    printed = [
        i for i, x in enumerate(head.lines) if not (x.where == "user" and x.text == head.asked)
    ]
    room = budget - (MORE_ROOM if len(found.turns) > 1 else 0)

    def cut(n: int) -> GrepTurn:  # the first n printed lines and the hidden ones before them
        end = printed[n - 1] + 1 if n else 0
        return replace(head, lines=head.lines[:end], more=head.more + len(printed) - n)

    def fits(turn: GrepTurn) -> bool:
        one = replace(found, turns=[turn])
        text = grep_text(one, [turn], cite)
        return len(text) <= room and json_len(to_jsonable(GrepOutput.of(one, [turn]))) <= room

    if fits(head) or len(printed) <= 1:
        return None  # it fits, or there is nothing to cut (`fit` shows what it can)
    lo, hi = 1, len(printed)
    while lo < hi:  # the most printed lines that fit
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(cut(mid)) else (lo, mid - 1)
    return cut(lo)


TOOLS = [Spec(grep_turns, "Grep past turns", READ)]
