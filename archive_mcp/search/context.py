"""Read exact turns back from the archived raw log, by byte range, within a character budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from archive_mcp.errors import ArchiveError, NotFound
from archive_mcp.ingest import store
from archive_mcp.refiners import PARSERS, Turn
from archive_mcp.refiners.redact import redact, secret_values
from archive_mcp.refiners.text import clip
from archive_mcp.refs import RefLike, TurnRef, parse_ref, resolve_session
from archive_mcp.workspaces import Workspace, read_json


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
class MissingTurn:
    session_id: str
    turn: int
    agent: str
    reason: str


@dataclass
class TurnContext:
    turns: list[TurnDetail]
    not_found: list[MissingTurn]


def _cut(text: str, budget: int) -> tuple[str, bool]:
    out = clip(text, max(0, budget))
    return out, out != text


def _cut_keep_end(text: str, budget: int) -> tuple[str, bool]:
    """`text` within `budget`, its end kept whole (an answer's conclusion): the head, `…`, the tail."""
    if len(text) <= budget:
        return text, False
    if budget < 80:
        return _cut(text, budget)
    tail = text[-(budget * 2 // 3) :]
    head = clip(text, budget - len(tail) - 2).rstrip("…")
    return f"{head} …{tail}"[:budget], True


def share(needs: list[int], budget: int) -> list[int]:
    """Split `budget` so that every need that fits is met whole and the rest share what is left."""
    out, left, open_ = (
        [0] * len(needs),
        max(0, budget),
        sorted(range(len(needs)), key=needs.__getitem__),
    )
    for k, i in enumerate(open_):
        out[i] = min(needs[i], left // (len(open_) - k))
        left -= out[i]
    return out


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
    thought = redact(turn.thinking, known)[0] if include_thinking and turn else None
    args = [redact(c.arguments, known)[0] for c in calls] if include_tools else []
    outs = [redact(o, known)[0] for o in outputs] if include_tools else []
    # The request and the conclusion first (the conclusion whole when it fits), then what was
    # done (tool arguments), then thinking, and tool outputs last, with what is left.
    room = budget - 60 * len(args)  # each call's header line
    u_max = max(room // 4, room - len(assistant))
    user, c1 = _cut(user, min(len(user), u_max))
    assistant, c2 = _cut_keep_end(assistant, max(0, room - len(user)))
    room -= len(user) + len(assistant)
    kept_args = [
        _cut(a, n) for a, n in zip(args, share([len(a) for a in args], room // 2), strict=True)
    ]
    room -= sum(len(a) for a, _ in kept_args)
    thinking, c5 = (None, False)
    if thought is not None:
        thinking, c5 = _cut(thought, room // 2 if outs else room)
        room -= len(thinking)
    kept_outs = [_cut(o, n) for o, n in zip(outs, share([len(o) for o in outs], room), strict=True)]
    cut_any = c1 or c2 or c5 or any(c for _, c in kept_args + kept_outs)
    tools = [
        ToolDetail(c.name, a, c.status, o)
        for c, (a, _), (o, _) in zip(
            calls if include_tools else [], kept_args, kept_outs, strict=True
        )
    ]
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


def _size(d: TurnDetail) -> int:
    parts = [d.user_text, d.assistant_text, d.thinking or ""]
    return sum(map(len, parts)) + sum(len(c.arguments) + len(c.result) + 60 for c in d.tool_calls)


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
    missing: list[MissingTurn] = []
    seen: set[tuple[str, str, int]] = set()
    for ref in references:
        df = store.read_refined(ws, ref.session_id)
        if df.height == 0:
            missing.append(
                MissingTurn(
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
                MissingTurn(
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
    details, left = [], max_chars
    for k, (row, req) in enumerate(wanted):  # what a short turn leaves goes to the next ones
        d = _detail(ws, row, left // (len(wanted) - k), include_tools, include_thinking, req)
        left -= _size(d)
        details.append(d)
    return TurnContext(details, missing)


def canonical_ref(ws: Workspace, r: RefLike) -> TurnRef:
    """`r` parsed, its session prefix expanded when it names one session of `ws`."""
    ref = parse_ref(r)
    found = resolve_session(store.raw_files(ws), ref.session_id)
    return replace(ref, session_id=found[0]) if len(found) == 1 else ref


def locate(
    sid: str, ws: Workspace | None, anywhere: bool, every: Callable[[], list[Workspace]]
) -> tuple[Workspace | None, str, str]:
    """The workspace and full id of the session `sid` names (an id or a unique prefix), else
    (None, sid, why): in `ws`, then (with `anywhere`) in `every()` workspace."""
    pools: list[Workspace | None] = [ws] if ws is not None else []
    if anywhere:
        pools.append(None)  # None: every workspace
    for pool in pools:
        spaces = [pool] if pool is not None else every()
        found = [(w, s) for w in spaces for s in resolve_session(store.raw_files(w), sid)]
        if len(found) == 1:
            return found[0][0], found[0][1], ""
        if len(found) > 1:
            names = ", ".join(f"{s} ({w.name})" for w, s in found[:5])
            return None, sid, f"session {sid!r} is ambiguous: {names}; give more of the id"
    where = f"workspace {ws.name}" if ws is not None and not anywhere else "any workspace"
    return (
        None,
        sid,
        f"no session {sid!r} in {where}; search for its turns or list the sessions",
    )


def load_references(
    references: Sequence[RefLike],
    workspace: Callable[[], Workspace],
    named: bool,
    every: Callable[[], list[Workspace]],
    before: int = 0,
    after: int = 0,
    include_tools: bool = True,
    include_thinking: bool = False,
    max_chars: int = 6000,
    anywhere: bool = False,
) -> TurnContext:
    """`load_turn_context` of references in any workspace: each session is looked up in
    `workspace()` (a `named` one, or the cwd's), then with `anywhere` in `every()` workspace; the
    turns come back in the references' order, `max_chars` shared by the workspaces' turns. When
    no reference is found, `NotFound` with the reasons."""
    try:
        ws: Workspace | None = workspace()
    except ArchiveError:
        if not anywhere or named:
            raise
        ws = None
    groups: dict[str, tuple[Workspace, list[TurnRef]]] = {}
    missing: list[MissingTurn] = []
    order: dict[tuple[str, str, str], int] = {}  # the turns come back in the references' order
    asked: dict[tuple[str, int, str], int] = {}  # and so do the references not found
    for raw in references:
        ref = parse_ref(raw)
        where, sid, why = locate(ref.session_id, ws, anywhere, every)
        asked.setdefault((sid, ref.turn, ref.agent), len(asked))
        if where is None:
            missing.append(MissingTurn(ref.session_id, ref.turn, ref.agent, why))
            continue
        groups.setdefault(where.id, (where, []))[1].append(replace(ref, session_id=sid))
        order.setdefault((where.id, sid, ref.agent), len(order))
    turns, total = [], max(1, sum(len(r) for _, r in groups.values()))
    for where, refs in groups.values():
        part = load_turn_context(
            where,
            refs,
            before,
            after,
            include_tools,
            include_thinking,
            max_chars * len(refs) // total,
        )
        turns += part.turns
        missing += part.not_found
    if missing and not turns:
        raise NotFound("; ".join(dict.fromkeys(n.reason for n in missing)))
    turns.sort(key=lambda t: order.get((t.workspace_id, t.session_id, t.agent), 0))
    missing.sort(key=lambda n: asked.get((n.session_id, n.turn, n.agent), 0))
    return TurnContext(turns, missing)
