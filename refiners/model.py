"""The source-independent shape every reader produces: a `Turn` made of `Step`s and `ToolCall`s."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from .fields import as_int, valid_unicode

USAGE_KEYS = ("input_other", "output", "input_cache_read", "input_cache_creation")


MAX_EPOCH = 253402300799.0  # 9999-12-31T23:59:59Z: the last second a datetime can hold
MAX_COUNT = 1 << 53  # token counts above this are not counts


def empty_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS, 0)


def epoch(value: Any, scale: float = 1.0) -> float | None:
    """A timestamp in epoch seconds (`value / scale`), or None when it is not a finite number
    between 1970 and 9999 (`1e400`, `NaN`, `"soon"`, `true`)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        ts = float(value) / scale
    except OverflowError:  # an int too large for a float
        return None
    return ts if 0.0 <= ts <= MAX_EPOCH else None


def count(value: Any, default: int = 0) -> int:
    """A non-negative integer from a number or numeric string, clamped; `default` otherwise."""
    if isinstance(value, bool):
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return default
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return default
        value = int(value)
    if not isinstance(value, int):
        return default
    return min(max(value, 0), MAX_COUNT)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str = ""
    result: dict[str, Any] | None = None  # {"is_error", "message", "output"}
    approval: str | None = None
    called_at: float | None = None  # when the call was recorded (epoch seconds)
    result_at: float | None = None  # when its result was recorded

    def finish(self, is_error: bool, message: str, output: Any, at: float | None) -> None:
        """Record the call's result (`output`: text, or the agent's structured value) and when."""
        self.result = {"is_error": is_error, "message": message, "output": output}
        self.result_at = at

    @property
    def duration_s(self) -> float | None:
        if self.called_at is None or self.result_at is None:
            return None
        return max(0.0, self.result_at - self.called_at)

    @cached_property
    def args(self) -> dict[str, Any]:
        """Parsed arguments; `{}` when they are cut off or not an object (read after parsing)."""
        try:
            value = orjson.loads(self.arguments) if self.arguments else {}
        except orjson.JSONDecodeError:
            try:
                value = valid_unicode(json.loads(self.arguments, strict=False))[0]
            except (ValueError, RecursionError):
                return {}
        return value if isinstance(value, dict) else {}

    @property
    def arguments_valid_json(self) -> bool:
        try:
            json.loads(self.arguments)
        except (ValueError, RecursionError):
            return False
        return True

    @property
    def status(self) -> str:
        if self.result is None:
            return "no_result"
        if self.approval == "reject":
            return "rejected"
        return "error" if self.result.get("is_error") else "ok"

    @property
    def output_text(self) -> str:
        return output_to_text(self.result.get("output")) if self.result else ""


@dataclass
class Step:
    n: int
    retries: int = 0
    interrupted: bool = False
    compacted: bool = False
    text: str = ""
    think: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class SubagentRun:
    agent_id: str
    subagent_type: str | None
    parent_tool_call_id: str | None
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Turn:
    index: int
    started_at: float | None
    user_text: str = ""
    user_media: list[dict[str, Any]] = field(default_factory=list)
    origin: str = (
        "user"  # user | command (a slash command) | command_output | compaction | interrupt
    )
    ended_at: float | None = None
    last_at: float | None = None
    end: str = "open"  # ended | open | superseded
    reason: str | None = None  # the end reason a source states (completed, cancelled, failed, …)
    steer_inputs: list[str] = field(default_factory=list)
    # the user's words that came as tool results, marked (answers.py)
    answers: list[str] = field(default_factory=list)
    compactions: int = 0
    synthetic_text: str = ""
    steps: list[Step] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=empty_usage)
    subagents: dict[str, SubagentRun] = field(default_factory=dict)
    byte_start: int = 0
    byte_end: int = 0
    legacy: bool = False  # a protocol that never writes an end marker
    api_errors: int = 0  # API error messages/records the agent logged inside this turn

    def add_step(
        self, text: str = "", think: str = "", calls: list[ToolCall] | None = None
    ) -> Step:
        """A new step at the end of this turn, numbered after the last."""
        step = Step(
            n=len(self.steps) + 1, text=text, think=think, tool_calls=[] if calls is None else calls
        )
        self.steps.append(step)
        return step

    def add_usage(
        self, input_other: Any = 0, output: Any = 0, cache_read: Any = 0, cache_creation: Any = 0
    ) -> None:
        """Token counts added to this turn's (`USAGE_KEYS`' order); one that is not an integer (a
        missing count, text) adds nothing."""
        counts = (input_other, output, cache_read, cache_creation)
        for key, n in zip(USAGE_KEYS, counts, strict=True):
            self.usage[key] += as_int(n)

    @property
    def is_slash_command(self) -> bool:
        return self.user_text.startswith("/")

    @property
    def is_compaction(self) -> bool:
        """The turn carries a compaction summary (the agent's own, not typed by the user)."""
        return self.origin == "compaction"

    @property
    def is_interruption(self) -> bool:
        """The "[Request interrupted by user]" marker an agent writes as a user message."""
        return self.origin == "interrupt"

    @property
    def assistant_text(self) -> str:
        return "\n\n".join(s.text for s in self.steps if s.text)

    @property
    def final_text(self) -> str:
        for step in reversed(self.steps):
            if not step.tool_calls:
                return step.text
        return ""

    @property
    def thinking(self) -> str:
        return "\n\n".join(s.think for s in self.steps if s.think)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for s in self.steps for c in s.tool_calls]

    @property
    def status(self) -> str:
        """completed | interrupted | cancelled | error | open."""
        if self.reason:
            return {
                "completed": "completed",
                "cancelled": "cancelled",
                "failed": "error",
                "blocked": "interrupted",
                "interrupted": "interrupted",
            }.get(self.reason, "completed")
        if self.end == "open":
            return "open"
        if any(s.interrupted for s in self.steps):
            return "error"
        if self.end == "superseded":  # the next prompt came before this turn's end
            if self.origin != "user":  # a slash command, its output, a summary, a marker
                return "completed"
            if not self.legacy:
                return "interrupted"
            # A legacy log has no turn-end record: interrupted when a marker said so (`reason`,
            # above), or when the answer stopped short: no step at all, or a call of the last
            # step left unanswered or refused by the user. A call earlier in the turn whose
            # result is missing (an unreadable log line) did not stop the work that followed,
            # e.g. a long turn the agent's own compaction then continued.
            calls = self.steps[-1].tool_calls if self.steps else []
            unanswered = any(c.result is None or c.approval == "reject" for c in calls)
            return (
                "interrupted"
                if not self.final_text and (unanswered or not self.steps)
                else "completed"
            )
        return "completed"


def output_to_text(output: Any) -> str:
    """A tool output (a string or a list of content parts) as text; media become placeholders."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = []
        for p in output:
            if isinstance(p, dict):
                if p.get("type") == "text":
                    parts.append(str(p.get("text", "")))
                else:
                    parts.append(f"[{p.get('type', 'part')}]")
            else:
                parts.append(str(p))
        return "\n".join(parts)
    try:
        return json.dumps(output, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # nested past the recursion limit
        return f"[{type(output).__name__} too deeply nested to show]"


def media_ref(part: dict[str, Any]) -> dict[str, Any]:
    """A short description of an image/audio/video part; never the base64 payload itself."""
    kind = part.get("type", "media")
    key = kind if kind in ("image_url", "audio_url", "video_url") else ""
    holder = (part.get(key) or part.get(_camel(key)) or {}) if key else {}
    url = str(holder.get("url", "")) if isinstance(holder, dict) else ""
    return {"type": kind, "url_prefix": url[:40], "bytes_b64": len(url)}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def parts_text(parts: Any) -> tuple[str, list[dict[str, Any]]]:
    """User input (a string or content parts) as text plus media references."""
    if isinstance(parts, str):
        return parts, []
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        if p.get("type") == "text":
            texts.append(str(p.get("text", "")))
        elif p.get("type") in ("image_url", "audio_url", "video_url"):
            media.append(media_ref(p))
    return "\n".join(texts), media


@dataclass
class Problem:
    """A line a reader could not use. `truncated_tail` is a live file's unfinished last line."""

    line: int
    kind: str  # malformed | truncated_tail | invalid_utf8 | unknown_type
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "kind": self.kind, "error": self.error}


@dataclass
class ParseResult:
    protocol_version: str
    turns: list[Turn]
    problems: list[Problem] = field(default_factory=list)
    unknown_types: dict[str, int] = field(default_factory=dict)
    complete_offset: int = 0  # bytes up to here hold only complete lines
    resume_offset: int = 0  # start of the first turn that may still change
    resume_line: int = 1
    resume_index: int = 0

    @classmethod
    def malformed(
        cls, why: str, protocol: str = "json", size: int = 0, problems: Iterable[Problem] = ()
    ) -> ParseResult:
        """A whole file that cannot be read or is not the reader's shape: no turns, the
        `problems` found before and a `malformed` problem (line 1) saying `why`; `size` the bytes
        read (`complete_offset`: 0 when none could be)."""
        return cls(protocol, [], [*problems, Problem(1, "malformed", why)], complete_offset=size)
