"""Discovery: a workspace's main-agent turns clustered into suggested themes, k not chosen.

Written as a sequence of stages, as BERTopic's `fit_transform` is, each a function `Stages` names
so that one can be swapped to try another: `select` (the turns that are not noise, with their
keywords, files and texts, and their index vectors) -> `space` (the vectors clustered: the
index's, joined with TF-IDF of the texts for the static model, else TF-IDF alone, and where to
cut) -> `cluster` (`graph.cluster_turns`, or `graph.cluster_sampled` past `graph.SAMPLE` turns)
-> `label` (class-based TF-IDF of a sample of
each cluster's words) -> `save` (ids kept stable across runs by member overlap; the clusters
written as `suggested` themes, the previous run's that are gone removed; `tagged` themes are never
touched)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.refiners.text import tokens
from archive_mcp.schema import empty_refined
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.themes.discover import graph
from archive_mcp.themes.discover.graph import (
    DiskRows,
    cluster_sampled,
    cluster_turns,
    match_rows,
    sample_rows,
)
from archive_mcp.themes.discover.rules import DISCOVERY_RULES, DiscoveryRules
from archive_mcp.themes.discover.vectors import tfidf, truncated_svd
from archive_mcp.themes.labels import class_tfidf, label_words, unique_label
from archive_mcp.themes.noise import noise_mask
from archive_mcp.themes.store import Member, Theme, ThemeStore, suggested
from archive_mcp.workspaces import Workspace, locked
from archive_mcp.workspaces.clock import now

LABEL_SAMPLE = 300
READ_FILES = 256  # refined session files read at once by discovery
_KEYS = ["session_id", "agent", "turn"]

Key = tuple[str, str, int]


@dataclass
class DiscoveryResult:
    themes: list[Theme]
    method: str  # embeddings | tfidf
    turns: int
    clustered: int
    seconds: float
    removed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "themes": [
                {
                    "name": t.name,
                    "slug": t.slug,
                    "cluster_id": t.cluster_id,
                    "size": len(t.members),
                    "keywords": t.keywords,
                }
                for t in self.themes
            ],
        }


# --- select: the rows and their vectors -----------------------------------------------------


def discovery_input(
    ws: Workspace, idx: WorkspaceIndex
) -> tuple[pl.DataFrame, np.ndarray | DiskRows | None]:
    """What `discover` clusters: the main agent's turns that are not noise, with their keywords,
    files and texts cut to 600 characters, and their index vectors (None when any has none:
    discovery then uses TF-IDF of the texts). The refined files are read `READ_FILES` at a time.
    Past `graph.SAMPLE` main-agent turns (with vectors for all), the vectors stay on disk
    (`DiskRows`), a bool column `sampled` marks the whole sessions `sample_rows` picks, and only
    their rows carry keywords, files and the user's text."""
    meta = (
        idx.meta.select("session_id", "agent", "turn")
        .with_row_index("row")
        .filter(pl.Series(idx.alive))
        .filter(pl.col("agent") == "main")
    )
    on_disk = meta.height > graph.SAMPLE and _vectors(idx, meta["row"].to_numpy()) is not None
    wanted = (
        set(meta.filter(pl.Series(sample_rows(meta["session_id"])))["session_id"].to_list())
        if on_disk
        else None
    )
    files = sorted(ws.refined_dir.glob("*.parquet")) if ws.refined_dir.is_dir() else []
    parts = [
        _discovery_rows(files[i : i + READ_FILES], wanted) for i in range(0, len(files), READ_FILES)
    ]
    noise, rows = (pl.concat(p) for p in zip(*parts or [_discovery_rows([], wanted)], strict=True))
    if wanted is None:
        frame = meta.join(rows, on=_KEYS, how="inner").sort("row")
    else:  # the keys of every turn are the index's, the rest only the sample's: joins whose
        # hash side is small (1M rows joined on three strings held 270 MB more at 1M turns)
        gone = meta.join(noise, on=_KEYS, how="inner")["row"].to_numpy()
        frame = meta.filter(~pl.Series(np.isin(meta["row"].to_numpy(), gone)))
        extra = meta.join(rows, on=_KEYS, how="inner").drop(_KEYS)
        frame = frame.join(extra, on="row", how="left").with_columns(
            sampled=pl.col("row").is_in(extra["row"].implode())
        )
        frame = frame if frame["row"].is_sorted() else frame.sort("row")
    vectors = _vectors(idx, frame["row"].to_numpy())
    if vectors is not None and wanted is None:
        return frame.drop("row"), vectors.take(np.arange(frame.height))  # in memory, as always
    return frame.drop("row"), vectors


def _discovery_rows(
    files: list[Path], sessions: set[str] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The keys of the noise among the main agent's turns in these refined files (the noise rules
    read the whole texts), and the other turns' keywords, files and texts cut to 600 characters
    (of `sessions` only, and only the user's text, when they are given)."""
    cols = [*_KEYS, "user_text", "assistant_text", "keywords", "files", "kinds", "tool_calls"]
    frame = (
        pl.scan_parquet([str(f) for f in files])
        .select(cols)
        .filter(pl.col("agent") == "main")
        .collect()
        if files
        else empty_refined().select(cols)
    )
    noise = pl.Series(noise_mask(frame), dtype=pl.Boolean)
    kept = frame.filter(~noise)
    if sessions is not None:
        kept = kept.filter(
            pl.col("session_id").is_in(list(sessions & set(kept["session_id"].unique().to_list())))
        )
    texts = ["user_text"] if sessions is not None else ["user_text", "assistant_text"]
    return (
        frame.filter(noise).select(_KEYS),
        kept.select(*_KEYS, "keywords", "files", *(pl.col(c).str.slice(0, 600) for c in texts)),
    )


def _vectors(idx: WorkspaceIndex, rows: np.ndarray) -> DiskRows | None:
    """The index vectors of these (increasing) rows, None when one has none."""
    if not idx.has_vectors():
        return None
    at, parts = (
        0,
        list[tuple[np.ndarray, np.ndarray]](),
    )  # (a segment's vectors, its rows among these)
    for s in idx.segments:
        end = at + s.has_vector.shape[0]
        mine = rows[(rows >= at) & (rows < end)] - at
        if s.vectors is None and len(mine) or not s.has_vector[mine].all():
            return None
        if s.vectors is not None and len(mine):
            parts.append((s.vectors, mine))
        at = end
    return DiskRows(parts) if parts else None


# --- space: the vectors clustered -----------------------------------------------------------


def tfidf_vectors(texts: list[str], dims: int = 128) -> np.ndarray:
    """Dense unit vectors from TF-IDF (+ SVD) when a workspace has no embeddings; zero rows for
    turns without a term another turn shares (all of them when no term is shared)."""
    try:
        m = tfidf((tokens(t) for t in texts), min_df=2, sublinear_tf=True)
    except ValueError:  # fewer than two turns, or no term in two of them
        return np.zeros((len(texts), 1), np.float32)
    if m.shape[1] > dims + 1:
        m = truncated_svd(m, dims, seed=0)
    else:
        m = m.toarray()
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1, norms)).astype(np.float32)


def discovery_space(
    frame: pl.DataFrame,
    vectors: np.ndarray | DiskRows | None,
    model: str | None,
    threshold: float | None = None,
    rules: DiscoveryRules = DISCOVERY_RULES,
) -> tuple[np.ndarray | DiskRows, float]:
    """The unit vectors discovery clusters (the index's, joined with TF-IDF of each turn's text
    for the models of `rules.mixed_cuts`; without vectors TF-IDF alone) and where to cut the broad
    themes in that space (`threshold` when given)."""
    mixed = (
        (model or "") in rules.mixed_cuts
        and rules.tfidf_share > 0
        and isinstance(vectors, np.ndarray)
    )
    if vectors is not None and not mixed:
        cut = rules.cuts.get(model or "", rules.default_cut)
        return vectors, threshold if threshold is not None else cut
    texts = [
        f"{r['user_text'][:600]}\n{r['assistant_text'][:600]}\n{' '.join(r['keywords'])}"
        for r in frame.iter_rows(named=True)
    ]
    if not mixed:
        return tfidf_vectors(texts), threshold if threshold is not None else rules.cuts["tfidf"]
    z = np.hstack([np.asarray(vectors, np.float32), rules.tfidf_share * tfidf_vectors(texts)])
    z /= np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-9)
    return z, threshold if threshold is not None else rules.mixed_cuts[model or ""]


# --- cluster --------------------------------------------------------------------------------


@dataclass
class Clusters:
    """What the cluster stage found: every cluster's rows (for labels), the clusters kept (big
    enough) with each member's similarity to its centroid, and the rows whose texts were read."""

    rows: dict[int, Any]
    keep: dict[int, Any]
    sims: dict[int, Any]
    sampled: np.ndarray


def cluster(
    frame: pl.DataFrame,
    x: np.ndarray | DiskRows,
    cut: float,
    min_size: int,
    rules: DiscoveryRules = DISCOVERY_RULES,
) -> Clusters:
    """Vectors on disk (`DiskRows`, past `graph.SAMPLE` turns) are clustered on a sample
    (`cluster_sampled`) and labelled from the sample's texts (the frame has no others)."""
    if isinstance(x, DiskRows):
        return Clusters(*cluster_sampled(frame, x, cut, min_size, rules=rules))
    clusters, keep = cluster_turns(frame, x, cut, min_size, rules=rules)
    sims = {c: x[idx] @ x[idx].mean(0) for c, idx in keep.items()}
    return Clusters(clusters, keep, sims, np.ones(frame.height, bool))  # type: ignore[arg-type]


# --- label ----------------------------------------------------------------------------------


def label(frame: pl.DataFrame, found: Clusters) -> dict[int, list[str]]:
    """Each cluster's distinctive words, from a sample of its turns (`LABEL_SAMPLE`): tokenising
    50k turns would dominate discovery."""
    sampler = np.random.default_rng(0)
    docs = {}
    for c, rows in found.rows.items():
        idx = [i for i in rows if found.sampled[i]] if not found.sampled.all() else rows
        pick = pl.Series(
            idx if len(idx) <= LABEL_SAMPLE else sampler.choice(idx, LABEL_SAMPLE, replace=False),
            dtype=pl.Int64,
        )
        docs[c] = [
            label_words(text[:600], kw)
            for text, kw in zip(
                frame["user_text"].gather(pick).to_list(),
                frame["keywords"].gather(pick).to_list(),
                strict=True,
            )
        ]
    return class_tfidf(docs)


# --- save -----------------------------------------------------------------------------------


class TurnKeys:
    """The frame's turn keys, packed (one string per session and agent) so that a saved theme's
    members find their rows without the frame: `key(row)` and `row_of(sessions, agents, turns)`."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.names = frame["session_id"].unique().sort().to_list()
        self.codes = frame["session_id"].rank("dense").to_numpy() - 1
        self.agents = frame["agent"].unique().sort().to_list()
        self.agent_codes = frame["agent"].rank("dense").to_numpy() - 1
        self.turns = frame["turn"].to_numpy()
        self.code_of = {n: i for i, n in enumerate(self.names)}
        self.agent_of = {n: i for i, n in enumerate(self.agents)}
        packed = (self.codes.astype(np.int64) * len(self.agents) + self.agent_codes) << 32
        packed = packed | self.turns.astype(np.int64)
        self.order = np.argsort(packed)
        self.packed = packed[self.order]

    def key(self, i: int) -> Key:
        return (
            self.names[int(self.codes[i])],
            self.agents[int(self.agent_codes[i])],
            int(self.turns[i]),
        )

    def row_of(self, sessions: list[str], agent: list[str], turn: list[int]) -> np.ndarray:
        s, a = (
            np.array([self.code_of.get(x, -1) for x in sessions]),
            np.array([self.agent_of.get(x, -1) for x in agent]),
        )
        packed, order = self.packed, self.order
        want = (s * len(self.agents) + a) << 32 | np.array(turn, np.int64)
        at = np.minimum(np.searchsorted(packed, want), max(len(packed) - 1, 0))
        return (
            np.where((s >= 0) & (a >= 0) & (packed[at] == want), order[at], -1)
            if len(packed)
            else np.full(len(s), -1)
        )


def save(
    ws: Workspace, keys: TurnKeys, found: Clusters, words: dict[int, list[str]], n: int
) -> tuple[list[Theme], list[str]]:
    """The clusters kept, saved as suggested themes under ids that follow the previous run's by
    member overlap; the previous run's suggestions without a successor removed."""
    store, keep, sims = ThemeStore(ws), found.keep, found.sims
    with locked(ws.root):
        saved = suggested(store.folder, keys.row_of)
        ids = match_rows(
            {c: np.asarray(idx, np.int64) for c, idx in keep.items()},
            {t.cluster_id: (rows, count) for t, rows, count in saved},  # type: ignore[misc]
            n,
        )
        previous = [t for t, _, _ in saved]
        when = now()
        themes: list[Theme] = []
        taken: set[str] = set()
        scores: dict[
            float, float
        ] = {}  # one float object per score (a million members: 50 MB less)
        for c, idx in sorted(keep.items(), key=lambda kv: ids[kv[0]]):
            cid = ids[c]
            name, why = unique_label(words[c], taken, cid), f"cluster:{cid}"
            theme = Theme(
                name,
                f"cluster-{cid}",
                f"Discovered: {', '.join(words[c])}",
                [],
                "suggested",
                [
                    Member(
                        *keys.key(i),
                        why,
                        "discover_themes",
                        when,
                        scores.setdefault(v := round(float(sim), 4), v),
                    )
                    for i, sim in zip(idx, sims[c], strict=True)
                ],
                cluster_id=cid,
                keywords=words[c],
            )
            prior = next((t for t in previous if t.cluster_id == cid), None)
            theme.created = prior.created if prior else ""
            store.save(theme)
            themes.append(theme)
        kept_ids = {t.cluster_id for t in themes}
        removed = []
        for t in previous:
            if t.cluster_id not in kept_ids:
                (store.folder / f"{t.slug}.json").unlink(missing_ok=True)
                removed.append(t.slug)
    return themes, removed


# --- the stages in sequence -----------------------------------------------------------------


@dataclass(frozen=True)
class Stages:
    """Discovery's stages; swap one (e.g. `replace(STAGES, cluster=...)`) to try another."""

    select: Callable[
        [Workspace, WorkspaceIndex], tuple[pl.DataFrame, np.ndarray | DiskRows | None]
    ] = discovery_input
    space: Callable[..., tuple[np.ndarray | DiskRows, float]] = discovery_space
    cluster: Callable[..., Clusters] = cluster
    label: Callable[[pl.DataFrame, Clusters], dict[int, list[str]]] = label
    save: Callable[..., tuple[list[Theme], list[str]]] = save


STAGES = Stages()


def discover_workspace(
    ws: Workspace,
    idx: WorkspaceIndex,
    min_size: int = 3,
    threshold: float | None = None,
    model: str | None = None,
    stages: Stages = STAGES,
    rules: DiscoveryRules = DISCOVERY_RULES,
) -> DiscoveryResult:
    """Select a workspace's rows (`stages.select`), then `discover` them by `rules`."""
    frame, vectors = stages.select(ws, idx)
    return discover(ws, frame, vectors, min_size, threshold, model, stages, rules)


def discover(
    ws: Workspace,
    frame: pl.DataFrame,
    vectors: np.ndarray | DiskRows | None,
    min_size: int = 3,
    threshold: float | None = None,
    model: str | None = None,
    stages: Stages = STAGES,
    rules: DiscoveryRules = DISCOVERY_RULES,
) -> DiscoveryResult:
    """Cluster a workspace's main-agent turns and save the clusters as suggested themes. With
    vectors on disk the frame is emptied once labelled (past the sample: a million rows' keys
    and their buffers, ~100 MB the caller has no more use for)."""
    t0 = time.perf_counter()
    method = "embeddings" if vectors is not None else "tfidf"
    x, cut = stages.space(frame, vectors, model, threshold, rules)
    found = stages.cluster(frame, x, cut, min_size, rules)
    keys = TurnKeys(frame)
    words, n = stages.label(frame, found), frame.height
    found.rows = {}  # the label sample's words and every cluster's rows: tens of MB
    for column in frame.columns if isinstance(x, DiskRows) else []:
        frame.drop_in_place(column)
    themes, removed = stages.save(ws, keys, found, words, n)
    clustered = sum(len(i) for i in found.keep.values())
    return DiscoveryResult(themes, method, n, clustered, time.perf_counter() - t0, removed)
