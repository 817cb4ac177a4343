"""Replay an agent's archive calls (issue 41): the calls of one agent-eval round's ask log, made
again one by one against an archive home through a server over stdio, as the agent made them;
the characters of each result's text content (what `ask.py` counts and the agent reads) summed
per tool.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/agent_replay.py ASK_LOG HOME --exe ARCHIVE_MCP \\
        [--cap-read N] [--json PATH] [--show]

ASK_LOG is the agent-eval's `ask-log.jsonl` (one `{"tool", "args", ...}` a line), HOME the archive
home the agent asked (copy it first if it must not change: a server may refresh its indexes),
ARCHIVE_MCP the `archive-mcp` executable of the checkout to measure (run it once with main's and
once with another's to compare them). A call that fails counts its error text; `--show` prints
every result. `--cap-read N` asks each `load_turn_context` with `max_chars` at most N (a log made
before a checkout capped a read, replayed on both checkouts alike).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio


async def replay(
    calls: list[tuple[str, dict[str, Any]]], home: Path, exe: str, show: bool
) -> list[int]:
    """The characters of each call's text content, in order."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "ARCHIVE_MCP_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=exe, args=["serve"], env=env)
    sizes = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for tool, args in calls:
            result = await session.call_tool(tool, args)
            text = "".join(c.text for c in result.content if hasattr(c, "text"))
            sizes.append(len(text))
            if show:
                print(
                    f"==== {tool} {json.dumps(args)} {len(text)}{' ERROR' * bool(result.is_error)}"
                )
                print(text)
    return sizes


def capped(tool: str, args: dict[str, Any], cap: int | None) -> dict[str, Any]:
    """A read's arguments with its `max_chars` at most `cap` (its default, 4,000, is below any)."""
    if cap is None or tool != "load_turn_context" or args.get("max_chars", 0) <= cap:
        return args
    return {**args, "max_chars": cap}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ask_log", type=Path)
    ap.add_argument("home", type=Path)
    ap.add_argument("--exe", required=True, help="the archive-mcp executable to measure")
    ap.add_argument("--json", type=Path, help="write the per-call sizes here")
    ap.add_argument("--show", action="store_true", help="print every result")
    ap.add_argument("--cap-read", type=int, help="load_turn_context's max_chars at most this")
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in args.ask_log.read_text().splitlines() if line.strip()]
    calls = [(r["tool"], capped(r["tool"], r["args"], args.cap_read)) for r in rows]
    sizes = anyio.run(replay, calls, args.home, args.exe, args.show)
    chars: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for (tool, _), n in zip(calls, sizes, strict=True):
        chars[tool] += n
        count[tool] += 1
    logged: Counter[str] = Counter()
    for r in rows:
        logged[r["tool"]] += int(r.get("chars") or 0)
    print("| tool | calls | chars (logged) | chars (now) | each |")
    print("|---|---|---|---|---|")
    for tool in sorted(chars, key=lambda t: -chars[t]):
        n = count[tool]
        print(f"| {tool} | {n} | {logged[tool]:,} | {chars[tool]:,} | {chars[tool] // n:,} |")
    total = sum(chars.values())
    print(
        f"| all | {len(calls)} | {sum(logged.values()):,} | {total:,} | {total // len(calls):,} |"
    )
    if args.json:
        args.json.write_text(
            json.dumps([{"tool": t, "chars": n} for (t, _), n in zip(calls, sizes, strict=True)])
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
