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
from archive_mcp.refs import turn_ref
from archive_mcp.search.highlight import clip_marked

if TYPE_CHECKING:
    from archive_mcp.memory.store import MemoryEntry
    from archive_mcp.search.context import TurnDetail
    from archive_mcp.search.engine import Hit


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


def turn_text(t: TurnDetail) -> str:
    """A turn read back from the raw log: header, user, assistant, tool calls (one line each as
    digests), thinking, and what was left out."""
    mark = "" if t.requested else " (neighbour)"
    block = [
        f"## {turn_ref(t.session_id, t.turn, t.agent)}{mark} {t.started_at or ''} {t.status}",
        f"User: {t.user_text}",
        f"Assistant: {t.assistant_text}",
    ]
    block += [
        f"Tool {c.name} {c.arguments} [{c.status}]" + (f" → {c.result}" if c.result else "")
        if c.digest
        else f"Tool {c.name} [{c.status}] {c.arguments}\n  → {c.result}"
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
