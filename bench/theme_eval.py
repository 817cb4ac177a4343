"""Theme tracing on real data: the LoCoMo multi-hop questions and the labelled coding set.

Used by bench/themes.py; every path comes in as an argument (the data is never copied here).

LoCoMo: each category-1 question whose evidence spans two or more sessions is a recurring topic.
The theme is tagged from the question (one seed) and traced; we count the evidence turns the trace
holds and check they come out in time order.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

from archive_mcp import Archive


def locomo(archive: Archive, data: Path) -> dict[str, Any]:
    """Ingest `data/kimi_share` (if needed) and trace every multi-hop question."""
    if not archive.workspaces():
        archive.ingest(data / "kimi_share")
    rows = [json.loads(line) for line in (data / "qrels.jsonl").read_text(encoding="utf-8").splitlines() if line]
    multi = [q for q in rows if q["category"] == 1 and len(set(q["evidence_sessions"])) >= 2]
    recalls, sizes, ordered = [], [], 0
    for q in multi:
        name = f"locomo-{q['qid']}"
        archive.tag_theme(name, q["work_dir"], seeds=[q["question"]])
        tl = archive.trace_theme(name, q["work_dir"])
        traced = [f"{e.session_id}#{e.turn}" for e in tl.events]
        want = set(q["evidence_turns"])
        recalls.append(len(want & set(traced)) / len(want))
        sizes.append(len(traced))
        times = [e.at for e in tl.events]
        ordered += times == sorted(times)
        archive.delete_theme(name, q["work_dir"])
    return {"questions": len(multi), "evidence_recall": round(mean(recalls), 3),
            "mean_traced": round(mean(sizes), 1), "in_time_order": ordered / len(multi)}
