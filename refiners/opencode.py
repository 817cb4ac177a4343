"""Reader for OpenCode (`~/.local/share/opencode/opencode.db`, SQLite in WAL mode) into `Turn`s.

OpenCode 1.18 (docs/formats.md) keeps its sessions in SQLite: `session` (id, directory, title,
version, parent_id), `message` (one per user prompt or assistant reply, JSON in `data`) and
`part` (text, reasoning, tool, step-start/step-finish; JSON in `data`). The database is live:
it is opened read-only (`file:…?mode=ro`, `query_only`), read in one short transaction (a WAL
reader never blocks OpenCode's writer), and never written.

A subagent (the `task` tool) runs in a child session (`parent_id`); it is archived with its
parent session as that agent's file (`subagents/<child id>.jsonl`), and the `task` call names
it (`state.metadata.sessionId`). A child session whose parents loop (none reaches a top-level
session) is archived as a session of its own and reported.

The archive copies files, so discovery exports each session to a JSONL file (a `session` line,
then one line per message with its parts, in creation order; the same rows give the same
bytes) in a private folder of the temp dir. The export is archived whole and re-parsed when it
changed: idempotent, and a rewritten session (a revert, a compaction) is seen as a change.

A compaction (1.18: when a call's tokens overflow the model's context) writes a user message
with a `compaction` part, an assistant message with `summary: true` (the summary) and a user
message of synthetic text ("Continue if you have next steps…", `metadata.compaction_continue`):
none is a prompt. They stay in the turn that was running: a compaction, the summary as
synthetic text, its usage, and the work after the "Continue" as that turn's next steps.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from . import stores
from .fields import as_int, field_dict, field_list, json_object
from .lines import CallsBuilder, LogReader, Record, from_start
from .model import Step, SubagentRun, ToolCall, Turn, epoch
from .sources import Discovery, SessionSource, register

SOURCE = "opencode"
DB = "opencode.db"


MESSAGES = (
    "SELECT session_id, id, time_created, time_updated, data FROM message"
    " ORDER BY session_id, time_created, id"
)


def read_sessions(db: Path) -> list[dict[str, Any]]:
    """Every session of `db` with its messages and parts, read-only in one transaction."""
    with stores.read_only(db) as con:
        sessions = stores.with_messages(con, "session", MESSAGES)
        by_id: dict[Any, dict[str, Any]] = {}
        for m in (m for s in sessions for m in s["messages"]):
            m["data"], m["parts"] = json_object(m["data"]), []
            by_id[m["id"]] = m
        for mid, pid, data in con.execute(
            "SELECT message_id, id, data FROM part ORDER BY message_id, time_created, id"
        ):
            if mid in by_id:
                by_id[mid]["parts"].append({"id": pid, **json_object(data)})
    return sessions


def export_lines(session: dict[str, Any]) -> bytes:
    """A session's export (`stores.session_records`), written by `json` as OpenCode's always was."""
    records = stores.session_records(session)
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


# --- parsing the export ------------------------------------------------------------------------


class OpenCodeTurnBuilder(CallsBuilder):
    def feed(self, record: Record) -> None:
        rec, end = record.data, record.end
        if rec.get("type") == "session":
            version = field_dict(rec, "session").get("version")
            self.version = version if isinstance(version, str) else self.version
            return
        data = field_dict(rec, "data")
        parts = [p for p in field_list(rec, "parts") if isinstance(p, dict)]
        ts = epoch(rec.get("time_created"), 1000.0)
        if data.get("role") == "user" and self.turns and _within_turn(parts):
            self.turns[-1].byte_end = end  # a compaction or its automatic "Continue": no prompt
            self.turns[-1].compactions += any(p.get("type") == "compaction" for p in parts)
            return
        if data.get("role") == "user":
            text = "\n".join(
                str(p.get("text") or "")
                for p in parts
                if p.get("type") == "text" and not p.get("synthetic")
            )
            self.open(text, ts, record)
            return
        if not self.turns or data.get("role") != "assistant":
            return
        cur = self.turns[-1]
        cur.byte_end = end
        done = epoch(field_dict(data, "time").get("completed"), 1000.0)
        cur.last_at = done or ts or cur.last_at
        self._assistant(cur, data, parts)

    def _assistant(self, cur: Turn, data: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        _usage(cur, data)
        if data.get("summary") is True:  # a compaction's summary: no answer
            cur.synthetic_text += "".join(
                str(p.get("text") or "") for p in parts if p.get("type") == "text"
            )
            return
        step = Step(n=len(cur.steps) + 1)
        for p in parts:
            kind = p.get("type")
            if kind == "text":
                step.text += str(p.get("text") or "")
            elif kind == "reasoning":
                step.think += str(p.get("text") or "")
            elif kind == "tool":
                call = _call(p)
                step.tool_calls.append(call)
                child = field_dict(field_dict(p, "state"), "metadata").get("sessionId")
                if p.get("tool") == "task" and isinstance(child, str) and child:
                    kind_of = field_dict(field_dict(p, "state"), "input").get("subagent_type")
                    cur.subagents[child] = SubagentRun(
                        child, kind_of if isinstance(kind_of, str) else None, call.id
                    )
            elif kind == "compaction":
                cur.compactions += 1
        cur.steps.append(step)
        if data.get("error"):
            cur.api_errors += 1
        if data.get("finish") == "stop":
            cur.end, cur.ended_at, cur.reason = "ended", cur.last_at, "completed"


def _usage(cur: Turn, data: dict[str, Any]) -> None:
    tokens = field_dict(data, "tokens")
    cache = field_dict(tokens, "cache")
    output = as_int(tokens.get("output")) + as_int(tokens.get("reasoning"))
    cur.add_usage(tokens.get("input"), output, cache.get("read"), cache.get("write"))


def _within_turn(parts: list[dict[str, Any]]) -> bool:
    """A user message OpenCode writes itself inside a turn: a `compaction` part (the session is
    compacted), or only synthetic text (the "Continue if you have next steps" after it)."""
    if any(p.get("type") == "compaction" for p in parts):
        return True
    texts = [p for p in parts if p.get("type") == "text"]
    return bool(texts) and all(p.get("synthetic") for p in texts)


def _call(part: dict[str, Any]) -> ToolCall:
    state = field_dict(part, "state")
    times = field_dict(state, "time")
    status = str(state.get("status") or "")
    exit_code = field_dict(state, "metadata").get("exit")
    call = ToolCall(
        id=str(part.get("callID") or part.get("id") or ""),
        name=str(part.get("tool") or ""),
        arguments=json.dumps(state.get("input", {}), ensure_ascii=False),
        called_at=epoch(times.get("start"), 1000.0),
        result_at=epoch(times.get("end"), 1000.0),
    )
    if status in ("completed", "error"):
        failed = status == "error" or (isinstance(exit_code, int) and exit_code != 0)
        output = state.get("output", state.get("error", ""))
        call.finish(failed, str(state.get("error") or ""), output, call.result_at)
    return call


# --- discovery ---------------------------------------------------------------------------------


def discover(path: Path) -> Discovery | None:
    """OpenCode's sessions in `path` (its data folder or `opencode.db`), or None."""
    return discover_db(path, DB, SOURCE, "OpenCode")


def discover_db(path: Path, name: str, source: str, label: str) -> Discovery | None:
    """The sessions of the database `name` (`path` itself, or in the folder `path`) of OpenCode
    or a fork that keeps its tables (Kilo Code), archived as `source`; None when there is none."""
    db = path if path.is_file() and path.name == name else path / name
    if not db.is_file():
        return None
    store = stores.Store(
        "opencode", f"the {label} database", read_sessions, export_lines, "parent_id"
    )
    return store.sessions(db, partial(_session, source, db))


def _session(source: str, db: Path, sid: str, s: dict[str, Any], export: Path) -> SessionSource:
    """The session `sid` (row `s`, exported to `export`) of the database `db`, as `source`."""
    return stores.store_session(source, sid, source, s.get("directory"), s.get("title"), db, export)


READER = register(
    LogReader(SOURCE, "OpenCode", from_start(OpenCodeTurnBuilder), discover, 35, whole=True)
)
parse_wire = READER.parse
