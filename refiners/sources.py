"""Find sessions under a path, whichever agent wrote them; the reader registry.

Each reader module registers a `Reader` here when it is imported: a JSONL format as a
`lines.LogReader`, a JSON document rewritten whole as a `SnapshotReader`, any other as a
`FileReader`. This module imports none of them, so a reader can import `SessionSource` and friends
from here without a cycle; `refiners/__init__.py` imports them all. A reader reads the disk through
`disk.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .disk import is_dir, is_file, not_regular, unreadable
from .model import ParseResult


@dataclass
class SourceFile:
    agent: str  # "main" or the subagent id
    rel: str  # path relative to the session dir ("wire.jsonl", "subagents/a4f9c2e71/wire.jsonl")
    path: Path
    whole: bool = (
        False  # rewritten in place (Gemini's single JSON): archived as a snapshot, parsed whole
    )


@dataclass
class SessionSource:
    source: str  # "kimi" | "kimi-code" | "claude-code" | "codex" | "gemini" | "qwen-code"
    session_id: str
    bucket: str  # the agent's per-project folder name (or hash), when it has one
    work_dirs: list[str]  # candidate work dirs; the archive keeps the one that matches the bucket
    title: str | None
    session_dir: Path
    files: list[SourceFile] = field(default_factory=list)
    snapshots: list[SourceFile] = field(default_factory=list)  # small JSON copied whole
    branch: str | None = None  # the git branch the records name, when they do

    def keep(self, folder: Path, names: Iterable[str]) -> None:
        """The files of `names` in `folder` that exist, archived whole beside the log: small JSON
        a parse reads (Cline's manifest and last compaction, a task's UI messages)."""
        self.snapshots += [
            SourceFile("main", name, folder / name, whole=True)
            for name in names
            if is_file(folder / name)
        ]


def log_session(
    source: str,
    sid: str,
    bucket: str,
    work_dir: Any,
    title: Any,
    path: Path,
    *,
    whole: bool = False,
    rel: str | None = None,
    folder: Path | None = None,
) -> SessionSource:
    """The session `sid` whose log is the one file `path` (named `rel` in the archive, its own name
    by default; `whole`: rewritten in place, archived and parsed whole), in `folder` (the log's by
    default); its work dir and title kept when they are text, not empty."""
    return SessionSource(
        source,
        sid,
        bucket,
        [work_dir] if isinstance(work_dir, str) and work_dir else [],
        title if isinstance(title, str) and title else None,
        path.parent if folder is None else folder,
        [SourceFile("main", path.name if rel is None else rel, path, whole=whole)],
    )


@dataclass
class Discovery:
    sessions: list[SessionSource] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    def add(self, other: Discovery | None) -> None:
        """`other`'s sessions and skipped paths added to these (nothing when it is None)."""
        if other is not None:
            self.sessions += other.sessions
            self.skipped += other.skipped


class Reader(Protocol):
    """One agent's format: how to find its sessions and how to parse one log file.

    A JSONL format is a `lines.LogReader` (its turn builder and its `discover`); any other is a
    `FileReader` of two functions.
    """

    @property
    def source(self) -> str: ...
    @property
    def label(self) -> str: ...  # for people: "Claude Code"
    @property
    def order(self) -> int: ...  # discovery tries readers by ascending order (most specific first)

    def parse(
        self,
        path: Path,
        start: int = 0,
        first_line: int = 1,
        start_index: int = 0,
        protocol: str | None = None,
        stop: int | None = None,
    ) -> ParseResult:
        """Parse one log file from byte `start` (a turn boundary) to `stop`."""
        ...

    def discover(self, path: Path) -> Discovery | None:
        """The sessions under `path`, or None when `path` is not shaped like this agent's."""
        ...


@dataclass(frozen=True)
class FileReader:
    """A `Reader` of a format that is not JSONL lines (Aider's Markdown history): two functions."""

    source: str
    parse: Callable[..., ParseResult]  # (path, start, first_line, start_index, protocol, stop)
    discover: Callable[[Path], Discovery | None]
    label: str
    order: int = 50


@dataclass(frozen=True)
class SnapshotReader:
    """A `Reader` of a format whose session files are JSON documents rewritten whole (archived as
    snapshots): a reader gives `read`, the parse of one whole file, and its `discover`."""

    source: str
    label: str
    read: Callable[[Path], ParseResult]
    discover: Callable[[Path], Discovery | None]
    order: int = 50

    def parse(self, path: Path, *resume: object, **given: object) -> ParseResult:
        """`path` parsed whole: a document rewritten whole has no turn boundary to resume from,
        so where an earlier parse stopped (`resume`) and the version and `stop` `given` are not
        used."""
        return self.read(path)


READERS: dict[str, Reader] = {}
R = TypeVar("R", bound=Reader)


def register(reader: R) -> R:
    READERS[reader.source] = reader
    return reader


def with_next(reader: Reader, folder: Path, found: Discovery | None) -> Discovery | None:
    """`found`, what `reader` found in `folder`, and what the first reader tried after it finds
    there: a folder one agent's reader claims may also hold another agent's logs (a project
    folder holding Crush's `.crush` and Aider's history), which the claim would hide."""
    for other in sorted(READERS.values(), key=lambda r: r.order):
        if other.order > reader.order and (more := other.discover(folder)) is not None:
            if found is None:
                return more
            found.add(more)
            break
    return found


def listing(folder: Path, found: Discovery) -> list[Path]:
    """The entries of `folder`, sorted; none when it does not exist, and none (reported in
    `found`) when it cannot be read."""
    try:
        return sorted(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        found.skipped.append((str(folder), unreadable(exc)))
        return []


def jsonl_sessions(
    folder: Path,
    found: Discovery,
    header: Callable[[Path], dict[str, Any] | None],
    session: Callable[[Path, dict[str, Any]], SessionSource],
    why: str | None = None,
) -> None:
    """The sessions of the `.jsonl` files in `folder` whose `header` is found (a file without
    one is reported with `why`, when given, else passed over), added to `found`."""
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".jsonl" and p.is_file())
    except OSError:
        return
    for f in files:
        head = header(f)
        if head is not None:
            found.sessions.append(session(f, head))
        elif why is not None:
            found.skipped.append((str(f), why))


BELOW_DEPTH = 8  # how deep `discover` looks below a folder no reader recognises
BELOW_DIRS = 20_000  # and how many folders it opens at most
LOG_SUFFIXES = (".jsonl", ".json")


def discover(path: Path) -> Discovery:
    """Sessions under `path`: any registered agent's home, sessions folder, project folder or file,
    or else any of those found below it (a backup or an export holding several agents' logs)."""
    found = Discovery()
    if not path.exists():
        found.skipped.append((str(path), "does not exist"))
        return found
    readers = sorted(READERS.values(), key=lambda r: r.order)
    result = _recognised(path, readers)
    if result is not None:
        return screen(result, path)
    if path.is_dir():
        below = _below(path, readers)
        if below.sessions:
            return screen(below, path)
        found.skipped += below.skipped
    kinds = ", ".join(r.label for r in readers)
    found.skipped.append(
        (str(path), f"not a session log or log folder of any known agent ({kinds})")
    )
    return found


def printable(name: str) -> str:
    """`name` as valid Unicode: a file name whose bytes are not UTF-8 (held by Python as surrogate
    escapes) gets each such byte as `\\xNN` and each backslash doubled, so the original bytes can
    be told back from it; a valid name is returned unchanged."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raw = name.replace("\\", "\\\\").encode("utf-8", "surrogateescape")
        return raw.decode("utf-8", "backslashreplace")
    return name


def screen(found: Discovery, root: Path) -> Discovery:
    """Drop (and report) every file of `found` that is not a regular file or that is a link
    leading out of `root` (the folder ingested, or the file's folder when one file was named)."""
    base = os.path.realpath(root if root.is_dir() else root.parent)
    for session in found.sessions:
        session.files = _keep(session.files, base, found)
        session.snapshots = _keep(session.snapshots, base, found)
        session.session_id, session.bucket = (
            printable(session.session_id),
            printable(session.bucket),
        )
        for f in (*session.files, *session.snapshots):
            f.rel, f.agent = printable(f.rel), printable(f.agent)
    found.skipped = [(printable(p), why) for p, why in found.skipped]
    return found


LEADS_OUT = "a symbolic link that leads out of the folder ingested; not followed"


def leads_out(path: Path | str, base: str) -> bool:
    """Whether a link anywhere on `path` leads out of `base` (a real path). A plain path is never
    said to: a reader's own export (OpenCode's, in a private temp folder) is kept."""
    real = os.path.realpath(path)
    return os.path.abspath(path) != real and os.path.commonpath([base, real]) != base


def _keep(files: list[SourceFile], base: str, found: Discovery) -> list[SourceFile]:
    kept = []
    for f in files:
        try:
            why = LEADS_OUT if leads_out(f.path, base) else not_regular(f.path)
        except (OSError, ValueError) as exc:
            why = unreadable(exc) if isinstance(exc, OSError) else str(exc)
        if why is None:
            kept.append(f)
        else:
            found.skipped.append((str(f.path), why))
    return kept


def _recognised(path: Path, readers: list[Reader]) -> Discovery | None:
    for reader in readers:
        result = reader.discover(path)
        if result is not None:
            return result
    return None


def _below(root: Path, readers: list[Reader]) -> Discovery:
    """Every recognised folder or log file below `root`, breadth first; a recognised folder is
    taken whole and not looked into further. Bounded by BELOW_DEPTH and BELOW_DIRS (reported)."""
    found = Discovery()
    level, opened = [root], 0
    for _depth in range(BELOW_DEPTH):
        deeper: list[Path] = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError as exc:
                found.skipped.append((str(folder), unreadable(exc)))
                continue
            for entry in entries:
                if entry.is_symlink():
                    continue  # a link may point back up the tree or out of it
                if is_dir(entry):
                    opened += 1
                    if opened > BELOW_DIRS:
                        found.skipped.append(
                            (
                                str(root),
                                f"stopped looking after {BELOW_DIRS:,} folders; "
                                "ingest the folders that hold logs one by one",
                            )
                        )
                        return found
                    result = _recognised(entry, readers)
                    if result is None:
                        deeper.append(entry)
                elif entry.suffix in LOG_SUFFIXES and folder is not root:
                    result = _recognised(entry, readers)
                else:
                    continue
                found.add(result)
        level = deeper
        if not level:
            break
    return found
