"""The trace's story rules chosen held out by project: what **Now** names and which changes of
course the trace claims (issue 28, items 2 and 3).

    HF_HUB_OFFLINE=1 nice -n 10 python bench/themes_trace_grid.py AGENTS_DEV --out OUT [--reuse]
        [--json PATH] [--grid module:NAME] [--folds M.json]

Each labelled topic of the projects of `themes_heldout.py` is tagged once from its seeds;
then, for every setting of `GRID` (a `TraceRules` value: who may claim a change of course,
`claim_by`; every setting claims changes, `claim_changes`, which the shipped rules leave off), the topic is traced and scored: the Now line's first turn (a labelled `now` turn or a
member at least as recent as them), claimed changes of course against the labelled changes
(precision, recall and their F1), and labelled changes flagged. Per held-out project the setting
with the best mean objective on the other projects (mean of Now accuracy and claim F1), among those that
flag no fewer labelled changes there than the first setting (the off values), is chosen and its
figures on the held-out project are reported, beside the grid's first setting on that project
(`before`: the rules a grid starts from, e.g. `SHIPPED`'s main's claim rules).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from statistics import mean
from typing import Any

from heldout.folds import share
from heldout.rules import SHIPPED as SHIPPED_RULES
from heldout.rules import fold_scores
from textbook import Vectors
from themes_heldout import (
    PROJECTS,
    REPO,
    ProjectData,
    Topic,
    load_project,
    now_named,
    now_right,
)

from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules

# The shipped rules claim no change of course (`claim_changes`, issue 41): the grids measure the
# claim rules with it on.
CLAIMING = replace(TRACE_RULES, claim_changes=True)
GRID: dict[str, TraceRules] = {
    f"claim_by={b}": replace(CLAIMING, claim_by=b) for b in ("any", "user", "user+reversal")
}
# Who may claim a change of course (issue 28), each candidate with its off value first: approvals
# and follow-ups claiming no change (`claim_accept`), members the walk or the neighbour rule
# attached claiming none (`claim_from`), and how much a user's new course must share with the last
# course of its conversation to be claimed as changing it (`last_min`).
STORY: dict[str, TraceRules] = {
    f"accept={a} claim_from={c} last_min={m}": replace(
        CLAIMING,
        claim_accept=a,
        claim_from=c,
        last_min=m,
        change_near=False,  # the rules as they were then
        claim_question=True,
    )
    for a in (True, False)
    for c in ("any", "no-walk", "strong")
    for m in (0.05, 0.15, 0.3, 1.0)
}

# Whether a correction or reversal of its conversation's last course also needs some words or a
# file in common with it (`change_near`), beside the claim rules chosen above; main's rules first.
MAIN = replace(
    CLAIMING,
    claim_accept=True,
    claim_from="any",
    change_near=False,
    last_min=0.05,
    claim_question=True,
)
NEAR: dict[str, TraceRules] = {
    "main": MAIN,
    **{
        f"accept=False claim_from=no-walk change_near={c} last_min={m}": replace(
            CLAIMING,
            claim_accept=False,
            claim_from="no-walk",
            change_near=c,
            last_min=m,
            claim_question=True,
        )
        for c in (False, True)
        for m in (0.05, 0.15, 0.3)
    },
}

# Whether a user's turn that ends as a question may claim a change (`claim_question`), beside the
# rules chosen above; off first.
QUESTION: dict[str, TraceRules] = {
    f"claim_question={q}": replace(CLAIMING, claim_question=q) for q in (True, False)
}

# main's claim rules beside this round's defaults, all at once (re-measured on a later main).
SHIPPED: dict[str, TraceRules] = {"main": MAIN, "defaults": CLAIMING}


def trace_figures(p: ProjectData, topics: list[Topic], rules: TraceRules) -> dict[str, Any]:
    now_ok = claimed = claimed_ok = changes = flagged = 0
    for t in topics:
        tl = p.archive.trace_theme(f"grid-{t.name}", p.ws, rules=rules)
        flags = {(d.session_id, d.agent, d.turn): d.flag for d in tl.decisions}
        claims = {k for k, f in flags.items() if f != "decision"}
        labelled = {k for k, kind in t.decisions if kind in ("change", "reversal")}
        named = now_named(tl)
        now_ok += now_right(p, t, named[0] if named else None)
        claimed += len(claims)
        claimed_ok += len(claims & labelled)
        changes += len(labelled)
        flagged += len(labelled & set(flags))
    precision, recall = share([claimed_ok, claimed]), share([claimed_ok, changes])
    return {
        "now_right": [now_ok, len(topics)],
        "claimed_changes": [claimed_ok, claimed],
        "claim_recall": [claimed_ok, changes],
        "claim_f1": round(2 * precision * recall / (precision + recall), 3)
        if precision + recall
        else 0.0,
        "changes_flagged": [flagged, changes],
    }


def objective(f: dict[str, Any]) -> float:
    return mean([share(f["now_right"]), f["claim_f1"]])


def choose(grid: dict[str, Any], figures: dict[str, dict[str, Any]], train: list[str]) -> str:
    """The setting with the best mean `objective` on the `train` projects, among those that flag
    no fewer labelled changes on any of them than the first setting (the off values: a claim rule
    must not cost flagged changes); on a tie, the one listed first."""
    names = list(grid)
    base = figures[names[0]]
    fair = [
        s
        for s in names
        if all(figures[s][o]["changes_flagged"][0] >= base[o]["changes_flagged"][0] for o in train)
    ]
    return max(fair, key=lambda s: (mean(objective(figures[s][o]) for o in train), -names.index(s)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--grid", help="module:NAME of a dict of settings (default: GRID)")
    ap.add_argument(
        "--folds",
        type=Path,
        help="a `members_learned.py --json` file: each project is tagged with the membership "
        "constants fitted without it",
    )
    args = ap.parse_args(argv)
    folds = fold_scores(args.folds) if args.folds else {}
    grid = GRID
    if args.grid:
        module, _, name = args.grid.partition(":")
        grid = getattr(importlib.import_module(module), name)
    out = args.out.resolve()
    if out == REPO or REPO in out.parents:
        ap.error("--out must be outside the repository")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from archive_mcp.refiners.embed import MiniLMEmbedder

    minilm = MiniLMEmbedder()
    figures: dict[str, dict[str, Any]] = {}
    for name in PROJECTS:
        vectors = Vectors(minilm.embed, out / "vectors" / f"{name}-minilm.npz")
        p = load_project(name, args.agents_dev, out, args.reuse, vectors)
        vectors.save()
        tagging = SHIPPED_RULES.scored_by(folds.get(name)).tag
        for t in p.topics:
            with contextlib.suppress(Exception):
                p.archive.delete_theme(f"grid-{t.name}", p.ws)
            p.archive.tag_theme(f"grid-{t.name}", p.ws, seeds=t.seeds, rules=tagging)
        for label, setting in grid.items():
            figures.setdefault(label, {})[name] = trace_figures(p, p.topics, setting)
        for t in p.topics:
            p.archive.delete_theme(f"grid-{t.name}", p.ws)
        print(f"[{name}] traced {len(grid)} settings", file=sys.stderr, flush=True)
    projects = list(PROJECTS)
    held: dict[str, Any] = {}
    for h in projects:
        others = [x for x in projects if x != h]
        chosen = choose(grid, figures, others)
        first = next(iter(grid))
        held[h] = {"chosen": chosen, "figures": figures[chosen][h], "before": figures[first][h]}
    rows = [
        ("Now names an up-to-date turn", "now_right"),
        ("claimed changes that are labelled changes", "claimed_changes"),
        ("labelled changes claimed", "claim_recall"),
        ("labelled changes flagged", "changes_flagged"),
    ]
    print(f"| measure | {' | '.join(projects)} | mean |\n|---{'|---' * (len(projects) + 1)}|")
    for label, k in rows:
        for which in ("before", "figures"):
            cells = [held[h][which][k] for h in projects]
            tag = "before" if which == "before" else "held out"
            print(
                f"| {label} ({tag}) | {' | '.join(f'{a}/{b}' for a, b in cells)} | "
                f"{mean(share(c) for c in cells):.2f} |"
            )
    print("chosen:", {h: held[h]["chosen"] for h in projects})
    if args.json:
        args.json.write_text(json.dumps({"held_out": held, "grid": figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
