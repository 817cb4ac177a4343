"""Running the web UI: uvicorn on 127.0.0.1 with the app, and the follower beside it.

`UIServer` is what `archive-mcp ui` runs and what the tests and the bench start on a thread:
it binds first (so port 0 gives a free port and the URL is known before the first request),
then serves until `stop()`."""

from __future__ import annotations

import secrets
import socket
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from archive_mcp.archive import Archive
from archive_mcp.live import Follower

HOST = "127.0.0.1"
DEFAULT_PORT = 8766  # beside `serve --http`'s 8765


class UIServer:
    """The UI over `archive` on 127.0.0.1:`port` (0: a free one), requiring `token` (None: no
    auth), following `paths` when `follow` (as `serve` does)."""

    def __init__(
        self,
        archive: Archive,
        port: int = DEFAULT_PORT,
        token: str | None = "",
        follow: bool = False,
        paths: Sequence[str] = (),
        exclude: Sequence[str] | None = None,
    ) -> None:
        import uvicorn

        from archive_mcp.ui.app import build_app

        self.archive = archive
        self.token = secrets.token_urlsafe(24) if token == "" else token
        self.follower = Follower(archive, paths, exclude=exclude) if follow else None
        self.app = build_app(archive, self.token, self.follower)
        self.overview = self.app.overview
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, port))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        """The URL to open first: it carries the token once (the cookie does after)."""
        return self.base + path + (f"?{urlencode({'token': self.token})}" if self.token else "")

    def run(self) -> None:
        """Serve in this thread until stopped (SIGINT / SIGTERM: uvicorn's own handlers)."""
        if self.follower is not None:
            self.follower.start()
        try:
            self.server.run(sockets=[self.sock])
        finally:
            if self.follower is not None:
                self.follower.stop(30.0)

    def start(self) -> UIServer:
        """Serve on a daemon thread; returns once it accepts connections."""
        self.server.config.install_signal_handlers = False  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self.run, name="archive-mcp-ui", daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            threading.Event().wait(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)


def serve_ui(archive: Archive, **options: Any) -> UIServer:
    """A `UIServer` (see its arguments), not yet running."""
    return UIServer(archive, **options)
