"""Turn summaries written by the client's model (MCP sampling): the prompt that asks for a few
turns' summaries, and the reading of its answer into summaries in the row's shape."""

from __future__ import annotations

import json
from typing import Any

from .refine import REFINER
from .summary import compose

SAMPLED_REFINER = f"{REFINER}+sampling@1"  # the refiner a summary the client's model wrote records


def sampling_prompt(rows: list[dict[str, Any]]) -> str:
    turns = [
        {
            "turn": r["turn"],
            "agent": r["agent"],
            "user": r["user_text"][:1500],
            "answer": r["assistant_text"][:1500],
            "tools": [c["name"] for c in r["tool_calls"]][:10],
            "files": r["files"][:10],
        }
        for r in rows
    ]
    return (
        "Summarise each coding-agent turn below. Reply with a JSON array with one object per turn, in "
        'order, and nothing else: {"asked": the request as a short clause, "did": tools, files and '
        'commands, "outcome": one sentence stating the result, decision or finding (no filler such as '
        '"Great!" or "Let me…")}. Keep each object under 300 characters.\n\n'
        + json.dumps(turns, ensure_ascii=False)
    )


def sampling_tokens(rows: list[dict[str, Any]]) -> int:
    """The answer's token budget for these turns."""
    return 120 * len(rows) + 50


def parse_sampled(text: str, rows: list[dict[str, Any]]) -> dict[tuple[str, int], str] | None:
    """The summaries of the answer `text` by (agent, turn) of `rows` (empty ones left out); None
    when it is not a JSON array of one summary per turn."""
    try:
        summaries = json.loads(text[text.find("[") : text.rfind("]") + 1])
    except ValueError:
        summaries = None
    if not isinstance(summaries, list) or len(summaries) != len(rows):
        return None
    return {
        (r["agent"], r["turn"]): summary
        for r, s in zip(rows, summaries, strict=True)
        if (summary := _sampled_summary(s))
    }


def _sampled_summary(item: Any) -> str:
    """The client's answer for one turn in the row's shape (`Asked: … Did: … Outcome: …`)."""
    if isinstance(item, dict):
        return compose(
            str(item.get("asked") or "").strip(),
            str(item.get("did") or "").strip(),
            str(item.get("outcome") or "").strip(),
        )
    return str(item).strip()
