"""Reading agents' files without trusting them: regular files only (a FIFO, a device or a socket
named like a log is never opened), sizes bounded, and a file or folder that cannot be read an
answer (why, and what to do), never an error that stops a discovery.

Every reader reads the disk through these; `sources.py` builds the sessions from what they find.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .fields import loads_valid
from .model import ParseResult

META_MAX = 8 << 20  # a metadata JSON file (state.json, meta.json, projects.json) read whole
LINE_MAX = 64 << 20  # a log line decoded whole; a longer one is skipped (reported)
SNAPSHOT_MAX = 512 << 20  # a whole-file copy (a Gemini JSON chat is parsed only up to LINE_MAX)


class Refused(OSError):
    """A file ingest will not read: `why` says so without the path (a report names it)."""

    def __init__(self, path: Path | str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.why = why


class NotRegular(Refused):
    """A path named like a log that is a FIFO, a device, a socket or a folder: never opened."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path: Path | str) -> str | None:
    """Why `path` is not a regular file (following links), None when it is one."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return None
    return f"{_kind(mode)}, not a regular file; not opened"


def open_regular(path: Path | str) -> Any:
    """`path` opened for binary reading, only when it is a regular file: a FIFO, device or
    socket raises NotRegular without being opened (checked before the open; the open itself is
    non-blocking and checked again, in case the path was swapped in between)."""
    why = not_regular(path)
    if why is not None:
        raise NotRegular(path, why)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(path, f"{_kind(mode)}, not a regular file; not opened")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path | str, limit: int = META_MAX) -> bytes:
    """A regular file's bytes, at most `limit` of them: a larger file raises OSError."""
    with open_regular(path) as fh:
        data: bytes = fh.read(limit + 1)
    if len(data) > limit:
        raise Refused(path, f"larger than {limit >> 20} MB; not read")
    return data


def load_snapshot(path: Path) -> Any:
    """A whole JSON session file (up to SNAPSHOT_MAX) for a reader's parse, or the ParseResult
    that says why it cannot be read (`malformed`, the reason)."""
    try:
        return loads_valid(read_bounded(path, SNAPSHOT_MAX).decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:
        return ParseResult.malformed(str(exc))


def load_json(path: Path, limit: int = META_MAX) -> Any:
    """A small JSON file, or None when it is missing, unreadable, too large, not a regular file
    or not JSON."""
    try:
        return loads_valid(read_bounded(path, limit).decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None


def load_object(path: Path, limit: int = META_MAX) -> dict[str, Any]:
    """A small JSON file's object (`load_json`); an empty one when the file holds no object."""
    data = load_json(path, limit)
    return data if isinstance(data, dict) else {}


def unreadable(exc: OSError, what: str = "folder") -> str:
    """Why a folder (or a file) could not be read, and what to do about it."""
    if isinstance(exc, PermissionError):
        return f"permission denied; fix the {what}'s permissions and ingest again"
    return f"could not read: {exc.strerror or exc}"


def cannot_read(path: Path) -> str | None:
    """Why `path` (a file or a folder) cannot be read, None when it can or is gone: a reader
    asks before it calls what gave it nothing "not a session"."""
    try:
        if os.path.isdir(path):
            os.listdir(path)
            return None
        open_regular(path).close()
    except FileNotFoundError:
        return None
    except Refused as exc:
        return exc.why
    except OSError as exc:
        return unreadable(exc, "folder" if os.path.isdir(path) else "file")
    return None


def is_file(path: Path) -> bool:
    """`path.is_file()`, False (not an error) when a folder above it cannot be read."""
    return _answered(path.is_file)


def is_dir(path: Path) -> bool:
    """`path.is_dir()`, False when a folder above it cannot be read."""
    return _answered(path.is_dir)


def exists(path: Path) -> bool:
    """`path.exists()`, False when a folder above it cannot be read."""
    return _answered(path.exists)


def _answered(test: Callable[[], bool]) -> bool:
    try:
        return test()
    except OSError:
        return False


def subdirs(path: Path) -> list[Path]:
    """The folders directly under `path`; none when it cannot be listed."""
    try:
        return [d for d in path.iterdir() if is_dir(d)]
    except OSError:
        return []


def head_records(
    path: Path,
    limit: int = 40,
    max_bytes: int = 1 << 20,
    enough: Callable[[dict[str, Any]], bool] | None = None,
) -> list[dict[str, Any]]:
    """The first JSON-object lines of a JSONL file (bad lines skipped); [] when unreadable.

    Reading stops after `limit` records, `max_bytes` bytes, or the first record `enough` accepts.
    """
    out: list[dict[str, Any]] = []
    try:
        with open_regular(path) as fh:
            seen = 0
            while raw := fh.readline(max_bytes):
                seen += len(raw)
                try:
                    rec = loads_valid(raw.decode("utf-8", errors="replace"))
                except (ValueError, RecursionError):
                    rec = None
                if isinstance(rec, dict):
                    out.append(rec)
                    if enough is not None and enough(rec):
                        break
                if len(out) >= limit or seen >= max_bytes:
                    break
    except OSError:
        return []
    return out
