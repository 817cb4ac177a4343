"""Turns read back from the archived raw logs: a refined row's turn parsed again from its log by
the reader of its source, and kept a while (a read that retries for its budget, widens its
scans or is asked again parses each turn once)."""

from __future__ import annotations

from pathlib import Path
from threading import Lock
from typing import Any

from cachetools import LRUCache

from archive_mcp.refiners import PARSERS, Turn
from archive_mcp.workspaces import Workspace, read_json


def _chars(turn: Turn | None) -> int:
    """About the memory a parsed turn holds: its texts and its calls' inputs and outputs."""
    if turn is None:
        return 1
    calls = sum(len(c.arguments) + len(c.output_text) for c in turn.tool_calls)
    return 1 + len(turn.user_text) + len(turn.assistant_text) + len(turn.thinking) + calls


# turns parsed lately, by their file's identity and the parse's arguments, up to PARSED_CHARS of
# their texts: a read that retries for its budget or widens its scans, or reads a turn again,
# parses it once (a file changed is a new key)
PARSED_CHARS = 32_000_000
_PARSED: LRUCache[tuple[Any, ...], Turn | None] = LRUCache(PARSED_CHARS, getsizeof=_chars)
_PARSED_LOCK = Lock()


def parse_turn(ws: Workspace, row: dict[str, Any]) -> Turn | None:
    """The turn of the refined `row` as its archived log holds it (None when the log is gone or
    holds no such turn), parsed once while the log is unchanged."""
    ref = row["raw_ref"]
    path = ws.root / ref["file"]
    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_mtime_ns, st.st_size, *(ref[k] for k in ("byte_start", "byte_end")))
    key += (row["turn"], row["agent"], row["source"])
    with _PARSED_LOCK:
        if key in _PARSED:
            return _PARSED[key]
    turn = _parse(ws, row, path)
    if _chars(turn) <= PARSED_CHARS // 8:  # one huge turn does not empty the cache
        with _PARSED_LOCK:
            _PARSED[key] = turn
    return turn


# a workspace's ingest state by its file's identity: a read of many turns parses it once, not
# once a turn (it holds an entry per archived log: megabytes in a large workspace)
_STATES: LRUCache[tuple[Any, ...], dict[str, Any]] = LRUCache(8)


def _file_entry(ws: Workspace, file: str) -> dict[str, Any]:
    """The ingest state of the archived log `file` (its protocol, its agent); {} when none."""
    path = ws.state_dir / "ingest.json"
    try:
        st = path.stat()
    except OSError:
        return {}
    key = (str(path), st.st_mtime_ns, st.st_size)
    with _PARSED_LOCK:
        state = _STATES.get(key)
    if state is None:
        state = read_json(path, {}) or {}
        with _PARSED_LOCK:
            _STATES[key] = state
    entry = state.get("files", {}).get(file, {})
    return entry if isinstance(entry, dict) else {}


def _parse(ws: Workspace, row: dict[str, Any], path: Path) -> Turn | None:
    """The turn of `row` parsed from its archived log `path` (None when it is gone or empty)."""
    ref = row["raw_ref"]
    entry = _file_entry(ws, ref["file"])
    parser = PARSERS[row["source"]]
    try:
        result = parser(
            path,
            start=ref["byte_start"],
            stop=ref["byte_end"],
            start_index=row["turn"],
            protocol=entry.get("protocol"),
        )
    except FileNotFoundError:  # purged between the check above and the read: as if gone
        return None
    if not result.turns:
        return None
    # Readers that always read a whole file (Gemini chats) return every turn: pick this one.
    turn = next((t for t in result.turns if t.index == row["turn"]), result.turns[0])
    if row["agent"] != entry.get("agent", "main"):  # a subagent seen only inside its parent's log
        run = turn.subagents.get(row["agent"])
        match = [t for t in run.turns if t.index == row["turn"]] if run else []
        return match[0] if match else None
    return turn
