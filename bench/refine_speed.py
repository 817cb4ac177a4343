"""Parse + refine CPU time of git `--before`'s refiner against this checkout's, same minutes, one core.

    taskset -c 0 python bench/refine_speed.py [--before main] [--turns 5000] [--rounds 3]

For a loaded box: wall time is meaningless there, CPU time (`time.process_time()`) much less so.
Generates a `generate_share_dir` share (seed 7) into a temporary folder, then alternates the two
refiners over every session of it, best of `--rounds` runs each. Both parse with this checkout's
Kimi reader; only `refine_turn` differs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archive_mcp.refiners import RefineContext, kimi_cli
from archive_mcp.refiners.refine import refine_turn as refine_after
from refine import refiner_at

from archive_mcp.synthetic.sessions import generate_share_dir


def cpu_seconds(files: list[Path], refine: Callable[..., Any]) -> tuple[float, int]:
    start, turns = time.process_time(), 0
    for f in files:
        ctx = RefineContext("w", "kimi", f.parent.name, "main", str(f))
        for turn in kimi_cli.parse_wire(f).turns:
            refine(turn, ctx)
            turns += 1
    return time.process_time() - start, turns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="git revision of the refiner to compare with")
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
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
    print(
        f"{len(files)} sessions, {mb:.1f} MB, {turns} turns; best of {args.rounds} CPU-time runs each"
    )
    for name, seconds in best.items():
        print(f"{name}: {seconds:.2f} s = {mb / seconds:.1f} MB/s, {turns / seconds:,.0f} turns/s")
    print(f"ratio (this checkout / {args.before}): {best['this checkout'] / best[args.before]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
