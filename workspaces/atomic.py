"""Atomic writes (temp file + rename) and the per-workspace lock."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write `data` to `path` so readers see the old file or the new one, never half of one.

    `durable=False` skips the fsync: for copies that can be made again from their source
    (hundreds of small offloaded tool outputs would otherwise cost one disk flush each).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


@contextmanager
def locked(directory: Path, timeout: float = 60.0) -> Iterator[None]:
    """Hold the lock of a workspace (or the archive root); re-entrant within one process."""
    directory.mkdir(parents=True, exist_ok=True)
    lock = _locks.setdefault(str(directory), FileLock(str(directory / ".lock"), timeout=timeout))
    with lock:
        yield


_locks: dict[str, FileLock] = {}
