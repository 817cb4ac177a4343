"""Does heavy work leave the event loop free? `list_workspaces` latency over stdio and HTTP while
the same server runs a heavy call, with heavy calls in a process of their own (`offload`, the
default) and in the server's worker threads (`ARCHIVE_MCP_OFFLOAD_WORKERS=0`: how it was before).

    python bench/loop_free.py --turns 50000 --dir bench/out/loop_free [--reuse]
    python bench/loop_free.py --turns 0 --dir bench/out/loop_sample --repeat 5   # the bundled sample

The archive: one workspace of generated Kimi sessions (`generate_share_dir`), ingested with the
static model. The heavy calls: `discover_themes` on the workspace, `search_context` with a
2.6 MB query (refused by the argument cap; its body is still parsed), and a full rebuild of the
search index (the cache removed and the refined folder touched, then a short search). While one
runs, `list_workspaces` (compact) is called every 50 ms until it ends: p50, p95 and max.
Over stdio the probe shares the heavy call's session (as one agent does); over HTTP it is a
second client. Prints one JSON line per (mode, transport, heavy call).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from archive_mcp.synthetic.sessions import generate_share_dir

PROBE_EVERY = 0.05
REPEAT = 1  # runs of each heavy call (`--repeat`)


def build(root: Path, turns: int, reuse: bool) -> Path:
    home = root / "home"
    if reuse and (home / "workspaces").is_dir():
        return home
    if turns == 0:  # the bundled sample (the setting): discovery of "shop" takes seconds
        from archive_mcp import sample_archive

        shutil.rmtree(root, ignore_errors=True)
        sample_archive(home)
        return home
    shutil.rmtree(root, ignore_errors=True)
    generate_share_dir(root / "kimi", turns, workspaces=1, big_every=0, small=(100, 1500))
    script = "import sys; from archive_mcp import Archive; Archive(sys.argv[1]).ingest(sys.argv[2])"
    subprocess.run([sys.executable, "-c", script, str(home), str(root / "kimi")], check=True)
    shutil.rmtree(root / "kimi")
    return home


def workspace_dir(home: Path) -> Path:
    """The workspace with the most refined sessions."""
    dirs = [p for p in home.glob("workspaces/*/refined")]
    return max(dirs, key=lambda p: len(list(p.iterdir()))).parent


def invalidate(home: Path) -> None:
    """Make the next search rebuild the index from scratch."""
    ws = workspace_dir(home)
    shutil.rmtree(ws / "cache" / "search", ignore_errors=True)
    os.utime(ws / "refined")


def quantiles(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]
    return {
        "n": len(xs),
        "p50_ms": round(statistics.median(xs) * 1000, 1),
        "p95_ms": round(p95 * 1000, 1),
        "max_ms": round(xs[-1] * 1000, 1),
    }


def cpu_of(pid: int | None) -> float:
    """CPU seconds the server process itself has used (its pool's processes not counted):
    the work that competed with its event loop for the interpreter. 0 when unknown (stdio)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SERVER_PID: int | None = None  # the HTTP server's pid while it is measured


async def behind(heavy: Client, probe: Client, tool: str, args: dict) -> dict[str, Any]:
    lat: list[float] = []
    took: dict[str, Any] = {}

    async def run() -> None:
        t, cpu = time.perf_counter(), cpu_of(SERVER_PID)
        r = await heavy.call_tool(tool, args)
        took["s"], took["error"] = time.perf_counter() - t, r.is_error
        took["cpu"] = cpu_of(SERVER_PID) - cpu

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.sleep(0.02)
        while "s" not in took:
            t = time.perf_counter()
            await probe.call_tool("list_workspaces", {"detail": "compact"})
            lat.append(time.perf_counter() - t)
            await anyio.sleep(PROBE_EVERY)
    return {
        "call_s": round(took["s"], 2),
        "server_cpu_s": took["cpu"],
        "call_error": took["error"],
        "lat": lat,
    }


async def cases(heavy: Client, probe: Client, home: Path) -> dict[str, dict]:
    out = {}
    idle = []
    for _ in range(20):
        t = time.perf_counter()
        await probe.call_tool("list_workspaces", {"detail": "compact"})
        idle.append(time.perf_counter() - t)
    out["idle"] = quantiles(idle)
    ws = {"workspace": workspace_dir(home).name}
    huge = {"query": "retry " * 440_000, **ws}
    q = {"query": "date parser timezone", "mode": "lexical", **ws}
    for _ in range(REPEAT):
        out.setdefault("discover_themes", []).append(
            await behind(heavy, probe, "discover_themes", ws)
        )
        out.setdefault("search 2.6 MB query", []).append(
            await behind(heavy, probe, "search_context", huge)
        )
        invalidate(home)
        out.setdefault("index rebuild", []).append(await behind(heavy, probe, "search_context", q))
    return {k: merged(v) if isinstance(v, list) else v for k, v in out.items()}


def merged(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Runs of one case as one row: the probes of all runs together, the call's median time."""
    lat = [x for r in rows for x in r.pop("lat")]
    call = statistics.median(r["call_s"] for r in rows)
    return {
        "runs": len(rows),
        "call_s": round(call, 2),
        "server_cpu_s": round(statistics.median(r["server_cpu_s"] for r in rows), 2),
        "call_error": rows[0]["call_error"],
        **quantiles(lat),
    }


def server_env(home: Path, offload: bool) -> dict[str, str]:
    return {
        **os.environ,
        "ARCHIVE_MCP_HOME": str(home),
        "ARCHIVE_MCP_OFFLOAD_WORKERS": "1" if offload else "0",
    }


async def over_stdio(home: Path, offload: bool) -> dict[str, dict]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "archive_mcp", "serve", "--no-follow"],
        env=server_env(home, offload),
        cwd=str(home),
    )
    async with Client(params, read_timeout_seconds=600) as client:
        return await cases(client, client, home)


async def over_http(home: Path, offload: bool) -> dict[str, dict]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "archive_mcp", "serve", "--http", "--no-auth", "--no-follow"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)],
        env=server_env(home, offload),
        cwd=str(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    global SERVER_PID
    SERVER_PID = proc.pid
    try:
        for _ in range(1200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await anyio.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, read_timeout_seconds=600) as a, Client(url) as b:
            return await cases(a, b, home)
    finally:
        SERVER_PID = None
        proc.terminate()
        proc.wait(30)


async def main(args: argparse.Namespace) -> None:
    home = build(args.dir, args.turns, args.reuse)
    for offload in (False, True) if args.modes == "both" else (args.modes == "offload",):
        for name, fn in (("stdio", over_stdio), ("http", over_http)):
            rows = await fn(home, offload)
            for case, row in rows.items():
                mode = "offload" if offload else "threads"
                print(
                    json.dumps({"mode": mode, "transport": name, "case": case, **row}), flush=True
                )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--dir", type=Path, default=Path(__file__).parent / "out" / "loop_free")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--modes", choices=["both", "offload", "threads"], default="both")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    REPEAT = args.repeat
    anyio.run(main, args)
