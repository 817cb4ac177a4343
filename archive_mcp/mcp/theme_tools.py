"""MCP tools, the theme:// resource and the cold-start prompt for themes and timelines."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import CallToolResult, ListRootsResult
from pydantic import Field

from archive_mcp.archive import Archive
from archive_mcp.mcp.toolkit import DELETE, READ, UPDATE, WorkspaceParam, guard, tool_result
from archive_mcp.search.context import TurnRef
from archive_mcp.themes.store import TagResult, ThemeError
from archive_mcp.workspaces import Workspace, WorkspaceError


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


@dataclass
class TraceOutput:
    """The story first (current state, decision threads), then the newest events; within the budget."""
    theme: str
    granularity: str
    first_seen: str | None
    last_seen: str | None
    current_state: str
    counts: dict[str, int]
    threads: list[list[dict[str, Any]]]
    decisions: list[dict[str, Any]]
    events: list[dict[str, Any]]
    buckets: list[dict[str, Any]]
    dormant_gaps: list[dict[str, Any]]
    files: list[dict[str, Any]]
    memories: list[str]
    truncated: bool = False


@dataclass
class DiscoverOutput:
    method: str
    turns: int
    clustered: int
    seconds: float
    themes: list[dict[str, Any]]
    removed: list[str]


def register_themes(server: MCPServer, archive: Archive,
                    resolve: Callable[[str | None, ListRootsResult | None], Workspace],
                    roots_request: Callable[..., Any], server_cwd: str) -> None:
    Roots = Annotated[ListRootsResult | None, Resolve(roots_request)]  # noqa: N806

    @server.tool(annotations=UPDATE)
    def tag_theme(theme: Annotated[str, Field(description="Theme name, e.g. 'payment retries'.")],
                  references: Annotated[list[TurnRef] | None, Field(description="Confirmed turns {session_id, turn, agent?}.")] = None,
                  seeds: Annotated[list[str] | None, Field(min_length=1, max_length=3, description="1-3 keywords or a question: search and attach the good hits.")] = None,
                  remove: Annotated[list[TurnRef] | None, Field(description="Turns to detach.")] = None,
                  description: str | None = None,
                  min_score: Annotated[float, Field(ge=0, le=1, description="Attach seed hits scoring at least this share of the best hit.")] = 0.5,
                  workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, TagResult]:
        """Attach turns to a theme (references, or candidates from seeds); returns the near misses to confirm."""
        ws = resolve(workspace, roots)
        r = guard(lambda: archive.tag_theme(theme, ws, references, seeds, remove, description, min_score, who="mcp"))
        lines = [f"theme {r.theme!r}: {r.members} members (+{len(r.attached)}, -{len(r.removed)})"]
        lines += [f"+ {m.session_id}:{m.turn} ({m.provenance}{f', {m.score:.2f}' if m.score else ''})" for m in r.attached]
        if r.near_misses:
            lines.append("near misses (confirm with references=[...]):")
            lines += [f"? {n['ref']} {n['share']:.2f} {n['summary']}" for n in r.near_misses]
        return tool_result(r, "\n".join(lines))

    @server.tool(annotations=READ)
    def trace_theme(theme: str, workspace: WorkspaceParam = None,
                    workspaces: Annotated[list[str] | None, Field(description="Trace across these workspaces (explicit only).")] = None,
                    granularity: Literal["auto", "day", "week", "session"] = "auto",
                    include_turn_content: bool = False,
                    max_output_chars: Annotated[int, Field(ge=500, le=200_000)] = 8000,
                    roots: Roots = None) -> Annotated[CallToolResult, TraceOutput]:
        """How a theme evolved and where it stands now: decision threads (was → now, with session:turn),
        then the newest events, buckets, files, memories; within max_output_chars (text and structure)."""
        target: Any = workspaces if workspaces else resolve(workspace, roots)
        tl = guard(lambda: archive.trace_theme(theme, target, granularity, include_turn_content))
        out = TraceOutput(**tl.budgeted(max_output_chars))
        return tool_result(out, tl.markdown(max_output_chars), max_output_chars)

    @server.tool(annotations=READ)
    def list_themes(workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, ThemeList]:
        """Themes of the workspace: tagged by you, or suggested by discover_themes."""
        ws = resolve(workspace, roots)
        items = [ThemeInfo(t.name, t.slug, t.status, len(t.members), t.description, t.keywords)
                 for t in guard(lambda: archive.list_themes(ws))]
        text = "\n".join(f"- {t.name} [{t.status}, {t.members} turns] {t.description[:80]}" for t in items)
        return tool_result(ThemeList(items), text or "no themes yet: tag_theme or discover_themes")

    @server.tool(annotations=UPDATE)
    def discover_themes(workspace: WorkspaceParam = None,
                        min_size: Annotated[int, Field(ge=2, le=1000)] = 3, roots: Roots = None) -> Annotated[CallToolResult, DiscoverOutput]:
        """Cluster the workspace's turns into suggested themes (stable ids; tagged themes untouched)."""
        ws = resolve(workspace, roots)
        d = guard(lambda: archive.discover_themes(ws, min_size))
        j = d.to_json()
        text = f"{len(d.themes)} suggested themes from {d.turns} turns ({d.method}, {d.seconds:.1f} s)\n"
        text += "\n".join(f"- {t['slug']}: {t['name']} ({t['size']} turns)" for t in j["themes"])
        return tool_result(DiscoverOutput(d.method, d.turns, d.clustered, round(d.seconds, 3), j["themes"], d.removed), text)

    @server.tool(annotations=DELETE)
    def delete_theme(theme: str, workspace: WorkspaceParam = None, roots: Roots = None) -> Annotated[CallToolResult, ThemeInfo]:
        """Delete a theme (its turns stay archived)."""
        ws = resolve(workspace, roots)
        t = guard(lambda: archive.delete_theme(theme, ws))
        return tool_result(ThemeInfo(t.name, t.slug, t.status, len(t.members), t.description, t.keywords), f"deleted theme {t.name!r}")

    @server.resource("theme://{name}", mime_type="text/markdown", description="A theme's timeline as Markdown")
    def theme_resource(name: str) -> str:
        try:
            return archive.trace_theme(name, archive.workspace(cwd=server_cwd)).markdown()
        except (ThemeError, WorkspaceError) as exc:
            raise ResourceError(str(exc)) from exc

    @server.prompt("memory-theme-trace", description="Cold start: scope, seeds, candidates, confirm, tag, trace.")
    def memory_theme_trace(topic: str) -> str:
        return (f"Trace how '{topic}' evolved before you change anything about it.\n"
                "1. Scope: list_workspaces / list_themes — is there already a theme for it?\n"
                f"2. Seeds: pick 1-3 seeds (identifiers, file names, a question) for '{topic}'.\n"
                "3. Candidates: tag_theme(theme, seeds=[...]) attaches strong hits and returns near misses.\n"
                "4. Confirm: load_turn_context on near misses; tag_theme(references=[...]) the relevant ones, "
                "remove=[...] the wrong ones.\n"
                "5. Refine: refine_session_turns for sessions whose summaries are poor.\n"
                "6. Trace: trace_theme(theme) — read the decisions and reversals; cite them (session:turn) "
                "when you act, and remember(folder='decisions') what you decide.")
