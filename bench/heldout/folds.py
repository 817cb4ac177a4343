"""Leave one project out: every setting evaluated on every project, then per held-out project the
setting whose mean objective on the other projects is best (the first listed on a tie), with its
figures on the held-out one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from statistics import mean
from typing import Any

from heldout.rules import SHIPPED


def share(pair: Sequence[int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def objective(f: Mapping[str, Any]) -> float:
    """Default selection score: mean of member F1, changes flagged, claimed-change precision,
    Now accuracy and discovery recovery (each in 0..1)."""
    r, pr = f["member_recall"], f["member_precision"]
    f1 = 2 * r * pr / (r + pr) if r + pr else 0.0
    disc = f["discovery"]
    return mean(
        [
            f1,
            share(f["changes_flagged"]),
            share(f["claimed_changes"]),
            share(f["now_right"]),
            disc["found"] / max(1, disc["topics"]),
        ]
    )


def leave_one_project_out(
    projects: Sequence[str],
    grid: Mapping[str, Any],
    evaluate: Callable[[str, Any], dict[str, Any]],
    objective: Callable[[Mapping[str, Any]], float] = objective,
) -> dict[str, Any]:
    """Per held-out project: the setting with the best mean `objective` on the other projects
    (the first listed on a tie), and its figures on the held-out project."""
    grid = dict(grid) or {"current": SHIPPED}
    names = list(grid)
    figures = {n: {p: evaluate(p, grid[n]) for p in projects} for n in names}
    out: dict[str, Any] = {}
    for held in projects:
        others = [p for p in projects if p != held]
        train = {
            n: mean(objective(figures[n][p]) for p in others) if others else 0.0 for n in names
        }
        chosen = max(names, key=lambda n: (train[n], -names.index(n)))
        out[held] = {
            "chosen": chosen,
            "train_objective": {n: round(v, 4) for n, v in train.items()},
            "figures": figures[chosen][held],
        }
    return out
