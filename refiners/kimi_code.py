"""Reader for the TypeScript Kimi Code app (`~/.kimi-code`): flat dotted records into `Turn`s.

Record families are in FORMATS.md §2. Usage is summed from `step.end` (not `usage.record`,
which repeats it). Turn ids count `turn.prompt` records per agent from 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .disk import (
    LINE_MAX,
    cannot_read,
    exists,
    is_dir,
    is_file,
    load_object,
    read_bounded,
    subdirs,
    unreadable,
)
from .fields import loads_valid
from .lines import LogReader, Record, TurnBuilder, prompt_turn
from .model import Step, ToolCall, Turn, count, epoch, parts_text
from .sources import Discovery, SessionSource, SourceFile, register

SOURCE = "kimi-code"
DEFAULT_PROTOCOL = "1.4"

# Types that matter for turns, plus the bookkeeping ones we know and deliberately ignore.
HANDLED = frozenset(
    {
        "turn.prompt",
        "turn.steer",
        "turn.cancel",
        "turn.ended",
        "context.append_loop_event",
        "context.apply_compaction",
        "context.undo",
        "context.clear",
    }
)
IGNORED_PREFIXES = (
    "context.append_message",
    "usage.record",
    "llm.",
    "mcp.",
    "full_compaction.",
    "interaction.",
    "permission.",
    "plan_mode.",
    "plan.",
    "profile.",
    "config.",
    "tools.",
    "task.",
    "goal.",
    "cron.",
    "token_counting.",
    "swarm_mode.",
    "tower_mode.",
    "prompt.",
    "runtime.",
    "forked",
    # 2.1.0 (protocol 1.5): the agent loop's own copy of the messages and turn bounds (the
    # `context.*` and `turn.*` records above carry the same), plugins, file checkpoints
    "agent.",
    "plugin.",
    "file_history.",
)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return ""


class CodeTurnBuilder(TurnBuilder):
    def __init__(self, start_index: int = 0) -> None:
        self.turns: list[Turn] = []
        self.version: str | None = None
        self.by_id: dict[int, Turn] = {}
        self.index = start_index
        self.cur: Turn | None = None
        self.steps: dict[tuple[int, int], Step] = {}
        self.calls: dict[str, ToolCall] = {}
        self.unknown: dict[str, int] = {}

    def feed(self, record: Record) -> None:
        d, start, end = record.data, record.start, record.end
        if d.get("type") == "metadata":
            found = d.get("protocol_version")
            self.version = found if isinstance(found, str) and len(found) < 20 else DEFAULT_PROTOCOL
            return
        kind = str(d.get("type"))
        ts = epoch(d.get("time"), 1000.0)
        if kind not in HANDLED:
            if not kind.startswith(IGNORED_PREFIXES):
                self.unknown[kind] = self.unknown.get(kind, 0) + 1
            if self.cur is not None and self.cur.end == "open":
                self.cur.byte_end, self.cur.last_at = end, ts
            return
        if kind == "turn.prompt":
            if self.cur is not None and self.cur.end == "open":
                self.cur.end = "superseded"
            text, media = parts_text(d.get("input"))
            origin = d.get("origin")
            origin = origin if isinstance(origin, dict) else {}
            kind_of = str(origin.get("kind") or "user")
            new = prompt_turn(
                self.index, ts, text, start, media=media, origin=kind_of, legacy=False
            )
            self.by_id[self.index] = new
            self.index += 1
            self.turns.append(new)
            self.cur = new
        turn = self._turn_for(d)
        if turn is None:
            return
        turn.byte_end, turn.last_at = max(turn.byte_end, end), ts
        if kind == "turn.steer":
            turn.steer_inputs.append(parts_text(d.get("input"))[0])
        elif kind == "turn.ended":
            turn.end, turn.ended_at = "ended", ts
            reason = d.get("reason")
            turn.reason = reason if isinstance(reason, str) and reason else "completed"
        elif kind == "context.apply_compaction":
            turn.compactions += 1
        elif kind in ("context.undo", "context.clear"):
            turn.synthetic_text += f"[{kind}]"
        elif kind == "context.append_loop_event":
            event = d.get("event")
            if isinstance(event, dict):
                self._loop_event(turn, event, ts)

    def _turn_for(self, d: dict[str, Any]) -> Turn | None:
        tid = d.get("turnId")
        if tid is None and isinstance(d.get("event"), dict):
            tid = d["event"].get("turnId")
        try:
            return self.by_id.get(int(tid), self.cur) if tid is not None else self.cur
        except (TypeError, ValueError, OverflowError):
            return self.cur

    def _step(self, turn: Turn, n: Any) -> Step:
        key = (turn.index, count(n) or 1)
        step = self.steps.get(key)
        if step is None:
            step = self.steps[key] = Step(n=key[1])
            turn.steps.append(step)
        return step

    def _loop_event(self, turn: Turn, ev: dict[str, Any], ts: float | None) -> None:
        etype = ev.get("type")
        if etype == "step.begin":
            self._step(turn, ev.get("step"))
        elif etype == "content.part":
            step, part = self._step(turn, ev.get("step")), ev.get("part")
            part = part if isinstance(part, dict) else {}
            if part.get("type") == "text":
                step.text += str(part.get("text") or "")
            elif part.get("type") == "think":
                step.think += str(part.get("think") or "")
        elif etype == "tool.call":
            step = self._step(turn, ev.get("step"))
            args = ev.get("args")
            call = ToolCall(
                id=str(ev.get("toolCallId") or ev.get("uuid") or ""),
                name=str(ev.get("name") or ""),
                arguments=args if isinstance(args, str) else _dumps(args),
                called_at=ts,
            )
            step.tool_calls.append(call)
            self.calls[call.id] = call
            if ev.get("uuid"):
                self.calls[str(ev["uuid"])] = call
        elif etype == "tool.result":
            found = self.calls.get(str(ev.get("toolCallId"))) or self.calls.get(
                str(ev.get("parentUuid"))
            )
            res = ev.get("result") or {}
            if found is not None and isinstance(res, dict):
                found.finish(bool(res.get("isError")), res.get("note") or "", res.get("output"), ts)
        elif etype == "step.end":
            step = self._step(turn, ev.get("step"))
            if ev.get("finishReason") in ("interrupted", "error"):
                step.interrupted = True
            usage = ev.get("usage")
            if isinstance(usage, dict):
                for ours, theirs in (
                    ("input_other", "inputOther"),
                    ("output", "output"),
                    ("input_cache_read", "inputCacheRead"),
                    ("input_cache_creation", "inputCacheCreation"),
                ):
                    turn.usage[ours] = min(turn.usage[ours] + count(usage.get(theirs)), 1 << 62)


def _builder(path: Path, start_index: int, protocol: str | None) -> CodeTurnBuilder:
    return CodeTurnBuilder(start_index)


def _session(session_dir: Path, index: dict[str, str]) -> SessionSource:
    state = load_object(session_dir / "state.json")
    work_dir = state.get("workDir") or state.get("cwd") or index.get(session_dir.name)  # 2.1: cwd
    files = []
    agents_dir = session_dir / "agents"
    for agent in sorted(subdirs(agents_dir), key=lambda d: (d.name != "main", d.name)):
        if is_file(agent / "wire.jsonl"):
            files.append(
                SourceFile(agent.name, f"agents/{agent.name}/wire.jsonl", agent / "wire.jsonl")
            )
    snapshots = [SourceFile("main", "state.json", session_dir / "state.json")]
    title = state.get("title")
    return SessionSource(
        SOURCE,
        session_dir.name,
        session_dir.parent.name,
        [work_dir] if isinstance(work_dir, str) else [],
        title if isinstance(title, str) else None,
        session_dir,
        files,
        [s for s in snapshots if exists(s.path)],  # not a regular file: screened out, reported
    )


def _index(home: Path) -> dict[str, str]:
    """session id -> work dir, from `session_index.jsonl`."""
    out: dict[str, str] = {}
    try:
        lines = (
            read_bounded(home / "session_index.jsonl", LINE_MAX)
            .decode("utf-8", errors="replace")
            .splitlines()
        )
    except OSError:
        return out
    for line in lines:
        try:
            rec = loads_valid(line)
        except (ValueError, RecursionError):
            continue
        if (
            isinstance(rec, dict)
            and isinstance(rec.get("sessionId"), str)
            and isinstance(rec.get("workDir"), str)
        ):
            out[rec["sessionId"]] = rec["workDir"]
    return out


def _is_session_dir(d: Path) -> bool:
    return d.name.startswith("session_") and is_dir(d / "agents")


def discover(path: Path) -> Discovery | None:
    """TypeScript-Kimi sessions under `path`, or None when `path` is not shaped like one."""
    if not is_dir(path):  # a Kimi Code session is a folder, never one file
        return None
    if _is_session_dir(path):
        return Discovery([_session(path, _index(path.parent.parent.parent))])
    if is_dir(path / "sessions") and any(
        b.name.startswith("wd_") for b in subdirs(path / "sessions")
    ):
        home, buckets = path, subdirs(path / "sessions")
    elif any(b.name.startswith("wd_") for b in subdirs(path)):
        home, buckets = path.parent, subdirs(path)
    elif path.name.startswith("wd_"):
        home, buckets = path.parent.parent, [path]
    else:
        return None
    index = _index(home)
    found = Discovery()
    for bucket in sorted(buckets):
        try:
            entries = sorted(d for d in bucket.iterdir() if is_dir(d))
        except OSError as exc:
            found.skipped.append((str(bucket), unreadable(exc)))
            continue
        for d in entries:
            try:
                if _is_session_dir(d):
                    found.sessions.append(_session(d, index))
                else:
                    why = cannot_read(d) or "no agents/ folder: not a Kimi Code session"
                    found.skipped.append((str(d), why))
            except OSError as exc:
                found.skipped.append((str(d), unreadable(exc)))
    return found


READER = register(LogReader(SOURCE, "Kimi Code", _builder, discover, 10, DEFAULT_PROTOCOL))
parse_wire = READER.parse
