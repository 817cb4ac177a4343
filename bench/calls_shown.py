"""Every turn's tool calls, refined against read: for each turn of AGENTS_DEV, the calls its
refined row counts beside the calls `load_turn_context` shows (the digests' `calls` summed), read
by the turn's reference as the faces print it (a sub-agent's with its agent), whole and within a
budget (where the note "N of M tool calls left out for the budget" must account for the rest);
and, for a sub-agent's turn, read by `SESSION:TURN` without its agent (which names the main
agent's turn of that number: what bench/path_queries.py read before it kept the hit's agent).

    nice -n 10 python bench/calls_shown.py AGENTS_DEV [--out OUT] [--reuse] [--max-chars 4000]

Exit 1 when a whole read shows other calls than the row counts, or a budgeted read's note does
not account for the calls it leaves out.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from agents_dev import ingest_agents_dev  # noqa: E402

from archive_mcp.archive import Archive  # noqa: E402
from archive_mcp.errors import NotFound  # noqa: E402
from archive_mcp.search.turn_detail import TurnDetail  # noqa: E402

LEFT_OUT = re.compile(r"(\d+) of (\d+) tool calls left out for the budget")
WHOLE = 10**9  # a budget no turn reaches


def shown(detail: TurnDetail) -> int:
    return sum(d.calls for d in detail.tool_calls or [])


def noted(detail: TurnDetail) -> tuple[int, int] | None:
    m = LEFT_OUT.search(detail.left_out or "")
    return (int(m[1]), int(m[2])) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, default=Path("bench/out/calls_shown"))
    ap.add_argument("--reuse", action="store_true", help="keep the archive of an earlier run")
    ap.add_argument("--max-chars", type=int, default=4000, help="the budgeted read's (MCP's)")
    args = ap.parse_args()
    if not args.reuse:
        shutil.rmtree(args.out, ignore_errors=True)
    archive = Archive(args.out / "home", embedder="none")
    if not args.reuse:
        ingest_agents_dev(archive, args.agents_dev, embed=False)
    n: Counter[str] = Counter()
    for ws in archive.workspaces():
        rows = archive.turns(ws.id).select("session_id", "agent", "turn", "tool_calls").collect()
        for session, agent, turn, calls in rows.iter_rows():
            ref = {"session_id": session, "agent": agent, "turn": turn}
            refined = len(calls)
            n["turns"] += 1
            n["refined calls"] += refined
            (whole,) = archive.load_turn_context([ref], ws, max_chars=WHOLE).turns
            n["whole: calls shown"] += shown(whole)
            n["whole: turns showing other calls"] += shown(whole) != refined
            (cut,) = archive.load_turn_context([ref], ws, max_chars=args.max_chars).turns
            left = refined - shown(cut)
            n["budget: turns with calls left out"] += left > 0
            n["budget: notes not accounting for them"] += (
                noted(cut) != (left, refined) if left else noted(cut) is not None
            )
            if agent == "main":
                continue
            n["sub-agent turns"] += 1
            try:
                (bare,) = archive.load_turn_context([f"{session}:{turn}"], ws).turns
            except NotFound:
                n["sub-agent, read without its agent: not found"] += 1
                continue
            n["sub-agent, read without its agent: another agent's turn"] += bare.agent != agent
            n["sub-agent, read without its agent: other calls"] += shown(bare) != refined
    print("| count | value |\n|---|---|")
    for key, value in n.items():
        print(f"| {key} | {value:,} |")
    failed = n["whole: turns showing other calls"] + n["budget: notes not accounting for them"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
