"""The textbook hybrid as a baseline, in the same process as archive-mcp's default, held out.

    HF_HUB_OFFLINE=1 python bench/textbook.py --locomo DIR --agents-dev DIR --out OUT
        [--cache DIR] [--no-minilm] [--minilm-depth N] [--labels FILE ...] [--ablate]
        [--variants] [--static-model NAME=DIR ...] [--json FILE]

Retrievers, every one scored over the same archive (the data is read at run time):

- `a` BM25 (Snowball stemming, English stopwords, the turn's date prepended) + the neighbour and
  session context step (0.5 / 0.5 of the best neighbour's and the session's best score, summed).
- `b` BM25 (same) z-fused 0.5 / 0.5 with MiniLM (the packaged all-MiniLM-L6-v2): the query
  without the words in more than 10% of the workspace's turns, each turn scored by the mean of
  its whole-text and its best sentence's cosine; then the context step.
- `c` as `b` with the project's static model (model2vec, distilled from MiniLM) for MiniLM.
- `d` archive-mcp's default (`Archive.search`); `e` torch-free variants of it (`--variants`).
- `d-minilm` archive-mcp's own pipeline with the full MiniLM as its embedder
  (`Archive(embedder=...)`, a second archive of the same data): with `b`, it says whether a gap
  to the textbook recipe is the model's or the pipeline's.
- `f` (`--static-model NAME=DIR`, repeatable) the static recipe and the default with another
  model2vec folder (e.g. one distilled with other settings by tools/build_static_model.py).

Held out: LoCoMo leave-one-conversation-out and the coding queries leave-one-project-out; every
choice (the fusion weight, which retriever ships) is made on the other folds only. Vectors are
cached in `--cache` (a .npz per model and corpus): a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from realdata import (  # noqa: E402
    CATEGORIES,
    LabelledQuery,
    archive_ranker,
    coding_queries,
    locomo_queries,
    score,
    word_share,
)

from archive_mcp import Archive  # noqa: E402
from archive_mcp.search.lexical import ENGLISH_STOPWORDS, Postings, bm25  # noqa: E402
from archive_mcp.search.ranking import (  # noqa: E402
    Neighbours,
    semantic_query,
    split_sentences,
    with_context,
    zscored,
)

Key = tuple[str, int]
Ranker = Callable[[LabelledQuery], list[Key]]


class Vectors:
    """Text -> vector, embedded once per text and kept on disk between runs."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], path: Path | None) -> None:
        self.embed, self.path = embed, path
        self.known: dict[str, np.ndarray] = {}
        if path is not None and path.exists():
            saved = np.load(path, allow_pickle=False)
            self.known = dict(zip(saved["texts"].tolist(), saved["vectors"], strict=True))
        self.dirty = False

    def __call__(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.known]
        if todo:
            self.known.update(zip(todo, np.asarray(self.embed(todo), np.float32), strict=True))
            self.dirty = True
        return np.stack([self.known[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)

    def save(self) -> None:
        if self.path is not None and self.dirty:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(
                self.path,
                texts=np.array(list(self.known)),
                vectors=np.stack(list(self.known.values())),
            )
            self.dirty = False


class CachedEmbedder:
    """An engine embedder (`name`, `embed`) whose vectors go through a `Vectors` cache."""

    def __init__(self, name: str, vectors: Vectors) -> None:
        self.name, self.vectors = name, vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.vectors(list(texts))


@dataclass
class Workspace:
    """One workspace's turns as the textbook retrievers read them."""

    keys: list[Key]
    texts: list[str]
    postings: Postings
    nb: Neighbours
    share: Callable[[str], float]
    whole: dict[str, np.ndarray] = field(default_factory=dict)  # model -> turn vectors
    sentences: dict[str, Any] = field(default_factory=dict)  # model -> (owner, vectors, pieces)


def reference_terms() -> Callable[[str], list[str]]:
    import re

    import snowballstemmer

    stem = snowballstemmer.stemmer("english").stemWords
    word = re.compile(r"[a-z0-9]+")
    return lambda text: stem([w for w in word.findall(text.lower()) if w not in ENGLISH_STOPWORDS])


TERMS = reference_terms()


def load(archive: Archive, names: Iterable[str]) -> dict[str, Workspace]:
    out = {}
    for name in names:
        df = (
            archive.turns(archive.workspace(name).id)
            .select("session_id", "agent", "turn", "started_at", "user_text", "assistant_text")
            .collect()
        )
        keys, texts, docs = [], [], []
        for r in df.iter_rows(named=True):
            text = f"{r['user_text'] or ''}\n{r['assistant_text'] or ''}"
            day = r["started_at"].strftime("%-d %B %Y") if r["started_at"] else ""
            keys.append((r["session_id"], int(r["turn"])))
            texts.append(text)
            docs.append(TERMS(f"{day}\n{text}"))
        out[name] = Workspace(
            keys, texts, Postings.build(docs), Neighbours.of(df), word_share(archive, name)
        )
    return out


@dataclass
class Signals:
    """One query's per-turn scores over its workspace, computed once for every variant."""

    bm25: np.ndarray
    dense: dict[str, np.ndarray]  # model -> mean(whole, best sentence) cosine


def dense_scores(
    ws: Workspace, model: str, vectors: Vectors, query: str, depth: int, bm: np.ndarray
) -> np.ndarray:
    """Mean of whole-turn and best-sentence cosine; sentences of the `depth` best turns by BM25
    and by whole cosine (all turns when `depth` is 0); the others keep their whole cosine."""
    if model not in ws.whole:
        ws.whole[model] = vectors([t[:2000] for t in ws.texts])
        vectors.save()
    q = vectors([semantic_query(query, ws.share, 0.1)])[0]
    whole = ws.whole[model] @ q
    if depth < 0:  # whole-turn cosine only (MiniLM over long coding turns, on a loaded machine)
        return whole
    n = len(ws.keys)
    if depth and depth < n:
        cand = np.union1d(np.argsort(-whole)[:depth], np.argsort(-bm)[:depth])
    else:
        cand = np.arange(n)
    out = whole.copy()
    if model not in ws.sentences:
        pieces = [split_sentences(t) for t in ws.texts]
        owner = np.asarray([d for d, ps in enumerate(pieces) for _ in ps], np.int64)
        flat = [s for ps in pieces for s in ps]
        ws.sentences[model] = (owner, vectors(flat) if depth == 0 else None, pieces)
    owner, matrix, pieces = ws.sentences[model]
    best = np.full(n, -1.0, np.float32)
    if matrix is not None:
        np.maximum.at(best, owner, matrix @ q)
    else:  # the candidates' sentences, embedded in one batch
        flat = [x for d in cand for x in pieces[d]]
        if flat:
            own = np.asarray([d for d in cand for _ in pieces[d]], np.int64)
            np.maximum.at(best, own, vectors(flat) @ q)
    has = best > -1.0
    out[has] = (whole[has] + best[has]) / 2
    return out


def fused(sig: Signals, model: str | None, w: float, ws: Workspace, ctx: float = 0.5) -> np.ndarray:
    ok = np.ones(len(ws.keys), bool)
    if model is None:
        total = sig.bm25.astype(np.float32)
    else:
        total = (1 - w) * zscored("lexical", sig.bm25, ok) + w * zscored(
            "semantic", sig.dense[model], ok
        )
    return with_context(total.astype(np.float32), ws.nb, ctx, ctx, "sum")


def ranked(ws: Workspace, total: np.ndarray) -> list[Key]:
    order = np.argsort(-total, kind="stable")[:10]
    return [ws.keys[i] for i in order if total[i] > 0]


@dataclass
class Corpus:
    name: str
    archive: Archive
    queries: list[LabelledQuery]
    fold: Callable[[LabelledQuery], str]  # the held-out unit of a query
    depth: int  # sentence candidates per query (0: every turn)
    mini: int  # the same for MiniLM (-1: whole-turn cosine only)
    runs: dict[str, list[list[Key]]] = field(default_factory=dict)  # run -> per-query ranking

    def add(self, name: str, rank: Ranker) -> None:
        t = time.perf_counter()
        self.runs[name] = [rank(q) for q in self.queries]
        ms = 1000 * (time.perf_counter() - t) / max(1, len(self.queries))
        print(f"  [{self.name}] {name}: {ms:.0f} ms/query", file=sys.stderr, flush=True)


def textbook_runs(corpus: Corpus, models: dict[str, Vectors], weights: list[float]) -> None:
    names = sorted({q.workspace for q in corpus.queries})
    spaces = load(corpus.archive, names)
    signals = []
    t = time.perf_counter()
    for v in models.values():  # every query in one batch (one call per query is slow under load)
        v([semantic_query(q.text, spaces[q.workspace].share, 0.1) for q in corpus.queries])
    for i, q in enumerate(corpus.queries):
        ws = spaces[q.workspace]
        terms = [(x, 1.0) for x in dict.fromkeys(TERMS(q.text))]
        bm = bm25([ws.postings], terms, [np.ones(len(ws.keys), bool)])[0]
        dense = {
            m: dense_scores(ws, m, v, q.text, corpus.mini if m == "minilm" else corpus.depth, bm)
            for m, v in models.items()
        }
        signals.append(Signals(bm, dense))
        if i % 100 == 99:
            print(
                f"  [{corpus.name}] signals {i + 1} ({time.perf_counter() - t:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    for v in models.values():
        v.save()
    rows = [(corpus.queries[i], signals[i]) for i in range(len(signals))]
    corpus.runs["a BM25 + context"] = [
        ranked(spaces[q.workspace], fused(s, None, 0, spaces[q.workspace])) for q, s in rows
    ]
    corpus.runs["BM25 alone"] = [ranked(spaces[q.workspace], s.bm25) for q, s in rows]
    label = {"minilm": "b BM25 z+ MiniLM + context", "static": "c BM25 z+ static + context"}
    label |= {m: f"f BM25 z+ {m} + context" for m in models if m.startswith("static:")}
    for m in models:
        for w in weights:
            name = label[m] + ("" if w == 0.5 else f" (w {w})")
            corpus.runs[name] = [
                ranked(spaces[q.workspace], fused(s, m, w, spaces[q.workspace])) for q, s in rows
            ]


# --- measures ------------------------------------------------------------------------------


def scored(corpus: Corpus, run: str, keep: Callable[[LabelledQuery], bool]) -> dict[str, Any]:
    pairs = [(q, r) for q, r in zip(corpus.queries, corpus.runs[run], strict=True) if keep(q)]
    table = {id(q): r for q, r in pairs}
    return score([q for q, _ in pairs], lambda q: table[id(q)])


def held_out(
    corpus: Corpus, candidates: list[str], metric: str
) -> tuple[list[LabelledQuery], list[list[Key]], dict[str, str]]:
    """Per fold: the candidate run best on the other folds (by `metric`) ranks the fold's queries."""
    folds = sorted({corpus.fold(q) for q in corpus.queries})
    chosen: dict[str, str] = {}
    per_query: dict[int, list[Key]] = {}
    for f in folds:
        train = {
            c: scored(corpus, c, lambda q, f=f, c=corpus: c.fold(q) != f)["all"][metric]
            for c in candidates
        }
        best = max(candidates, key=lambda c: (train[c], -candidates.index(c)))
        chosen[f] = best
        for i, q in enumerate(corpus.queries):
            if corpus.fold(q) == f:
                per_query[i] = corpus.runs[best][i]
    return corpus.queries, [per_query[i] for i in range(len(corpus.queries))], chosen


def joint_choice(corpora: list[tuple[Corpus, str]], prefixes: tuple[str, ...]) -> str:
    """One default for both sets, held out: for each fold of each set, the candidate run with
    the best mean of (its set's metric over the set's other folds, the other set's metric over
    all its queries) ranks the fold. Returns the table and records the run in each corpus."""
    runs = [
        r
        for r in corpora[0][0].runs
        if r.startswith(prefixes) and all(r in c.runs for c, _ in corpora)
    ]
    whole = {c.name: {r: scored(c, r, lambda q: True)["all"][m] for r in runs} for c, m in corpora}
    lines = []
    for corpus, metric in corpora:
        others = [c.name for c, _ in corpora if c is not corpus]
        per_query: dict[int, list[Key]] = {}
        chosen: dict[str, str] = {}
        for f in sorted({corpus.fold(q) for q in corpus.queries}):
            train = {
                r: scored(corpus, r, lambda q, f=f, c=corpus: c.fold(q) != f)["all"][metric]
                + sum(whole[o][r] for o in others)
                for r in runs
            }
            best = max(runs, key=lambda r: (train[r], -runs.index(r)))
            chosen[f] = best
            for i, q in enumerate(corpus.queries):
                if corpus.fold(q) == f:
                    per_query[i] = corpus.runs[best][i]
        corpus.runs["held out: one default for both sets"] = [
            per_query[i] for i in range(len(corpus.queries))
        ]
        lines.append(f"{corpus.name}: chosen per fold {chosen}")
    return "\n".join(lines)


def report(
    corpus: Corpus, selections: dict[str, list[str]], metric: str, hit: bool
) -> dict[str, Any]:
    folds = sorted({corpus.fold(q) for q in corpus.queries})
    out: dict[str, Any] = {"folds": folds, "rows": {}, "chosen": {}}
    for sel, cands in selections.items():
        _, runs, chosen = held_out(corpus, cands, metric)
        corpus.runs[sel] = runs
        out["chosen"][sel] = chosen
    kinds = ["all", *CATEGORIES.values()] if not hit else ["all"]
    head = [f"{k} R@5 / R@10" for k in kinds] + [
        f"{f} {'R@10 / hit@5' if hit else 'R@5'}" for f in folds
    ]
    lines = ["| run | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for run in corpus.runs:
        res = scored(corpus, run, lambda q: True)
        cells = [
            f"{res[k]['recall@5']:.3f} / {res[k]['recall@10']:.3f}" if k in res else "-"
            for k in kinds
        ]
        per = {}
        for f in folds:
            r = scored(corpus, run, lambda q, f=f: corpus.fold(q) == f)["all"]
            per[f] = r
            cells.append(
                f"{r['recall@10']:.3f} / {r['hit@5']:.3f}" if hit else f"{r['recall@5']:.3f}"
            )
        out["rows"][run] = {"all": res, "folds": per}
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
    out["table"] = "\n".join(lines)
    print(f"\n### {corpus.name} ({len(corpus.queries)} queries)\n\n" + out["table"])
    for sel, ch in out["chosen"].items():
        print(f"\n{sel}: chosen per fold {ch}")
    return out


# --- the corpora -----------------------------------------------------------------------------


def project_of(rec: dict[str, Any]) -> str:
    """The project a labelled query belongs to: BONKbot's repos, PAI itself (both in the PAI
    folder of agents-dev), M-Thisness, or other."""
    files = rec.get("files") or []
    folder = files[0].split("/")[1] if files else ""
    if folder == "procrypto__Personal_AI_Infrastructure":
        return "BONKbot" if "BONKbot" in rec.get("cwd", "") else "PAI"
    return "M-Thisness" if folder == "M-Thisness__M-Claude" else "other"


LABEL_FILES = ("coding_queries*.jsonl", "queries_*.jsonl")


def label_files() -> list[Path]:
    here = Path(__file__).parent / "labels"
    return sorted(p for pattern in LABEL_FILES for p in here.glob(pattern))


def coding_corpus(root: Path, out: Path, labels: list[Path]) -> Corpus:
    from agents_dev import ingest_agents_dev

    archive = Archive(out / "coding" / "home", embedder="static")
    if not (out / "coding" / "home").exists():
        ingest_agents_dev(archive, root)
    queries: list[LabelledQuery] = []
    project: dict[str, str] = {}
    for path in labels:
        qs, _ = coding_queries(archive, path)
        recs = {
            r["qid"]: r for r in map(json.loads, filter(str.strip, path.read_text().splitlines()))
        }
        for q in qs:
            project[q.qid] = project_of(recs[q.qid])
        queries += qs
    return Corpus(
        "coding",
        archive,
        queries,
        lambda q: project[q.qid],
        depth=20,
        mini=-1,
    )


def locomo_corpus(root: Path, out: Path) -> Corpus:
    archive = Archive(out / "locomo" / "home", embedder="static")
    if not (out / "locomo" / "home").exists():
        archive.ingest(root / "kimi_share")
    queries = locomo_queries(root)
    return Corpus(
        "locomo",
        archive,
        queries,
        lambda q: q.workspace.rsplit("/", 1)[-1],
        depth=0,
        mini=0,
    )


def other_archive(corpus: Corpus, out: Path, label: str, embedder: Any) -> Archive:
    """The corpus in a second archive whose turns are embedded by `embedder`: a copy of the
    first archive's refined turns (no index, no vectors), embedded as ingest embeds them."""
    import shutil

    from archive_mcp.ingest.jobs import embed_item, embed_rows

    home = out / corpus.name / f"home-{label}"
    done = out / corpus.name / f"home-{label}.done"
    if not done.exists():
        t = time.perf_counter()
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(
            corpus.archive.home, home, ignore=shutil.ignore_patterns("cache", "embeddings")
        )
        archive = Archive(home, embedder=embedder)
        for ws in archive.workspaces():
            rows = archive.turns(ws).collect()
            pending = [
                (sid, [embed_item(r) for r in part.iter_rows(named=True)])
                for (sid,), part in rows.group_by("session_id", maintain_order=True)
            ]
            embed_rows(ws, embedder, pending)
        done.touch()
        print(
            f"  [{corpus.name}] archive {label}: {time.perf_counter() - t:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return Archive(home, embedder=embedder)


def models(
    archive: Archive, cache: Path, corpus: str, minilm: bool, statics: dict[str, Path]
) -> dict[str, Vectors]:
    from archive_mcp.refiners.embed import StaticEmbedder

    out = {"static": Vectors(archive.embedder.embed, cache / f"{corpus}-static.npz")}  # type: ignore[union-attr]
    if minilm:
        from archive_mcp.refiners.embed import MiniLMEmbedder

        out["minilm"] = Vectors(MiniLMEmbedder().embed, cache / f"{corpus}-minilm.npz")
    for name, path in statics.items():
        out[f"static:{name}"] = Vectors(
            StaticEmbedder(path).embed, cache / f"{corpus}-static-{name}.npz"
        )
    return out


def variants() -> dict[str, Any]:
    """Candidate torch-free defaults beside the shipped one (engine `Tuning` knobs)."""
    from archive_mcp.search.ranking import Tuning

    return {
        "e query with stopwords": Tuning(query_stopwords=True),
        "e query without stopwords": Tuning(query_stopwords=False),
        "e query with stopwords - fuzzy": Tuning(query_stopwords=True, fuzzy_weight=0.0),
        "e query without stopwords - fuzzy": Tuning(query_stopwords=False, fuzzy_weight=0.0),
    }


def index_copy(corpus: Corpus, out: Path, label: str, fields: tuple[str, ...]) -> Archive:
    """The corpus's archive copied without its search cache, its index built over `fields` of
    each turn (`archive_mcp.search.index.INDEXED`) instead of the shipped ones."""
    import shutil

    from archive_mcp.search import index as index_module

    home = out / corpus.name / f"home-index-{label}"
    if not home.exists():
        shutil.copytree(corpus.archive.home, home, ignore=shutil.ignore_patterns("cache"))
    archive = Archive(home, embedder=corpus.archive.embedder)
    shipped = index_module.INDEXED
    index_module.INDEXED = fields
    try:
        for name in sorted({q.workspace for q in corpus.queries}):
            archive.index(archive.workspace(name)).refresh()
    finally:
        index_module.INDEXED = shipped
    return archive


def index_runs(corpus: Corpus, out: Path, fieldsets: dict[str, tuple[str, ...]]) -> None:
    """`g`: every engine variant over each other index text (`--index-fields`)."""
    for label, fields in fieldsets.items():
        archive = index_copy(corpus, out, label, fields)
        for name, tuning in variants().items():
            corpus.add(f"g index {label}, {name[2:]}", archive_ranker(archive, tuning=tuning))


def default_runs(
    corpus: Corpus,
    ablate: bool,
    variant: bool,
    engines: dict[str, Any] | None = None,
) -> None:
    """`d`, its variants and ablations; `engines` maps a run's name to (archive, tuning)."""
    from archive_mcp.search.ranking import Tuning

    corpus.add("d archive-mcp default", archive_ranker(corpus.archive))
    for name, (archive, tuning) in (engines or {}).items():
        corpus.add(name, archive_ranker(archive, tuning=tuning))
    if variant:
        for name, tuning in variants().items():
            corpus.add(name, archive_ranker(corpus.archive, tuning=tuning))
    if not ablate:
        return
    base = Tuning()
    for name, tuning in {
        "d - best-sentence cosine": replace(base, sentence_depth=0),
        "d - fuzzy": replace(base, fuzzy_weight=0.0),
        "d with the old context (0.2 / 0.1, lifted)": replace(
            base, neighbour=0.2, session=0.1, context="lift"
        ),
    }.items():
        corpus.add(name, archive_ranker(corpus.archive, tuning=tuning))


def engine_runs(
    corpus: Corpus, out: Path, vecs: dict[str, Vectors], statics: dict[str, Path]
) -> dict[str, Any]:
    """The engine over second archives: with the full MiniLM (`d-minilm`; its sentence step
    only where the MiniLM recipe has one) and with each other static model (`f`)."""
    from archive_mcp.refiners.embed import MiniLMEmbedder, StaticEmbedder

    from archive_mcp.search.ranking import Tuning

    runs: dict[str, Any] = {}
    if "minilm" in vecs:
        archive = other_archive(
            corpus, out, "minilm", CachedEmbedder(MiniLMEmbedder.name, vecs["minilm"])
        )
        if corpus.mini < 0:
            name, tuning = (
                "d-minilm pipeline, full MiniLM (whole-turn cosine)",
                Tuning(sentence_depth=0),
            )
        else:
            name, tuning = "d-minilm pipeline, full MiniLM", Tuning()
        runs[name] = (archive, tuning)
    for label, path in statics.items():
        model = StaticEmbedder(path)
        model.name = f"static-{label}"
        archive = other_archive(corpus, out, f"static-{label}", model)
        runs[f"f archive-mcp default, static:{label}"] = (archive, Tuning())
    return runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", type=Path)
    ap.add_argument("--agents-dev", type=Path)
    ap.add_argument("--labels", type=Path, nargs="*", default=None)
    ap.add_argument("--out", type=Path, required=True, help="archives are built here once")
    ap.add_argument("--cache", type=Path, help="vector caches (default: OUT/vectors)")
    ap.add_argument("--no-minilm", action="store_true")
    ap.add_argument(
        "--minilm-depth",
        type=int,
        help="MiniLM sentence candidates per query (0 every turn, -1 whole-turn cosine only; "
        "default: 0 on LoCoMo, -1 on the coding set); d-minilm's sentence step follows it",
    )
    ap.add_argument(
        "--static-model",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another model2vec folder to compare (runs f)",
    )
    ap.add_argument("--ablate", action="store_true", help="also the default without each step")
    ap.add_argument("--variants", action="store_true", help="also candidate new defaults")
    ap.add_argument("--skip-textbook", action="store_true", help="only the engine's runs")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--index-fields",
        action="append",
        default=[],
        metavar="NAME=F1,F2,...",
        help="also every engine variant over an index of these turn fields (runs g; the fields "
        "of archive_mcp.search.index.INDEXED)",
    )
    ap.add_argument(
        "--joint", action="store_true", help="choose one default for both sets, held out"
    )
    args = ap.parse_args()
    fieldsets = {k: tuple(v.split(",")) for k, v in (x.split("=", 1) for x in args.index_fields)}
    cache = args.cache or args.out / "vectors"
    result: dict[str, Any] = {}
    weights = [0.3, 0.5, 0.7]
    corpora = []
    if args.locomo:
        corpora.append((locomo_corpus(args.locomo, args.out), "recall@5", False))
    if args.agents_dev:
        labels = args.labels or label_files()
        corpora.append((coding_corpus(args.agents_dev, args.out, labels), "recall@10", True))
    statics = {k: Path(v) for k, v in (x.split("=", 1) for x in args.static_model)}
    for corpus, _, _ in corpora:
        if args.minilm_depth is not None:
            corpus.mini = args.minilm_depth
        vecs = models(corpus.archive, cache, corpus.name, not args.no_minilm, statics)
        if not args.skip_textbook:
            textbook_runs(corpus, vecs, weights)
        engines = engine_runs(corpus, args.out, vecs, statics)
        default_runs(corpus, args.ablate, args.variants, engines)
        index_runs(corpus, args.out, fieldsets)
        for v in vecs.values():
            v.save()
    if args.joint and len(corpora) > 1:
        print("\n" + joint_choice([(c, m) for c, m, _ in corpora], ("d archive", "e ", "g ")))
    for corpus, metric, hit in corpora:
        static = [r for r in corpus.runs if r.startswith("c ")]
        selections = {
            "held out: static recipe, weight chosen in fold": static,
            "held out: ship chosen in fold (a / c / d / e / g)": [
                r for r in corpus.runs if r[:2] in ("a ", "c ", "d ", "e ", "g ")
            ],
            "held out: engine variant chosen in fold (d / e / g)": [
                r for r in corpus.runs if r[:2] in ("d ", "e ", "g ")
            ],
            "held out: static model chosen in fold (d / f default)": [
                r for r in corpus.runs if r.startswith(("d archive", "f archive"))
            ],
        }
        selections = {k: v for k, v in selections.items() if v}
        result[corpus.name] = report(corpus, selections, metric, hit)
    if args.json:
        args.json.write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
