"""What every MCP tool module shares: annotations, common parameters, the result shape."""

from collections.abc import Callable
from typing import Annotated, Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from archive_mcp.render import to_jsonable

READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
UPDATE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
DELETE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False)

WorkspaceParam = Annotated[str | None, Field(description="Workspace: a path, id, unique id prefix or name. "
                                                        "Default: the client's roots, then the server's cwd.")]
Budget = Annotated[int, Field(ge=500, le=200_000, description="Upper bound on the text rendering, in characters.")]


def tool_result(structured: Any, text: str, budget: int = 20_000) -> CallToolResult:
    """Structured content plus a text rendering cut to `budget` characters."""
    if len(text) > budget:
        text = text[: budget - 60] + "\n[… cut to fit max_output_chars]"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=to_jsonable(structured))


def guard(fn: Callable[[], Any]) -> Any:
    """Run `fn`; a mistake the caller can fix becomes a tool error with the library's message."""
    from mcp.server.mcpserver.exceptions import ToolError

    from archive_mcp.archive import USER_ERRORS

    try:
        return fn()
    except (*USER_ERRORS, ValueError) as exc:
        raise ToolError(str(exc)) from exc
