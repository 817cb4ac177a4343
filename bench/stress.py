"""Readers against writers across processes: ingests of growing logs, purges, forced refines and
explicit index rebuilds in one process; a loop of searches, `load_turn_context` calls and
`trace_theme` calls in another; every failed call is counted, and every answer is checked
against a quiescent run.

    python bench/stress.py --seconds 60 --seed 7

The logs only grow (a purge removes the archived copy, never the source), so a turn's text is
the same whenever it is read: after the writers stop, one more ingest makes the quiescent
archive, and each turn the reader loaded during the run (and each hit and trace event) is read
there again. `wrong` counts the answers that differ (a mix of two states would): 0 is the target,
as for `failed`. Prints one JSON line. Runs in a throwaway archive home under a temp folder;
touches no real home.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

PROJECT = "/home/alice/projects/webapp"
WORDS = "date parser timezone cache index flush retry socket schema migration token".split()


def _rec(sid: str, kind: str, text: str, sec: int) -> dict:
    return {
        "type": kind,
        "sessionId": sid,
        "cwd": PROJECT,
        "version": "2.1.9",
        "timestamp": f"2026-03-20T10:{sec // 60 % 60:02d}:{sec % 60:02d}Z",
        "message": {"role": kind, "content": text},
    }


def grow(folder: Path, rng: random.Random, sessions: int) -> None:
    """Append a turn (user + assistant line) to a random session log."""
    sid = f"s{rng.randrange(sessions)}"
    path = folder / f"{sid}.jsonl"
    sec = rng.randrange(3600)
    words = " ".join(rng.choice(WORDS) for _ in range(8))
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(_rec(sid, "user", f"fix the {words}", sec)) + "\n")
        fh.write(json.dumps(_rec(sid, "assistant", f"changed the {words}", sec + 1)) + "\n")


def rebuild(archive: Any) -> None:
    """An explicit full rebuild of the search index (the cache's lock held, the folder swapped)."""
    from archive_mcp.workspaces import locked

    ws = archive.workspace("webapp")
    idx = archive.index(ws)
    with locked(ws.cache_dir):
        idx._rebuild({}, idx._dir_stamp())


def writer(home: str, claude: str, seconds: float, seed: int, sessions: int, out: mp.Queue) -> None:
    os.environ["ARCHIVE_MCP_HOME"] = home
    from archive_mcp import Archive

    rng = random.Random(seed)
    folder = Path(claude) / "projects" / ("-" + PROJECT.strip("/").replace("/", "-"))
    archive = Archive(embedder=None)
    counts = {"ingest": 0, "purge": 0, "refine": 0, "rebuild": 0, "failed": 0}
    errors: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            for _ in range(rng.randrange(1, 4)):
                grow(folder, rng, sessions)
            roll = rng.random()
            if roll < 0.25:
                archive.purge_session(f"s{rng.randrange(sessions)}", "webapp")
                counts["purge"] += 1
            elif roll < 0.4:
                sid = f"s{rng.randrange(sessions)}"
                if sid in archive.raw_files(archive.workspace("webapp")):
                    archive.refine("webapp", session=sid, force=True, embed=False)
                    counts["refine"] += 1
            elif roll < 0.5:
                rebuild(archive)
                counts["rebuild"] += 1
            report = archive.ingest(Path(claude), include_purged=True)  # purged ones come back
            counts["ingest"] += 1
            for skip in report.skipped:  # the logs only grow by whole lines: any skip is a fault
                counts["failed"] += 1
                errors.append(f"ingest skipped {skip.path}: {skip.reason}")
        except BaseException as exc:  # noqa: BLE001 - counted and reported (a panic too)
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            counts["failed"] += 1
            errors.append(traceback.format_exc(limit=3))
    out.put(("writer", counts, errors[:3], {}))


def reader(home: str, seconds: float, seed: int, out: mp.Queue) -> None:
    os.environ["ARCHIVE_MCP_HOME"] = home
    from archive_mcp import Archive
    from archive_mcp.errors import NotFound

    rng = random.Random(seed + 1)
    counts = {"search": 0, "load_turn_context": 0, "trace_theme": 0, "frames": 0, "gone": 0}
    counts["failed"] = 0
    errors: list[str] = []
    seen: dict[str, Any] = {"turns": {}, "refs": set()}  # what was answered, checked at the end
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            archive = Archive(embedder=None)  # a fresh process's view, as a CLI call has
            roll = rng.random()
            if roll < 0.15:  # the analyst's frames: turns, sessions and stats in one snapshot each
                archive.sessions("webapp").collect()
                archive.stats("webapp")
                counts["frames"] += 1
                continue
            if roll < 0.35:
                tl = archive.trace_theme("dates", "webapp")
                seen["refs"].update((e.session_id, e.turn) for e in tl.events)
                counts["trace_theme"] += 1
                continue
            hits = archive.search(rng.choice(WORDS), workspace="webapp", mode="lexical", limit=5)
            seen["refs"].update((h.session_id, h.turn) for h in hits)
            counts["search"] += 1
            if hits:
                refs = [{"session_id": h.session_id, "turn": h.turn} for h in hits[:2]]
                try:
                    ctx = archive.load_turn_context(refs, workspace="webapp", before=1, after=1)
                    for t in ctx.turns:
                        seen["turns"][f"{t.session_id}:{t.turn}"] = [t.user_text, t.assistant_text]
                    counts["load_turn_context"] += 1
                except NotFound:  # purged since the search answered: a right answer
                    counts["gone"] += 1
        except BaseException as exc:  # noqa: BLE001 - a Polars panic is a BaseException
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            counts["failed"] += 1
            errors.append(traceback.format_exc(limit=4))
    out.put(("reader", counts, errors[:3], {"turns": seen["turns"], "refs": sorted(seen["refs"])}))


def check(claude: Path, seen: dict[str, Any]) -> dict[str, int]:
    """Each answer of the run against the quiescent archive (one more ingest, nothing running)."""
    from archive_mcp import Archive

    archive = Archive(embedder=None)
    archive.ingest(claude, include_purged=True)
    have = {
        (s, t)
        for s, t in archive.turns("webapp").select("session_id", "turn").collect().iter_rows()
    }
    missing = [ref for ref in seen["refs"] if tuple(ref) not in have]
    wrong = len(missing)
    turns = seen["turns"]
    refs = [{"session_id": k.rsplit(":", 1)[0], "turn": int(k.rsplit(":", 1)[1])} for k in turns]
    now: dict[str, list[str]] = {}
    for i in range(0, len(refs), 50):
        ctx = archive.load_turn_context(refs[i : i + 50], workspace="webapp", max_chars=10**6)
        now.update({f"{t.session_id}:{t.turn}": [t.user_text, t.assistant_text] for t in ctx.turns})
    differ = [(k, v, now.get(k)) for k, v in turns.items() if now.get(k) != v]
    wrong += len(differ)
    if os.environ.get("STRESS_DEBUG"):
        print(json.dumps({"missing": missing[:5], "differ": differ[:3]}, default=str)[:3000])
    return {"checked": len(seen["refs"]) + len(turns), "wrong": wrong}


def run(seconds: float, seed: int, sessions: int = 12, root: Path | None = None) -> dict:
    base = Path(tempfile.mkdtemp(prefix="archive-stress-", dir=root))
    home, claude = base / "home", base / "claude"
    os.environ["ARCHIVE_MCP_HOME"] = str(home)
    folder = claude / "projects" / ("-" + PROJECT.strip("/").replace("/", "-"))
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    for i in range(sessions):
        with open(folder / f"s{i}.jsonl", "w", encoding="utf-8") as fh:
            fh.write(json.dumps(_rec(f"s{i}", "user", "fix the date parser", i)) + "\n")
            fh.write(json.dumps(_rec(f"s{i}", "assistant", "done", i + 1)) + "\n")
    for _ in range(sessions):
        grow(folder, rng, sessions)
    from archive_mcp import Archive

    first = Archive(embedder=None)
    first.ingest(claude)
    first.tag_theme("dates", "webapp", seeds=["date parser"], min_score=0.0)
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=writer, args=(str(home), str(claude), seconds, seed, sessions, out)),
        ctx.Process(target=reader, args=(str(home), seconds, seed, out)),
    ]
    for p in procs:
        p.start()
    results = {
        name: (counts, errors, seen) for name, counts, errors, seen in (out.get() for _ in procs)
    }
    for p in procs:
        p.join()
    counts = {**results["writer"][0], **results["reader"][0]}
    counts["failed"] = results["writer"][0]["failed"] + results["reader"][0]["failed"]
    counts.update(check(claude, results["reader"][2]))
    return {"counts": counts, "errors": results["writer"][1] + results["reader"][1]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=12)
    args = parser.parse_args()
    t = time.perf_counter()
    result = run(args.seconds, args.seed, args.sessions)
    result["wall_seconds"] = round(time.perf_counter() - t, 1)
    print(json.dumps(result))
