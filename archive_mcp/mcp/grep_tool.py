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
    found = _first_fitting(found, max_output_chars - MORE_ROOM, cite)
    return fit(
        found.turns,
        lambda kept, cut: grep_text(found, kept, cite),
        lambda kept, cut: GrepOutput(
            found.pattern, kept, found.searched, found.total, cut, found.skipped
        ),
        max_output_chars,
        noun="turns",
        how="narrow with sessions or where, or raise max_output_chars",
    )


def _first_fitting(found: GrepResult, budget: int, cite: Citing) -> GrepResult:
    """`found` with its first turn's lines cut to those that fit `budget` alone (the rest counted
    in its `more`): a turn with more lines than the budget holds (one asked by reference shows
    them all) shows its first lines, never none."""
    if not found.turns:
        return found
    first = found.turns[0]

    def with_lines(n: int) -> GrepResult:
        cut = replace(first, lines=first.lines[:n], more=first.more + len(first.lines) - n)
        return replace(found, turns=[cut, *found.turns[1:]])

    def fits(n: int) -> bool:
        one = with_lines(n)
        data = to_jsonable(GrepOutput(one.pattern, one.turns[:1], one.searched, one.total))
        return len(grep_text(one, one.turns[:1], cite)) <= budget and json_len(data) <= budget

    lo, hi = 1, len(first.lines)
    if hi <= 1 or fits(hi):
        return found
    while lo < hi:  # the most lines that fit
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return with_lines(lo)


TOOLS = [Spec(grep_turns, "Grep past turns", READ)]
