"""Worker processes for refining sessions, safe from any caller: a script, a notebook, a REPL.

Workers are started with `spawn`, which re-imports the caller's main script in every worker. A
script without an `if __name__ == "__main__":` guard would then run its ingest again in each
worker (the pool breaks with `BrokenProcessPool`), so such a caller gets one process and a one-line
warning. A pool that breaks anyway falls back to one process for the jobs it had not finished.
A worker whose parent dies (killed mid-ingest) exits within a second instead of idling forever.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context, parent_process
from pathlib import Path
from typing import Any

PARALLEL_BYTES = 32 << 20  # below this, starting worker processes costs more than it saves
UNGUARDED = (
    "archive-mcp: refining in one process: the calling script has no "
    '`if __name__ == "__main__":` guard, which worker processes need (add one to use {n})'
)


def freeze_imports() -> None:
    """Take the objects alive now out of the cyclic garbage collector's sight, once a process.

    Called where parsing starts (an ingest, a refine, a worker), after the package's imports:
    polars, numpy and scipy leave ~73,000 tracked objects that live as long as the process, and
    every full collection walks all of them (~35-40 ms of CPU). Parsing makes many small objects,
    so a long ingest collects often: a 10 MB Aider history's collections took 355 ms, 133-162 ms
    frozen; a parse loop, 32% of the Aider reader's time, 7% frozen (bench/results/readers.md;
    an ingest of 1 MB makes no full collection either way). Frozen objects are still freed by reference counting; only a
    cycle among them that is dropped later is never collected, so this runs once a process (the
    first call), not at every ingest of a long-lived server. No `gc.collect()` first: right after
    the imports it finds nothing and costs ~40 ms (measured)."""
    if gc.get_freeze_count() == 0:
        gc.freeze()


def start_worker(parent: int) -> None:
    """Worker initializer: the package's imports frozen (`freeze_imports`) and the worker tied
    to its parent's life (`exit_with_parent`)."""
    freeze_imports()
    exit_with_parent(parent)


def exit_with_parent(parent: int) -> None:
    """Worker initializer: a watcher thread that ends the worker once `parent` is gone (the
    worker is then re-parented). A killed ingest otherwise leaves its workers blocked forever on
    the job queue."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="archive-mcp-parent-watch", daemon=True).start()


def main_is_spawn_safe() -> bool:
    """True when `spawn` workers will not re-run the caller's top-level code.

    A REPL, a notebook or `python -c` has no main file to re-run; a main file is safe when it
    guards its work with `__name__ == "__main__"`.
    """
    if parent_process() is not None:
        return False  # already a worker: never start workers from a worker
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path:
        return True
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "__main__" in source


class JobPool:
    """Runs `fn(job, extra)` over jobs, in worker processes when there is enough work."""

    def __init__(self, fn: Callable[..., Any], workers: int) -> None:
        self.fn = fn
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._warned = False

    def _parallel(self, jobs: list[Any], extra: Any, size: int) -> bool:
        if extra is not None or len(jobs) < 2 or size < PARALLEL_BYTES or self.workers < 2:
            return False
        if not main_is_spawn_safe():
            if not self._warned:
                warnings.warn(UNGUARDED.format(n=self.workers), RuntimeWarning, stacklevel=4)
                self._warned = True
            return False
        return True

    def run(
        self, jobs: list[Any], extra: Any, size: int, progress: Callable[[str, int, int], None]
    ) -> Iterator[Any]:
        """Outcomes in job order. `size` is the work in bytes; `extra` (a summarizer) forces one
        process, as it may hold a connection that cannot cross processes."""
        done = 0
        if self._parallel(jobs, extra, size):
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=get_context("spawn"),
                    initializer=start_worker,
                    initargs=(os.getpid(),),
                )
            try:
                for res in self._pool.map(self.fn, jobs, chunksize=4):
                    done += 1
                    progress("refine", done, len(jobs))
                    yield res
            except BrokenProcessPool:
                warnings.warn(
                    "archive-mcp: worker processes failed; refining the rest in one process",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self.close()
                self.workers = 1
        for job in jobs[done:]:
            done += 1
            progress("refine", done, len(jobs))
            yield self.fn(job, extra)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
