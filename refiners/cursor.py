"""Reader for Cursor's editor agent (the "composer") into `Turn`s: the composers of the global
`User/globalStorage/state.vscdb` (SQLite, the key-value table `cursorDiskKV`), each with the work
dir of the `workspaceStorage/<hash>` that lists it, and Cursor's VS Code chats (`vscode_chat`).

The format: docs/formats.md, "Cursor" (built from the documented format, not recorded). The
store is read while Cursor writes it (stores.py), each composer exported to a JSONL archived
whole: a `composer` line, a `bubble` line each and a `subagent` line after the bubble a
sub-composer was spawned at (that sub-composer is a subagent file of its top composer). A turn is
a user bubble and the agent's bubbles after it; `latestConversationSummary` is a compaction turn
after the last bubble it covers.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from . import stores, vscode, vscode_chat
from .disk import is_dir
from .fields import field_dict, json_object, parse_time
from .lines import CallsBuilder, LogReader, Record, from_start, prompt_turn, tool_call
from .model import SubagentRun, ToolCall
from .sources import Discovery, SessionSource, register

SOURCE = "cursor"
KV = "cursorDiskKV"
FAILED = {"error": "error", "cancelled": "cancelled", "aborted": "cancelled"}


def read_composers(db: Path) -> list[dict[str, Any]] | None:
    """Every composer of a global `state.vscdb` with its bubbles (None in place of one missing
    or not JSON), read-only in one transaction; None when the store has no `cursorDiskKV`."""
    out = []
    with stores.read_only(db) as con:
        if not stores.has_table(con, KV):
            return None
        for cid, head in vscode.prefixed(con, KV, "composerData:").items():
            if not isinstance(head, dict):
                head = {"composerId": cid, "error": "composerData is not JSON"}
            cid = str(head.get("composerId") or cid)
            stored = vscode.prefixed(con, KV, f"bubbleId:{cid}:")
            inline = [b for b in head.pop("conversation", None) or [] if isinstance(b, dict)]
            stored.update((str(b.get("bubbleId")), b) for b in inline)  # an older build's
            order = head.pop("fullConversationHeadersOnly", None) or inline
            ids = [str(h.get("bubbleId")) for h in order if isinstance(h, dict)]
            out.append({"id": cid, "head": head, "bubbles": [(b, stored.get(b)) for b in ids]})
    return out


def export_lines(composer: dict[str, Any], spawned: list[dict[str, Any]] | None = None) -> bytes:
    """A composer's export: its `composer` line, a `bubble` line each and, for each sub-composer
    it spawned (`spawned`: their composers), a `subagent` line after the bubble it was spawned
    at (`subagentInfo.conversationLengthAtSpawn`, the first bubble at the earliest; the end
    when it does not say)."""
    bubbles = composer["bubbles"]
    after: dict[int, list[dict[str, Any]]] = {}
    for child in spawned or []:
        at = field_dict(child["head"], "subagentInfo").get("conversationLengthAtSpawn")
        spot = at if isinstance(at, int) and not isinstance(at, bool) and 0 <= at else len(bubbles)
        best_of_n = child["head"].get("isBestOfNSubcomposer") is True
        line = {"type": "subagent", "composerId": child["id"], "isBestOfNSubcomposer": best_of_n}
        after.setdefault(max(1, min(spot, len(bubbles))), []).append(line)
    lines: list[dict[str, Any]] = [{"type": "composer", "composer": composer["head"]}]
    for n, (b, v) in enumerate(bubbles, 1):
        lines += [{"type": "bubble", "bubbleId": b, "bubble": v}, *after.get(n, [])]
    return stores.export_bytes(lines)


def parents(composers: list[dict[str, Any]]) -> dict[str, str]:
    """Sub-composer id -> its parent's: those a composer lists (`subComposerIds`,
    `subagentComposerIds`) and those naming their parent (`subagentInfo.parentComposerId`)."""
    ids = {c["id"] for c in composers}
    out: dict[str, str] = {}
    for c in composers:
        parent = field_dict(c["head"], "subagentInfo").get("parentComposerId")
        if isinstance(parent, str) and parent in ids and parent != c["id"]:
            out[c["id"]] = parent
        for key in ("subComposerIds", "subagentComposerIds"):
            listed = c["head"].get(key)
            for child in listed if isinstance(listed, list) else []:
                if isinstance(child, str) and child in ids and child != c["id"]:
                    out.setdefault(child, c["id"])
    return out


# --- turns -------------------------------------------------------------------------------------


def _call(tool: dict[str, Any], at: float | None) -> ToolCall:
    args = tool.get("rawArgs") or tool.get("params") or {}
    call = tool_call({"id": tool.get("toolCallId"), "name": tool.get("name")}, args, at)
    status = str(tool.get("status") or "")
    if tool.get("userDecision") == "rejected":
        call.approval = "reject"
    if status in ("completed", *FAILED) or call.approval:
        output = tool.get("result")  # a JSON text: {"output": …} for a shell command
        failed = status in FAILED or call.approval == "reject"
        text = output if isinstance(output, str) else json.dumps(output)
        call.finish(failed, FAILED.get(status, ""), text, at)
    return call


def _summary(head: dict[str, Any]) -> tuple[str, str]:
    """The summary `latestConversationSummary` holds and the last bubble it covers (its nesting:
    docs/formats.md), or its fields one level up as some readers document it; "" for each the
    composer lacks (a summary of only white space is none)."""
    latest = field_dict(head, "latestConversationSummary")
    inner = latest.get("summary")
    summary = inner if isinstance(inner, dict) else latest
    text, last = summary.get("summary"), summary.get("truncationLastBubbleIdInclusive")
    if not isinstance(text, str) or not text.strip():
        return "", ""
    return text, last if isinstance(last, str) else ""


class CursorTurnBuilder(CallsBuilder):
    def __init__(self) -> None:
        super().__init__()
        self.status: str | None = None
        self.summary, self.summary_ends = "", ""  # the summary, the last bubble it covers

    def feed(self, record: Record) -> None:
        rec = record.data
        if rec.get("type") == "composer":
            head = field_dict(rec, "composer")
            self.version = f"v{head['_v']}" if isinstance(head.get("_v"), int) else None
            self.status = head.get("status") if isinstance(head.get("status"), str) else None
            self.summary, self.summary_ends = _summary(head)
            if head.get("error"):
                raise ValueError(head["error"])
            return
        if rec.get("type") == "subagent":
            return self._subagent(rec)
        if rec.get("type") != "bubble":
            return self.unknown_type(str(rec.get("type")))
        self._bubble(record)

    def _subagent(self, rec: dict[str, Any]) -> None:
        """A sub-composer spawned here: a subagent run of the current turn (its own file)."""
        child = rec.get("composerId")
        if isinstance(child, str) and child and self.turns:
            kind = "best-of-n" if rec.get("isBestOfNSubcomposer") is True else None
            self.turns[-1].subagents[child] = SubagentRun(child, kind, None)

    def _compaction(self, at: float | None, end: int) -> None:
        """The summary that replaced the history up to here: a compaction turn the agent's next
        bubbles continue, as Claude Code's compaction summary opens one."""
        turn = self.add(prompt_turn(self.index, at, self.summary, end, end, origin="compaction"))
        turn.compactions = 1
        self.summary = self.summary_ends = ""

    def _bubble(self, record: Record) -> None:
        rec = record.data
        bubble = rec.get("bubble")
        if not isinstance(bubble, dict):
            raise ValueError(f"bubble {rec.get('bubbleId')} is missing or not JSON")
        at = parse_time(bubble.get("createdAt"))
        if bubble.get("type") == 1:
            self.open(str(bubble.get("text") or ""), at, record)
        elif bubble.get("type") == 2 and self.turns:
            turn = self.turns[-1]
            turn.byte_end, turn.last_at = record.end, at or turn.last_at
            tool = field_dict(bubble, "toolFormerData")
            turn.add_step(
                str(bubble.get("text") or ""),
                str(field_dict(bubble, "thinking").get("text") or ""),
                [_call(tool, at)] if tool.get("name") else [],
            )
            tokens = field_dict(bubble, "tokenCount")
            turn.add_usage(tokens.get("inputTokens"), tokens.get("outputTokens"))
        else:
            self.unknown_type(f"bubble type {bubble.get('type')}")
        ids = (rec.get("bubbleId"), bubble.get("serverBubbleId"))
        if self.summary_ends and self.summary_ends in ids:  # the last bubble the summary covers
            self._compaction(at, record.end)

    def end(self) -> None:
        """The last turn ends unless Cursor is still generating it (`status`)."""
        if self.summary and self.turns:  # the bubble it ends at is gone: the summary is kept
            self.turns[-1].compactions += 1
            self.turns[-1].synthetic_text += self.summary
        if self.turns and self.turns[-1].end == "open" and self.status != "generating":
            turn = self.turns[-1]
            turn.end, turn.ended_at = "ended", turn.last_at
            turn.reason = FAILED.get(self.status or "") or (
                "completed" if turn.final_text or turn.is_compaction else "interrupted"
            )


# --- discovery ---------------------------------------------------------------------------------


def _session(
    folders: dict[str, tuple[str, str]], db: Path, cid: str, c: dict[str, Any], export: Path
) -> SessionSource:
    """The session of the top composer `cid` (`c`, exported to `export`)."""
    bucket, folder = folders.get(cid, (SOURCE, ""))
    return stores.store_session(
        SOURCE, cid, bucket, folder, c["head"].get("name"), db, export, "composer.jsonl"
    )


def composer_folders(user: Path, found: Discovery) -> dict[str, tuple[str, str]]:
    """composer id -> (workspace hash, folder) from every `workspaceStorage/<hash>`'s store
    (`ItemTable` key `composer.composerData`)."""
    out: dict[str, tuple[str, str]] = {}
    what = "Cursor's workspace store"
    for db, folder, value in vscode.workspace_items(user, "composer.composerData", what, found):
        for c in json_object(value).get("allComposers") or []:
            if isinstance(c, dict) and isinstance(c.get("composerId"), str):
                out[c["composerId"]] = (db.parent.name, folder)
    return out


def discover(path: Path) -> Discovery | None:
    """Cursor's composers (and chat sessions) under its `User` folder, its `globalStorage` or
    that folder's `state.vscdb`; None when `path` is not one or the store holds no composers
    (VS Code's own `state.vscdb` has no `cursorDiskKV`)."""
    user = vscode.user_folder(path)
    if user is None:
        return None
    db = user / "globalStorage" / vscode.STATE_DB
    found = Discovery()
    composers = stores.read_reported(read_composers, db, "Cursor's store", found)
    if composers is None:
        return found if found.skipped else None
    said = [c for c in composers if c["bubbles"]]  # one without a message was never sent
    parent = parents(said)  # a sub-composer of one never sent: a session of its own
    spawned: dict[str, list[dict[str, Any]]] = {}
    for c in said:
        if c["id"] in parent:
            spawned.setdefault(parent[c["id"]], []).append(c)
    exports = stores.exported(db, SOURCE, said, lambda c: export_lines(c, spawned.get(c["id"])))
    stores.file_sessions(
        exports, parent, partial(_session, composer_folders(user, found), db), found, db
    )
    found.add(vscode_chat.discover(user) if is_dir(path) else None)
    return found


READER = register(
    LogReader(SOURCE, "Cursor", from_start(CursorTurnBuilder), discover, 28, whole=True)
)
parse_wire = READER.parse
