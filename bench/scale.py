"""Scale check: an archive of 1M turns in 10 workspaces. Does a one-workspace call stay as cheap
as in a 100k-turn archive, and does RSS stay under 1 GB?

    python bench/scale.py [--turns 1000000] [--workspaces 10] [--out bench/out/scale]
    python bench/scale.py --home DIR    # measure an archive built before (its search cache is dropped first)

`--workspaces 1` puts all the turns in one workspace: the case where one workspace's index build
and search must stay under 1 GB on their own.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from archive_mcp.synthetic.sessions import generate_share_dir

MEASURE = r"""
import json, resource, statistics, sys, time
from archive_mcp import Archive
a = Archive(sys.argv[1])
t = time.perf_counter(); spaces = a.workspaces(); list_s = time.perf_counter() - t
ws = spaces[0]
t = time.perf_counter(); a.index(ws).refresh(); build = time.perf_counter() - t
qs = ["parse_config", "retry_with_backoff empty config", "why does the CI job time out", "回退到默认值", "merge_refnied"]
times = []
for _ in range(5):
    for q in qs:
        t = time.perf_counter(); a.search(q, workspace=ws.id); times.append(time.perf_counter() - t)
t = time.perf_counter(); n = a.turns("all").select("turn").collect().height; scan_all = time.perf_counter() - t
print(json.dumps({"workspaces": len(spaces), "workspace_turns": a.index(ws).n_docs, "all_turns": n,
                  "list_workspaces_s": list_s, "index_build_or_load_s": build,
                  "hybrid_p50_ms": 1000 * statistics.median(times), "scan_all_turns_s": scan_all,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=1_000_000)
    ap.add_argument("--workspaces", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "scale")
    ap.add_argument(
        "--home", type=Path, help="an archive already ingested: only the index and search runs"
    )
    args = ap.parse_args()
    if args.home:
        for ws in (args.home / "workspaces").iterdir():
            shutil.rmtree(ws / "cache" / "search", ignore_errors=True)
        measure(args.home)
        return
    shutil.rmtree(args.out, ignore_errors=True)
    t = time.perf_counter()
    made = generate_share_dir(
        args.out / "kimi", args.turns, workspaces=args.workspaces, big_every=0, small=(100, 800)
    )
    print(
        f"generated {made['turns']} turns, {made['bytes'] / 1e9:.2f} GB in {time.perf_counter() - t:.0f} s",
        flush=True,
    )
    t = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from archive_mcp import Archive; "
            "r = Archive(sys.argv[1]).ingest(sys.argv[2]); print(r.turns_added, r.embedded)",
            str(args.out / "home"),
            str(args.out / "kimi"),
        ],
        check=True,
    )
    ingest_s = time.perf_counter() - t
    ingest_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"ingest {ingest_s:.0f} s ({made['turns'] / ingest_s:.0f} turns/s), peak RSS {ingest_rss:.0f} MB",
        flush=True,
    )
    measure(args.out / "home")


def measure(home: Path) -> None:
    """Index build (cold) or load (warm), searches and peak RSS, each in a fresh process."""
    for run in ("cold", "warm"):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(home)], check=True, capture_output=True, text=True
        )
        print(run, out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
