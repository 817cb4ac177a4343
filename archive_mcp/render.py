"""Rendering shared by the faces: JSON-able data, plain tables, and the text of hits, turns and
memories. The CLI prints these; the MCP tools return them as their text content. Nothing here
imports a face, so the two renderings cannot drift."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archive_mcp.refiners.text import clip
from archive_mcp.refs import Citing, turn_ref
from archive_mcp.search.highlight import clip_marked, unmark
from archive_mcp.search.tool_text import plain_arguments

if TYPE_CHECKING:
    from archive_mcp.memory.store import MemoryEntry
    from archive_mcp.search.engine import Hit
    from archive_mcp.search.grep import GrepResult, GrepTurn
    from archive_mcp.search.turn_detail import TurnDetail


COMPACT_SUMMARY = 100  # a compact hit's line of summary


def to_jsonable(obj: Any) -> Any:
    """Dataclasses (through their `to_json` when they have one), containers, dates and paths as JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_json"):
            return to_jsonable(obj.to_json())
        return {
            f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr
        }
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj: Any, indent: int | None = 2) -> str:
    return json.dumps(to_jsonable(obj), ensure_ascii=False, indent=indent)


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], widths: dict[str, int] | None = None
) -> str:
    """A plain aligned table; cells are cut to `widths` where given."""
    widths = widths or {}

    def cell(row: dict[str, Any], col: str) -> str:
        value = row.get(col)
        text = (
            ""
            if value is None
            else (value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else str(value))
        )
        text = " ".join(text.split())
        limit = widths.get(col)
        return clip(text, limit) if limit else text

    cells = [[cell(r, c) for c in columns] for r in rows]
    sizes = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(sizes[i]) for i, c in enumerate(columns)).rstrip()]
    lines += ["  ".join(v.ljust(sizes[i]) for i, v in enumerate(r)).rstrip() for r in cells]
    return "\n".join(lines)


def more_line(shown: int, total: int, noun: str, how: str) -> str:
    """The one line every face prints where a list or a timeline was cut: how many, how to get them."""
    return f"… {total - shown} more {noun} not shown ({shown} of {total}); {how}"


def hit_text(h: Hit, detail: str = "normal", indent: str = "  ", where: str = "") -> str:
    """One search hit. normal: a header (reference, `where` its workspace across workspaces,
    time, source, marks), the user's words, the user's decisions given as tool results, and
    `→` the assistant's passage that best answers; compact: the header and the user's words
    cut, on one line; full: the header with score and signals, summary, snippet and status."""
    ref = f"{turn_ref(h.session_id, h.turn, h.agent)}{f' (workspace {where})' if where else ''}"
    when = (h.started_at or "")[:16]
    source = f" [{h.source}]" if h.source else ""
    if detail == "full":
        head = f"{ref} {when} score={h.score:.4f} ({'+'.join(h.matched)}){source}"
        out = f"{head}\n{indent}{h.summary}"
        if h.snippet:
            out += f"\n{indent}> {h.snippet}"
        return out + f"\n{indent}status={h.status} kinds={','.join(h.kinds)}"
    marks = ", ".join([*h.kinds, *h.marks])
    head = f"{ref} {when}{source}{f' ({marks})' if marks else ''}"
    if detail == "compact":  # the user's words (else the summary): what lets an agent choose
        words = h.asked or h.summary
        return f"{head} — {clip_marked(words, COMPACT_SUMMARY)}" if words else head
    lines = [head] + ([f"{indent}User: {h.asked}"] if h.asked else [])
    lines += [f"{indent}{h.summary}"] if h.summary and not h.asked else []
    lines += [f"{indent}User {d}" for d in h.decisions]
    if h.answer:
        lines.append(f"{indent}→ {h.answer}")
    return "\n".join(lines)


# the kinds that tell an agent what a hit is (a choice, an undoing, or noise); the work kinds
# (fix, change, question, …) say little a hit's words do not
TELLING = frozenset({"decision", "reversal", "command", "continuation", "api_error", "interrupted"})


def hit_groups(
    hits: Sequence[Hit], detail: str, cite: Citing, names: dict[str, str], shown: set[str]
) -> list[str]:
    """Hits as an agent reads them: each run of hits of one session under one line (its short
    id, the agent that wrote it where there are several, the workspace across workspaces, the
    date where it differs from the session line above), each hit a `:TURN HH:MM` line with its
    telling kinds and marks, then ` — ` the user's words (else the summary); at normal detail `→`
    the answer's passage below; no highlighting. A turn already in `shown` (under an earlier
    query of the call) is its reference only."""
    lines: list[str] = []
    run: tuple[str, str] | None = None
    day = said = ""
    for h in hits:
        when = h.started_at or ""
        if run != (h.workspace_id, h.session_id):
            run, day = (h.workspace_id, h.session_id), when[:10]
            source = f" [{h.source}]" if cite.sources and h.source else ""
            where = f" (workspace {names[h.workspace_id]})" if h.workspace_id in names else ""
            date = f" {day}" if day != said else ""
            lines.append(f"{cite.sid(h.session_id)}{source}{where}{date}")
            said = day or said
        at = when[11:16] if when[:10] == day else when[:16].replace("T", " ")
        key = cite.ref(h.session_id, h.turn, h.agent)
        head = f":{key.split(':', 1)[1]} {at}".rstrip()
        if key in shown:  # the decisions this query's words are in, if the hit above hid them
            told = [d for d in h.decisions if "**" in d and f"{key}\t{unmark(d)}" not in shown]
            lines += [
                f"{head} (above)",
                *(f"  User {unmark(d)}" for d in told if detail == "normal"),
            ]
        else:
            told = _telling(h.decisions)
            lines.append(_agent_hit(h, head, detail, told))
        shown.update([key, *(f"{key}\t{unmark(d)}" for d in told if detail == "normal")])
    return lines


def _agent_hit(h: Hit, head: str, detail: str, told: list[str]) -> str:
    if detail == "full":
        out = f"{head} score={h.score:.4f} ({'+'.join(h.matched)})\n  {unmark(h.summary)}"
        if h.snippet:
            out += f"\n  > {unmark(h.snippet)}"
        return out + f"\n  status={h.status} kinds={','.join(h.kinds)}"
    tags = ", ".join([*(k for k in h.kinds if k in TELLING), *h.marks])
    head += f" ({tags})" if tags else ""
    words = unmark(h.asked or h.summary)
    if detail == "compact":
        return f"{head} — {clip(words, COMPACT_SUMMARY)}" if words else head
    lines = [f"{head} — {words}" if words else head]
    lines += [f"  User {unmark(d)}" for d in told]  # the decisions it tells (`_telling`)
    if (n := len(h.decisions) - len(told)) > 0:
        lines.append(f"  User (+{n} more answer{'s' if n > 1 else ''}: read the turn)")
    return "\n".join(lines + ([f"  → {unmark(h.answer)}"] if h.answer else []))


def _telling(decisions: list[str]) -> list[str]:
    """The decisions a hit shows an agent: those that hold a query word (marked), else the
    first; a turn of many answers found for other words would fill the hits with them."""
    return [d for d in decisions if "**" in d] or decisions[:1]


def turn_text(t: TurnDetail, cite: Citing | None = None) -> str:
    """A turn read back from the raw log: header, user, assistant, tool calls (one line each as
    digests), thinking, and what was left out. With `cite` (an agent's face) the header names
    the session as `cite` does, the time to the minute, and the status only when it is not
    `completed`."""
    mark = "" if t.requested else " (neighbour)"
    if cite is None:
        head = f"{turn_ref(t.session_id, t.turn, t.agent)}{mark} {t.started_at or ''} {t.status}"
    else:
        when = (t.started_at or "")[:16].replace("T", " ")
        status = "" if t.status == "completed" else f" {t.status}"
        head = f"{cite.ref(t.session_id, t.turn, t.agent)}{mark} {when}{status}".rstrip()
    block = [
        f"## {head}",
        f"User: {t.user_text}",
        f"Assistant: {t.assistant_text}",
    ]
    block += [
        " ".join(["Tool", c.name, *([c.arguments] if c.arguments else []), f"[{c.status}]"])
        + (f" → {c.result}" if c.result else "")
        if c.digest
        else f"Tool {c.name} [{c.status}] {plain_arguments(c.arguments)}\n  → {c.result}"
        for c in t.tool_calls
    ]
    if t.thinking:
        block.append(f"Thinking: {t.thinking}")
    if t.left_out:
        block.append(f"({t.left_out})")
    return "\n".join(block)


def entry_text(e: MemoryEntry) -> str:
    """A memory: title line, tags, sources, supersedes, then the content and any warnings."""
    head = f"# {e.title} ({e.ref}, v{e.versions}, updated {e.updated[:19]})"
    meta = []
    if e.tags:
        meta.append(f"tags: {', '.join(e.tags)}")
    if e.sources:
        meta.append(f"sources: {', '.join(e.sources)}")
    if e.supersedes:
        meta.append(f"supersedes: {', '.join(e.supersedes)}")
    return "\n".join([head, *meta, "", e.content, *[f"warning: {w}" for w in e.warnings]])


def grep_text(found: GrepResult, kept: Sequence[GrepTurn], cite: Citing) -> str:
    """grep_turns' turns (`kept` of `found`) as they read: a line per session (its short id and
    date), a line per turn (`:TURN HH:MM — the user's words`, and how many of its lines a turn
    above showed), its matching lines indented below."""
    n_lines = sum(len(t.lines) + t.more + t.repeated for t in found.turns)
    n_turns = len(found.turns)
    head = (
        f"{n_lines} line{'' if n_lines == 1 else 's'} in {n_turns} turn{'' if n_turns == 1 else 's'}"
        f" for {found.pattern!r}"
    )
    if found.searched < found.total:
        head += (
            f" (searched {found.searched} of {found.total} turns, oldest first, before the "
            "time limit: narrow with sessions)"
        )
    out = [head]
    session, day = "", ""
    for t in kept:
        when = t.started_at or ""
        if t.session_id != session:
            session = t.session_id
            out.append(f"{cite.sid(t.session_id)}{' ' + when[:10] if when[:10] != day else ''}")
            day = when[:10] or day
        ref = cite.ref(t.session_id, t.turn, t.agent)
        again = (
            f" ({t.repeated} line{'s' if t.repeated > 1 else ''} as above)" if t.repeated else ""
        )
        out.append(f":{ref.split(':', 1)[1]} {when[11:16]} — {t.asked}{again}".replace("  —", " —"))
        # the user's words on the turn's line are not said again below it
        out += [
            f"  {line.where}: {line.text}"
            for line in t.lines
            if not (line.where == "user" and line.text == t.asked)
        ]
        if t.more:
            how = "a narrower pattern" if found.by_reference else f"{ref} in sessions"
            out.append(f"  … {t.more} more lines in this turn ({how} shows them)")
    if not found.turns:
        out.append(f"No line of {found.searched} turns in {found.space} matches.")
    out += [f"(skipped {s})" for s in found.skipped]
    return "\n".join(out)
