"""The Ray engine: parse + refine as Ray tasks, embedding in a pool of Ray actors.

The driver (the process that called `Archive.ingest` or `Archive.refine`) keeps everything that
needs one writer: workspace locks, `state/ingest.json`, the report. Each session is one task on a
CPU worker; it writes that session's refined Parquet atomically, exactly as the local engine
does (the same function runs), and returns bookkeeping plus the texts to embed. Embedding runs
in actors that load the model once each (one GPU each when the cluster has GPUs and the model
can use one); an actor call embeds whole sessions of one workspace and writes their vectors, so
no two writers ever touch one file. A task whose worker dies is retried (`TASK_RETRIES`); an
embedding actor that dies is restarted and its call retried. Every write is atomic and every
job is idempotent, so a retry or a re-run after Ctrl-C gives the same files.

Every worker needs archive-mcp (with the `embed` extra when it embeds) installed, and the archive
home mounted at the same path as on the driver; see the README.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from archive_mcp.errors import InvalidArgument
from archive_mcp.ingest.jobs import EMBED_BATCH, EmbedItem, Progress, embed_rows
from archive_mcp.ingest.runners import J, Meter, R
from archive_mcp.ingest.workers import freeze_imports
from archive_mcp.refiners.embed import Embedder, EmbedderUnavailable, MiniLMEmbedder, make_embedder
from archive_mcp.workspaces import Workspace

INSTALL_HINT = "pip install 'agent-archive-mcp[ray]'"
TASK_RETRIES = 3  # a task whose worker process or node dies runs again, this many times at most
ACTOR_RESTARTS = 3  # an embedding actor that dies is restarted (and its call retried)
STOP_GRACE = 120.0  # seconds to wait, after Ctrl-C or an error, for running work to stop
CPUS_PER_CPU_ACTOR = 8  # without GPUs: one embedding actor per this many cluster CPUs

Hook = Callable[[str, str], None]  # (stage "refine" | "embed", session id): fault injection


def import_ray() -> Any:
    """Ray, or a clear error naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise InvalidArgument(
            f"the ray engine needs Ray, which is an optional extra: {INSTALL_HINT}"
        ) from exc
    return ray


def run_job(fn: Callable[[J], R], job: J, hook: Hook | None) -> R:
    """What a Ray task runs: one session's job (the same function the local engine runs), in a
    worker whose imports are frozen first (`freeze_imports`: once a process)."""
    freeze_imports()
    if hook is not None:
        hook("refine", str(getattr(job, "session_id", "")))
    return fn(job)


class EmbedWorker:
    """An embedding actor: one model per actor process, loaded on first use."""

    def __init__(self, spec: Embedder | str, hook: Hook | None) -> None:
        self.spec, self.hook = spec, hook
        self.model: Embedder | None = None

    def embed(
        self, ws: tuple[str, str, str], pending: list[tuple[str, list[EmbedItem]]], force: bool
    ) -> int:
        if self.hook is not None:
            self.hook("embed", pending[0][0])
        if self.model is None:
            self.model = worker_embedder(self.spec)
        return embed_rows(
            Workspace(ws[0], ws[1], root=Path(ws[2])), self.model, pending, force=force
        )


def worker_embedder(spec: Embedder | str) -> Embedder:
    """The embedder an actor uses: a named model is built on the worker (cached per machine)."""
    if not isinstance(spec, str):
        return spec
    if spec == "minilm":
        import ray

        return MiniLMEmbedder(device="cuda" if ray.get_gpu_ids() else "cpu")
    return make_embedder(spec)


class RayEngine:
    """Runs session jobs as Ray tasks and embeds in an actor pool (see the module docstring)."""

    def __init__(
        self,
        address: str | None,
        embedder: Embedder | str | None,
        progress: Progress,
        workers: int | None = None,
        embed_actors: int | None = None,
        hook: Hook | None = None,
    ) -> None:
        self.ray = import_ray()
        self.spec, self.progress, self.hook = embedder, progress, hook
        self.started = False
        if not self.ray.is_initialized():
            # A local instance (address None, no $RAY_ADDRESS) or an existing cluster. Workers get
            # this package's folder on their path (a no-op when it is installed normally).
            here = str(Path(__file__).resolve().parents[2])
            path = os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])
            kwargs: dict[str, Any] = {"runtime_env": {"env_vars": {"PYTHONPATH": path}}}
            if address is None and not os.environ.get("RAY_ADDRESS"):  # starts a local instance
                kwargs.update(include_dashboard=False, log_to_driver=False)
                if workers:
                    kwargs["num_cpus"] = workers
            self.ray.init(address=address, **kwargs)
            self.started = True
        resources = self.ray.cluster_resources()
        self.cpus = max(1, int(resources.get("CPU", 1)))
        self.gpus = int(resources.get("GPU", 0))
        self.window = 2 * self.cpus + 2  # tasks in flight: every CPU busy, results bounded
        self.embed_actors = embed_actors
        self.task = self.ray.remote(run_job).options(
            num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False
        )
        self.actors: list[Any] = []
        self.load: list[int] = []  # calls in flight per actor
        self.running: dict[Any, int] = {}  # refine tasks in flight -> job index
        self.embedding: dict[Any, int] = {}  # embedding calls in flight -> actor index
        self.buffer: dict[str, tuple[Workspace, bool, list[tuple[str, list[EmbedItem]]], int]] = {}
        self.embedded = 0
        self.asked = 0
        self.error: str | None = None

    # --- parse + refine ----------------------------------------------------------------------
    def run(
        self,
        fn: Callable[[J], R],
        jobs: Sequence[J],
        parallel: bool,
        turns: Callable[[R], int],
        failed: Callable[[J, BaseException], R] | None = None,
    ) -> Iterator[R]:
        """Results in job order; at most `window` tasks in flight (a cluster is always parallel).
        A job that still fails after its retries (its worker lost for good) is `failed(job,
        error)`: that session is skipped and retried by the next run, the others go on."""
        meter = Meter(self.progress, "refine", len(jobs))
        fn_ref = self.ray.put(fn)
        refs: dict[int, Any] = {}
        submitted = 0
        for i in range(len(jobs)):
            while submitted < len(jobs) and submitted < i + self.window:
                ref = self.task.remote(fn_ref, jobs[submitted], self.hook)
                refs[submitted] = ref
                self.running[ref] = submitted
                submitted += 1
            ref = refs.pop(i)
            try:
                res = self.ray.get(ref)
            except (
                self.ray.exceptions.RayTaskError,
                self.ray.exceptions.WorkerCrashedError,
                self.ray.exceptions.NodeDiedError,
            ) as exc:
                if failed is None:
                    raise
                res = failed(jobs[i], exc)
            finally:
                del self.running[ref]
            meter.tick(turns(res))
            yield res

    # --- embeddings --------------------------------------------------------------------------
    def embed(
        self, ws: Workspace, pending: list[tuple[str, list[EmbedItem]]], force: bool = False
    ) -> None:
        """Queue sessions for the actor pool; full batches of one workspace go out at once."""
        if self.spec is None or self.error:
            return
        for sid, items in pending:
            if not items:
                continue
            held = self.buffer.get(ws.id)
            if held is not None and held[1] != force:
                self._send(ws.id)
                held = None
            batch, count = (held[2], held[3]) if held else ([], 0)
            batch.append((sid, items))
            self.buffer[ws.id] = (ws, force, batch, count + len(items))
            if count + len(items) >= EMBED_BATCH:
                self._send(ws.id)

    def _send(self, ws_id: str) -> None:
        ws, force, batch, count = self.buffer.pop(ws_id)
        if self.error:
            return
        if not self.actors:
            self._start_actors()
        while len(self.embedding) >= 2 * len(self.actors):  # bounded: texts wait in the driver
            self._collect(1)
        i = min(range(len(self.actors)), key=self.load.__getitem__)
        ref = self.actors[i].embed.remote((ws.id, ws.name, str(ws.root)), batch, force)
        self.embedding[ref] = i
        self.load[i] += 1
        self.asked += count

    def _start_actors(self) -> None:
        gpu = self.gpus > 0 and self.spec != "static"  # the static model gains nothing from a GPU
        n = self.embed_actors or (self.gpus if gpu else max(1, self.cpus // CPUS_PER_CPU_ACTOR))
        # Without a GPU an actor reserves no CPU: the static model is cheap next to refining,
        # and the refine tasks keep every core. One GPU (and one CPU to feed it) when it helps.
        opts: dict[str, Any] = {"num_gpus": 1, "num_cpus": 1} if gpu else {"num_cpus": 0}
        cls = self.ray.remote(EmbedWorker).options(
            max_restarts=ACTOR_RESTARTS,
            max_task_retries=TASK_RETRIES,
            scheduling_strategy="SPREAD",
            **opts,
        )
        self.actors = [cls.remote(self.spec, self.hook) for _ in range(n)]
        self.load = [0] * n

    def _collect(self, n: int) -> None:
        ready, _ = self.ray.wait(list(self.embedding), num_returns=min(n, len(self.embedding)))
        for ref in ready:
            self.load[self.embedding.pop(ref)] -= 1
            try:
                self.embedded += self.ray.get(ref)
            except EmbedderUnavailable as exc:  # the worker's model is missing: say so, go on
                self.error = self.error or str(getattr(exc, "cause", exc))
            self.progress("embed", self.embedded, self.asked)

    def finish(self) -> tuple[int, str | None]:
        for ws_id in list(self.buffer):
            self._send(ws_id)
        while self.embedding:
            self._collect(len(self.embedding))
        done, self.embedded, self.asked, error, self.error = self.embedded, 0, 0, self.error, None
        return done, error

    # --- stopping ----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop cleanly (after Ctrl-C or an error; a no-op on the way out of a finished run):
        cancel every task and call still in flight (a running task is interrupted; its writes
        are atomic, so no file is left half written), wait up to `STOP_GRACE` until they have
        all stopped, so nothing writes after the driver releases its locks, then release the
        actors and a Ray instance this engine started."""
        try:
            waiting = list(self.running) + list(self.embedding)
            for ref in waiting:
                self.ray.cancel(ref)
            if waiting:
                self.ray.wait(waiting, num_returns=len(waiting), timeout=STOP_GRACE)
            self.running.clear()
            self.embedding.clear()
            self.buffer.clear()
            for actor in self.actors:
                self.ray.kill(actor)
            self.actors = []
        finally:
            if self.started:
                self.ray.shutdown()
                self.started = False
