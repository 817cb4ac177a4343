"""Calls per question (issue 41, round 3): fixed policies answer a project's agent questions
through the MCP tools, and count calls, characters read and whether the labelled turn was read.

    HF_HUB_OFFLINE=1 nice -n 10 python bench/agent_calls.py --homes OUT \\
        [--projects openprintkit,mthisness] [--batch 4] [--json PATH]

OUT/<project>/home is an archive home prepared by `bench/agent_eval.py prepare` (copied to a
temporary folder first, so the home an agent run used is never written). The questions and their
labelled turns are `bench/labels/agent_questions_<project>.jsonl`; a question's query is its
topic ("how did the decision about <topic> evolve"). The policies, every other argument at its
default:

* `one-by-one` (what the round-2 archive agent did, at its best): per question one
  `search_context(query, limit=8, detail=compact)`, then one `load_turn_context` of its top 3
  hits at detail=compact: 2 calls a question.
* `batched-search`: the questions `--batch` at a time in one `search_context(query, also=[…])`
  (limit=8, detail=compact; each query has the default budget), then one load per question as
  above.
* `batched`: as `batched-search`, and one `load_turn_context` of the top 3 hits of every question
  of the batch (detail=compact, max_chars=3,000 a question, at most the tool's 6,000).

`read`: the question's labelled turn is in what the policy read for it (its hits' lines and the
turns loaded for it). Run it on a checkout without `also` (e.g. main, its package first on
PYTHONPATH) and only `one-by-one` runs.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import anyio  # noqa: E402
from agents_dev import resolve_refs  # noqa: E402
from mcp import Client  # noqa: E402

from archive_mcp import Archive  # noqa: E402
from archive_mcp.mcp.core_tools import READ_MAX  # noqa: E402
from archive_mcp.mcp.server import build_server  # noqa: E402

LABELS = Path(__file__).parent / "labels"
LIMIT = 8
TOP = 3
PER_LOAD = 3000  # a batched load's budget per question
_TOPIC = re.compile(r"decision about (.+?) evolve\?", re.S)


@dataclass
class Question:
    id: str
    query: str
    gold: str  # SESSION:TURN as the tools print it ("" when the label does not resolve)


@dataclass
class Figures:
    project: str
    policy: str
    questions: int
    calls: int
    chars: int
    read: int  # questions whose labelled turn is in what was read for them

    def row(self) -> str:
        n = self.questions
        return (
            f"| {self.project} | {self.policy} | {n} | {self.calls / n:.2f} | "
            f"{self.chars / n:,.0f} | {self.read}/{n} |"
        )


def questions(project: str, archive: Archive) -> list[Question]:
    rows = [
        json.loads(x)
        for x in (LABELS / f"agent_questions_{project}.jsonl").read_text().splitlines()
        if x.strip()
    ]
    found = resolve_refs(archive, [r["turn"] for r in rows])
    out = []
    for r in rows:
        m = _TOPIC.search(r["question"])
        query = " ".join((m.group(1) if m else r["question"]).split())
        hit = found.get(r["turn"])
        gold = f"{hit[1]}:{hit[3]}" if hit else ""
        out.append(Question(r["id"], query, gold))
    return out


class Asker:
    """One MCP client; every call's text counted."""

    def __init__(self, client: Client, workspace: str) -> None:
        self.client, self.workspace, self.calls, self.chars = client, workspace, 0, 0

    async def __call__(self, tool: str, args: dict[str, Any]) -> tuple[str, Any]:
        r = await self.client.call_tool(tool, {"workspace": self.workspace, **args})
        text = getattr(r.content[0], "text", "")
        self.calls, self.chars = self.calls + 1, self.chars + len(text)
        return text, r.structured_content


def _top(hits: list[dict[str, Any]]) -> list[str]:
    return [f"{h['session_id']}:{h['turn']}" for h in hits[:TOP]]


def _holds(text: str, gold: str) -> bool:
    return bool(gold) and re.search(rf"(?<![\w-]){re.escape(gold)}(?!\d)", text) is not None


async def one_by_one(ask: Asker, qs: list[Question]) -> int:
    read = 0
    for q in qs:
        text, data = await ask(
            "search_context", {"query": q.query, "limit": LIMIT, "detail": "compact"}
        )
        loaded, _ = await ask(
            "load_turn_context", {"references": _top(data["hits"]), "detail": "compact"}
        )
        read += _holds(text + loaded, q.gold)
    return read


async def batched(ask: Asker, qs: list[Question], batch: int, one_load: bool) -> int:
    read = 0
    for i in range(0, len(qs), batch):
        group = qs[i : i + batch]
        args = {
            "query": group[0].query,
            "also": [q.query for q in group[1:]],
            "limit": LIMIT,
            "detail": "compact",
        }
        text, data = await ask("search_context", args)
        sections = re.split(r"^## ", text, flags=re.M)[1:]
        tops = [_top(g["hits"]) for g in data["groups"]]
        if one_load:
            refs = [r for t in tops for r in t]
            loaded, _ = await ask(
                "load_turn_context",
                {
                    "references": refs,
                    "detail": "compact",
                    "max_chars": min(PER_LOAD * len(group), READ_MAX),
                },
            )
            loads = [loaded] * len(group)
        else:
            loads = [
                (await ask("load_turn_context", {"references": t, "detail": "compact"}))[0]
                for t in tops
            ]
        read += sum(_holds(s + ld, q.gold) for q, s, ld in zip(group, sections, loads, strict=True))
    return read


def run_project(project: str, homes: Path, batch: int) -> list[Figures]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(homes / project / "home", home)
        archive = Archive(home)
        ws = archive.workspaces()[0].id
        qs = questions(project, archive)
        server = build_server(archive, cwd=tmp)
        has_also = "also" in json.dumps(anyio.run(_schema, server))
        out = []

        async def measure(name: str, policy: Any) -> None:
            async with Client(server) as client:
                ask = Asker(client, ws)
                read = await policy(ask)
                out.append(Figures(project, name, len(qs), ask.calls, ask.chars, read))

        anyio.run(measure, "one-by-one", lambda a: one_by_one(a, qs))
        if has_also:
            anyio.run(measure, "batched-search", lambda a: batched(a, qs, batch, False))
            anyio.run(measure, "batched", lambda a: batched(a, qs, batch, True))
        return out


async def _schema(server: Any) -> Any:
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    return [t.input_schema for t in tools if t.name == "search_context"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--homes", type=Path, required=True)
    ap.add_argument("--projects", default="openprintkit,mthisness")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    figs = [f for p in args.projects.split(",") for f in run_project(p, args.homes, args.batch)]
    print("| project | policy | questions | calls/q | chars/q | labelled turn read |")
    print("|---|---|---|---|---|---|")
    for f in figs:
        print(f.row())
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figs], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
