"""The trace's story rules chosen held out by project: what **Now** names and which changes of
course the trace claims (issue 28, items 2 and 3).

    HF_HUB_OFFLINE=1 nice -n 10 python bench/themes_trace_grid.py AGENTS_DEV --out OUT [--reuse]
        [--json PATH] [--grid module:NAME] [--folds M.json]

Each labelled topic of the projects of `themes_heldout.py` is tagged once from its seeds;
then, for every setting of `GRID` (the standing rule's `OPEN_AFTER` and who may claim a change of
course, `CLAIM_BY`), the topic is traced and scored: the Now line's first turn (a labelled `now` turn or a
member at least as recent as them), claimed changes of course against the labelled changes
(precision, recall and their F1), and labelled changes flagged. Per held-out project the setting
with the best mean objective on the other projects (mean of Now accuracy and claim F1), among those that
flag no fewer labelled changes there than the first setting (the off values), is chosen and its
figures on the held-out project are reported, beside the code as it was before this round
(`before`: Now = the newest flagged event, every change flag claimed), which the same run measures
by patching those rules back in.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from textbook import Vectors  # noqa: E402
from themes_heldout import (  # noqa: E402
    PROJECTS,
    REPO,
    ProjectData,
    Topic,
    applied,
    fold_constants,
    load_project,
    now_named,
    now_right,
    share,
)

from archive_mcp.themes import standing, timeline  # noqa: E402
from archive_mcp.themes.decisions import flag_turns  # noqa: E402

GRID: dict[str, dict[str, Any]] = {
    f"open_after={o} claim_by={b}": {
        "archive_mcp.themes.standing.OPEN_AFTER": o,
        "archive_mcp.themes.decisions.CLAIM_BY": b,
    }
    for o in (0, 1, 2, 10**6)
    for b in ("any", "user", "user+reversal")
}
# Who may claim a change of course (issue 28, this round), each candidate with its off value
# first: approvals and follow-ups claiming no change (`CLAIM_ACCEPT`), members the walk or the
# neighbour rule attached claiming none (`CLAIM_FROM`), and how much a user's new course must
# share with the last course of its conversation to be claimed as changing it (`LAST_MIN`).
STORY: dict[str, dict[str, Any]] = {
    f"accept={a} claim_from={c} last_min={m}": {
        "archive_mcp.themes.decisions.CLAIM_ACCEPT": a,
        "archive_mcp.themes.decisions.CLAIM_FROM": c,
        "archive_mcp.themes.decisions.LAST_MIN": m,
        "archive_mcp.themes.decisions.CHANGE_NEAR": False,  # the rules as they were then
        "archive_mcp.themes.decisions.CLAIM_QUESTION": True,
    }
    for a in (True, False)
    for c in ("any", "no-walk", "strong")
    for m in (0.05, 0.15, 0.3, 1.0)
}

# Whether a correction or reversal of its conversation's last course also needs some words or a
# file in common with it (`CHANGE_NEAR`), beside the claim rules chosen above; main's rules first.
NEAR: dict[str, dict[str, Any]] = {
    "main": {
        "archive_mcp.themes.decisions.CLAIM_ACCEPT": True,
        "archive_mcp.themes.decisions.CLAIM_FROM": "any",
        "archive_mcp.themes.decisions.CHANGE_NEAR": False,
        "archive_mcp.themes.decisions.LAST_MIN": 0.05,
        "archive_mcp.themes.decisions.CLAIM_QUESTION": True,
    },
    **{
        f"accept=False claim_from=no-walk change_near={c} last_min={m}": {
            "archive_mcp.themes.decisions.CLAIM_ACCEPT": False,
            "archive_mcp.themes.decisions.CLAIM_FROM": "no-walk",
            "archive_mcp.themes.decisions.CHANGE_NEAR": c,
            "archive_mcp.themes.decisions.LAST_MIN": m,
            "archive_mcp.themes.decisions.CLAIM_QUESTION": True,
        }
        for c in (False, True)
        for m in (0.05, 0.15, 0.3)
    },
}

# Whether a user's turn that ends as a question may claim a change (`CLAIM_QUESTION`), beside the
# rules chosen above; off first.
QUESTION: dict[str, dict[str, Any]] = {
    f"claim_question={q}": {"archive_mcp.themes.decisions.CLAIM_QUESTION": q} for q in (True, False)
}

# main's claim rules beside this round's defaults, all at once (re-measured on a later main).
SHIPPED: dict[str, dict[str, Any]] = {"main": NEAR["main"], "defaults": {}}


@contextlib.contextmanager
def before() -> Iterator[None]:
    """The rules as they were: Now is the newest flagged event, every change flag is claimed."""

    def newest_flagged(rows: list[dict[str, Any]], decisions: list[timeline.Decision], *_: Any):  # noqa: ANN202
        last = decisions[-1] if decisions else None
        row = rows[-1] if rows else None
        out = []
        if last is not None:
            out.append(standing._decided(last))
        if row is not None and (last is None or last.ref != f"{row['session_id']}:{row['turn']}"):
            out.append(standing.Standing(row["session_id"], row["turn"], None, "", "open"))
        return out

    saved = (timeline.standing, timeline._decisions)

    def every_flag_claimed(frame, every):  # noqa: ANN001, ANN202
        decisions, reversals, threads = saved[1](frame, every)
        flags = flag_turns(
            frame["user_text"].to_list(),
            frame["assistant_text"].to_list(),
            frame["kinds"].to_list(),
        )
        kind = {
            f"{r['session_id']}:{r['turn']}": f.kind
            for r, f in zip(every, flags, strict=True)
            if f is not None
        }
        for d in decisions:
            if d.flag == "decision" and kind.get(d.ref, "decision") != "decision":
                d.flag = kind[d.ref]
        return decisions, reversals, threads

    timeline.standing, timeline._decisions = newest_flagged, every_flag_claimed
    try:
        with applied({**NEAR["main"], "archive_mcp.themes.decisions.CLAIM_BY": "any"}):
            yield
    finally:
        timeline.standing, timeline._decisions = saved


def trace_figures(p: ProjectData, topics: list[Topic]) -> dict[str, Any]:
    now_ok = claimed = claimed_ok = changes = flagged = 0
    for t in topics:
        tl = p.archive.trace_theme(f"grid-{t.name}", p.ws)
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
    folds = fold_constants(args.folds) if args.folds else {}
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
        with applied(folds.get(name)):
            for t in p.topics:
                with contextlib.suppress(Exception):
                    p.archive.delete_theme(f"grid-{t.name}", p.ws)
                p.archive.tag_theme(f"grid-{t.name}", p.ws, seeds=t.seeds)
        with before():
            figures.setdefault("before", {})[name] = trace_figures(p, p.topics)
        for label, setting in grid.items():
            with applied(setting):
                figures.setdefault(label, {})[name] = trace_figures(p, p.topics)
        for t in p.topics:
            p.archive.delete_theme(f"grid-{t.name}", p.ws)
        print(f"[{name}] traced {len(grid) + 1} settings", file=sys.stderr, flush=True)
    projects = list(PROJECTS)
    held: dict[str, Any] = {}
    for h in projects:
        others = [x for x in projects if x != h]
        chosen = choose(grid, figures, others)
        held[h] = {"chosen": chosen, "figures": figures[chosen][h], "before": figures["before"][h]}
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
