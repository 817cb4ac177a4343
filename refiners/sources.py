"""Find sessions under a path, whichever Kimi product wrote them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class SourceFile:
    agent: str  # "main" or the subagent id
    rel: str  # path relative to the session dir ("wire.jsonl", "subagents/a4f9c2e71/wire.jsonl")
    path: Path


@dataclass
class SessionSource:
    source: str  # "kimi" | "kimi-code"
    session_id: str
    bucket: str  # the product's work-dir bucket name
    work_dirs: list[str]  # candidate work dirs; the archive keeps the one that hashes to the bucket
    title: str | None
    session_dir: Path
    files: list[SourceFile] = field(default_factory=list)
    snapshots: list[SourceFile] = field(default_factory=list)  # small JSON copied whole


@dataclass
class Discovery:
    sessions: list[SessionSource] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def load_json(path: Path) -> Any:
    """A small JSON file, or None when it is missing, unreadable or not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def unreadable(exc: OSError) -> str:
    """Why a folder could not be read, and what to do about it."""
    if isinstance(exc, PermissionError):
        return "permission denied; fix the folder's permissions and ingest again"
    return f"could not read: {exc.strerror or exc}"


def subdirs(path: Path) -> list[Path]:
    """The folders directly under `path`; none when it cannot be listed."""
    try:
        return [d for d in path.iterdir() if d.is_dir()]
    except OSError:
        return []


def discover(path: Path) -> Discovery:
    """Sessions under `path`: a share/home dir, a sessions dir, a bucket or one session dir."""
    from . import kimi_cli, kimi_code

    found = Discovery()
    if not path.exists():
        found.skipped.append((str(path), "does not exist"))
        return found
    if not path.is_dir():
        found.skipped.append((str(path), "not a directory: pass a Kimi share dir, sessions dir or session dir"))
        return found
    for module in (kimi_code, kimi_cli):
        result = module.discover(path)
        if result is not None:
            return result
    found.skipped.append((str(path), "not a Kimi share dir, sessions dir, bucket or session dir"))
    return found
