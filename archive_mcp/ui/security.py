"""What keeps the web UI private: a token as Jupyter does it, Host and Origin checks, a CSRF token
on every state change, and headers that make a page inert to anything a log holds.

`Guard` is ASGI middleware around the Starlette app. In order, a request is refused when:
- its Host is not this machine's loopback name (421) or its Origin is a foreign site (403): the
  MCP SDK's own checks (`TransportSecurityMiddleware`, as `serve --http` applies them), which
  stop DNS rebinding;
- it carries neither the session cookie nor the token (`?token=` once, as the printed URL does;
  `Authorization: Bearer` for scripts) (403, a page saying where the token is) unless auth is
  off (`--no-auth`);
- it changes state (POST) without the CSRF token of this server in its form (403).
A URL carrying a right token sets the cookie (HttpOnly, SameSite=Strict) and redirects to the
same URL without it, so the token is not left in the history or a Referer.
Every answer carries a Content-Security-Policy allowing only this server's own scripts and styles
(no inline script, no eval, no plugin, no frame), `nosniff` and `no-referrer`."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]

COOKIE = "archive_mcp_ui"
CSRF_FIELD = "csrf"
NO_AUTH_WARNING = (
    "archive-mcp: warning: --no-auth: no token is required; any local user or process that "
    "reaches the port can read this archive in a browser"
)
# 'self' only: the vendored Vega and our app.js; styles from our CSS (Vega sets inline styles on
# its own elements: style attributes, not scripts); images from our origin or data: (Vega's PNG
# export is off; SVG icons of vega-embed are inline data).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'; object-src 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def loopback_checks() -> TransportSecurityMiddleware:
    """The Host and Origin rules the MCP SDK applies to a server bound to 127.0.0.1."""
    return TransportSecurityMiddleware(
        TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    )


class Guard:
    """ASGI middleware: Host/Origin, token or cookie, CSRF on POST, security headers."""

    def __init__(self, app: ASGI, token: str | None) -> None:
        self.app = app
        self.token = token
        self.checks = loopback_checks()
        # the cookie's value: derived from the token, so a restart with the same token keeps it
        self._cookie = _digest(token, "cookie") if token else ""
        self.csrf = _digest(token or secrets.token_urlsafe(32), "csrf")
        self.overview: Any = None  # the app's `views.Overview`, for the bench and tests

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        request = Request(scope)
        refused = await self.checks.validate_request(request, is_post=False)
        if refused is None:
            refused = self.refusal(request)
        if refused is not None:
            await refused(scope, receive, send_with_headers)
            return
        if request.method == "POST":
            body = await _body(receive)
            form = dict(parse_qsl(body.decode("utf-8", "replace")))
            if not hmac.compare_digest(form.get(CSRF_FIELD, "").encode(), self.csrf.encode()):
                await _refuse(403, "missing or wrong CSRF token: reload the page and try again")(
                    scope, receive, send_with_headers
                )
                return
            receive = _replay(body)
        scope.setdefault("state", {})["csrf"] = self.csrf
        await self.app(scope, receive, send_with_headers)

    def refusal(self, request: Request) -> Response | None:
        """The answer to a request without the token or cookie (None when it may go on)."""
        if self.token is None:
            return None
        given = request.query_params.get("token")
        if given is not None:
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return _refuse(403, "wrong token: open the URL `archive-mcp ui` printed")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(
                COOKIE, self._cookie, httponly=True, samesite="strict", path="/", secure=False
            )
            return redirect
        cookie = request.cookies.get(COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), self._cookie.encode()):
            return None
        scheme, _, bearer = Headers(scope=request.scope).get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            bearer.strip().encode(), self.token.encode()
        ):
            return None
        return _refuse(
            403,
            "this archive needs its token: open the URL `archive-mcp ui` printed (it carries "
            "?token=...), or run `archive-mcp ui` again to see it",
        )


def _digest(secret: str, purpose: str) -> str:
    return hmac.new(secret.encode(), purpose.encode(), hashlib.sha256).hexdigest()


def _refuse(status: int, why: str) -> Response:
    return PlainTextResponse(f"{status}: {why}\n", status_code=status)


MAX_FORM = 1 << 20  # a form of the UI is a few fields; more is refused, never buffered


async def _body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM:
            break
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)[:MAX_FORM]


def _replay(body: bytes) -> Callable[[], Awaitable[dict[str, Any]]]:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
