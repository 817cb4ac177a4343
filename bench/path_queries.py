"""Paths asked as themselves (issue 41): a search for a file path over the agents-dev corpus,
with the path's pieces counted only where the path is (the default) beside each piece counted
alone (`Tuning(paths_whole=False)`, on the same index), in one run.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/path_queries.py AGENTS_DEV [--out OUT] [--reuse]

Another checkout (main): its package first on PYTHONPATH, from outside the repository, with its
own copy of OUT (an index is rebuilt for the checkout's format).

The queries (`labels/path_queries.jsonl`) are paths the agent edited in the raw logs, written
before the rule was chosen; a query's relevant turns are those whose tool calls edited or wrote
that file. The rule is chosen on the `tune` projects (local-api, pai, the autopilot frontend) and
scored on the `held` ones (tg-ripper, qa-tools, token-analysis-autopilot, the preload frontend,
mthisness). Per split and mode: hit@5 (a relevant turn in the top 5), R@10, and the share of the
top-5 hits that do not hold the path, i.e. of which `load_turn_context(matching=<path>)` finds no
passage (what an agent reading the hit gets).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from agents_dev import ingest_agents_dev, resolve_refs  # noqa: E402

from archive_mcp.archive import Archive  # noqa: E402
from archive_mcp.errors import NotFound  # noqa: E402
from archive_mcp.search.ranking import Tuning  # noqa: E402

LABELS = Path(__file__).parent / "labels" / "path_queries.jsonl"
# the default, and where this checkout has the knob, each piece counted alone
RULES = {"default": Tuning()}
if "paths_whole" in {f.name for f in fields(Tuning)}:
    RULES["pieces alone"] = Tuning(**{"paths_whole": False})


def holds(archive: Archive, ws: str, session: str, agent: str, turn: int, path: str) -> bool:
    """Whether a `matching` read of the turn finds a passage holding `path`.

    The hit's agent is part of its reference: a sub-agent's turn 0 read as `session:0` is the
    main agent's turn 0 (its own words and calls, not the sub-agent's)."""
    ref = {"session_id": session, "agent": agent, "turn": turn}
    try:
        archive.load_turn_context([ref], ws, matching=[path])
    except NotFound:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, default=Path("bench/out/path_queries"))
    ap.add_argument("--reuse", action="store_true", help="keep the archive of an earlier run")
    args = ap.parse_args()
    if not args.reuse:
        shutil.rmtree(args.out, ignore_errors=True)
    archive = Archive(args.out / "home", embedder="static")
    if not args.reuse:
        ingest_agents_dev(archive, args.agents_dev)
    records = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    files = {r: rec["files"] for rec in records for r in rec["relevant"]}
    resolved = resolve_refs(archive, files, files)
    rows: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    for rec in records:
        found = [resolved[r] for r in rec["relevant"] if r in resolved]
        if not found:
            print(f"{rec['qid']}: no reference resolved", file=sys.stderr)
            continue
        ws = found[0][0]
        relevant = {(s, a, t) for _, s, a, t in found}
        for rule, tuning in RULES.items():
            for mode in ("lexical", "hybrid"):
                hits = archive.search(
                    rec["query"], workspace=ws, limit=10, mode=mode, tuning=replace(tuning)
                )
                keys = [(h.session_id, h.agent, h.turn) for h in hits]
                hit5 = float(bool(relevant & set(keys[:5])))
                r10 = len(relevant & set(keys)) / len(relevant)
                top5 = keys[:5]
                stray = sum(not holds(archive, ws, s, a, t, rec["query"]) for s, a, t in top5)
                share = stray / len(top5) if top5 else 0.0
                rows.setdefault((rec["split"], mode, rule), []).append((hit5, r10, share))
    print("| split | mode | rule | queries | hit@5 | R@10 | top-5 hits without the path |")
    print("|---|---|---|---|---|---|---|")
    report: dict[str, Any] = {}
    for (split, mode, rule), vals in sorted(rows.items()):
        n = len(vals)
        hit5, r10, share = (sum(v[i] for v in vals) / n for i in range(3))
        print(f"| {split} | {mode} | {rule} | {n} | {hit5:.2f} | {r10:.2f} | {share:.2f} |")
        report[f"{split}/{mode}/{rule}"] = {"hit@5": hit5, "recall@10": r10, "stray@5": share}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
