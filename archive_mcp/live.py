"""Following the agents' homes: an incremental ingest at start and whenever a followed home changes.

`Follower` polls cheaply (the size and mtime of the candidate log files and of their folders,
`scan`), waits until a change has settled (`debounce`), then runs the same incremental
`Archive.ingest` as `archive-mcp ingest`, over the same homes (the paths given, else every
agent's default home, read from the same environment variables each round). The server runs it
on a daemon thread (`start`), `archive-mcp watch` in the foreground (`run`). Readers never wait
on it: they read what is archived, and `catching_up()` says how many files are being archived
(or that the archive is not current: its disk is full).

A round that stops on a full or read-only disk (`DiskFull`) says so once per try and waits
longer before each next one (`ERROR_BACKOFF` doubling up to `FULL_BACKOFF_MAX`): a full disk
is not freed by polling it every ten seconds, and each try would scan every home again.

One follower per archive home: a follower holds `follow.lock` in the archive home while it
follows. A second one (another server, a `watch`) stands by (`run` retries the lock) or, with
`acquire(wait=False)`, learns who holds it (`holder_message`).

Sessions whose work dir is under an excluded path (`exclude`, else the `exclude` setting) are
never archived, as with `ingest`.

Killing a follower at any moment loses nothing: ingest writes every file atomically and saves a
workspace's state last, so the next round archives from the last saved state.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from archive_mcp.errors import DiskFull
from archive_mcp.refiners.crush import named_stores
from archive_mcp.settings import follow_setting
from archive_mcp.workspaces import default_source_roots, read_json, write_holder

INTERVAL = 1.0  # seconds between polls
DEBOUNCE = 0.3  # a change must stay still this long before it is ingested ...
MAX_DEBOUNCE = 3.0  # ... unless it keeps changing for this long (a busy agent)
LOCK_RETRY = 5.0  # a standing-by follower tries the lock this often
ERROR_BACKOFF = 10.0  # after a failed round, wait this long before the next try
FULL_BACKOFF_MAX = 300.0  # on a full disk the wait doubles after each failed try, up to this
# where the agents keep logs (`chats`: the Cursor CLI's stores; `tasks`, `data`: Cline's)
SESSION_DIRS = ("projects", "sessions", "archived_sessions", "tmp", "chats", "tasks", "data")
# logs, and the SQLite stores some agents keep instead (OpenCode, Kilo, Goose, Cursor, the Cursor
# CLI), with their write-ahead logs: a WAL store's main file changes only at a checkpoint
LOG_SUFFIXES = (".jsonl", ".json", ".db", ".vscdb", ".db-wal", ".vscdb-wal")
MAX_DEPTH = 8
LOCK_NAME = "follow.lock"

# path -> (size, mtime_ns); a folder's key ends with the separator and its size is 0
Snapshot = dict[str, tuple[int, int]]


def follow_roots(paths: Sequence[str | os.PathLike[str]] = ()) -> list[Path]:
    """The homes to follow: `paths`, else the `follow` setting ($ARCHIVE_MCP_FOLLOW, the config
    file), else every agent's default home (as `ingest` reads them)."""
    if paths:
        return [Path(p).expanduser() for p in paths]
    return follow_setting() or default_source_roots()


def scan(roots: Sequence[Path]) -> Snapshot:
    """Size and mtime of every candidate log file under `roots`, and of the folders holding them.

    An agent home is looked into only where the agents keep sessions (`SESSION_DIRS`, plus the
    log files at its top); any other folder is walked whole. Symlinks are not followed."""
    out: Snapshot = {}
    for root in roots:
        try:
            st = root.stat()
        except OSError:
            continue
        if not root.is_dir():
            out[str(root)] = (st.st_size, st.st_mtime_ns)
            continue
        for store in named_stores(root):  # Crush's global folder lists stores kept in projects
            try:
                s = store.stat()
            except OSError:
                continue
            out[str(store)] = (s.st_size, s.st_mtime_ns)
        subs = [root / d for d in SESSION_DIRS if (root / d).is_dir()]
        if not subs:
            _walk(str(root), out, 0)
            continue
        out[str(root) + os.sep] = (0, st.st_mtime_ns)
        _walk(str(root), out, MAX_DEPTH)  # its top-level logs only (kimi.json, session_index)
        for sub in subs:
            out[str(sub) + os.sep] = (0, sub.stat().st_mtime_ns)
            _walk(str(sub), out, 1)
    return out


def _walk(folder: str, out: Snapshot, depth: int) -> None:
    try:
        entries = os.scandir(folder)
    except OSError:
        return
    with entries:
        for e in entries:
            try:
                if e.is_symlink():
                    continue
                if e.is_dir():
                    if depth < MAX_DEPTH:
                        out[e.path + os.sep] = (0, e.stat().st_mtime_ns)
                        _walk(e.path, out, depth + 1)
                elif e.name.endswith(LOG_SUFFIXES):
                    st = e.stat()
                    out[e.path] = (st.st_size, st.st_mtime_ns)
            except OSError:
                continue


def changed_files(before: Snapshot, now: Snapshot) -> list[str]:
    """Log files in `now` that are new or differ from `before` (folders are not counted)."""
    return sorted(p for p, v in now.items() if not p.endswith(os.sep) and before.get(p) != v)


def archived_snapshot(home: Path) -> Snapshot:
    """What the archive last saw of each source file (from every workspace's ingest state)."""
    out: Snapshot = {}
    base = home / "workspaces"
    if not base.is_dir():
        return out
    for ws in base.iterdir():
        state = read_json(ws / "state" / "ingest.json", {}) or {}
        for entry in state.get("files", {}).values():
            if "size" in entry and "mtime_ns" in entry:
                out[entry["source_path"]] = (int(entry["size"]), int(entry["mtime_ns"]))
    return out


class Follower:
    """Keeps an archive current with the agents' homes; see the module docstring."""

    def __init__(
        self,
        archive: Any,  # an `Archive` (typed loosely: the archive module imports nothing from here)
        paths: Sequence[str | os.PathLike[str]] = (),
        *,
        interval: float = INTERVAL,
        debounce: float = DEBOUNCE,
        embed: bool = True,
        status: Callable[[str], None] | None = None,
        exclude: Sequence[str] | None = None,
    ) -> None:
        self.archive = archive
        self.paths = tuple(paths)
        self.exclude = None if exclude is None else list(exclude)  # None: the setting, each round
        self.interval = interval
        self.debounce = debounce
        self.embed = embed
        self.status = status or (lambda text: None)
        self.pending = 0  # files the running (or next) round archives
        self.rounds = 0  # ingests run
        self.standby = False  # another follower holds this archive home
        self.last_report: Any = None
        self.last_error: str | None = None
        self.full: str | None = None  # why the last round stopped on a full disk, until one runs
        self.backoff = ERROR_BACKOFF  # seconds to wait after the last failed round
        self._base: Snapshot | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = FileLock(str(Path(archive.home) / LOCK_NAME), thread_local=False)

    # --- what readers see ------------------------------------------------------------------
    def catching_up(self) -> str | None:
        """ "archive catching up: N files pending" while a round archives changed files, "archive
        not current: <why>" while the disk is full, else None."""
        if self.full:
            return f"archive not current: {self.full}"
        n = self.pending
        return f"archive catching up: {n} file{'' if n == 1 else 's'} pending" if n else None

    # --- the lock --------------------------------------------------------------------------
    def acquire(self, wait: bool = False) -> bool:
        """Take this archive home's follow lock (waiting for it with `wait`); False if held."""
        Path(self.archive.home).mkdir(parents=True, exist_ok=True)
        while True:
            try:
                self._lock.acquire(timeout=0)
            except Timeout:
                if not wait or self._stop.wait(0.5):
                    return False
                continue
            if self._lock.lock_counter == 1:
                write_holder(Path(self.archive.home) / (LOCK_NAME + ".holder"))
            return True

    def release(self) -> None:
        if self._lock.is_locked:
            if self._lock.lock_counter == 1:
                (Path(self.archive.home) / (LOCK_NAME + ".holder")).unlink(missing_ok=True)
            self._lock.release()

    def holder_message(self) -> str:
        """Who follows this archive home now, and what to do."""
        try:
            info = json.loads(
                (Path(self.archive.home) / (LOCK_NAME + ".holder")).read_text(encoding="utf-8")
            )
            who = f"process {info['pid']} (`{info['command']}`, since {info['since']})"
        except (OSError, ValueError, KeyError, TypeError):
            who = "another process"
        return (
            f"{self.archive.home} is already followed by {who}; one follower per archive is "
            "enough (stop it first, or pass --wait to take over when it exits)"
        )

    # --- running ---------------------------------------------------------------------------
    def start(self) -> Follower:
        """Follow on a daemon thread (standing by while another follower holds the lock)."""
        self._thread = threading.Thread(target=self.run, name="archive-mcp-follow", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Ask the loop to end (a round in progress finishes and saves first) and wait for it."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """Follow until `stop()`: take the lock (standing by while another holds it), then one
        round at start and one whenever a followed home changes."""
        try:
            while not self._stop.is_set():
                if not self._lock.is_locked and not self.acquire():
                    self.standby = True
                    self._stop.wait(LOCK_RETRY)
                    continue
                self.standby = False
                try:
                    ok = self.step()
                except Exception as exc:  # noqa: BLE001 - e.g. a config file that does not parse
                    self.last_error, ok = f"{type(exc).__name__}: {exc}", False
                    self.status(f"follow: {exc}")
                self._stop.wait(self.interval if ok else self.backoff)
        finally:
            self.pending = 0
            self.release()

    def step(self) -> bool:
        """One poll: ingest when a followed home changed since the last round (always, the
        first time). False when the round failed (it is retried on the next poll)."""
        roots = follow_roots(self.paths)
        now = scan(roots)
        if self._base is None:
            self._base = archived_snapshot(Path(self.archive.home))
        elif now == self._base:
            return True
        else:
            now = self._settle(roots, now)
        self.pending = len(changed_files(self._base, now))
        started = time.monotonic()
        try:
            given = self.paths or follow_setting() or ()  # else ingest's own default homes
            report = self.archive.ingest(*given, embed=self.embed, exclude=self.exclude)
        except DiskFull as exc:  # polling will not free the disk: wait longer each time
            was = self.backoff if self.full else ERROR_BACKOFF / 2
            self.backoff = min(was * 2, FULL_BACKOFF_MAX)
            self.last_error = self.full = str(exc)
            self.status(f"follow: {exc} (next try in {self.backoff:.0f} s)")
            return False
        except Exception as exc:  # noqa: BLE001 - a failed round is reported and retried
            self.last_error, self.full = f"{type(exc).__name__}: {exc}", None
            self.backoff = ERROR_BACKOFF
            self.status(f"follow: ingest failed, retrying: {self.last_error}")
            return False
        finally:
            self.pending = 0
        self._base, self.last_report, self.last_error, self.full = now, report, None, None
        self.backoff = ERROR_BACKOFF
        self.rounds += 1
        self.status(self._summary(report, time.monotonic() - started, roots))
        return True

    def _settle(self, roots: list[Path], now: Snapshot) -> Snapshot:
        """The snapshot once it has not changed for `debounce` seconds (at most MAX_DEBOUNCE)."""
        deadline = time.monotonic() + MAX_DEBOUNCE
        while time.monotonic() < deadline and not self._stop.wait(self.debounce):
            again = scan(roots)
            if again == now:
                break
            now = again
        return now

    def _summary(self, report: Any, took: float, roots: list[Path]) -> str:
        found = sum(1 for r in roots if r.exists())
        skipped = f", {len(report.skipped)} skipped" if report.skipped else ""
        skipped += f", {report.excluded} sessions excluded" if report.excluded else ""
        return (
            f"{datetime.now().strftime('%H:%M:%S')} following {found} of {len(roots)} homes: "
            f"{report.files_changed} files changed, {report.turns_added} turns added, "
            f"{report.turns_updated} updated{skipped} ({took:.1f} s)"
        )
