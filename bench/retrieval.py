"""Retrieval quality: the generated labelled set, and real conversations (LoCoMo dev half).

    python bench/retrieval.py [--embedder static|minilm] [--locomo DIR] [--agents-dev DIR] [--rerank [minilm|e5|all]]
                              [--no-generated] [--no-ablation] [--reuse] [--out bench/out/retrieval]

`--locomo` is the locomo-dev folder (its `kimi_share/` and `qrels.jsonl`, read at run time);
`--agents-dev` the agents-dev corpus, searched with `bench/labels/coding_queries.jsonl`.
`--reuse` keeps the archives of an earlier run in `--out` (the ingest is then a no-op);
`--no-ablation` measures only the default beside the references.
Prints recall@5, recall@10 and MRR per mode and per category (markdown tables), the tuned-BM25
reference computed in the same run, an ablation of the ranking choices, and JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from realdata import (  # noqa: E402
    CATEGORIES,
    archive_ranker,
    cached_second_stage,
    coding_queries,
    locomo_queries,
    score,
    table,
    tuned_bm25,
)

from archive_mcp import Archive  # noqa: E402
from archive_mcp.search import ranking  # noqa: E402
from archive_mcp.search.ranking import Tuning  # noqa: E402
from archive_mcp.search.rerank import SPECS  # noqa: E402
from archive_mcp.synthetic.evaluation import MODES, build, evaluate  # noqa: E402


def generated(out: Path, embedder: str) -> dict[str, Any]:
    queries = build(out / "kimi")
    archive = Archive(out / "home", embedder=embedder)
    t = time.perf_counter()
    report = archive.ingest(out / "kimi")
    print(
        f"generated set: {report.turns_added} turns, {len(queries)} queries, ingest "
        f"{time.perf_counter() - t:.1f} s (embedder {embedder})"
    )
    results = evaluate(archive, queries, "retrieval-eval")
    kinds = ["all", "identifier", "typo", "paraphrase", "zh"]
    print("\n| mode | " + " | ".join(f"{k} R@5 / R@10 / MRR" for k in kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for mode in MODES:
        cells = [
            f"{results[mode][k]['recall@5']:.2f} / {results[mode][k]['recall@10']:.2f} / {results[mode][k]['mrr']:.2f}"
            for k in kinds
        ]
        print(f"| {mode} | " + " | ".join(cells) + " |")
    return results


ABLATE = True

# CombSUM (each signal max-scaled to [0, 1], then summed): measured here against the z-score
# default, not offered by the archive itself.
ranking.FUSIONS["combsum"] = ranking.normalised


def ablations(default: Tuning) -> dict[str, dict[str, Any]]:
    """Each ranking choice undone on its own, beside the default."""
    if not ABLATE:
        return {"archive-mcp hybrid (default)": {}}
    runs: dict[str, dict[str, Any]] = {
        "archive-mcp lexical": {"mode": "lexical"},
        "archive-mcp semantic": {"mode": "semantic"},
        "archive-mcp hybrid (default)": {},
        "- neighbour/session share": {"tuning": replace(default, neighbour=0.0, session=0.0)},
        "- session share only": {"tuning": replace(default, session=0.0)},
        "- names kept in the semantic query": {"tuning": replace(default, common_share=1.0)},
        "context shares lifted, not summed": {"tuning": replace(default, context="lift")},
        "z-scores -> CombSUM (max-scaled)": {"fusion": "combsum"},
        "z-scores -> RRF": {"fusion": "rrf"},
        "- best-sentence cosine (static, top 40)": {"tuning": replace(default, sentence_depth=0)},
        "+ stopwords out of the lexical query": {"tuning": replace(default, query_stopwords=False)},
        "- paths asked counted by their pieces alone": {
            "tuning": replace(default, paths_whole=False)
        },
    }
    return runs


def locomo(root: Path, out: Path, embedder: str, rerank: list[str]) -> dict[str, Any]:
    queries = locomo_queries(root)
    archive = Archive(out / "home", embedder=embedder)
    t = time.perf_counter()
    report = archive.ingest(root / "kimi_share")
    print(
        f"\nlocomo-dev: {report.turns_added} turns, {len(queries)} questions (categories 1-4 with evidence), "
        f"ingest {time.perf_counter() - t:.1f} s (embedder {embedder})"
    )
    workspaces = sorted({q.workspace for q in queries})
    rows: dict[str, dict[str, Any]] = {
        "BM25 plain (reference)": score(
            queries, tuned_bm25(archive, workspaces, stem=False, date=False)
        ),
        "BM25 + stemming + stopwords (reference)": score(
            queries, tuned_bm25(archive, workspaces, date=False)
        ),
        "BM25 + stemming + stopwords + date (tuned reference)": score(
            queries, tuned_bm25(archive, workspaces)
        ),
    }
    timings = run_ablations(
        archive, queries, rows, lambda r, ms: f"R@5 {r['all']['recall@5']:.3f} ({ms:.0f} ms/query)"
    )
    for model in rerank:  # an opt-in second stage, its vectors computed once for the set
        t = time.perf_counter()
        name = f"+ {model} second stage (top {SPECS[model].depth}, opt-in)"
        rows[name] = score(
            queries,
            cached_second_stage(archive, workspaces, model, cache=out / f"{model}-vectors.npz"),
        )
        print(
            f"  {name}: R@5 {rows[name]['all']['recall@5']:.3f} ({time.perf_counter() - t:.0f} s with the embedding)",
            flush=True,
        )
    print()
    print(table(rows, ["all", *CATEGORIES.values()]))
    return {"results": rows, "ms_per_query": timings}


def run_ablations(
    archive: Archive,
    queries: list[Any],
    rows: dict[str, dict[str, Any]],
    line: Callable[[dict[str, Any], float], str],
) -> dict[str, float]:
    """Score the default and each ablation of `ablations()` into `rows`, printing `line(result,
    ms per query)` as each finishes; returns the ms per query of each."""
    timings: dict[str, float] = {}
    for name, kwargs in ablations(Tuning()).items():
        t = time.perf_counter()
        rows[name] = score(queries, archive_ranker(archive, **kwargs))
        timings[name] = 1000 * (time.perf_counter() - t) / len(queries)
        print(f"  {name}: {line(rows[name], timings[name])}", flush=True)
    return timings


CODING_CATEGORIES = ["error", "why", "how", "where", "paraphrase", "identifier", "typo"]


def coding(root: Path, out: Path, embedder: str) -> dict[str, Any]:
    from agents_dev import ingest_agents_dev

    labels = Path(__file__).parent / "labels"
    archive = Archive(out / "home", embedder=embedder)
    t = time.perf_counter()
    report = ingest_agents_dev(archive, root)  # no links: each query is searched in its own cwd
    queries, unresolved = coding_queries(archive, labels / "coding_queries.jsonl")
    print(
        f"\ncoding set: {report.turns_added} turns, {len(queries)} queries with resolved evidence "
        f"({unresolved} label refs unresolved), ingest {time.perf_counter() - t:.1f} s (embedder {embedder})"
    )
    workspaces = sorted({q.workspace for q in queries})
    rows: dict[str, dict[str, Any]] = {
        "BM25 + stemming + stopwords + date (tuned reference)": score(
            queries, tuned_bm25(archive, workspaces)
        ),
    }
    timings = run_ablations(
        archive,
        queries,
        rows,
        lambda r, ms: f"R@10 {r['all']['recall@10']:.3f} hit@5 {r['all']['hit@5']:.3f}",
    )
    print()
    print(table(rows, ["all", *CODING_CATEGORIES], hit=True))
    return {"results": rows, "ms_per_query": timings, "unresolved_refs": unresolved}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedder", default="static")
    ap.add_argument(
        "--locomo", type=Path, help="the locomo-dev folder (kimi_share/ and qrels.jsonl)"
    )
    ap.add_argument(
        "--agents-dev", type=Path, help="the agents-dev corpus folder (for the coding query set)"
    )
    ap.add_argument(
        "--rerank",
        nargs="?",
        const="minilm",
        choices=[*SPECS, "all"],
        help="also measure an opt-in second stage on LoCoMo (minilm, the default, e5 or all; "
        "vectors computed once for the set)",
    )
    ap.add_argument("--no-generated", action="store_true", help="skip the generated set")
    ap.add_argument(
        "--no-ablation", action="store_true", help="only the default beside the references"
    )
    ap.add_argument(
        "--reuse", action="store_true", help="keep the archives of an earlier run in --out"
    )
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "retrieval")
    args = ap.parse_args()
    global ABLATE
    ABLATE = not args.no_ablation
    if not args.reuse:
        shutil.rmtree(args.out, ignore_errors=True)
    report: dict[str, Any] = {}
    if not args.no_generated:
        report["generated"] = generated(args.out / "generated", args.embedder)
    if args.locomo:
        rerank = (
            [] if args.rerank is None else list(SPECS) if args.rerank == "all" else [args.rerank]
        )
        report["locomo"] = locomo(args.locomo, args.out / "locomo", args.embedder, rerank)
    if args.agents_dev:
        report["coding"] = coding(args.agents_dev, args.out / "coding", args.embedder)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
