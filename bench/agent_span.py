"""The ends of a topic's story under `order=time` (issue 41): does one time-ordered search reach
the first and the last labelled decision of a topic?

    HF_HUB_OFFLINE=1 nice -n 10 python bench/agent_span.py AGENTS_DEV --out OUT \\
        [--projects bonkbot,pai,mthisness,openprintkit] [--reuse] [--query title|name]
        [--limit 8] [--grid] [--json PATH]
    HF_HUB_OFFLINE=1 nice -n 10 python bench/agent_span.py --speed HOME [--reps 5]

The projects, their archives (OUT/<project>/home, rebuilt unless `--reuse`) and their labels are
`agent_proxy.py`'s (`themes_heldout.PROJECTS`); tuning: bonkbot and pai, held out: mthisness and
openprintkit. One question per labelled topic with a decision whose turn resolves: its **first**
and **last** decision turns (the earliest and the latest by the turns' times; the label files list
them in time order). The policy, fixed, through the MCP tools as an agent calls them:

    search_context(query=<the topic>, workspace=<the project>, order="time", limit=8)

(`--limit N`: another limit.) The query is the topic's `title` (default) or its `name` with the
hyphens as spaces: a question about how a decision evolved names the topic, not one of its
decisions (a decision's own words would hand the search one end of the story). Per question:
the first decision turn is among the hits shown (the structured hits, what the budget kept), the
last one is, and the characters read (the result's text).

`--grid` also scores, on the library's ranking (`Archive.search` asked for `depth * limit` hits, no
budget), every `Span` setting of GRID beside the plain top `limit`: the settings are chosen on the
tuning projects and read on the held-out ones. The MCP figures are those of the checkout imported
(run it with another checkout's package first on PYTHONPATH for that checkout's).

`--speed HOME` times `Archive.search` (limit 8, `search.QUERIES`, hybrid and lexical) without and
with the span `order=time` passes, interleaved, on the first workspace of HOME (e.g. the 50k-turn
archive `scale.py` makes, OUT/base/home).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).parent))

import anyio  # noqa: E402
from agent_proxy import Key, report  # noqa: E402
from agents_dev import resolve_refs  # noqa: E402
from themes_heldout import PROJECTS, build_archive, label_topics  # noqa: E402

from archive_mcp import Archive  # noqa: E402
from archive_mcp.search.hits import Hit  # noqa: E402

LIMIT = 8


@dataclass
class Story:
    topic: str
    query: str
    first: Key
    last: Key
    decisions: int


@dataclass
class Reach:
    first: int = 0
    last: int = 0
    both: int = 0
    chars: int = 0
    hits: int = 0

    def add(self, story: Story, keys: list[Key], chars: int = 0) -> None:
        self.first += story.first in keys
        self.last += story.last in keys
        self.both += story.first in keys and story.last in keys
        self.chars += chars
        self.hits += len(keys)


@dataclass
class ProjectReach:
    project: str
    questions: int
    mcp: Reach
    grid: dict[str, Reach] = field(default_factory=dict)
    seconds: float = 0.0


def stories_of(name: str, archive: Archive, ws: str, form: str) -> list[Story]:
    _, topics = label_topics(PROJECTS[name])
    refs = sorted({d["turn"] for t in topics for d in t["decisions"]})
    resolved = resolve_refs(archive, refs)
    key = {r: (s, a, n) for r, (w, s, a, n) in resolved.items() if w == ws}
    frame = archive.turns(ws).select("session_id", "agent", "turn", "started_at").collect()
    at = {(s, a, int(n)): t for s, a, n, t in frame.iter_rows()}
    out = []
    for t in topics:
        keys = [key[d["turn"]] for d in t["decisions"] if d["turn"] in key]
        if not keys:
            continue
        timed = sorted(keys, key=lambda k: (at.get(k) is None, at.get(k) or 0, k))
        query = t["title"] if form == "title" else t["name"].replace("-", " ")
        out.append(Story(t["name"], query, timed[0], timed[-1], len(keys)))
    return out


def key_of(h: Hit | dict[str, object]) -> Key:
    if isinstance(h, Hit):
        return (h.session_id, h.agent or "main", int(h.turn))
    return (str(h["session_id"]), str(h.get("agent") or "main"), int(str(h["turn"])))


async def ask(archive: Archive, ws: str, stories: list[Story], limit: int) -> Reach:
    from mcp import Client

    from archive_mcp.mcp.server import build_server

    reach = Reach()
    async with Client(build_server(archive)) as client:
        for s in stories:
            found = await client.call_tool(
                "search_context",
                {"query": s.query, "workspace": ws, "order": "time", "limit": limit},
            )
            hits = (found.structured_content or {}).get("hits", [])
            text = "".join(c.text for c in found.content if hasattr(c, "text"))
            reach.add(s, [key_of(h) for h in hits], len(text))
    return reach


# the settings `--grid` scores, as `Span(depth, share)` (chosen on the tuning projects);
# `--quiet-ends`: a turn of a QUIET kind (or of none) is never an end (tried, not kept)
GRID = [(d, s) for d in (2, 3, 5, 8) for s in (0.3, 0.4, 0.5, 0.6, 0.7)]
QUIET = {"command", "interrupted"}


def grid(
    archive: Archive, ws: str, stories: list[Story], limit: int, quiet: bool
) -> dict[str, Reach]:
    from archive_mcp.search.span import Span, spanned  # this branch's: --grid needs it

    rules = {f"depth {d}, share {s}": Span(d, s) for d, s in GRID}
    deepest = max(r.depth for r in rules.values())
    out = {f"top {limit}": Reach(), **{label: Reach() for label in rules}}
    for s in stories:
        ranked = list(archive.search(s.query, ws, limit=limit * deepest))
        out[f"top {limit}"].add(s, [key_of(h) for h in ranked[:limit]])
        times = [
            None if quiet and (QUIET & set(h.kinds) or not h.kinds) else h.started_at
            for h in ranked
        ]
        for label, rule in rules.items():
            picked = spanned([h.score for h in ranked], times, limit, rule)
            out[label].add(s, [key_of(ranked[i]) for i in picked])
    return out


def run_project(name: str, args: argparse.Namespace) -> ProjectReach:
    archive, _ = build_archive(name, args.agents_dev, args.out / name / "home", args.reuse)
    links, _ = label_topics(PROJECTS[name])
    ws = archive.workspace(next(iter(links))).id
    stories = stories_of(name, archive, ws, args.query)
    t = time.perf_counter()
    mcp = anyio.run(ask, archive, ws, stories, args.limit)
    seconds = time.perf_counter() - t
    return ProjectReach(
        name,
        len(stories),
        mcp,
        grid(archive, ws, stories, args.limit, args.quiet_ends) if args.grid else {},
        seconds,
    )


def pooled(label: str, rows: list[ProjectReach]) -> ProjectReach:
    def total(rs: list[Reach]) -> Reach:
        return Reach(
            *(sum(getattr(r, f) for r in rs) for f in ("first", "last", "both", "chars", "hits"))
        )

    labels = rows[0].grid.keys() if rows else []
    return ProjectReach(
        label,
        sum(r.questions for r in rows),
        total([r.mcp for r in rows]),
        {k: total([r.grid[k] for r in rows]) for k in labels},
    )


def cell(r: Reach, n: int, chars: bool) -> str:
    line = f"{r.first} / {r.last} / {r.both}"
    if chars:
        line += f" | {r.chars / max(1, n):,.0f} | {r.hits / max(1, n):.1f}"
    return line


def tables(rows: list[ProjectReach], limit: int) -> str:
    out = [
        f"MCP search_context(order=time, limit={limit}): first / last / both reached of n",
        "",
        "| project | topics | first / last / both | chars a search | hits shown |",
        "|---|---|---|---|---|",
    ]
    out += [f"| {r.project} | {r.questions} | {cell(r.mcp, r.questions, True)} |" for r in rows]
    if rows and rows[0].grid:
        labels = list(rows[0].grid)
        out += [
            "",
            "Library ranking (no budget): first / last / both reached",
            "",
            "| setting | " + " | ".join(f"{r.project} ({r.questions})" for r in rows) + " |",
            "|---|" + "---|" * len(rows),
        ]
        for label in labels:
            cells = " | ".join(cell(r.grid[label], r.questions, False) for r in rows)
            out.append(f"| {label} | {cells} |")
    return "\n".join(out)


def speed(home: Path, reps: int) -> str:
    """p50 wall time of `Archive.search` (limit 8) without and with `SPAN`, interleaved."""
    from search import QUERIES

    from archive_mcp.search.span import SPAN

    archive = Archive(home)
    space = archive.workspaces()[0]
    ws = space.id
    rows = [f"{archive.index(space).refresh().n_docs:,} turns, {len(QUERIES)} queries x {reps}", ""]
    rows += [
        "| mode | p50 ms: top 8 | p50 ms: order=time's span | p50 of the per-query difference |"
    ]
    rows += ["|---|---|---|---|"]
    for mode in ("hybrid", "lexical"):
        plain: list[float] = []
        spanned_ms: list[float] = []
        for q in QUERIES * reps:
            for span, into in ((None, plain), (SPAN, spanned_ms)):
                t = time.perf_counter()
                archive.search(q, ws, limit=LIMIT, mode=mode, span=span)
                into.append((time.perf_counter() - t) * 1000)
        diff = median([b - a for a, b in zip(plain, spanned_ms, strict=True)])
        rows.append(f"| {mode} | {median(plain):.1f} | {median(spanned_ms):.1f} | {diff:+.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path, nargs="?")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--projects", default=",".join(PROJECTS))
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--query", choices=("title", "name"), default="title")
    ap.add_argument("--limit", type=int, default=LIMIT, help="the search's limit (default 8)")
    ap.add_argument("--grid", action="store_true", help="also score GRID's settings")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--quiet-ends", action="store_true", help="--grid: no command turn as an end")
    ap.add_argument("--speed", type=Path, metavar="HOME", help="time the span on HOME only")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    if args.speed:
        print(speed(args.speed, args.reps))
        return 0
    if args.agents_dev is None or args.out is None:
        ap.error("give AGENTS_DEV and --out OUT (or --speed HOME)")
    names = [p for p in args.projects.split(",") if p]
    unknown = [p for p in names if p not in PROJECTS]
    if unknown:
        ap.error(f"unknown project(s) {', '.join(unknown)}: use {', '.join(PROJECTS)}")
    rows = [run_project(p, args) for p in names]
    report(rows, pooled, lambda shown: tables(shown, args.limit), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
