"""Themes: named sets of turns with provenance, tagged by hand, from seeds, or discovered.

A theme is `themes/<slug>.json` in its workspace. Discovery clusters a workspace's turns without
choosing k, labels each cluster by class-based TF-IDF, keeps cluster ids stable across runs by
member overlap, and writes `suggested` themes; it never touches `tagged` ones.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.errors import ArchiveError
from archive_mcp.refiners.text import STOPWORDS, is_cjk, tokens, words
from archive_mcp.search.lexical import ENGLISH_STOPWORDS
from archive_mcp.themes.graph import TOPIC_IDS as TOPIC_IDS  # discovery's clusters live in graph.py
from archive_mcp.themes.graph import (
    DiskRows,
    cluster_sampled,
    cluster_turns,
    greedy_ids,
    match_rows,
)
from archive_mcp.themes.graph import cluster_vectors as cluster_vectors
from archive_mcp.themes.graph import new_topics as new_topics
from archive_mcp.workspaces import Workspace, locked, read_json
from archive_mcp.workspaces.clock import now

_BAD_NAME = re.compile(r"[/\\\x00-\x1f]|^\.|\.\.")


class ThemeError(ArchiveError, ValueError):
    """A theme call the caller can fix; the message says how."""


def slug_of(name: str) -> str:
    """The file name of a theme; names that would leave the themes folder are refused."""
    if not isinstance(name, str) or not name.strip() or len(name) > 120 or _BAD_NAME.search(name):
        raise ThemeError(
            f"invalid theme name {name!r}: no slashes, no '..', no leading '.', 1-120 characters"
        )
    slug = re.sub(r"[^\w.-]+", "-", name.strip().lower(), flags=re.UNICODE).strip("-")
    if not slug or slug.startswith("."):
        raise ThemeError(f"invalid theme name {name!r}")
    return slug


@dataclass(slots=True)  # a discovered theme of a big workspace has hundreds of thousands
class Member:
    session_id: str
    agent: str
    turn: int
    provenance: str  # reference | seed:<query> | cluster:<id>
    who: str
    when: str
    score: float | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.session_id, self.agent, self.turn)


@dataclass
class Theme:
    name: str
    slug: str
    description: str = ""
    seeds: list[str] = field(default_factory=list)
    status: str = "tagged"  # tagged | suggested
    members: list[Member] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    cluster_id: int | None = None
    keywords: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Theme:
        members = [Member(**m) for m in d.get("members", [])]
        return cls(
            d["name"],
            d["slug"],
            d.get("description", ""),
            list(d.get("seeds", [])),
            d.get("status", "tagged"),
            members,
            d.get("created", ""),
            d.get("updated", ""),
            d.get("cluster_id"),
            list(d.get("keywords", [])),
        )


@dataclass
class TagResult:
    theme: str
    slug: str
    attached: list[Member]
    near_misses: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    members: int
    refined_sessions: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class ThemeStore:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.folder = ws.root / "themes"

    def path(self, name: str) -> Any:
        p = self.folder / f"{slug_of(name)}.json"
        if not p.resolve().is_relative_to(self.folder.resolve()):
            raise ThemeError(f"theme name {name!r} would leave the themes folder")
        return p

    def get(self, name: str) -> Theme | None:
        """A theme by slug or name; a discovered theme also by the label `list_themes` prints
        (labels such as "api / deploy" are not valid file names, so they are looked up)."""
        try:
            data = read_json(self.path(name))
        except ThemeError:
            found = self._by_label(name)
            if found is None:
                raise
            return found
        return Theme.from_json(data) if data is not None else self._by_label(name)

    def _by_label(self, name: str) -> Theme | None:
        wanted = name.strip().casefold()
        return next((t for t in self.list() if t.name.casefold() == wanted), None)

    def require(self, name: str) -> Theme:
        theme = self.get(name)
        if theme is None:
            known = ", ".join(t.name for t in self.list()) or "none yet"
            raise ThemeError(
                f"no theme {name!r} in workspace {self.ws.name}; known themes: {known}"
            )
        return theme

    def list(self) -> list[Theme]:
        if not self.folder.is_dir():
            return []
        out = []
        for p in sorted(self.folder.glob("*.json")):
            data = read_json(p)
            if isinstance(data, dict) and "name" in data:
                out.append(Theme.from_json(data))
        return out

    def save(self, theme: Theme) -> None:
        """Write `themes/<slug>.json` (as `atomic_write_json` would) without holding every member
        as a dict, or the whole text, at once."""
        theme.updated = now()
        theme.created = theme.created or theme.updated
        head = json.dumps(
            {**{f.name: getattr(theme, f.name) for f in fields(theme)}, "members": []},
            ensure_ascii=False,
            indent=2,
            sort_keys=True,
        ).split('"members": []', 1)
        path = self.folder / f"{theme.slug}.json"
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(head[0] + ('"members": [\n' if theme.members else '"members": ['))
                for at in range(0, len(theme.members), 4096):
                    part = (
                        textwrap.indent(
                            json.dumps(asdict(m), ensure_ascii=False, indent=2, sort_keys=True),
                            "    ",
                        )
                        for m in theme.members[at : at + 4096]
                    )
                    fh.write((",\n" if at else "") + ",\n".join(part))
                fh.write(("\n  ]" if theme.members else "]") + head[1] + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete(self, name: str) -> Theme:
        with locked(self.ws.root):
            theme = self.require(name)
            (self.folder / f"{theme.slug}.json").unlink()
        return theme


# --- discovery -----------------------------------------------------------------------------


def class_tfidf(docs_by_class: dict[Any, list[list[str]]], top: int = 5) -> dict[Any, list[str]]:
    """Distinctive words per class (BERTopic's c-TF-IDF): tf in the class x log(1 + A / f)."""
    return class_tfidf_counts(
        {
            c: Counter(t for doc in docs for t in doc if _label_token(t))
            for c, docs in docs_by_class.items()
        },
        top,
    )


def class_tfidf_of(frame: pl.DataFrame, cls: str, words: str, top: int = 5) -> dict[Any, list[str]]:
    """`class_tfidf` of a frame's list-of-words column by its class column (lowercased words),
    counted by Polars: a theme's timeline has a thousand turns of keywords."""
    counts: dict[Any, Counter[str]] = {
        c: Counter() for c in frame[cls].unique(maintain_order=True).to_list()
    }
    pairs = (
        frame.select(
            cls, pl.col(words).cast(pl.List(pl.String)).list.eval(pl.element().str.to_lowercase())
        )
        .explode(words)
        .drop_nulls(words)
        .group_by(cls, words)
        .len()
    )
    keep = {w for w in pairs[words].unique().to_list() if _label_token(w)}
    for c, w, n in pairs.filter(pl.col(words).is_in(list(keep))).iter_rows():
        counts[c][w] = n
    return class_tfidf_counts(counts, top)


def class_tfidf_counts(counts: dict[Any, Counter[str]], top: int = 5) -> dict[Any, list[str]]:
    """`class_tfidf` from the label words counted per class."""
    total: Counter[str] = Counter()
    for c in counts.values():
        total.update(c)
    avg = sum(sum(c.values()) for c in counts.values()) / max(1, len(counts))
    out = {}
    for cls, c in counts.items():
        n = sum(c.values()) or 1
        scored = {t: (k / n) * math.log(1 + avg / total[t]) for t, k in c.items()}
        out[cls] = [t for t, _ in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
    return out


def label_words(text: str, keywords: list[str]) -> list[str]:
    """Words a person would use for a label: whole words of the user's text and the turn's
    keywords (identifiers kept whole), CJK only as whole short phrases, never bigram fragments."""
    out = []
    for w in [*words(text), *keywords]:
        if is_cjk(w):
            if 2 <= len(w) <= 4:
                out.append(w)
        elif (
            w.isascii()
            and not w.startswith(("<", "/"))
            and "--" not in w
            and sum(ch.isalpha() for ch in w) >= max(3, 2 * len(w) // 3)
        ):
            out.append(w.lower())  # words, not dates, versions or numbered fragments
    return out


def _label_token(t: str) -> bool:
    if is_cjk(t):
        return len(t) >= 2
    return (
        len(t) >= 3
        and t not in STOPWORDS
        and t not in ENGLISH_STOPWORDS
        and not t.isdigit()
        and t not in _LABEL_NOISE
    )


# The summary's template words and tool names, and chat filler a person would not name a topic by
# (function words are ENGLISH_STOPWORDS: "them", "they", "same" made labels like "them / they").
_LABEL_NOISE = frozenset(
    "asked did outcome edited ran failed readfile strreplacefile writefile shell glob grep "
    "done file files line lines code cool nice great good sure thanks thank please "
    "yeah yep really actually just still even also maybe perhaps".split()
)


# Where to cut the centroid dendrogram (cosine distance), per vector space. Calibrated on the
# planted-theme corpus (bench/theme_corpus.py); data-driven cuts (silhouette, largest gap,
# nearest-neighbour quantiles) did worse on every space we tried: see bench/RESULTS.md.
CUTS = {"minilm-static-256": 0.35, "all-minilm-l6-v2": 0.6, "tfidf": 0.85}
LABEL_SAMPLE = 300
DEFAULT_CUT = 0.45


def tfidf_vectors(texts: list[str], dims: int = 128) -> np.ndarray:
    """Dense unit vectors from TF-IDF (+ SVD) when a workspace has no embeddings; zero rows for
    turns without a term another turn shares (all of them when no term is shared)."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(
        tokenizer=tokens, lowercase=False, token_pattern=None, min_df=2, sublinear_tf=True
    )
    try:
        m = vec.fit_transform(texts)
    except ValueError:  # fewer than two turns, or no term in two of them
        return np.zeros((len(texts), 1), np.float32)
    if m.shape[1] > dims + 1:
        m = TruncatedSVD(dims, random_state=0).fit_transform(m)
    else:
        m = m.toarray()
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1, norms)).astype(np.float32)


def match_clusters(
    new: dict[int, set[tuple[str, str, int]]],
    old: dict[int, set[tuple[str, str, int]]],
    min_overlap: float = 0.3,
) -> dict[int, int]:
    """New cluster -> stable id: greedy by Jaccard overlap with the previous run's clusters."""
    pairs = [
        (j, a, b)
        for a, ma in new.items()
        for b, mb in old.items()
        if (j := len(ma & mb) / max(1, len(ma | mb))) >= min_overlap
    ]
    return greedy_ids(pairs, list(new), list(old))


def suggested(
    folder: Path, row_of: Callable[[list[str], list[str], list[int]], np.ndarray]
) -> list[tuple[Theme, np.ndarray, int]]:
    """Saved suggestions (no members), their members' rows by `row_of` (-1: gone), how many."""
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        with p.open(encoding="utf-8") as fh:
            text = fh.read(_READ)
            while (start := text.find(_MEMBERS)) < 0 and (more := fh.read(_READ)):
                text += more
            if start >= 0:  # as `ThemeStore.save` writes it: the members a megabyte at a time
                rows, count, tail = _member_rows(fh, text[start + len(_MEMBERS) :], row_of)
                data = json.loads(text[:start] + '"members": []' + tail)
            else:
                data = json.loads(text)
                keys = [(m["session_id"], m["agent"], m["turn"]) for m in data.get("members", [])]
                found = (
                    row_of(*map(list, zip(*keys, strict=True))) if keys else np.zeros(0, np.int64)
                )  # type: ignore[call-arg]
                rows, count = np.unique(found[found >= 0]), len(keys)
        if (
            isinstance(data, dict)
            and data.get("status") == "suggested"
            and data.get("cluster_id") is not None
        ):
            out.append((Theme.from_json({**data, "members": []}), rows, count))
    return out


_MEMBERS, _READ = (
    '"members": [',
    1 << 20,
)  # how `ThemeStore.save` (json.dumps, indent 2) opens the members


def _member_rows(
    fh: Any, text: str, row_of: Callable[[list[str], list[str], list[int]], np.ndarray]
) -> tuple[np.ndarray, int, str]:
    """The rows of the members of the array `text` (then the file) goes on with, how many, and
    the rest of the file after the array; decoded one member at a time, read `_READ` at a time."""
    decoder, found, count, pos = json.JSONDecoder(), [np.zeros(0, np.int64)], 0, 0
    batch: tuple[list[str], list[str], list[int]] = ([], [], [])
    while True:
        while pos < len(text) and text[pos] in " \n\r\t,":
            pos += 1
        if pos < len(text) and text[pos] == "]":
            break
        try:
            m, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:  # a member cut by the end of what was read
            more = fh.read(_READ)
            if not more:
                raise
            text, pos = text[pos:] + more, 0
            continue
        for got, value in zip(batch, (m["session_id"], m["agent"], m["turn"]), strict=True):
            got.append(value)  # type: ignore[attr-defined]
        count += 1
        if len(batch[0]) == 65_536:
            found.append(row_of(*batch))
            batch = ([], [], [])
    found.append(row_of(*batch) if batch[0] else np.zeros(0, np.int64))
    rows = np.concatenate(found)
    return np.unique(rows[rows >= 0]), count, text[pos + 1 :] + fh.read()


def unique_label(words: list[str], taken: set[str], cid: int) -> str:
    """A label of a cluster's first three words, one no other cluster of this run has (each is
    found by its label). When it repeats, a later word takes the third place, so the difference
    shows where a list cuts a long label; then more of its words; else its id. Added to `taken`."""
    tries = (
        [words[:3]]
        + [words[:2] + [w] for w in words[3:]]
        + [words[:n] for n in range(4, len(words) + 1)]
    )
    label = next((lab for t in tries if t and (lab := " / ".join(t)).casefold() not in taken), None)
    if label is None:
        label = f"{' / '.join(words[:3])} ({cid})" if words else f"cluster {cid}"
    taken.add(label.casefold())
    return label


def discovery_space(
    frame: pl.DataFrame,
    vectors: np.ndarray | DiskRows | None,
    model: str | None,
    threshold: float | None = None,
) -> tuple[np.ndarray | DiskRows, float]:
    """The unit vectors discovery clusters (the index's, else TF-IDF of each turn's text) and
    where to cut the broad themes in that space (`threshold` when given)."""
    if vectors is not None:
        return vectors, threshold if threshold is not None else CUTS.get(model or "", DEFAULT_CUT)
    texts = [
        f"{r['user_text'][:600]}\n{r['assistant_text'][:600]}\n{' '.join(r['keywords'])}"
        for r in frame.iter_rows(named=True)
    ]
    return tfidf_vectors(texts), threshold if threshold is not None else CUTS["tfidf"]


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


def discover(
    ws: Workspace,
    frame: pl.DataFrame,
    vectors: np.ndarray | DiskRows | None,
    min_size: int = 3,
    threshold: float | None = None,
    model: str | None = None,
) -> DiscoveryResult:
    """Cluster a workspace's main-agent turns and save the clusters as suggested themes. Vectors
    on disk (`DiskRows`, past `graph.SAMPLE` turns) are clustered on a sample (`cluster_sampled`)
    and labelled from the sample's texts (the frame has no others); the frame is then emptied."""
    t0, store, method = (
        time.perf_counter(),
        ThemeStore(ws),
        "embeddings" if vectors is not None else "tfidf",
    )
    x, cut = discovery_space(frame, vectors, model, threshold)
    if isinstance(x, DiskRows):
        clusters, keep, sims, sampled = cluster_sampled(frame, x, cut, min_size)
    else:
        clusters, keep = cluster_turns(frame, x, cut, min_size)  # type: ignore[assignment]
        sims = {c: x[idx] @ x[idx].mean(0) for c, idx in keep.items()}
        sampled = np.ones(frame.height, bool)
    names = (
        frame["session_id"].unique().sort().to_list()
    )  # keys share one string per session and agent
    codes = frame["session_id"].rank("dense").to_numpy() - 1
    agents, agent_codes = (
        frame["agent"].unique().sort().to_list(),
        frame["agent"].rank("dense").to_numpy() - 1,
    )
    turns = frame["turn"].to_numpy()

    def key(i: int) -> tuple[str, str, int]:
        return names[int(codes[i])], agents[int(agent_codes[i])], int(turns[i])

    code_of, agent_of = {n: i for i, n in enumerate(names)}, {n: i for i, n in enumerate(agents)}
    packed = (codes.astype(np.int64) * len(agents) + agent_codes) << 32 | turns.astype(np.int64)
    packed = packed[order := np.argsort(packed)]

    def row_of(sessions: list[str], agent: list[str], turn: list[int]) -> np.ndarray:
        s, a = (
            np.array([code_of.get(x, -1) for x in sessions]),
            np.array([agent_of.get(x, -1) for x in agent]),
        )
        want = (s * len(agents) + a) << 32 | np.array(turn, np.int64)
        at = np.minimum(np.searchsorted(packed, want), max(len(packed) - 1, 0))
        return (
            np.where((s >= 0) & (a >= 0) & (packed[at] == want), order[at], -1)
            if len(packed)
            else np.full(len(s), -1)
        )

    # Labels need a sample, not every turn: tokenising 50k turns would dominate discovery.
    sampler = np.random.default_rng(0)
    docs = {}
    for c, rows in clusters.items():
        idx = [i for i in rows if sampled[i]] if not sampled.all() else rows
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
    words, n = class_tfidf(docs), frame.height
    del docs, clusters  # the label sample's words: tens of MB
    for column in (
        frame.columns if isinstance(x, DiskRows) else []
    ):  # the caller's rows are of no more use
        frame.drop_in_place(
            column
        )  # (past the sample: a million rows' keys and their buffers, ~100 MB)
    with locked(ws.root):
        found = suggested(store.folder, row_of)
        ids = match_rows(
            {c: np.asarray(idx, np.int64) for c, idx in keep.items()},
            {t.cluster_id: (rows, count) for t, rows, count in found},
            n,
        )  # type: ignore[misc]
        previous = [t for t, _, _ in found]
        when = now()
        themes: list[Theme] = []
        taken: set[str] = set()
        scores: dict[
            float, float
        ] = {}  # one float object per score (a million members: 50 MB less)
        for c, idx in sorted(keep.items(), key=lambda kv: ids[kv[0]]):
            cid = ids[c]
            label, why = unique_label(words[c], taken, cid), f"cluster:{cid}"
            theme = Theme(
                label,
                f"cluster-{cid}",
                f"Discovered: {', '.join(words[c])}",
                [],
                "suggested",
                [
                    Member(
                        *key(i),
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
    return DiscoveryResult(
        themes, method, n, sum(len(i) for i in keep.values()), time.perf_counter() - t0, removed
    )
