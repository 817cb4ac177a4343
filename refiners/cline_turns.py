"""The turns built from Cline's messages, in either of its formats (the SDK's sessions in
`cline.py`, the extensions' tasks in `cline_tasks.py`): the messages' Anthropic-shaped blocks,
prompts, steps, tool results with the user's decisions in them (a denial and its feedback, an
answered question), the usage of each model call and compactions (a summary that replaced the
history)."""

from __future__ import annotations

import json
import re
from typing import Any

from . import answers
from .lines import prompt_turn
from .model import Problem, Step, ToolCall, Turn, epoch

_TAG = r"<{0}>\s*(.*?)\s*</{0}>"
# the tools whose `context` is the summary that replaces the history (`/smol`, auto-compaction)
COMPACT_TOOLS = ("condense", "summarize_task")
_DENIED = "the user denied this operation"
_REJECTED = "rejected by the user"


def between(tag: str, text: str) -> str | None:
    found = re.search(_TAG.format(tag), text, re.S)
    return found.group(1) if found else None


def add_usage(turn: Turn, metrics: dict[str, Any]) -> None:
    turn.add_usage(
        metrics.get("inputTokens", metrics.get("tokensIn")),
        metrics.get("outputTokens", metrics.get("tokensOut")),
        metrics.get("cacheReadTokens", metrics.get("cacheReads")),
        metrics.get("cacheWriteTokens", metrics.get("cacheWrites")),
    )


def text_parts(content: Any) -> list[str]:
    """The text blocks of a message's content (a string is one)."""
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    return [
        str(b.get("text") or "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    ]


def unpacked(msg: dict[str, Any]) -> tuple[float | None, list[Any]]:
    """A message's time (`ts`, epoch ms) in seconds and its content as blocks."""
    at = msg.get("ts")
    ts = epoch(at, 1000.0)
    content = msg.get("content")
    return ts, content if isinstance(content, list) else [{"type": "text", "text": str(content)}]


def tool_uses(blocks: list[Any], ts: float | None) -> list[ToolCall]:
    """The calls of a message's `tool_use` blocks, made at `ts`."""
    return [
        ToolCall(
            id=str(b.get("id") or ""),
            name=str(b.get("name") or ""),
            arguments=json.dumps(b.get("input"), ensure_ascii=False),
            called_at=ts,
        )
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


class ClineTurns:
    """The turns being built and the calls still waiting for their result, by id."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.calls: dict[str, ToolCall] = {}
        self.problems: list[Problem] = []

    def open(self, text: str, at: float | None, origin: str | None = None) -> Turn:
        if self.turns and self.turns[-1].end == "open":
            self.turns[-1].end = "superseded"
        turn = prompt_turn(len(self.turns), at, text, 0, origin=origin, legacy=False)
        self.turns.append(turn)
        self.calls = {}
        return turn

    def compaction(self, summary: str, at: float | None) -> None:
        """The summary that replaced the history: a compaction turn the agent's next replies
        continue (as Claude Code's compaction summary opens one). The turn it cuts into goes on
        in it: that turn is done, and its calls still take their results."""
        calls, last = self.calls, self.turns[-1] if self.turns else None
        if last is not None and last.end == "open":
            last.end, last.reason = "superseded", "completed"
        self.open(summary, at, "compaction").compactions = 1
        self.calls = calls

    def compacted(self, call: ToolCall, output: str, at: float | None) -> None:
        """After the result of `call`: a compaction when it is a `condense` / `summarize_task`
        call the user did not answer with feedback (feedback asks for another summary)."""
        if call.name in COMPACT_TOOLS and call.approval is None and "<feedback>" not in output:
            self.compaction(str(call.args.get("context") or output), at)

    def ended(self) -> None:
        """A compaction the file ends with (nothing after it yet) is complete."""
        last = self.turns[-1] if self.turns else None
        if last is not None and last.is_compaction and last.end == "open" and not last.steps:
            last.end, last.reason = "ended", "completed"

    def reply(
        self, text: str, think: str, calls: list[ToolCall], at: float | None, usage: dict[str, Any]
    ) -> Step:
        """One model reply in the current turn (there is one): a step with its `calls`, each
        waiting for its result, made at `at` (when known), with its token counts (`usage`)."""
        cur = self.turns[-1]
        step = cur.add_step(text, think, calls)
        self.calls.update((call.id, call) for call in calls)
        cur.last_at = at if at is not None else cur.last_at
        add_usage(cur, usage)
        return step

    def finish(self, reason: str = "completed") -> None:
        if self.turns:
            self.turns[-1].end, self.turns[-1].reason = "ended", reason

    def result(self, call: ToolCall, output: str, is_error: bool, at: float | None) -> None:
        low = output[:600].lower()
        said: list[str] = []
        if _DENIED in low or _REJECTED in low:
            said = answers.refused(call, between("feedback", output))
        elif call.name == "ask_followup_question" and (reply := between("answer", output)):
            question = str(call.args.get("question") or "")
            said = [answers.answered(f"{question} → {reply}")]
        call.finish(is_error or call.approval == "reject", "", output, at)
        if said and self.turns:
            self.turns[-1].answers += said
