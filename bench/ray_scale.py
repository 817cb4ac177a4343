"""Ray engine vs the local process pool on one machine, and throughput per added worker.

    python bench/ray_scale.py [--turns 50000] [--minilm-turns 2000] [--out bench/out/ray_scale]

Steps (each in a fresh subprocess; Ray is a fresh local instance with `num_cpus` = workers):
1. full ingest (copy, parse, refine, Parquet, static embeddings): local pool vs Ray, 2 workers;
2. batch refine of every session (`refine --all --force`, static embeddings): local vs Ray with
   1 and 2 worker processes -- the per-worker rate the projection for a cluster starts from;
3. MiniLM embedding rate of one Ray actor on this CPU (`--minilm-turns` turns re-embedded;
   the steady rate is measured between the first and the last finished embedding call, so the
   model load is not in it).
The driver's own CPU time per turn is recorded too: it bounds how far one driver scales.
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

STEP = r"""
import json, resource, sys, time
args = json.loads(sys.argv[1])
from archive_mcp import Archive
startup = 0.0
if args["engine"] == "ray":
    import ray
    t = time.perf_counter()
    ray.init(address="local", num_cpus=args["workers"], include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - t
archive = Archive(args["home"], embedder=args["embedder"])
ticks = []  # (time, turns embedded so far) at each finished embedding call
def progress(label, done, total):
    if label == "embed":
        ticks.append((time.perf_counter(), done))
t = time.perf_counter()
if args["op"] == "ingest":
    r = archive.ingest(args["share"], engine=args["engine"], workers=args["workers"],
                       progress=progress)
    turns, embedded, error = r.turns_added, r.embedded, r.embed_error
else:
    r = archive.refine("all", force=True, engine=args["engine"], workers=args["workers"],
                       progress=progress)
    turns, embedded, error = r.turns, r.embedded, r.embed_error
seconds = time.perf_counter() - t
me = resource.getrusage(resource.RUSAGE_SELF)
steady = None if args["engine"] != "ray" else ((ticks[-1][1] - ticks[0][1]) / (ticks[-1][0] - ticks[0][0])) if len(ticks) > 1 else None
print(json.dumps({"seconds": seconds, "embed_steady_per_s": steady, "startup_s": startup, "turns": turns, "embedded": embedded,
                  "error": error, "driver_cpu_s": me.ru_utime + me.ru_stime,
                  "driver_rss_mb": me.ru_maxrss / 1024}))
"""


def step(**args: object) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", STEP, json.dumps(args)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["turns_per_s"] = res["turns"] / res["seconds"]
    print(
        json.dumps({k: args[k] for k in ("op", "engine", "workers", "embedder")} | res), flush=True
    )
    return res


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--minilm-turns", type=int, default=6_000)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "ray_scale")
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
    res: dict[str, object] = {
        "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
        "generated": made,
    }
    common = {"share": str(share), "embedder": "static"}
    res["ingest_local_2"] = step(
        op="ingest", engine="local", workers=2, home=str(args.out / "local"), **common
    )
    res["ingest_ray_2"] = step(
        op="ingest", engine="ray", workers=2, home=str(args.out / "ray"), **common
    )
    home = args.out / "ray"
    res["bytes"] = {
        "raw": du(share),
        "refined": sum(du(p) for p in home.rglob("refined")),
        "embeddings": sum(du(p) for p in home.rglob("embeddings")),
    }
    for workers in (1, 2):
        for engine in ("local", "ray"):
            res[f"refine_{engine}_{workers}"] = step(
                op="refine", engine=engine, workers=workers, home=str(home), **common
            )
    if args.minilm_turns:
        # One Ray actor re-embedding with the full MiniLM on CPU: a fresh home with enough sessions.
        small = args.out / "minilm"
        generate_share_dir(small / "kimi", args.minilm_turns, seed=11)
        step(
            op="ingest",
            engine="local",
            workers=1,
            home=str(small / "home"),
            share=str(small / "kimi"),
            embedder=None,
        )
        res["minilm_ray_1"] = step(
            op="refine",
            engine="ray",
            workers=1,
            home=str(small / "home"),
            share=str(small / "kimi"),
            embedder="minilm",
        )
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
