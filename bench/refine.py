"""Refinement quality on real turns: the labelled turns and every agents-dev turn, before vs after.

    python bench/refine.py AGENTS_DEV_ROOT [--before main] [--labels bench/labels/refine_turns.jsonl]

Ingests the agents-dev corpus into a throwaway archive (no embeddings), re-parses every archived
main-agent log into `Turn`s and refines each turn twice: with the refiner of git revision
`--before` (default `main`, extracted with `git archive` into a temporary package) and with the
refiner of this checkout. Measures (definitions in `bench/refine_measures.py`):

* outcome filler and lead-ins cut before their content, on every turn with assistant text;
* key-fact coverage of the labelled turns (a fact counts when all its term groups appear);
* kinds precision / recall on the labelled turns.

Labelled turns are reported per group: procrypto (the turns the rules were tuned on) and the
held-out rest (M-Thisness, other Claude Code projects, Codex, Gemini).

`--budgets 500,600` also refines every turn with this checkout's refiner at those summary lengths
(`SUMMARY_MAX`) and reports key-fact coverage against the cost: the mean summary length over all
turns, which is what search hits and `bootstrap_workspace` print per turn.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agents_dev import ingest_agents_dev, resolve_refs
from archive_mcp.refiners import PARSERS, Turn
from archive_mcp.refiners import refine as refine_module
from archive_mcp.refiners import summary as summary_module
from archive_mcp.refiners.refine import RefineContext
from archive_mcp.refiners.refine import refine_turn as refine_after
from archive_mcp.workspaces import read_json
from refine_measures import fact_covered, is_cut_lead_in, is_filler, outcome_of, prf

from archive_mcp import Archive

REPO = Path(__file__).resolve().parent.parent
KINDS = (
    "decision",
    "reversal",
    "fix",
    "question",
    "plan",
    "test",
    "change",
    "explore",
    "command",
    "compaction",
    "continuation",
    "api_error",
    "interrupted",
)
Refine = Callable[[Turn, RefineContext], dict[str, Any]]


def refiner_at(rev: str, into: Path) -> Refine:
    """`refine_turn` of the `refiners` package at git revision `rev` (imported under a new name)."""
    data = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "refiners"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    (into / "refiners").rename(into / "refiners_before")
    init = into / "refiners_before" / "__init__.py"  # its guard insists on the installed name
    init.write_text(init.read_text().replace('__name__ != "archive_mcp.refiners"', "False"))
    sys.path.insert(0, str(into))
    module = importlib.import_module("refiners_before.refine")
    return module.refine_turn  # type: ignore[no-any-return]


def group_of(file: str, agent: str) -> str:
    if agent != "claude-code":
        return agent
    if "procrypto" in file:
        return "procrypto"
    return "M-Thisness" if "M-Thisness" in file else "claude-code other"


def archived_turns(archive: Archive) -> dict[tuple[str, str, int], Turn]:
    """Every main-agent turn of the archive, parsed again from the archived raw logs."""
    out: dict[tuple[str, str, int], Turn] = {}
    for ws in archive.workspaces():
        state = read_json(ws.state_dir / "ingest.json", {}) or {}
        for raw_rel, entry in sorted(state.get("files", {}).items()):
            if entry["agent"] != "main" or not (ws.root / raw_rel).exists():
                continue  # subagents are not in the labels; a log with no turns is never copied
            result = PARSERS[entry["source"]](ws.root / raw_rel, stop=entry["archived"])
            for t in result.turns:
                out[(ws.id, entry["session"], t.index)] = t
    return out


def measure(
    turns: list[Turn], labelled: list[tuple[dict[str, Any], Turn]], refine: Refine
) -> dict[str, Any]:
    ctx = RefineContext("w", "bench", "s", "main", "raw")
    with_text = [t for t in turns if t.assistant_text.strip()]
    outcomes = [outcome_of(refine(t, ctx)["summary"]) for t in with_text]
    n = max(1, len(outcomes))
    res: dict[str, Any] = {
        "turns_with_text": len(outcomes),
        "filler": round(sum(map(is_filler, outcomes)) / n, 3),
        "lead_in_cut": round(sum(map(is_cut_lead_in, outcomes)) / n, 3),
        "groups": {},
    }
    rows = [(lab, refine(t, ctx)) for lab, t in labelled]
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for lab, row in rows:
        groups.setdefault(group_of(lab["file"], lab["agent"]), []).append((lab, row))
    groups["held out (all but procrypto)"] = [
        (lab, r) for lab, r in rows if "procrypto" not in lab["file"]
    ]
    groups["all"] = rows
    for name, members in groups.items():
        facts = [(f, r["summary"]) for lab, r in members for f in lab["facts"]]
        pairs = [(set(r["kinds"]), set(lab["kinds"])) for lab, r in members]
        res["groups"][name] = {
            "turns": len(members),
            "facts": len(facts),
            "coverage": round(
                sum(fact_covered(s, f["terms"]) for f, s in facts) / max(1, len(facts)), 3
            ),
            "kinds": {k: prf(pairs, k) for k in KINDS},
        }
    return res


@contextlib.contextmanager
def summary_max(n: int) -> Iterator[None]:
    """This checkout's refiner with a `SUMMARY_MAX` of `n` characters, for the budget sweep."""
    old = summary_module.SUMMARY_MAX
    summary_module.SUMMARY_MAX = refine_module.SUMMARY_MAX = n
    try:
        yield
    finally:
        summary_module.SUMMARY_MAX = refine_module.SUMMARY_MAX = old


def budget_row(
    turns: list[Turn], labelled: list[tuple[dict[str, Any], Turn]], n: int
) -> dict[str, Any]:
    """Coverage per group and the mean summary length over every turn, at a budget of `n`."""
    ctx = RefineContext("w", "bench", "s", "main", "raw")
    with summary_max(n):
        lengths = [len(refine_after(t, ctx)["summary"]) for t in turns]
        res = measure([], labelled, refine_after)
    return {
        "budget": n,
        "mean_length": round(sum(lengths) / max(1, len(lengths)), 1),
        "coverage": {g: v["coverage"] for g, v in res["groups"].items()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="the agents-dev corpus folder")
    ap.add_argument("--before", default="main", help="git revision of the refiner to compare with")
    ap.add_argument(
        "--labels", type=Path, default=Path(__file__).parent / "labels" / "refine_turns.jsonl"
    )
    ap.add_argument("--out", type=Path, help="write the JSON results here")
    ap.add_argument(
        "--budgets", default="", help="comma-separated SUMMARY_MAX values to sweep, e.g. 500,600"
    )
    args = ap.parse_args(argv)
    labels = [
        json.loads(line)
        for line in args.labels.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        archive = Archive(Path(tmp) / "home", embedder=None)
        ingest_agents_dev(archive, args.root, embed=False)
        turns = archived_turns(archive)
        labelled: list[tuple[dict[str, Any], Turn]] = []
        missing: list[str] = []
        for lab in labels:
            hit = resolve_refs(archive, [lab["ref"]], {lab["ref"]: lab["file"]}).get(lab["ref"])
            turn = turns.get((hit[0], hit[1], hit[3])) if hit else None
            if turn is None:
                missing.append(f"{lab['agent']}:{lab['ref']}")
            else:
                labelled.append((lab, turn))
        before = refiner_at(args.before, Path(tmp) / "before")
        results = {
            "labelled": len(labels),
            "resolved": len(labelled),
            "unresolved": missing,
            "all_turns": len(turns),
            "before": measure(list(turns.values()), labelled, before),
            "after": measure(list(turns.values()), labelled, refine_after),
        }
        sizes = [summary_module.SUMMARY_MAX] + [
            int(b) for b in args.budgets.split(",") if b.strip()
        ]
        results["budgets"] = (
            [budget_row(list(turns.values()), labelled, n) for n in sizes] if args.budgets else []
        )
    print(report(results, args.before))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


def report(res: dict[str, Any], rev: str) -> str:
    b, a = res["before"], res["after"]
    lines = [
        f"turns: {res['all_turns']} archived main-agent turns, {a['turns_with_text']} with assistant text; "
        f"labelled {res['resolved']}/{res['labelled']} resolved"
        + (f" (unresolved: {', '.join(res['unresolved'][:20])})" if res["unresolved"] else ""),
        "",
        f"| measure | before ({rev}) | after |",
        "|---|---|---|",
        f"| outcome filler (all turns with text) | {b['filler']:.1%} | {a['filler']:.1%} |",
        f"| lead-in cut before its content | {b['lead_in_cut']:.1%} | {a['lead_in_cut']:.1%} |",
    ]
    for g in a["groups"]:
        gb, ga = b["groups"][g], a["groups"][g]
        lines.append(
            f"| key-fact coverage, {g} ({ga['turns']} turns, {ga['facts']} facts) | "
            f"{gb['coverage']:.3f} | {ga['coverage']:.3f} |"
        )
    lines += [
        "",
        "| kind (P / R) | " + " | ".join(a["groups"]) + " |",
        "|---|" + "---|" * len(a["groups"]),
    ]
    for k in KINDS:
        cells = []
        for g in a["groups"]:
            kb, ka = b["groups"][g]["kinds"][k], a["groups"][g]["kinds"][k]
            n = ka["tp"] + ka["fn"]
            cells.append(
                f"{kb['precision']:.2f}/{kb['recall']:.2f} → {ka['precision']:.2f}/{ka['recall']:.2f} (n={n})"
            )
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    if res.get("budgets"):
        groups = ["procrypto", "held out (all but procrypto)", "all"]
        lines += [
            "",
            "| SUMMARY_MAX | mean summary length, all turns | "
            + " | ".join(f"coverage, {g}" for g in groups)
            + " |",
            "|---|---|" + "---|" * len(groups),
        ]
        lines += [
            f"| {b['budget']} | {b['mean_length']:.0f} | "
            + " | ".join(f"{b['coverage'][g]:.3f}" for g in groups)
            + " |"
            for b in res["budgets"]
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
