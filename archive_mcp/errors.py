"""The one error family of archive-mcp.

Every mistake a user or an agent can fix (an unknown workspace, a bad argument, a lock held by
another process) is an `ArchiveError` carrying a message that says what to do next. The faces map
it once: the MCP face turns it into a tool error, the CLI into a message on stderr and exit code 1.
Anything else is a bug and is reported as one. This module imports nothing from the project, so
every layer (`workspaces`, `refiners`, the core, the faces) may raise these.
"""

from __future__ import annotations


class ArchiveError(Exception):
    """A problem the caller can fix; `str(exc)` says what happened and what to do next."""


class NotFound(ArchiveError):
    """An unknown workspace, session, turn, theme or memory."""


class InvalidArgument(ArchiveError):
    """An argument with the wrong type, range or shape."""


class Busy(ArchiveError):
    """A workspace lock is held by another process for longer than the caller may wait."""


class MissingDependency(ArchiveError):
    """An optional package is not installed; the message names the exact command that installs it."""
