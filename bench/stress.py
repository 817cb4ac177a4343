"""Readers against writers across processes: ingests of growing logs and purges in one process,
a loop of searches and `load_turn_context` calls in another; every failed call is counted.

    python bench/stress.py --seconds 60 --seed 7

Prints one JSON line: the operation counts and the failures (0 is the target). Runs in a
throwaway archive home under a temp folder; touches no real home.
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


def writer(home: str, claude: str, seconds: float, seed: int, sessions: int, out: mp.Queue) -> None:
    os.environ["ARCHIVE_MCP_HOME"] = home
    from archive_mcp import Archive

    rng = random.Random(seed)
    folder = Path(claude) / "projects" / ("-" + PROJECT.strip("/").replace("/", "-"))
    archive = Archive(embedder=None)
    counts = {"ingest": 0, "purge": 0, "failed": 0}
    errors: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            for _ in range(rng.randrange(1, 4)):
                grow(folder, rng, sessions)
            if rng.random() < 0.25:
                sid = f"s{rng.randrange(sessions)}"
                archive.purge_session(sid, "webapp")
                counts["purge"] += 1
            archive.ingest(Path(claude))
            counts["ingest"] += 1
        except Exception:  # noqa: BLE001 - counted and reported
            counts["failed"] += 1
            errors.append(traceback.format_exc(limit=3))
    out.put(("writer", counts, errors[:3]))


def reader(home: str, seconds: float, seed: int, out: mp.Queue) -> None:
    os.environ["ARCHIVE_MCP_HOME"] = home
    from archive_mcp import Archive
    from archive_mcp.errors import NotFound

    rng = random.Random(seed + 1)
    counts = {"search": 0, "load_turn_context": 0, "gone": 0, "failed": 0}
    errors: list[str] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            archive = Archive(embedder=None)  # a fresh process's view, as a CLI call has
            hits = archive.search(rng.choice(WORDS), workspace="webapp", mode="lexical", limit=5)
            counts["search"] += 1
            if hits:
                refs = [{"session_id": h.session_id, "turn": h.turn} for h in hits[:2]]
                try:
                    archive.load_turn_context(refs, workspace="webapp", before=1, after=1)
                    counts["load_turn_context"] += 1
                except NotFound:  # purged since the search answered: a right answer
                    counts["gone"] += 1
        except Exception:  # noqa: BLE001
            counts["failed"] += 1
            errors.append(traceback.format_exc(limit=4))
    out.put(("reader", counts, errors[:3]))


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

    Archive(embedder=None).ingest(claude)
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=writer, args=(str(home), str(claude), seconds, seed, sessions, out)),
        ctx.Process(target=reader, args=(str(home), seconds, seed, out)),
    ]
    for p in procs:
        p.start()
    results = {name: (counts, errors) for name, counts, errors in (out.get() for _ in procs)}
    for p in procs:
        p.join()
    counts = {**results["writer"][0], **results["reader"][0]}
    counts["failed"] = results["writer"][0]["failed"] + results["reader"][0]["failed"]
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
