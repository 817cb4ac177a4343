"""Parse + refine CPU time of git `--before`'s refiner against this checkout's, same minutes, one core.

    taskset -c 0 python bench/refine_speed.py [--before main] [--turns 5000] [--rounds 3]

For a loaded box: wall time is meaningless there, CPU time (`time.process_time()`) much less so.
Generates a `generate_share_dir` share (seed 7) into a temporary folder, then alternates the two
refiners over every session of it, best of `--rounds` runs each. Both parse with this checkout's
Kimi reader; only `refine_turn` differs. Each turn is refined as ingest does (`turn_rows`): picked
options added to the answers, the session's next turn passed when the refiner takes it.

`--compare` also refines every turn once with each refiner and counts the rows where any column
differs (prints the first such column): a speed change must leave every refined row as it was.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archive_mcp.refiners import RefineContext, kimi_cli
from archive_mcp.refiners.refine import refine_turn as refine_after
from refine import refiner_at

from archive_mcp.ingest.jobs import add_picks
from archive_mcp.synthetic.sessions import generate_share_dir


def session_rows(f: Path, refine: Callable[..., Any]) -> list[dict[str, Any]]:
    """The refined rows of one session's log, as `turn_rows` makes them (main agent only)."""
    ctx = RefineContext("w", "kimi", f.parent.name, "main", str(f))
    turns = kimi_cli.parse_wire(f).turns
    add_picks(turns)
    if "next_turn" not in inspect.signature(refine).parameters:  # a refiner older than extractive@9
        return [refine(t, ctx) for t in turns]
    nexts = [*turns[1:], None]
    return [refine(t, ctx, None, n) for t, n in zip(turns, nexts, strict=True)]


def cpu_seconds(files: list[Path], refine: Callable[..., Any]) -> tuple[float, int]:
    start, turns = time.process_time(), 0
    for f in files:
        turns += len(session_rows(f, refine))
    return time.process_time() - start, turns


def differing_rows(files: list[Path], before: Callable[..., Any], after: Callable[..., Any]) -> int:
    """Rows of the two refiners that differ in any column; the first difference is printed."""
    differ = 0
    for f in files:
        for old, new in zip(session_rows(f, before), session_rows(f, after), strict=True):
            if old != new:
                if not differ:
                    col = next(
                        k for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)
                    )
                    print(f"first difference: {f.parent.name} turn {old['turn']} column {col}")
                differ += 1
    return differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="git revision of the refiner to compare with")
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", action="store_true", help="also count rows that differ")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        share = Path(tmp) / "kimi"
        generate_share_dir(share, args.turns)
        files = sorted(share.glob("sessions/*/*/wire.jsonl"))
        mb = sum(f.stat().st_size for f in files) / 1e6
        refiners = {
            args.before: refiner_at(args.before, Path(tmp) / "before"),
            "this checkout": refine_after,
        }
        best: dict[str, float] = {}
        turns = 0
        for _ in range(args.rounds):
            for name, refine in refiners.items():
                seconds, turns = cpu_seconds(files, refine)
                best[name] = min(best.get(name, seconds), seconds)
        if args.compare:
            differ = differing_rows(files, refiners[args.before], refine_after)
            print(f"rows compared: {turns}, differing in any column: {differ}")
    print(
        f"{len(files)} sessions, {mb:.1f} MB, {turns} turns; best of {args.rounds} CPU-time runs each"
    )
    for name, seconds in best.items():
        print(f"{name}: {seconds:.2f} s = {mb / seconds:.1f} MB/s, {turns / seconds:,.0f} turns/s")
    print(f"ratio (this checkout / {args.before}): {best['this checkout'] / best[args.before]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
