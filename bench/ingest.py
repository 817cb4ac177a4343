"""Ingest benchmark: parse+refine throughput, embedding throughput, no-op re-ingest, peak RSS.

    python bench/ingest.py [--turns 60000] [--out bench/out]

Each measured step runs in a fresh subprocess so its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from archive_mcp.synthetic.sessions import generate_share_dir

PARSE_REFINE = """
import json, sys, time
from pathlib import Path
from archive_mcp.ingest.jobs import turn_rows
from archive_mcp.refiners import kimi_cli
files = sorted(Path(sys.argv[1]).glob("sessions/*/*/wire.jsonl"))
t = time.perf_counter()
turns = 0
for f in files:
    result = kimi_cli.parse_wire(f)
    turns += len(turn_rows("w", "kimi", f.parent.name, "main", str(f), result.turns, frozenset(), None))
print(json.dumps({"seconds": time.perf_counter() - t, "turns": turns}))
"""

STEP = """
import json, sys, time
from archive_mcp import Archive
embed = sys.argv[2] == "embed"
t = time.perf_counter()
workers = int(sys.argv[4])
report = Archive(sys.argv[3], embedder="static" if embed else None).ingest(sys.argv[1], embed=embed, workers=workers)
import resource
print(json.dumps({"seconds": time.perf_counter() - t, "turns": report.turns_added,
                  "embedded": report.embedded, "bytes": report.bytes_archived,
                  "changed": report.files_changed, "skipped": len(report.skipped),
                  "rss_main_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def run_step(share: Path, home: Path, mode: str, one_core: bool) -> dict:
    cmd = [sys.executable, "-c", STEP, str(share), mode, str(home), "1" if one_core else "2"]
    if one_core and shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ})
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # measured inside the step: its own peak and its largest worker's (an earlier child of this
    # process, such as the model warm-up, must not count)
    result["peak_rss_mb"] = max(result.pop("rss_main_mb"), result.pop("rss_worker_mb"))
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "ingest")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    share = args.out / "kimi"
    t = time.perf_counter()
    made = generate_share_dir(share, args.turns)
    print(
        f"generated {made['turns']} turns in {made['sessions']} sessions, "
        f"{made['bytes'] / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s",
        flush=True,
    )
    mb = made["bytes"] / 1e6
    # Distil/load the static model once before timing (a one-time cost per machine).
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from archive_mcp.refiners.embed import StaticEmbedder; "
            "StaticEmbedder().embed(['warm up'])",
        ],
        check=True,
        capture_output=True,
    )
    cmd = [sys.executable, "-c", PARSE_REFINE, str(share)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    pr = json.loads(
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        .stdout.strip()
        .splitlines()[-1]
    )
    print(
        f"parse + refine only (no I/O, no Parquet), 1 core: {pr['seconds']:.1f} s = {mb / pr['seconds']:.1f} MB/s, "
        f"{pr['turns'] / pr['seconds']:.0f} turns/s",
        flush=True,
    )
    cold = run_step(share, args.out / "home-noembed", "noembed", one_core=True)
    print(
        f"full ingest (copy + parse + refine + Parquet), no embeddings, 1 core: {cold['seconds']:.1f} s = {mb / cold['seconds']:.1f} MB/s, "
        f"{cold['turns'] / cold['seconds']:.0f} turns/s, peak RSS {cold['peak_rss_mb']:.0f} MB",
        flush=True,
    )
    noop = run_step(share, args.out / "home-noembed", "noembed", one_core=True)
    print(f"no-op re-ingest: {noop['seconds']:.2f} s (changed files {noop['changed']})", flush=True)
    both = run_step(share, args.out / "home-noembed-2", "noembed", one_core=False)
    print(
        f"full ingest, no embeddings, 2 worker processes: {both['seconds']:.1f} s = "
        f"{mb / both['seconds']:.1f} MB/s, {both['turns'] / both['seconds']:.0f} turns/s",
        flush=True,
    )
    warm = run_step(share, args.out / "home-embed", "embed", one_core=False)
    print(
        f"ingest + refine + static embeddings, 2 cores: {warm['seconds']:.1f} s = "
        f"{warm['turns'] / warm['seconds']:.0f} turns/s ({warm['embedded']} embedded), "
        f"peak RSS {warm['peak_rss_mb']:.0f} MB",
        flush=True,
    )
    print(
        json.dumps(
            {
                "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
                "generated": made,
                "parse_refine_1core": pr,
                "no_embed_1core": cold,
                "no_embed_2proc": both,
                "noop": noop,
                "embed": warm,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
