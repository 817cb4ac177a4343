"""The theme store: named sets of turns with provenance, tagged by hand, from seeds, or
discovered (`themes/discover/discovery.py`). A theme is `themes/<slug>.json` in its workspace; this module
saves, loads, lists and deletes them, and reads saved suggestions back member by member."""

from __future__ import annotations

import builtins
import json
import os
import re
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from archive_mcp.errors import ArchiveError
from archive_mcp.workspaces import Workspace, locked, read_json
from archive_mcp.workspaces.clock import now

_BAD_NAME = re.compile(r"[/\\\x00-\x1f]|^\.|\.\.")


class ThemeError(ArchiveError, ValueError):
    """A theme call the caller can fix; the message says how."""


def slug_of(name: str) -> str:
    """The file name of a theme; names that would leave the themes folder are refused."""
    if not isinstance(name, str) or not name.strip() or len(name) > 120 or _BAD_NAME.search(name):
        raise ThemeError(
            f"invalid theme name {name!r}: no slashes, no '..', no leading '.', 1-120 characters"
        )
    slug = re.sub(r"[^\w.-]+", "-", name.strip().lower(), flags=re.UNICODE).strip("-")
    if not slug or slug.startswith("."):
        raise ThemeError(f"invalid theme name {name!r}")
    return slug


@dataclass(slots=True)  # a discovered theme of a big workspace has hundreds of thousands
class Member:
    session_id: str
    agent: str
    turn: int
    provenance: str  # reference | seed:<query> | cluster:<id>
    who: str
    when: str
    score: float | None = None
    # the chance that it belongs, when `membership.probability` attached it (topic seeds)
    probability: float | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.session_id, self.agent, self.turn)


@dataclass
class Theme:
    name: str
    slug: str
    description: str = ""
    seeds: list[str] = field(default_factory=list)
    status: str = "tagged"  # tagged | suggested
    members: list[Member] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    cluster_id: int | None = None
    keywords: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Theme:
        members = [Member(**m) for m in d.get("members", [])]
        return cls(
            d["name"],
            d["slug"],
            d.get("description", ""),
            list(d.get("seeds", [])),
            d.get("status", "tagged"),
            members,
            d.get("created", ""),
            d.get("updated", ""),
            d.get("cluster_id"),
            list(d.get("keywords", [])),
        )


@dataclass
class TagResult:
    theme: str
    slug: str
    attached: list[Member]
    near_misses: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    members: int
    refined_sessions: int = 0
    # set when the seeds matched nothing strong: nothing was attached from them, and a new
    # theme was not saved ("no strong match for …; closest: …")
    no_match: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class ThemeStore:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.folder = ws.root / "themes"

    def path(self, name: str) -> Any:
        p = self.folder / f"{slug_of(name)}.json"
        if not p.resolve().is_relative_to(self.folder.resolve()):
            raise ThemeError(f"theme name {name!r} would leave the themes folder")
        return p

    def get(self, name: str) -> Theme | None:
        """A theme by slug or name; a discovered theme also by the label `list_themes` prints
        (labels such as "api / deploy" are not valid file names, so they are looked up)."""
        try:
            data = read_json(self.path(name))
        except ThemeError:
            found = self._by_label(name)
            if found is None:
                raise
            return found
        return Theme.from_json(data) if data is not None else self._by_label(name)

    def _by_label(self, name: str) -> Theme | None:
        wanted = name.strip().casefold()
        return next((t for t in self.list() if t.name.casefold() == wanted), None)

    def require(self, name: str) -> Theme:
        theme = self.get(name)
        if theme is None:
            known = ", ".join(t.name for t in self.list()) or "none yet"
            raise ThemeError(
                f"no theme {name!r} in workspace {self.ws.name}; known themes: {known}"
            )
        return theme

    def list(self) -> list[Theme]:
        if not self.folder.is_dir():
            return []
        out = []
        for p in sorted(self.folder.glob("*.json")):
            data = read_json(p)
            if isinstance(data, dict) and "name" in data:
                out.append(Theme.from_json(data))
        return out

    def save(self, theme: Theme) -> None:
        """Write `themes/<slug>.json` (as `atomic_write_json` would) without holding every member
        as a dict, or the whole text, at once."""
        theme.updated = now()
        theme.created = theme.created or theme.updated
        head = json.dumps(
            {**{f.name: getattr(theme, f.name) for f in fields(theme)}, "members": []},
            ensure_ascii=False,
            indent=2,
            sort_keys=True,
        ).split('"members": []', 1)
        path = self.folder / f"{theme.slug}.json"
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(head[0] + ('"members": [\n' if theme.members else '"members": ['))
                for at in range(0, len(theme.members), 4096):
                    part = (
                        textwrap.indent(
                            json.dumps(asdict(m), ensure_ascii=False, indent=2, sort_keys=True),
                            "    ",
                        )
                        for m in theme.members[at : at + 4096]
                    )
                    fh.write((",\n" if at else "") + ",\n".join(part))
                fh.write(("\n  ]" if theme.members else "]") + head[1] + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete(self, name: str) -> Theme:
        with locked(self.ws.root):
            theme = self.require(name)
            (self.folder / f"{theme.slug}.json").unlink()
        return theme

    def names(self) -> builtins.list[str]:
        """The themes' names, sorted."""
        return sorted(t.name for t in self.list())

    def drop_session(self, session_id: str) -> builtins.list[str]:
        """Take a purged session's turns out of every theme; the names of those that lost some."""
        changed = []
        with locked(self.ws.root):
            for theme in self.list():
                kept = [m for m in theme.members if m.session_id != session_id]
                if len(kept) != len(theme.members):
                    theme.members = kept
                    self.save(theme)
                    changed.append(theme.name)
        return changed


def member_keys(ws: Workspace, name: str) -> set[tuple[str, str, int]] | None:
    """The (session, agent, turn) keys of a theme's members; None when there is no such theme
    (or its name could not be one)."""
    try:
        theme = ThemeStore(ws).get(name)
    except ThemeError:
        theme = None
    return {m.key for m in theme.members} if theme else None


# --- saved suggestions, read back member by member ---------------------------------------


def suggested(
    folder: Path, row_of: Callable[[list[str], list[str], list[int]], np.ndarray]
) -> list[tuple[Theme, np.ndarray, int]]:
    """Saved suggestions (no members), their members' rows by `row_of` (-1: gone), how many."""
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        with p.open(encoding="utf-8") as fh:
            text = fh.read(_READ)
            while (start := text.find(_MEMBERS)) < 0 and (more := fh.read(_READ)):
                text += more
            if start >= 0:  # as `ThemeStore.save` writes it: the members a megabyte at a time
                rows, count, tail = _member_rows(fh, text[start + len(_MEMBERS) :], row_of)
                data = json.loads(text[:start] + '"members": []' + tail)
            else:
                data = json.loads(text)
                keys = [(m["session_id"], m["agent"], m["turn"]) for m in data.get("members", [])]
                found = (
                    row_of(*map(list, zip(*keys, strict=True))) if keys else np.zeros(0, np.int64)
                )  # type: ignore[call-arg]
                rows, count = np.unique(found[found >= 0]), len(keys)
        if (
            isinstance(data, dict)
            and data.get("status") == "suggested"
            and data.get("cluster_id") is not None
        ):
            out.append((Theme.from_json({**data, "members": []}), rows, count))
    return out


_MEMBERS, _READ = (
    '"members": [',
    1 << 20,
)  # how `ThemeStore.save` (json.dumps, indent 2) opens the members


def _member_rows(
    fh: Any, text: str, row_of: Callable[[list[str], list[str], list[int]], np.ndarray]
) -> tuple[np.ndarray, int, str]:
    """The rows of the members of the array `text` (then the file) goes on with, how many, and
    the rest of the file after the array; decoded one member at a time, read `_READ` at a time."""
    decoder, found, count, pos = json.JSONDecoder(), [np.zeros(0, np.int64)], 0, 0
    batch: tuple[list[str], list[str], list[int]] = ([], [], [])
    while True:
        while pos < len(text) and text[pos] in " \n\r\t,":
            pos += 1
        if pos < len(text) and text[pos] == "]":
            break
        try:
            m, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:  # a member cut by the end of what was read
            more = fh.read(_READ)
            if not more:
                raise
            text, pos = text[pos:] + more, 0
            continue
        for got, value in zip(batch, (m["session_id"], m["agent"], m["turn"]), strict=True):
            got.append(value)  # type: ignore[attr-defined]
        count += 1
        if len(batch[0]) == 65_536:
            found.append(row_of(*batch))
            batch = ([], [], [])
    found.append(row_of(*batch) if batch[0] else np.zeros(0, np.int64))
    rows = np.concatenate(found)
    return np.unique(rows[rows >= 0]), count, text[pos + 1 :] + fh.read()
