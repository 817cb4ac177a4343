"""Discovery's granularity held out by project: settings of the cluster stage chosen on the other
projects, scored on the one held out, beside BERTopic from the same run (issue 28, item 5).

    HF_HUB_OFFLINE=1 nice -n 10 python bench/discovery_grid.py AGENTS_DEV --out OUT [--reuse]
        [--json PATH] [--no-bertopic]

OUT is the folder `themes_heldout.py` builds (archives OUT/<project>/home, MiniLM cache
OUT/vectors). Every variant clusters the rows `Archive.discovery_input` gives (main agent, noise
left out) as `graph.cluster_turns` does: the broad themes (k-means micro-clusters merged by
average linkage at the space's cut) and the topics (Louvain communities of the turn graph that
do not repeat a broad theme), kept when they recur (`graph.recurs`: two sessions, or
`one_session` turns of one), have `min_size` turns and at most half the turns. A variant sets the Louvain resolution, the graph's neighbours and session-chain
weight, the weight of the rare keywords and files joined to the vectors (`DiscoveryRules.term_weight`), a
TF-IDF/SVD share of the space (`tfidf`: the static vectors joined with the texts' TF-IDF at that
weight), a merge of topics whose centroids are closer than a cosine (`merge`, 0 = off) and the
minimum size. Scored as `themes_heldout.py` scores discovery: labelled topics recovered at
Jaccard >= 0.3 by their best cluster, and clusters more than half noise (by `noise_mask` or the
text rule `theme_baselines.noise_like`). Per held-out project the variant with the best mean
recovery on the other projects (a variant with a noise cluster there ranks below every one without)
is chosen; BERTopic's k is chosen the same way.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
import polars as pl
from heldout.folds import leave_one_project_out
from textbook import Vectors
from theme_baselines import Key, bertopic_clusters, mostly, recovered, umap_reduce
from themes_heldout import (
    JACCARD,
    K_RANGE,
    PROJECTS,
    REPO,
    ProjectData,
    load_project,
)

from archive_mcp.themes.discover import (
    graph,
    topics,
)
from archive_mcp.themes.discover.discovery import tfidf_vectors
from archive_mcp.themes.discover.rules import DISCOVERY_RULES as RULES

SEEDS = (0, 1, 2)
# A variant may have at most this many times today's clusters on a project, or the labelled topics
# when today's clusters are fewer (two-session rule on a project of two sessions: 5 for 13).
BUDGET = 1.25


@dataclass(frozen=True)
class Variant:
    resolution: float = RULES.resolution
    neighbours: int = RULES.neighbours
    adjacent: float = RULES.topic_adjacent
    term_weight: float = RULES.term_weight
    tfidf: float = RULES.tfidf_share
    merge: float = 0.0
    min_size: int = 3
    one_session: int = RULES.one_session  # a one-session cluster is kept from this many turns
    broad: bool = True
    cut: float = RULES.mixed_cuts[
        "minilm-static-256"
    ]  # where the broad level cuts (cosine distance)


def grid() -> dict[str, Variant]:
    """The second grid of results/themes-heldout.md, the values before this round first (on a
    tie they stay), with the two-session rule it was run with (`one_session` 0). The first
    grid's one-factor variants: `Variant(resolution=...)`, `Variant(merge=...)`, ... (pass them
    with `--grid`)."""
    static = RULES.cuts["minilm-static-256"]
    old = {"one_session": 0}
    out = {"before": Variant(tfidf=0.0, cut=static, adjacent=3.0, **old)}
    for r in (3.0, 4.0):
        out[f"chain 1, resolution {r}"] = Variant(
            tfidf=0.0, cut=static, adjacent=1.0, resolution=r, **old
        )
    for c in (0.5, 0.6, 0.7):
        out[f"tfidf 1, cut {c}, chain 1"] = Variant(tfidf=1.0, cut=c, adjacent=1.0, **old)
    out["tfidf 0.5, cut 0.5, chain 1"] = Variant(tfidf=0.5, cut=0.5, adjacent=1.0, **old)
    out["tfidf 1, cut 0.6, chain 3"] = Variant(tfidf=1.0, cut=0.6, adjacent=3.0, **old)
    return out


def space(frame: pl.DataFrame, x: np.ndarray, weight: float) -> np.ndarray:
    """The static vectors, joined with `weight` x the texts' TF-IDF/SVD vectors (renormalised)."""
    if weight <= 0:
        return x
    texts = [
        f"{u or ''}\n{a or ''}\n{' '.join(k or [])}"
        for u, a, k in zip(
            frame["user_text"].to_list(),
            frame["assistant_text"].to_list(),
            frame["keywords"].to_list(),
            strict=True,
        )
    ]
    z = np.hstack([x, weight * tfidf_vectors(texts)])
    return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-9)


def merge_close(fine: dict[int, list[int]], x: np.ndarray, cosine: float) -> dict[int, list[int]]:
    """Communities whose centroids are closer than `cosine` (average linkage) joined into one."""
    from scipy.cluster.hierarchy import fcluster, linkage

    ids = list(fine)
    if cosine <= 0 or len(ids) < 2:
        return fine
    c = np.stack([x[fine[i]].mean(0) for i in ids])
    c /= np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-9)
    dist = np.clip(1 - c @ c.T, 0, 2)[np.triu_indices(len(ids), 1)]
    group = fcluster(linkage(dist, method="average"), 1 - cosine, "distance")
    out: dict[int, list[int]] = {}
    for i, g in zip(ids, group, strict=True):
        out.setdefault(graph.TOPIC_IDS + int(g), []).extend(fine[i])
    return out


def clusters_of(
    frame: pl.DataFrame, x: np.ndarray, v: Variant, seed: int = 0
) -> dict[int, list[int]]:
    """The clusters `graph.cluster_turns` keeps, under variant `v` (k-means and Louvain seeded)."""
    z = space(frame, x, v.tfidf)
    assign, _, broad = graph.micro_clusters(z, v.cut, seed=seed)
    coarse = broad[assign]
    files = [list(f or []) for f in frame["files"].to_list()]
    terms = topics.with_topic_terms(z, frame["keywords"].to_list(), files, weight=v.term_weight)
    g = graph.turn_graph(
        terms,
        frame["session_id"].to_list(),
        frame["turn"].to_list(),
        k=v.neighbours,
        adjacent=v.adjacent,
        seed=seed,
    )
    community = graph.louvain(g, resolution=v.resolution, seed=seed)
    fine: dict[int, list[int]] = {}
    for i, c in enumerate(community):
        fine.setdefault(graph.TOPIC_IDS + int(c), []).append(i)
    clusters: dict[int, list[int]] = {}
    if v.broad:
        for i, c in enumerate(coarse):
            clusters.setdefault(int(c), []).append(i)
    clusters.update(graph.new_topics(merge_close(fine, z, v.merge), coarse))
    sessions = frame["session_id"].to_list()
    return {
        c: idx
        for c, idx in clusters.items()
        if len(idx) >= v.min_size
        and graph.recurs(len(idx), len({sessions[i] for i in idx}), v.one_session)
        and len(idx) <= 0.5 * len(sessions)
    }


def figures(p: ProjectData, clusters: Mapping[str, set[Key]]) -> dict[str, Any]:
    found = recovered({t.name: t.members for t in p.topics}, clusters, JACCARD)
    return {
        "found": sum(f["found"] for f in found.values()),
        "topics": len(p.topics),
        "clusters": len(clusters),
        "mostly_noise": len(mostly(clusters, p.noise | p.noise_text)),
        "per_topic": {t: f["jaccard"] for t, f in found.items()},
    }


def objective(f: Mapping[str, Any]) -> float:
    """Topics recovered (share, mean over the seeds), less 1 when a cluster is mostly noise or
    the clusters outnumber `BUDGET` x today's on the project, or x its labelled topics when
    today's are fewer (finer is not what people label)."""
    over = f["clusters"] > BUDGET * max(f.get("clusters_today", f["clusters"]), f["topics"])
    return f["found"] / max(1, f["topics"]) - (1.0 if f["mostly_noise"] or over else 0.0)


def seeded(
    p: ProjectData, frame: pl.DataFrame, x: np.ndarray, keys: list[Key], v: Variant
) -> dict[str, Any]:
    """`figures` of a variant, averaged over `SEEDS` (k-means and Louvain move with the seed);
    `found_seed0` is what discovery (seed 0) gives."""
    runs = []
    for seed in SEEDS:
        cl = {str(c): {keys[i] for i in idx} for c, idx in clusters_of(frame, x, v, seed).items()}
        runs.append(figures(p, cl))
    return {
        **runs[0],
        "found_seed0": runs[0]["found"],
        "found": round(mean(r["found"] for r in runs), 2),
        "clusters": round(mean(r["clusters"] for r in runs), 1),
        "mostly_noise": max(r["mostly_noise"] for r in runs),
    }


def held_out(settings: Mapping[str, Any], run: Any) -> dict[str, Any]:
    """Per held-out project: the setting chosen on the other projects and its figures there."""
    held = leave_one_project_out(list(PROJECTS), settings, run, objective)
    short = ("found", "found_seed0", "topics", "clusters", "mostly_noise")
    return {
        n: {"chosen": h["chosen"], **{k: h["figures"][k] for k in short}} for n, h in held.items()
    }


def bertopic(p: ProjectData, frame: pl.DataFrame, keys: list[Key]) -> dict[int, dict[str, Any]]:
    """BERTopic (MiniLM + UMAP + KMeans(k)) over the same rows, for each k of `K_RANGE`."""
    reduced = umap_reduce(np.stack([p.vectors[k] for k in keys]))
    docs = [p.texts[k] for k in keys]
    out = {k: figures(p, bertopic_clusters(docs, keys, reduced, k)[0]) for k in K_RANGE}
    return {k: {**f, "found_seed0": f["found"]} for k, f in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--no-bertopic", action="store_true")
    ap.add_argument("--grid", help="module:NAME of a dict of Variants (default: `grid()`)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == REPO or REPO in out.parents:
        ap.error("--out must be outside the repository")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from archive_mcp.refiners.embed import MiniLMEmbedder

    minilm = MiniLMEmbedder()
    variants = grid()
    if args.grid:
        module, _, attr = args.grid.partition(":")
        variants = getattr(importlib.import_module(module), attr)
    result: dict[str, Any] = {"variants": {n: asdict(v) for n, v in variants.items()}}
    runs: dict[str, dict[str, Any]] = {n: {} for n in variants}
    bert: dict[str, dict[int, Any]] = {}
    for name in PROJECTS:
        vectors = Vectors(minilm.embed, out / "vectors" / f"{name}-minilm.npz")
        p = load_project(name, args.agents_dev, out, args.reuse, vectors)
        _, frame, vecs = p.archive.discovery_input(p.ws)
        x = np.asarray(vecs, np.float32)
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
        keys = [
            (s, a, int(n)) for s, a, n in frame.select("session_id", "agent", "turn").iter_rows()
        ]
        for vname, v in variants.items():
            f = runs[vname][name] = seeded(p, frame, x, keys, v)
            f["clusters_today"] = runs[next(iter(variants))][name]["clusters"]
            print(
                f"{vname:24s} {name:10s} {f['found']}/{f['topics']} clusters {f['clusters']} noise {f['mostly_noise']}",
                file=sys.stderr,
                flush=True,
            )
        if not args.no_bertopic:
            bert[name] = bertopic(p, frame, keys)
    names = {n: n for n in variants}
    result["held_out"] = held_out(names, lambda n, v: runs[v][n])
    if bert:
        ks = {str(k): k for k in K_RANGE}
        result["bertopic_held_out"] = held_out(ks, lambda n, k: bert[n][k])
    result["runs"] = runs
    print(json.dumps({k: result[k] for k in ("held_out", "bertopic_held_out") if k in result}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
