"""Atomic writes (temp file + rename) and the per-workspace lock."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from filelock import FileLock, Timeout

from ..errors import Busy, NotAFile, written

LOCK_TIMEOUT = 60.0  # seconds; `$ARCHIVE_MCP_LOCK_TIMEOUT` overrides it
ORPHAN_AGE = 600.0  # a temp file this old belongs to a write that was killed


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to `path` so readers see the old file or the new one, never half of one.

    `durable=False` skips the fsync: for copies that can be made again from their source
    (hundreds of small offloaded tool outputs would otherwise cost one disk flush each).
    """
    with atomic_file(path, durable) as fh:
        fh.write(data)


@contextmanager
def atomic_file(path: Path, durable: bool = True, mode: int | None = None) -> Iterator[BinaryIO]:
    """A temp file beside `path` to write, renamed over `path` when the block ends (removed when
    it raises): readers see the old file or the new one. `mode` is set on it before any byte is
    written. A folder or FIFO at `path` is refused (`need_file`); a failed write names `path`."""
    need_file(path)
    with written(path, temp=f".{path.name}."):  # not the temp file's random name
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                yield fh
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def need_file(path: Path) -> None:
    """Raise `NotAFile` when `path` (followed if a link) is a folder, FIFO, socket or device
    ("a device" names the last two):
    such a path is never opened (a FIFO would block) nor replaced. Nothing there is fine."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device"
    raise NotAFile(
        f"{path} is {what}, not a regular file; move it away or choose another name, then run "
        "the command again"
    )


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    """`obj` as JSON, UTF-8. A string that is not valid Unicode (a file name whose bytes are not
    UTF-8, decoded by Python with surrogate escapes) is written as JSON escapes (`\\udcff`),
    which read back to the same string: `os.fsencode` of it gives the original bytes."""
    text = json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = (json.dumps(obj, ensure_ascii=True, indent=2, sort_keys=True) + "\n").encode()
    atomic_write_bytes(path, data)


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def lock_timeout() -> float:
    """How long to wait for a lock: `$ARCHIVE_MCP_LOCK_TIMEOUT` seconds, else 60."""
    try:
        return max(0.0, float(os.environ.get("ARCHIVE_MCP_LOCK_TIMEOUT", LOCK_TIMEOUT)))
    except ValueError:
        return LOCK_TIMEOUT


@contextmanager
def locked(directory: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the lock of a workspace (or the archive root); re-entrant within one process.

    The holder's pid, command and start time are written beside the lock (`.lock.holder`), so a
    caller that gives up after `timeout` seconds gets a `Busy` error that names who holds it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    lock = _locks.setdefault(str(directory), FileLock(str(directory / ".lock")))
    try:
        lock.acquire(timeout=lock_timeout() if timeout is None else timeout)
    except Timeout:
        raise Busy(_busy_message(directory)) from None
    holder = directory / ".lock.holder"
    try:
        if lock.lock_counter == 1:
            write_holder(holder)
        yield
    finally:
        if lock.lock_counter == 1:
            holder.unlink(missing_ok=True)
        lock.release()


def held_elsewhere(directory: Path) -> bool:
    """Does another process or thread hold `directory`'s lock right now (a writer at work)?

    False when the calling thread holds it itself, when nobody does, and where `flock` is not
    available. Probing takes the lock for a moment without waiting, so a writer that asks for
    it in that instant waits one poll (50 ms) at most."""
    lock = _locks.get(str(directory))
    if lock is not None and lock.is_locked:  # thread-local: this thread is the holder
        return False
    try:
        import fcntl
    except ImportError:  # not POSIX: never claim a writer
        return False
    try:
        fd = os.open(directory / ".lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def write_holder(path: Path) -> None:
    """Leave a note of who holds a lock beside it (pid, command, since); advisory."""
    info = {
        "pid": os.getpid(),
        "command": " ".join(sys.argv)[:300] or sys.executable,
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        path.write_text(json.dumps(info) + "\n", encoding="utf-8")
    except OSError:
        pass  # the holder note is advisory; the lock itself is what protects the data


def lock_holder(directory: Path) -> dict[str, Any] | None:
    """Who holds the lock of `directory` (pid, command, since), when it left a note."""
    try:
        info = json.loads((directory / ".lock.holder").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _busy_message(directory: Path) -> str:
    info = lock_holder(directory)
    who = (
        f"process {info.get('pid')} (`{info.get('command')}`, since {info.get('since')})"
        if info
        else "another process"
    )
    return (
        f"{directory.name} is locked by {who}; wait for it to finish and try again, or raise "
        f"$ARCHIVE_MCP_LOCK_TIMEOUT (now {lock_timeout():g} s)"
    )


def clean_orphans(directory: Path, age: float = ORPHAN_AGE) -> int:
    """Delete temp files and folders (`.<name>.<random>.tmp`: a whole-file copy is checked in
    one before it replaces the archived copy) left under `directory` by a killed write.

    `os.walk` passes over a folder removed while it walks (another process swapping its search
    index removes the old folder); `Path.rglob` raised FileNotFoundError there, and the ingest
    that called this skipped its whole workspace, its state unsaved (the stress flake)."""
    cutoff, n = time.time() - age, 0
    for folder, dirs, names in os.walk(directory):
        for name in [*names, *dirs]:
            if not (name.startswith(".") and name.endswith(".tmp")):
                continue
            tmp = Path(folder) / name
            try:
                if tmp.stat().st_mtime >= cutoff:
                    continue
                if tmp.is_file():
                    tmp.unlink()
                elif tmp.is_dir() and not tmp.is_symlink():
                    shutil.rmtree(tmp)
                    dirs.remove(name)
                else:
                    continue
                n += 1
            except OSError:
                continue
    return n


_locks: dict[str, FileLock] = {}
