"""Retrieval quality per mode on the labelled set in retrieval_set.py.

    python bench/retrieval.py [--embedder static|minilm] [--out bench/out/retrieval]

Prints recall@5, recall@10 and MRR per mode and per query kind (markdown), and JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from retrieval_set import build  # noqa: E402

from archive_mcp import Archive  # noqa: E402

MODES = ("lexical", "fuzzy", "semantic", "hybrid", "hybrid-rrf")


def evaluate(archive: Archive, queries: list, workspace: str) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        per_kind: dict[str, list[int | None]] = {}
        for q in queries:
            fusion = "rrf" if mode == "hybrid-rrf" else "combsum"
            found = archive.search(q.text, workspace=workspace, limit=10, mode=mode.removesuffix("-rrf"), fusion=fusion)
            rank = next((i for i, h in enumerate(found) if (h.session_id, h.turn) == (q.session, q.turn)), None)
            per_kind.setdefault(q.kind, []).append(rank)
            per_kind.setdefault("all", []).append(rank)
        out[mode] = {kind: {"recall@5": sum(r is not None and r < 5 for r in ranks) / len(ranks),
                            "recall@10": sum(r is not None for r in ranks) / len(ranks),
                            "mrr": sum(1 / (r + 1) for r in ranks if r is not None) / len(ranks),
                            "n": len(ranks)} for kind, ranks in per_kind.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="static")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "retrieval")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    queries = build(args.out / "kimi")
    archive = Archive(args.out / "home", embedder=args.embedder)
    t = time.perf_counter()
    report = archive.ingest(args.out / "kimi")
    print(f"corpus: {report.turns_added} turns, {len(queries)} queries, ingest {time.perf_counter() - t:.1f} s "
          f"(embedder {args.embedder})")
    results = evaluate(archive, queries, "retrieval-eval")
    kinds = ["all", "identifier", "typo", "paraphrase", "zh"]
    print("\n| mode | " + " | ".join(f"{k} R@5 / R@10 / MRR" for k in kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for mode in MODES:
        cells = [f"{results[mode][k]['recall@5']:.2f} / {results[mode][k]['recall@10']:.2f} / {results[mode][k]['mrr']:.2f}"
                 for k in kinds]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
