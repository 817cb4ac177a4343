"""MCP resources (essence, memories, theme timelines) and prompts. A resource reads the workspace
of the client's roots, like the tools do, else the server's cwd."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Resolve, build_resolver_plans, resolve_arguments
from mcp_types import InputRequiredResult

from archive_mcp.mcp.toolkit import State, roots_request, state, workspace_of
from archive_mcp.render import entry_text
from archive_mcp.workspaces import Workspace

# The tools' roots resolver, asked the same way for a resource (a round trip when the client has roots).
_ROOTS = {"roots": (Resolve(roots_request), False)}
_PLANS = build_resolver_plans(_ROOTS, {"workspace"})


async def _workspace(ctx: Context) -> Workspace | InputRequiredResult:
    """The client's roots decide, as for a tool called without `workspace`."""
    got = await resolve_arguments(_ROOTS, _PLANS, {"workspace": None}, ctx)
    if isinstance(got, InputRequiredResult):
        return got
    return await anyio.to_thread.run_sync(workspace_of, ctx, None, got["roots"])


async def essence_resource(name: str, ctx: Context) -> str | InputRequiredResult:
    """`essence://essence`: the roots' workspace; `essence://<workspace>`: that workspace's essence."""
    ws = (
        await _workspace(ctx)
        if name == "essence"
        else await anyio.to_thread.run_sync(state(ctx).archive.workspace, name)
    )
    if isinstance(ws, InputRequiredResult):
        return ws
    path = ws.root / "essence" / "essence.md"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


async def memory_resource(folder: str, key: str, ctx: Context) -> str | InputRequiredResult:
    ws = await _workspace(ctx)
    if isinstance(ws, InputRequiredResult):
        return ws
    return entry_text(await _off_loop(lambda: state(ctx).archive.memory(ws).recall(key, folder)))


async def theme_resource(name: str, ctx: Context) -> str | InputRequiredResult:
    ws = await _workspace(ctx)
    if isinstance(ws, InputRequiredResult):
        return ws
    return str((await _off_loop(lambda: state(ctx).archive.trace_theme(name, ws))).markdown())


async def _off_loop(fn: Any) -> Any:
    return await anyio.to_thread.run_sync(fn)


def memory_decision_check(decision: str) -> str:
    return (
        f"You are about to decide: {decision}\n\n"
        "1. search_memory with the key terms of this decision (decisions and rules first).\n"
        "2. search_context for past turns about it; load_turn_context for the best two or three.\n"
        "3. If an earlier decision or rule covers it, follow it and cite it "
        "(memory/<folder>/<key> or session:turn). If your decision contradicts it, say so "
        "explicitly and ask the user before proceeding.\n"
        "4. If nothing covers it, decide, then remember(folder='decisions') with the reasons and "
        "the turns as sources."
    )


def memory_theme_trace(topic: str) -> str:
    return (
        f"Trace how '{topic}' evolved before you change anything about it.\n"
        "1. Scope: list_workspaces / list_themes — is there already a theme for it?\n"
        f"2. Seeds: pick 1-3 seeds (identifiers, file names, a question) for '{topic}'.\n"
        "3. Candidates: tag_theme(theme, seeds=[...]) attaches strong hits and returns near misses.\n"
        "4. Confirm: load_turn_context on near misses; tag_theme(references=[...]) the relevant ones, "
        "remove=[...] the wrong ones.\n"
        "5. Refine: refine_session_turns for sessions whose summaries are poor.\n"
        "6. Trace: trace_theme(theme) — read Now (the latest substantive turns) and the decision "
        "candidates; load_turn_context the turns to judge which course changed and why; cite "
        "them (session:turn) when you act, and remember(folder='decisions') what you decide."
    )


def register(server: MCPServer[State]) -> None:
    server.resource(
        "essence://{name}",
        mime_type="text/markdown",
        description="The workspace's essence.md (essence://essence: the workspace of your roots)",
    )(essence_resource)
    server.resource(
        "memory://{folder}/{key}", mime_type="text/markdown", description="One memory file"
    )(memory_resource)
    server.resource(
        "theme://{name}", mime_type="text/markdown", description="A theme's timeline as Markdown"
    )(theme_resource)
    server.prompt(
        "memory-decision-check",
        description="Before a decision: search memory and past turns, cite or ask.",
    )(memory_decision_check)
    server.prompt(
        "memory-theme-trace",
        description="Cold start: scope, seeds, candidates, confirm, tag, trace.",
    )(memory_theme_trace)
