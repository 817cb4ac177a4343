"""Claude Code's task notifications on real logs: the turns whose kinds or request text change
between the refiner of a git revision (`--before`, default `main`) and this checkout's.

    python bench/notifications.py AGENTS_DEV [--before main] [--sample 10] [--json PATH]

Every Claude Code log of the corpus (main sessions and subagents) is parsed into turns; a turn
whose user text holds no `<task-notification>` cannot change (neither refiner reads anything
else differently), so only those are refined twice. Printed: turns in all, turns holding the
tag, how many open with a notification (this checkout's `notification.split`), the turns whose
kinds change and whose `user_request` text changes, each change of kinds counted, and a sample
of changed turns (the user text's first 160 characters, the kinds and requests before and
after, secrets masked) to read by eye. The sample is a seeded pick.

    python bench/notifications.py AGENTS_DEV --proxy OUT

reads the archives `bench/agent_proxy.py` built in OUT (run it first, with the checkout whose
refiner is to be measured: the archive holds that refiner's kinds) and asks its questions again
with its fixed policy: per project and pooled over the tuning and held-out projects, the labelled
evidence in the top 3 and the turns of only task notifications that called no tool (what the kind
change weighs down) among the ranking's top 5. The search code is the same on both sides; only
the stored kinds differ.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from archive_mcp.refiners import PARSERS  # noqa: E402
from archive_mcp.refiners.kinds import notified_only  # noqa: E402
from archive_mcp.refiners.notification import OPEN, split  # noqa: E402
from archive_mcp.refiners.redact import redact  # noqa: E402
from archive_mcp.refiners.refine import RefineContext, refine_turn  # noqa: E402
from archive_mcp.refiners.summary import user_request  # noqa: E402
from refine import refiner_at  # noqa: E402


def logs(root: Path) -> list[Path]:
    """The Claude Code session and subagent logs under `root`."""
    return sorted(p for p in (root / "claude-code").rglob("*.jsonl") if p.name != "history.jsonl")


def shown(text: str) -> str:
    """`text` on one line, any secret in it masked (the corpus holds real ones)."""
    return " ".join(redact(text, frozenset())[0].split())


def compare(root: Path, before: str, sample: int) -> dict[str, Any]:
    ctx = RefineContext("w", "bench", "s", "main", "raw")
    with tempfile.TemporaryDirectory() as tmp:
        refine_before = refiner_at(before, Path(tmp))
        request_before = importlib.import_module("refiners_before.summary").user_request
        total, tagged, opening = 0, 0, 0
        changed: list[dict[str, Any]] = []
        for path in logs(root):
            for turn in PARSERS["claude-code"](path).turns:
                total += 1
                if OPEN not in turn.user_text:
                    continue
                tagged += 1
                opening += split(turn.user_text).count > 0
                kinds = (refine_before(turn, ctx)["kinds"], refine_turn(turn, ctx)["kinds"])
                requests = (request_before(turn.user_text), user_request(turn.user_text))
                if kinds[0] != kinds[1] or requests[0] != requests[1]:
                    changed.append(
                        {
                            "file": path.name,
                            "turn": turn.index,
                            "user": shown(turn.user_text[:160]),
                            "kinds": kinds,
                            "requests": tuple(shown(r[:160]) for r in requests),
                            "request_changed": requests[0] != requests[1],
                        }
                    )
    moves = Counter(f"{k[0]} -> {k[1]}" for c in changed if (k := c["kinds"])[0] != k[1])
    return {
        "turns": total,
        "with_tag": tagged,
        "opening_with_notification": opening,
        "kinds_changed": sum(c["kinds"][0] != c["kinds"][1] for c in changed),
        "request_changed": sum(c["request_changed"] for c in changed),
        "kind_moves": dict(moves.most_common()),
        "sample": random.Random(21).sample(changed, min(sample, len(changed))),
    }


def proxy(root: Path, out: Path) -> list[dict[str, Any]]:
    """Per project of the agent proxy: questions, evidence in the top 3, notification turns that
    called no tool in the ranking's top 5 (in all and per question)."""
    import anyio
    from agent_proxy import HELD_OUT, TUNING, ask, questions_of
    from themes_heldout import PROJECTS, build_archive, label_topics

    rows = []
    for name in (*TUNING, *HELD_OUT):
        archive, _ = build_archive(name, root, out / name / "home", reuse=True)
        ws = archive.workspace(next(iter(label_topics(PROJECTS[name])[0]))).id
        frame = archive.turns(ws).select("session_id", "agent", "turn", "user_text", "tool_calls")
        notes = {
            (s, a, int(n))
            for s, a, n, u, c in frame.collect().iter_rows()
            if not c and notified_only(u or "")
        }
        answers = anyio.run(ask, archive, ws, questions_of(name, archive, ws), notes)
        rows.append(
            {
                "project": name,
                "questions": len(answers),
                "evidence_top3": sum(a.found for a in answers),
                "notification_turns": len(notes),
                "in_top5": sum(a.noise_top5 for a in answers),
            }
        )
    for label, group in (("tuning", TUNING), ("held out", HELD_OUT)):
        part = [r for r in rows if r["project"] in group]
        rows.append({"project": label, **{k: sum(r[k] for r in part) for k in list(rows[0])[1:]}})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="the agents-dev corpus folder")
    ap.add_argument("--before", default="main", help="git revision of the refiner to compare with")
    ap.add_argument("--sample", type=int, default=10)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--proxy", type=Path, help="agent_proxy.py's OUT: search its archives again")
    args = ap.parse_args(argv)
    if args.proxy:
        rows = proxy(args.root, args.proxy)
        print(
            "| project | questions | evidence in top 3 | notification turns (no tool) "
            "| of them in a top 5 |\n|---|---|---|---|---|"
        )
        for r in rows:
            print(
                f"| {r['project']} | {r['questions']} | {r['evidence_top3']} "
                f"| {r['notification_turns']} | {r['in_top5']} |"
            )
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
        return 0
    res = compare(args.root, args.before, args.sample)
    print(
        f"{res['turns']} Claude Code turns, {res['with_tag']} holding {OPEN}, "
        f"{res['opening_with_notification']} opening with one; kinds changed: "
        f"{res['kinds_changed']}, request text changed: {res['request_changed']}"
    )
    for move, n in res["kind_moves"].items():
        print(f"  {n:4d}  {move}")
    for c in res["sample"]:
        print(f"\n{c['file']} turn {c['turn']}: {c['user']}")
        print(f"  kinds   {c['kinds'][0]} -> {c['kinds'][1]}")
        print(f"  request {c['requests'][0]!r}\n       -> {c['requests'][1]!r}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
