"""Read exact turns back from the archived raw log, by byte range, within a character budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from archive_mcp.ingest import store
from archive_mcp.refiners import PARSERS, Turn
from archive_mcp.refiners.redact import redact, secret_values
from archive_mcp.render import clip
from archive_mcp.workspaces import Workspace, read_json


@dataclass
class TurnRef:
    session_id: str
    turn: int
    agent: str = "main"


@dataclass
class ToolDetail:
    name: str
    arguments: str
    status: str
    result: str


@dataclass
class TurnDetail:
    workspace_id: str
    session_id: str
    agent: str
    turn: int
    started_at: str | None
    status: str
    user_text: str
    assistant_text: str
    tool_calls: list[ToolDetail] = field(default_factory=list)
    thinking: str | None = None
    requested: bool = True  # False for neighbours loaded by before/after
    truncated: bool = False
    raw_ref: dict[str, Any] = field(default_factory=dict)


@dataclass
class NotFound:
    session_id: str
    turn: int
    agent: str
    reason: str


@dataclass
class TurnContext:
    turns: list[TurnDetail]
    not_found: list[NotFound]


def _cut(text: str, budget: int) -> tuple[str, bool]:
    out = clip(text, max(0, budget))
    return out, out != text


def _parse_turn(ws: Workspace, row: dict[str, Any]) -> Turn | None:
    ref = row["raw_ref"]
    state = read_json(ws.state_dir / "ingest.json", {}) or {}
    entry = state.get("files", {}).get(ref["file"], {})
    path = ws.root / ref["file"]
    if not path.exists():
        return None
    parser = PARSERS[row["source"]]
    result = parser(
        path,
        start=ref["byte_start"],
        stop=ref["byte_end"],
        start_index=row["turn"],
        protocol=entry.get("protocol"),
    )
    if not result.turns:
        return None
    # Readers that always read a whole file (Gemini chats) return every turn: pick this one.
    turn = next((t for t in result.turns if t.index == row["turn"]), result.turns[0])
    if row["agent"] != entry.get("agent", "main"):  # a subagent seen only inside its parent's log
        run = turn.subagents.get(row["agent"])
        match = [t for t in run.turns if t.index == row["turn"]] if run else []
        return match[0] if match else None
    return turn


def _detail(
    ws: Workspace,
    row: dict[str, Any],
    budget: int,
    include_tools: bool,
    include_thinking: bool,
    requested: bool,
) -> TurnDetail:
    turn = _parse_turn(ws, row)
    user = turn.user_text if turn else row["user_text"]
    assistant = (turn.assistant_text or turn.synthetic_text) if turn else row["assistant_text"]
    calls = turn.tool_calls if turn else []
    outputs = [c.output_text or str((c.result or {}).get("message", "")) for c in calls]
    known = secret_values(
        [user, assistant, turn.thinking if turn else "", *(c.arguments for c in calls), *outputs]
    )
    user, _ = redact(user, known)
    assistant, _ = redact(assistant, known)
    # Shares of the turn's budget; what a part leaves unused goes to the tool calls, whose
    # arguments (what was done) are kept before their outputs (usually bulky).
    user, c1 = _cut(user, budget // 4)
    assistant, c2 = _cut(assistant, budget // 3)
    thinking, c5 = (None, False)
    if include_thinking and turn:
        thinking, c5 = _cut(redact(turn.thinking, known)[0], budget // 6)
    cut_any = c1 or c2 or c5
    tools: list[ToolDetail] = []
    if include_tools and calls:
        left = max(0, budget - len(user) - len(assistant) - len(thinking or ""))
        per = left // len(calls)
        for c, output in zip(calls, outputs, strict=True):
            args, c3 = _cut(redact(c.arguments, known)[0], per * 2 // 3)
            result, c4 = _cut(redact(output, known)[0], per - len(args))
            cut_any = cut_any or c3 or c4
            tools.append(ToolDetail(c.name, args, c.status, result))
    started = row["started_at"]
    return TurnDetail(
        ws.id,
        row["session_id"],
        row["agent"],
        row["turn"],
        started.isoformat() if started else None,
        row["status"],
        user,
        assistant,
        tools,
        thinking,
        requested,
        cut_any,
        dict(row["raw_ref"]),
    )


def load_turn_context(
    ws: Workspace,
    references: list[TurnRef],
    before: int = 0,
    after: int = 0,
    include_tools: bool = True,
    include_thinking: bool = False,
    max_chars: int = 6000,
) -> TurnContext:
    """Full turns for the references (plus neighbours); their texts together hold `max_chars`,
    cut at word boundaries with `…`."""
    wanted: list[tuple[dict[str, Any], bool]] = []
    missing: list[NotFound] = []
    seen: set[tuple[str, str, int]] = set()
    for ref in references:
        df = store.read_refined(ws, ref.session_id)
        if df.height == 0:
            missing.append(
                NotFound(
                    ref.session_id,
                    ref.turn,
                    ref.agent,
                    f"no session {ref.session_id!r} in workspace {ws.name}; search for its turns "
                    "or list the sessions",
                )
            )
            continue
        agent_rows = df.filter(pl.col("agent") == ref.agent).sort("turn")
        turns = agent_rows["turn"].to_list()
        if ref.turn not in turns:
            valid = f"{turns[0]}..{turns[-1]}" if turns else "none"
            missing.append(
                NotFound(
                    ref.session_id,
                    ref.turn,
                    ref.agent,
                    f"turn {ref.turn} is not in session {ref.session_id} (agent {ref.agent}); "
                    f"valid turns: {valid}",
                )
            )
            continue
        for t in range(ref.turn - before, ref.turn + after + 1):
            key = (ref.session_id, ref.agent, t)
            if t in turns and key not in seen:
                seen.add(key)
                wanted.append((agent_rows.row(turns.index(t), named=True), t == ref.turn))
    budget = max_chars // max(1, len(wanted))
    details = [
        _detail(ws, row, budget, include_tools, include_thinking, req) for row, req in wanted
    ]
    return TurnContext(details, missing)
