"""The stdio transport: the SDK's, plus a JSON-RPC error reply to a line that is not a message.

The SDK drops such a line without a word (a request nested 100k deep, which its JSON parser
refuses, left the client waiting for its timeout). Here the client gets a JSON-RPC error under
the request's id when the line names one at its top level (else id null, as JSON-RPC says):
-32700 for text that does not parse, -32600 for JSON that is not a JSON-RPC message."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

_MARK = re.compile(r'[{}\[\]"]')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_ID_VALUE = re.compile(r'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d{1,18})(?=\s*[,}])', re.S)


async def run_stdio(lowlevel: Any) -> None:
    """A low-level MCP server (`MCPServer._lowlevel_server`) over this process's stdin/stdout."""
    async with stdio_server() as (read_stream, write_stream):
        send, receive = create_context_streams[SessionMessage | Exception](0)

        async def relay() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(SessionMessage(refusal(item)))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def refusal(exc: Exception) -> JSONRPCError:
    """The error reply to a line the transport could not read as a message."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    first: dict[str, Any] = dict(errors[0]) if errors else {}
    line = first.get("input") if first.get("type") == "json_invalid" else None
    if isinstance(line, str):
        reason = str(first.get("msg") or "invalid JSON").removeprefix("Invalid JSON: ")
        return JSONRPCError(
            jsonrpc="2.0",
            id=request_id(line),
            error=ErrorData(code=PARSE_ERROR, message=f"Parse error: {reason}"),
        )
    return JSONRPCError(
        jsonrpc="2.0",
        id=None,
        error=ErrorData(
            code=INVALID_REQUEST,
            message="Invalid request: not a JSON-RPC 2.0 request, notification or response",
        ),
    )


def request_id(line: str) -> str | int | None:
    """The `id` of the object `line` holds, read at its top level without parsing the rest
    (which may be nested too deep to parse); None when there is none."""
    depth, i = 0, 0
    while (m := _MARK.search(line, i)) is not None:
        c, i = m.group(), m.start()
        if c == '"':
            s = _STRING.match(line, i)
            if s is None:
                return None
            if depth == 1 and s.group() == '"id"':
                v = _ID_VALUE.match(line, s.end())
                if v is not None:
                    value = json.loads(v.group(1))
                    return value if isinstance(value, str | int) else None
            i = s.end()
            continue
        depth += 1 if c in "{[" else -1
        i += 1
    return None
