"""What `archive-mcp serve --http` requires of a request: this machine in its Host, whole, and the
bearer token.

`LocalHost` answers a Host that is not 127.0.0.1, localhost or [::1] with the server's port,
whole, with 421 (the SDK's own check, kept behind it, matches a prefix: it let
`127.0.0.1:PORT.evil.com` through). `BearerAuth` wraps the SDK's streamable-HTTP app (which also
answers a foreign Origin with 403): a request without `Authorization: Bearer <token>` gets 401 and
a JSON error body; the token is compared in constant time. `http_token` picks the token: the
one given (`--token`, `$ARCHIVE_MCP_TOKEN`), else the config file's, else a new one, stored
there (the file is kept private, 0600) and shown once.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
from typing import Any

from archive_mcp.errors import InvalidArgument
from archive_mcp.settings import config_path, read_config, set_value

TOKEN = re.compile(r"[\x21-\x7e]+")  # printable ASCII, no spaces: it must fit in a header
NO_AUTH_WARNING = (
    "archive-mcp: warning: --no-auth: no token is required; any local user or process that "
    "reaches the port can use this archive's tools"
)


LOCAL_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\]):(\d{1,5})")


async def _refuse(
    send: Any, status: int, body: dict[str, str], *extra: tuple[bytes, bytes]
) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


class LocalHost:
    """ASGI middleware: the one Host header must name this machine and `port`, whole."""

    def __init__(self, app: Any, port: int) -> None:
        self.app = app
        self.port = port

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        hosts = [v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"]
        match = LOCAL_HOST.fullmatch(hosts[0]) if len(hosts) == 1 else None
        if match is not None and int(match.group(1)) == self.port:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            got = ", ".join(repr(h[:100]) for h in hosts) or "none"
            await _refuse(
                send,
                421,
                {
                    "error": "misdirected_request",
                    "error_description": f"Host {got} is not this server; send Host: "
                    f"127.0.0.1:{self.port} (connect to http://127.0.0.1:{self.port}/mcp)",
                },
            )
        else:  # a websocket: refused before it is accepted
            await send({"type": "websocket.close", "code": 1008})


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._token = token.encode("ascii")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        problem = self.problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await _refuse(
                send,
                401,
                {"error": "invalid_token", "error_description": problem},
                (b"www-authenticate", b'Bearer realm="archive-mcp"'),
            )
        else:  # a websocket: refused before it is accepted
            await send({"type": "websocket.close", "code": 1008})

    def problem(self, scope: dict[str, Any]) -> str | None:
        """Why the request is refused, or None when it carries the token."""
        values = [v for k, v in scope.get("headers", []) if k == b"authorization"]
        if not values:
            return "missing header Authorization: Bearer <token> (see archive-mcp serve --help)"
        scheme, _, given = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self._token):
            return "wrong bearer token"
        return None


def check_token(token: str, where: str) -> str:
    if not TOKEN.fullmatch(token):
        raise InvalidArgument(f"{where}: a token is printable ASCII without spaces")
    return token


def http_token(given: str | None, where: str) -> tuple[str, str]:
    """The token HTTP clients must send and the one stderr line about it (never the token,
    except when it was just made). `where` names what gave `given` (`--token`, ...)."""
    if given is not None:
        return check_token(
            given, where
        ), f"archive-mcp: HTTP clients must send the bearer token given by {where}"
    path = config_path()
    stored = read_config().get("token")
    if stored:
        check_token(stored, str(path))
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
        return stored, f"archive-mcp: HTTP clients must send the bearer token stored in {path}"
    token = secrets.token_urlsafe(32)
    set_value("token", token)
    return token, (
        f"archive-mcp: made a bearer token for HTTP clients (shown only now; stored in {path}): "
        f"{token}"
    )
