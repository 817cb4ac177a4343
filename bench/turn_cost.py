"""Where a short turn's ingest goes: discovery, parse, refine and the refined frame, in one
process, CPU microseconds a turn, for the turn-dense sessions `ingest_per_mb.py` builds (the
Cursor CLI's and Crush's grown to ~`--mb` MB) beside Claude Code's fixtures copied to ~`--mb` MB.

    taskset -c 0 python bench/turn_cost.py [--rounds 7] [--mb 1.0]

Each stage as ingest runs it: `sources.discover` of the path (a store's read and export
included), each session file parsed by its reader, its turns refined (`jobs.turn_rows`, subagents
included) and the rows made a frame (`schema.refined_frame`), each timed with
`time.process_time`; the cases interleaved, the median of `--rounds` printed. Another checkout's
package first on PYTHONPATH measures that checkout's stages on the same data (run from outside
the repository: `-m` or a script in the working folder would import this one). Prints numbers
only, no log content.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from archive_mcp.refiners import PARSERS
from archive_mcp.refiners.sources import discover
from ingest_per_mb import claude_logs, crush_session, documented_session

from archive_mcp.ingest.jobs import turn_rows
from archive_mcp.schema import refined_frame

STAGES = ("discover", "parse", "refine", "frame")


def stage_seconds(path: Path) -> tuple[dict[str, float], int]:
    """CPU seconds of each stage of ingesting `path` (see the module's docstring), and its turns."""
    spent = dict.fromkeys(STAGES, 0.0)
    t0 = time.process_time()
    found = discover(path)
    spent["discover"] = time.process_time() - t0
    turns = 0
    for session in found.sessions:
        own = frozenset(f.agent for f in session.files)
        for f in session.files:
            t0 = time.process_time()
            parsed = PARSERS[session.source](f.path)
            t1 = time.process_time()
            rows = turn_rows(
                "ws", session.source, session.session_id, f.agent, f.rel, parsed.turns, own, None
            )
            t2 = time.process_time()
            refined_frame(rows)
            t3 = time.process_time()
            spent["parse"] += t1 - t0
            spent["refine"] += t2 - t1
            spent["frame"] += t3 - t2
            turns += len(rows)
    return spent, turns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--mb", type=float, default=1.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        cases = {
            "claude-code fixtures copied": claude_logs(scratch / "claude", args.mb),
            "cursor-cli one session grown": documented_session(
                "cursor-cli (documented)", scratch / "cursor-cli", args.mb
            )[0],
            "crush one session grown": crush_session(scratch / "crush", args.mb)[0],
        }
        spent: dict[str, dict[str, list[float]]] = {name: {s: [] for s in STAGES} for name in cases}
        turns: dict[str, int] = {}
        for _ in range(max(1, args.rounds)):
            for name, path in cases.items():
                seconds, turns[name] = stage_seconds(path)
                for stage, s in seconds.items():
                    spent[name][stage].append(s)
    print(f"{'':30} {'turns':>6}  " + "  ".join(f"{s:>9}" for s in (*STAGES, "total")))
    for name, by_stage in spent.items():
        us = {s: statistics.median(v) / max(1, turns[name]) * 1e6 for s, v in by_stage.items()}
        print(
            f"{name:30} {turns[name]:6}  "
            + "  ".join(f"{us[s]:9.1f}" for s in STAGES)
            + f"  {sum(us.values()):9.1f}   us a turn (CPU, median of {args.rounds})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
