"""Themes held out by project (issue 28, item 1): archive-mcp beside standard baselines.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/themes_heldout.py AGENTS_DEV --out OUT \\
        [--json PATH] [--projects bonkbot,pai,mthisness,openprintkit] [--reuse] [--folds M.json]

For each labelled project (bonkbot: `labels/coding_themes.json` + `themes_bonkbot_now.json`;
pai: `themes_pai.json`; mthisness: `themes_mthisness.json`; openprintkit (Codex):
`themes_openprintkit.json`; folders as `themes_heldout.md` says) the project's sessions are archived into a throwaway home, OUT/<project>/home (rebuilt
unless `--reuse`; OUT must be outside the repository), and for every labelled topic:

1. `tag_theme` from its seeds (at most 3), then `trace_theme`;
2. member recall / precision; labelled changes (change + reversal entries) the trace flags;
   **claimed-change precision**: of the turns the trace presents as changes of course (its
   `decisions` whose flag is not `decision`: the "N changes of course" of the story's header, the
   later steps of its threads and its unpaired "- change:" lines; see `timeline._decisions`),
   the share that are labelled change/reversal turns of the topic (the shipped rules claim none,
   `TraceRules.claim_changes`; `--grid themes_heldout:CLAIMS` measures them on); **Now**: the
   first turn Now lists (`Timeline.now`, newest first, else the first turn cited in
   `Timeline.current_state`), and any of them, is a labelled `now` turn or a labelled member at
   least as recent as the latest `now` turn;
3. baselines cut at the member count `tag_theme` returned: BM25 of the joined seeds (Snowball
   stems, English stopwords) and its 0.5 / 0.5 z-fusion with the MiniLM cosine to the mean seed
   vector (`theme_baselines.SeedRanker`), over the turns tag_theme may attach (main agent,
   archive-mcp's noise filter applied) and, second, over every main-agent turn;
4. discovery: `discover_themes` vs BERTopic (packaged MiniLM, KMeans k = 10..20), both over the
   turns `Archive.discovery_input` gives (main agent, archive-mcp's noise filter `noise_mask`
   applied): labelled topics recovered at Jaccard >= 0.3 by their best cluster, and clusters of
   which more than half is noise (by `noise_mask` over all main-agent turns, or by the plain text
   rule `theme_baselines.noise_like`: a slash command without a tool call, command output, an
   empty turn). BERTopic is reported as the mean over k and with k chosen on the other projects.

Leave one project out: `leave_one_project_out(projects, grid, evaluate)` evaluates every setting
of `grid` on every project, then, per held-out project, picks the setting whose mean `objective`
(default: the mean of member F1, changes flagged, claimed-change precision, Now accuracy and
discovery recovery) is best on the other projects and reports that setting's figures on the
held-out one. A setting is a `heldout.rules.Rules` value (tagging's and the trace's rules, made
with `dataclasses.replace` from the shipped ones), passed to `tag_theme` and `trace_theme` of one
project; nothing is patched on a module.

`GRID` holds the shipped rules only; whoever changes a rule adds its candidate values to `GRID`
(or passes `--grid module:NAME`, a dict of label -> `Rules`) and reads the held-out column. The baselines do not depend on the setting and are computed once.
MiniLM vectors are cached in OUT/vectors (a second run embeds nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
import polars as pl
from agents_dev import corpus_paths, resolve_refs
from heldout.folds import leave_one_project_out, share
from heldout.rules import SHIPPED, Rules, fold_scores, trace
from textbook import TERMS, Vectors
from theme_baselines import (
    Key,
    SeedRanker,
    bertopic_clusters,
    mostly,
    noise_like,
    recall_precision,
    recovered,
    umap_reduce,
)

from archive_mcp import Archive
from archive_mcp.themes.noise import noise_mask
from archive_mcp.themes.trace.timeline import Timeline

REPO = Path(__file__).resolve().parent.parent
LABELS = Path(__file__).parent / "labels"
PAI_PROJECTS = "claude-code/procrypto__Personal_AI_Infrastructure/.claude/projects"
K_RANGE = range(10, 21)
JACCARD = 0.3
MINILM_CHARS = 2000  # a turn's text as MiniLM sees it (it reads 256 word pieces at most)

Setting = Rules
GRID: dict[str, Setting] = {"current": SHIPPED}  # add candidate rule settings here
# The shipped rules beside the same rules claiming changes of course (off by default, issue 41):
# `--grid themes_heldout:CLAIMS` measures the claim rules' precision in the same run.
CLAIMS: dict[str, Setting] = {"current": SHIPPED, "claim_changes": trace(claim_changes=True)}
# The figures the JSON keeps for every setting on every project (`every_setting`), not only the chosen.
HEADLINE = (
    "member_recall",
    "member_precision",
    "changes_flagged",
    "claimed_changes",
    "now_right",
)


# --- projects and labels ---------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    labels: str
    now_file: str | None  # bonkbot keeps its `now` labels in a file of their own
    folders: Callable[[Path], list[Path]]


def _bonkbot(root: Path) -> list[Path]:
    return [p for p in corpus_paths(root) if "BONKbot" in p.name and p.parent.name == "projects"]


def _pai(root: Path) -> list[Path]:
    return [root / PAI_PROJECTS / "-Users-neilhart", root / PAI_PROJECTS / "-Users-neilhart-PAI"]


def _mthisness(root: Path) -> list[Path]:
    return [root / "claude-code" / "M-Thisness__M-Claude" / "Archives"]


def _openprintkit(root: Path) -> list[Path]:
    sessions = root / "codex" / "Monotoba__OpenPrintKit" / ".codex" / "sessions"
    return sorted({p.parent for p in sessions.rglob("*.jsonl")})


PROJECTS: dict[str, Spec] = {
    "bonkbot": Spec("coding_themes.json", "themes_bonkbot_now.json", _bonkbot),
    "pai": Spec("themes_pai.json", None, _pai),
    "mthisness": Spec("themes_mthisness.json", None, _mthisness),
    "openprintkit": Spec("themes_openprintkit.json", None, _openprintkit),
}


@dataclass
class Topic:
    name: str
    seeds: list[str]
    members: set[Key]
    decisions: list[tuple[Key, str]]  # (turn, decision | change | reversal), one per label entry
    now: set[Key]


def label_topics(spec: Spec) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """The workspace links and the topics (with `now` refs) of a project's label files."""
    data = json.loads((LABELS / spec.labels).read_text(encoding="utf-8"))
    topics = data["topics"]
    if spec.now_file:
        now = json.loads((LABELS / spec.now_file).read_text(encoding="utf-8"))["now"]
        topics = [{**t, "now": now[t["name"]]} for t in topics]
    links = {name: ws["cwds"] for name, ws in data["workspaces"].items()}
    return links, topics


# --- one project's archive, turns and baselines ------------------------------------------------


@dataclass
class ProjectData:
    name: str
    archive: Archive
    ws: str
    topics: list[Topic]
    keys: list[Key]  # the workspace's main-agent turns
    texts: dict[Key, str]
    at: dict[Key, datetime | None]
    noise: set[Key]  # archive-mcp's noise filter
    noise_text: set[Key]  # theme_baselines.noise_like
    vectors: dict[Key, np.ndarray]  # MiniLM, unit length
    orders: dict[str, dict[str, list[Key]]] = field(default_factory=dict)  # topic -> run -> turns
    unresolved: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def build_archive(name: str, root: Path, home: Path, reuse: bool) -> tuple[Archive, float]:
    t = time.perf_counter()
    links, _ = label_topics(PROJECTS[name])
    if home.exists() and not reuse:
        shutil.rmtree(home)
    archive = Archive(home)
    if not archive.workspaces():
        folders = [f for f in PROJECTS[name].folders(root) if any(f.glob("*.jsonl"))]
        if not folders:
            raise SystemExit(f"no sessions of {name} under {root}: is it the agents-dev folder?")
        link_workspaces(archive, links)
        archive.ingest(*folders)
    return archive, time.perf_counter() - t


def link_workspaces(archive: Archive, links: Mapping[str, Sequence[str]]) -> None:
    """One named workspace per project, its cwds linked into it (as `ingest_agents_dev` does)."""
    from archive_mcp.workspaces import workspace_id

    for ws, cwds in links.items():
        head = archive.registry.ensure(workspace_id(cwds[0]), path=cwds[0], name=ws)
        for cwd in cwds[1:]:
            archive.link(cwd, head.id)


def load_project(
    name: str, root: Path, out: Path, reuse: bool, embed: Callable[[list[str]], np.ndarray]
) -> ProjectData:
    archive, ingest_s = build_archive(name, root, out / name / "home", reuse)
    links, raw = label_topics(PROJECTS[name])
    ws = archive.workspace(next(iter(links))).id
    t = time.perf_counter()
    refs = {r for x in raw for r in _refs(x)}
    resolved = resolve_refs(archive, sorted(refs))
    key = {r: (s, a, n) for r, (w, s, a, n) in resolved.items() if w == ws}
    unresolved = sorted(refs - set(key))
    topics = [
        Topic(
            x["name"],
            list(x["seeds"][:3]),
            {key[r] for r in x["members"] if r in key},
            [(key[d["turn"]], d["type"]) for d in x["decisions"] if d["turn"] in key],
            {key[r] for r in x["now"]["turns"] if r in key},
        )
        for x in raw
    ]
    frame = (
        archive.turns(ws)
        .filter(pl.col("agent") == "main")
        .select(
            "session_id",
            "agent",
            "turn",
            "started_at",
            "user_text",
            "assistant_text",
            "kinds",
            "tool_calls",
        )
        .collect()
    )
    keys = [(s, a, int(n)) for s, a, n in frame.select("session_id", "agent", "turn").iter_rows()]
    users, answers = frame["user_text"].to_list(), frame["assistant_text"].to_list()
    calls = frame["tool_calls"].list.len().fill_null(0).to_list()
    texts = {
        k: f"{u or ''}\n{a or ''}".strip() for k, u, a in zip(keys, users, answers, strict=True)
    }
    noise = {k for k, bad in zip(keys, noise_mask(frame), strict=True) if bad}
    noise_text = {
        k for k, u, a, c in zip(keys, users, answers, calls, strict=True) if noise_like(u, a, c)
    }
    matrix = embed([texts[k][:MINILM_CHARS] for k in keys])
    data = ProjectData(
        name,
        archive,
        ws,
        topics,
        keys,
        texts,
        dict(zip(keys, frame["started_at"].to_list(), strict=True)),
        noise,
        noise_text,
        dict(zip(keys, matrix, strict=True)),
        unresolved=unresolved,
        seconds={"ingest": round(ingest_s, 1)},
    )
    baseline_orders(data, embed)
    data.seconds["prepare_and_baselines"] = round(time.perf_counter() - t, 1)
    return data


def _refs(topic: dict[str, Any]) -> list[str]:
    out = list(topic["members"]) + list(topic["now"]["turns"])
    for d in topic["decisions"]:
        out += [r for r in (d.get("turn"), d.get("undoes")) if r]
    return out


def baseline_orders(p: ProjectData, embed: Callable[[list[str]], np.ndarray]) -> None:
    """Each topic's turns ranked by BM25 and by BM25 z+ MiniLM, over the turns tag_theme may
    attach (`fusion`, `bm25`) and over every non-empty main-agent turn (`fusion_all`, `bm25_all`)."""
    pools = {
        "": [k for k in p.keys if k not in p.noise and p.texts[k]],
        "_all": [k for k in p.keys if p.texts[k]],
    }
    rankers = {
        suffix: SeedRanker(
            [TERMS(p.texts[k]) for k in pool], np.stack([p.vectors[k] for k in pool])
        )
        for suffix, pool in pools.items()
    }
    for t in p.topics:
        seeds = embed(t.seeds)
        p.orders[t.name] = {}
        for suffix, ranker in rankers.items():
            pool = pools[suffix]
            for run, order in ranker.rankings(TERMS(" ".join(t.seeds)), seeds).items():
                p.orders[t.name][run + suffix] = [pool[i] for i in order]


# --- archive-mcp on one project ---------------------------------------------------------------


def now_named(tl: Timeline) -> list[Key]:
    """The turns the Now line names, in its order: `Timeline.now` when the code has it (an item
    or list of items with session_id, turn and maybe agent, or an object whose `turns` are such),
    else the turns cited as "(session:turn)" in `current_state`, the line's text."""
    now = getattr(tl, "now", None)
    if now is not None:
        items = getattr(now, "turns", now)
        items = items if isinstance(items, list | tuple) else [items]

        def get(x: Any, k: str) -> Any:
            return x.get(k) if isinstance(x, dict) else getattr(x, k, None)

        return [
            (get(x, "session_id"), get(x, "agent") or "main", int(get(x, "turn"))) for x in items
        ]
    text = tl.current_state
    cited = [(text.find(f"({e.ref})"), (e.session_id, e.agent, e.turn)) for e in tl.events]
    return [k for pos, k in sorted(c for c in cited if c[0] >= 0)]


def now_right(p: ProjectData, t: Topic, named: Key | None) -> bool:
    """A labelled `now` turn, or a labelled member at least as recent as the latest of them."""
    if named is None:
        return False
    if named in t.now:
        return True
    times = [p.at.get(k) for k in t.now]
    latest = max((x for x in times if x is not None), default=None)
    at = p.at.get(named)
    return named in t.members and latest is not None and at is not None and at >= latest


def trace_topic(p: ProjectData, t: Topic, rules: Rules = SHIPPED) -> dict[str, Any]:
    name = f"heldout-{t.name}"
    with contextlib.suppress(Exception):  # a theme left by an interrupted run of --reuse
        p.archive.delete_theme(name, p.ws)
    p.archive.tag_theme(name, p.ws, seeds=t.seeds, rules=rules.tag)
    tl = p.archive.trace_theme(name, p.ws, rules=rules.trace)
    p.archive.delete_theme(name, p.ws)
    traced = {(e.session_id, e.agent, e.turn) for e in tl.events}
    flags = {(d.session_id, d.agent, d.turn): d.flag for d in tl.decisions}
    claimed = {k for k, f in flags.items() if f != "decision"}
    changes = [k for k, kind in t.decisions if kind in ("change", "reversal")]
    named = now_named(tl)
    recall, precision = recall_precision(traced, t.members)
    base = {}
    for run, order in p.orders[t.name].items():
        r, pr = recall_precision(set(order[: len(traced)]), t.members)
        base[run] = {"recall": round(r, 3), "precision": round(pr, 3)}
    return {
        "members": len(t.members),
        "traced": len(traced),
        "recall": round(recall, 3),
        "precision": round(precision, 3),
        "baselines": base,
        "changes": len(changes),
        "changes_flagged": sum(k in flags for k in changes),
        "decisions": len(t.decisions),
        "decisions_flagged": sum(k in flags for k, _ in t.decisions),
        "flags": len(flags),
        "claimed_changes": len(claimed),
        "claimed_labelled_changes": len(claimed & set(changes)),
        "claimed_labelled_decisions": len(claimed & {k for k, _ in t.decisions}),
        "now_named": [f"{s}:{n}" for s, _, n in named],
        "now_labelled": sorted(f"{s}:{n}" for s, _, n in t.now),
        "now_right": now_right(p, t, named[0] if named else None),
        "now_any_right": any(now_right(p, t, k) for k in named),
    }


def discovery(p: ProjectData) -> dict[str, Any]:
    d = p.archive.discover_themes(p.ws)
    clusters = {t.name: {m.key for m in t.members} for t in d.themes}
    for t in d.themes:
        p.archive.delete_theme(t.slug, p.ws)
    return cluster_figures(p, clusters)


def cluster_figures(p: ProjectData, clusters: Mapping[str, set[Key]]) -> dict[str, Any]:
    found = recovered({t.name: t.members for t in p.topics}, clusters, JACCARD)
    return {
        "clusters": len(clusters),
        "found": sum(f["found"] for f in found.values()),
        "topics": len(p.topics),
        "mostly_noise": len(mostly(clusters, p.noise)),
        "mostly_noise_text": len(mostly(clusters, p.noise | p.noise_text)),
        "per_topic": found,
        "cluster_sizes": {c: len(t) for c, t in clusters.items()},
    }


def evaluate(p: ProjectData, setting: Setting) -> dict[str, Any]:
    """archive-mcp's figures on one project under one setting (baselines cut at its sizes)."""
    t0 = time.perf_counter()
    per = {t.name: trace_topic(p, t, setting) for t in p.topics}
    t1 = time.perf_counter()
    disc = discovery(p)
    t2 = time.perf_counter()
    runs = next(iter(per.values()))["baselines"].keys()
    total = lambda k: sum(x[k] for x in per.values())  # noqa: E731
    return {
        "member_recall": round(mean(x["recall"] for x in per.values()), 3),
        "member_precision": round(mean(x["precision"] for x in per.values()), 3),
        "baselines": {
            r: {
                m: round(mean(x["baselines"][r][m] for x in per.values()), 3)
                for m in ("recall", "precision")
            }
            for r in runs
        },
        "changes_flagged": [total("changes_flagged"), total("changes")],
        "decisions_flagged": [total("decisions_flagged"), total("decisions")],
        "claimed_changes": [total("claimed_labelled_changes"), total("claimed_changes")],
        "claimed_any_decision": [total("claimed_labelled_decisions"), total("claimed_changes")],
        "now_right": [total("now_right"), len(per)],
        "now_any_right": [total("now_any_right"), len(per)],
        "discovery": disc,
        "seconds": {"tag_and_trace": round(t1 - t0, 1), "discovery": round(t2 - t1, 1)},
        "per_topic": per,
    }


# --- BERTopic ---------------------------------------------------------------------------------


def bertopic_runs(p: ProjectData) -> dict[int, dict[str, Any]]:
    """BERTopic over the turns discover_themes clusters, for each k of K_RANGE."""
    _, frame, _ = p.archive.discovery_input(p.ws)
    keys = [(s, a, int(n)) for s, a, n in frame.select("session_id", "agent", "turn").iter_rows()]
    reduced = umap_reduce(np.stack([p.vectors[k] for k in keys]))
    docs = [p.texts[k] for k in keys]
    out = {}
    for k in K_RANGE:
        clusters, words = bertopic_clusters(docs, keys, reduced, k)
        out[k] = {**cluster_figures(p, clusters), "labels": words}
    return out


# --- the report -------------------------------------------------------------------------------


def _count(among: set[Key], groups: Sequence[set[Key]]) -> list[int]:
    """[in `among`, all] over the union of `groups`."""
    every = set().union(*groups)
    return [len(every & among), len(every)]


def pct(pair: Sequence[int]) -> str:
    return f"{pair[0]} of {pair[1]} ({100 * share(pair):.0f}%)"


def table(result: dict[str, Any]) -> str:
    projects = list(result["projects"])
    held = {p: result["held_out"][p]["figures"] for p in projects}
    bert = {p: result["bertopic"][p] for p in projects}
    rows: list[tuple[str, list[str], str]] = []

    def rp(p: str, run: str | None) -> tuple[float, float]:
        f = held[p] if run is None else held[p]["baselines"][run]
        return (
            (f["member_recall"], f["member_precision"])
            if run is None
            else (f["recall"], f["precision"])
        )

    for label, run in (
        ("member recall / precision: archive-mcp `tag_theme`", None),
        ("… baseline BM25 z+ MiniLM, same size", "fusion"),
        ("… baseline BM25 alone, same size", "bm25"),
        ("… baseline BM25 z+ MiniLM, same size, no noise filter", "fusion_all"),
        ("… baseline BM25 alone, same size, no noise filter", "bm25_all"),
    ):
        vals = [rp(p, run) for p in projects]
        rows.append(
            (
                label,
                [f"{r:.2f} / {pr:.2f}" for r, pr in vals],
                f"{mean(v[0] for v in vals):.2f} / {mean(v[1] for v in vals):.2f}",
            )
        )
    for label, k in (
        ("labelled changes flagged", "changes_flagged"),
        ("labelled decisions + changes flagged", "decisions_flagged"),
        (
            "**claimed changes of course that are labelled changes** (claims are off by default, "
            "`TraceRules.claim_changes`: a setting with it off claims none; measured with it on "
            "by `themes_trace_grid.py`)",
            "claimed_changes",
        ),
        ("claimed changes that are any labelled decision turn", "claimed_any_decision"),
        ("**Now names an up-to-date turn** (the first turn Now lists: its newest)", "now_right"),
        ("Now: any turn Now lists (up to 3) is up to date", "now_any_right"),
    ):
        pairs = [held[p][k] for p in projects]
        rows.append((label, [pct(x) for x in pairs], f"{100 * mean(share(x) for x in pairs):.0f}%"))

    def found(d: Mapping[str, Any]) -> str:
        return f"{d['found']} of {d['topics']} ({d['clusters']} clusters)"

    disc = [held[p]["discovery"] for p in projects]
    rows.append(
        (
            "discovery recovers labelled topics (J >= 0.3): archive-mcp `discover_themes`",
            [found(d) for d in disc],
            f"{100 * mean(d['found'] / d['topics'] for d in disc):.0f}%",
        )
    )
    means = [mean(bert[p]["by_k"][k]["found"] for k in K_RANGE) for p in projects]
    rows.append(
        (
            f"… BERTopic (MiniLM, KMeans), mean over k = {K_RANGE.start}..{K_RANGE.stop - 1}",
            [
                f"{m:.1f} of {len(result['projects'][p]['topics'])}"
                for m, p in zip(means, projects, strict=True)
            ],
            f"{100 * mean(m / len(result['projects'][p]['topics']) for m, p in zip(means, projects, strict=True)):.0f}%",
        )
    )
    chosen = [bert[p]["held_out"] for p in projects]
    rows.append(
        (
            "… BERTopic, k chosen on the other projects",
            [f"{found(c['figures'])}, k={c['chosen']}" for c in chosen],
            f"{100 * mean(c['figures']['found'] / c['figures']['topics'] for c in chosen):.0f}%",
        )
    )
    for label, figs in (
        ("clusters mostly noise (noise_mask / + text rule): archive-mcp", disc),
        ("… BERTopic, held-out k", [c["figures"] for c in chosen]),
    ):
        rows.append(
            (
                label,
                [
                    f"{d['mostly_noise']} / {d['mostly_noise_text']} of {d['clusters']}"
                    for d in figs
                ],
                f"{mean(d['mostly_noise_text'] for d in figs):.1f}",
            )
        )
    rows.append(
        (
            "runtime (s): ingest + baselines + tag/trace + discovery + BERTopic",
            [f"{result['projects'][p]['seconds']['total']:.0f}" for p in projects],
            f"total {sum(result['projects'][p]['seconds']['total'] for p in projects):.0f}",
        )
    )
    head = f"| measure | {' | '.join(projects)} | held-out mean |"
    lines = [head, "|---" * (len(projects) + 2) + "|"]
    lines += [f"| {label} | {' | '.join(cells)} | {m} |" for label, cells, m in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path, help="the agents-dev corpus folder")
    ap.add_argument(
        "--out", type=Path, required=True, help="archive homes and caches (outside the repo)"
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument("--projects", default=",".join(PROJECTS))
    ap.add_argument("--reuse", action="store_true", help="keep archives built by an earlier run")
    ap.add_argument("--grid", help="module:NAME of a dict of settings (default: the current code)")
    ap.add_argument(
        "--folds",
        type=Path,
        help="a `members_learned.py --json` file: each project is tagged with the membership "
        "constants fitted without it (fully held out) instead of the shipped ones",
    )
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == REPO or REPO in out.parents:
        ap.error("--out must be outside the repository")
    grid = GRID
    if args.grid:
        module, _, name = args.grid.partition(":")
        grid = getattr(importlib.import_module(module), name)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the packaged model only: nothing is downloaded
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from archive_mcp.refiners.embed import MiniLMEmbedder

    projects = [p for p in args.projects.split(",") if p]
    minilm = MiniLMEmbedder()
    data: dict[str, ProjectData] = {}
    result: dict[str, Any] = {"projects": {}, "bertopic": {}}
    for name in projects:
        vectors = Vectors(minilm.embed, out / "vectors" / f"{name}-minilm.npz")
        data[name] = p = load_project(name, args.agents_dev, out, args.reuse, vectors)
        vectors.save()
        t1 = time.perf_counter()
        by_k = bertopic_runs(p)
        p.seconds["bertopic"] = round(time.perf_counter() - t1, 1)
        result["bertopic"][name] = {"by_k": by_k}
        print(f"[{name}] prepared: {p.seconds}", file=sys.stderr, flush=True)

    every: dict[str, dict[str, Any]] = {}  # setting -> project -> its headline figures

    folds = fold_scores(args.folds) if args.folds else {}

    def run(name: str, setting: Setting) -> dict[str, Any]:
        figures = evaluate(data[name], setting.scored_by(folds.get(name)))
        label = next(n for n, s in grid.items() if s is setting)
        every.setdefault(label, {})[name] = {k: v for k, v in figures.items() if k in HEADLINE}
        print(f"[{name}] archive-mcp: {figures['seconds']}", file=sys.stderr, flush=True)
        return figures

    result["held_out"] = leave_one_project_out(projects, grid, run)
    result["every_setting"] = every
    bert = leave_one_project_out(
        projects,
        {str(k): k for k in K_RANGE},  # type: ignore[misc]
        lambda name, k: result["bertopic"][name]["by_k"][k],  # type: ignore[index]
        lambda f: f["found"] / max(1, f["topics"]),
    )
    for name in projects:
        p = data[name]
        result["bertopic"][name]["held_out"] = bert[name]
        result["bertopic"][name]["mean_found"] = round(
            mean(result["bertopic"][name]["by_k"][k]["found"] for k in K_RANGE), 2
        )
        figures = result["held_out"][name]["figures"]
        p.seconds.update(figures["seconds"])
        p.seconds["total"] = round(sum(v for k, v in p.seconds.items() if k != "total"), 1)
        result["projects"][name] = {
            "workspace_turns": len(p.keys),
            "noise_turns": len(p.noise),
            "noise_text_turns": len(p.noise_text - p.noise),
            "topics": [t.name for t in p.topics],
            # labelled turns archive-mcp's noise filter keeps out of every theme and of discovery
            "labelled_members_in_noise": _count(p.noise, [t.members for t in p.topics]),
            "labelled_decisions_in_noise": _count(
                p.noise, [{k for k, _ in t.decisions} for t in p.topics]
            ),
            "unresolved_refs": p.unresolved,
            "seconds": p.seconds,
        }
    print(table(result))
    for name in projects:
        print(
            f"- {name}: runtime {json.dumps(data[name].seconds)}; unresolved label refs: "
            f"{len(data[name].unresolved)}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
