"""The `grep_turns` MCP tool: the lines of past turns matching a regular expression, as grep over
the raw logs would find them, each under its turn, oldest first (`search/grep.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from archive_mcp.mcp.toolkit import (
    READ,
    TEXT,
    Budget,
    Roots,
    Spec,
    WorkspaceParam,
    citing,
    fit,
    state,
    workspace_of,
)
from archive_mcp.render import grep_text
from archive_mcp.search.grep import WHERE, GrepTurn, Where


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


TOOLS = [Spec(grep_turns, "Grep past turns", READ)]
