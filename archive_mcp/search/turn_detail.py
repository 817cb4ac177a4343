"""What a read shows of a turn (`TurnDetail`), the references it could not show, and the
arithmetic of a read's character budget: cuts that keep a word boundary or an answer's end, a
budget shared between needs, the size a shown turn counts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from archive_mcp.refiners.text import clip
from archive_mcp.search.tool_text import ToolDetail


@dataclass
class TurnDetail:
    workspace_id: str
    session_id: str
    agent: str
    turn: int
    started_at: str | None
    status: str
    user_text: str
    assistant_text: str
    tool_calls: list[ToolDetail] = field(default_factory=list)
    thinking: str | None = None
    requested: bool = True  # False for neighbours loaded by before/after
    truncated: bool = False
    raw_ref: dict[str, Any] = field(default_factory=dict)
    left_out: str | None = None  # what the budget or `matching` left out, and how to get it

    def bare(self) -> TurnDetail:
        """This turn without its texts (its words, thinking and calls' input and output): what
        its structure costs whatever is shown."""
        calls = [replace(c, arguments="", result="") for c in self.tool_calls]
        return replace(self, user_text="", assistant_text="", thinking=None, tool_calls=calls)


@dataclass
class MissingTurn:
    session_id: str
    turn: int
    agent: str
    reason: str


@dataclass
class TurnContext:
    turns: list[TurnDetail]
    not_found: list[MissingTurn]


def cut(text: str, budget: int) -> tuple[str, bool]:
    out = clip(text, max(0, budget))
    return out, out != text


def cut_keep_end(text: str, budget: int) -> tuple[str, bool]:
    """`text` within `budget`, its end kept whole (an answer's conclusion): the head, `…`, the tail."""
    if len(text) <= budget:
        return text, False
    if budget < 80:
        return cut(text, budget)
    tail = text[-(budget * 2 // 3) :]
    head = clip(text, budget - len(tail) - 2).rstrip("…")
    return f"{head} …{tail}"[:budget], True


def share(needs: list[int], budget: int) -> list[int]:
    """Split `budget` so that every need that fits is met whole and the rest share what is left."""
    out, left, open_ = (
        [0] * len(needs),
        max(0, budget),
        sorted(range(len(needs)), key=needs.__getitem__),
    )
    for k, i in enumerate(open_):
        out[i] = min(needs[i], left // (len(open_) - k))
        left -= out[i]
    return out


def tool_size(c: ToolDetail) -> int:
    return len(c.name) + len(c.arguments) + len(c.status) + len(c.result) + 14


def size(d: TurnDetail) -> int:
    parts = [d.user_text, d.assistant_text, d.thinking or "", d.left_out or ""]
    return sum(map(len, parts)) + sum(tool_size(c) for c in d.tool_calls) + 60
