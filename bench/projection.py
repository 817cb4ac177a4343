"""The semantic scan of a large index: the exact int8 scan against the principal projection's
estimates with an exact int8 shortlist (`archive_mcp/search/projection.py`), per shortlist size,
on one workspace's index.

    python bench/projection.py --home HOME --workspace NAME [--shortlist 1024 4096 16384] [--turn-queries 100]

The index must carry the projection (built from `PROJECTED_ROWS` rows, its shortlist's exact
cosines from the float32 rows it holds, or past `DENSE_MAX_BYTES` from the int8 copy; `--force`
builds a smaller workspace's index as if it were large, in its own cache). Queries: the 16 of `bench/search.py`,
plus `--turn-queries` turns' summaries drawn from the workspace (seed 7), each a query whose
neighbourhood is real text's. Per shortlist size and query:

- the scan's time (median over the queries) against the exact scan's;
- score recall@k of the scan: the share of its top k whose exact cosine reaches the exact k-th
  best (ties count: the generated archives repeat turns);
- the hybrid search's top 10 against the same search with the exact scan: the share of the
  exact search's hits it returns (overlap@10; a turn known by its turn number, time and summary,
  so that copies of one turn count as one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from search import QUERIES

import archive_mcp.search.index as index
import archive_mcp.search.projection as projection
from archive_mcp import Archive
from archive_mcp.search.ondisk import read_rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--shortlist", type=int, nargs="*", default=[1024, 4096, 16384])
    ap.add_argument("--turn-queries", type=int, default=100)
    ap.add_argument("--force", action="store_true", help="build the projection whatever the size")
    args = ap.parse_args()
    if args.force:
        index.DENSE_MAX_BYTES = 0
    a = Archive(args.home)
    ws = next(w for w in a.workspaces() if w.name == args.workspace)
    idx = a.index(ws).refresh()
    seg = idx.segments[0]
    if seg.projection is None:
        sys.exit(f"{ws.name}'s index has no projection (under PROJECTED_ROWS): pass --force")
    # the int8 rows of a streamed index, or the float32 rows a smaller one holds (scale None)
    rows, scale = seg.quantized if seg.quantized is not None else (seg.dense(), None)
    assert rows is not None
    embedder = a._embedder_if_any()
    assert embedder is not None
    queries = list(QUERIES)
    if args.turn_queries:
        rng = np.random.default_rng(7)
        picks = rng.choice(idx.n_docs, size=min(args.turn_queries, idx.n_docs), replace=False)
        summaries = [t.summary for t in idx.texts(sorted(int(p) for p in picks)) if t.summary]
        queries += summaries
    vectors = [np.asarray(v, np.float32) for v in embedder.embed(queries)]

    def exact(v: np.ndarray) -> np.ndarray:
        out = np.zeros(rows.shape[0], np.float32)
        for lo in range(0, rows.shape[0], index.READ_ROWS):
            hi = min(lo + index.READ_ROWS, rows.shape[0])
            out[lo:hi] = np.einsum("ij,j->i", read_rows(rows, lo, hi), v)
        return out if scale is None else out * scale

    def hits(q: str) -> Counter[tuple[int, str | None, str]]:
        # a turn by what it holds, not its session: the copies of `scale.py`'s `one-N`
        # archives tie, and which copy a search returns says nothing
        found = a.search(q, workspace=ws.id, limit=10)
        return Counter((h.turn, h.started_at, h.summary) for h in found)

    t_exact, truth = [], []
    for v in vectors:
        t = time.perf_counter()
        truth.append(exact(v))
        t_exact.append(time.perf_counter() - t)
    proj = seg.projection
    seg.projection = None
    exact_hits = [hits(q) for q in queries]
    seg.projection = proj
    report: dict = {
        "workspace": ws.name,
        "rows": int(rows.shape[0]),
        "dim": int(rows.shape[1]),
        "queries": len(queries),
        "exact_scan_ms": 1000 * statistics.median(t_exact),
        "shortlists": [],
    }
    for k in args.shortlist:
        projection.SHORTLIST = k
        times: list[float] = []
        recall: dict[int, list[float]] = {10: [], 100: []}
        for v, ex in zip(vectors, truth, strict=True):
            t = time.perf_counter()
            got = proj.cosine(v, rows, scale, seg.has_vector)
            times.append(time.perf_counter() - t)
            for depth, acc in recall.items():
                kth = np.partition(ex, ex.size - depth)[ex.size - depth]
                head = np.argpartition(-got, depth)[:depth]
                acc.append(float(np.mean(ex[head] >= kth - 1e-6)))
        overlap = [
            sum((hits(q) & e).values()) / max(1, sum(e.values()))
            for q, e in zip(queries, exact_hits, strict=True)
        ]
        row = {
            "shortlist": k,
            "scan_ms": 1000 * statistics.median(times),
            "recall@10": float(np.mean(recall[10])),
            "recall@100": float(np.mean(recall[100])),
            "overlap@10": float(np.mean(overlap)),
        }
        report["shortlists"].append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
