"""The archive's core MCP tools: search_context, load_turn_context, list_workspaces,
list_sessions, refine_session_turns. Each parses, calls one `Archive` method and renders."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, Resolve
from mcp_types import CallToolResult, CreateMessageResult
from pydantic import Field

from archive_mcp.errors import NotFound as NotFoundError
from archive_mcp.mcp.sampling import apply_sampled, sampling_request, session_rows
from archive_mcp.mcp.toolkit import (
    READ,
    TEXT,
    UPDATE,
    Budget,
    Roots,
    Spec,
    WorkspaceParam,
    fit,
    state,
    workspace_of,
)
from archive_mcp.render import hit_text, turn_text
from archive_mcp.search.context import NotFound, TurnDetail, TurnRef
from archive_mcp.search.engine import Hit

Detail = Literal["compact", "normal", "full"]
DetailParam = Annotated[
    Detail,
    Field(
        description="compact: ids and scores only (cheapest); normal: + summary "
        "and snippet; full: + status, kinds and the raw byte range."
    ),
]


@dataclass
class SearchOutput:
    hits: list[Hit]
    realized_mode: str
    fallback_reason: str | None
    truncated: bool = False
    catching_up: str | None = None  # "archive catching up: N files pending" while following


@dataclass
class TurnContextOutput:
    turns: list[TurnDetail]
    not_found: list[NotFound]
    truncated: bool = False


@dataclass
class WorkspaceInfo:
    id: str
    name: str
    paths: list[str]
    sessions: int | None = None
    turns: int | None = None


@dataclass
class WorkspacesOutput:
    workspaces: list[WorkspaceInfo]
    truncated: bool = False


@dataclass
class SessionInfo:
    session_id: str
    source: str
    title: str | None
    first_at: str | None
    last_at: str | None
    turns: int
    subagent_turns: int
    live: bool


@dataclass
class SessionsOutput:
    workspace_id: str
    sessions: list[SessionInfo]
    truncated: bool = False


@dataclass
class RefineOutput:
    workspace_id: str
    session_id: str
    refined: int
    sampled: int
    fallback_reason: str | None = None
    summaries: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False


def search_context(
    ctx: Context,
    query: Annotated[
        str,
        Field(
            max_length=TEXT,
            description="What happened in past sessions: keywords, an identifier "
            "(typos are tolerated) or a question; Chinese works.",
        ),
    ],
    workspace: WorkspaceParam = None,
    limit: Annotated[int, Field(ge=1, le=100, description="Most hits to return, best first.")] = 10,
    mode: Annotated[
        Literal["hybrid", "lexical", "fuzzy", "semantic"],
        Field(
            description="hybrid fuses the other three; lexical for exact identifiers; semantic for paraphrases."
        ),
    ] = "hybrid",
    session: Annotated[
        str | None, Field(max_length=TEXT, description="Only this session id (or id prefix).")
    ] = None,
    agent: Annotated[
        str | None, Field(max_length=TEXT, description='Only this agent: "main" or a subagent id.')
    ] = None,
    since: Annotated[
        datetime | None, Field(description="Only turns started at or after this ISO date.")
    ] = None,
    until: Annotated[
        datetime | None, Field(description="Only turns started at or before this ISO date.")
    ] = None,
    tool: Annotated[
        str | None,
        Field(max_length=TEXT, description="Only turns that called this tool (e.g. Shell)."),
    ] = None,
    file: Annotated[
        str | None,
        Field(max_length=TEXT, description="Only turns that touched a path containing this."),
    ] = None,
    theme: Annotated[
        str | None,
        Field(max_length=TEXT, description="Only turns tagged into this theme (list_themes)."),
    ] = None,
    kind: Annotated[
        str | None,
        Field(
            max_length=TEXT,
            description="Only turns of this kind: decision, fix, question, "
            "change, plan, reversal, test, …",
        ),
    ] = None,
    source: Annotated[
        str | None,
        Field(
            max_length=TEXT,
            description=(
                "Only turns from this agent product: kimi, kimi-code, claude-code, codex or gemini."
            ),
        ),
    ] = None,
    all_workspaces: Annotated[
        bool, Field(description="Search every workspace, not just this one.")
    ] = False,
    detail: DetailParam = "normal",
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, SearchOutput]:
    """Find past turns (what was asked, done and said) by topic: lexical + typo-tolerant fuzzy + semantic,
    fused; each hit cites session, turn and time. Use this for what happened in past sessions; use
    search_memory for what was decided or learned, and trace_theme to follow one topic over time."""
    archive = state(ctx).archive
    target: str = (
        "all" if all_workspaces or workspace == "all" else workspace_of(ctx, workspace, roots).id
    )
    found = archive.search(
        query,
        workspace=target,
        limit=limit,
        mode=mode,
        session=session,
        agent=agent,
        since=since,
        until=until,
        tool=tool,
        file=file,
        theme=theme,
        kind=kind,
        source=source,
    )
    hits = [_shape_hit(h, detail) for h in found]
    follower = state(ctx).follower
    behind = follower.catching_up() if follower else None

    def render(kept: list[Hit], cut: bool) -> str:
        lines = [found.headline(len(kept)), *(f"- {hit_text(h, detail)}" for h in kept)]
        if behind:
            lines.insert(0, f"({behind}; these hits are from what is archived so far)")
        if cut:
            lines.append(
                f"… {len(found) - len(kept)} more hits cut to fit max_output_chars; raise it or use detail=compact"
            )
        if kept:
            lines.append(
                "Read a turn in full with load_turn_context(references=[{session_id, turn}])."
            )
        return "\n".join(lines)

    return fit(
        hits,
        render,
        lambda kept, cut: SearchOutput(
            kept, found.realized_mode, found.fallback_reason, cut, behind
        ),
        max_output_chars,
    )


def load_turn_context(
    ctx: Context,
    references: Annotated[
        list[TurnRef],
        Field(
            min_length=1,
            max_length=20,
            description=(
                "Turns to read, as search_context cites them: [{session_id, turn, agent?}]."
            ),
        ),
    ],
    workspace: WorkspaceParam = None,
    before: Annotated[
        int, Field(ge=0, le=10, description="Also read this many turns before each reference.")
    ] = 0,
    after: Annotated[
        int, Field(ge=0, le=10, description="Also read this many turns after each reference.")
    ] = 0,
    include_tools: Annotated[
        bool, Field(description="Include tool calls with their arguments and results.")
    ] = True,
    include_thinking: Annotated[bool, Field(description="Include the model's thinking.")] = False,
    max_chars: Annotated[
        int,
        Field(
            ge=500,
            le=200_000,
            description=(
                "Budget for the whole reply; long texts are cut at word boundaries, tool arguments kept before outputs."
            ),
        ),
    ] = 6000,
    detail: DetailParam = "normal",
    roots: Roots = None,
) -> Annotated[CallToolResult, TurnContextOutput]:
    """Read exact past turns (user text, answer, tool calls with arguments and results) from the archived
    raw log. Use it after search_context or trace_theme, with the references they cite."""
    ws = workspace_of(ctx, workspace, roots)
    found = state(ctx).archive.load_turn_context(
        references,
        workspace=ws,
        before=before,
        after=after,
        include_tools=include_tools and detail != "compact",
        include_thinking=include_thinking,
        max_chars=max_chars * 2 // 3,
    )

    def render(kept: list[TurnDetail], cut: bool) -> str:
        parts = [turn_text(t) for t in kept] + [
            f"Not found: {n.session_id}:{n.turn} — {n.reason}" for n in found.not_found
        ]
        if cut:
            parts.append("… more turns cut to fit; ask for fewer references or raise max_chars")
        return "\n\n".join(parts)

    return fit(
        found.turns,
        render,
        lambda kept, cut: TurnContextOutput(kept, found.not_found, cut),
        max_chars,
    )


def list_workspaces(
    ctx: Context,
    detail: DetailParam = "normal",
    max_output_chars: Budget = 6000,
) -> Annotated[CallToolResult, WorkspacesOutput]:
    """The archived workspaces (id, name, paths; with counts unless compact). Use one as the `workspace`
    argument of the other tools when the default (your roots) is not the one you mean."""
    archive = state(ctx).archive
    infos = []
    for w in archive.workspaces():
        info = WorkspaceInfo(w.id, w.name, w.paths)
        if detail != "compact":
            st = archive.stats(w.id)
            info.sessions, info.turns = st.sessions, st.turns
        infos.append(info)

    def render(kept: list[WorkspaceInfo], cut: bool) -> str:
        lines = [
            f"- {w.name} ({w.id}) {', '.join(w.paths) or 'path unknown'}"
            + (f" — {w.sessions} sessions, {w.turns} turns" if w.sessions is not None else "")
            for w in kept
        ]
        return (
            "\n".join(lines + (["… more cut"] if cut else []))
            or "The archive is empty: run `archive-mcp ingest`."
        )

    return fit(infos, render, lambda kept, cut: WorkspacesOutput(kept, cut), max_output_chars)


def list_sessions(
    ctx: Context,
    workspace: WorkspaceParam = None,
    limit: Annotated[
        int, Field(ge=1, le=500, description="Most sessions to list, newest first.")
    ] = 20,
    detail: DetailParam = "normal",
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, SessionsOutput]:
    """Sessions of a workspace, newest first, with title, span and turn counts; the ids are what
    search_context's `session` filter and refine_session_turns take."""
    ws = workspace_of(ctx, workspace, roots)
    rows = state(ctx).archive.sessions(ws.id).head(limit).collect().to_dicts()
    infos = [
        SessionInfo(
            r["session_id"],
            r["source"],
            r["title"],
            _iso(r["first_at"]),
            _iso(r["last_at"]),
            int(r["turns"]),
            int(r["subagent_turns"]),
            bool(r["live"]),
        )
        for r in rows
    ]

    def render(kept: list[SessionInfo], cut: bool) -> str:
        lines = [
            f"- {s.session_id} {(s.first_at or '')[:16]} {s.turns} turns"
            + ("" if detail == "compact" else f" — {s.title or ''}")
            for s in kept
        ]
        return "\n".join(
            [f"{ws.name}: {len(kept)} sessions", *lines] + (["… more cut"] if cut else [])
        )

    return fit(infos, render, lambda kept, cut: SessionsOutput(ws.id, kept, cut), max_output_chars)


def refine_session_turns(
    ctx: Context,
    session_id: Annotated[
        str, Field(max_length=TEXT, description="The session to refine (list_sessions shows them).")
    ],
    workspace: WorkspaceParam = None,
    turns: Annotated[
        list[int] | None, Field(max_length=1000, description="Only these turns (default: all).")
    ] = None,
    use_sampling: Annotated[
        bool, Field(description="Ask your model (MCP sampling) for better summaries; opt-in.")
    ] = False,
    max_sampled_turns: Annotated[
        int, Field(ge=1, le=20, description="Cap on turns sent to your model.")
    ] = 5,
    detail: DetailParam = "normal",
    max_output_chars: Budget = 8000,
    roots: Roots = None,
    sampled: Annotated[CreateMessageResult | None, Resolve(sampling_request)] = None,
) -> Annotated[CallToolResult, RefineOutput]:
    """Refine a session's turns now from its raw log, when search summaries read poorly; optionally let
    your model write the summaries."""
    archive = state(ctx).archive
    ws = workspace_of(ctx, workspace, roots)
    if session_id not in archive.raw_files(ws):
        raise NotFoundError(
            f"no session {session_id!r} in workspace {ws.name}; list them with list_sessions"
        )
    report = archive.refine(ws.id, session=session_id, force=True)
    rows = session_rows(archive, ws, session_id, turns)
    n_sampled, reason = 0, None
    if use_sampling:
        n_sampled, reason = apply_sampled(
            archive, ws, session_id, rows[:max_sampled_turns], sampled
        )
        if len(rows) > max_sampled_turns:
            reason = (
                reason + "; " if reason else ""
            ) + f"only the first {max_sampled_turns} turns were sampled (max_sampled_turns)"
        rows = session_rows(archive, ws, session_id, turns)
    summaries = [
        {
            "agent": r["agent"],
            "turn": r["turn"],
            "refiner": r["refiner"],
            "summary": "" if detail == "compact" else r["summary"],
        }
        for r in rows
    ]
    head = (
        f"refined {report.turns} turns of {session_id}; {n_sampled} summarised by the client's model"
        + (f" ({reason})" if reason else "")
    )
    return fit(
        summaries,
        lambda kept, cut: "\n".join(
            [head]
            + [f"- {s['turn']}: {s['summary'] or s['refiner']}" for s in kept]
            + (["… more cut"] if cut else [])
        ),
        lambda kept, cut: RefineOutput(
            ws.id, session_id, report.turns, n_sampled, reason, kept, cut
        ),
        max_output_chars,
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _shape_hit(h: Hit, detail: Detail) -> Hit:
    if detail == "compact":
        return Hit(
            h.workspace_id,
            h.session_id,
            h.agent,
            h.turn,
            h.started_at,
            h.score,
            "",
            "",
            h.matched,
            h.status,
            [],
            h.raw_ref,
            None,
        )
    return h


TOOLS = [
    Spec(search_context, "Search past sessions", READ),
    Spec(load_turn_context, "Read past turns in full", READ),
    Spec(list_workspaces, "List archived workspaces", READ),
    Spec(list_sessions, "List sessions", READ),
    Spec(refine_session_turns, "Refine a session's summaries", UPDATE),
]
