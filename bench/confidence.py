"""Are `strong` hits trustworthy? Labelled coding queries against nonsense and off-topic ones.

    python bench/confidence.py --agents-dev DIR --out OUT [--locomo DIR]

OUT is textbook.py's --out; the coding archive is built there when it is missing.

Searches every labelled coding query (`bench/labels/coding_queries*.jsonl`) and every query of
`bench/labels/offtopic_queries.jsonl` (random strings, and questions about what a project never
did, each in a workspace that holds labelled queries) with the default search, and reports:
the share of labelled queries whose best hit is `strong`, and the share of nonsense/off-topic
queries with no strong hit. The thresholds of `search/confidence.py` are then re-chosen on one
project and scored on the other (both ways), to show how far the shipped ones travel.
With `--locomo`, LoCoMo's questions (categories 1-4) are scored too, with no choice made there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from realdata import coding_queries, locomo_queries  # noqa: E402
from textbook import label_files, project_of  # noqa: E402

from archive_mcp import Archive  # noqa: E402
from archive_mcp.search import confidence  # noqa: E402

LABELS = Path(__file__).parent / "labels"


def strong(ev: dict[str, Any], cover: float, part: float, lift: float) -> bool:
    return ev["cover"] >= cover or (ev["cover"] >= part and ev["lift"] >= lift)


def searched(archive: Archive, text: str, ws: str) -> list[dict[str, Any]]:
    return [h.evidence or {} for h in archive.search(text, workspace=ws, limit=10)]


def rates(rows: list[dict[str, Any]], rule: tuple[float, float, float]) -> tuple[float, float]:
    """(share of labelled with a strong best hit, share of off-topic with no strong hit)."""
    lab = [r for r in rows if r["kind"] == "labelled"]
    off = [r for r in rows if r["kind"] != "labelled"]
    a = sum(bool(r["hits"]) and strong(r["hits"][0], *rule) for r in lab) / max(1, len(lab))
    b = sum(not any(strong(h, *rule) for h in r["hits"]) for r in off) / max(1, len(off))
    return a, b


def choose(rows: list[dict[str, Any]]) -> tuple[float, float, float]:
    """The rule with the most labelled strong among those keeping >= 95% of off-topic weak."""
    grid = itertools.product(
        [0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.01], [0.2, 0.3, 0.35, 0.4, 0.5], [2.0, 2.5, 3.0, 3.5, 4.0]
    )
    scored = [(rates(rows, g), g) for g in grid]
    ok = [s for s in scored if s[0][1] >= 0.95] or scored
    return max(ok, key=lambda s: (s[0][0], s[0][1]))[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents-dev", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="textbook.py's --out (archives)")
    ap.add_argument("--locomo", type=Path)
    args = ap.parse_args()
    archive = Archive(args.out / "coding" / "home", embedder="static")
    if not archive.workspaces():  # textbook.py builds the same archive; else build it here
        from agents_dev import ingest_agents_dev

        ingest_agents_dev(archive, args.agents_dev)
    rows: list[dict[str, Any]] = []
    cwd_ws: dict[str, str] = {}
    for path in label_files():
        recs = {
            r["qid"]: r for r in map(json.loads, filter(str.strip, path.read_text().splitlines()))
        }
        qs, _ = coding_queries(archive, path)
        for q in qs:
            rec = recs[q.qid]
            cwd_ws.setdefault(rec["cwd"], q.workspace)
            hits = archive.search(q.text, workspace=q.workspace, limit=10)
            found = any((h.session_id, h.turn) in q.evidence for h in hits)
            rows.append(
                {
                    "qid": q.qid,
                    "kind": "labelled",
                    "project": project_of(rec),
                    "found": found,
                    "hits": [h.evidence or {} for h in hits],
                }
            )
    for rec in map(
        json.loads, filter(str.strip, (LABELS / "offtopic_queries.jsonl").read_text().splitlines())
    ):
        ws = cwd_ws.get(rec["cwd"])
        if ws is None:
            continue
        hits = searched(archive, rec["query"], ws)
        rows.append(
            {"qid": rec["qid"], "kind": rec["kind"], "project": rec["project"], "hits": hits}
        )
    shipped = (confidence.COVER, confidence.PART, confidence.LIFT)
    print(f"shipped rule cover>={shipped[0]} or (cover>={shipped[1]} and lift>={shipped[2]})\n")
    print("| set | queries | labelled: best hit strong | nonsense/off-topic: no strong hit |")
    print("|---|---|---|---|")

    def line(name: str, sub: list[dict[str, Any]], rule: tuple[float, float, float]) -> None:
        a, b = rates(sub, rule)
        n_lab = sum(r["kind"] == "labelled" for r in sub)
        print(f"| {name} | {n_lab} + {len(sub) - n_lab} | {a:.3f} | {b:.3f} |")

    line("all (shipped rule)", rows, shipped)
    found = [r for r in rows if r["kind"] != "labelled" or r["found"]]
    line("labelled with a relevant turn in the top 10 (shipped)", found, shipped)
    for kind in ("nonsense", "offtopic"):
        line(
            f"{kind} only (shipped)", [r for r in rows if r["kind"] in ("labelled", kind)], shipped
        )
    projects = sorted({r["project"] for r in rows} - {"other"})
    for train in projects:
        rule = choose([r for r in rows if r["project"] == train])
        for test in projects:
            if test != train:
                sub = [r for r in rows if r["project"] == test]
                line(f"rule {rule} chosen on {train}, scored on {test}", sub, rule)
        line(f"shipped rule on {train}", [r for r in rows if r["project"] == train], shipped)
    if args.locomo:
        la = Archive(args.out / "locomo" / "home", embedder="static")
        lrows = []
        for q in locomo_queries(args.locomo):
            hits = la.search(q.text, workspace=q.workspace, limit=10)
            lrows.append({"kind": "labelled", "hits": [h.evidence or {} for h in hits]})
        line("LoCoMo questions (no off-topic; shipped)", lrows, shipped)


if __name__ == "__main__":
    main()
