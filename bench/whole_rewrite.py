"""What checking a rewritten whole-file session before it replaces its archived copy costs.

    python bench/whole_rewrite.py [--mb 16] [--rounds 5]

One generated Gemini CLI chat (a `.json` document rewritten whole on every message) of about
`--mb` MB is ingested; then, `--rounds` times, it is rewritten with one more turn and the archive
ingested again. Each round times two re-ingests, alternated: with the check (the default: the
new copy is parsed under its own name before it replaces the archived one, so a copy caught
mid-rewrite never does) and without it (the copy replaced at once, as before the check). The
chat stays below `workers.PARALLEL_BYTES`, so the whole ingest runs in this process and its CPU
time is this process's. Page cache warm, as for a chat that was just written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from archive_mcp import Archive
from archive_mcp.ingest import pipeline

PROJECT = "/bench/whole"


def _messages(i: int, size: int) -> list[dict[str, Any]]:
    t = f"2026-03-22T{10 + i // 3600 % 10:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
    return [
        {"id": f"u{i}", "type": "user", "timestamp": t, "content": f"question {i} about parsing"},
        {"id": f"g{i}", "type": "gemini", "timestamp": t, "content": f"answer {i} " + "x" * size},
    ]


def _write(chat: Path, turns: int, size: int) -> None:
    doc = {
        "sessionId": "w1",
        "projectHash": hashlib.sha256(PROJECT.encode()).hexdigest(),
        "startTime": "2026-03-22T10:00:00Z",
        "messages": [m for i in range(turns) for m in _messages(i, size)],
    }
    chat.write_text(json.dumps(doc), encoding="utf-8")


class _Unchecked(dict):  # type: ignore[type-arg]
    """`PARSERS` as the whole-file copy sees it without the check: no parser, the copy replaced
    at once (the job still parses with the real one)."""

    def __getitem__(self, key: str) -> Any:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    size = 4_000
    turns = args.mb * 1_000_000 // (size + 200)
    real = pipeline.PARSERS
    with tempfile.TemporaryDirectory() as tmp:
        chats = Path(tmp) / ".gemini" / "tmp" / "whole" / "chats"
        chats.mkdir(parents=True)
        (chats.parent / ".project_root").write_text(PROJECT, encoding="utf-8")
        chat = chats / "session-2026-03-22T10-00-w1.json"
        _write(chat, turns, size)
        archive = Archive(Path(tmp) / "home", embedder=None)
        archive.ingest(chat.parent.parent.parent.parent, embed=False)
        times: dict[str, list[tuple[float, float]]] = {"checked": [], "unchecked": []}
        for r in range(args.rounds):
            order = ("checked", "unchecked") if r % 2 == 0 else ("unchecked", "checked")
            for mode in order:
                turns += 1
                _write(chat, turns, size)
                pipeline.PARSERS = real if mode == "checked" else _Unchecked()  # type: ignore[assignment]
                wall, cpu = time.perf_counter(), time.process_time()
                report = archive.ingest(chat.parent.parent.parent.parent, embed=False)
                times[mode].append((time.perf_counter() - wall, time.process_time() - cpu))
                pipeline.PARSERS = real
                assert report.files_changed == 1 and not report.skipped, report
        out: dict[str, Any] = {
            "machine": f"{platform.machine()} {platform.python_version()}",
            "chat_mb": round(chat.stat().st_size / 1e6, 1),
            "turns": turns,
            "rounds": args.rounds,
        }
        for mode, got in times.items():
            walls, cpus = sorted(w for w, _ in got), sorted(c for _, c in got)
            out[f"reingest_{mode}_wall_s_median"] = round(walls[len(walls) // 2], 3)
            out[f"reingest_{mode}_cpu_s_median"] = round(cpus[len(cpus) // 2], 3)
        print(json.dumps(out, indent=1))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
