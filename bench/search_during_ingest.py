"""Search while another process ingests: latency and whole sessions (issue 29's target: a search
during an ingest of 50k turns answers in < 1 s p95, in-process, and returns only whole sessions).

    python bench/search_during_ingest.py --turns 50000 --preload 50000 --dir bench/out/sdi

The data: generated Kimi sessions (`generate_share_dir`, one workspace, 20-60 turns a session).
`--preload N` first archives N turns of other sessions into the same workspace (and builds its
index), as an archive in use has; then a child process runs `archive-mcp ingest` over the
`--turns` new ones (refine, static embeddings, then the workspace's search index; `--no-index`
leaves the index to the first search). This process searches the workspace the whole time
(hybrid, the default mode; a query every `--every` seconds once the workspace exists) with one
`Archive`, as the MCP server does, and times each call; a search the ingest's end overtakes is
reported apart (`overtaken_ms`). After each search it reads the index the search used: every
hit's session must have, in that index, exactly the turns it has once the ingest is over (a
session half indexed would show fewer). The baseline, same run: the same queries on the
finished archive, nothing running.

Prints one JSON line: searches during the ingest (p50 / p95 / max ms), failed calls, hits
checked and hits from sessions that were not whole, the baseline's p50 / p95, ingest wall time.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import polars as pl

from archive_mcp import Archive
from archive_mcp.synthetic.sessions import generate_share_dir

QUERIES = [
    "fix the failing test",
    "database migration",
    "cache invalidation bug",
    "refactor the parser",
    "deploy configuration",
    "timeout in the http client",
    "add logging",
    "memory leak",
]


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * len(s)))] * 1000, 1)


def session_turns(archive: Archive, ws_id: str) -> dict[str, int]:
    """Turns per session in the index the last search of `ws_id` used (live rows only)."""
    ws = archive.workspace(ws_id)
    idx = archive.index(ws)
    if not idx.meta.height:
        return {}
    live = idx.meta.filter(pl.Series(idx.alive))
    return dict(live.group_by("session_id").len().iter_rows())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50_000)
    ap.add_argument("--dir", type=Path, default=Path(__file__).parent / "out" / "search_ingest")
    ap.add_argument("--preload", type=int, default=0, help="turns archived before the ingest")
    ap.add_argument("--every", type=float, default=0.2, help="seconds between searches")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-index", action="store_true", help="the ingest leaves the index to search")
    ap.add_argument("--trail", type=Path, help="write one JSON line per search here")
    args = ap.parse_args()
    root: Path = args.dir
    shutil.rmtree(root, ignore_errors=True)
    share, home = root / "kimi", root / "home"
    generate_share_dir(share, args.turns, workspaces=1, big_every=0, small=(100, 1500))
    if args.preload:
        old = root / "kimi-before"
        generate_share_dir(old, args.preload, seed=args.seed + 1, workspaces=1, big_every=0)
        before = Archive(home)
        before.ingest(old)
        before.search(QUERIES[0], workspace=before.workspaces()[0].id)  # its index built
    rng = random.Random(args.seed)
    cli = [sys.executable, "-m", "archive_mcp", "--home", str(home), "ingest", str(share)]
    t0 = time.perf_counter()
    child = subprocess.Popen(
        cli + (["--no-index"] if args.no_index else []), stdout=subprocess.DEVNULL
    )
    archive = Archive(home)
    _ = archive.embedder  # loaded before the clock starts, as the server's warm-up does
    during: list[float] = []
    after: list[float] = []  # the searches the ingest's end overtook (the first one rebuilds)
    seen: list[tuple[str, int]] = []  # (session, its turns in the index the search used)
    failed, errors, ws_id = 0, [], None
    trail: list[dict] = []  # one row per search (`--trail FILE` writes them)
    while child.poll() is None:
        time.sleep(args.every)
        if ws_id is None:
            found = Archive(home, embedder=None).workspaces()
            if not found:
                continue
            ws_id = found[0].id
        query = rng.choice(QUERIES)
        try:
            t = time.perf_counter()
            hits = archive.search(query, workspace=ws_id, limit=10)
            took = time.perf_counter() - t
            if child.poll() is not None:  # the ingest ended meanwhile: not a search during it
                after.append(took)
                continue
            during.append(took)
            idx = archive.index(archive.workspace(ws_id))
            trail.append(
                {
                    "at_s": round(t - t0, 2),
                    "ms": round(during[-1] * 1000, 1),
                    "behind": getattr(idx, "behind", None) is not None,  # (older code: never)
                    "docs": idx.n_docs,
                    "build_s": round(idx.build_seconds, 2),
                }
            )
            counts = session_turns(archive, ws_id)
            seen.extend((h.session_id, counts.get(h.session_id, 0)) for h in hits)
        except Exception:  # noqa: BLE001 - counted and reported
            failed += 1
            errors.append(traceback.format_exc(limit=3))
    ingest_s = time.perf_counter() - t0
    if child.returncode != 0:
        raise SystemExit(f"the ingest failed (exit {child.returncode})")
    final = Archive(home)
    assert ws_id is not None, "the workspace never appeared"
    whole = dict(final.turns(ws_id).group_by("session_id").len().collect().iter_rows())
    final.search(QUERIES[0], workspace=ws_id, limit=10)  # the model loaded, the index built
    base_lat = []
    for _ in range(max(20, min(len(during), 200))):
        t = time.perf_counter()
        final.search(rng.choice(QUERIES), workspace=ws_id, limit=10)
        base_lat.append(time.perf_counter() - t)
    if args.trail:
        args.trail.write_text("".join(json.dumps(r) + "\n" for r in trail), encoding="utf-8")
    not_whole = sum(1 for s, n in seen if whole.get(s) != n)
    print(
        json.dumps(
            {
                "turns": args.turns,
                "preload": args.preload,
                "ingest_s": round(ingest_s, 1),
                "searches": len(during),
                "p50_ms": pct(during, 0.5),
                "p95_ms": pct(during, 0.95),
                "max_ms": pct(during, 1.0),
                "failed": failed,
                "hits_checked": len(seen),
                "hits_not_whole": not_whole,
                "baseline_p50_ms": pct(base_lat, 0.5),
                "baseline_p95_ms": pct(base_lat, 0.95),
                "mean_during_ms": round(statistics.mean(during) * 1000, 1) if during else None,
                "answered_behind": sum(r["behind"] for r in trail),
                "overtaken_ms": [round(x * 1000, 1) for x in after],
                "slowest": sorted(trail, key=lambda r: -r["ms"])[:3],
                "errors": errors[:3],
            }
        )
    )


if __name__ == "__main__":
    main()
