"""Reader for Claude Code (`~/.claude/projects/<encoded cwd>/<session>.jsonl`) into `Turn`s.

FORMATS.md §4. A turn opens at a `user` record whose content is a string or holds no
`tool_result` block and that is not `isMeta` (nor `isSidechain` in a main log). Slash commands,
their `<local-command-stdout>`, compaction summaries and "[Request interrupted by user]" are turns
too, marked through `Turn.origin`. One API response is spread over several `assistant` lines
sharing `message.id`: they form one step and their repeated usage is counted once.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from .answers import claude_result
from .disk import cannot_read, head_records, is_dir, is_file, subdirs, unreadable
from .fields import field_dict, parse_time
from .lines import LogReader, Record, TurnBuilder, prompt_turn, tool_call
from .model import Step, SubagentRun, ToolCall, Turn
from .sources import Discovery, SessionSource, SourceFile, listing, register

SOURCE = "claude-code"

KNOWN_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "attachment",
        "custom-title",
        "tag",
        "last-prompt",  # 2.1: the session's last prompt, for /resume's list
        "mode",  # 2.1: the permission mode in force
    }
)
_NO_RESPONSE = "No response requested."  # 2.1 writes it (model "<synthetic>") on a resume
_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CONTINUED = "This session is being continued from a previous conversation"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _image_ref(block: dict[str, Any]) -> dict[str, Any]:
    src = field_dict(block, "source")
    data = str(src.get("data") or src.get("url") or "")
    return {
        "type": "image",
        "url_prefix": str(src.get("media_type") or src.get("type") or "")[:40],
        "bytes_b64": len(data),
    }


def opens_turn(rec: dict[str, Any], in_subagent: bool = False) -> bool:
    """The labelling rule: a user record, not meta (nor sidechain in a main log), no tool_result."""
    if (
        rec.get("type") != "user"
        or rec.get("isMeta")
        or (rec.get("isSidechain") and not in_subagent)
    ):
        return False
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return True
    if isinstance(content, list):
        return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return False


def prompt_of(rec: dict[str, Any]) -> tuple[str, list[dict[str, Any]], str]:
    """User text, media references and origin of a turn-opening record."""
    msg = field_dict(rec, "message")
    texts, media = [], []
    for b in _blocks(msg.get("content")):
        if b.get("type") == "text":
            texts.append(str(b.get("text") or ""))
        elif b.get("type") == "image":
            media.append(_image_ref(b))
    text = "\n".join(texts)
    command = _COMMAND.search(text)
    if command:
        name = command.group(1).strip()
        args = _ARGS.search(text)
        text = f"{name if name.startswith('/') else '/' + name} {args.group(1).strip() if args else ''}".strip()
        return text, media, "command"
    head = text.lstrip()
    if rec.get("isCompactSummary") or head.startswith(_CONTINUED):
        return text, media, "compaction"
    if head.startswith("[Request interrupted by user"):
        return text, media, "interrupt"
    if head.startswith(("<local-command-stdout>", "<local-command-stderr>")):
        return text, media, "command_output"
    return text, media, "user"


class ClaudeTurnBuilder(TurnBuilder):
    """Folds Claude Code records into turns; inline sidechain records nest as a subagent."""

    def __init__(self, start_index: int = 0, in_subagent: bool = False) -> None:
        self.turns: list[Turn] = []
        self.index = start_index
        self.in_subagent = in_subagent
        self.cur: Turn | None = None
        self.step: Step | None = None
        self.step_id: str | None = None
        self.calls: dict[str, ToolCall] = {}
        self.usage_seen: set[tuple[str, str]] = set()
        self.pending_compactions = 0
        self.unknown: dict[str, int] = {}
        self.version: str | None = None
        self.side: ClaudeTurnBuilder | None = None
        self.prompt_id: str | None = None  # the `promptId` of the record that opened `cur`
        self.moved = False  # the turn last opened went in before the one it followed (`_open`)

    def feed(self, record: Record) -> bool:
        """Fold one record; True when it opened a turn."""
        rec, start, end = record.data, record.start, record.end
        kind = str(rec.get("type"))
        if kind not in KNOWN_TYPES:
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
        if isinstance(rec.get("version"), str):
            self.version = rec["version"]
        ts = parse_time(rec.get("timestamp"))
        if rec.get("isSidechain") and not self.in_subagent and kind in ("user", "assistant"):
            self._sidechain(record)
            return False
        opened = False
        if kind == "user" and opens_turn(rec, self.in_subagent):
            self._open(rec, ts, start)
            opened = True
        cur = self.cur
        if cur is None:
            if kind == "system" and rec.get("subtype") == "compact_boundary":
                self.pending_compactions += 1
            return opened
        cur.byte_end = end
        if ts is not None and (cur.last_at is None or ts > cur.last_at):
            cur.last_at = ts
        if kind == "assistant":
            self._assistant(cur, rec, ts)
        elif kind == "user" and not opened:
            self._tool_results(rec, ts)
        elif kind == "system":
            self._system(cur, rec, ts)
        return opened

    def _open(self, rec: dict[str, Any], ts: float | None, start: int) -> None:
        text, media, origin = prompt_of(rec)
        prev = self.cur
        prompt_id = rec.get("promptId") if isinstance(rec.get("promptId"), str) else None
        # 2.1 writes a manual compaction's boundary and summary before the `/compact` command
        # that asked for it (the same `promptId`, an earlier timestamp): the command's turn
        # goes in before the summary's, as older versions wrote them, and starts at the
        # summary's bytes so that a parse resumed there reads both again.
        self.moved = bool(
            prev is not None
            and origin == "command"
            and prev.origin == "compaction"
            and not prev.steps
            and prompt_id is not None
            and prompt_id == self.prompt_id
            and ts is not None
            and prev.started_at is not None
            and ts < prev.started_at
        )
        self.prompt_id = prompt_id
        if prev is not None and prev.end == "open":
            prev.end = "superseded"
            if origin == "interrupt" and prev.reason is None:
                prev.reason = "interrupted"
        turn = prompt_turn(self.index, ts, text, start, media=media, origin=origin)
        turn.compactions = self.pending_compactions
        if origin == "compaction" and not turn.compactions:
            turn.compactions = 1
        self.pending_compactions = 0
        self.index += 1
        if self.moved and prev is not None:
            turn.index, turn.byte_start = prev.index, prev.byte_start
            prev.index += 1
            self.turns.insert(len(self.turns) - 1, turn)
        else:
            self.turns.append(turn)
        self.cur, self.step, self.step_id, self.calls = turn, None, None, {}

    def _assistant(self, cur: Turn, rec: dict[str, Any], ts: float | None) -> None:
        msg = field_dict(rec, "message")
        mid = str(msg.get("id") or rec.get("uuid") or "")
        if (
            msg.get("model") == "<synthetic>"
            and not rec.get("isApiErrorMessage")
            and [b.get("text") for b in _blocks(msg.get("content"))] == [_NO_RESPONSE]
        ):
            return  # no model call: the CLI's filler after a resumed session's last prompt
        if self.step is None or mid != self.step_id:
            self.step, self.step_id = cur.add_step(), mid
        step = self.step
        if rec.get("isApiErrorMessage"):  # "API Error: …", "Request timed out": no real answer
            cur.api_errors += 1
            step.interrupted = True
        for b in _blocks(msg.get("content")):
            btype = b.get("type")
            if btype == "text":
                step.text += ("\n\n" if step.text else "") + str(b.get("text") or "")
            elif btype == "thinking":
                step.think += str(b.get("thinking") or "")
            elif btype == "tool_use":
                args = b.get("input")
                call = tool_call(b, args, ts)
                step.tool_calls.append(call)
                self.calls[call.id] = call
                cur.reason = None  # more work follows: not finished yet
        if msg.get("stop_reason") == "end_turn":
            cur.reason = "completed"
        usage = msg.get("usage")
        key = (mid, str(rec.get("requestId") or ""))
        if isinstance(usage, dict) and key not in self.usage_seen:
            self.usage_seen.add(key)
            for ours, theirs in (
                ("input_other", "input_tokens"),
                ("output", "output_tokens"),
                ("input_cache_read", "cache_read_input_tokens"),
                ("input_cache_creation", "cache_creation_input_tokens"),
            ):
                value = usage.get(theirs)
                cur.usage[ours] += value if isinstance(value, int) else 0

    def _tool_results(self, rec: dict[str, Any], ts: float | None) -> None:
        msg = field_dict(rec, "message")
        for b in _blocks(msg.get("content")):
            if b.get("type") != "tool_result":
                continue
            call = self.calls.get(str(b.get("tool_use_id")))
            if call is not None:
                call.result = {
                    "is_error": bool(b.get("is_error")),
                    "message": "",
                    "output": b.get("content"),
                }
                call.result_at = ts
                if self.cur is not None:
                    self.cur.answers += claude_result(call, b, rec)

    def _system(self, cur: Turn, rec: dict[str, Any], ts: float | None) -> None:
        sub = rec.get("subtype")
        if sub == "compact_boundary":
            self.pending_compactions += 1
        elif sub == "api_error":
            cur.api_errors += 1
        elif sub == "turn_duration":
            cur.end, cur.ended_at = "ended", ts
        elif sub == "local_command" and isinstance(rec.get("content"), str):
            cur.synthetic_text += rec["content"]

    def _sidechain(self, record: Record) -> None:
        """Older logs wrote a subagent's records inline; they nest under the current turn."""
        if self.cur is None:
            return
        if self.side is None:
            self.side = ClaudeTurnBuilder(in_subagent=True)
        self.side.feed(record)
        rec = record.data
        agent_id = f"sidechain-{rec.get('agentId') or 'inline'}"
        run = self.cur.subagents.setdefault(agent_id, SubagentRun(agent_id, None, None))
        run.turns = [t for t in self.side.turns if t.byte_start >= self.cur.byte_start]


def _builder(path: Path, start_index: int, protocol: str | None) -> ClaudeTurnBuilder:
    return ClaudeTurnBuilder(start_index, in_subagent=path.name.startswith("agent-"))


# --- discovery ---------------------------------------------------------------------------------


def _claude_shaped(records: list[dict[str, Any]]) -> bool:
    return any(
        r.get("type") in KNOWN_TYPES
        and ("sessionId" in r or r.get("type") == "summary" or "snapshot" in r)
        for r in records
    )


def _first(records: list[dict[str, Any]], key: str) -> str | None:
    return next((r[key] for r in records if isinstance(r.get(key), str) and r[key]), None)


def _own_title(records: list[dict[str, Any]]) -> str | None:
    """The title Claude Code gave the session: a `custom-title` record's, else the last `summary`."""
    custom = [r for r in records if r.get("type") == "custom-title"]
    for r in reversed(custom):
        value = r.get("customTitle") or r.get("title")
        if isinstance(value, str) and value.strip():
            return value.strip()
    summaries = [r.get("summary") for r in records if r.get("type") == "summary"]
    return next((s.strip() for s in reversed(summaries) if isinstance(s, str) and s.strip()), None)


def _session_files(project: Path) -> list[Path]:
    try:
        return sorted(p for p in project.iterdir() if p.suffix == ".jsonl" and not is_dir(p))
    except OSError:
        return []


def discover_project(project: Path, found: Discovery, files: list[Path] | None = None) -> None:
    """Sessions of one project folder: `<session>.jsonl`, `agent-*.jsonl` beside them and
    `<session>/subagents/`, with `<session>/tool-results/` archived alongside."""
    sessions: dict[str, SessionSource] = {}
    agents: list[tuple[Path, list[dict[str, Any]]]] = []
    for f in files if files is not None else _session_files(project):
        head = head_records(f, enough=_has_cwd)
        if not head and (why := cannot_read(f)) is not None:
            found.skipped.append((str(f), why))
            continue
        if f.name.startswith("agent-"):
            agents.append((f, head))
            continue
        if head and not _claude_shaped(head):
            found.skipped.append((str(f), "not a Claude Code log"))
            continue
        # The file name is the session id; a log saved under another name has it in its records.
        sid = f.stem if _UUID.match(f.stem) else (_first(head, "sessionId") or f.stem)
        cwd = _first(head, "cwd")
        source = SessionSource(
            SOURCE,
            sid,
            project.name,
            [cwd] if cwd else [],
            _own_title(head),
            project,
            [SourceFile("main", f.name, f)],
            branch=_first(head, "gitBranch"),
        )
        folder = project / f.stem
        subagents = listing(folder / "subagents", found)
        for sub in (p for p in subagents if fnmatch(p.name, "agent-*.jsonl")):
            source.files.append(SourceFile(sub.stem, f"subagents/{sub.name}", sub))
        for extra in (p for p in subagents if fnmatch(p.name, "agent-*.meta.json")):
            source.snapshots.append(SourceFile(extra.stem, f"subagents/{extra.name}", extra))
        for out in listing(folder / "tool-results", found):
            if not is_dir(out):  # a FIFO or device too: screened out and reported
                source.snapshots.append(SourceFile("main", f"tool-results/{out.name}", out))
        sessions[sid] = source
        found.sessions.append(source)
    for f, head in agents:  # the older layout: subagent logs beside the sessions
        sid = _first(head, "sessionId") or f.stem
        parent = sessions.get(sid)
        if parent is None:  # its session's own log is gone: keep the subagent under that id
            cwd = _first(head, "cwd")
            parent = sessions[sid] = SessionSource(
                SOURCE,
                sid,
                project.name,
                [cwd] if cwd else [],
                None,
                project,
                branch=_first(head, "gitBranch"),
            )
            found.sessions.append(parent)
        parent.files.append(SourceFile(f.stem, f.name, f))
    # A log with no cwd of its own (summary-only, empty, cut short) belongs to its folder's project.
    known = [s.work_dirs[0] for s in sessions.values() if s.work_dirs]
    if known:
        counts = Counter(known)  # keys in first-seen order, so ties go to the first file name
        common = max(counts, key=counts.__getitem__)  # (`known.count` per item was O(n²))
        for s in sessions.values():
            s.work_dirs = s.work_dirs or [common]


def discover(path: Path) -> Discovery | None:
    """Claude Code sessions under `path` (a config dir, its `projects/`, one project folder or
    one session file), or None when `path` is not shaped like one."""
    found = Discovery()
    if is_file(path):
        if path.suffix != ".jsonl" or not _claude_shaped(head_records(path)):
            return None
        discover_project(path.parent, found, [path])
        return found
    projects = path / "projects" if is_dir(path / "projects") else path
    denied: list[tuple[str, str]] = []  # folders nobody may list: reported once this is a home
    folders = [d for d in sorted(subdirs(projects)) if _looks_like_project(d, denied)]
    if folders:
        found.skipped += denied
        for d in folders:
            discover_project(d, found)
        return found
    if _looks_like_project(path):
        discover_project(path, found)
        return found
    return None


def _has_cwd(rec: dict[str, Any]) -> bool:
    """A record that names the session's work dir (and id): the head of a log is read up to it."""
    return isinstance(rec.get("cwd"), str) and bool(rec.get("sessionId"))


def _looks_like_project(folder: Path, denied: list[tuple[str, str]] | None = None) -> bool:
    try:
        os.listdir(folder)
    except OSError as exc:
        if denied is not None:
            denied.append((str(folder), unreadable(exc)))
        return False
    files = _session_files(folder)
    return any(
        _claude_shaped(head_records(f, limit=10, max_bytes=1 << 16, enough=_has_cwd))
        or cannot_read(f) is not None  # a log nobody may read: its project, reported as such
        for f in files[:5]
    )


READER = register(LogReader(SOURCE, "Claude Code", _builder, discover, 30))
parse_wire = READER.parse
