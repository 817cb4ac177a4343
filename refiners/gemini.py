"""Reader for the Gemini CLI (`session-*.json[l]` in each project's `chats/` under `~/.gemini`) into `Turn`s.

FORMATS.md §6. Two formats: one `ConversationRecord` JSON document, rewritten on every update
(archived as a snapshot), and JSONL (a metadata line, message records, `{"$set": …}` patches and
`{"$rewindTo": id}`). In JSONL a message `id` can be written again while it streams: the last
copy wins, in the place of the first; `$rewindTo` drops that message and everything after it.
Either way the whole file is read: a rewind can reach back to any turn. Turn k is the k-th user
message of what remains. A user message made only of `functionResponse` parts (0.61 writes one
after each tool call; docs/formats.md) carries the tool results back to the model: it is not a
turn, and only fills a result its call does not hold. The project folder under `tmp/` is a
hash in old builds and a short name in new ones (`projects.json` maps the cwd to it); the chat's
`projectHash` is sha256 of the cwd either way.

0.61 (docs/formats.md) starts every process with a metadata line and a `$set` of `messages`
(the fresh history; on a resume the whole resumed history follows in a second `$set`), then
appends message records. A compression rewrites the history: a `$set` of `messages` that
brings user messages never seen in the file (the summary, and the kept messages with new ids)
after messages were written. It counts as a compaction of the turn whose prompt follows (the
summary kept as synthetic text). A resume in another minute than the chat's start leaves a
start-up stub (`session-<that minute>-<id8>.jsonl`: metadata and the fresh `$set` only, no
message) beside the chat it resumed: a stub is passed over, not reported (nothing in it is
lost), when a chat with messages has its id.
A SIGINT during a tool call leaves the `gemini` record as first written (no content, no
`toolCalls`): its usage is kept, no step is made (the turn reads as interrupted).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from .disk import (
    LINE_MAX,
    Refused,
    cannot_read,
    is_dir,
    is_file,
    load_object,
    not_regular,
    open_regular,
    read_bounded,
    subdirs,
)
from .fields import (
    EXIT_CODE,
    as_int,
    field_dict,
    field_list,
    loads_valid,
    parse_time,
    valid_unicode,
)
from .lines import (
    LineReader,
    LogReader,
    Record,
    TurnBuilder,
    from_start,
    prompt_turn,
    too_many_items,
    tool_call,
)
from .model import ParseResult, Problem, Step, SubagentRun, ToolCall, Turn
from .sources import LEADS_OUT, Discovery, SessionSource, SourceFile, leads_out, listing, register

SOURCE = "gemini"
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})


def _text(content: Any) -> str:
    """`content` as a string or a list of parts (`{text}`, or other parts shown by kind)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    out = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


def _result(call: dict[str, Any]) -> dict[str, Any] | None:
    result = call.get("result")
    if result is None and call.get("status") is None:
        return None
    texts = []
    for part in result if isinstance(result, list) else [result]:
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            resp = part["functionResponse"].get("response")
            texts.append(
                resp.get("output", json.dumps(resp, ensure_ascii=False))
                if isinstance(resp, dict)
                else str(resp)
            )
        elif part is not None:
            texts.append(_text(part) or json.dumps(part, ensure_ascii=False))
    status = str(call.get("status") or "")
    output = "\n".join(str(t) for t in texts)
    code = EXIT_CODE.search(output)
    return {
        "is_error": status in ("error", "cancelled") or (code is not None and code.group(1) != "0"),
        "message": status if status != "success" else "",
        "output": output,
    }


def _responses(content: Any) -> list[dict[str, Any]] | None:
    """The `functionResponse`s of a user message made only of them, else None."""
    parts = content if isinstance(content, list) else [content]
    out = [p.get("functionResponse") for p in parts if isinstance(p, dict)]
    if not parts or len(out) != len(parts) or not all(isinstance(r, dict) for r in out):
        return None
    return [r for r in out if isinstance(r, dict)]


def _fill_results(turn: Turn, responses: list[dict[str, Any]], ts: float | None) -> None:
    calls = {c.id: c for c in turn.tool_calls if c.result is None}
    for resp in responses:
        call = calls.get(str(resp.get("id") or ""))
        if call is not None:
            call.result = _result({"result": [{"functionResponse": resp}], "status": "success"})
            call.result_at = ts


COMPACTED = "$compacted"  # the marker `_read_jsonl` puts where a compression rewrote the history


def build_turns(messages: list[tuple[dict[str, Any], int, int]]) -> list[Turn]:
    """Turns from (message, byte start, byte end) in conversation order."""
    turns: list[Turn] = []
    compacted: list[str] = []  # summaries of compressions not yet given to a turn
    for msg, start, end in messages:
        mtype = msg.get("type")
        if mtype == COMPACTED:
            compacted.append(str(msg.get("summary") or ""))
            continue
        if compacted and mtype == "user" and _responses(msg.get("content")) is None:
            msg = {**msg, COMPACTED: compacted}
            compacted = []
        ts = parse_time(msg.get("timestamp"))
        responses = _responses(msg.get("content")) if mtype == "user" else None
        if responses is not None:
            if turns:
                turns[-1].byte_end = max(turns[-1].byte_end, end)
                turns[-1].last_at = ts if ts is not None else turns[-1].last_at
                _fill_results(turns[-1], responses, ts)
            continue
        if mtype == "user":
            if turns and turns[-1].end == "open":
                turns[-1].end = "superseded"
            text = _text(msg.get("content"))
            turns.append(prompt_turn(len(turns), ts, text, start, end))
            _compactions(turns[-1], msg.get(COMPACTED))
            continue
        if not turns:
            continue
        cur = turns[-1]
        cur.byte_end = max(cur.byte_end, end)
        cur.last_at = ts if ts is not None else cur.last_at
        if mtype == "gemini":
            _tokens(cur, msg)
            if not (msg.get("content") or field_list(msg, "thoughts") or msg.get("toolCalls")):
                continue  # written before its content and never again (SIGINT): no step
            step = Step(n=len(cur.steps) + 1, text=_text(msg.get("content")))
            step.think = "\n".join(
                f"{t.get('subject') or ''}: {t.get('description') or ''}".strip(": ")
                for t in field_list(msg, "thoughts")
                if isinstance(t, dict)
            )
            for c in field_list(msg, "toolCalls"):
                if not isinstance(c, dict):
                    continue
                args = c.get("args")
                call = tool_call(c, args, parse_time(c.get("timestamp")))
                call.result = _result(c)
                call.result_at = call.called_at if call.result else None
                step.tool_calls.append(call)
                _subagent(cur, c, call)
            cur.steps.append(step)
        elif mtype == "error":
            cur.api_errors += 1
            cur.synthetic_text += _text(msg.get("content"))
        elif mtype in ("info", "warning"):
            cur.synthetic_text += _text(msg.get("content"))
    if compacted and turns:  # a compression after the last prompt
        _compactions(turns[-1], compacted)
    return turns


def _subagent(cur: Turn, record: dict[str, Any], call: ToolCall) -> None:
    """A call that ran a subagent (`invoke_agent` in 0.61) names its chat by `agentId`: the
    subagent's own file (`chats/<session id>/<agentId>.jsonl`), linked to the call."""
    agent = record.get("agentId")
    if isinstance(agent, str) and agent:
        kind = field_dict(record, "args").get("agent_name")
        cur.subagents[agent] = SubagentRun(agent, kind if isinstance(kind, str) else None, call.id)


def _tokens(cur: Turn, msg: dict[str, Any]) -> None:
    tokens = field_dict(msg, "tokens")
    cached = as_int(tokens.get("cached"))
    output = as_int(tokens.get("output")) + as_int(tokens.get("thoughts"))
    cur.add_usage(max(0, as_int(tokens.get("input")) - cached), output, cached)


def _compactions(turn: Turn, summaries: Any) -> None:
    if isinstance(summaries, list):
        turn.compactions += len(summaries)
        turn.synthetic_text += "".join(summaries)


def _compaction(
    patch: dict[str, Any], seen: set[str], written: bool, line: int
) -> dict[str, Any] | None:
    """The marker of a compression when a `$set` of `messages` rewrites a history that has
    messages: it brings user messages with text never seen in the file (the summary first)."""
    listed = [m for m in field_list(patch, "messages") if isinstance(m, dict)]
    fresh = [
        m
        for m in listed
        if m.get("type") == "user"
        and str(m.get("id")) not in seen
        and _responses(m.get("content")) is None
    ]
    seen.update(str(m.get("id")) for m in listed)
    if not written or not fresh:
        return None
    return {"type": COMPACTED, "id": f"compacted-{line}", "summary": _text(fresh[0].get("content"))}


class GeminiTurnBuilder(TurnBuilder):
    """Holds a `.jsonl` chat's messages (the last copy of each, rewinds applied) until its end,
    then builds its turns: a message may be re-emitted or rewound away after it was written."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.version = "jsonl"
        self.unknown: dict[str, int] = {}
        self.order: list[str] = []
        self.latest: dict[str, tuple[dict[str, Any], int, int]] = {}
        self.seen: set[str] = set()  # message ids written or listed so far

    def feed(self, record: Record) -> None:
        d, start, end = record.data, record.start, record.end
        order, latest = self.order, self.latest
        patch = d.get("$set")
        if isinstance(patch, dict) and "messages" in patch:
            mark = _compaction(patch, self.seen, bool(order), record.line)
            if mark is not None:
                order.append(mark["id"])
                latest[mark["id"]] = (mark, start, end)
        if "$rewindTo" in d:
            target = str(d["$rewindTo"])
            if target in latest:
                cut = order.index(target)
                for mid in order[cut:]:
                    latest.pop(mid, None)
                del order[cut:]
            return
        if "$set" in d or "sessionId" in d and "type" not in d:
            return  # metadata: the session id and project come from discovery
        if not isinstance(d.get("type"), str) or d["type"] not in MESSAGE_TYPES:
            kind = str(d.get("type"))
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
            return
        mid = str(d.get("id") or f"line-{record.line}")
        self.seen.add(mid)
        if mid not in latest:
            order.append(mid)
            latest[mid] = (d, start, end)
        else:  # re-emitted while streaming: the last copy, in the first one's place
            latest[mid] = (d, latest[mid][1], end)

    def end(self) -> None:
        self.turns = build_turns([self.latest[m] for m in self.order])


def parse_chat(path: Path, stop: int | None = None) -> ParseResult:
    """Parse a whole `.json` Gemini chat (rewritten in place as the session goes on)."""
    problems: list[Problem] = []
    try:
        blob = read_bounded(path, LINE_MAX)[:stop]  # parsed whole: bounded as one line is
        if (why := too_many_items(blob)) is not None:
            return ParseResult.malformed(why)
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(1, "invalid_utf8", str(exc)))
            text = blob.decode("utf-8", errors="replace")
        data, bad = valid_unicode(json.loads(text))
    except (OSError, ValueError, RecursionError) as exc:
        return ParseResult.malformed(str(exc), problems=problems)
    if bad:
        why = f"{bad} string(s) with a lone surrogate: each replaced with U+FFFD"
        problems.append(Problem(1, "invalid_unicode", why))
    raw = data.get("messages") if isinstance(data, dict) else None
    size = path.stat().st_size
    if not isinstance(raw, list):
        why = "no `messages` list: not a Gemini chat"
        return ParseResult.malformed(why, "json", size, problems)
    messages = [(m, 0, size) for m in raw if isinstance(m, dict)]
    return ParseResult("json", build_turns(messages), problems, complete_offset=size)


# --- discovery ---------------------------------------------------------------------------------


_HEAD_ID = re.compile(rb'"(sessionId|projectHash)"\s*:\s*"([^"\\]*)"')


def chat_meta(path: Path) -> dict[str, Any] | None:
    """The session metadata of a chat file (sessionId, projectHash, …), None if it is not one."""
    if path.suffix == ".json":
        try:
            blob = read_bounded(path, LINE_MAX)
        except Refused:  # larger than a line: archived (and reported when parsed), not parsed
            blob = b""
        except OSError:
            return None
        if not blob or too_many_items(blob) is not None:  # its ids from its head, not parsed
            try:
                with open_regular(path) as fh:
                    blob = fh.read(1 << 16)
            except OSError:
                return None
            ids = {
                k.decode(): v.decode("utf-8", "replace")
                for k, v in _HEAD_ID.findall(blob[: 1 << 16])
            }
            return {**ids, "messages": []} if "sessionId" in ids else None
        try:
            data = loads_valid(blob.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            return None
        return (
            data if isinstance(data, dict) and "sessionId" in data and "messages" in data else None
        )
    if path.suffix == ".jsonl":
        try:
            with open_regular(path) as fh:
                first = loads_valid(fh.readline(LINE_MAX).decode("utf-8", errors="replace"))
        except (OSError, ValueError, RecursionError):
            return None
        return (
            first
            if isinstance(first, dict) and "sessionId" in first and "projectHash" in first
            else None
        )
    return None


def _work_dirs(project: Path, gemini_home: Path, found: Discovery) -> list[str]:
    marker = project / ".project_root"
    out = []
    try:
        if leads_out(marker, os.path.realpath(gemini_home)):
            raise Refused(marker, LEADS_OUT)  # it would name any file's first line a work dir
        out.append(read_bounded(marker, 1 << 16).decode("utf-8").strip())
    except FileNotFoundError:
        pass
    except Refused as exc:
        _once(found, str(marker), exc.why)
    except (OSError, ValueError):
        pass
    registry = gemini_home / "projects.json"
    try:
        why = not_regular(registry)
    except OSError:
        why = None
    if why is not None:
        _once(found, str(registry), why)
    mapping = load_object(registry).get("projects") if why is None else None
    for root, slug in (mapping if isinstance(mapping, dict) else {}).items():
        if slug == project.name or hashlib.sha256(str(root).encode()).hexdigest() == project.name:
            out.append(str(root))
    return [p for p in dict.fromkeys(out) if p]


def _once(found: Discovery, path: str, why: str) -> None:
    if (path, why) not in found.skipped:
        found.skipped.append((path, why))


def _sessions(
    files: list[Path], project: Path | None, gemini_home: Path | None, found: Discovery
) -> None:
    for f in files:
        try:
            why = not_regular(f)
        except OSError as exc:
            why = str(exc)
        if why is not None:
            found.skipped.append((str(f), why))
            continue
        meta = chat_meta(f)
        if meta is None:
            found.skipped.append((str(f), cannot_read(f) or "not a Gemini CLI chat (no sessionId)"))
            continue
        sid = str(meta["sessionId"])
        bucket = project.name if project is not None else str(meta.get("projectHash") or "gemini")
        work_dirs = (
            _work_dirs(project, gemini_home, found) if project is not None and gemini_home else []
        )
        if project is not None and len(bucket) != 64 and meta.get("projectHash"):
            bucket = str(meta["projectHash"])  # the hash checks a candidate work dir
        source = SessionSource(
            SOURCE,
            sid,
            bucket,
            work_dirs,
            None,
            f.parent,
            [SourceFile("main", f.name, f, whole=f.suffix == ".json")],
        )
        for sub in sorted(
            (f.parent / sid).glob("*.jsonl")
        ):  # subagents: chats/<parent id>/<id>.jsonl
            source.files.append(SourceFile(sub.stem, f"{sid}/{sub.name}", sub))
        found.sessions.append(source)
    _drop_stubs(found)


def _drop_stubs(found: Discovery) -> None:
    """Pass over the start-up stubs (no message) of a chat whose id a chat with messages has.

    Not reported as skipped: a stub holds nothing the chat lacks (its metadata and the fresh
    history's context message), and Gemini CLI leaves one at every resume in a later minute, so
    a report would repeat the same lines at every ingest for files that lose nothing. A stub
    that gets a message is a chat again and is read."""
    by_id: dict[tuple[str, str], list[SessionSource]] = {}
    for s in found.sessions:
        by_id.setdefault((str(s.session_dir), s.session_id), []).append(s)
    for same in by_id.values():
        if len(same) < 2:
            continue
        stubs = [s for s in same if not _has_messages(s.files[0].path)]
        if len(stubs) == len(same):
            continue
        for stub in stubs:
            found.sessions.remove(stub)


def _has_messages(path: Path) -> bool:
    """Whether a chat file holds a message (JSON: a non-empty `messages` list)."""
    if path.suffix != ".jsonl":
        return True
    return any(rec.data.get("type") in MESSAGE_TYPES for rec in LineReader(path))


def discover(path: Path) -> Discovery | None:
    """Gemini chats under `path` (`~/.gemini`, its `tmp/`, a project folder, a `chats/` folder
    or one chat file), or None when `path` is not shaped like one."""
    found = Discovery()
    if is_file(path):
        if chat_meta(path) is None:
            return None
        project = path.parent.parent if path.parent.name == "chats" else None
        home = project.parent.parent if project and project.parent.name == "tmp" else None
        _sessions([path], project if home else None, home, found)
        return found
    if is_dir(path / "tmp"):
        home, projects = path, subdirs(path / "tmp")
    elif path.name == "tmp" and any(is_dir(d / "chats") for d in subdirs(path)):
        home, projects = path.parent, subdirs(path)
    elif is_dir(path / "chats"):
        home, projects = path.parent.parent, [path]
    elif path.name == "chats":
        home, projects = path.parent.parent.parent, [path.parent]
    else:
        return None
    for project in sorted(projects):
        chats = project / "chats"
        if is_dir(chats):
            names = listing(chats, found)
            chat_files = [p for p in names if not is_dir(p) and p.name.startswith("session-")]
            _sessions(chat_files, project, home, found)
        elif (why := cannot_read(project)) is not None:
            found.skipped.append((str(project), why))
    return found


# a chat is parsed whole: a rewind may reach back anywhere
READER = register(
    LogReader(
        SOURCE,
        "Gemini CLI",
        from_start(GeminiTurnBuilder),
        discover,
        50,
        whole=True,
        other=parse_chat,
    )
)
parse_wire = READER.parse
