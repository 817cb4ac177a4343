"""Theme membership by a learned score over tagging's own signals, held out by project (issue 28,
item 4): `themes/tag/membership.py`'s logistic score beside the hand-set rules it replaced and the
BM25 z+ MiniLM cut at the same member count.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/members_learned.py AGENTS_DEV --out OUT --reuse
        [--json PATH] [--only f1,f2] [--add f1] [--drop f1] [--l2 1.0] [--mode cut|count] [--fit]

OUT is the folder `themes_heldout.py` builds (archives and MiniLM cache). For every labelled
topic the seeds are tagged as `tag_theme` does (`TagRules.scored` on), recording (`Score.record`)
the candidates and every signal `membership.signals` computes for them (nothing from the labels or
from MiniLM), and each candidate's label: is it a labelled member of the topic. The same call with
`SCORED` off gives what the rules attach ("rules"). The rows are cached in OUT (`--reuse`).

Leave one project out: a logistic model is fitted on the candidates of the other projects
(features standardised, L2 `--l2`), the probability cut chosen there by `heldout.rules.members_objective`
(recall less twice what precision falls under 0.65) of the training projects' mean recall and precision
(each macro over topics: the target is stated on the mean; `--cut-rule each` takes the mean of
each project's objective instead, the rule before session 12), and model and cut are
scored on the held-out project, beside the rules and the z-cut at the learned model's sizes.
`--fit` also fits on every project and prints the constants `tag/rules.py` ships (`Score`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pickle
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np
from heldout.rules import members_objective as objective
from textbook import Vectors
from theme_baselines import Key, recall_precision
from themes_heldout import PROJECTS, REPO, ProjectData, Topic, load_project

from archive_mcp.themes.tag import (
    membership,
    tagging,
)
from archive_mcp.themes.tag import rules as tag_rules
from archive_mcp.themes.tag.rules import TAG_RULES, TagRules

SIGNALS = (
    membership.SIGNALS
)  # every signal is cached; a model uses FEATURES (or --only / --add / --drop)
FEATURES = TAG_RULES.score.features


@dataclass
class Rows:
    topic: list[str]
    key: list[Key]
    x: np.ndarray
    y: np.ndarray


def tagged(p: ProjectData, t: Topic, scored: bool, rules: TagRules = TAG_RULES) -> set[Key]:
    """The turns `tag_theme` attaches for a topic's seeds, by the score or by the rules."""
    probe = f"learned-{os.getpid()}-{t.name}"
    with contextlib.suppress(Exception):
        p.archive.delete_theme(probe, p.ws)
    result = p.archive.tag_theme(probe, p.ws, seeds=t.seeds, rules=replace(rules, scored=scored))
    with contextlib.suppress(Exception):
        p.archive.delete_theme(probe, p.ws)
    return {m.key for m in result.attached}


def topic_rows(p: ProjectData, t: Topic, rules: TagRules = TAG_RULES) -> Rows:
    """One topic's candidates with their rows (what `tag_theme` computed) and labels."""
    log: dict[str, Any] = {}

    def record(keys: Any, rows: np.ndarray) -> None:  # every candidate and its signals
        log.update(keys=list(keys), rows=rows)

    tagged(p, t, True, replace(rules, score=replace(rules.score, record=record)))
    keys = log.get("keys", [])
    x = log.get("rows", np.zeros((0, len(SIGNALS))))
    y = np.array([float(k in t.members) for k in keys])
    return Rows([t.name] * len(keys), keys, x, y)


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> np.ndarray:
    """Logistic regression by Newton's method (weights, the bias last), L2 on the weights."""
    a = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(a.shape[1])
    reg = np.eye(a.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        g = a.T @ (p - y) + reg @ w
        h = (a * (p * (1 - p))[:, None]).T @ a + reg
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ w)))


def score(d: Project, prob: np.ndarray, cut: float, mode: str = "cut") -> dict[str, Any]:
    """Macro member recall / precision over topics of the candidates kept: with `mode` "cut" those
    with `prob` >= `cut`; with "count" each topic's best round(`cut` x the sum of its
    probabilities) (the expected member count, scaled). A topic with no candidates went by the
    rules (a question seed): what the rules attached."""
    rows, members = d.rows, d.members
    by: dict[str, list[tuple[float, Key]]] = {t: [] for t in members}
    for t, k, pr in zip(rows.topic, rows.key, prob, strict=True):
        by[t].append((float(pr), k))
    got: dict[str, set[Key]] = {}
    for t, items in by.items():
        if not items:
            got[t] = d.rules[t]
        elif mode == "cut":
            got[t] = {k for pr, k in items if pr >= cut}
        else:
            n = round(cut * sum(pr for pr, _ in items))
            got[t] = {k for _, k in sorted(items, key=lambda i: -i[0])[:n]}
    rp = [recall_precision(got[t], members[t]) for t in members]
    return {
        "member_recall": round(mean(r for r, _ in rp), 3),
        "member_precision": round(mean(p for _, p in rp), 3),
        "sizes": {t: len(g) for t, g in got.items()},
    }


CUTS = {
    "cut": [round(c, 3) for c in np.arange(0.05, 0.95, 0.025)],
    "count": [round(c, 3) for c in np.arange(0.5, 2.0, 0.05)],
}


@dataclass
class Project:
    """One project's candidates, its labelled members, what the rules attach and the z-cut's
    order of turns per topic (cached between runs: tagging is slow; the rows do not depend on
    the shipped constants, so what those attach is worked out from them at each run)."""

    rows: Rows
    members: dict[str, set[Key]]
    rules: dict[str, set[Key]]
    fusion: dict[str, list[Key]]


def build(
    agents_dev: Path, out: Path, reuse: bool, rules: TagRules = TAG_RULES
) -> dict[str, Project]:
    from archive_mcp.refiners.embed import MiniLMEmbedder

    minilm = MiniLMEmbedder()
    data: dict[str, Project] = {}
    for name in PROJECTS:
        vectors = Vectors(minilm.embed, out / "vectors" / f"{name}-minilm.npz")
        p = load_project(name, agents_dev, out, reuse, vectors)
        vectors.save()
        parts = [topic_rows(p, t, rules) for t in p.topics]
        rows = Rows(
            [t for r in parts for t in r.topic],
            [k for r in parts for k in r.key],
            np.vstack([r.x for r in parts]),
            np.concatenate([r.y for r in parts]),
        )
        data[name] = Project(
            rows,
            {t.name: t.members for t in p.topics},
            {t.name: tagged(p, t, False, rules) for t in p.topics},
            {t.name: list(p.orders[t.name]["fusion"]) for t in p.topics},
        )
        pool = macro(
            {
                t: set(k for n, k in zip(rows.topic, rows.key, strict=True) if n == t)
                for t in data[name].members
            },
            data[name].members,
        )
        print(f"{name}: {len(rows.key)} candidates, their recall {pool[0]}", file=sys.stderr)
    return data


def made_by(window: int) -> dict[str, Any]:
    """What the cached rows depend on: the labelled projects, the signals, the candidates' window
    and the code that tags and computes them (its source's digest)."""
    code = hashlib.sha256()
    for module in (membership, tagging, tag_rules):
        code.update(Path(module.__file__ or "").read_bytes())
    return {
        "projects": list(PROJECTS),
        "signals": SIGNALS,
        "window": window,
        "code": code.hexdigest(),
    }


def shipped(d: Project) -> list[float]:
    """Recall / precision of what the shipped constants attach (in sample: fitted on every
    project), from the cached rows as `membership.choose` decides at the default `min_score`."""
    f = score(d, membership.probability(membership.features(d.rows.x)), membership.cut(0.5))
    return [f["member_recall"], f["member_precision"]]


def macro(got: Mapping[str, set[Key]], members: Mapping[str, set[Key]]) -> list[float]:
    rp = [recall_precision(got[t], members[t]) for t in members]
    return [round(mean(r for r, _ in rp), 3), round(mean(p for _, p in rp), 3)]


def chosen_cut(
    projects: list[Project], prob: Callable[[Project], np.ndarray], mode: str, rule: str
) -> float:
    """The cut with the best objective over `projects`: of their mean recall and precision
    (`rule` "mean", how the target is stated) or the mean of each one's objective ("each": a
    project under the precision floor weighs on the cut by itself)."""

    def value(c: float) -> float:
        fs = [score(d, prob(d), c, mode) for d in projects]
        if rule == "each":
            return mean(objective(f) for f in fs)
        return objective({k: mean(f[k] for f in fs) for k in ("member_recall", "member_precision")})

    return max(CUTS[mode], key=value)


def fit_all(
    data: Mapping[str, Project], keep: list[int], l2: float, mode: str, rule: str = "mean"
) -> dict[str, Any]:
    """The model fitted on every project's candidates and the cut chosen on all of them: the
    constants `membership.py` ships (MEAN, SCALE, WEIGHTS, BIAS, CUT), in-sample figures."""
    x = np.vstack([d.rows.x[:, keep] for d in data.values()])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    w = fit((x - mu) / sd, np.concatenate([d.rows.y for d in data.values()]), l2)

    def prob(d: Project) -> Any:
        return predict(w, (d.rows.x[:, keep] - mu) / sd)

    best = chosen_cut(list(data.values()), prob, mode, rule)
    return {
        "MEAN": [round(float(v), 4) for v in mu],
        "SCALE": [round(float(v), 4) for v in sd],
        "WEIGHTS": [round(float(v), 4) for v in w[:-1]],
        "BIAS": round(float(w[-1]), 4),
        "CUT": best,
        "in_sample": {
            n: [score(d, prob(d), best, mode)[k] for k in ("member_recall", "member_precision")]
            for n, d in data.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--drop", default="", help="comma-separated features to leave out")
    ap.add_argument("--only", default="", help="comma-separated features to use alone")
    ap.add_argument("--add", default="", help="comma-separated signals to add to FEATURES")
    ap.add_argument("--mode", choices=sorted(CUTS), default="cut")
    ap.add_argument(
        "--cut-rule",
        choices=("mean", "each"),
        default="mean",
        help="the cut's objective: of the training projects' mean figures, or each one's (old)",
    )
    ap.add_argument("--fit", action="store_true", help="fit on every project; print the constants")
    ap.add_argument(
        "--window", type=int, help="the candidates' window (default: the shipped `Score.window`)"
    )
    args = ap.parse_args(argv)
    out = args.out.resolve()
    if out == REPO or REPO in out.parents:
        ap.error("--out must be outside the repository")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    window = TAG_RULES.score.window if args.window is None else args.window
    rules = replace(TAG_RULES, score=replace(TAG_RULES.score, window=window))
    cache = out / f"members_learned-w{window}.pickle"
    saved = pickle.loads(cache.read_bytes()) if args.reuse and cache.exists() else {}
    if saved.get("made_by") == made_by(window):
        data = saved["data"]
    else:  # no cache, or rows of other projects, signals or tagging code
        data = build(args.agents_dev, out, args.reuse, rules)
        cache.write_bytes(pickle.dumps({"made_by": made_by(window), "data": data}))
    only, dropped = set(filter(None, args.only.split(","))), set(args.drop.split(","))
    names = only or (set(FEATURES) | set(filter(None, args.add.split(",")))) - dropped
    keep = [i for i, f in enumerate(SIGNALS) if f in names]
    result: dict[str, Any] = {
        "features": [SIGNALS[i] for i in keep],
        "mode": args.mode,
        "held_out": {},
    }
    for held in data:
        train = [n for n in data if n != held]
        x = np.vstack([data[n].rows.x[:, keep] for n in train])
        mu, sd = x.mean(0), x.std(0) + 1e-9
        w = fit((x - mu) / sd, np.concatenate([data[n].rows.y for n in train]), args.l2)

        def prob(d: Project, w: np.ndarray = w, mu: np.ndarray = mu, sd: np.ndarray = sd) -> Any:
            return predict(w, (d.rows.x[:, keep] - mu) / sd)

        best = chosen_cut([data[n] for n in train], prob, args.mode, args.cut_rule)
        h = data[held]
        f = score(h, prob(h), best, args.mode)
        z = {t: set(h.fusion[t][: f["sizes"][t]]) for t in h.members}
        row = {
            "cut": best,
            "learned": [f["member_recall"], f["member_precision"]],
            "rules": macro(h.rules, h.members),
            "shipped_in_sample": shipped(h),
            "z_same_size": macro(z, h.members),
            "weights": {SIGNALS[i]: round(float(v), 3) for i, v in zip(keep, w, strict=False)},
            "constants": {  # membership.py's, as this fold fitted them (for these features)
                "MEAN": mu.tolist(),
                "SCALE": sd.tolist(),
                "WEIGHTS": w[:-1].tolist(),
                "BIAS": float(w[-1]),
                "CUT": best,
            },
        }
        result["held_out"][held] = row
        print(held, json.dumps({k: v for k, v in row.items() if k != "weights"}), file=sys.stderr)
    result["mean"] = {
        k: [round(mean(r[k][i] for r in result["held_out"].values()), 3) for i in (0, 1)]
        for k in ("learned", "rules", "z_same_size", "shipped_in_sample")
    }
    print(json.dumps(result["mean"]))
    if args.fit:
        result["fit"] = fit_all(data, keep, args.l2, args.mode, args.cut_rule)
        print(json.dumps(result["fit"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
