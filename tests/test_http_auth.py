"""`serve --http` requires a bearer token: the real server in a subprocess, on a free port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from archive_mcp import Archive
from archive_mcp.cli.main import main as cli

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
).encode()
MISSING = {
    "error": "invalid_token",
    "error_description": "missing header Authorization: Bearer <token> "
    "(see archive-mcp serve --help)",
}
WRONG = {"error": "invalid_token", "error_description": "wrong bearer token"}
NO_AUTH = (
    "archive-mcp: warning: --no-auth: no token is required; any local user or process that "
    "reaches the port can use this archive's tools\n"
)


@contextmanager
def http_server(*args: str, **env: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """`archive-mcp serve --http` on a free port, until the port answers; stopped on exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "archive_mcp", "serve", "--http", "--port", str(port), *args],
        env={**os.environ, "ARCHIVE_MCP_EMBEDDER": "none", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):  # a loaded machine takes a while to start the server
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(10)


def stderr_lines(proc: subprocess.Popen[str], n: int) -> str:
    """The first `n` lines the server wrote on stderr (written before it listens)."""
    assert proc.stderr is not None
    return "".join(proc.stderr.readline() for _ in range(n))


def post(port: int, headers: dict[str, str], body: bytes = INITIALIZE) -> tuple[int, Any]:
    """POST an MCP request (initialize); the status and, for an error, the JSON body."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, None
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return exc.code, json.loads(body) if exc.headers[
            "content-type"
        ] == "application/json" else body


def client(port: int, token: str) -> Client:
    headers = {"Authorization": f"Bearer {token}"}
    return Client(
        streamable_http_client(
            f"http://127.0.0.1:{port}/mcp", http_client=create_mcp_http_client(headers=headers)
        )
    )


def url_line(port: int) -> str:
    return f"archive-mcp: serving MCP over HTTP at http://127.0.0.1:{port}/mcp\n"


pytestmark = pytest.mark.anyio


async def test_the_first_start_makes_a_token_stores_it_privately_and_shows_it_once(
    archive: Archive,
) -> None:
    config = Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "config.toml"
    with http_server("--no-follow") as (port, proc):
        token = config.read_text().removeprefix('token = "').removesuffix('"\n')
        assert config.read_text() == f'token = "{token}"\n' and len(token) == 43
        assert config.stat().st_mode & 0o777 == 0o600
        assert stderr_lines(proc, 2) == url_line(port) + (
            "archive-mcp: made a bearer token for HTTP clients (shown only now; stored in "
            f"{config}): {token}\n"
        )
        assert post(port, {}) == (401, MISSING)
        assert post(port, {"Authorization": f"Bearer {token}x"}) == (401, WRONG)
        assert post(port, {"Authorization": f"Basic {token}"}) == (401, WRONG)
        assert post(port, {"Authorization": f"Bearer {token}"})[0] == 200
        assert post(port, {"Authorization": f"Bearer {token}", "Host": "evil.example"})[0] == 421
        for host in (f"127.0.0.1:{port}.evil.com", f"localhost:{port}@evil.com", "127.0.0.1:1"):
            assert post(port, {"Authorization": f"Bearer {token}", "Host": host}) == (
                421,
                {
                    "error": "misdirected_request",
                    "error_description": f"Host {host!r} is not this server; send Host: "
                    f"127.0.0.1:{port} (connect to http://127.0.0.1:{port}/mcp)",
                },
            )
        assert (
            post(port, {"Authorization": f"Bearer {token}", "Host": f"localhost:{port}"})[0] == 200
        )
        async with client(port, token) as c:
            tools = await c.list_tools()
            r = await c.call_tool(
                "search_context", {"query": "turbojpeg", "workspace": "ml-pipeline"}
            )
        assert "search_context" in {t.name for t in tools.tools}
        assert (
            r.structured_content["hits"][0]["session_id"] == "6d7e8f90-1a2b-4c3d-9e8f-7a6b5c4d3e2f"
        )
    config.chmod(0o644)
    with http_server("--no-follow") as (port, proc):
        assert stderr_lines(proc, 2) == url_line(port) + (
            f"archive-mcp: HTTP clients must send the bearer token stored in {config}\n"
        )
        assert post(port, {"Authorization": f"Bearer {token}"})[0] == 200
    assert config.read_text() == f'token = "{token}"\n'
    assert config.stat().st_mode & 0o777 == 0o600


async def test_the_token_env_var_is_honoured_and_not_stored() -> None:
    token = "env-token-1234"
    with http_server("--no-follow", ARCHIVE_MCP_TOKEN=token) as (port, proc):
        assert stderr_lines(proc, 2) == url_line(port) + (
            "archive-mcp: HTTP clients must send the bearer token given by $ARCHIVE_MCP_TOKEN\n"
        )
        assert post(port, {"Authorization": "Bearer env-token-123"}) == (401, WRONG)
        async with client(port, token) as c:
            assert len((await c.list_tools()).tools) == 24
    assert not (Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "config.toml").exists()


def test_no_auth_warns_and_serves_without_a_token() -> None:
    with http_server("--no-follow", "--no-auth") as (port, proc):
        assert stderr_lines(proc, 2) == url_line(port) + NO_AUTH
        assert post(port, {})[0] == 200


def test_token_flags_are_checked_before_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(
        "archive_mcp.mcp.server.serve", lambda archive, http, port, **kw: seen.update(kw)
    )
    out = CliRunner().invoke(cli, ["serve", "--http", "--port", "8799", "--token", "t0k"])
    assert out.exit_code == 0
    assert seen == {"follow": True, "token": "t0k", "paths": (), "exclude": None}
    assert out.stderr == url_line(8799) + (
        "archive-mcp: HTTP clients must send the bearer token given by --token\n"
    )
    out = CliRunner().invoke(cli, ["serve", "--http", "--token", "a b"])
    assert (out.exit_code, out.stderr.splitlines()[-1]) == (
        1,
        "Error: --token: a token is printable ASCII without spaces",
    )
    out = CliRunner().invoke(cli, ["serve", "--http", "--token", "t0k", "--no-auth"])
    assert out.exit_code == 2
    assert out.stderr.splitlines()[-1] == "Error: --token and --no-auth cannot go together"
    out = CliRunner().invoke(cli, ["serve", "--http", "--no-auth"])
    assert out.exit_code == 0 and seen["token"] is None and out.stderr == url_line(8765) + NO_AUTH
    monkeypatch.setenv("ARCHIVE_MCP_TOKEN", "from-env")
    out = CliRunner().invoke(cli, ["serve"])  # stdio: no token is made nor needed
    assert out.exit_code == 0 and seen["token"] is None and out.stderr == ""
    assert not (Path(os.environ["ARCHIVE_MCP_CONFIG_DIR"]) / "config.toml").exists()


def test_config_show_and_set_hide_the_token() -> None:
    out = CliRunner().invoke(cli, ["config", "set", "token", "s3cret"])
    assert out.exit_code == 0 and out.stderr.endswith("config.toml: token = (hidden)\n")
    out = CliRunner().invoke(cli, ["config", "show"])
    assert "s3cret" not in out.output
    assert "token = (hidden)  [file; $ARCHIVE_MCP_TOKEN, serve --token]\n" in out.output
    out = CliRunner().invoke(cli, ["doctor"])
    assert "s3cret" not in out.output and "setting token: (hidden) (from config file)" in out.output


@pytest.mark.parametrize(("opens", "closes"), [(b"[", b"]"), (b'{"a":', b"}")])
async def test_a_request_nested_100k_deep_gets_a_parse_error_at_once_and_the_server_serves_on(
    opens: bytes, closes: bytes
) -> None:
    token = "env-token-1234"
    deep = (
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "stats", '
        b'"arguments": {"x": ' + opens * 100_000 + closes * 100_000 + b"}}}"
    )
    with http_server("--no-follow", ARCHIVE_MCP_TOKEN=token) as (port, proc):
        async with client(port, token) as c:  # a session is open while the request arrives
            start = time.monotonic()
            status, body = post(port, {"Authorization": f"Bearer {token}"}, deep)
            took = time.monotonic() - start
            assert (status, body["jsonrpc"], body["id"], body["error"]["code"]) == (
                400,
                "2.0",
                None,
                -32700,
            )
            assert body["error"]["message"].startswith("Parse error: recursion limit exceeded")
            assert took < 5
            assert len((await c.list_tools()).tools) == 24  # the server and the session live on
        assert post(port, {"Authorization": f"Bearer {token}"})[0] == 200
        assert proc.poll() is None
