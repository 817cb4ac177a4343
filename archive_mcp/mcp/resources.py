"""MCP resources (essence, memories, theme timelines) and prompts. A resource reads the workspace
of the client's roots, like the tools do, else the server's cwd."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ListRootsResult

from archive_mcp.mcp.toolkit import State, state, workspace_of
from archive_mcp.render import entry_text
from archive_mcp.workspaces import Workspace


async def _workspace(ctx: Context) -> Workspace:
    """The client's roots decide, as for a tool called without `workspace`."""
    caps = ctx.client_capabilities
    roots: ListRootsResult | None = None
    if caps is not None and caps.roots is not None:
        roots = await ctx.session.list_roots()
    return await anyio.to_thread.run_sync(workspace_of, ctx, None, roots)


async def essence_resource(name: str, ctx: Context) -> str:
    """`essence://essence`: the roots' workspace; `essence://<workspace>`: that workspace's essence."""
    if name == "essence":
        ws = await _workspace(ctx)
    else:
        ws = await anyio.to_thread.run_sync(state(ctx).archive.workspace, name)
    path = ws.root / "essence" / "essence.md"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


async def memory_resource(folder: str, key: str, ctx: Context) -> str:
    ws = await _workspace(ctx)
    entry = await anyio.to_thread.run_sync(lambda: state(ctx).archive.memory(ws).recall(key, folder))
    return entry_text(entry)


async def theme_resource(name: str, ctx: Context) -> str:
    ws = await _workspace(ctx)
    timeline = await anyio.to_thread.run_sync(lambda: state(ctx).archive.trace_theme(name, ws))
    return timeline.markdown()


def memory_decision_check(decision: str) -> str:
    return (f"You are about to decide: {decision}\n\n"
            "1. search_memory with the key terms of this decision (decisions and rules first).\n"
            "2. search_context for past turns about it; load_turn_context for the best two or three.\n"
            "3. If an earlier decision or rule covers it, follow it and cite it "
            "(memory/<folder>/<key> or session:turn). If your decision contradicts it, say so "
            "explicitly and ask the user before proceeding.\n"
            "4. If nothing covers it, decide, then remember(folder='decisions') with the reasons and "
            "the turns as sources.")


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


def register(server: MCPServer[State]) -> None:
    server.resource("essence://{name}", mime_type="text/markdown",
                    description="The workspace's essence.md (essence://essence: the workspace of your roots)")(essence_resource)
    server.resource("memory://{folder}/{key}", mime_type="text/markdown", description="One memory file")(memory_resource)
    server.resource("theme://{name}", mime_type="text/markdown", description="A theme's timeline as Markdown")(theme_resource)
    server.prompt("memory-decision-check", description="Before a decision: search memory and past turns, cite or ask.")(
        memory_decision_check)
    server.prompt("memory-theme-trace", description="Cold start: scope, seeds, candidates, confirm, tag, trace.")(
        memory_theme_trace)
