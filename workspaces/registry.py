"""Workspaces on disk: create, list, link paths, and resolve a `workspace` argument."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ArchiveError
from .atomic import atomic_write_json, locked, read_json
from .ids import canonical_path, workspace_id

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class WorkspaceError(ArchiveError):
    """A workspace argument did not resolve; the message lists what would."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Workspace:
    """One hash-scoped workspace. Every path of its state hangs off `root`."""

    id: str
    name: str
    paths: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    root: Path = field(default=Path(), repr=False, compare=False)

    @property
    def raw_dir(self) -> Path:
        return self.root / "raw"

    @property
    def refined_dir(self) -> Path:
        return self.root / "refined"

    @property
    def embeddings_dir(self) -> Path:
        return self.root / "embeddings"

    @property
    def cache_dir(self) -> Path:
        return self.root / "cache"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "paths": self.paths,
            "sources": self.sources,
            "created": self.created,
            "updated": self.updated,
        }


# Under the home: the archive's files are private (0600/0700). The marker says that was checked
# for files written before (private_tree); a home this version creates is private from birth.
PRIVATE_MARKER = ".private"


class Registry:
    """The set of workspaces under one archive home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.base = home / "workspaces"

    def _load(self, ws_dir: Path) -> Workspace | None:
        data = read_json(ws_dir / "workspace.json")
        if not isinstance(data, dict):
            return None
        return Workspace(
            id=data["id"],
            name=str(data.get("name") or data["id"]),
            paths=list(data.get("paths", [])),
            sources=list(data.get("sources", [])),
            created=data.get("created", ""),
            updated=data.get("updated", ""),
            root=ws_dir,
        )

    def _save(self, ws: Workspace) -> None:
        ws.updated = _now()
        atomic_write_json(ws.root / "workspace.json", ws.to_json())

    def save(self, ws: Workspace) -> None:
        """Write `ws`'s description (hold its lock)."""
        self._save(ws)

    def remove(self, ws_id: str) -> None:
        """Delete workspace `ws_id` and all it holds (a merge moved it first): its description
        goes first, so a removal cut short leaves a folder no listing shows, never half a
        workspace."""
        ws_dir = self.base / ws_id
        if not _SAFE_ID.match(ws_id) or not ws_dir.is_dir():
            return
        (ws_dir / "workspace.json").unlink(missing_ok=True)
        shutil.rmtree(ws_dir, ignore_errors=True)

    def all(self) -> list[Workspace]:
        if not self.base.is_dir():
            return []
        found = (self._load(d) for d in sorted(self.base.iterdir()) if d.is_dir())
        return sorted((w for w in found if w), key=lambda w: (w.name, w.id))

    def get(self, ws_id: str) -> Workspace | None:
        if not _SAFE_ID.match(ws_id):
            return None
        return self._load(self.base / ws_id)

    def ensure(
        self,
        ws_id: str,
        path: str | None = None,
        name: str | None = None,
        source: str | None = None,
    ) -> Workspace:
        """Return the workspace `ws_id`, creating it or adding a path/source it lacks."""
        if not _SAFE_ID.match(ws_id):
            raise WorkspaceError(f"invalid workspace id {ws_id!r}")
        ws_dir = self.base / ws_id
        with locked(ws_dir):
            ws = self._load(ws_dir)
            changed = False
            if ws is None:
                ws = Workspace(
                    id=ws_id,
                    name=name or (_basename(path) if path else _unnamed(ws_id, source)),
                    created=_now(),
                    root=ws_dir,
                )
                changed = True
                if not (self.home / PRIVATE_MARKER).exists():
                    (self.home / PRIVATE_MARKER).touch(0o600)
            elif (
                path
                and not ws.paths
                and (ws.name == ws.id or ws.name.endswith(f" project {ws.id[:8]}"))
            ):
                ws.name = (
                    name or _basename(path) or ws.id
                )  # archived under its hash before the path was known
                changed = True
            elif (
                not path and not ws.paths and ws.name == ws.id and source
            ):  # named by an older version
                ws.name = _unnamed(ws.id, source)
                changed = True
            if path and path not in ws.paths:
                ws.paths.append(path)
                changed = True
            if source and source not in ws.sources:
                ws.sources.append(source)
                changed = True
            if changed:
                self._save(ws)
            return ws

    def link(self, path: str, into: str) -> Workspace:
        """Add `path` (a worktree, a moved checkout) to the workspace `into`."""
        ws = self.resolve(into)
        canon = canonical_path(path)
        owner = self._by_path(canon)
        if owner and owner.id != ws.id:
            message = f"{canon} already belongs to workspace {owner.name} ({owner.id})"
            if canon in owner.paths:  # the path's own workspace: its sessions move with a merge
                message += (
                    f"; to join its sessions into {ws.name}, run `{merge_command(owner.id, ws.id)}`"
                )
            raise WorkspaceError(message)
        with locked(ws.root):
            ws = self._load(ws.root) or ws
            if canon not in ws.paths:
                ws.paths.append(canon)
                self._save(ws)
        return ws

    def _by_path(
        self, canon: str, workspaces: Iterable[Workspace] | None = None
    ) -> Workspace | None:
        """The workspace whose path is `canon` or the longest path containing it."""
        best: tuple[int, Workspace] | None = None
        for ws in workspaces if workspaces is not None else self.all():
            for p in ws.paths:
                if canon == p or canon.startswith(p.rstrip("/") + "/"):
                    if best is None or len(p) > best[0]:
                        best = (len(p), ws)
        return best[1] if best else None

    def resolve(
        self, ref: str | None = None, cwd: str | None = None, roots: Iterable[str] = ()
    ) -> Workspace:
        """Resolve path, id, unique id prefix or unique name; else the roots; else the cwd."""
        if ref:
            exact = self.get(ref)  # a whole id: its one description read, not every workspace's
            if exact is not None and exact.id == ref:
                return exact
        known = self.all()
        if ref:
            ws = self._match(ref, known)
            if ws:
                return ws
            if len(ref) < 4 and any(w.id.startswith(ref.lower()) for w in known):
                raise WorkspaceError(
                    self._unknown(
                        f"{ref!r} is too short for a workspace id prefix: "
                        "give at least 4 characters of the id, or a name or path",
                        known,
                    )
                )
            raise WorkspaceError(self._unknown(f"no workspace matches {ref!r}", known))
        for candidate in [*roots, *(_git_root_and_dir(cwd or os.getcwd()))]:
            ws = self._match_path(candidate, known)
            if ws:
                return ws
        raise WorkspaceError(
            self._unknown(
                f"the current directory {cwd or os.getcwd()} is not an archived workspace; "
                "pass `workspace`",
                known,
            )
        )

    def _match(self, ref: str, known: list[Workspace]) -> Workspace | None:
        by_id = {w.id: w for w in known}
        if ref in by_id:
            return by_id[ref]
        if "/" in ref or "\\" in ref or ref.startswith(("~", ".")):  # a path (also Windows')
            return self._match_path(os.path.expanduser(ref), known)
        prefixed = [w for w in known if w.id.startswith(ref.lower())] if len(ref) >= 4 else []
        if len(prefixed) == 1:
            return prefixed[0]
        named = [w for w in known if w.name == ref] or [
            w for w in known if w.name.lower() == ref.lower()
        ]
        if len(named) == 1:
            return named[0]
        if len(named) > 1 or len(prefixed) > 1:
            hits = named or prefixed
            raise WorkspaceError(
                f"{ref!r} is ambiguous: " + ", ".join(f"{w.name} ({w.id})" for w in hits)
            )
        return None

    def _match_path(self, path: str, known: list[Workspace]) -> Workspace | None:
        canon = canonical_path(path)
        ws_id = workspace_id(canon)
        for w in known:
            if w.id == ws_id:
                return w
        return self._by_path(canon, known)

    @staticmethod
    def _unknown(message: str, known: list[Workspace]) -> str:
        if not known:
            return (
                f"{message}. The archive holds no workspaces yet: run `archive-mcp ingest` first."
            )
        listing = "; ".join(
            f"{w.name} ({w.id[:8]}, {', '.join(w.paths) or 'path unknown'})" for w in known
        )
        return f"{message}. Known workspaces: {listing}"


def merge_command(src: str, into: str) -> str:
    """The `workspaces merge` command line that moves workspace `src` into `into`, quoted for a
    POSIX shell so it works when pasted."""
    return f"archive-mcp workspaces merge {shlex.quote(src)} --into {shlex.quote(into)}"


def _basename(path: str) -> str:
    """The last folder name of a POSIX or a Windows path (agents record both)."""
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1]


def _git_root_and_dir(cwd: str) -> list[str]:
    """The git root containing `cwd` (if any), then `cwd` itself."""
    out: list[str] = []
    p = Path(canonical_path(cwd))
    for d in (p, *p.parents):
        if (d / ".git").exists():
            out.append(str(d))
            break
    out.append(str(p))
    return out


def _unnamed(ws_id: str, source: str | None) -> str:
    """The name of a workspace whose project path is unknown (a Gemini project hash, a Kimi bucket
    without its path): the agent and the id's head, not 32-64 hex digits."""
    return f"{source} project {ws_id[:8]}" if source else ws_id


PRIVATE_UMASK = 0o077


def private_umask() -> None:
    """Everything the archive writes is private (files 0600, folders 0700): the logs and what is
    derived from them hold secrets and paths. The umask is the process's: an archive in a process
    makes that process's files private."""
    os.umask(os.umask(PRIVATE_UMASK) | PRIVATE_UMASK)


def private_tree(home: Path) -> None:
    """Folders 0700 and files 0600 under the archive home, once: an archive written before the
    umask was set (0755/0644) is made private the first time it is opened. A marker file records
    that it was done."""
    marker = home / PRIVATE_MARKER
    if not home.is_dir() or marker.exists():
        return
    for path in [home, *home.rglob("*")]:
        try:
            if path.is_symlink():
                continue
            path.chmod(0o700 if path.is_dir() else 0o600)
        except OSError:
            continue
    marker.touch(0o600)
