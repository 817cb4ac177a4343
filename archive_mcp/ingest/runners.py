"""Where session jobs run and turns are embedded: `LocalEngine` (this machine's processes, the
spawn-safe `JobPool`) or `archive_mcp.ingest.ray_engine.RayEngine` (a Ray cluster)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from archive_mcp.ingest import workers as _workers
from archive_mcp.ingest.jobs import EmbedItem, Progress, embed_rows
from archive_mcp.ingest.workers import JobPool
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable
from archive_mcp.workspaces import Workspace

J = TypeVar("J")
R = TypeVar("R")


class Engine(Protocol):
    """Where session jobs run and turns are embedded. The caller (the driver) keeps the
    workspace locks and the ingest state; jobs write their session's Parquet files."""

    def run(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        parallel: bool,
        turns: Callable[[R], int],
        failed: Callable[[J, BaseException], R] | None = None,
    ) -> Iterator[R]:
        """Results of `fn(job)` in job order; `parallel` says the batch is worth spreading out.
        A job whose worker is lost for good becomes `failed(job, error)` when given."""
        ...

    def embed(
        self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]], force: bool = False
    ) -> None:
        """Embed (possibly later, elsewhere) turns whose content changed since their last vector."""
        ...

    def finish(self) -> tuple[int, str | None]:
        """Wait for every embedding asked for; (turns embedded, the first embedding error)."""
        ...

    def close(self) -> None:
        """Release what the engine started (worker pools, a Ray instance it started itself)."""
        ...


class _Call:
    """`fn(job)` in the `fn(job, extra)` shape `JobPool` calls (picklable when `fn` is)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, job: Any, extra: Any = None) -> Any:
        return self.fn(job)


class LocalEngine:
    """Jobs in spawned worker processes on this machine (`JobPool`: inline when small or when the
    calling script cannot spawn workers safely); embeddings inline."""

    def __init__(self, workers: int | None, embedder: Embedder | None, progress: Progress) -> None:
        import os

        self.workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        self.embedder = embedder
        self.progress = progress
        self.embedded = 0
        self.error: str | None = None
        self._pools: list[JobPool] = []

    def run(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        parallel: bool,
        turns: Callable[[R], int],
        failed: Callable[[J, BaseException], R] | None = None,
    ) -> Iterator[R]:
        meter = Meter(self.progress, "refine", len(jobs))
        pool = JobPool(_Call(fn), self.workers)
        self._pools.append(pool)
        size = _workers.PARALLEL_BYTES if parallel else 0
        try:
            for res in pool.run(list(jobs), None, size, lambda label, done, total: None):
                meter.tick(turns(res))
                yield res
        finally:
            pool.close()
            self._pools.remove(pool)

    def embed(
        self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]], force: bool = False
    ) -> None:
        if self.embedder is None or not pending or self.error:
            return
        try:
            self.embedded += embed_rows(ws, self.embedder, pending, self.progress, force=force)
        except EmbedderUnavailable as exc:
            self.error = str(exc)

    def finish(self) -> tuple[int, str | None]:
        done, self.embedded, error, self.error = self.embedded, 0, self.error, None
        return done, error

    def close(self) -> None:
        for pool in self._pools:
            pool.close()


class Meter:
    """Progress in sessions done / total, with the turns per second so far in the label."""

    def __init__(self, progress: Progress, label: str, total: int) -> None:
        self.progress, self.label, self.total = progress, label, total
        self.done = self.turns = 0
        self.start = time.monotonic()

    def tick(self, turns: int) -> None:
        self.done += 1
        self.turns += turns
        rate = self.turns / max(time.monotonic() - self.start, 1e-3)
        self.progress(f"{self.label} · {rate:,.0f} turns/s", self.done, self.total)
