"""A session or a theme as Markdown and as one self-contained HTML file, redacted.

The refined text is already redacted when it is archived; it is passed through `redact` again
here so a rule added since (or a secret the turn's other texts revealed) is masked in what leaves
the machine. The HTML holds its own CSS, no script and no link to anything outside it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from archive_mcp.archive import Archive
from archive_mcp.errors import NotFound
from archive_mcp.refiners.redact import redact, secret_values
from archive_mcp.refs import turn_ref
from archive_mcp.ui.conversation import clip


@dataclass
class ExportTurn:
    ref: str
    agent: str
    at: str
    user: str
    assistant: str
    tools: list[str]
    marks: list[str]


@dataclass
class Export:
    kind: str  # session | theme
    title: str
    workspace: str
    subtitle: str
    turns: list[ExportTurn]
    text: str = ""  # a theme's trace
    redactions: int = 0

    def markdown(self) -> str:
        out = [f"# {self.title}", "", f"_{self.subtitle}_", ""]
        if self.text:
            out += [self.text, ""]
        for t in self.turns:
            mark = f" ({', '.join(t.marks)})" if t.marks else ""
            out += [f"## {t.ref}{mark} {t.at}", "", "**User:**", "", t.user, ""]
            out += [f"- tool: {line}" for line in t.tools]
            out += ["", "**Assistant:**", "", t.assistant, ""]
        return "\n".join(out).rstrip() + "\n"


def _clean(text: str | None, known: frozenset[str], counter: list[int]) -> str:
    shown, cut = clip(text, 50_000)
    masked, n = redact(shown, known)
    counter[0] += n
    return masked + (f"\n… {cut} more characters" if cut else "")


def _turns(rows: list[dict[str, Any]], counter: list[int]) -> list[ExportTurn]:
    from archive_mcp.ui.conversation import marks

    out = []
    for r in rows:
        texts = [r.get("user_text") or "", r.get("assistant_text") or ""]
        known = secret_values(texts)
        tools = [
            _clean(
                f"{c.get('name')} [{c.get('status')}] {c.get('args_summary') or ''}", known, counter
            )
            for c in r.get("tool_calls") or []
        ]
        at = r.get("started_at")
        out.append(
            ExportTurn(
                turn_ref(r["session_id"], r["turn"], r["agent"]),
                r["agent"],
                at.strftime("%Y-%m-%d %H:%M") if isinstance(at, datetime) else "",
                _clean(r.get("user_text"), known, counter),
                _clean(r.get("assistant_text"), known, counter),
                tools,
                marks(r),
            )
        )
    return out


def export_session(archive: Archive, ws_ref: str, session_id: str) -> Export:
    ws = archive.workspace(ws_ref)
    df = (
        archive.turns(ws)
        .filter(pl.col("session_id") == session_id)
        .sort("started_at", "turn", nulls_last=True)
        .collect()
    )
    if not df.height:
        raise NotFound(f"no session {session_id!r} in workspace {ws.name}")
    counter = [0]
    turns = _turns(df.to_dicts(), counter)
    titles = df["title"].drop_nulls()
    title = _clean(titles[0] if len(titles) else session_id, frozenset(), counter)
    return Export(
        "session",
        title,
        ws.name,
        f"session {session_id} · {df['source'][0] or ''} · {len(turns)} turns",
        turns,
        redactions=counter[0],
    )


def export_theme(archive: Archive, ws_ref: str, theme: str) -> Export:
    ws = archive.workspace(ws_ref)
    tl = archive.trace_theme(theme, ws)
    keys = pl.DataFrame(
        [(e.session_id, e.agent, e.turn) for e in tl.events],
        schema={"session_id": pl.String, "agent": pl.String, "turn": pl.Int64},
        orient="row",
    )
    rows = (
        archive.turns(ws)
        .filter(pl.col("session_id").is_in(keys["session_id"].unique().to_list()))
        .collect()
        .join(keys, on=["session_id", "agent", "turn"], how="semi")
        .sort("started_at", "turn", nulls_last=True)
    )
    counter = [0]
    text = _clean(tl.markdown(100_000), frozenset(), counter)
    return Export(
        "theme",
        f"Theme: {tl.theme}",
        ws.name,
        f"workspace {ws.name} · {len(tl.events)} turns",
        _turns(rows.to_dicts(), counter),
        text,
        counter[0],
    )
