"""What checking a growing session against its archived copy costs.

    python bench/live_append.py [--mb 200] [--rounds 5]

One Python-Kimi session of about `--mb` MB is ingested; then, `--rounds` times, one turn is
appended and the archive ingested again. Each re-ingest is timed twice on the same file: with the
full compare of the archived bytes (the default: an edit anywhere in the source is caught) and
with only the head and tail hashes (the check before that compare existed). Page cache warm, as
for a live file that was just written.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from archive_mcp import Archive
from archive_mcp.ingest import raw

HEADER = b'{"type": "metadata", "protocol_version": "1.10"}\n'


def _turn(i: int, size: int) -> bytes:
    t = 1773400000 + i * 10
    recs = [
        {
            "timestamp": t,
            "message": {"type": "TurnBegin", "payload": {"user_input": f"question {i}"}},
        },
        {"timestamp": t + 1, "message": {"type": "StepBegin", "payload": {"n": 1}}},
        {
            "timestamp": t + 2,
            "message": {
                "type": "ContentPart",
                "payload": {"type": "text", "text": f"answer {i} " + "x" * size},
            },
        },
        {"timestamp": t + 3, "message": {"type": "TurnEnd", "payload": {}}},
    ]
    return b"".join(json.dumps(r).encode() + b"\n" for r in recs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        share = Path(tmp) / "share"
        d = share / "sessions" / ("0" * 32) / "11111111-2222-4333-8444-555555555555"
        d.mkdir(parents=True)
        (share / "kimi.json").write_text(
            json.dumps({"work_dirs": [{"path": "/bench/live"}]}), encoding="utf-8"
        )
        wire = d / "wire.jsonl"
        per_turn = 20_000
        n = args.mb * 1_000_000 // per_turn
        with open(wire, "wb") as fh:
            fh.write(HEADER)
            for i in range(n):
                fh.write(_turn(i, per_turn))
        archive = Archive(Path(tmp) / "home", embedder=None)
        archive.ingest(share)
        full, hashes = [], []
        real = raw._same_prefix
        for r in range(args.rounds):
            for mode, times in (("full", full), ("hashes", hashes)):
                with open(wire, "ab") as fh:
                    fh.write(_turn(n + 2 * r + (mode == "hashes"), 200))
                raw._same_prefix = real if mode == "full" else (lambda fh, copy, archived: True)  # type: ignore[assignment]
                t = time.perf_counter()
                report = archive.ingest(share)
                times.append(time.perf_counter() - t)
                assert report.turns_added == 1 and not report.skipped, report
        raw._same_prefix = real
        full.sort()
        hashes.sort()
        print(
            json.dumps(
                {
                    "machine": f"{platform.machine()} {platform.python_version()}",
                    "source_mb": round(wire.stat().st_size / 1e6, 1),
                    "rounds": args.rounds,
                    "reingest_full_compare_s_median": round(full[len(full) // 2], 3),
                    "reingest_hashes_only_s_median": round(hashes[len(hashes) // 2], 3),
                },
                indent=1,
            )
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
