"""Reader for the Python Kimi Code CLI (`~/.kimi`): `wire.jsonl` envelopes into `Turn`s.

The turn grammar and every record type are in FORMATS.md §1. Only wire.jsonl is read for turns:
context.jsonl is rewritten by compaction and holds only the model's current view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .answers import approval_response
from .disk import (
    Refused,
    cannot_read,
    exists,
    is_dir,
    is_file,
    load_json,
    not_regular,
    read_bounded,
    subdirs,
    unreadable,
)
from .fields import loads_valid
from .lines import LogReader, Record, TurnBuilder, prompt_turn
from .model import Step, SubagentRun, ToolCall, Turn, count, epoch, parts_text
from .sources import Discovery, SessionSource, SourceFile, register

SOURCE = "kimi"
LEGACY_PROTOCOL = "1.1"

ALIASES = {"ApprovalRequestResolved": "ApprovalResponse"}
KNOWN_TYPES = frozenset(
    {
        "TurnBegin",
        "TurnEnd",
        "StepBegin",
        "StepInterrupted",
        "StepRetry",
        "SteerInput",
        "CompactionBegin",
        "CompactionEnd",
        "MCPLoadingBegin",
        "MCPLoadingEnd",
        "HookTriggered",
        "HookResolved",
        "BtwBegin",
        "BtwEnd",
        "PlanDisplay",
        "Notification",
        "StatusUpdate",
        "ContentPart",
        "ToolCall",
        "ToolCallPart",
        "ToolResult",
        "ApprovalRequest",
        "ApprovalResponse",
        "QuestionRequest",
        "ToolCallRequest",
        "HookRequest",
        "SubagentEvent",
    }
)


def version_tuple(version: str) -> tuple[int, ...]:
    """ "1.10" > "1.9": compare protocol versions numerically."""
    out = []
    for piece in str(version).split("."):
        try:
            out.append(int(piece))
        except ValueError:
            out.append(0)
    return tuple(out)


class KimiTurnBuilder(TurnBuilder):
    """Folds wire messages (type, payload) into turns; one per agent (subagents nest).

    Turns are `legacy` (protocol before 1.2) by the version the `metadata` record names, else the
    `protocol` an earlier parse found, else LEGACY_PROTOCOL; a subagent's are as its parent's.
    """

    def __init__(
        self, start_index: int = 0, legacy: bool | None = None, protocol: str | None = None
    ) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.legacy = legacy  # None: decided by the first record that is not metadata
        self.protocol = protocol
        self.version: str | None = None
        self.unknown: dict[str, int] = {}
        self._reset(None)

    def _reset(self, turn: Turn | None) -> None:
        self.cur = turn
        self.step: Step | None = None
        self.calls: dict[str, ToolCall] = {}
        self.last_call: ToolCall | None = None
        self.approvals: dict[str, str] = {}
        self.subs: dict[str, KimiTurnBuilder] = {}

    def feed(self, record: Record) -> None:
        """Fold one wire.jsonl envelope: a `metadata` record or a timestamped message."""
        d = record.data
        if d.get("type") == "metadata" and "message" not in d:
            found = d.get("protocol_version")
            self.version = found if isinstance(found, str) and len(found) < 20 else LEGACY_PROTOCOL
            return
        if self.legacy is None:
            self.legacy = version_tuple(self.version or self.protocol or LEGACY_PROTOCOL) < (1, 2)
        msg = d.get("message")
        if not isinstance(msg, dict):
            self.unknown["<no message>"] = self.unknown.get("<no message>", 0) + 1
            return
        payload = msg.get("payload")
        self.event(
            str(msg.get("type")),
            payload if isinstance(payload, dict) else {},
            epoch(d.get("timestamp")),
            record.start,
            record.end,
        )

    def event(self, kind: str, p: dict[str, Any], ts: float | None, start: int, end: int) -> None:
        """Fold one message of this agent's wire (a subagent's arrive wrapped in its parent's)."""
        kind = ALIASES.get(kind, kind)
        if kind not in KNOWN_TYPES:
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
            return
        if kind == "TurnBegin":
            if self.cur is not None and self.cur.end == "open":
                self.cur.end = "superseded"
            text, media = parts_text(p.get("user_input"))
            turn = prompt_turn(
                self.index, ts, text, start, media=media, origin="user", legacy=bool(self.legacy)
            )
            self.index += 1
            self.turns.append(turn)
            self._reset(turn)
        cur = self.cur
        if cur is None:  # records before the first turn (MCP loading, notifications)
            return
        cur.byte_end, cur.last_at = end, ts
        handler = getattr(self, f"_on_{kind}", None)
        if handler:
            handler(cur, p, ts, start, end)

    # One method per record type that shapes a turn; the rest only extend its byte range.
    def _on_TurnEnd(self, cur: Turn, p: dict, ts: float | None, *_: int) -> None:
        cur.end, cur.ended_at = "ended", ts

    def _on_StepBegin(self, cur: Turn, p: dict, *_: Any) -> None:
        self.step = Step(n=count(p.get("n")) or len(cur.steps) + 1)
        cur.steps.append(self.step)
        self.last_call = None

    def _on_StepRetry(self, cur: Turn, p: dict, *_: Any) -> None:
        if self.step is None:
            return
        for call in self.step.tool_calls:  # output of the failed attempt is discarded
            self.calls.pop(call.id, None)
        self.step.text = self.step.think = ""
        self.step.tool_calls = []
        self.step.retries += 1
        self.last_call = None

    def _on_StepInterrupted(self, cur: Turn, *_: Any) -> None:
        if self.step is not None:
            self.step.interrupted = True

    def _on_CompactionBegin(self, cur: Turn, *_: Any) -> None:
        cur.compactions += 1
        if self.step is not None:
            self.step.compacted = True

    def _on_SteerInput(self, cur: Turn, p: dict, *_: Any) -> None:
        cur.steer_inputs.append(parts_text(p.get("user_input"))[0])

    def _on_ContentPart(self, cur: Turn, p: dict, *_: Any) -> None:
        ptype = p.get("type")
        if self.step is None:
            if ptype == "text":
                cur.synthetic_text += str(p.get("text") or "")
        elif ptype == "text":
            self.step.text += str(p.get("text") or "")
        elif ptype == "think":
            self.step.think += str(p.get("think") or "")

    def _on_ToolCall(self, cur: Turn, p: dict, ts: float | None, *_: Any) -> None:
        if self.step is None:
            self._on_StepBegin(cur, {"n": len(cur.steps) + 1})
        fn = p.get("function")
        fn = fn if isinstance(fn, dict) else {}
        call = ToolCall(
            id=str(p.get("id") or ""),
            name=str(fn.get("name") or ""),
            arguments=str(fn.get("arguments") or ""),
            called_at=ts,
        )
        assert self.step is not None
        self.step.tool_calls.append(call)
        self.calls[call.id] = call
        self.last_call = call

    def _on_ToolCallPart(self, cur: Turn, p: dict, *_: Any) -> None:
        if self.last_call is not None:
            self.last_call.arguments += str(p.get("arguments_part") or "")

    def _on_ToolResult(self, cur: Turn, p: dict, ts: float | None, *_: Any) -> None:
        call = self.calls.get(str(p.get("tool_call_id")))
        rv = p.get("return_value") or {}
        if call is not None and isinstance(rv, dict):
            call.finish(bool(rv.get("is_error")), rv.get("message") or "", rv.get("output"), ts)

    def _on_ApprovalRequest(self, cur: Turn, p: dict, *_: Any) -> None:
        self.approvals[str(p.get("id"))] = str(p.get("tool_call_id"))

    def _on_ApprovalResponse(self, cur: Turn, p: dict, *_: Any) -> None:
        call = self.calls.get(self.approvals.get(str(p.get("request_id")), ""))
        if call is not None:
            response = p.get("response")
            call.approval = response if isinstance(response, str) else None
        cur.answers += approval_response(call, p)

    def _on_StatusUpdate(self, cur: Turn, p: dict, *_: Any) -> None:
        usage = p.get("token_usage")
        if isinstance(usage, dict):
            for key in cur.usage:
                cur.usage[key] = min(cur.usage[key] + count(usage.get(key)), 1 << 62)

    def _on_SubagentEvent(self, cur: Turn, p: dict, ts: float | None, start: int, end: int) -> None:
        parent = p.get("parent_tool_call_id") or p.get("task_tool_call_id")
        agent_id = str(p.get("agent_id") or parent or "subagent")
        event = p.get("event") or {}
        if not isinstance(event, dict):
            return
        builder = self.subs.setdefault(agent_id, KimiTurnBuilder(legacy=self.legacy))
        kind = p.get("subagent_type")
        run = cur.subagents.setdefault(
            agent_id,
            SubagentRun(
                agent_id, kind if isinstance(kind, str) else None, str(parent) if parent else None
            ),
        )
        payload = event.get("payload")
        builder.event(
            str(event.get("type")), payload if isinstance(payload, dict) else {}, ts, start, end
        )
        run.turns = builder.turns


def _builder(path: Path, start_index: int, protocol: str | None) -> KimiTurnBuilder:
    return KimiTurnBuilder(start_index, protocol=protocol)


def _is_session_dir(d: Path) -> bool:
    return is_file(d / "wire.jsonl")


def _session(session_dir: Path, work_dirs: list[str]) -> SessionSource:
    state = load_json(session_dir / "state.json") or {}
    files = [SourceFile("main", "wire.jsonl", session_dir / "wire.jsonl")]
    snapshots = [SourceFile("main", "state.json", session_dir / "state.json")]
    sub_root = session_dir / "subagents"
    if is_dir(sub_root):
        for sub in sorted(sub_root.iterdir()):
            if is_file(sub / "wire.jsonl"):
                files.append(
                    SourceFile(sub.name, f"subagents/{sub.name}/wire.jsonl", sub / "wire.jsonl")
                )
            if is_file(sub / "meta.json"):
                snapshots.append(
                    SourceFile(sub.name, f"subagents/{sub.name}/meta.json", sub / "meta.json")
                )
    title = state.get("custom_title") if isinstance(state, dict) else None
    return SessionSource(
        SOURCE,
        session_dir.name,
        session_dir.parent.name,
        work_dirs,
        title if isinstance(title, str) else None,
        session_dir,
        files,
        [s for s in snapshots if exists(s.path)],  # not a regular file: screened out, reported
    )


def _work_dirs(share_dir: Path, found: Discovery) -> list[str]:
    """The work dirs kimi.json lists; a kimi.json that is no regular file (a FIFO), too large or
    unreadable is reported (its sessions are then archived under their bucket)."""
    path = share_dir / "kimi.json"
    try:
        meta = loads_valid(read_bounded(path).decode("utf-8", errors="replace"))
    except FileNotFoundError:
        meta = None
    except Refused as exc:
        found.skipped.append((str(path), exc.why))
        meta = None
    except OSError as exc:
        found.skipped.append((str(path), unreadable(exc, "file")))
        meta = None
    except (ValueError, RecursionError):
        meta = None
    dirs = meta.get("work_dirs") if isinstance(meta, dict) else None
    return [
        str(d["path"]) for d in dirs or [] if isinstance(d, dict) and isinstance(d.get("path"), str)
    ]


def discover(path: Path) -> Discovery | None:
    """Python-Kimi sessions under `path`, or None when `path` is not shaped like one."""
    if not is_dir(path):  # a Kimi session is a folder, never one file
        return None
    if _is_session_dir(path):  # one session dir: <share>/sessions/<bucket>/<uuid>
        one = Discovery()
        one.sessions.append(_session(path, _work_dirs(path.parent.parent.parent, one)))
        _odd_contexts(path, one)
        return one
    if is_dir(path / "sessions") and (
        is_file(path / "kimi.json") or _has_buckets(path / "sessions")
    ):
        share, buckets = path, sorted((path / "sessions").iterdir())
    elif _has_buckets(path):
        share, buckets = path.parent, sorted(path.iterdir())
    elif any(_is_session_dir(d) for d in subdirs(path)):
        share, buckets = path.parent.parent, [path]
    else:
        return None
    found = Discovery()
    work_dirs = _work_dirs(share, found)
    for bucket in buckets:
        try:
            if not is_dir(bucket):
                continue
            entries = sorted(bucket.iterdir())
        except OSError as exc:
            found.skipped.append((str(bucket), unreadable(exc)))
            continue
        for d in entries:
            try:
                if is_dir(d) and _is_session_dir(d):
                    found.sessions.append(_session(d, work_dirs))
                    _odd_contexts(d, found)
                elif d.suffix == ".jsonl" and (why := _odd(d)):
                    found.skipped.append((str(d), why))
                elif d.suffix == ".jsonl":
                    found.skipped.append(
                        (str(d), "pre-0.59 context-only session (no wire.jsonl); not archived")
                    )
                elif is_dir(d):
                    found.skipped.append((str(d), cannot_read(d) or "no wire.jsonl: not a session"))
            except OSError as exc:
                found.skipped.append((str(d), unreadable(exc)))
    return found


def _odd_contexts(session_dir: Path, found: Discovery) -> None:
    """Report a context file (never archived: wire.jsonl holds the session) that is a FIFO,
    device or folder: something put it there, and a reader that opened it would block."""
    for f in sorted(session_dir.glob("context*.jsonl")):
        why = _odd(f)
        if why:
            found.skipped.append((str(f), why))


def _odd(path: Path) -> str | None:
    try:
        return not_regular(path)
    except OSError as exc:
        return None if isinstance(exc, FileNotFoundError) else unreadable(exc, "file")


def _has_buckets(path: Path) -> bool:
    return any(_is_session_dir(s) for b in subdirs(path) for s in subdirs(b))


READER = register(LogReader(SOURCE, "Kimi CLI", _builder, discover, 20, LEGACY_PROTOCOL))
parse_wire = READER.parse
