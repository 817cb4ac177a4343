"""The MCP server (`archive-mcp serve`): thin tools over `Archive`, stdio or HTTP on 127.0.0.1.

Every tool: typed inputs (the input schema), an output schema with structured content, a
compact text rendering within `max_output_chars`, annotations, and errors raised as tool errors
that say what to do next. Nothing heavy is imported before the first call that needs it.
"""


import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve, Sample
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    CallToolResult,
    CreateMessageResult,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from pydantic import Field

from archive_mcp.archive import Archive
from archive_mcp.mcp.toolkit import READ, UPDATE, Budget, WorkspaceParam, tool_result
from archive_mcp.refiners.refine import REFINER
from archive_mcp.refiners.summary import compose
from archive_mcp.search.context import NotFound, TurnDetail, TurnRef
from archive_mcp.search.engine import MODES, Hit, SearchError
from archive_mcp.workspaces import Workspace, WorkspaceError

Detail = Literal["compact", "normal", "full"]
DetailParam = Annotated[Detail, Field(description="compact: ids and scores; normal: + summary and snippet; full: everything.")]


# --- output shapes (the output schemas) ----------------------------------------------------

@dataclass
class SearchOutput:
    hits: list[Hit]
    realized_mode: str
    fallback_reason: str | None
    truncated: bool = False


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


# --- rendering within budget ---------------------------------------------------------------

def _fit(items: list[Any], render: Callable[[list[Any], bool], str], budget: int) -> tuple[list[Any], str, bool]:
    """Drop items from the end until the rendering fits the budget; say so when it did."""
    kept = list(items)
    text = render(kept, False)
    while len(text) > budget and kept:
        kept.pop()
        text = render(kept, True)
    if len(text) > budget:
        text = text[: budget - 1] + "…"
    return kept, text, len(kept) < len(items)


def _hit_line(h: Hit, detail: Detail) -> str:
    head = f"- {h.session_id}:{h.turn}{'' if h.agent == 'main' else f' [{h.agent}]'} {(h.started_at or '')[:16]} score={h.score:.4f} ({'+'.join(h.matched)})"
    if detail == "compact":
        return head
    out = f"{head}\n  {h.summary}"
    if h.snippet:
        out += f"\n  > {h.snippet}"
    if detail == "full":
        out += f"\n  status={h.status} kinds={','.join(h.kinds)} raw={h.raw_ref}"
    return out


# --- the server ----------------------------------------------------------------------------

def build_server(archive: Archive | None = None, cwd: str | None = None) -> MCPServer:
    """An MCP server over `archive` (default: the archive of $ARCHIVE_MCP_HOME)."""
    archive = archive or Archive()
    server_cwd = cwd or os.getcwd()
    server = MCPServer("archive-mcp", log_level="WARNING", instructions=(
        "Search and read past coding-agent sessions of this workspace. Start with search_context "
        "(compact detail is cheapest), then load_turn_context for the exact turns you need."))

    def _warm() -> None:  # load the model and index off the request path
        try:
            archive.embedder  # noqa: B018
            archive.search("warm up", workspace=archive.workspace(cwd=server_cwd).id, limit=1)
        except Exception:  # noqa: BLE001 - warming is best effort; real calls report errors
            pass

    threading.Thread(target=_warm, daemon=True).start()

    def resolve(workspace: str | None, roots: ListRootsResult | None) -> Workspace:
        """Explicit workspace, else the client's roots, else the server's cwd."""
        try:
            if workspace:
                return archive.workspace(workspace)
            return archive.workspace(cwd=server_cwd, roots=_root_paths(roots))
        except WorkspaceError as exc:
            raise ToolError(str(exc)) from exc

    def sampling_request(session_id: str, workspace: str | None, turns: list[int] | None,
                         use_sampling: bool, max_sampled_turns: int, ctx: Context) -> Sample | None:
        """One sampling request for up to `max_sampled_turns` turns, when opted in and offered."""
        caps = ctx.client_capabilities
        if not use_sampling or caps is None or caps.sampling is None:
            return None
        try:
            ws = archive.workspace(workspace) if workspace else archive.workspace(cwd=server_cwd)
        except WorkspaceError:
            return None
        df = archive.turns(ws.id).filter(_session_is(session_id)).sort("agent", "turn").collect()
        rows = [r for r in df.iter_rows(named=True) if not turns or r["turn"] in turns][:max_sampled_turns]
        if not rows:
            return None
        return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=sampling_prompt(rows)))],
                      max_tokens=120 * len(rows) + 50)

    from archive_mcp.mcp.memory_tools import register_memory
    from archive_mcp.mcp.theme_tools import register_themes
    register_memory(server, archive, resolve, _roots_request, server_cwd)
    register_themes(server, archive, resolve, _roots_request, server_cwd)

    @server.tool(annotations=READ)
    async def search_context(
        query: Annotated[str, Field(description="Keywords, an identifier (typos are tolerated) or a question; Chinese works.")],
        workspace: WorkspaceParam = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        mode: Annotated[Literal["hybrid", "lexical", "fuzzy", "semantic"], Field(description="hybrid fuses the other three.")] = "hybrid",
        session: Annotated[str | None, Field(description="Only this session id (or id prefix).")] = None,
        agent: Annotated[str | None, Field(description='"main" or a subagent id.')] = None,
        since: Annotated[datetime | None, Field(description="Only turns started at or after (ISO date).")] = None,
        until: Annotated[datetime | None, Field(description="Only turns started at or before (ISO date).")] = None,
        tool: Annotated[str | None, Field(description="Only turns that called this tool (e.g. Shell).")] = None,
        file: Annotated[str | None, Field(description="Only turns that touched a path containing this.")] = None,
        theme: Annotated[str | None, Field(description="Only turns tagged into this theme.")] = None,
        kind: Annotated[str | None, Field(description="decision, fix, question, change, plan, reversal, test, …")] = None,
        all_workspaces: Annotated[bool, Field(description="Search every workspace (analysts only).")] = False,
        detail: DetailParam = "normal",
        max_output_chars: Budget = 6000,
        roots: Annotated[ListRootsResult | None, Resolve(_roots_request)] = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Find past turns about a topic: lexical + typo-tolerant fuzzy + semantic, fused. Each hit cites session, turn and time."""
        target: str | list[str] = "all" if all_workspaces or workspace == "all" else resolve(workspace, roots).id
        try:
            found = archive.search(query, workspace=target, limit=limit, mode=mode, session=session,
                                   agent=agent, since=since, until=until, tool=tool, file=file,
                                   theme=theme, kind=kind)
        except (SearchError, WorkspaceError) as exc:
            raise ToolError(str(exc)) from exc

        def render(hits: list[Hit], cut: bool) -> str:
            lines = [found.headline(len(hits)), *(_hit_line(h, detail) for h in hits)]
            if cut:
                lines.append(f"… {len(found) - len(hits)} more hits cut to fit max_output_chars; raise it or use detail=compact")
            if hits:
                lines.append("Read a turn in full with load_turn_context(references=[{session_id, turn}]).")
            return "\n".join(lines)

        hits = [_shape_hit(h, detail) for h in found]
        kept, text, cut = _fit(hits, render, max_output_chars)
        return tool_result(SearchOutput(kept, found.realized_mode, found.fallback_reason, cut), text, max_output_chars)

    @server.tool(annotations=READ)
    async def load_turn_context(
        references: Annotated[list[TurnRef], Field(min_length=1, max_length=20, description="Turns to load: {session_id, turn, agent?}.")],
        workspace: WorkspaceParam = None,
        before: Annotated[int, Field(ge=0, le=10, description="Also load this many turns before each.")] = 0,
        after: Annotated[int, Field(ge=0, le=10, description="Also load this many turns after each.")] = 0,
        include_tools: bool = True,
        include_thinking: bool = False,
        max_chars: Annotated[int, Field(ge=500, le=200_000, description="Budget for all turns together; long texts are cut with a marker.")] = 6000,
        detail: DetailParam = "normal",
        roots: Annotated[ListRootsResult | None, Resolve(_roots_request)] = None,
    ) -> Annotated[CallToolResult, TurnContextOutput]:
        """Read exact past turns (user text, answer, tool calls with arguments and results) from the archived raw log."""
        ws = resolve(workspace, roots)
        result = archive.load_turn_context(references, workspace=ws, before=before, after=after,
                                           include_tools=include_tools and detail != "compact",
                                           include_thinking=include_thinking, max_chars=max_chars)

        def render(turns: list[TurnDetail], cut: bool) -> str:
            parts = []
            for t in turns:
                mark = "" if t.requested else " (neighbour)"
                block = [f"## {t.session_id}:{t.turn}{'' if t.agent == 'main' else f' [{t.agent}]'}{mark} {t.started_at or ''} {t.status}",
                         f"User: {t.user_text}", f"Assistant: {t.assistant_text}"]
                block += [f"Tool {c.name} [{c.status}] {c.arguments}\n  → {c.result}" for c in t.tool_calls]
                if t.thinking:
                    block.append(f"Thinking: {t.thinking}")
                parts.append("\n".join(block))
            parts += [f"Not found: {n.session_id}:{n.turn} — {n.reason}" for n in result.not_found]
            if cut:
                parts.append("… more turns cut to fit; ask for fewer references or raise max_chars")
            return "\n\n".join(parts)

        kept, text, cut = _fit(result.turns, render, max_chars + 2000)
        return tool_result(TurnContextOutput(kept, result.not_found, cut), text, max_chars + 2000)

    @server.tool(annotations=READ)
    async def list_workspaces(detail: DetailParam = "normal", max_output_chars: Budget = 6000) -> Annotated[CallToolResult, WorkspacesOutput]:
        """The archived workspaces (id, name, paths); use one as the `workspace` argument of other tools."""
        infos = []
        for w in archive.workspaces():
            info = WorkspaceInfo(w.id, w.name, w.paths)
            if detail != "compact":
                st = archive.stats(w.id)
                info.sessions, info.turns = st.sessions, st.turns
            infos.append(info)

        def render(items: list[WorkspaceInfo], cut: bool) -> str:
            lines = [f"- {w.name} ({w.id}) {', '.join(w.paths) or 'path unknown'}"
                     + (f" — {w.sessions} sessions, {w.turns} turns" if w.sessions is not None else "") for w in items]
            return "\n".join(lines + (["… more cut"] if cut else [])) or "The archive is empty: run `archive-mcp ingest`."

        kept, text, _ = _fit(infos, render, max_output_chars)
        return tool_result(WorkspacesOutput(kept), text, max_output_chars)

    @server.tool(annotations=READ)
    async def list_sessions(
        workspace: WorkspaceParam = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 20,
        detail: DetailParam = "normal",
        max_output_chars: Budget = 6000,
        roots: Annotated[ListRootsResult | None, Resolve(_roots_request)] = None,
    ) -> Annotated[CallToolResult, SessionsOutput]:
        """Sessions of a workspace, newest first, with title, span and turn counts."""
        ws = resolve(workspace, roots)
        rows = archive.sessions(ws.id).head(limit).collect().to_dicts()
        infos = [SessionInfo(r["session_id"], r["source"], r["title"],
                             r["first_at"].isoformat() if r["first_at"] else None,
                             r["last_at"].isoformat() if r["last_at"] else None,
                             int(r["turns"]), int(r["subagent_turns"]), bool(r["live"])) for r in rows]

        def render(items: list[SessionInfo], cut: bool) -> str:
            lines = [f"- {s.session_id} {(s.first_at or '')[:16]} {s.turns} turns"
                     + ("" if detail == "compact" else f" — {s.title or ''}") for s in items]
            return "\n".join([f"{ws.name}: {len(items)} sessions", *lines] + (["… more cut"] if cut else []))

        kept, text, cut = _fit(infos, render, max_output_chars)
        return tool_result(SessionsOutput(ws.id, kept, cut), text, max_output_chars)

    @server.tool(annotations=UPDATE)
    async def refine_session_turns(
        session_id: Annotated[str, Field(description="The session to refine.")],
        workspace: WorkspaceParam = None,
        turns: Annotated[list[int] | None, Field(description="Only these turns (default: all).")] = None,
        use_sampling: Annotated[bool, Field(description="Ask the client's model for better summaries (opt-in).")] = False,
        max_sampled_turns: Annotated[int, Field(ge=1, le=20, description="Cap on turns sent to the client's model.")] = 5,
        detail: DetailParam = "normal",
        max_output_chars: Budget = 8000,
        roots: Annotated[ListRootsResult | None, Resolve(_roots_request)] = None,
        sampled: Annotated[CreateMessageResult | None, Resolve(sampling_request)] = None,
    ) -> Annotated[CallToolResult, RefineOutput]:
        """Refine a session's turns now from the raw log; optionally let the client's model write the summaries."""
        ws = resolve(workspace, roots)
        known = archive.raw_files(ws)
        if session_id not in known:
            raise ToolError(f"no session {session_id!r} in workspace {ws.name}; list them with list_sessions")
        report = archive.refine(ws.id, session=session_id, force=True)
        df = archive.turns(ws.id).filter(_session_is(session_id)).sort("agent", "turn").collect()
        if turns:
            bad = sorted(set(turns) - set(df["turn"].to_list()))
            if bad:
                valid = f"{df['turn'].min()}..{df['turn'].max()}" if df.height else "none"
                raise ToolError(f"turns {bad} are not in session {session_id}; valid turns: {valid}")
        rows = [r for r in df.iter_rows(named=True) if not turns or r["turn"] in turns]
        n_sampled, reason = 0, None
        if use_sampling:
            n_sampled, reason = _apply_sampled(archive, ws, session_id, rows[:max_sampled_turns], sampled)
            if len(rows) > max_sampled_turns:
                reason = (reason + "; " if reason else "") + f"only the first {max_sampled_turns} turns were sampled (max_sampled_turns)"
            df = archive.turns(ws.id).filter(_session_is(session_id)).sort("agent", "turn").collect()
            rows = [r for r in df.iter_rows(named=True) if not turns or r["turn"] in turns]
        summaries = [{"agent": r["agent"], "turn": r["turn"], "refiner": r["refiner"],
                      "summary": "" if detail == "compact" else r["summary"]} for r in rows]
        out = RefineOutput(ws.id, session_id, report.turns, n_sampled, reason, summaries)
        head = (f"refined {report.turns} turns of {session_id}; {n_sampled} summarised by the client's model"
                + (f" ({reason})" if reason else ""))
        kept, text, _ = _fit(summaries, lambda items, cut: "\n".join(
            [head] + [f"- {s['turn']}: {s['summary'] or s['refiner']}" for s in items] + (["… more cut"] if cut else [])),
            max_output_chars)
        out.summaries = kept
        return tool_result(out, text, max_output_chars)

    return server


def _session_is(session_id: str) -> Any:
    import polars as pl
    return pl.col("session_id") == session_id


def _shape_hit(h: Hit, detail: Detail) -> Hit:
    if detail == "compact":
        return Hit(h.workspace_id, h.session_id, h.agent, h.turn, h.started_at, h.score, "", "",
                   h.matched, h.status, [], h.raw_ref, None)
    return h


def _roots_request(workspace: str | None, ctx: Context) -> ListRoots | None:
    """Ask for the client's roots only when no workspace was given and the client has roots."""
    caps = ctx.client_capabilities
    if workspace or caps is None or caps.roots is None:
        return None
    return ListRoots()


def _root_paths(roots: ListRootsResult | None) -> list[str]:
    out = []
    for root in roots.roots if roots else []:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file":
            out.append(unquote(uri.path))
    return out


def sampling_prompt(rows: list[dict[str, Any]]) -> str:
    turns = [{"turn": r["turn"], "agent": r["agent"], "user": r["user_text"][:1500],
              "answer": r["assistant_text"][:1500], "tools": [c["name"] for c in r["tool_calls"]][:10],
              "files": r["files"][:10]} for r in rows]
    return ("Summarise each coding-agent turn below. Reply with a JSON array with one object per turn, in "
            'order, and nothing else: {"asked": the request as a short clause, "did": tools, files and '
            'commands, "outcome": one sentence stating the result, decision or finding (no filler such as '
            '"Great!" or "Let me…")}. Keep each object under 300 characters.\n\n'
            + json.dumps(turns, ensure_ascii=False))


def _apply_sampled(archive: Archive, ws: Workspace, session_id: str, rows: list[dict[str, Any]],
                   sampled: CreateMessageResult | None) -> tuple[int, str | None]:
    if sampled is None:
        return 0, "the client does not support sampling: kept the extractive summaries"
    text = getattr(sampled.content, "text", "") or ""
    try:
        summaries = json.loads(text[text.find("["): text.rfind("]") + 1])
    except ValueError:
        summaries = None
    if not isinstance(summaries, list) or len(summaries) != len(rows):
        return 0, "the client's model did not answer with one summary per turn: kept the extractive summaries"
    chosen = {(r["agent"], r["turn"]): text for r, s in zip(rows, summaries, strict=True)
              if (text := _sampled_summary(s))}
    return archive.set_summaries(ws, session_id, chosen, f"{REFINER}+sampling@1"), None


def _sampled_summary(item: Any) -> str:
    """The client's answer for one turn in the row's shape (`Asked: … Did: … Outcome: …`)."""
    if isinstance(item, dict):
        return compose(str(item.get("asked") or "").strip(), str(item.get("did") or "").strip(),
                       str(item.get("outcome") or "").strip())
    return str(item).strip()


def serve(archive: Archive | None = None, http: bool = False, port: int = 8765) -> None:
    server = build_server(archive)
    if http:
        server.run(transport="streamable-http", host="127.0.0.1", port=port)  # type: ignore[call-overload]
    else:
        server.run()


__all__ = ["MODES", "build_server", "serve"]
