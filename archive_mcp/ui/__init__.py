"""The web UI for people (`archive-mcp ui`): browse, search, read and trace the archive in a
browser. A face like the CLI and the MCP server: every page calls `Archive` (see `app.py`)."""

from __future__ import annotations

from archive_mcp.ui.server import UIServer, serve_ui

__all__ = ["UIServer", "serve_ui"]
