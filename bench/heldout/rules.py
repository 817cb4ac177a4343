"""A setting of the held-out harness: the rules tagging and tracing run by, passed in whole.

A grid maps a label to a `Rules` value, made with `dataclasses.replace` from the shipped rules
(`SHIPPED`); the harness hands `rules.tag` to `Archive.tag_theme` and `rules.trace` to
`Archive.trace_theme`. Nothing is patched on a module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from archive_mcp.themes.tag.rules import TAG_RULES, Score, TagRules
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules


@dataclass(frozen=True)
class Rules:
    tag: TagRules = TAG_RULES
    trace: TraceRules = TRACE_RULES

    def scored_by(self, score: Score | None) -> Rules:
        """These rules with tagging's learned score replaced (None: as they are)."""
        return self if score is None else replace(self, tag=replace(self.tag, score=score))


SHIPPED = Rules()


def tag(**changes: object) -> Rules:
    """The shipped rules with tagging's changed (`tag(topic_core=5)`)."""
    return Rules(tag=replace(TAG_RULES, **changes))  # type: ignore[arg-type]


def trace(**changes: object) -> Rules:
    """The shipped rules with the trace's changed (`trace(claim_by="any")`)."""
    return Rules(trace=replace(TRACE_RULES, **changes))  # type: ignore[arg-type]


def fold_scores(path: Path) -> dict[str, Score]:
    """Per project, the membership score its fold fitted without it (from a
    `members_learned.py --json` file: its features and each fold's constants; the candidates'
    window stays the shipped one)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("mode", "cut") != "cut":
        raise SystemExit(
            f"{path}: fitted with --mode {data['mode']}; membership cuts probabilities"
        )
    return {
        name: Score(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in row["constants"]["MEAN"]),
            scale=tuple(float(v) for v in row["constants"]["SCALE"]),
            weights=tuple(float(v) for v in row["constants"]["WEIGHTS"]),
            bias=float(row["constants"]["BIAS"]),
            cut=float(row["constants"]["CUT"]),
        )
        for name, row in data["held_out"].items()
    }


# Membership's objective (members_learned.py chooses its cut by it): the target is recall at
# precision >= PRECISION_FLOOR; each point of precision under it costs SLOPE points of recall.
PRECISION_FLOOR = 0.65
SLOPE = 2.0


def members_objective(f: Mapping[str, Any]) -> float:
    """Recall, less `SLOPE` x what precision falls under `PRECISION_FLOOR`."""
    return f["member_recall"] - SLOPE * max(0.0, PRECISION_FLOOR - f["member_precision"])
