"""The one error family of archive-mcp.

Every mistake a user or an agent can fix (an unknown workspace, a bad argument, a lock held by
another process) is an `ArchiveError` carrying a message that says what to do next. The faces map
it once: the MCP face turns it into a tool error, the CLI into a message on stderr and exit code 1.
Anything else is a bug and is reported as one. This module imports nothing from the project, so
every layer (`workspaces`, `refiners`, the core, the faces) may raise these.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from contextlib import contextmanager


class ArchiveError(Exception):
    """A problem the caller can fix; `str(exc)` says what happened and what to do next."""


class NotFound(ArchiveError):
    """An unknown workspace, session, turn, theme or memory."""


class InvalidArgument(ArchiveError):
    """An argument with the wrong type, range or shape."""


class Busy(ArchiveError):
    """A workspace lock is held by another process for longer than the caller may wait."""


class NotAFile(ArchiveError):
    """A folder, FIFO, socket or device where a file is to be read or written: never opened."""


class MissingDependency(ArchiveError):
    """An optional package is not installed; the message names the exact command that installs it."""


class DiskFull(ArchiveError):
    """The archive's disk is full, over its quota or read-only. An ingest stops at once (no later
    session could be written either, and skipping them would look like bad sessions); what it
    archived before stays, and a run after the fix resumes as if it had never stopped."""


FULL_DISK = {
    errno.ENOSPC: ("the disk is full", "free some space"),
    errno.EDQUOT: ("the disk quota is used up", "free some space"),
    errno.EROFS: (
        "the file system is read-only",
        "remount it read-write or point ARCHIVE_MCP_HOME at a writable folder",
    ),
}


INGEST_AGAIN = "ingest again; nothing archived so far is lost"
REFINE_AGAIN = "refine again; nothing refined so far is lost"  # a batch re-refine stops too


def disk_full(exc: BaseException, again: str = INGEST_AGAIN) -> DiskFull | None:
    """The `DiskFull` an ingest (or what `again` names) stops with for `exc` (a write that failed
    for want of space or on a read-only disk, also as a library wraps or words it); None for any
    other error."""
    if isinstance(exc, DiskFull):
        return exc
    disk = as_os_error(exc)
    if disk is None or disk.errno not in FULL_DISK:
        return None
    cause, fix = FULL_DISK[disk.errno]
    where = f" writing {disk.filename}" if disk.filename else ""
    return DiskFull(f"{cause}{where}: {fix} and {again}")


def stop_if_full(exc: BaseException, again: str = INGEST_AGAIN) -> None:
    """Raise the `DiskFull` for `exc`, caused by `exc`; a `DiskFull` already is raised as it is
    (its cause kept: `raise exc from exc` would make it its own cause and drop the OSError)."""
    full = disk_full(exc, again)
    if full is exc:
        raise full
    if full is not None:
        raise full from exc


@contextmanager
def written(path: object, temp: str | None = None) -> Iterator[None]:
    """Inside, a disk error that names no file (a failed `write()`, one a library wrapped or
    numpy's short write), or names a temporary file whose name starts with `temp`, is re-raised
    as an OSError naming `path`: its one line says which file could not be written."""
    try:
        yield
    except Exception as exc:
        disk = as_os_error(exc)
        if disk is None or disk.errno is None:
            raise
        named = str(disk.filename or "")
        if named and not (temp and named.rsplit("/", 1)[-1].startswith(temp)):
            raise
        raise OSError(disk.errno, disk.strerror, str(path)) from exc


def os_message(exc: OSError) -> str:
    """One line for an OSError on any face: what happened, to which file, what to do."""
    where = f": {exc.filename}" if exc.filename else ""
    if exc.errno == errno.ENOSPC:
        return f"the disk is full{where}; free some space and run the command again"
    if exc.errno == errno.EDQUOT:
        return f"the disk quota is used up{where}; free some space and run the command again"
    if exc.errno == errno.EROFS:
        return (
            f"the file system is read-only{where}; point ARCHIVE_MCP_HOME at a writable folder "
            "or remount it read-write, then run the command again"
        )
    if exc.errno == errno.EIO:
        return f"the disk failed to read or write{where} (I/O error); check the disk and run again"
    if isinstance(exc, PermissionError):
        return f"permission denied{where}; fix the permissions and run the command again"
    return f"{exc.strerror or exc}{where}"


# How libraries word the OSError they wrap (Polars: "No space left on device (os error 28)").
_WORDED = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "Read-only file system": errno.EROFS,
    "Input/output error": errno.EIO,
}
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")  # numpy's tofile on a full disk


def as_os_error(exc: BaseException) -> OSError | None:
    """The OSError `exc` stands for: itself, or the disk error a library wrapped in its own
    exception (Polars) or worded without an errno (numpy's short write); None for any other."""
    text = str(exc)
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc
    for words, code in _WORDED.items():
        if words in text:
            return OSError(code, words)
    if _SHORT_WRITE.search(text):  # fewer bytes written than asked: the disk filled up
        return OSError(errno.ENOSPC, "No space left on device")
    return exc if isinstance(exc, OSError) else None
