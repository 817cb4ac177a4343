"""The MCP server (`archive-mcp serve`): plain tool functions over `Archive`, stdio or HTTP on 127.0.0.1.

The tools are module-level functions listed in tables (`core_tools`, `memory_tools`,
`theme_tools`) and registered here. Long-lived state (one `Archive`, the fallback cwd) comes
from the server's lifespan. Every tool is a plain `def`, so the SDK runs it on a worker thread
and the event loop keeps answering other clients; CPU-bound work (theme discovery, large index
builds) runs in a process of its own (`offload`), where it cannot hold the GIL against the loop. Errors are mapped once, in `ArchiveServer`:
an `ArchiveError` becomes a tool error with the library's message (which says what to do
next), an argument that fails validation becomes a tool error naming the argument and what it
accepts, an OSError one line naming the cause and the fix; anything else is a bug, logged with
its traceback and reported to the client with its type and message (never a bare "Error
executing tool").
Nothing heavy is imported before the first call that needs it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from archive_mcp.archive import Archive
from archive_mcp.errors import ArchiveError, as_os_error, os_message
from archive_mcp.live import Follower
from archive_mcp.mcp.schemas import lean_input
from archive_mcp.mcp.toolkit import Spec, State
from archive_mcp.refiners.text import clip
from archive_mcp.refs import Citing

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Past coding-agent sessions and the memory of this workspace. To find what happened: "
    "search_context (compact detail is cheapest), then load_turn_context for the exact turns; "
    "for a detail in a tool's input or output (a command, a commit, a file's content), "
    "grep_turns. To "
    "check what was decided or learned: search_memory, recall. To follow one topic over time: "
    "list_themes, tag_theme, trace_theme. A new session starts with bootstrap_workspace. "
    "Turns are cited as SESSION:TURN (a unique session-id prefix will do); every tool that takes "
    "turns accepts that, or {session_id, turn}. `workspace` takes a path, id, unique id prefix or "
    "name (list_workspaces) and defaults to your roots, then the server's cwd. `max_output_chars` "
    "bounds the text and the structured content; a reply cut to fit says how many items are left."
)


class ArchiveServer(MCPServer[State]):
    """An MCPServer whose tool and resource errors are mapped once, here."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[State, Any] | None = None
    ) -> Any:
        try:
            out = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ArchiveError):
                raise ToolError(str(cause)) from cause
            if isinstance(cause, ValidationError):
                raise ToolError(
                    explain(name, cause, self._tool_input_schema(name) or {})
                ) from cause
            disk = as_os_error(cause) if cause is not None else None
            if disk is not None:  # disk full, read-only, failing, permissions: one line
                raise ToolError(f"{name}: {os_message(disk)}") from cause
            if isinstance(exc, UnexpectedToolError) and cause is not None:
                # A fault of ours: the client still learns what happened (the log has the
                # traceback), never a bare "Error executing tool".
                log.error("tool %s failed", name, exc_info=cause)
                raise ToolError(crash_message(name, cause)) from cause
            raise
        if isinstance(out, CallToolResult) and context is not None:  # off the event loop
            return await anyio.to_thread.run_sync(_cited, out, context)
        return out

    async def run_stdio_async(self) -> None:
        """Over stdio, a line that is not a message gets a JSON-RPC error reply (`stdio.py`)."""
        from archive_mcp.mcp.stdio import run_stdio

        await run_stdio(self._lowlevel_server)

    async def list_tools(self) -> list[MCPTool]:
        """The tools with lean schemas (`schemas.py`): every tool, a fraction of the characters."""
        return [
            t.model_copy(update={"input_schema": lean_input(t.input_schema), "output_schema": None})
            for t in await super().list_tools()
        ]

    async def read_resource(self, uri: Any, context: Context[State, Any] | None = None) -> Any:
        try:
            return await super().read_resource(uri, context)
        except ResourceError as exc:
            if isinstance(exc.__cause__, ArchiveError):
                raise ResourceError(str(exc.__cause__)) from exc.__cause__
            raise


def _cited(out: CallToolResult, context: Context[State, Any]) -> CallToolResult:
    """A tool's text naming every session by its short id, as search and load do (the themes'
    and memories' texts are written with whole ids); the structured content keeps whole ids."""
    st = context.request_context.lifespan_context
    try:
        cite = Citing(st.sessions.short_ids(st.archive))
    except (OSError, ValueError, KeyError, TypeError) as exc:  # an ingest state not readable now
        # the call is done: its answer stands with whole ids rather than fail after the fact
        log.warning("session ids left whole: %s", clip(f"{type(exc).__name__}: {exc}", 300))
        return out
    content = [
        c.model_copy(update={"text": cite.in_text(c.text)}) if isinstance(c, TextContent) else c
        for c in out.content
    ]
    return out.model_copy(update={"content": content})


def crash_message(tool: str, cause: BaseException) -> str:
    """What a tool that failed unexpectedly tells its client: the error and what to do."""
    what = clip(f"{type(cause).__name__}: {cause}", 300)
    return (
        f"{tool} failed: {what}. This is a fault in archive-mcp, not a mistake of yours as far "
        "as it can tell: try other arguments, and report it if it persists (the server log holds "
        "the traceback)."
    )


def explain(tool: str, exc: ValidationError, schema: dict[str, Any]) -> str:
    """A validation error as a tool error: which argument, what it accepts, what to do."""
    props = schema.get("properties", {})
    lines = []
    for err in exc.errors(include_url=False)[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        about = props.get(str(err["loc"][0]), {}).get("description", "") if err["loc"] else ""
        got = "" if err["type"] == "missing" else f" (got {_brief(err.get('input'))})"
        what = "is required" if err["type"] == "missing" else err["msg"][0].lower() + err["msg"][1:]
        lines.append(
            f"argument `{loc}` {what}{got}." + (f" `{err['loc'][0]}`: {about}" if about else "")
        )
    return f"{tool}: " + " ".join(lines) + f" Fix the argument and call {tool} again."


def _brief(value: Any) -> str:
    text = repr(value)
    return (
        text
        if len(text) <= 60
        else f"{type(value).__name__} of {len(value) if hasattr(value, '__len__') else '?'} items"
    )


WARM_JOIN_S = 30.0  # at most this long at shutdown for a warm-up still loading a model


def lifespan_for(
    archive: Archive | None,
    cwd: str | None,
    follow: bool = False,
    paths: Sequence[str] = (),
    exclude: Sequence[str] | None = None,
) -> Callable[[MCPServer[State]], AbstractAsyncContextManager[State]]:
    """The server's lifespan: one Archive (made here unless given), warmed off the request path,
    kept current by a follower thread when `follow` (see `archive_mcp.live`): it follows `paths`
    (default: the `follow` setting, else every agent's home) and skips `exclude` (default: the
    `exclude` setting)."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[State]) -> AsyncIterator[State]:
        st = State(archive or Archive(), cwd or os.getcwd())
        warming = threading.Thread(target=warm, args=(st,), name="archive-mcp-warm", daemon=True)
        warming.start()
        if follow:
            st.follower = Follower(st.archive, paths, exclude=exclude).start()
        try:
            yield st
        finally:  # the warm-up never outlives the server: a daemon thread still inside Polars or
            # torch while the interpreter shuts down (or the archive's folder is removed) can crash it
            if st.follower is not None:  # a round in progress finishes and saves its state
                await anyio.to_thread.run_sync(st.follower.stop, WARM_JOIN_S)
            await anyio.to_thread.run_sync(warming.join, WARM_JOIN_S)
            st.offload.close()

    return lifespan


def warm(st: State) -> None:
    """Load the embedding model and the cwd workspace's index before the first search needs them."""
    try:
        st.archive.embedder  # noqa: B018
        ws = st.archive.workspace(cwd=st.cwd)
        st.offload.fresh_indexes(st.archive, [ws])  # a large build runs in the pool
        st.archive.search("warm up", workspace=ws.id, limit=1)
    except Exception:  # noqa: BLE001 - warming is best effort; real calls report their errors
        pass


def server_version() -> str:
    """The installed distribution's version, else the package's own."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-archive-mcp")
    except PackageNotFoundError:
        from archive_mcp import __version__

        return __version__


def build_server(
    archive: Archive | None = None,
    cwd: str | None = None,
    follow: bool = False,
    paths: Sequence[str] = (),
    exclude: Sequence[str] | None = None,
) -> ArchiveServer:
    """An MCP server over `archive` (default: the archive of $ARCHIVE_MCP_HOME); with `follow`,
    it ingests `paths` (default: the followed homes) in the background (at start and on every
    change), skipping sessions under an `exclude` path."""
    from archive_mcp.mcp import core_tools, grep_tool, memory_tools, resources, theme_tools

    server = ArchiveServer(
        "archive-mcp",
        version=server_version(),
        log_level="WARNING",
        instructions=INSTRUCTIONS,
        lifespan=lifespan_for(archive, cwd, follow, paths, exclude),
    )
    table: list[Spec] = [
        *core_tools.TOOLS,
        *grep_tool.TOOLS,
        *memory_tools.TOOLS,
        *theme_tools.TOOLS,
    ]
    for spec in table:
        server.add_tool(
            spec.fn,
            title=spec.title,
            annotations=spec.annotations,
            description=" ".join((spec.fn.__doc__ or "").split()),
        )  # one paragraph, no indents
    resources.register(server)
    return server


def serve(
    archive: Archive | None = None,
    http: bool = False,
    port: int = 8765,
    follow: bool = True,
    token: str | None = None,
    paths: Sequence[str] = (),
    exclude: Sequence[str] | None = None,
) -> None:
    """Serve over stdio, or streamable HTTP on 127.0.0.1 (requiring `token` unless it is None);
    `follow`, `paths` and `exclude` as `build_server`."""
    server = build_server(archive, follow=follow, paths=paths, exclude=exclude)
    if not http:
        server.run()
        return
    import uvicorn

    from archive_mcp.mcp.http_auth import BearerAuth, LocalHost

    app: Any = server.streamable_http_app(host="127.0.0.1")  # Host 421, Origin 403
    if token is not None:
        app = BearerAuth(app, token)
    app = LocalHost(app, port)  # the whole Host, first: the SDK's check matches a prefix
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)


__all__ = ["ArchiveServer", "CallToolResult", "build_server", "serve"]
