"""Why the trace's story misses, counted (issue 28): for every labelled topic of the three
projects of `themes_heldout.py`, the turn **Now** names against the labelled `now` turns, and
every claimed change of course against the labels.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/themes_story_errors.py AGENTS_DEV --out OUT --reuse
        [--json PATH]

Now, per topic: `right` (a labelled `now` turn, or a labelled member at least as recent);
`unreachable` (no traced turn would be right: the labelled `now` turns were not attached and no
later labelled member was); otherwise the named turn is a member of another labelled topic, a
turn no topic holds, or an earlier member, and the count of traced turns after the last right one
that are not members of the topic (the theme's tail). Claims, per claimed change: a labelled
change; a labelled decision (it sets a course, it changes none); a member of the topic with no
labelled decision; a member of another topic only; a turn no topic holds. Both are also counted
by how tagging attached the turn (seed, neighbour, walk) and, for claims, by whether the user's
turn only accepts what was offered ("yes", "option 2"). Only counts are printed: the logs hold
real credentials and are never quoted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from textbook import Vectors
from themes_heldout import (
    PROJECTS,
    REPO,
    ProjectData,
    load_project,
    now_named,
    now_right,
)
from themes_trace_grid import CLAIMING, NEAR

from archive_mcp.themes.trace.decisions import accepts
from archive_mcp.themes.trace.rules import TRACE_RULES, TraceRules

Key = tuple[str, str, int]


def attached_by(provenance: str) -> str:
    """seed | neighbour | walk | other, from a member's provenance ("walk:<seeds>", ...)."""
    head = provenance.split(":", 1)[0]
    return head if head in ("seed", "neighbour", "walk") else "other"


def topic_counts(
    p: ProjectData, owner: dict[Key, set[str]], rules: TraceRules = TRACE_RULES
) -> tuple[Counter[str], Counter[str]]:
    """The Now category of each topic and the category of each claimed change, over `p.topics`."""
    now: Counter[str] = Counter()
    claims: Counter[str] = Counter()
    for t in p.topics:
        name = f"errors-{t.name}"
        with contextlib.suppress(Exception):
            p.archive.delete_theme(name, p.ws)
        p.archive.tag_theme(name, p.ws, seeds=t.seeds)
        tl = p.archive.trace_theme(name, p.ws, include_turn_content=True, rules=rules)
        p.archive.delete_theme(name, p.ws)
        keys = [(e.session_id, e.agent, e.turn) for e in tl.events]
        how = {k: attached_by(e.provenance) for k, e in zip(keys, tl.events, strict=True)}
        users = {
            k: (e.content or {}).get("user") or "" for k, e in zip(keys, tl.events, strict=True)
        }
        named = now_named(tl)
        right = [now_right(p, t, k) for k in keys]
        now[_now_category(t.name, named[0] if named else None, keys, right, t.members, owner)] += 1
        if named and not now_right(p, t, named[0]):
            now[f"attached by: {how.get(named[0], 'other')}"] += 1
        if any(right) and not now_right(p, t, named[0] if named else None):
            last = max(i for i, r in enumerate(right) if r)
            now["tail turns after the last right one"] += len(keys) - last - 1
            now["... of them not members of the topic"] += sum(
                k not in t.members for k in keys[last + 1 :]
            )
        labelled = {k for k, kind in t.decisions if kind in ("change", "reversal")}
        decided = {k for k, _ in t.decisions}
        for d in tl.decisions:
            if d.flag == "decision":
                continue
            k = (d.session_id, d.agent, d.turn)
            claims[_claim_category(k, labelled, decided, t.members, owner)] += 1
            right_claim = "right" if k in labelled else "wrong"
            claims[f"attached by {how.get(k, 'other')}: {right_claim}"] += 1
            if accepts({"user_text": users.get(k, "")}):
                claims[f"accepts what was offered: {right_claim}"] += 1
    return now, claims


def _now_category(
    topic: str,
    named: Key | None,
    keys: list[Key],
    right: list[bool],
    members: set[Key],
    owner: dict[Key, set[str]],
) -> str:
    if named in keys and right[keys.index(named)]:
        return "right"
    if not any(right):
        return "unreachable (labelled now not attached, no later member attached)"
    if named in members:
        return "reachable: named an earlier member"
    if owner.get(named, set()) - {topic}:
        return "reachable: named a member of another topic"
    return "reachable: named a turn no topic holds"


def _claim_category(
    k: Key, labelled: set[Key], decided: set[Key], members: set[Key], owner: dict[Key, set[str]]
) -> str:
    if k in labelled:
        return "a labelled change"
    if k in decided:
        return "a labelled decision (sets a course, changes none)"
    if k in members:
        return "a member with no labelled decision"
    return "a member of another topic only" if owner.get(k) else "a turn no topic holds"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--main-rules", action="store_true", help="the claim rules as main had them")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == REPO or REPO in out.parents:
        ap.error("--out must be outside the repository")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from archive_mcp.refiners.embed import MiniLMEmbedder

    minilm = MiniLMEmbedder()
    result: dict[str, Any] = {}
    for name in PROJECTS:
        vectors = Vectors(minilm.embed, out / "vectors" / f"{name}-minilm.npz")
        p = load_project(name, args.agents_dev, out, args.reuse, vectors)
        owner: dict[Key, set[str]] = {}
        for t in p.topics:
            for k in t.members:
                owner.setdefault(k, set()).add(t.name)
        now, claims = topic_counts(p, owner, NEAR["main"] if args.main_rules else CLAIMING)
        result[name] = {"now": dict(now), "claims": dict(claims)}
        print(f"## {name}\nNow: {json.dumps(dict(now))}\nclaims: {json.dumps(dict(claims))}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
