"""The MCP face under concurrency: how long a second client waits for `list_workspaces` (and
`list_tools`) while another client's call is running, over streamable HTTP, on the bundled sample.

    python bench/faces.py [--runs 5]

The concurrent calls are real ones: `discover_themes` on the busiest workspace and a
`search_context` whose query is 2.6 MB (now refused by validation at once) or 1,900 characters
(searched). Before the faces were reworked, blocking tools ran on the event loop and the second
client waited for the whole call (24.7 s behind the 2.6 MB query, 1.9 s behind discover_themes).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import anyio
from mcp import Client

from archive_mcp import sample_archive


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def behind(url: str, tool: str, args: dict) -> tuple[float, float, float]:
    """(seconds the slow call took, list_workspaces latency, list_tools latency) while it runs."""
    async with Client(url) as first, Client(url) as second:
        await second.call_tool("list_workspaces", {"detail": "compact"})
        took: dict[str, float] = {}

        async def slow() -> None:
            t = time.perf_counter()
            await first.call_tool(tool, args)
            took["slow"] = time.perf_counter() - t

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            await anyio.sleep(0.05)
            t = time.perf_counter()
            await second.call_tool("list_workspaces", {"detail": "compact"})
            lw = time.perf_counter() - t
            t = time.perf_counter()
            await second.list_tools()
            lt = time.perf_counter() - t
    return took["slow"], lw, lt


async def run(runs: int) -> None:
    home = tempfile.mkdtemp(prefix="archive-mcp-bench-faces-")
    sample_archive(home)
    port = free_port()
    env = {**os.environ, "ARCHIVE_MCP_HOME": home}
    proc = subprocess.Popen(
        [sys.executable, "-m", "archive_mcp", "serve", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(1200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await anyio.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url) as client:
            idle_lw, idle_lt = [], []
            for _ in range(runs + 1):
                t = time.perf_counter()
                await client.call_tool("list_workspaces", {"detail": "compact"})
                idle_lw.append(time.perf_counter() - t)
                t = time.perf_counter()
                await client.list_tools()
                idle_lt.append(time.perf_counter() - t)
        print(
            f"idle: list_workspaces {statistics.median(idle_lw[1:]) * 1000:.1f} ms, "
            f"list_tools {statistics.median(idle_lt[1:]) * 1000:.1f} ms (median of {runs})"
        )
        cases = {
            "discover_themes": {"workspace": "shop"},
            "search_context (2.6 MB query)": {"query": "retry " * 440_000, "workspace": "shop"},
            "search_context (1,900 chars)": {
                "query": "charge_card retries PSP timeout " * 59,
                "workspace": "shop",
            },
        }
        for label, args in cases.items():
            tool = label.split()[0]
            rows = [await behind(url, tool, args) for _ in range(runs)]
            slow, lw, lt = (statistics.median(c) for c in zip(*rows, strict=True))
            print(
                f"{label}: call {slow * 1000:.0f} ms; list_workspaces behind it {lw * 1000:.1f} ms, "
                f"list_tools {lt * 1000:.1f} ms (median of {runs})"
            )
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    anyio.run(run, ap.parse_args().runs)
