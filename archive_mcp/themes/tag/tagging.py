"""Seed tagging: from 1-3 seed phrases to the turns of a theme, plus near misses to confirm.

With vectors, topic seeds join by one learned score (`by_score`, membership.py), which
replaced the rules below for them held out by project; the rules stay for question seeds and for
workspaces without vectors.

Each seed is searched with the words that most of the workspace shares taken out (a project's
name, the two speakers of a chat: they match everything and point the query vector nowhere).
Hits that are noise (commands that did no work, compaction summaries, continuation stubs, API
errors, interruptions) are never attached, nor are subagent turns (their parent turn stands for
them, as in discovery). With vectors, `min_score` scales shares of each seed's best hit: hits
from `core` x it are the core of the theme; weaker hits join when they sit as close to the core's
centroid as most of the core does, or touch the files the core keeps touching; the turns of a
conversation between two attached turns join, and so do the turns next to them when close to the
core. A question seed takes its best `question_core` hits as core, a topic seed its best
`topic_core` (tag/rules.py). Last, a random walk from the core over the graph of the turns around the seed hits
(walk.py) leaves out the attached turns that sit in other runs of work and brings in the turns of
the core's runs. Without vectors the hits from
`min_score` x the best are attached. The next hits come back as near misses with a one-line
summary each.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import polars as pl

from archive_mcp.errors import InvalidArgument
from archive_mcp.ingest import store as ingest_store
from archive_mcp.refiners.text import clip, tokens
from archive_mcp.refs import RefLike, TurnRef
from archive_mcp.search.context import canonical_ref
from archive_mcp.search.hits import SearchResults
from archive_mcp.search.index import WorkspaceIndex
from archive_mcp.search.ranking import Tuning
from archive_mcp.themes.noise import noise_mask
from archive_mcp.themes.store import Member, TagResult, Theme, ThemeError, ThemeStore, slug_of
from archive_mcp.themes.tag import membership
from archive_mcp.themes.tag.rules import TAG_RULES, TagRules
from archive_mcp.themes.tag.walk import local_turns, walk
from archive_mcp.workspaces import Workspace, locked
from archive_mcp.workspaces.clock import now

Key = tuple[str, str, int]


@dataclass
class Candidate:
    key: Key
    score: float
    provenance: str
    probability: float | None = None  # membership.probability's, for topic seeds


def focus(seed: str, index: WorkspaceIndex, common_share: float = TAG_RULES.common_share) -> str:
    """The seed without the words most of the workspace shares (kept whole if nothing is left)."""
    n = max(1, index.n_docs)
    if n < 20:
        return seed

    def common(word: str) -> bool:
        toks = tokens(word)
        return bool(toks) and all(
            sum(s.postings.df(t) for s in index.segments) / n > common_share for t in toks
        )

    kept = [w for w in seed.split() if not common(w)]
    return " ".join(kept) if kept and len(kept) < len(seed.split()) else seed


def seed_candidates(
    search: Callable[[str, int], Sequence[Any]],
    index: WorkspaceIndex,
    turns: Callable[[set[str]], pl.DataFrame],
    seeds: Sequence[str],
    min_score: float,
    rules: TagRules = TAG_RULES,
) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Candidates to attach and near misses, from each seed's hits (noise and subagents left out).

    A hit scoring at least `rules.core` x `min_score` x the seed's best is the core of the theme; a
    weaker one (down to `low` x `min_score`) joins when its vector is as close to the core's
    centroid as most of the core (`core_quantile`): a generic turn that shares a seed's words but
    not the topic stays out. A hit from `file_low` x `min_score` that touches the files the core
    keeps touching joins too, and so do the turns between two attached turns of a session at most
    `gap` apart (a conversation stays on its topic, and its short turns rarely match a seed) and the
    turns next to attached ones that are close to the core. Without vectors: the hits from
    `min_score` x the seed's best, as before."""
    runs = []
    for seed in seeds:
        hits = list(search(focus(seed, index, rules.common_share), rules.depth))
        runs.append((seed, hits))
    sessions = {h.session_id for _, hits in runs for h in hits}
    frame = turns(sessions) if sessions else pl.DataFrame()
    noisy = _noise(frame)
    x, pos = _vectors(index)
    share: dict[
        Key, tuple[float, float, str]
    ] = {}  # key -> (share of the seed's best, score, seed)
    near: list[dict[str, Any]] = []
    found: set[Key] = set()  # every seed's hits that may be attached, at any score
    for seed, hits in runs:
        good = [h for h in hits if membership.usable(h, noisy)]
        found.update((h.session_id, h.agent, h.turn) for h in good)
        if not good or good[0].score <= 0:
            continue
        best = good[0].score
        least = core_ranks(seed, x is not None, rules)
        for rank, h in enumerate(good):
            key = (h.session_id, h.agent, h.turn)
            s = h.score / best
            kept = max(s, rules.core * min_score) if rank < least else s
            if kept >= rules.low * min_score and kept > share.get(key, (0.0, 0.0, ""))[0]:
                share[key] = (kept, h.score, seed)
            if s < min_score * (rules.core if x is not None else 1.0) and len(
                near
            ) < 3 * rules.near_misses * len(seeds):
                near.append(
                    {
                        "session_id": h.session_id,
                        "agent": h.agent,
                        "turn": h.turn,
                        "ref": f"{h.session_id}:{h.turn}",
                        "score": h.score,
                        "share": round(s, 3),
                        "seed": seed,
                        "at": h.started_at,
                        "summary": clip(" ".join((h.summary or "").split()), 160),
                    }
                )
    if x is not None and rules.scored and not any(is_question(seed) for seed in seeds):
        return by_score(runs, frame, noisy, x, pos, share, min_score, rules)
    if x is None:  # no vectors to tell a topic from a word match: the hits from `min_score` on
        keep = {k for k, v in share.items() if v[0] >= min_score}
        attach = [Candidate(k, share[k][1], f"seed:{share[k][2]}") for k in keep]
    else:
        keep, closeness, own = close_to_core(
            x, pos, share, rules.core * min_score, rules.core_quantile
        )
        keep |= same_files(
            index,
            share,
            {k for k, v in share.items() if v[0] >= rules.core * min_score},
            rules.file_low * min_score,
            rules,
        )
        attach = [Candidate(k, share[k][1], f"seed:{share[k][2]}") for k in keep]
        away = {k for k in frame_keys(frame) if closeness(k) < float(own.min()) - rules.gap_margin}
        attach += fill_gaps(frame, keep, noisy | away, share, rules.gap)
        floor = float(
            np.quantile(
                own, 0.0 if any(is_question(seed) for seed in seeds) else rules.neighbour_quantile
            )
        )
        attach += next_to(
            frame, keep, noisy, lambda k: closeness(k) >= floor, share, {c.key for c in attach}
        )
        attach = by_walk(
            attach,
            frame,
            noisy,
            x,
            pos,
            found,
            {k: v[0] for k, v in share.items() if v[0] >= rules.core * min_score},
            seeds,
        )
    taken = {c.key for c in attach}
    seen: set[Key] = set()
    near_out = []
    for n in sorted(near, key=lambda n: -n["share"]):
        k = (n["session_id"], n["agent"], n["turn"])
        if k not in taken and k not in seen:
            seen.add(k)
            near_out.append(n)
    return attach, near_out[: rules.near_misses]


def by_score(
    runs: list[tuple[str, list[Any]]],
    frame: pl.DataFrame,
    noisy: set[Key],
    x: np.ndarray,
    pos: dict[Key, int],
    share: dict[Key, tuple[float, float, str]],
    min_score: float,
    rules: TagRules = TAG_RULES,
) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Topic seeds with vectors: the turns around the seeds' hits that `membership.probability`
    gives at least `membership.cut(min_score)`, and the best hits under it as near misses."""
    core = {k: v[0] for k, v in share.items() if v[0] >= rules.core * min_score}
    turns = [k for k in frame_keys(frame) if k[1] == "main" and k not in noisy and k in pos]
    chosen, near = membership.choose(
        runs, turns, noisy, x, pos, core, min_score, rules.score, rules.depth
    )
    return [Candidate(*c) for c in chosen], near[: rules.near_misses]


def core_ranks(seed: str, vectors: bool, rules: TagRules = TAG_RULES) -> int:
    """How many of a seed's best hits are core whatever their share: `rules.question_core` for a
    question, `rules.topic_core` for a topic; none without vectors (no centroid to check the rest by)."""
    if not vectors:
        return 0
    return rules.question_core if is_question(seed) else rules.topic_core


def close_to_core(
    x: np.ndarray,
    pos: dict[Key, int],
    share: dict[Key, tuple[float, float, str]],
    core: float,
    quantile: float = TAG_RULES.core_quantile,
) -> tuple[set[Key], Callable[[Key], float], np.ndarray]:
    """The core hits (share >= `core`), and the weaker ones whose vector is as close to the core's
    centroid (`x` rows, `pos` key -> row) as the `quantile` of the
    core's own closeness; a turn's closeness to that centroid (-1 without a vector), and the core
    turns' own."""
    strong = {k for k, v in share.items() if v[0] >= core}
    rows = [pos[k] for k in strong if k in pos]
    if len(rows) < 2:
        return strong, lambda k: 1.0, np.ones(1)
    centre = x[rows].mean(0)
    centre /= np.linalg.norm(centre) or 1.0
    own = x[rows] @ centre
    floor = float(np.quantile(own, quantile))

    def closeness(k: Key) -> float:
        return float(x[pos[k]] @ centre) if k in pos else -1.0

    keep = strong | {k for k in share if k not in strong and closeness(k) >= floor}
    return keep, closeness, own


def same_files(
    index: WorkspaceIndex,
    share: dict[Key, tuple[float, float, str]],
    core: set[Key],
    floor: float,
    rules: TagRules = TAG_RULES,
) -> set[Key]:
    """Hits from `floor` that touch a file the core keeps touching (in `rules.file_min` core turns)
    and few turns of the workspace do (at most `rules.file_share` of them): the files of a topic."""
    meta = index.meta
    keys = zip(
        meta["session_id"].to_list(), meta["agent"].to_list(), meta["turn"].to_list(), strict=True
    )
    files: dict[Key, list[str]] = {}
    df: Counter[str] = Counter()
    for k, fs, alive in zip(keys, meta["files"].to_list(), index.alive, strict=True):
        if alive and fs:
            files[k] = fs
            df.update(set(fs))
    limit = rules.file_share * max(1, sum(1 for a in index.alive if a))
    counts = Counter(f for k in core for f in set(files.get(k, ())) if df[f] <= limit)
    topic = {f for f, n in counts.items() if n >= rules.file_min}
    return (
        {k for k, v in share.items() if v[0] >= floor and topic.intersection(files.get(k, ()))}
        if topic
        else set()
    )


def by_walk(
    attach: list[Candidate],
    frame: pl.DataFrame,
    noisy: set[Key],
    x: np.ndarray,
    pos: dict[Key, int],
    hits: set[Key],
    core: dict[Key, float],
    seeds: Sequence[str],
) -> list[Candidate]:
    """The attached turns that a walk from the core keeps (walk.py), and the turns near the seed
    hits that it reaches (provenance `walk:<seeds>`)."""
    taken = {c.key for c in attach}
    turns = [k for k in frame_keys(frame) if k[1] == "main" and k not in noisy and k in pos]
    pool = local_turns(turns, hits, taken)
    drop, add = walk(pool, x[[pos[k] for k in pool]], core, taken)
    best = max((c.score for c in attach), default=0.0)
    return [c for c in attach if c.key not in drop] + [
        Candidate(k, best * 0.5, f"walk:{' | '.join(seeds)}") for k in sorted(add)
    ]


def frame_keys(frame: pl.DataFrame) -> list[Key]:
    return list(frame.select("session_id", "agent", "turn").iter_rows()) if frame.height else []


def fill_gaps(
    frame: pl.DataFrame,
    keep: set[Key],
    skip: set[Key],
    share: dict[Key, tuple[float, float, str]],
    gap: int = TAG_RULES.gap,
) -> list[Candidate]:
    """The turns of a session between two attached turns at most `gap` (non-noise)
    turns apart; `skip` (noise, turns off the topic) neither counts nor joins."""
    if not keep or not frame.height:
        return []
    order = (
        frame.filter(pl.col("agent") == "main")
        .select("session_id", "agent", "turn")
        .sort("session_id", "turn")
        .rows()
    )
    by_session: dict[str, list[Key]] = {}
    for k in order:
        if k not in skip:
            by_session.setdefault(k[0], []).append(k)
    out: list[Candidate] = []
    for session in sorted({k[0] for k in keep}):
        ks = by_session.get(session, [])
        at = [i for i, k in enumerate(ks) if k in keep]
        for a, b in zip(at, at[1:], strict=False):
            if 1 < b - a <= gap + 1:
                seed = share[ks[a]][2]
                out += [
                    Candidate(k, share[ks[a]][1] * 0.5, f"neighbour:{seed}") for k in ks[a + 1 : b]
                ]
    return out


def next_to(
    frame: pl.DataFrame,
    keep: set[Key],
    noisy: set[Key],
    close: Callable[[Key], bool],
    share: dict[Key, tuple[float, float, str]],
    taken: set[Key],
) -> list[Candidate]:
    """The turn before and after each attached turn of a session (noise skipped), when `close`:
    a topic runs over a few turns of a conversation, and a question's answer is spread over it."""
    order = (
        (
            frame.filter(pl.col("agent") == "main")
            .select("session_id", "agent", "turn")
            .sort("session_id", "turn")
            .rows()
        )
        if frame.height
        else []
    )
    ks = [k for k in order if k not in noisy]
    out: dict[Key, Candidate] = {}
    for i, k in enumerate(ks):
        if k not in keep:
            continue
        for j in (i - 1, i + 1):
            if (
                0 <= j < len(ks)
                and ks[j][0] == k[0]
                and ks[j] not in taken
                and ks[j] not in out
                and close(ks[j])
            ):
                out[ks[j]] = Candidate(ks[j], share[k][1] * 0.5, f"neighbour:{share[k][2]}")
    return list(out.values())


_QUESTION = re.compile(
    r"^\s*(?:what|when|where|who|whom|whose|why|how|which|did|does|do|is|are|was|were|has|have|"
    r"had|can|could|would|will|should)\b|[?？]\s*$",
    re.IGNORECASE,
)


def is_question(seed: str) -> bool:
    """A seed that asks something ("What did X do?") rather than naming a topic."""
    return bool(_QUESTION.search(seed))


def _vectors(index: WorkspaceIndex) -> tuple[np.ndarray | None, dict[Key, int]]:
    if not index.has_vectors():
        return None, {}
    parts = [s.dense() for s in index.segments if s.meta.height]
    dense: list[np.ndarray] = [d for d in parts if d is not None]
    if len(dense) != len(parts):
        return None, {}
    meta = index.meta
    pos = {
        k: i
        for i, k in enumerate(
            zip(
                meta["session_id"].to_list(),
                meta["agent"].to_list(),
                meta["turn"].to_list(),
                strict=True,
            )
        )
        if index.alive[i]
    }
    return np.concatenate(dense), pos


def _noise(frame: pl.DataFrame) -> set[Key]:
    if not frame.height:
        return set()
    keys = frame.select("session_id", "agent", "turn").iter_rows()
    return {k for k, bad in zip(keys, noise_mask(frame), strict=True) if bad}


# a theme takes the turns that match a seed themselves; a seed names a topic, so a path or dotted
# name in it (`judge.md`) counts by its pieces too, not only where the path is (search's default):
# held out, the path rule cost pai's members 0.860 -> 0.818 (bench/results/themes-heldout.md)
SEED_TUNING = Tuning(neighbour=0.0, session=0.0, sentence_depth=0, paths_whole=False)


def tag_theme(
    ws: Workspace,
    theme: str,
    references: Sequence[RefLike] | None,
    seeds: Sequence[str] | None,
    remove: Sequence[RefLike] | None,
    description: str | None,
    min_score: float,
    who: str,
    *,
    turns: Callable[[], pl.LazyFrame],
    refine: Callable[[str], object],
    search: Callable[[str, int], SearchResults],
    index: Callable[[], WorkspaceIndex],
    rules: TagRules = TAG_RULES,
) -> TagResult:
    """Attach confirmed turns, or search from 1-3 seeds (`search`, over `index()`) and attach the
    topic's hits by `rules`; sessions referenced but not refined yet are refined first (`refine`);
    `turns()` reads the workspace's refined turns. Returns what was attached and the near misses."""
    store = ThemeStore(ws)
    existing = store.get(theme)  # by slug, name, or a discovered theme's label
    slug = existing.slug if existing is not None else slug_of(theme)
    if seeds is not None and not 1 <= len(seeds) <= 3:
        raise ThemeError("give 1 to 3 seeds (keywords or a question)")
    if not references and not seeds and not remove and store.get(theme) is None:
        raise InvalidArgument(
            f"no theme named {theme!r} yet, and nothing to put in it: give references "
            "(turns found by a search, as session:turn) or 1-3 seeds"
        )
    refs = [canonical_ref(ws, r) for r in references or []]
    drop = {(r.session_id, r.agent, r.turn) for r in (canonical_ref(ws, x) for x in remove or [])}
    refined = _ensure_refined(ws, {r.session_id for r in refs}, refine)
    _check_refs(ws, refs, _turn_keys(turns, {r.session_id for r in refs}))
    when = now()
    candidates = [Member(r.session_id, r.agent, r.turn, "reference", who, when, None) for r in refs]
    near: list[dict[str, Any]] = []
    no_match = ""  # set when the seeds matched nothing strong
    if seeds:

        def turns_of(sessions: set[str]) -> pl.DataFrame:
            return (
                turns()
                .filter(pl.col("session_id").is_in(list(sessions)))
                .select(*_KEY, "user_text", "assistant_text", "kinds", "tool_calls")
                .collect()
            )

        strong: list[bool] = []  # per seed search: did any hit come out strong?

        def watched(query: str, limit: int) -> SearchResults:
            hits = search(query, limit)
            strong.append(any(h.confidence == "strong" for h in hits))
            return hits

        found, near = seed_candidates(watched, index(), turns_of, seeds, min_score, rules)
        # Topic seeds about what the project never did: say so, tag nothing. A question seed
        # takes its best hits whatever their strength (`question_core`): refusing questions too
        # dropped 24 of 137 LoCoMo multi-hop questions (evidence recall 0.792 -> 0.688).
        if not any(strong) and not any(is_question(seed) for seed in seeds):
            closest = f"; closest: {near[0]['ref']}" if near else ""
            no_match = f"no strong match for {' | '.join(seeds)}{closest}; nothing tagged"
            if not refs and not drop:
                return TagResult(
                    existing.name if existing else theme,
                    slug,
                    [],
                    near,
                    [],
                    len(existing.members) if existing else 0,
                    refined,
                    no_match,
                )
            found = []
        candidates += [
            Member(*c.key, c.provenance, who, when, c.score, c.probability) for c in found
        ]
    with locked(ws.root):
        current = store.get(theme) or Theme(theme, slug)
        if current.status == "suggested":  # confirming a suggestion makes it the user's theme
            current.status = "tagged"
        have = {m.key for m in current.members}
        attached = []
        for m in candidates:
            if m.key not in have and m.key not in drop:
                current.members.append(m)
                have.add(m.key)
                attached.append(m)
        removed = [asdict(m) for m in current.members if m.key in drop]
        current.members = [m for m in current.members if m.key not in drop]
        kept_seeds = [] if no_match else list(seeds or [])  # seeds that matched nothing stay out
        current.seeds = list(dict.fromkeys([*current.seeds, *kept_seeds]))
        if description is not None:
            current.description = description
        store.save(current)
    near = [n for n in near if (n["session_id"], n["agent"], n["turn"]) not in have]
    return TagResult(
        current.name,
        current.slug,
        attached,
        near,
        removed,
        len(current.members),
        refined,
        no_match,
    )


_KEY = ("session_id", "agent", "turn")


def _check_refs(ws: Workspace, refs: list[TurnRef], known: set[Key]) -> None:
    """Refuse a reference to a turn the workspace does not hold, saying which turns it does."""
    for r in refs:
        if (r.session_id, r.agent, r.turn) not in known:
            valid = sorted(t for s, a, t in known if s == r.session_id and a == r.agent)
            hint = (
                f"valid turns: {valid[0]}..{valid[-1]}"
                if valid
                else "unknown session; search for its turns"
            )
            raise ThemeError(
                f"no turn {r.session_id}:{r.turn} (agent {r.agent}) in workspace {ws.name}; {hint}"
            )


def _turn_keys(turns: Callable[[], pl.LazyFrame], sessions: set[str]) -> set[Key]:
    if not sessions:
        return set()
    df = turns().filter(pl.col("session_id").is_in(list(sessions))).select(*_KEY).collect()
    return set(df.iter_rows())


def _ensure_refined(ws: Workspace, sessions: set[str], refine: Callable[[str], object]) -> int:
    """Refine archived sessions that have no refined rows yet (on the way to tagging)."""
    missing = [
        s
        for s in sessions
        if ingest_store.read_refined(ws, s).height == 0 and s in ingest_store.raw_files(ws)
    ]
    for s in missing:
        refine(s)
    return len(missing)
