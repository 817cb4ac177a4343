"""The `grep_turns` MCP tool: the lines of past turns matching a regular expression, as grep over
the raw logs would find them, each under its turn, oldest first (`search/grep.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

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
from archive_mcp.refs import Citing
from archive_mcp.search.grep import WHERE, GrepResult, GrepTurn
from archive_mcp.workspaces import Workspace

Where = Literal["user", "answer", "thinking", "input", "output"]


@dataclass
class GrepOutput:
    pattern: str
    turns: list[GrepTurn]
    searched: int
    total: int
    truncated: bool = False


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
        Field(max_length=100, description="Session ids or prefixes (default: all)."),
    ] = None,
    where: Annotated[
        list[Where] | None,
        Field(description="Default all; input: commands, files written, edits."),
    ] = None,
    max_output_chars: Budget = 6000,
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
        lambda kept, cut: render(found, kept, cite, ws),
        lambda kept, cut: GrepOutput(pattern, kept, found.searched, found.total, cut),
        max_output_chars,
        noun="turns",
        how="narrow with sessions or where, or raise max_output_chars",
    )


def render(found: GrepResult, kept: list[GrepTurn], cite: Citing, ws: Workspace) -> str:
    """The turns as an agent reads them: a line per session (its short id and date), a line per
    turn (`:TURN HH:MM — the user's words`), its matching lines indented below."""
    n_lines = sum(len(t.lines) + t.more + t.repeated for t in found.turns)
    head = f"{n_lines} lines in {len(found.turns)} turns for {found.pattern!r}"
    if found.searched < found.total:
        head += (
            f" (searched {found.searched} of {found.total} turns, oldest first, before the "
            "time limit: narrow with sessions)"
        )
    out = [head]
    session, day = "", ""
    for t in kept:
        when = t.started_at or ""
        if t.session_id != session:
            session = t.session_id
            out.append(f"{cite.sid(t.session_id)}{' ' + when[:10] if when[:10] != day else ''}")
            day = when[:10] or day
        ref = cite.ref(t.session_id, t.turn, t.agent)
        again = (
            f" ({t.repeated} line{'s' if t.repeated > 1 else ''} as above)" if t.repeated else ""
        )
        out.append(f":{ref.split(':', 1)[1]} {when[11:16]} — {t.asked}{again}".replace("  —", " —"))
        # the user's words on the turn's line are not said again below it
        out += [
            f"  {line.where}: {line.text}"
            for line in t.lines
            if not (line.where == "user" and line.text == t.asked)
        ]
        if t.more:
            out.append(f"  … {t.more} more lines in this turn")
    if not found.turns:
        out.append(f"No line of {found.searched} turns in {ws.name} matches.")
    out += [f"(skipped {s})" for s in found.skipped]
    return "\n".join(out)


TOOLS = [Spec(grep_turns, "Grep past turns", READ)]
