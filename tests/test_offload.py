"""Heavy MCP calls run where they cannot hold the GIL against the event loop (`mcp/offload.py`):
theme discovery and large index builds in a spawned worker process, the rest on threads."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from archive_mcp import Archive, sample_archive
from archive_mcp.mcp import offload
from archive_mcp.mcp.offload import Offload
from archive_mcp.mcp.server import build_server
from archive_mcp.search.index import WorkspaceIndex

CWD = "/home/alice/projects/webapp/src"


def _double(x: int) -> int:
    return 2 * x


def test_without_workers_a_call_runs_on_the_calling_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(offload.WORKERS_ENV, "0")
    pool = Offload()
    assert pool.workers == 0
    assert pool.run(_double, 21) == 42
    assert pool.calls == 0 and pool._pool is None  # nothing was started
    pool.close()


def test_an_index_needs_a_build_only_when_the_refined_files_changed(archive: Archive) -> None:
    ws = archive.workspaces()[0]
    idx = archive.index(ws)
    assert idx.needs_build()  # never built
    idx.refresh()
    assert not idx.needs_build()
    other = WorkspaceIndex(ws, idx.model)  # another process's view: the cache on disk is fresh
    assert not other.needs_build()
    os.utime(ws.refined_dir, ns=(1, 1))  # as a refined file written or purged would
    assert idx.needs_build() and other.needs_build()


@pytest.mark.slow
@pytest.mark.anyio
async def test_list_workspaces_answers_while_a_cpu_bound_discovery_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real clustering work (the sample's planted themes), not a sleep: the loop answers
    `list_workspaces` all along, because the discovery runs in the pool's process."""
    archive = sample_archive(tmp_path / "sample", embed=False)
    pools: list[Offload] = []
    real_run = Offload.run

    def spy(self: Offload, fn: Any, *args: Any) -> Any:
        pools.append(self)
        return real_run(self, fn, *args)

    monkeypatch.setattr(Offload, "run", spy)
    async with Client(build_server(archive, cwd=CWD)) as client:
        await client.call_tool("list_workspaces", {"detail": "compact"})
        done: dict[str, Any] = {}

        async def discover() -> None:
            done["result"] = await client.call_tool("discover_themes", {"workspace": "shop"})

        latencies: list[float] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(discover)
            while "result" not in done:
                t = time.perf_counter()
                r = await client.call_tool("list_workspaces", {"detail": "compact"})
                latencies.append(time.perf_counter() - t)
                assert not r.is_error
                await anyio.sleep(0.02)
    found = done["result"]
    assert not found.is_error and found.structured_content["themes"], found.content[0].text
    assert pools and pools[0].calls == 1  # it ran in the worker process
    assert len(latencies) >= 5  # the loop answered while the discovery ran
    latencies.sort()
    assert latencies[int(0.95 * (len(latencies) - 1))] < 0.5, latencies[-5:]
