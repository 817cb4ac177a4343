"""MCP tools for themes and their timelines: tag_theme, trace_theme, list_themes, discover_themes,
delete_theme."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from archive_mcp.mcp.toolkit import (
    DELETE,
    READ,
    TEXT,
    UPDATE,
    Budget,
    Roots,
    Spec,
    WorkspaceParam,
    fit,
    fit_one,
    result,
    state,
    workspace_of,
)
from archive_mcp.refs import TurnRef
from archive_mcp.render import to_jsonable
from archive_mcp.themes.store import Member, TagResult, Theme
from archive_mcp.themes.trace.output import TraceOutput

ThemeName = Annotated[str, Field(max_length=120)]
Refs = Annotated[
    list[TurnRef | Annotated[str, Field(max_length=TEXT)]] | None,
    Field(
        max_length=200, description='"SESSION:TURN" as the tools print them, or {session_id, turn}.'
    ),
]


@dataclass
class ThemeInfo:
    name: str
    slug: str
    status: str
    members: int
    description: str
    keywords: list[str]


@dataclass
class ThemeList:
    themes: list[ThemeInfo]
    truncated: bool = False


@dataclass
class DiscoverOutput:
    method: str
    turns: int
    clustered: int
    seconds: float
    themes: list[dict[str, Any]]
    removed: list[str]
    truncated: bool = False


def _info(t: Theme) -> ThemeInfo:
    return ThemeInfo(t.name, t.slug, t.status, len(t.members), t.description, t.keywords)


def tag_theme(
    ctx: Context,
    theme: Annotated[
        str, Field(max_length=120, description="A short name, e.g. 'payment retries'.")
    ],
    references: Refs = None,
    seeds: Annotated[
        list[Annotated[str, Field(max_length=TEXT)]] | None,
        Field(
            min_length=1,
            max_length=3,
            description="Keywords or a question: its strong hits are attached.",
        ),
    ] = None,
    remove: Annotated[
        list[TurnRef | Annotated[str, Field(max_length=TEXT)]] | None,
        Field(max_length=200, description="Turns to detach, as `references`."),
    ] = None,
    description: Annotated[str | None, Field(max_length=TEXT)] = None,
    min_score: Annotated[
        float,
        Field(
            ge=0,
            le=1,
            description="Strictness of seed hits; lower attaches more.",
        ),
    ] = 0.5,
    workspace: WorkspaceParam = None,
    roots: Roots = None,
) -> Annotated[CallToolResult, TagResult]:
    """Attach turns to a theme (creating it) by reference or from seed searches; returns near misses to
    confirm. Use it to start following a topic."""
    ws = workspace_of(ctx, workspace, roots)
    if seeds:  # seed searches refresh the index: a large build runs in the pool
        state(ctx).offload.fresh_indexes(state(ctx).archive, [ws])
    r = state(ctx).archive.tag_theme(
        theme,
        ws,
        references=references,
        seeds=seeds,
        remove=remove,
        description=description,
        min_score=min_score,
        who="mcp",
    )
    lines = [f"theme {r.theme!r}: {r.members} members (+{len(r.attached)}, -{len(r.removed)})"]
    if r.no_match:
        lines.append(r.no_match)
    lines += [f"+ {m.session_id}:{m.turn} ({_how(m)})" for m in r.attached]
    if r.near_misses:
        lines.append("near misses (confirm with references=[...]):")
        lines += [f"? {n['ref']} {_odds(n)} {n['summary']}" for n in r.near_misses]
    return fit_one(r, "\n".join(lines))


def _how(m: Member) -> str:
    """How a turn joined: its provenance, with the learned score's probability when it has one
    (topic seeds), else its hit score."""
    if m.probability is not None:
        return f"{m.provenance}, p {m.probability:.2f}"
    return f"{m.provenance}, {m.score:.2f}" if m.score else m.provenance


def _odds(near: dict[str, Any]) -> str:
    """A near miss's chance of belonging (topic seeds), else its share of the seed's best hit."""
    chance = near.get("probability")
    return f"p {chance:.2f}" if chance is not None else f"{near['share']:.2f}"


def trace_theme(
    ctx: Context,
    theme: ThemeName,
    workspace: WorkspaceParam = None,
    workspaces: Annotated[
        list[Annotated[str, Field(max_length=TEXT)]] | None,
        Field(
            max_length=20,
            description="Trace the theme across these workspaces.",
        ),
    ] = None,
    granularity: Annotated[
        Literal["auto", "day", "week", "session"],
        Field(description="How events are bucketed."),
    ] = "auto",
    include_turn_content: Annotated[
        bool, Field(description="Add each turn's request and answer.")
    ] = False,
    max_output_chars: Budget = 8000,
    roots: Roots = None,
) -> Annotated[CallToolResult, TraceOutput]:
    """How one theme evolved: its latest substantive turns (Now), its decision candidates, first
    and newest events, files, linked memories. Use it for "how did X evolve"; search_context finds single turns."""
    target: Any = workspaces if workspaces else workspace_of(ctx, workspace, roots)
    tl = state(ctx).archive.trace_theme(
        theme, target, granularity=granularity, include_turn_content=include_turn_content
    )
    told = tl.told(max_output_chars)  # one budget: the text tells the items the structure holds
    return result(told.text, to_jsonable(told.output))


def list_themes(
    ctx: Context,
    workspace: WorkspaceParam = None,
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, ThemeList]:
    """The workspace's themes (tagged, then suggested). Use it to find a theme to trace."""
    st, ws = state(ctx), workspace_of(ctx, workspace, roots)
    themes = st.archive.list_themes(ws)
    if not themes:  # a fresh archive: suggest some, as the tool promises
        st.offload.discover(st.archive, ws, 3)
        themes = st.archive.list_themes(ws)
    # the user's themes before the suggestions, so a cut drops suggestions first
    items = [_info(t) for t in sorted(themes, key=lambda t: t.status == "suggested")]
    return fit(
        items,
        lambda kept, cut: (
            "\n".join(
                f"- {t.name} [{t.status}, {t.members} turns] {t.description[:80]}" for t in kept
            )
            or "no themes yet: tag_theme or discover_themes"
        ),
        lambda kept, cut: ThemeList(kept, cut),
        max_output_chars,
        noun="themes",
    )


def discover_themes(
    ctx: Context,
    workspace: WorkspaceParam = None,
    min_size: Annotated[int, Field(ge=2, le=1000)] = 3,
    max_output_chars: Budget = 6000,
    roots: Roots = None,
) -> Annotated[CallToolResult, DiscoverOutput]:
    """Cluster the workspace's turns into suggested themes (tagged ones untouched). Use it when no
    theme fits yet."""
    st = state(ctx)
    d = st.offload.discover(st.archive, workspace_of(ctx, workspace, roots), min_size)
    themes = to_jsonable(d)["themes"]
    head = f"{len(d.themes)} suggested themes from {d.turns} turns ({d.method}, {d.seconds:.1f} s)"
    return fit(
        themes,
        lambda kept, cut: "\n".join(
            [head] + [f"- {t['slug']}: {t['name']} ({t['size']} turns)" for t in kept]
        ),
        lambda kept, cut: DiscoverOutput(
            d.method, d.turns, d.clustered, round(d.seconds, 3), kept, d.removed, cut
        ),
        max_output_chars,
        noun="themes",
    )


def delete_theme(
    ctx: Context, theme: ThemeName, workspace: WorkspaceParam = None, roots: Roots = None
) -> Annotated[CallToolResult, ThemeInfo]:
    """Delete a theme; its turns stay archived."""
    t = state(ctx).archive.delete_theme(theme, workspace_of(ctx, workspace, roots))
    return fit_one(_info(t), f"deleted theme {t.name!r}")


TOOLS = [
    Spec(tag_theme, "Tag turns into a theme", UPDATE),
    Spec(trace_theme, "Trace a theme over time", READ),
    Spec(list_themes, "List themes", READ),
    Spec(discover_themes, "Discover themes", UPDATE),
    Spec(delete_theme, "Delete a theme", DELETE),
]
