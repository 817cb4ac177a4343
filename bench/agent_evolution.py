"""A fixed "evolution" policy over the frozen agent questions (issue 41, round 2): what two MCP
calls cost an agent asking "how did the decision about X evolve", and whether they reach the
labelled turn. Not held out: the policy was written after reading the round-1 logs of these
projects.

    HF_HUB_OFFLINE=1 python bench/agent_evolution.py OUT [--projects openprintkit,mthisness]
        [--rank-order]

`--rank-order` leaves `order` out of the search (a checkout before it existed: the baseline).

OUT is the folder `bench/agent_eval.py prepare` filled (OUT/<project>/home); a copy of it serves
as well (nothing here writes to the archive beyond its search cache). Per question:

1. `search_context(query=<the question's subject>, order="time")`, every other argument at its
   default (the subject: the words between "the decision about" and "evolve" in the question);
2. `load_turn_context(references=[<the best-scored hit>], matching=<the subject's content words>)`.

It prints, per project: questions, characters read a question (both results' text), and how
often the gold's labelled turn (the question's `turn`) is among the search's hits shown, is the
turn loaded, or either.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).parent))

import anyio  # noqa: E402
from agents_dev import resolve_refs  # noqa: E402

from archive_mcp import Archive  # noqa: E402
from archive_mcp.search.lexical import ENGLISH_STOPWORDS  # noqa: E402

LABELS = Path(__file__).resolve().parent / "labels"
_SUBJECT = re.compile(r"the decision about (.+?) evolve", re.I)


@dataclass(frozen=True)
class Outcome:
    chars: int  # both results' text
    in_search: bool  # the gold turn is among the hits shown
    loaded: bool  # the gold turn is the one loaded


def subject(question: str) -> str:
    m = _SUBJECT.search(question)
    if m is None:
        raise SystemExit(f"no 'the decision about … evolve' in the question {question!r}")
    return m.group(1)


def content_words(text: str) -> str:
    words = re.findall(r"[A-Za-z0-9][\w.-]*", text)
    return " ".join(w for w in words if w.lower() not in ENGLISH_STOPWORDS and len(w) > 2)


async def ask(
    archive: Archive, ws: str, rows: list[tuple[str, tuple[str, int] | None]], order: dict[str, str]
) -> list[Outcome]:
    from mcp import Client

    from archive_mcp.mcp.server import build_server

    out = []
    async with Client(build_server(archive)) as client:
        for question, gold in rows:
            about = subject(question)
            found = await client.call_tool(
                "search_context", {"query": about, "workspace": ws, **order}
            )
            hits = (found.structured_content or {}).get("hits", [])
            text = "".join(c.text for c in found.content if hasattr(c, "text"))
            shown = [(h["session_id"], int(h["turn"])) for h in hits]
            loaded = None
            if hits:
                best = max(hits, key=lambda h: h["score"])
                loaded = (best["session_id"], int(best["turn"]))
                read = await client.call_tool(
                    "load_turn_context",
                    {
                        "references": [f"{loaded[0]}:{loaded[1]}"],
                        "workspace": ws,
                        "matching": content_words(about),
                    },
                )
                text += "".join(c.text for c in read.content if hasattr(c, "text"))
            out.append(Outcome(len(text), gold in shown, gold is not None and gold == loaded))
    return out


def run(project: str, out: Path, order: dict[str, str]) -> dict[str, float]:
    archive = Archive(out / project / "home")
    ws = max(archive.workspaces(), key=lambda w: archive.stats(w.id).turns).id
    questions = [
        json.loads(line)
        for line in (LABELS / f"agent_questions_{project}.jsonl").read_text().splitlines()
        if line.strip()
    ]
    resolved = resolve_refs(archive, [q["turn"] for q in questions])
    rows = []
    for q in questions:
        r = resolved.get(q["turn"])
        rows.append((q["question"], (r[1], r[3]) if r else None))
    got = anyio.run(ask, archive, ws, rows, order)
    n = len(got)
    return {
        "questions": n,
        "resolved": sum(g is not None for _, g in rows),
        "chars_per_question": round(mean(o.chars for o in got)),
        "gold_in_search": sum(o.in_search for o in got),
        "gold_loaded": sum(o.loaded for o in got),
        "gold_read": sum(o.in_search or o.loaded for o in got),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--projects", default="openprintkit,mthisness")
    ap.add_argument("--rank-order", action="store_true")
    args = ap.parse_args()
    order = {} if args.rank_order else {"order": "time"}
    for project in args.projects.split(","):
        print(project, json.dumps(run(project, args.out, order)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
