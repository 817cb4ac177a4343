"""Reader for Kilo Code's CLI (`~/.local/share/kilo/kilo.db`), an OpenCode fork, into `Turn`s.

Kilo 7.7.7 (docs/formats.md) keeps OpenCode's `session`, `message` and `part` tables in its own
SQLite database, `kilo.db` in WAL mode (its `session` table has more columns, read by name), with
the same JSON in `data`. The OpenCode reader reads it: read-only in one short transaction, each
session exported to a JSONL and archived whole, subagents' child sessions with their parent.
"""

from __future__ import annotations

from pathlib import Path

from . import opencode
from .lines import LogReader, from_start
from .sources import Discovery, register

SOURCE = "kilo"
DB = "kilo.db"


def discover(path: Path) -> Discovery | None:
    """Kilo's sessions in `path` (its data folder or `kilo.db`), or None."""
    return opencode.discover_db(path, DB, SOURCE, "Kilo Code")


READER = register(
    LogReader(
        SOURCE, "Kilo Code", from_start(opencode.OpenCodeTurnBuilder), discover, 36, whole=True
    )
)
parse_wire = READER.parse
