"""Refine a `Turn` into one row: summary, keywords, kinds, files, tool calls, usage, redactions.

Deterministic and extractive by default; any object with `summarize(turn) -> str` can replace
the summarizer (an LLM through MCP sampling, say).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Protocol

from .actions import call_paths, ordered
from .answers import joined, user_words
from .kinds import SCAN_MAX, keywords_of, kinds_of
from .model import ToolCall, Turn
from .redact import MIN_KNOWN, may_hold_secret, redact, secret_values
from .summary import (
    SUMMARY_MAX,
    ExtractiveSummarizer,
    mark_rejected,
    recap,
    rejected_by_user,
    user_request,
)
from .text import shorten

REFINER = "extractive@9"
TEXT_MAX = 20_000  # stored user/assistant text; the raw log holds the rest
THINKING_MAX = 4_000
RESULT_MAX = 200
ARGS_MAX = 160

_PATH_IN_TEXT = re.compile(
    r"(?<![\w/.])(/?(?:[\w.\-]+/)+[\w.\-]+\.[A-Za-z0-9]{1,8}|[\w\-]+\.(?:py|ts|tsx|js|jsx|rs|go|java|md|json|yaml|yml|toml|sql|sh|css|html|c|h|cpp|hpp))(?::\d+)?\b"
)


class Summarizer(Protocol):
    def summarize(self, turn: Turn) -> str: ...


def args_summary(call: ToolCall) -> str:
    args = call.args
    if not args:
        return shorten(call.arguments, ARGS_MAX)
    keys: list[str] = [
        k
        for k in ("command", "path", "pattern", "query", "url", "description", "file_path")
        if k in args
    ]
    if not keys:
        keys = list(args)[:2]
    return shorten(", ".join(f"{k}={shorten(str(args[k]), 100)}" for k in keys[:3]), ARGS_MAX)


def files_of(turn: Turn, final: str, calls: list[ToolCall]) -> list[str]:
    found = [p for c in calls for p in call_paths(c)]
    for text in (turn.user_text[:SCAN_MAX], final[:SCAN_MAX]):
        if "." in text:  # every path the pattern finds has one; most short turns hold none
            found += [m.group(1) for m in _PATH_IN_TEXT.finditer(text)]
    return ordered(found)[:30]


def content_hash(turn: Turn, assistant: str, calls: list[ToolCall]) -> str:
    h = hashlib.sha1()
    for piece in (
        joined(turn.user_text, turn.answers),
        assistant,
        turn.synthetic_text,
        turn.status,
        json.dumps([(c.name, c.arguments, c.status) for c in calls]),
    ):
        h.update(piece.encode("utf-8", "replace"))
        h.update(b"\x00")
    return h.hexdigest()


@dataclass
class RefineContext:
    workspace_id: str
    source: str
    session_id: str
    agent: str
    raw_file: str  # archive-relative path of the raw log the byte range points into


def refine_turn(
    turn: Turn,
    ctx: RefineContext,
    summarizer: Summarizer | None = None,
    next_turn: Turn | None = None,
) -> dict[str, Any]:
    """One refined row (DESIGN.md schema) for `turn`. Every text field is redacted. `next_turn`
    (the session's next turn, when known) tells whether the user rejected what this one proposed."""
    summarizer = summarizer or ExtractiveSummarizer()
    redactions = 0

    # One pre-check over everything the turn holds; most turns hold no secret at all. A secret
    # found anywhere in the turn is masked wherever it recurs in it (`known`).
    texts = [
        turn.user_text,
        *turn.steer_inputs,
        *turn.answers,
        turn.assistant_text,
        turn.synthetic_text,
        turn.thinking,
        *(c.arguments for c in turn.tool_calls),
        *(str((c.result or {}).get("message", "")) for c in turn.tool_calls),
        *(c.output_text[: RESULT_MAX * 4] for c in turn.tool_calls),
    ]
    found = secret_values(texts, min_len=1) if may_hold_secret("\x00".join(texts)) else frozenset()
    risky = bool(found)  # nothing found in any text: no field can change
    known = frozenset(v for v in found if len(v) >= MIN_KNOWN)

    def clean(text: str, limit: int, count: bool = True) -> str:
        nonlocal redactions
        text = text if len(text) <= limit else text[: limit + 512]
        text, n = redact(text, known) if risky else (text, 0)
        if count:  # derived fields (summary, keywords) repeat secrets already counted
            redactions += n
        if len(text) > limit:
            text = text[:limit] + "\n[… more in the raw log]"
        return text

    tool_calls = turn.tool_calls
    raw_assistant, raw_final = turn.assistant_text, turn.final_text
    user = clean(user_words(turn), TEXT_MAX)
    assistant = clean(raw_assistant or turn.synthetic_text, TEXT_MAX)
    calls = [
        {
            "name": c.name,
            "args_summary": clean(args_summary(c), ARGS_MAX),
            "status": c.status,
            "result_summary": clean(_result_line(c), RESULT_MAX),
            "duration_ms": _ms(c.duration_s),
            "files": call_paths(c)[:10],
        }
        for c in tool_calls
    ]
    summary = clean(summarizer.summarize(turn), SUMMARY_MAX, count=False)[:SUMMARY_MAX]
    if rejected_by_user(turn, next_turn):
        summary = mark_rejected(summary)
    kinds = kinds_of(turn, raw_final or raw_assistant, tool_calls)
    if "compaction" in kinds and turn.is_compaction:
        summary = recap(summary, turn.index, ctx.session_id)
    final = clean(raw_final, TEXT_MAX, count=False) if raw_final else assistant
    started = turn.started_at
    ended = turn.ended_at if turn.ended_at is not None else turn.last_at
    return {
        "workspace_id": ctx.workspace_id,
        "source": ctx.source,
        "session_id": ctx.session_id,
        "agent": ctx.agent,
        "turn": turn.index,
        "started_at": _us(started),
        "ended_at": _us(ended),
        "status": turn.status,
        "origin": turn.origin,
        "user_text": user,
        "assistant_text": assistant,
        "thinking_text": clean(turn.thinking, THINKING_MAX),
        "tool_calls": calls,
        "files": files_of(turn, raw_final or raw_assistant, tool_calls),
        "usage": {
            "input": turn.usage["input_other"]
            + turn.usage["input_cache_read"]
            + turn.usage["input_cache_creation"],
            "output": turn.usage["output"],
            "cache_read": turn.usage["input_cache_read"],
            "cache_creation": turn.usage["input_cache_creation"],
        },
        "steps": len(turn.steps),
        "summary": summary,
        "keywords": keywords_of(f"{user_request(user)[:SCAN_MAX]}\n{final[:SCAN_MAX]}"),
        "kinds": kinds,
        "redactions": redactions,
        "refiner": REFINER,
        "content_hash": content_hash(turn, raw_assistant, tool_calls),
        "raw_ref": {"file": ctx.raw_file, "byte_start": turn.byte_start, "byte_end": turn.byte_end},
    }


def _result_line(call: ToolCall) -> str:
    if call.result is None:
        return "no result"
    msg = str(call.result.get("message") or "")
    output = call.result.get("output")
    out = (output if isinstance(output, str) else call.output_text)[: RESULT_MAX * 4].strip()
    head = out.split("\n", 1)[0]
    error = call.result.get("is_error")
    text = (
        ("error: " if error else "")
        + (msg or head)
        + (f" | {head}" if msg and head and error else "")
    )
    return shorten(text, RESULT_MAX)


EPOCH_MIN, EPOCH_MAX = (
    -62_135_596_800,
    253_402_300_799,
)  # 0001-01-01 .. 9999-12-31 (what a datetime holds)


def _ms(seconds: float | None) -> int | None:
    """A call's duration in whole ms; unknown (None) when negative, NaN or longer than the span
    between the earliest and the latest time a datetime holds."""
    if seconds is None or not 0 <= seconds <= EPOCH_MAX - EPOCH_MIN:
        return None
    return round(seconds * 1000)


def _us(ts: float | None) -> int | None:
    """Epoch seconds to epoch microseconds (the Parquet column is a UTC datetime[us]); a time no
    datetime can hold (infinite, NaN, beyond year 9999) is unknown, not a crash."""
    if ts is None or not EPOCH_MIN <= ts <= EPOCH_MAX:  # False for NaN too
        return None
    return int(round(ts * 1_000_000))
