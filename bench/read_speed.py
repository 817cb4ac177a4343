"""How long `load_turn_context` takes to read a long range of a session a reader parses whole
(issue 41, the session-19 review): a generated Gemini chat (one `.json` document rewritten in
place, which the Gemini reader parses from its start for every turn), archived in a fresh home,
read as one range through the real MCP client at several budgets, each call twice (the second
is what an agent asking again costs).

    HF_HUB_OFFLINE=1 python bench/read_speed.py [--turns 50] [--steps 1200] [--budgets 1000,4000,6000]

Prints, per budget, the seconds of the first and of the second call and the characters read
(the tool reads at most 6,000 characters a call: a larger budget is an error it times).
Every budget runs in a fresh process (a fresh archive and nothing kept from another budget).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

BUDGETS = "1000,4000,6000"  # the tool reads at most 6,000 characters a call


def write_chat(root: Path, turns: int, steps: int) -> int:
    """A Gemini chat of `turns` turns, each answer `steps` sentences, under `root/.gemini`;
    returns its size in bytes."""
    messages = []
    for i in range(turns):
        at = f"2026-03-20T10:{i % 60:02d}"
        messages.append(
            {"id": str(uuid.uuid4()), "timestamp": f"{at}:00.000Z", "type": "user",
             "content": f"check table t{i} and migrate it"}
        )  # fmt: skip
        answer = " ".join(
            f"Step {j} of turn {i} moved table t{j} to the new schema." for j in range(steps)
        )
        messages.append(
            {"id": str(uuid.uuid4()), "timestamp": f"{at}:30.000Z", "type": "gemini", "content": answer}
        )  # fmt: skip
    chat = {
        "sessionId": str(uuid.uuid4()),
        "projectHash": "ab" * 32,
        "startTime": "2026-03-20T10:00:00.000Z",
        "lastUpdated": "2026-03-20T11:00:00.000Z",
        "messages": messages,
    }
    folder = root / ".gemini" / "tmp" / ("ab" * 32) / "chats"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "session-2026-03-20T10-00-abcdef12.json"
    path.write_text(json.dumps(chat), encoding="utf-8")
    return path.stat().st_size


def one_budget(turns: int, steps: int, budget: int) -> dict[str, object]:
    """The two calls at `budget` on a fresh archive of a fresh chat (this process)."""
    import anyio
    from mcp import Client

    from archive_mcp import Archive
    from archive_mcp.mcp.server import build_server

    root = Path(tempfile.mkdtemp(prefix="read-speed-"))
    size = write_chat(root / "src", turns, steps)
    archive = Archive(home=root / "home", embedder=None)
    archive.ingest(root / "src" / ".gemini")
    ws = archive.workspaces()[0]
    sid = archive.turns(ws.id).select("session_id").collect()["session_id"][0]
    args = {"references": [f"{sid}:0-{turns - 1}"], "workspace": ws.id, "max_chars": budget}

    async def call() -> tuple[float, int]:
        async with Client(build_server(archive)) as client:
            t = time.perf_counter()
            r = await client.call_tool("load_turn_context", args)
            return time.perf_counter() - t, len(r.content[0].text)

    (first, chars), (again, _) = anyio.run(call), anyio.run(call)
    return {"budget": budget, "bytes": size, "first_s": first, "again_s": again, "chars": chars}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--budgets", default=BUDGETS)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child run: one budget
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one_budget(args.turns, args.steps, args.one)))
        return 0
    print("| max_chars | chat | first call | the same call again | characters read |")
    print("|---|---|---|---|---|")
    for budget in (int(b) for b in args.budgets.split(",")):
        child = [sys.executable, __file__, "--turns", str(args.turns), "--steps", str(args.steps)]
        done = subprocess.run(
            [*child, "--one", str(budget)],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"| {budget:,} | {r['bytes'] / 1e6:.1f} MB, {args.turns} turns | {r['first_s']:.2f} s "
            f"| {r['again_s']:.2f} s | {r['chars']:,} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
