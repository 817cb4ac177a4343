"""The agent proxy (issue 41, Build 1): a fixed policy asks the archive about every labelled
decision of a project, through the MCP tools as an agent calls them.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/agent_proxy.py AGENTS_DEV --out OUT \\
        [--projects bonkbot,pai,mthisness,openprintkit] [--reuse] [--json PATH] [--misses]

For each labelled project (the folders and label files of `themes_heldout.PROJECTS`) the project's
sessions are archived into OUT/<project>/home (rebuilt unless `--reuse`; OUT outside the
repository). One question per entry of a topic's `decisions` (decision, change or reversal) whose
turn resolves; the policy is fixed:

1. `search_context(query=<the entry's "now">, workspace=<the project>)`, every other argument at
   its default (the entry's `now` says what was settled, as a question about it would name it);
2. `load_turn_context(references=<the top 3 hits>)`, every other argument at its default.

Per question: **evidence** (the entry's labelled turn is among the top 3 hits), **characters
read** (the text content of both tool results, what an agent reads), and **noise** (of the
ranking's top 5 hits, asked again with `limit=5` and a budget that shows them all, not counted as
read: those that are noise by `noise_turn`, this script's own text rule, independent of the archive's:
an empty turn, an interruption marker, a slash command or its output without tool calls, a mode
toggle, an API error, a compaction recap). Figures are per project and over the tuning projects
(bonkbot, pai) and the held-out ones (mthisness, openprintkit) separately. `--misses` prints the
questions whose evidence is not in the top 3, for the tuning projects only (the held-out ones are
scored, never read).

To compare a checkout with another (e.g. main), run this script twice with the other checkout's
package first on PYTHONPATH and a different OUT: the archive depends on the refiner.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio  # noqa: E402
from agents_dev import resolve_refs  # noqa: E402
from themes_heldout import PROJECTS, build_archive, label_topics  # noqa: E402

from archive_mcp import Archive  # noqa: E402

TUNING = ("bonkbot", "pai")
HELD_OUT = ("mthisness", "openprintkit")
TOP = 3
NOISE_TOP = 5

Key = tuple[str, str, int]  # session, agent, turn

_INTERRUPT = re.compile(r"^\s*\[request interrupted by user[^\]]*\]\s*$", re.I)
_COMMAND = re.compile(
    r"^\s*(?:<command-(?:name|message)>|<local-command-|/[a-z][\w:-]*(?:\s|$))", re.I
)
_TOGGLE = re.compile(r"^\s*(?:fast|plan|auto[- ]?accept|vim|yolo) mode (?:on|off)\b", re.I)
_RECAP = ("this session is being continued from a previous conversation", "<compact-summary>")
_API_ERROR = re.compile(r"^\s*(?:api error\b|prompt is too long|request timed out)", re.I)


def noise_turn(user: str, assistant: str, tool_calls: int) -> bool:
    """A turn with nothing of its own: empty, an interruption marker, a slash command (or its
    output, or a mode toggle) that called no tool, an API error, a compaction recap."""
    user, assistant = (user or "").strip(), (assistant or "").strip()
    if not user and not assistant:
        return True
    if any(r in user[:400].lower() for r in _RECAP):
        return True
    if _INTERRUPT.match(user) and len(assistant) < 200:
        return True
    if tool_calls == 0 and len(assistant) < 400 and (_COMMAND.match(user) or _TOGGLE.match(user)):
        return True
    return bool(_TOGGLE.match(assistant) or (_API_ERROR.match(assistant) and len(assistant) < 400))


@dataclass
class Question:
    topic: str
    entry: int  # the entry's index among the topic's decisions
    kind: str
    query: str
    evidence: Key


@dataclass
class Answer:
    found: bool
    rank: int | None  # 1-based rank of the evidence among the hits, None when not listed
    chars_search: int
    chars_read: int
    noise_top5: int
    hits: int


@dataclass
class ProjectFigures:
    project: str
    questions: int
    evidence_top3: int
    chars_per_question: float
    search_chars: float
    read_chars: float
    noise_per_top5: float
    hits_shown: float = 0.0  # hits the search's text shows (its budget may show fewer than 10)
    seconds: dict[str, float] = field(default_factory=dict)


def questions_of(name: str, archive: Archive, ws: str) -> list[Question]:
    _, topics = label_topics(PROJECTS[name])
    refs = sorted({d["turn"] for t in topics for d in t["decisions"]})
    resolved = resolve_refs(archive, refs)
    key = {r: (s, a, n) for r, (w, s, a, n) in resolved.items() if w == ws}
    return [
        Question(t["name"], i, d["type"], d["now"], key[d["turn"]])
        for t in topics
        for i, d in enumerate(t["decisions"])
        if d["turn"] in key and d.get("now")
    ]


def noise_keys(archive: Archive, ws: str) -> set[Key]:
    frame = (
        archive.turns(ws)
        .select("session_id", "agent", "turn", "user_text", "assistant_text", "tool_calls")
        .collect()
    )
    calls = frame["tool_calls"].list.len().fill_null(0).to_list()
    return {
        (s, a, int(n))
        for (s, a, n, u, x), c in zip(
            frame.select("session_id", "agent", "turn", "user_text", "assistant_text").iter_rows(),
            calls,
            strict=True,
        )
        if noise_turn(u, x, c)
    }


async def ask(archive: Archive, ws: str, qs: list[Question], noise: set[Key]) -> list[Answer]:
    from mcp import Client

    from archive_mcp.mcp.server import build_server

    out: list[Answer] = []
    async with Client(build_server(archive)) as client:
        for q in qs:
            found = await client.call_tool("search_context", {"query": q.query, "workspace": ws})
            hits = (found.structured_content or {}).get("hits", [])
            keys = [(h["session_id"], h.get("agent") or "main", int(h["turn"])) for h in hits]
            search_text = "".join(c.text for c in found.content if hasattr(c, "text"))
            read_text = ""
            if keys:
                refs = [f"{s}:{n}" + ("" if a == "main" else f" [{a}]") for s, a, n in keys[:TOP]]
                read = await client.call_tool(
                    "load_turn_context", {"references": refs, "workspace": ws}
                )
                read_text = "".join(c.text for c in read.content if hasattr(c, "text"))
            # noise is counted in the ranking's top 5, whatever the text's budget shows
            ranked = await client.call_tool(
                "search_context",
                {"query": q.query, "workspace": ws, "limit": NOISE_TOP, "max_output_chars": 50_000},
            )
            top5 = [
                (h["session_id"], h.get("agent") or "main", int(h["turn"]))
                for h in (ranked.structured_content or {}).get("hits", [])
            ]
            rank = keys.index(q.evidence) + 1 if q.evidence in keys else None
            out.append(
                Answer(
                    rank is not None and rank <= TOP,
                    rank,
                    len(search_text),
                    len(read_text),
                    sum(k in noise for k in top5),
                    len(keys),
                )
            )
    return out


def run_project(name: str, root: Path, out: Path, reuse: bool, misses: bool) -> ProjectFigures:
    archive, ingest_s = build_archive(name, root, out / name / "home", reuse)
    links, _ = label_topics(PROJECTS[name])
    ws = archive.workspace(next(iter(links))).id
    qs = questions_of(name, archive, ws)
    noise = noise_keys(archive, ws)
    t = time.perf_counter()
    answers = anyio.run(ask, archive, ws, qs, noise)
    asked_s = time.perf_counter() - t
    if misses and name in TUNING:
        for q, a in zip(qs, answers, strict=True):
            if not a.found:
                s, _, n = q.evidence
                print(
                    f"  miss {name} {q.topic}#{q.entry} ({q.kind}) rank={a.rank} "
                    f"{s[:8]}:{n} q={q.query!r}",
                    file=sys.stderr,
                )
    n = max(1, len(answers))
    return ProjectFigures(
        name,
        len(answers),
        sum(a.found for a in answers),
        round(mean(a.chars_search + a.chars_read for a in answers), 1) if answers else 0.0,
        round(sum(a.chars_search for a in answers) / n, 1),
        round(sum(a.chars_read for a in answers) / n, 1),
        round(sum(a.noise_top5 for a in answers) / n, 3),
        round(sum(a.hits for a in answers) / n, 2),
        {"ingest": round(ingest_s, 1), "ask": round(asked_s, 1)},
    )


def pooled(label: str, figs: list[ProjectFigures]) -> ProjectFigures:
    n = sum(f.questions for f in figs) or 1

    def w(attr: str) -> float:
        return round(sum(getattr(f, attr) * f.questions for f in figs) / n, 3)

    return ProjectFigures(
        label,
        sum(f.questions for f in figs),
        sum(f.evidence_top3 for f in figs),
        w("chars_per_question"),
        w("search_chars"),
        w("read_chars"),
        w("noise_per_top5"),
        w("hits_shown"),
    )


def table(rows: list[ProjectFigures]) -> str:
    lines = [
        "| project | questions | evidence in top 3 | chars / question (search + read) "
        "| noise in a top 5 | hits shown |",
        "|---|---|---|---|---|---|",
    ]
    for f in rows:
        share = f.evidence_top3 / f.questions if f.questions else 0.0
        lines.append(
            f"| {f.project} | {f.questions} | {f.evidence_top3} ({share:.0%}) "
            f"| {f.chars_per_question:,.0f} ({f.search_chars:,.0f} + {f.read_chars:,.0f}) "
            f"| {f.noise_per_top5:.2f} | {f.hits_shown:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("agents_dev", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--projects", default=",".join(PROJECTS))
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--misses", action="store_true", help="list the tuning projects' misses")
    args = ap.parse_args(argv)
    names = [p for p in args.projects.split(",") if p]
    unknown = [p for p in names if p not in PROJECTS]
    if unknown:
        ap.error(f"unknown project(s) {', '.join(unknown)}: use {', '.join(PROJECTS)}")
    figs = [run_project(p, args.agents_dev, args.out, args.reuse, args.misses) for p in names]
    report(figs, pooled, table, args.json, "tuning (bonkbot, pai)")
    return 0


def report(
    rows: list[Any],
    pooled: Callable[[str, list[Any]], Any],
    table: Callable[[list[Any]], str],
    json_path: Path | None,
    tuning: str = "tuning",
) -> None:
    """Print `rows` (dataclasses with a `project`) and the tuning and held-out projects pooled,
    as `table` shows them; with `json_path`, write them there too."""
    pools = [(tuning, TUNING), ("held out", HELD_OUT)]
    rows = rows + [
        pooled(label, part)
        for label, group in pools
        if (part := [r for r in rows if r.project in group])
    ]
    print(table(rows))
    if json_path:
        json_path.write_text(
            json.dumps([asdict(r) for r in rows], indent=2) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    sys.exit(main())
