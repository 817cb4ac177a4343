"""Retrieval quality per mode on the labelled set in retrieval_set.py.

    python bench/retrieval.py [--embedder static|minilm] [--out bench/out/retrieval]

Prints recall@5, recall@10 and MRR per mode and per query kind (markdown), and JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from archive_mcp import Archive
from archive_mcp.synthetic.evaluation import MODES, build, evaluate


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
