"""Heavy tool work in a process of its own: theme discovery and large search-index builds.

Every tool runs on a worker thread, but CPU-bound Python there still holds the GIL against the
event loop, so every other client waits behind it (`list_workspaces` took 1.2 s behind a
`discover_themes`). These calls run in a small pool instead: spawned processes (no fork of a
server holding threads and locks), started on the first call that needs one, ended with the
server, and each gone within a second of the server's death. A worker opens the archive by its
home path and returns plain data; what it builds on disk (the search cache, suggested themes)
the server then reads. An index build goes there only when the index on disk is stale and the
workspace large (`AWAY_FILES` refined files): a small build costs less than a process start.
A pool that cannot start or breaks falls back to the calling thread, so the answer is the same;
`$ARCHIVE_MCP_OFFLOAD_WORKERS=0` keeps every call on the threads (as before; for comparison).
Nothing here imports torch: the worker needs only the embedding model's name.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any, TypeVar

from archive_mcp.archive import Archive
from archive_mcp.ingest.workers import exit_with_parent, main_is_spawn_safe
from archive_mcp.refiners.embed import EmbedderUnavailable
from archive_mcp.themes.discover.discovery import DiscoveryResult
from archive_mcp.workspaces import Workspace

POOL_WORKERS = 1  # one heavy call at a time beside the server; the others queue
WORKERS_ENV = "ARCHIVE_MCP_OFFLOAD_WORKERS"  # 0: run heavy calls on the worker threads
AWAY_FILES = 400  # refined files from which a stale index is built in the pool
R = TypeVar("R")


class Offload:
    """The server's pool for heavy calls (lazy; `close` at shutdown)."""

    def __init__(self, workers: int | None = None) -> None:
        env = os.environ.get(WORKERS_ENV, "")
        self.workers = (
            workers if workers is not None else int(env) if env.isdigit() else POOL_WORKERS
        )
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self.calls = 0  # calls that ran in the pool (for tests and benches)

    def run(self, fn: Callable[..., R], *args: Any) -> R:
        """`fn(*args)` in a worker process, waited for on this thread (which holds no GIL
        meanwhile); in this thread when workers cannot be used."""
        pool = self._get()
        if pool is None:
            return fn(*args)
        try:
            future = pool.submit(fn, *args)
        except (BrokenProcessPool, RuntimeError):  # broken, or shut down at exit
            self._drop(pool)
            return fn(*args)
        try:
            out = future.result()
        except BrokenProcessPool:  # the worker died (killed, out of memory): answer here
            self._drop(pool)
            return fn(*args)
        self.calls += 1
        return out

    def _get(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and self.workers > 0 and main_is_spawn_safe():
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=get_context("spawn"),
                    initializer=exit_with_parent,
                    initargs=(os.getpid(),),
                )
            return self._pool

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # --- the calls ---------------------------------------------------------------------------
    def discover(self, archive: Archive, ws: Workspace, min_size: int) -> DiscoveryResult:
        return self.run(_discover, str(archive.home), archive._model_name(), ws.id, min_size)

    def fresh_indexes(self, archive: Archive, targets: Iterable[Workspace]) -> None:
        """Build, in the pool, the stale search index of each large workspace in `targets`; the
        search that follows loads it from disk (small ones are left to that search)."""
        for ws in targets:
            if _large(ws) and archive.index(ws).needs_build():
                self.run(_build_index, str(archive.home), archive._model_name(), ws.id)


def _large(ws: Workspace) -> bool:
    try:
        with os.scandir(ws.refined_dir) as it:
            return any(i >= AWAY_FILES for i, _ in enumerate(it))
    except OSError:
        return False


# --- in the worker process -------------------------------------------------------------------
class _Named:
    """The embedding model by its name only: discovery and index builds read stored vectors."""

    def __init__(self, name: str) -> None:
        self.name = name

    def embed(self, texts: list[str]) -> Any:
        raise EmbedderUnavailable("no embedding model in the offload worker")


_archives: dict[tuple[str, str | None], Archive] = {}


def _archive(home: str, model: str | None) -> Archive:
    """The worker's archive of `home` (kept: its index cache serves the next call)."""
    key = (home, model)
    if key not in _archives:
        _archives[key] = Archive(home, embedder=_Named(model) if model else None)
    return _archives[key]


def _discover(home: str, model: str | None, ws_id: str, min_size: int) -> DiscoveryResult:
    return _archive(home, model).discover_themes(ws_id, min_size)


def _build_index(home: str, model: str | None, ws_id: str) -> float:
    archive = _archive(home, model)
    return archive.index(archive.workspace(ws_id)).refresh().build_seconds
