"""Purge means gone: after `purge`, 10 ingests and a follower running SECONDS while the agent's
log keeps growing; the purged session must be absent after every ingest and every follower round,
and a session beside it must keep being archived (the follower is not simply idle).

    python bench/purge_stays.py [--seconds 60] [--out OUT]

Prints one JSON line: ingests run, follower rounds, checks made, times the purged session was
present (0 is the target), the turns the other session reached and those appended.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

PROJECT = "/home/alice/projects/webapp"


def record(sid: str, kind: str, n: int, text: str) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return (
        json.dumps(
            {
                "type": kind,
                "sessionId": sid,
                "cwd": PROJECT,
                "timestamp": f"2026-03-20T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
                "message": {"role": kind, "content": content},
            }
        )
        + "\n"
    )


def grow(log: Path, sid: str, n: int) -> None:
    with log.open("a", encoding="utf-8") as f:
        f.write(record(sid, "user", 2 * n, f"turn {n}: the secret is hunter{n}"))
        f.write(record(sid, "assistant", 2 * n + 1, f"noted turn {n}"))


def run(seconds: float, root: Path) -> dict[str, int]:
    os.environ["ARCHIVE_MCP_HOME"] = str(root / "archive")
    from archive_mcp import Archive
    from archive_mcp.live import Follower

    claude = root / ".claude"
    folder = claude / "projects" / ("-" + PROJECT.strip("/").replace("/", "-"))
    folder.mkdir(parents=True)
    logs = {sid: folder / f"{sid}.jsonl" for sid in ("purged", "kept")}
    for sid, log in logs.items():
        grow(log, sid, 0)
    archive = Archive(embedder=None)
    archive.ingest(claude)
    archive.purge_session("purged", PROJECT)

    def present() -> int:
        out["checks"] += 1
        return int("purged" in archive.turns("all").collect()["session_id"].to_list())

    out = {"ingests": 0, "rounds": 0, "checks": 0, "present": 0, "kept_turns": 0}
    n = 1
    for _ in range(10):
        for sid, log in logs.items():
            grow(log, sid, n)
        n += 1
        archive.ingest(claude)
        out["ingests"] += 1
        out["present"] += present()
    follower = Follower(archive, [claude], interval=0.2, debounce=0.1, embed=False)
    follower.start()
    end, seen = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for sid, log in logs.items():
            grow(log, sid, n)
        n += 1
        time.sleep(0.5)
        if follower.rounds > seen:
            seen = follower.rounds
            out["present"] += present()
    follower.stop()
    out["rounds"] = follower.rounds
    out["present"] += present()
    out["kept_turns"] = archive.stats(PROJECT).turns
    out["appended_turns"] = n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--out", type=Path, help="a folder to work in (default: a temporary one)")
    args = ap.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        print(json.dumps(run(args.seconds, args.out)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(run(args.seconds, Path(tmp))))


if __name__ == "__main__":
    main()
