"""refine_session_turns with MCP sampling: one request to the client's model for a few turns'
summaries, asked by a resolver before the tool body runs, applied when the answer is usable."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from mcp.server.mcpserver import Context, Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent

from archive_mcp.archive import Archive
from archive_mcp.errors import ArchiveError, InvalidArgument
from archive_mcp.mcp.toolkit import state
from archive_mcp.refiners.refine import REFINER
from archive_mcp.refiners.summary import compose
from archive_mcp.workspaces import Workspace


def session_rows(
    archive: Archive, ws: Workspace, session_id: str, turns: list[int] | None
) -> list[dict[str, Any]]:
    """The refined rows of a session (only `turns` when given; unknown turns are an error)."""
    df = (
        archive.turns(ws.id)
        .filter(pl.col("session_id") == session_id)
        .sort("agent", "turn")
        .collect()
    )
    if turns:
        bad = sorted(set(turns) - set(df["turn"].to_list()))
        if bad:
            valid = f"{df['turn'].min()!s}..{df['turn'].max()!s}" if df.height else "none"
            raise InvalidArgument(
                f"turns {bad[:20]} are not in session {session_id}; valid turns: {valid}"
            )
    return [r for r in df.iter_rows(named=True) if not turns or r["turn"] in turns]


def sampling_request(
    session_id: str,
    workspace: str | None,
    turns: list[int] | None,
    use_sampling: bool,
    max_sampled_turns: int,
    ctx: Context,
) -> Sample | None:
    """One sampling request for up to `max_sampled_turns` turns, when opted in and offered."""
    caps = ctx.client_capabilities
    if not use_sampling or caps is None or caps.sampling is None:
        return None
    st = state(ctx)
    try:
        ws = st.archive.workspace(workspace) if workspace else st.archive.workspace(cwd=st.cwd)
        rows = session_rows(st.archive, ws, session_id, turns)[:max_sampled_turns]
    except ArchiveError:
        return None  # the tool body reports the same mistake with its message
    if not rows:
        return None
    return Sample(
        [
            SamplingMessage(
                role="user", content=TextContent(type="text", text=sampling_prompt(rows))
            )
        ],
        max_tokens=120 * len(rows) + 50,
    )


def sampling_prompt(rows: list[dict[str, Any]]) -> str:
    turns = [
        {
            "turn": r["turn"],
            "agent": r["agent"],
            "user": r["user_text"][:1500],
            "answer": r["assistant_text"][:1500],
            "tools": [c["name"] for c in r["tool_calls"]][:10],
            "files": r["files"][:10],
        }
        for r in rows
    ]
    return (
        "Summarise each coding-agent turn below. Reply with a JSON array with one object per turn, in "
        'order, and nothing else: {"asked": the request as a short clause, "did": tools, files and '
        'commands, "outcome": one sentence stating the result, decision or finding (no filler such as '
        '"Great!" or "Let me…")}. Keep each object under 300 characters.\n\n'
        + json.dumps(turns, ensure_ascii=False)
    )


def apply_sampled(
    archive: Archive,
    ws: Workspace,
    session_id: str,
    rows: list[dict[str, Any]],
    sampled: CreateMessageResult | None,
) -> tuple[int, str | None]:
    """Store the client's summaries; (how many, why none when none)."""
    if sampled is None:
        return 0, "the client does not support sampling: kept the extractive summaries"
    text = getattr(sampled.content, "text", "") or ""
    try:
        summaries = json.loads(text[text.find("[") : text.rfind("]") + 1])
    except ValueError:
        summaries = None
    if not isinstance(summaries, list) or len(summaries) != len(rows):
        return (
            0,
            "the client's model did not answer with one summary per turn: kept the extractive summaries",
        )
    chosen = {
        (r["agent"], r["turn"]): text
        for r, s in zip(rows, summaries, strict=True)
        if (text := _sampled_summary(s))
    }
    return archive.set_summaries(ws, session_id, chosen, f"{REFINER}+sampling@1"), None


def _sampled_summary(item: Any) -> str:
    """The client's answer for one turn in the row's shape (`Asked: … Did: … Outcome: …`)."""
    if isinstance(item, dict):
        return compose(
            str(item.get("asked") or "").strip(),
            str(item.get("did") or "").strip(),
            str(item.get("outcome") or "").strip(),
        )
    return str(item).strip()
