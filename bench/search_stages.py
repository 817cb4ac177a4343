"""CPU time per query of each stage of a search, for one workspace of an archive home.

    python bench/search_stages.py --home HOME [--mode hybrid] [--reps 2] [--workspace NAME]

The search's stages (BM25, the semantic stage and its scan, the fusions, the sentence re-score,
the hits, ...) are wrapped with a CPU clock (`time.process_time`: on a shared box the wall clock
counts the other processes too) while the 16 queries of `search.py` run `--reps` times after one
warm pass. Prints the p50 of a query's CPU time and each stage's mean CPU per query (stages
nest: `rank` holds `bm25`, `semantic`, ...). Run it with `PYTHONPATH=CHECKOUT` to measure
another checkout, and `OPENBLAS_NUM_THREADS=1` to keep BLAS's spinning threads out of the
figures.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from search import QUERIES

import archive_mcp.search.engine as engine
import archive_mcp.search.index as index
from archive_mcp import Archive

# (owner, attribute): the functions timed, by the name engine.py calls them with
STAGES = [
    (engine, "bm25"),
    (engine, "top"),
    (engine, "build_hits"),
    (engine, "best_of_sentences"),
    (engine, "best_of_ids"),
    (engine.Searcher, "rank"),
    (engine.Searcher, "_semantic"),
    (engine.Searcher, "_fused"),
    (engine.Searcher, "_by_sentence"),
    (engine.Searcher, "evidence"),
    (index.WorkspaceIndex, "cosine"),
    (index.WorkspaceIndex, "texts"),
    (index.WorkspaceIndex, "sentence_ids"),
]


def clocked(spent: defaultdict[str, float], name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        t = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - t

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--workspace", help="its name (default: the first)")
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    spent: defaultdict[str, float] = defaultdict(float)
    for owner, name in STAGES:
        setattr(owner, name, clocked(spent, name.strip("_"), getattr(owner, name)))
    a = Archive(args.home)
    ws = next(w for w in a.workspaces() if args.workspace in (None, w.name))
    a.index(ws).refresh()
    for q in QUERIES:  # warm: pages, caches, the model
        a.search(q, workspace=ws.id, limit=10, mode=args.mode)
    spent.clear()
    cpu = []
    for _ in range(args.reps):
        for q in QUERIES:
            t = time.process_time()
            a.search(q, workspace=ws.id, limit=10, mode=args.mode)
            cpu.append(time.process_time() - t)
    n = len(cpu)
    print(f"{args.mode}: CPU p50 {1000 * statistics.median(cpu):.1f} ms a query ({n} queries)")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<18} {1000 * s / n:7.2f} ms a query")


if __name__ == "__main__":
    main()
