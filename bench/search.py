"""Search latency per mode at 10k and 100k turns, index build time, RSS, vs `rg` over raw logs,
and the MCP server's `initialize` round trip vs `import sentence_transformers`.

    python bench/search.py [--sizes 10000 100000] [--out bench/out/search] [--reuse]

Each size runs in a fresh subprocess so its peak RSS is its own. Queries mix identifiers,
typos, paraphrases and Chinese.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from archive_mcp.synthetic.sessions import generate_share_dir

QUERIES = [
    "parse_config",
    "retry_with_backoff empty config",
    "SessionStore.flush",
    "build_indx",
    "merge_refnied",
    "why does the CI job time out",
    "peak memory dropped",
    "回退到默认值",
    "重构成流式处理",
    "decide cache or recompute",
    "AuthMiddleware.check fails",
    "render_timeline test",
    "tokenize_cjk regression",
    "export_csv streams rows",
    "N+1 query batching",
    "load_batches",
]

MEASURE = r"""
import json, resource, statistics, sys, time
from archive_mcp import Archive
home, queries = sys.argv[1], json.loads(sys.argv[2])
a = Archive(home)
ws = a.workspaces()[0]
t = time.perf_counter(); idx = a.index(ws).refresh(); cold = time.perf_counter() - t
t = time.perf_counter(); a.search("warm up", workspace=ws.id, limit=10); first = time.perf_counter() - t
out = {"docs": idx.n_docs, "index_load_or_build_s": cold, "first_query_s": first, "modes": {}}
for mode in ("lexical", "fuzzy", "semantic", "hybrid"):
    times = []
    for _ in range(3):
        for q in queries:
            t = time.perf_counter(); a.search(q, workspace=ws.id, limit=10, mode=mode); times.append(time.perf_counter() - t)
    times.sort()
    out["modes"][mode] = {"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * times[int(0.95 * len(times)) - 1]}
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def rg_times(raw: Path, queries: list[str]) -> dict[str, float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        subprocess.run(["rg", "-i", "-F", "-l", q, str(raw)], capture_output=True)
        times.append(time.perf_counter() - t)
    times.sort()
    return {
        "p50_ms": 1000 * statistics.median(times),
        "p95_ms": 1000 * times[int(0.95 * len(times)) - 1],
    }


async def initialize_time(home: Path) -> float:
    from mcp import Client, StdioServerParameters

    env = {**os.environ, "ARCHIVE_MCP_HOME": str(home)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "archive_mcp", "serve"], env=env
    )
    t = time.perf_counter()
    async with Client(params, mode="legacy") as client:  # legacy: a real initialize handshake
        elapsed = time.perf_counter() - t
        await client.list_tools()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "search")
    ap.add_argument(
        "--reuse", action="store_true", help="measure the archives an earlier run built (no ingest)"
    )
    args = ap.parse_args()
    results = {}
    for size in args.sizes:
        root = args.out / str(size)
        ingest_s = None
        if args.reuse and (root / "home").is_dir():
            made = {
                "bytes": sum(p.stat().st_size for p in (root / "kimi").rglob("*") if p.is_file())
            }
        else:
            shutil.rmtree(root, ignore_errors=True)
            made = generate_share_dir(
                root / "kimi", size, workspaces=1, big_every=0, small=(100, 1500)
            )
            t = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; from archive_mcp import Archive; "
                    "Archive(sys.argv[1]).ingest(sys.argv[2])",
                    str(root / "home"),
                    str(root / "kimi"),
                ],
                check=True,
            )
            ingest_s = time.perf_counter() - t
        # index build (first refresh) is measured inside MEASURE as index_load_or_build_s
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(root / "home"), json.dumps(QUERIES)],
            check=True,
            capture_output=True,
            text=True,
        )
        res = json.loads(out.stdout.strip().splitlines()[-1])
        res["ingest_s"] = ingest_s
        res["raw_mb"] = made["bytes"] / 1e6
        res["rg"] = rg_times(root / "home" / "workspaces", QUERIES)
        # a second run loads the persisted index instead of building it
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(root / "home"), json.dumps(QUERIES)],
            check=True,
            capture_output=True,
            text=True,
        )
        warm = json.loads(out.stdout.strip().splitlines()[-1])
        res["index_load_s"] = warm["index_load_or_build_s"]
        res["warm_modes"] = warm["modes"]
        res["warm_peak_rss_mb"] = warm["peak_rss_mb"]
        results[size] = res
        print(f"{size} turns: {json.dumps(res)}", flush=True)
    home = args.out / str(args.sizes[0]) / "home"
    init = [asyncio.run(initialize_time(home)) for _ in range(3)]
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sentence_transformers"], check=True)
    st = time.perf_counter() - t
    print(
        f"initialize round trip: median {statistics.median(init):.2f} s; "
        f"python -c 'import sentence_transformers': {st:.2f} s; ratio {statistics.median(init) / st:.2f}"
    )
    print(
        json.dumps({"sizes": results, "initialize_s": init, "import_sentence_transformers_s": st})
    )


if __name__ == "__main__":
    main()
