"""Discovery's clustering stage, held out by project: today's graph cut beside k-means over the
same vectors, with k set by a rule chosen on the other projects (issue 28, item 5).

    python bench/discovery_probe.py --out OUT [--json PATH]

OUT is the folder `themes_heldout.py` / `themes_trace_grid.py` built (OUT/<project>/home, the
archives of the labelled projects). Every variant clusters the
rows `Archive.discovery_input` gives (main agent, noise left out) and is scored as
`themes_heldout.py` scores discovery: labelled topics recovered at Jaccard >= 0.3 by their best
cluster. Variants: `graph` (today's `discover_themes`) and `kmeans` on the index's static
vectors with k = round(n / m) for each m of `PER_CLUSTER` (mean of `SEEDS`); m is chosen leave one
project out. BERTopic (MiniLM + UMAP + k-means) is in `themes_heldout.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
from theme_baselines import recovered
from themes_heldout import JACCARD, PROJECTS, label_topics, resolve_refs

from archive_mcp import Archive

PER_CLUSTER = (10, 15, 20, 30, 40, 60)
SEEDS = (0, 1, 2)


def topics_of(archive: Archive, ws: str, name: str) -> dict[str, set[tuple[str, str, int]]]:
    _, raw = label_topics(PROJECTS[name])
    refs = sorted({r for t in raw for r in t["members"]})
    resolved = resolve_refs(archive, refs)
    key = {r: (s, a, n) for r, (w, s, a, n) in resolved.items() if w == ws}
    return {t["name"]: {key[r] for r in t["members"] if r in key} for t in raw}


def kmeans_found(x: np.ndarray, keys: list[Any], topics: dict[str, set[Any]], k: int) -> float:
    from sklearn.cluster import KMeans

    found = []
    for seed in SEEDS:
        labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(x)
        clusters: dict[str, set[Any]] = {}
        for key, c in zip(keys, labels, strict=True):
            clusters.setdefault(str(c), set()).add(key)
        found.append(sum(f["found"] for f in recovered(topics, clusters, JACCARD).values()))
    return mean(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    result: dict[str, Any] = {}
    for name in PROJECTS:
        archive = Archive(args.out / name / "home")
        links, _ = label_topics(PROJECTS[name])
        ws = archive.workspace(next(iter(links)))
        topics = topics_of(archive, ws.id, name)
        _, frame, vectors = archive.discovery_input(ws)
        keys = [
            (s, a, int(n)) for s, a, n in frame.select("session_id", "agent", "turn").iter_rows()
        ]
        x = np.asarray(vectors, dtype=np.float32)
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
        d = archive.discover_themes(ws)
        graph = {t.name: {m.key for m in t.members} for t in d.themes}
        for t in d.themes:
            archive.delete_theme(t.slug, ws)
        result[name] = {
            "n": len(keys),
            "topics": len(topics),
            "graph": sum(f["found"] for f in recovered(topics, graph, JACCARD).values()),
            "graph_clusters": len(graph),
            "kmeans_static": {
                m: kmeans_found(x, keys, topics, max(2, round(len(keys) / m))) for m in PER_CLUSTER
            },
        }
        print(name, json.dumps(result[name]), file=sys.stderr, flush=True)
    names = list(result)
    held = {}
    for h in names:
        others = [o for o in names if o != h]
        m = max(
            PER_CLUSTER,
            key=lambda m: mean(result[o]["kmeans_static"][m] / result[o]["topics"] for o in others),
        )
        held[h] = {"m": m, "found": result[h]["kmeans_static"][m], "graph": result[h]["graph"]}
    print(json.dumps(held, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"projects": result, "held_out": held}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
