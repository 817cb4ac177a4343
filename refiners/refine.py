"""Refine a `Turn` into one row: summary, keywords, kinds, files, tool calls, usage, redactions.

Deterministic and extractive by default; any object with `summarize(turn) -> str` can replace
the summarizer (an LLM through MCP sampling, say).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from .model import ToolCall, Turn
from .redact import MIN_KNOWN, may_hold_secret, redact, secret_values
from .text import STOPWORDS, first_sentence, is_cjk, sentences, shorten, words

REFINER = "extractive@2"
SUMMARY_MAX = 400
TEXT_MAX = 20_000  # stored user/assistant text; the raw log holds the rest
THINKING_MAX = 4_000
RESULT_MAX = 200
ARGS_MAX = 160
SCAN_MAX = 4_000  # kinds and keywords look at the head of long texts only

EDIT_TOOLS = {"WriteFile", "StrReplaceFile", "Edit", "Write", "MultiEdit", "apply_patch", "write_file",
              "edit_file", "replace"}
READ_TOOLS = {"ReadFile", "Glob", "Grep", "Read", "LS", "read_file", "glob", "grep", "list_dir"}
PATH_KEYS = ("path", "file", "file_path", "filePath", "filepath", "directory", "dir", "cwd", "notebook_path")
_PATH_IN_TEXT = re.compile(r"(?<![\w/.])(/?(?:[\w.\-]+/)+[\w.\-]+\.[A-Za-z0-9]{1,8}|[\w\-]+\.(?:py|ts|tsx|js|jsx|rs|go|java|md|json|yaml|yml|toml|sql|sh|css|html|c|h|cpp|hpp))(?::\d+)?\b")

# Kinds are found from the turn's words (a set lookup) and a few phrases (substring checks):
# one tokenisation per turn instead of one regex scan per kind.
KIND_RULES: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "decision": (frozenset("decide decided deciding decision chose choose prefer settled".split()),
                 ("go with", "instead of", "switch to", "switched to", "we'll use", "we will use",
                  "let's use", "决定", "采用", "改用", "选择", "方案")),
    "reversal": (frozenset("revert reverted reverting rollback undo reverse reversed".split()),
                 ("roll back", "rolled back", "go back to", "switch back", "switched back", "no longer",
                  "回滚", "撤销", "改回", "恢复")),
    "fix": (frozenset("fix fixed fixes bug bugs broken regression crash crashes crashed fail fails "
                      "failed failing failure error errors traceback exception".split()),
            ("修复", "错误", "失败", "报错", "问题")),
    "plan": (frozenset("plan plans roadmap todo".split()), ("next step", "first,", "then we", "计划", "步骤", "接下来")),
    "test": (frozenset("test tests pytest vitest jest coverage".split()), ("unit test", "测试")),
    "refactor": (frozenset("refactor refactored refactoring rename renamed renames cleanup".split()),
                 ("clean up", "重构")),
}
_QUESTION_START = ("what", "why", "how", "explain", "describe", "是什么", "为什么", "怎么", "解释")


class Summarizer(Protocol):
    def summarize(self, turn: Turn) -> str: ...


class ExtractiveSummarizer:
    """`Asked: … Did: … Outcome: …` from the turn's own sentences; no model, no network."""

    def summarize(self, turn: Turn) -> str:
        head = turn.user_text[:1000]  # only the opening sentences can make the summary
        asked = first_sentence(head, 140) or shorten(head, 140)
        calls = turn.tool_calls
        did = describe_actions(calls)
        outcome_src = turn.final_text or turn.assistant_text or turn.synthetic_text
        outcome = _outcome(outcome_src)
        if not outcome and calls:
            last = calls[-1]
            outcome = f"{last.name} {last.status}" if last.status != "ok" else ""
        if turn.status not in ("completed",):
            outcome = (outcome + f" [{turn.status}]").strip()
        parts = [f"Asked: {asked}" if asked else "", f"Did: {did}" if did else "",
                 f"Outcome: {outcome}" if outcome else ""]
        return shorten(" ".join(p for p in parts if p), SUMMARY_MAX)


def _outcome(text: str) -> str:
    sents = [s for s in sentences(text[:1500], 4) if len(s) > 3]
    if not sents:
        return ""
    return shorten(" ".join(sents[:2]), 180)


def describe_actions(calls: list[ToolCall]) -> str:
    if not calls:
        return ""
    counts = Counter(c.name for c in calls)
    tools = ", ".join(f"{n}×{k}" if k > 1 else n for n, k in counts.most_common(4))
    edited = _ordered(p for c in calls if c.name in EDIT_TOOLS for p in call_paths(c))
    failed = sum(1 for c in calls if c.status in ("error", "rejected"))
    bits = [tools]
    if edited:
        bits.append("edited " + ", ".join(edited[:3]) + (f" +{len(edited) - 3}" if len(edited) > 3 else ""))
    else:
        cmds = [shorten(str(c.args.get("command", "")), 60) for c in calls if c.args.get("command")]
        if cmds:
            bits.append("ran `" + cmds[0] + "`")
    if failed:
        bits.append(f"{failed} failed")
    return "; ".join(bits)


def _ordered(items: Any) -> list[str]:
    seen: dict[str, None] = {}
    for i in items:
        seen.setdefault(i, None)
    return list(seen)


def call_paths(call: ToolCall) -> list[str]:
    args = call.args
    out = [str(args[k]) for k in PATH_KEYS if isinstance(args.get(k), str) and args.get(k)]
    edits = args.get("edits")
    edits = edits if isinstance(edits, list) else []
    out += [str(e["path"]) for e in edits if isinstance(e, dict) and isinstance(e.get("path"), str)]
    return out


def args_summary(call: ToolCall) -> str:
    args = call.args
    if not args:
        return shorten(call.arguments, ARGS_MAX)
    keys: list[str] = [k for k in ("command", "path", "pattern", "query", "url", "description", "file_path")
                       if k in args]
    if not keys:
        keys = list(args)[:2]
    return shorten(", ".join(f"{k}={shorten(str(args[k]), 100)}" for k in keys[:3]), ARGS_MAX)


def files_of(turn: Turn, final: str, calls: list[ToolCall]) -> list[str]:
    found = [p for c in calls for p in call_paths(c)]
    found += [m.group(1) for m in _PATH_IN_TEXT.finditer(turn.user_text[:SCAN_MAX])]
    found += [m.group(1) for m in _PATH_IN_TEXT.finditer(final[:SCAN_MAX])]
    return _ordered(found)[:30]


def kinds_of(turn: Turn, final: str, calls: list[ToolCall], head_words: list[str] | None = None) -> list[str]:
    user = turn.user_text[:SCAN_MAX]
    text = f"{user}\n{final[:SCAN_MAX]}".lower()
    vocab = {w.lower() for w in (head_words if head_words is not None else words(text))}
    kinds = [k for k, (ws, phrases) in KIND_RULES.items()
             if not vocab.isdisjoint(ws) or any(p in text for p in phrases)]
    head = user.lstrip().lower()
    if any(line.rstrip().endswith(("?", "？", "吗")) for line in user.splitlines()) or head.startswith(_QUESTION_START):
        kinds.append("question")
    if any(c.name in EDIT_TOOLS for c in calls):
        kinds.append("change")
    elif calls and all(c.name in READ_TOOLS for c in calls):
        kinds.append("explore")
    if turn.is_slash_command:
        kinds.append("command")
    if turn.status in ("error", "interrupted", "cancelled"):
        kinds.append(turn.status)
    return kinds


def keywords_of(text: str, limit: int = 12, head_words: list[str] | None = None) -> list[str]:
    """Distinctive words of one turn: identifiers and paths first, stopwords out, CJK kept."""
    counts: Counter[str] = Counter()
    for w in head_words if head_words is not None else words(text[: 2 * SCAN_MAX]):
        if w.isascii():
            low = w.lower()
            if len(w) < 3 or low in STOPWORDS or w.isdigit():
                continue
            if "_" in w or "." in w or "/" in w or (w != low and w[1:] != w[1:].lower()):
                counts[w] += 2  # identifiers, paths, camelCase: the words people search for
            else:
                counts[low] += 1
        elif is_cjk(w):
            counts[w[:8]] += 1  # a CJK run without spaces is a phrase; keep its head
    return [w for w, _ in counts.most_common(limit)]


def content_hash(turn: Turn, assistant: str, calls: list[ToolCall]) -> str:
    h = hashlib.sha1()
    for piece in (turn.user_text, assistant, turn.synthetic_text, turn.status,
                  json.dumps([(c.name, c.arguments, c.status) for c in calls])):
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


def refine_turn(turn: Turn, ctx: RefineContext, summarizer: Summarizer | None = None) -> dict[str, Any]:
    """One refined row (DESIGN.md schema) for `turn`. Every text field is redacted."""
    summarizer = summarizer or ExtractiveSummarizer()
    redactions = 0

    # One pre-check over everything the turn holds; most turns hold no secret at all. A secret
    # found anywhere in the turn is masked wherever it recurs in it (`known`).
    texts = [turn.user_text, *turn.steer_inputs, turn.assistant_text, turn.synthetic_text, turn.thinking,
             *(c.arguments for c in turn.tool_calls),
             *(str((c.result or {}).get("message", "")) for c in turn.tool_calls),
             *(c.output_text[:RESULT_MAX * 4] for c in turn.tool_calls)]
    found = secret_values(texts, min_len=1) if may_hold_secret("\x00".join(texts)) else frozenset()
    risky = bool(found)  # nothing found in any text: no field can change
    known = frozenset(v for v in found if len(v) >= MIN_KNOWN)

    def clean(text: str, limit: int, count: bool = True) -> str:
        nonlocal redactions
        text = text if len(text) <= limit else text[:limit + 512]
        text, n = redact(text, known) if risky else (text, 0)
        if count:  # derived fields (summary, keywords) repeat secrets already counted
            redactions += n
        if len(text) > limit:
            text = text[:limit] + "\n[… more in the raw log]"
        return text

    tool_calls = turn.tool_calls
    raw_assistant, raw_final = turn.assistant_text, turn.final_text
    user = clean(turn.user_text + "".join(f"\n[steer] {s}" for s in turn.steer_inputs), TEXT_MAX)
    assistant = clean(raw_assistant or turn.synthetic_text, TEXT_MAX)
    calls = [{"name": c.name, "args_summary": clean(args_summary(c), ARGS_MAX), "status": c.status,
              "result_summary": clean(_result_line(c), RESULT_MAX),
              "duration_ms": None if c.duration_s is None else round(c.duration_s * 1000),
              "files": call_paths(c)[:10]}
             for c in tool_calls]
    summary = clean(summarizer.summarize(turn), SUMMARY_MAX, count=False)[:SUMMARY_MAX]
    final = clean(raw_final, TEXT_MAX, count=False) if raw_final else assistant
    started = turn.started_at
    ended = turn.ended_at if turn.ended_at is not None else turn.last_at
    return {
        "workspace_id": ctx.workspace_id, "source": ctx.source, "session_id": ctx.session_id,
        "agent": ctx.agent, "turn": turn.index,
        "started_at": _us(started), "ended_at": _us(ended), "status": turn.status,
        "origin": turn.origin,
        "user_text": user, "assistant_text": assistant,
        "thinking_text": clean(turn.thinking, THINKING_MAX),
        "tool_calls": calls, "files": files_of(turn, raw_final or raw_assistant, tool_calls),
        "usage": {"input": turn.usage["input_other"] + turn.usage["input_cache_read"]
                  + turn.usage["input_cache_creation"],
                  "output": turn.usage["output"], "cache_read": turn.usage["input_cache_read"],
                  "cache_creation": turn.usage["input_cache_creation"]},
        "steps": len(turn.steps), "summary": summary,
        "keywords": keywords_of("", head_words=words(f"{user[:SCAN_MAX]}\n{final[:SCAN_MAX]}")),
        "kinds": kinds_of(turn, raw_final or raw_assistant, tool_calls), "redactions": redactions,
        "refiner": REFINER, "content_hash": content_hash(turn, raw_assistant, tool_calls),
        "raw_ref": {"file": ctx.raw_file, "byte_start": turn.byte_start, "byte_end": turn.byte_end},
    }


def _result_line(call: ToolCall) -> str:
    if call.result is None:
        return "no result"
    msg = str(call.result.get("message") or "")
    output = call.result.get("output")
    out = (output if isinstance(output, str) else call.output_text)[:RESULT_MAX * 4].strip()
    head = out.split("\n", 1)[0]
    error = call.result.get("is_error")
    text = ("error: " if error else "") + (msg or head) + (f" | {head}" if msg and head and error else "")
    return shorten(text, RESULT_MAX)


def _us(ts: float | None) -> int | None:
    """Epoch seconds to epoch microseconds (the Parquet column is a UTC datetime[us])."""
    return None if ts is None else int(round(ts * 1_000_000))
